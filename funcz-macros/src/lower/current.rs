//! Aliases known to be current: a view bound by a plain `let` is current
//! until a later statement of the same block may change its root (every
//! runtime call that changes a root or an alias takes its value or state
//! by `&mut`; an assignment names it; a macro may do anything with the
//! names it is given), so a use before that needs no `rt::sync`.
//!
//! Input: `let v = x.narrow(0, 1, 1); v.sub_(0.5);`
//! Output: `let (v, s) = rt::view(..); rt::own_alias(..); v.sub_(0.5); ..` (no `rt::sync` before the op)
//!
//! The test is on the generated tokens, not on what the user wrote: a root
//! the macro tracks has a generated name (`__fz_v_x_0`) and a generated
//! state, and every runtime call that may change it takes them by `&mut`,
//! so a statement whose lowering does not leaves the root as it was.
//! Functions with closures (which may run later, from any statement) keep
//! every sync.

#[allow(unused_imports)]
use super::*;

use crate::fast::HashSet;

use proc_macro2::Spacing;

/// Per open block: the `pre` depth of its statements, and the aliases
/// known current before the next one.
#[derive(Default)]
pub(crate) struct Current {
    levels: Vec<(usize, Vec<usize>)>,
}

impl Lowerer<'_> {
    /// Opens a block whose statements are lowered at `pre` depth `depth`.
    pub(super) fn current_open(&mut self, depth: usize) {
        self.current.levels.push((depth, Vec::new()));
    }

    pub(super) fn current_close(&mut self) {
        self.current.levels.pop();
    }

    /// True if the alias `id`, used in the statement being lowered, is
    /// known current at its start (its sync would do nothing).
    pub(super) fn known_current(&self, id: usize) -> bool {
        self.elide_syncs
            && self
                .current
                .levels
                .last()
                .is_some_and(|(depth, ids)| *depth == self.pre.len() && ids.contains(&id))
    }

    /// After a statement of the open block was lowered to `out`: forgets
    /// the aliases whose root (or own value) it names, then records the
    /// aliases a plain view `let` declared (bindings `declared_from..`).
    pub(super) fn current_after(&mut self, out: &[Stmt], declared_from: usize, view_let: bool) {
        if !self.elide_syncs || self.current.levels.is_empty() {
            return;
        }
        let mut ids = std::mem::take(&mut self.current.levels.last_mut().expect("open").1);
        if !ids.is_empty() {
            let names: Vec<(usize, Names)> =
                ids.iter().map(|&id| (id, self.alias_names(id))).collect();
            let mut named = HashSet::default();
            for s in out {
                find_names(s.to_token_stream(), &names, &mut named);
            }
            ids.retain(|id| !named.contains(id));
        }
        if view_let {
            for id in declared_from..self.scopes.bindings.len() {
                if matches!(self.scopes.kind(id), Kind::Alias { .. }) && self.has_state(id) {
                    ids.push(id);
                }
            }
        }
        self.current.levels.last_mut().expect("open").1 = ids;
    }

    /// After a statement `a.op_(args);` (`updated` is `a`): if its one
    /// commit was that op's, into `a`'s root, and made `a` current (its
    /// value is what it wrote), `a` is current after it. (The root's other
    /// aliases stay forgotten.)
    ///
    /// Input: `r.mul_(2.0); r.add_(3.0);` (`r` a view)
    /// Output: no `rt::sync(&mut r, ..)` before the second op.
    pub(super) fn current_after_update(
        &mut self,
        updated: Option<&Ident>,
        fresh: &[usize],
        mutated: &[usize],
    ) {
        if !self.elide_syncs || self.current.levels.is_empty() {
            return;
        }
        let (Some(name), [a]) = (updated, fresh) else {
            return;
        };
        let root = match self.scopes.kind(*a) {
            Kind::Alias { root } => *root,
            _ => return,
        };
        if self.scopes.lookup(&crate::fast::text(name)) == Some(*a)
            && self.has_state(*a)
            && mutated == [root]
        {
            let ids = &mut self.current.levels.last_mut().expect("open").1;
            if !ids.contains(a) {
                ids.push(*a);
            }
        }
    }

    /// The generated names through which the alias `id` or its root can
    /// change: both values, then both states.
    fn alias_names(&self, id: usize) -> Names {
        let mut names = if self.in_var(id) {
            Names {
                values: Vec::new(),
                states: Vec::new(),
                vars: vec![self.var_name(id)],
            }
        } else {
            Names {
                values: vec![self.var_name(id)],
                states: vec![crate::scope::state_name(id)],
                vars: Vec::new(),
            }
        };
        if let Kind::Alias { root } = self.scopes.kind(id) {
            let root = *root;
            if self.based(root) {
                names.values.push(crate::scope::base_name(root));
                names.states.push(crate::scope::base_state_name(root));
            } else if self.in_var(root) {
                names.vars.push(self.var_name(root));
            } else {
                names.values.push(self.var_name(root));
                names.states.push(crate::scope::state_name(root));
            }
        }
        names
    }
}

