//! Statements and `let`s: a statement is lowered with the statements its
//! parts need first (syncs, hidden temporaries); a `let` is classified
//! (a view of a place, the receiver of an in-place op, a fresh root, a
//! name for another binding) and declared.
//!
//! Input: `let v = x.narrow(0, 0, 2);` with `x` a mutated input.
//! Output: `let (mut v, mut __fz_state_1) = rt::view(&__fz_x_0, &__fz_state_0, ViewMeta::narrow(0, 0, 2), mode);`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    pub fn lower_stmts(&mut self, stmts: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::new();
        let mut stmts = stmts;
        let fn_tail = std::mem::take(&mut self.fn_tail);
        let mut k = 0;
        // Statements before this index were already looked at by the
        // forward split below (each is split at most once).
        let mut scanned = 0;
        self.current_open(self.pre.len() + 1);
        while k < stmts.len() {
            // Split here, not before the block: a chain on a local declared
            // earlier in this block is only known to be one now.
            if let Some(split) = self.split_chain(&stmts[k]) {
                stmts.splice(k..=k, split);
            }
            // Chains right after a run of plain in-place statements may
            // continue it (no binding is declared in between).
            let mut j = scanned.max(k + 1);
            while j < stmts.len() && self.is_fusible_stmt(&stmts[j - 1]) {
                if let Some(split) = self.split_chain(&stmts[j]) {
                    stmts.splice(j..=j, split);
                }
                j += 1;
            }
            scanned = j;
            // A multi-root run (see `fuse_multi.rs`): its statements are
            // lowered as one block, the fall-back of its fused pass.
            let multi = self.multi_run(&stmts, k);
            if let Some(plan) = &multi {
                let run: Vec<Stmt> = stmts.drain(k..k + plan.len).collect();
                stmts.insert(k, fuse_multi::block_stmt(run));
                scanned = scanned.saturating_sub(plan.len - 1).max(k + 1);
            }
            let last = stmts.len() - 1;
            self.pre.push(Vec::new());
            self.synced.push(Vec::new());
            self.stmt_mutated.push(Vec::new());
            self.stmt_fresh.push(Vec::new());
            let declared_from = self.scopes.bindings.len();
            let view_let = current::is_view_let(&stmts[k]);
            let updated = current::inplace_on(&stmts[k]).cloned();
            let run = if multi.is_some() {
                0
            } else {
                self.fusion_run(&stmts, k)
            };
            let lowered = if let Some(plan) = &multi {
                let stmt = std::mem::replace(
                    &mut stmts[k],
                    Stmt::Item(syn::Item::Verbatim(TokenStream::new())),
                );
                k += 1;
                self.no_multi = true;
                let lowered = self.lower_stmt(stmt);
                self.no_multi = false;
                self.lower_multi(plan, lowered)
            } else if run > 0 {
                let fused = self.lower_fused(&stmts[k..k + run]);
                k += run;
                vec![fused]
            } else {
                let placeholder = Stmt::Item(syn::Item::Verbatim(TokenStream::new()));
                let mut stmt = std::mem::replace(&mut stmts[k], placeholder);
                if fn_tail
                    && k == last
                    && let Stmt::Expr(e, None) = stmt
                {
                    stmt = Stmt::Expr(self.eager_output(e), None);
                }
                k += 1;
                self.lower_stmt(stmt)
            };
            self.synced.pop();
            let fresh = self.stmt_fresh.pop().unwrap_or_default();
            let mutated = self.stmt_mutated.pop().unwrap_or_default();
            let pre = self.pre.pop().unwrap_or_default();
            self.current_after(&pre, declared_from, false);
            self.current_after(&lowered, declared_from, view_let && run == 0);
            if run == 0 {
                self.current_after_update(updated.as_ref(), &fresh, &mutated);
            }
            if let Some(outer) = self.stmt_mutated.last_mut() {
                outer.extend(mutated);
            }
            out.extend(pre);
            out.extend(lowered);
        }
        self.current_close();
        out
    }

    pub(super) fn lower_stmt(&mut self, stmt: Stmt) -> Vec<Stmt> {
        match stmt {
            Stmt::Local(local) => {
                self.let_depth += 1;
                let outer = std::mem::replace(&mut self.added_mut, false);
                let mut out = self.lower_local(local);
                if std::mem::replace(&mut self.added_mut, outer) {
                    for s in &mut out {
                        if let Stmt::Local(l) = s {
                            l.attrs.push(allow_unused_mut());
                        }
                    }
                }
                self.let_depth -= 1;
                out
            }
            Stmt::Expr(e, semi) => {
                if let Some(lowered) = self.try_inplace(
                    &e,
                    if semi.is_some() {
                        Want::Nothing
                    } else {
                        Want::Value
                    },
                ) {
                    if semi.is_some()
                        && let Some(inner) = unbraced(&lowered)
                    {
                        return vec![Stmt::Item(syn::Item::Verbatim(inner))];
                    }
                    return vec![Stmt::Expr(lowered, semi)];
                }
                let mut e = e;
                if semi.is_some() {
                    self.discarded = Some(&e as *const Expr);
                }
                self.visit_expr_mut(&mut e);
                self.discarded = None;
                vec![Stmt::Expr(e, semi)]
            }
            Stmt::Macro(m) => self.lower_macro_stmt(m),
            Stmt::Item(syn::Item::Macro(im)) => {
                if im.mac.path.is_ident("macro_rules") {
                    self.check_local_macro(&im.mac);
                }
                vec![Stmt::Item(syn::Item::Macro(im))]
            }
            other => vec![other],
        }
    }

    pub(super) fn declare_pat(&mut self, pat: &mut Pat, kind: Kind) {
        match pat {
            Pat::Ident(pi) => {
                if matches!(
                    kind,
                    Kind::Root { .. } | Kind::Alias { .. } | Kind::Multi { .. }
                ) && pi.by_ref.is_none()
                    && pi.mutability.is_none()
                {
                    pi.mutability = Some(Token![mut](pi.ident.span()));
                    self.added_mut = true;
                }
                let id = self.scopes.declare(&pi.ident, kind);
                pi.ident = self.var(id);
            }
            Pat::Type(pt) => self.declare_pat(&mut pt.pat, kind),
            other => self.declare_other(other),
        }
    }

    /// Declares every identifier a pattern binds as a non-tensor.
    pub(super) fn declare_other(&mut self, pat: &Pat) {
        self.declare_all(pat, Kind::Other);
    }

    /// Declares every identifier `pat` binds with `kind`.
    pub(super) fn declare_all(&mut self, pat: &Pat, kind: Kind) {
        for id in pat_idents(pat) {
            self.scopes.declare(&id, kind.clone());
        }
    }

    /// Declares the identifiers a `match`/`if let` pattern binds.
    pub(super) fn declare_bound(&mut self, pat: &Pat, plain: bool) {
        self.declare_all(pat, if plain { Kind::Plain } else { Kind::Other });
    }

    pub(super) fn pat_ident(pat: &Pat) -> Option<Ident> {
        match pat {
            Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => Some(pi.ident.clone()),
            Pat::Type(pt) => Self::pat_ident(&pt.pat),
            _ => None,
        }
    }

    pub(super) fn pat_is_tensor_typed(pat: &Pat) -> bool {
        matches!(pat, Pat::Type(pt) if is_tensor_type(&pt.ty))
    }

    pub(super) fn lower_local(&mut self, mut local: syn::Local) -> Vec<Stmt> {
        let Some(init) = local.init.take() else {
            return self.lower_deferred_local(local);
        };
        if init.diverge.is_none() && Self::flat_tuple(&local.pat) {
            return self.lower_tuple_local(local, init);
        }
        if init.diverge.is_some() || Self::pat_ident(&local.pat).is_none() {
            let mut init = init;
            self.visit_expr_mut(&mut init.expr);
            // `let … else { … }`: the else block is ordinary code (its
            // in-place ops are lowered, its `return` writes inputs back).
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
            self.declare_other(&local.pat);
            local.init = Some(init);
            return vec![Stmt::Local(local)];
        }
        let ident = Self::pat_ident(&local.pat).expect("checked above");
        // `let e = &mut c;` of a tracked tensor: a second name the macro
        // does not follow (its writes, and helpers given it, would miss
        // `c`'s views).
        if let Expr::Reference(r) = &*init.expr
            && r.mutability.is_some()
            && let Some(to) = self.binding_of(&r.expr)
            && matches!(
                self.scopes.kind(to),
                Kind::Root { known: true, .. } | Kind::Alias { .. } | Kind::Multi { .. }
            )
        {
            crate::diag::mut_ref_binding(self, &ident, &r.expr);
        }
        // `let x = &xs[i];` names the place `xs[i]`: its in-place ops write
        // the element, its reads read it.
        if let Expr::Reference(r) = &*init.expr
            && let Expr::Index(ix) = &*r.expr
            && let Some(coll) = self.binding_of(&ix.expr)
            && matches!(self.scopes.kind(coll), Kind::Coll { .. })
        {
            let mut index = (*ix.index).clone();
            self.visit_expr_mut(&mut index);
            let hidden = elem_at_ident(self.scopes.bindings.len());
            self.scopes.declare(
                &ident,
                Kind::ElemAt {
                    coll,
                    index: hidden.clone(),
                },
            );
            return vec![pq!(let #hidden: usize = #index;)];
        }
        // `let r = &x;` of a tensor binding: `r` is another name for `x`.
        if let Some(to) = self.ref_target(&init.expr) {
            self.scopes.declare_ref(&ident, to);
            return Vec::new();
        }
        let expr = *init.expr;
        let rt = rt();

        // A view of a collection element (or the in-place result on one)
        // is bound as a plain value, watched by `elem_aliases`.
        let elem_coll = self.elem_alias_coll(&expr);

        // `let c = <in-place op>;` : c is the receiver (an alias of its root).
        if self.is_inplace_call(&expr) {
            let root = self.target_root_of(&expr).filter(|_| elem_coll.is_none());
            if let Some(root) = root.filter(|&r| self.tracked_root(r)) {
                let lowered = self
                    .try_inplace(&expr, Want::Bound)
                    .expect("an in-place call");
                let id = self.scopes.declare(&ident, Kind::Alias { root });
                if self.bind_alias_var(id) {
                    return vec![pq!(let mut #ident = #rt::Var::of_pair(#lowered);)];
                }
                let s = self.state(id);
                return vec![pq!(let (mut #ident, mut #s) = #lowered;)];
            }
            let lowered = self
                .try_inplace(&expr, Want::Value)
                .expect("an in-place call");
            let kind = match root {
                Some(r) => Kind::Alias { root: r },
                None => Kind::Root {
                    input: None,
                    known: true,
                },
            };
            let fresh = matches!(kind, Kind::Root { .. });
            self.declare_pat(&mut local.pat, kind);
            local.init = Some(syn::LocalInit {
                eq_token: init.eq_token,
                expr: Box::new(lowered),
                diverge: None,
            });
            let mut out = vec![Stmt::Local(local)];
            if fresh {
                let id = self
                    .scopes
                    .lookup(&ident.to_string())
                    .expect("just declared");
                if let Some(coll) = elem_coll {
                    self.elem_aliases.push((id, coll));
                }
                out.extend(self.root_prologue(id));
            }
            return out;
        }

        // `let v = <view chain of a place>;`
        if elem_coll.is_none()
            && let Some((prelude, place, steps, multi)) = self.view_chain(&expr)
        {
            let root = self.place_root(&place);
            if let Some(root) = root {
                let kind = if multi.is_some() {
                    Kind::Multi { root }
                } else {
                    Kind::Alias { root }
                };
                if self.tracked_root(root) {
                    // The temporaries of the chain live in a block: the
                    // function's scopes nest no deeper than the original's
                    // (one per `let`), however many views it makes.
                    let (inner, pv, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                    let id = self.scopes.declare(&ident, kind);
                    let in_var = multi.is_none() && self.bind_alias_var(id);
                    let st = self.state(id);
                    let (tv, ts) = (tmp("__fz_bound"), tmp("__fz_bound_state"));
                    let bind = match (steps_may_copy(&steps), &multi) {
                        (false, _) => TokenStream::new(),
                        (true, Some(_)) => quote!(#rt::bind_views(&#ps, &mut #ts);),
                        (true, None) => quote!(#rt::bind_view(&#ps, &mut #ts);),
                    };
                    let m = (!bind.is_empty()).then(|| quote!(mut));
                    let value = match &multi {
                        Some((method, args)) => {
                            let margs = meta_args(method, args);
                            let meta = quote!(#rt::MultiMeta::#method(#margs));
                            rt_call(method.span(), "multi_view", quote!(&#v, &#s, #meta))
                                .into_token_stream()
                        }
                        None => quote!((#v, #s)),
                    };
                    if let ([_], [Step::View(method, args)], true, None) =
                        (&inner[..], &steps[..], bind.is_empty(), &multi)
                    {
                        // One view of a place that needs no temporaries:
                        // bound directly (no block, no tuple to rebuild).
                        let meta = view_meta(&rt, method, args);
                        let at = method.span();
                        return vec![match (in_var, var_pair(&pv, &ps)) {
                            (true, Some(x)) => {
                                let call = rt_call(at, "var_view", quote!(&#x, #meta));
                                pq!(let mut #ident = #call;)
                            }
                            (true, None) => {
                                let call = rt_call(at, "var_view_of", quote!(&#pv, &#ps, #meta));
                                pq!(let mut #ident = #call;)
                            }
                            (false, Some(x)) => {
                                let call = rt_call(at, "view_var", quote!(&#x, #meta));
                                pq!(let (mut #ident, mut #st) = #call;)
                            }
                            (false, None) => {
                                let call = rt_call(at, "view", quote!(&#pv, &#ps, #meta));
                                pq!(let (mut #ident, mut #st) = #call;)
                            }
                        }];
                    }
                    if in_var
                        && bind.is_empty()
                        && multi.is_none()
                        && !steps.is_empty()
                        && let Some(last) = var_pair(&v, &s)
                    {
                        // The chain's last view is already a `Var`: moved out.
                        return vec![pq!(let mut #ident = { #(#inner)* #last };)];
                    }
                    let tail = if bind.is_empty() {
                        value
                    } else {
                        quote!(let (#tv, #m #ts) = #value; #bind (#tv, #ts))
                    };
                    return vec![if in_var {
                        pq!(let mut #ident = #rt::Var::of_pair({ #(#inner)* #tail });)
                    } else {
                        pq!(let (mut #ident, mut #st) = { #(#inner)* #tail };)
                    }];
                }
                // Root never mutated: the alias is a plain value.
                let value = self.plain_value(&expr);
                self.declare_pat(&mut local.pat, kind);
                local.init = Some(syn::LocalInit {
                    eq_token: init.eq_token,
                    expr: Box::new(value),
                    diverge: None,
                });
                return vec![Stmt::Local(local)];
            }
        }

        // Anything else: a fresh root if it is a tensor.
        // A type annotation says the value is a tensor, not where its
        // storage comes from: only the expression can prove it fresh.
        let proven = self.is_tensor_expr(&expr);
        let known = proven || Self::pat_is_tensor_typed(&local.pat);
        let tensor = known || matches!(&expr, Expr::Call(_) | Expr::MethodCall(_));
        let ambiguous = self.mixes_aliases(&expr);
        let mut expr = expr;
        self.visit_expr_mut(&mut expr);
        local.init = Some(syn::LocalInit {
            eq_token: init.eq_token,
            expr: Box::new(expr),
            diverge: None,
        });
        if ambiguous {
            self.declare_pat(&mut local.pat, Kind::Ambiguous);
            return vec![Stmt::Local(local)];
        }
        if !tensor {
            self.declare_other(&local.pat);
            return vec![Stmt::Local(local)];
        }
        self.declare_pat(&mut local.pat, Kind::Root { input: None, known });
        let id = self
            .scopes
            .lookup(&ident.to_string())
            .expect("just declared");
        if let Some(coll) = elem_coll {
            self.elem_aliases.push((id, coll));
        }
        let unproven = !proven && self.tracked_root(id);
        if unproven {
            // The call may return a reference (`fn pick<'a>(a: &'a Tensor)
            // -> &'a Tensor`): the variable holds a handle of its own,
            // which the freshness check then refuses if it is shared.
            if let Some(init) = &mut local.init {
                let e = &init.expr;
                *init.expr = pq!(#rt::owned(#e));
            }
            if let Pat::Type(pt) = &mut local.pat
                && let syn::Type::Reference(r) = &*pt.ty
            {
                pt.ty = r.elem.clone();
            }
        }
        // `let b = e;` of a root held in an `rt::Var`: bound as one
        // (`let b = rt::Var::root(e);`), not bound then rebound.
        let wrap = self.in_var(id)
            && matches!(&local.pat, Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none());
        if wrap && let Some(init) = &mut local.init {
            let e = &init.expr;
            *init.expr = pq!(#rt::Var::root(#e));
        }
        let mut out = vec![Stmt::Local(local)];
        // (The check first: the prologue may take a second handle.)
        if unproven {
            out.extend(if wrap {
                self.freshness_check(id)
            } else {
                self.declared_freshness_check(id)
            });
        }
        out.extend(if wrap {
            self.base_prologue(id)
        } else {
            self.root_prologue(id)
        });
        out
    }

    /// A value from a call the macro cannot see is treated as a fresh root;
    /// at run time, refuse it if anything else holds its storage (it may be
    /// a view of a tensor of this function, whose mutation would be lost).
    pub(super) fn freshness_check(&self, id: usize) -> Option<Stmt> {
        self.freshness_check_of(id, self.value(id))
    }

    /// [`Self::freshness_check`] of a root just declared, before it is
    /// rebound as an `rt::Var` (see [`Self::root_prologue`]).
    pub(super) fn declared_freshness_check(&self, id: usize) -> Option<Stmt> {
        let v = self.var(id);
        self.freshness_check_of(id, Access::Name(v))
    }

    fn freshness_check_of(&self, id: usize, ident: Access) -> Option<Stmt> {
        let rt = rt();
        let name = self.scopes.ident(id).to_string();
        Some(pq!(#rt::check_fresh(#name, &#ident);))
    }

    /// A root the body mutates or re-lays-out, just declared as a tensor:
    /// rebound as an `rt::Var` (its value and its state in one local), or
    /// given a state of its own (see [`Self::in_var`]); and its hidden base.
    pub fn root_prologue(&self, id: usize) -> Vec<Stmt> {
        if !self.tracked_root(id) {
            return Vec::new();
        }
        let rt = rt();
        let v = self.var(id);
        // (An input's updates may be computed in the caller's buffer.)
        let input = matches!(self.scopes.kind(id), Kind::Root { input: Some(_), .. });
        if self.in_var(id) {
            // (Not an input: see `Self::in_var`.)
            let mut out = vec![pq!(#[allow(unused_mut)] let mut #v = #rt::Var::root(#v);)];
            out.extend(self.base_prologue(id));
            return out;
        }
        let s = self.state(id);
        if self.based(id) {
            let (b, bs) = (base_ident(id), base_state_ident(id));
            vec![
                pq!(let mut #b = #rt::handle(&#v);),
                pq!(let mut #bs = #rt::Tracked::root(&#b);),
                pq!(let mut #s = #bs.clone();),
            ]
        } else if input {
            vec![pq!(let mut #s = #rt::Tracked::input(&#v);)]
        } else {
            vec![pq!(let mut #s = #rt::Tracked::root(&#v);)]
        }
    }

    /// The hidden base of a root held in an `rt::Var` and re-laid-out in
    /// place (`t_()`), and the root's state as a view of it.
    pub fn base_prologue(&self, id: usize) -> Vec<Stmt> {
        if !self.based(id) || !self.in_var(id) {
            return Vec::new();
        }
        let rt = rt();
        let (v, s) = (self.value(id), self.state(id));
        let (b, bs) = (base_ident(id), base_state_ident(id));
        vec![
            pq!(let mut #b = #rt::handle(&#v);),
            pq!(let mut #bs = #rt::Tracked::root(&#b);),
            pq!(#s = #bs.clone();),
        ]
    }
}

/// The statements of a generated block `{ a; b; }` when they can stand in
/// the enclosing block instead (each ends with `;` and none is a `let`, so
/// no value lives longer and no name is declared there): `{ s; };` costs
/// an unoptimized build a scope of its own, for nothing.
pub(crate) fn unbraced(e: &Expr) -> Option<TokenStream> {
    let Expr::Verbatim(ts) = e else {
        return None;
    };
    let mut it = ts.clone().into_iter();
    let (Some(proc_macro2::TokenTree::Group(g)), None) = (it.next(), it.next()) else {
        return None;
    };
    if g.delimiter() != proc_macro2::Delimiter::Brace {
        return None;
    }
    let inner = g.stream();
    // (Only the first token of a statement, past its attributes, can be
    // `let`: each comparison asks the compiler for the identifier's text.
    // A statement starts after a `;` and after a braced group, which may
    // end one with no `;`: `if c { .. } else { .. }`.)
    let (mut last_semi, mut start) = (false, true);
    for t in inner.clone() {
        last_semi = false;
        match t {
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ';' => {
                (last_semi, start) = (true, true);
            }
            proc_macro2::TokenTree::Punct(p) if start && p.as_char() == '#' => {}
            proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace => {
                start = true;
            }
            proc_macro2::TokenTree::Group(g)
                if start && g.delimiter() == proc_macro2::Delimiter::Bracket => {}
            proc_macro2::TokenTree::Ident(i) if start && i == "let" => return None,
            _ => start = false,
        }
    }
    last_semi.then_some(inner)
}

/// `#[allow(unused_mut)]`, built rather than parsed (parsing it was 7,000
/// instructions of an unoptimized macro per `let`).
fn allow_unused_mut() -> syn::Attribute {
    let span = Span::call_site();
    syn::Attribute {
        pound_token: Token![#](span),
        style: syn::AttrStyle::Outer,
        bracket_token: syn::token::Bracket(span),
        meta: syn::Meta::List(syn::MetaList {
            path: Ident::new("allow", span).into(),
            delimiter: syn::MacroDelimiter::Paren(syn::token::Paren(span)),
            tokens: quote!(unused_mut),
        }),
    }
}
