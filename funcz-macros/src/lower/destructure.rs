//! `let` forms real ports write that bind a tensor without a plain
//! `let x = value;`: a name declared first and assigned in branches, and a
//! tuple of names bound from one value (a helper returning two tensors,
//! `var_mean`, `max_dim`).
//!
//! Input: `let avg; if c { avg = a.sqrt(); } else { avg = b.sqrt(); } avg.add_(eps);`
//! Output: `let mut avg; let mut s = rt::Tracked::unbound(); if c { avg = a.sqrt(); s.rebind(&avg); } ...`
//!
//! Input: `let (var, mean) = helper(&x); var.add_(eps);`
//! Output: `let (mut var, mean) = helper(&x); rt::check_fresh("var", &var); let mut s = rt::Tracked::root(&var); ...`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// `let x;` (or `let x: Tensor;`): a root bound by its assignments,
    /// each of which must be fresh (proved, refused or checked, as any
    /// assignment to a mutated root).
    pub(super) fn lower_deferred_local(&mut self, mut local: syn::Local) -> Vec<Stmt> {
        let typed_other =
            matches!(&local.pat, Pat::Type(_)) && !Self::pat_is_tensor_typed(&local.pat);
        let Some(ident) = Self::pat_ident(&local.pat).filter(|_| !typed_other) else {
            self.declare_other(&local.pat);
            return vec![Stmt::Local(local)];
        };
        self.declare_pat(
            &mut local.pat,
            Kind::Root {
                input: None,
                known: false,
            },
        );
        let id = self
            .scopes
            .lookup(&ident.to_string())
            .expect("just declared");
        let mut out = vec![Stmt::Local(local)];
        if !self.tracked_root(id) {
            return out;
        }
        // (Assigned later: its value and state stay two locals, a `Var`
        // cannot be declared without its value.)
        self.deferred.insert(id);
        let rt = rt();
        let s = self.state(id);
        if self.based(id) {
            let (b, bs) = (base_ident(id), base_state_ident(id));
            out.push(pq!(let mut #b;));
            out.push(pq!(let mut #bs = #rt::Tracked::unbound();));
        }
        out.push(pq!(let mut #s = #rt::Tracked::unbound();));
        out
    }

    /// True if `pat` is a tuple of names (`(a, b)`, `(a, _)`, `(a, b: Tensor)`).
    pub(super) fn flat_tuple(pat: &Pat) -> bool {
        matches!(pat, Pat::Tuple(t) if !t.elems.is_empty() && t.elems.iter().all(|p| {
            matches!(p, Pat::Wild(_)) || Self::pat_ident(p).is_some()
        }))
    }

    /// `let (a, b) = value;`: each name is a root of its own. A name the
    /// body mutates gets a run-time check that nothing else holds its
    /// storage (the value may be a helper's view of another tensor), except
    /// where the tuple is written out and its element is proved fresh; an
    /// element of a written-out tuple that is a view of a tensor of this
    /// function is refused (its mutation would have to reach that tensor).
    pub(super) fn lower_tuple_local(
        &mut self,
        mut local: syn::Local,
        init: syn::LocalInit,
    ) -> Vec<Stmt> {
        let mut expr = *init.expr;
        // The elements, where the value is a tuple written out.
        let parts: Option<Vec<Expr>> = match &expr {
            Expr::Tuple(t) => Some(t.elems.iter().cloned().collect()),
            _ => None,
        };
        // A functional op of the table that returns a tuple of tensors
        // (`var_mean`, `max_dim`, `sort`, `topk`) on a tensor: every
        // element is a fresh tensor.
        let fresh_tuple = matches!(&expr, Expr::MethodCall(m)
            if matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                Some(OpKind::Functional)
            ) && self.is_tensor_expr(&m.receiver));
        let Pat::Tuple(pt) = &mut local.pat else {
            unreachable!("checked by flat_tuple")
        };
        // Elements that alias a tensor of this function (a view chain, a
        // handle, the binding itself).
        let mut proven = Vec::new();
        let mut aliased = Vec::new();
        for k in 0..pt.elems.len() {
            let part = parts.as_ref().and_then(|ps| ps.get(k));
            proven.push(fresh_tuple || part.is_some_and(|e| self.is_tensor_expr(e)));
            let root = part.and_then(|e| {
                self.view_chain_root(e).or_else(|| {
                    self.binding_of(e)
                        .filter(|&b| self.is_tensor_binding(b))
                        .and_then(|b| self.scopes.root_of(b))
                })
            });
            aliased.push(root.map(|r| (r, part.cloned().expect("an element"))));
        }
        self.visit_expr_mut(&mut expr);
        let mut ids = Vec::new();
        for (k, p) in pt.elems.iter_mut().enumerate() {
            let Some(ident) = Self::pat_ident(p) else {
                continue;
            };
            let kind = Kind::Root {
                input: None,
                known: proven[k],
            };
            self.declare_pat(p, kind);
            let id = self
                .scopes
                .lookup(&ident.to_string())
                .expect("just declared");
            if let Some((root, part)) = &aliased[k]
                && self.tracked_root(id)
            {
                crate::diag::tuple_element_alias(self, part, id, *root);
            }
            ids.push((id, proven[k]));
        }
        local.init = Some(syn::LocalInit {
            eq_token: init.eq_token,
            expr: Box::new(expr),
            diverge: None,
        });
        let mut out = vec![Stmt::Local(local)];
        for (id, proven) in ids {
            if !proven && self.tracked_root(id) {
                out.extend(self.declared_freshness_check(id));
            }
            out.extend(self.root_prologue(id));
        }
        out
    }
}
