//! The entry scan of collection inputs: which collections' elements the
//! body may assign, reorder or replace, before anything is lowered.
//!
//! Input: the function's body (`xs[i] = t;`, `helper(&mut xs[i])`,
//! `xs.swap(0, 1)`, `for t in xs.iter_mut() { helper(t) }`).
//! Output: the names of those collections (a parameter's name or a field
//! place's path); the lowering compares their elements around such
//! statements and retires a replaced slot (see `rt::reordered`).
//! The loop lowering asks the same questions of one loop
//! ([`pattern_idents`], [`passes_any`]), and the opaque-call lowering of
//! one argument ([`passed_mutably`]).

use syn::Pat;

/// The collection an argument may hand a call mutably: `xs` (a `&mut`
/// collection passed on), `&mut xs`, `&mut s.xs`, `&mut *xs`, `&mut xs[..]`.
pub(crate) fn passed_mutably(a: &syn::Expr) -> Option<&syn::Expr> {
    match a {
        syn::Expr::Path(p) if p.path.segments.len() == 1 => Some(a),
        syn::Expr::Reference(r) if r.mutability.is_some() => match &*r.expr {
            e @ (syn::Expr::Path(_) | syn::Expr::Field(_)) => Some(e),
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => Some(&u.expr),
            syn::Expr::Index(ix) if matches!(&*ix.index, syn::Expr::Range(_)) => Some(&ix.expr),
            _ => None,
        },
        syn::Expr::Paren(p) => passed_mutably(&p.expr),
        _ => None,
    }
}

/// The collections whose elements the body assigns (`xs[i] = ..`,
/// `s.m[i] = ..`, `helper(&mut xs[i])`) or that a method may reorder
/// (`xs.swap(0, 1)`): a parameter's name or a field place's path (a name
/// that turns out not to be a collection input is ignored).
pub(crate) fn assigned_elements(block: &syn::Block) -> crate::fast::HashSet<String> {
    struct Scan(crate::fast::HashSet<String>);
    impl Scan {
        /// Notes the collection `e` names (`xs`, `s.m`).
        fn note(&mut self, e: &syn::Expr) {
            match e {
                syn::Expr::Path(p) if p.path.segments.len() == 1 => {
                    self.0.insert(crate::fast::text(&p.path.segments[0].ident));
                }
                e => {
                    if let Some((_, key)) = crate::places::place_key(e) {
                        self.0.insert(key);
                    }
                }
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Scan {
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            if let syn::Expr::Index(ix) = &*a.left {
                self.note(&ix.expr);
            }
            syn::visit::visit_expr_assign(self, a);
        }
        // `helper(&mut xs[i])`: the call may replace the element.
        fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
            if r.mutability.is_some()
                && let syn::Expr::Index(ix) = &*r.expr
            {
                self.note(&ix.expr);
            }
            syn::visit::visit_expr_reference(self, r);
        }
        // `helper(xs)`, `swap(&mut xs, ..)`: a call the macro cannot see
        // may replace the collection's elements (see `rt::reordered`).
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            for a in &c.args {
                if let Some(coll) = passed_mutably(a) {
                    self.note(coll);
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        // `for t in xs.iter_mut() { helper(t) }`: the call may replace the
        // element the loop variable refers to (as `helper(&mut xs[i])`).
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            let mut vars = Vec::new();
            pattern_idents(&f.pat, &mut vars);
            if !vars.is_empty() && passes_any(&f.body, &vars) {
                iterated_collections(&f.expr, &mut |e| self.note(e));
            }
            syn::visit::visit_expr_for_loop(self, f);
        }
        // `xs.swap(0, 1)`, `xs.push(t)`: positions may no longer name the
        // caller's tensors (see `rt::reordered`).
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let method = crate::fast::text(&m.method);
            if !crate::lower::COLL_READS.contains(&method.as_str()) {
                self.note(&m.receiver);
            }
            // `xs[i].reset()`: a method the macro does not know may replace
            // the element (`*self = ..`), as `helper(&mut xs[i])` may.
            if let syn::Expr::Index(ix) = &*m.receiver
                && crate::lower::unknown_method(&method)
            {
                self.note(&ix.expr);
            }
            for a in &m.args {
                if let Some(coll) = passed_mutably(a) {
                    self.note(coll);
                }
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut scan = Scan(crate::fast::HashSet::default());
    syn::visit::Visit::visit_block(&mut scan, block);
    scan.0
}

/// The names a `for` loop's pattern binds (`t`, `(p, g)`, `(i, t)`).
pub(crate) fn pattern_idents(p: &Pat, out: &mut Vec<String>) {
    match p {
        Pat::Ident(pi) => out.push(crate::fast::text(&pi.ident)),
        Pat::Tuple(t) => t.elems.iter().for_each(|e| pattern_idents(e, out)),
        Pat::Paren(pp) => pattern_idents(&pp.pat, out),
        _ => {}
    }
}

/// Whether `body` gives one of `vars` to a call as an argument (`f(t)`,
/// `f(&mut *t)`, `x.m(&mut t)`) or as the receiver of a method the macro
/// does not know (`t.reset()`), where the call may replace what it
/// refers to.
pub(crate) fn passes_any(body: &syn::Block, vars: &[String]) -> bool {
    struct Passes<'v>(&'v [String], bool);
    impl Passes<'_> {
        fn arg(&mut self, a: &syn::Expr) {
            let mut e = a;
            loop {
                e = match e {
                    syn::Expr::Reference(r) => &r.expr,
                    syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &u.expr,
                    syn::Expr::Paren(p) => &p.expr,
                    _ => break,
                };
            }
            if let syn::Expr::Path(p) = e
                && let Some(i) = p.path.get_ident()
                && self.0.contains(&crate::fast::text(i))
            {
                self.1 = true;
            }
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Passes<'_> {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            c.args.iter().for_each(|a| self.arg(a));
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            m.args.iter().for_each(|a| self.arg(a));
            // `t.reset()`: a method the macro does not know.
            if crate::lower::unknown_method(&crate::fast::text(&m.method)) {
                self.arg(&m.receiver);
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut p = Passes(vars, false);
    syn::visit::Visit::visit_block(&mut p, body);
    p.1
}

/// The collections a loop's expression walks: `xs` of `xs.iter_mut()`,
/// `&mut xs`, `xs.iter_mut().zip(ys.iter_mut())`, `s.m.iter_mut()`.
fn iterated_collections(e: &syn::Expr, note: &mut dyn FnMut(&syn::Expr)) {
    match e {
        syn::Expr::MethodCall(m) => {
            iterated_collections(&m.receiver, note);
            m.args.iter().for_each(|a| iterated_collections(a, note));
        }
        syn::Expr::Reference(r) => iterated_collections(&r.expr, note),
        syn::Expr::Paren(p) => iterated_collections(&p.expr, note),
        syn::Expr::Call(c) => c.args.iter().for_each(|a| iterated_collections(a, note)),
        other => note(other),
    }
}