/// The generated names of an alias and its root: the tensors', the
/// states', and the `rt::Var`s' (a root's value and state in one local).
pub(crate) struct Names {
    values: Vec<String>,
    states: Vec<String>,
    vars: Vec<String>,
}

/// Adds to `named` each alias of `names` that `ts` may change: a value's
/// name after `mut` (`&mut v`: every runtime call that changes a tensor
/// takes it so) or before an assignment (`v = ..`, `v += ..`); a state's
/// name anywhere but after `&` (a runtime call reading it): `&mut s`,
/// `s.bump()` after a helper changed the tensor; and any of them in a
/// macro's arguments (which may expand to anything). A read (`&v`,
/// `v.sum()`, `&s`) changes nothing. A `Var`'s name is a value's when
/// `.value` follows it, else a state's (`&mut var`, `var.state`).
fn find_names(ts: TokenStream, names: &[(usize, Names)], named: &mut HashSet<usize>) {
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    // Each identifier's text, asked of the compiler once: every comparison
    // of an identifier with a string would ask again.
    let texts: Vec<Option<String>> = tokens
        .iter()
        .map(|t| match t {
            TokenTree::Ident(i) => Some(crate::fast::text(i)),
            _ => None,
        })
        .collect();
    let text_at = |k: usize| texts.get(k).and_then(|t| t.as_deref());
    for (k, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Ident(_) => {
                let text = text_at(k).unwrap_or_default();
                let after_mut = k > 0 && text_at(k - 1) == Some("mut");
                let after_ref =
                    k > 0 && matches!(&tokens[k - 1], TokenTree::Punct(p) if p.as_char() == '&');
                let writes_value = after_mut || assigned(&tokens[k + 1..]);
                // A `Var`'s `v.value` (assigned after the field's name).
                let dot_value = matches!(tokens.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == '.')
                    && text_at(k + 2) == Some("value");
                let writes_var_value = dot_value && (after_mut || assigned(&tokens[k + 3..]));
                for (id, ns) in names {
                    let (value, state, writes) = if ns.vars.iter().any(|n| n == text) {
                        (dot_value, !dot_value, writes_var_value)
                    } else {
                        (
                            ns.values.iter().any(|n| n == text),
                            ns.states.iter().any(|n| n == text),
                            writes_value,
                        )
                    };
                    if (value && writes) || (state && !after_ref) {
                        named.insert(*id);
                    }
                }
            }
            TokenTree::Group(g) => {
                let macro_args =
                    k > 0 && matches!(&tokens[k - 1], TokenTree::Punct(p) if p.as_char() == '!');
                if macro_args {
                    all_names(g.stream(), &mut |i| {
                        let text = crate::fast::text(i);
                        for (id, ns) in names {
                            if ns
                                .values
                                .iter()
                                .chain(&ns.states)
                                .chain(&ns.vars)
                                .any(|n| *n == text)
                            {
                                named.insert(*id);
                            }
                        }
                    });
                } else {
                    find_names(g.stream(), names, named);
                }
            }
            _ => {}
        }
    }
}

/// Whether `rest` (the tokens after a name) starts an assignment to it:
/// `=` (not `==` or `=>`), or a compound one (`+=`, `<<=`, ...).
fn assigned(rest: &[TokenTree]) -> bool {
    let punct = |k: usize| match rest.get(k) {
        Some(TokenTree::Punct(p)) => Some((p.as_char(), p.spacing())),
        _ => None,
    };
    match punct(0) {
        Some(('=', Spacing::Alone)) => true,
        Some(('=', Spacing::Joint)) => !matches!(punct(1), Some(('=' | '>', _))),
        Some((c, Spacing::Joint)) if "+-*/%^&|<>".contains(c) => {
            // `+=`, `-=`, ..., `<<=`, `>>=`; not `<=`, `>=`, `->`, `&&`.
            match punct(1) {
                Some(('=', _)) => !matches!(c, '<' | '>'),
                Some((d, Spacing::Joint)) if d == c && (c == '<' || c == '>') => {
                    matches!(punct(2), Some(('=', _)))
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Calls `f` on every identifier in `ts`.
fn all_names(ts: TokenStream, f: &mut impl FnMut(&Ident)) {
    for t in ts {
        match t {
            TokenTree::Ident(i) => f(&i),
            TokenTree::Group(g) => all_names(g.stream(), f),
            _ => {}
        }
    }
}

/// `a.op_(args);` with `op_` an in-place op of the table and `a` a name:
/// `a`.
pub(super) fn inplace_on(stmt: &Stmt) -> Option<&Ident> {
    let Stmt::Expr(Expr::MethodCall(m), Some(_)) = stmt else {
        return None;
    };
    let inplace = matches!(
        optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
        Some(OpKind::Inplace { .. })
    );
    match &*m.receiver {
        Expr::Path(p) if inplace && m.attrs.is_empty() && p.qself.is_none() => p.path.get_ident(),
        _ => None,
    }
}

/// `let name = <path>.<view op>(<literals or names>)...;`: a statement that
/// only makes a view (its value current when bound).
pub(super) fn is_view_let(stmt: &Stmt) -> bool {
    let Stmt::Local(local) = stmt else {
        return false;
    };
    let (Pat::Ident(_), Some(init)) = (&local.pat, &local.init) else {
        return false;
    };
    if init.diverge.is_some() || !local.attrs.is_empty() {
        return false;
    }
    let mut e = &*init.expr;
    let mut links = 0;
    while let Expr::MethodCall(m) = e {
        let view = matches!(
            optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
            Some(OpKind::View { .. })
        );
        if !view || m.turbofish.is_some() || !m.args.iter().all(plain_arg) {
            return false;
        }
        links += 1;
        e = &m.receiver;
    }
    links > 0 && matches!(e, Expr::Path(p) if p.path.get_ident().is_some())
}

/// A literal, a name, a negated literal, or an array of (a reference to)
/// those: an argument whose evaluation runs no code.
fn plain_arg(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Path(p) => p.path.get_ident().is_some(),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && matches!(&*u.expr, Expr::Lit(_)),
        Expr::Array(a) => a.elems.iter().all(plain_arg),
        Expr::Reference(r) => r.mutability.is_none() && plain_arg(&r.expr),
        _ => false,
    }
}

/// True if `block` holds no closure or `async` block (code that may run
/// later, from any statement).
pub(crate) fn without_closures(block: &Block) -> bool {
    struct Find(bool);
    impl<'ast> syn::visit::Visit<'ast> for Find {
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {
            self.0 = true;
        }
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {
            self.0 = true;
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            // A macro's tokens may hold a closure (`vec![|x| ..]`).
            self.0 |= has_bar(m.tokens.clone());
        }
    }
    fn has_bar(ts: TokenStream) -> bool {
        ts.into_iter().any(|t| match t {
            TokenTree::Punct(p) => p.as_char() == '|',
            TokenTree::Group(g) => has_bar(g.stream()),
            _ => false,
        })
    }
    let mut f = Find(false);
    syn::visit::Visit::visit_block(&mut f, block);
    !f.0
}
