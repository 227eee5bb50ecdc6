//! Assignments: `x = value` of a root rebinds it (an owned input is
//! written and released first; a value the macro cannot prove fresh is
//! checked); of a view, re-derives it from its base; `x op= y` is the
//! in-place op.
//!
//! Input: `x = a.exp();` with `x` a local root the body mutates.
//! Output: `{ __fz_v_x_1 = a.exp(); __fz_state_1.rebind(&__fz_v_x_1); }`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    pub(super) fn has_aliases(&self, root: usize) -> bool {
        self.scopes.bindings.iter().any(
            |b| matches!(b.kind, Kind::Alias { root: r } | Kind::Multi { root: r } if r == root),
        ) || self.based(root)
    }

    pub(super) fn lower_assign(&mut self, e: &mut Expr) {
        let Expr::Assign(a) = e else { return };
        let mut replace: Option<Expr> = None;
        let Some(id) = self.binding_of(&a.left) else {
            // `xs[i] = value` replaces an element of a collection.
            // `*x = value` with `x` a loop variable over a collection
            // input's elements.
            if let Expr::Unary(u) = &*a.left
                && matches!(u.op, syn::UnOp::Deref(_))
                && let Some(x) = self.binding_of(&u.expr)
                && let Kind::ElemRef { coll } = self.scopes.kind(x).clone()
                && self.is_input_coll(coll)
            {
                crate::diag::elem_ref_replaced(self, &a.left, coll);
            }
            // `*xs = other` of a `&mut` collection input.
            if let Expr::Unary(u) = &*a.left
                && matches!(u.op, syn::UnOp::Deref(_))
                && let Some(x) = self.binding_of(&u.expr)
                && self.is_tracked_input_coll(x)
            {
                crate::diag::collection_input_reassigned(self, a, x);
            }
            let mut slot_of = None;
            if let Expr::Index(ix) = &*a.left
                && let Some(id) = self.binding_of(&ix.expr)
                && matches!(self.scopes.kind(id), Kind::Coll { .. })
            {
                self.mark_mutated(id);
                slot_of = Some(id);
            }
            visit_mut::visit_expr_mut(self, &mut a.right);
            visit_mut::visit_expr_mut(self, &mut a.left);
            if let Some(id) = slot_of
                && self.is_input_coll(id)
            {
                // The entry scan (`elements::assigned_elements`) gave every
                // collection input assigned like this its `rt::Replaced`;
                // without it the exit would write by position.
                if self.replaced.contains(&id) {
                    *e = self.replace_element(id, e);
                } else {
                    self.cx.internal(
                        &*e,
                        format!(
                            "an element of `{}` is assigned but was not seen at entry",
                            self.shown(id)
                        ),
                    );
                }
            }
            return;
        };
        if let Some(kind) = self.kind_after_assign(id, &a.right) {
            self.scopes.bindings[id].kind = kind;
        }
        match self.scopes.kind(id).clone() {
            Kind::Root { input, .. } => {
                // The new value must be fresh: the root's mutations are not
                // written anywhere else. A view (or the handle) of a tensor
                // of this function is refused; an unknown value is checked.
                let mut check_fresh = false;
                if self.has_state(id) {
                    let direct = self
                        .binding_of(&a.right)
                        .filter(|&b| self.is_tensor_binding(b))
                        .and_then(|b| self.scopes.root_of(b))
                        .map(|r| (r, false));
                    match self.view_chain_root(&a.right).map(|r| (r, true)).or(direct) {
                        // `x = x.narrow(..)` of a local: its old storage is
                        // not seen elsewhere. `x = w` moves a local.
                        Some((r, true)) if r == id && input.is_none() => {}
                        Some((r, false))
                            if r != id
                                && matches!(
                                    self.scopes.kind(r),
                                    Kind::Root { input: None, .. }
                                )
                                && !self.has_aliases(r) => {}
                        Some((r, _)) => crate::diag::assign_alias_to_root(self, &a.right, id, r),
                        None => check_fresh = !self.is_tensor_expr(&a.right),
                    }
                }
                self.visit_expr_mut(&mut a.right);
                // Aliases of the old value keep it: bring those in scope up to
                // date now, while the old value is still there.
                let mut resync: Vec<Stmt> = Vec::new();
                if self.has_state(id) {
                    for (b, binding) in self.scopes.bindings.iter().enumerate() {
                        let of_root = matches!(binding.kind,
                            Kind::Alias { root } | Kind::Multi { root } if root == id);
                        let visible =
                            self.scopes.lookup(&crate::fast::text(&binding.ident)) == Some(b);
                        if of_root
                            && visible
                            && let Some(stmt) = self.sync_stmt(b)
                        {
                            resync.push(stmt);
                        }
                    }
                }
                // An owned input (`mut x: Tensor`) assigned a new value: the
                // caller's tensor keeps what the body did to it so far (it is
                // written now), and is not written at exit (the new value is
                // fresh: proved, refused or checked above).
                let mut after: Vec<Stmt> = Vec::new();
                if self.has_state(id)
                    && let Kind::Root {
                        input: Some(Passing::Value),
                        ..
                    } = self.scopes.kind(id)
                {
                    let rt = rt();
                    let input = input_ident(id);
                    let (cur, _) = self.root_value_state(id);
                    resync.push(pq!(#rt::write_back_owned(&#input, &#cur);));
                    after.push(pq!(#input = #rt::released();));
                }
                if self.based(id) {
                    // A root re-laid-out by `t_()` & co.: the new value is its
                    // new hidden base, and it no longer views the old one.
                    let check = if check_fresh {
                        self.freshness_check(id)
                    } else {
                        None
                    };
                    let v = self.value(id);
                    let s = self.state(id);
                    let (b, bs) = (base_ident(id), base_state_ident(id));
                    let right = &a.right;
                    let rt = rt();
                    replace = Some(pq!({
                        #(#resync)*
                        #v = #right;
                        #check
                        #b = #rt::handle(&#v);
                        #bs.rebind(&#b);
                        #s = #bs.clone();
                        #(#after)*
                    }));
                } else if self.has_state(id) {
                    let v = self.value(id);
                    let s = self.state(id);
                    let right = &a.right;
                    let check = if check_fresh {
                        self.freshness_check(id)
                    } else {
                        None
                    };
                    replace =
                        Some(pq!({ #(#resync)* #v = #right; #check #s.rebind(&#v); #(#after)* }));
                }
            }
            Kind::Alias { root } => {
                let expr = (*a.right).clone();
                if let Some((prelude, place, steps, None)) = self.view_chain(&expr)
                    && self.place_root(&place) == Some(root)
                {
                    if self.has_state(id) {
                        let (mut stmts, _, ps, v, s) =
                            self.emit_steps_from(prelude, &place, &steps);
                        let rt = rt();
                        let ident = self.value(id);
                        let st = self.state(id);
                        if steps_may_copy(&steps) {
                            // (`v = v.reshape(..)`: the place may be `v` itself.)
                            stmts.push(pq!({
                                let __fz_place_state = #ps.clone();
                                #ident = #v;
                                #st = #s;
                                #rt::bind_view(&__fz_place_state, &mut #st);
                            }));
                        } else {
                            stmts.push(pq!({ #ident = #v; #st = #s; }));
                        }
                        replace = Some(pq!({ #(#stmts)* }));
                    } else {
                        self.visit_expr_mut(&mut a.right);
                    }
                } else {
                    crate::diag::view_rebound_to_other_base(self, &a.right, id);
                    self.visit_expr_mut(&mut a.right);
                }
            }
            Kind::Coll { input: Some(_) } if self.is_tracked_input_coll(id) => {
                crate::diag::collection_input_reassigned(self, a, id);
                visit_mut::visit_expr_mut(self, &mut a.right);
            }
            _ => {
                visit_mut::visit_expr_mut(self, &mut a.right);
            }
        }
        if let Some(new) = replace {
            *e = new;
        }
    }

    /// `xs[i] = value` of a collection input (lowered operands): the
    /// first time a slot is replaced, the tensor the caller's slot holds
    /// gets the element's value so far (the original updated it in place
    /// until then) and the slot is marked, so that the exit hands the
    /// caller's slot the body's final element (`rt::write_back_slots`)
    /// instead of writing into the tensor it held before.
    ///
    /// Input: `xs[i] = g.mul(2.0)` with `xs: &mut [Tensor]`.
    /// Output: `{ let v = g.mul(2.0); let k: usize = i;
    /// rt::retire_slot(__fz_input_0.get(k), &xs[k], &mut __fz_replaced_0, k);
    /// xs[k] = v; }`
    fn replace_element(&self, id: usize, e: &Expr) -> Expr {
        let Expr::Assign(a) = e else {
            unreachable!("an assignment")
        };
        let Expr::Index(ix) = &*a.left else {
            unreachable!("an element assignment")
        };
        let (coll, index, right) = (&ix.expr, &ix.index, &a.right);
        let (value, slot) = (tmp("__fz_value"), tmp("__fz_slot"));
        let input = input_ident(id);
        let replaced = crate::scope::replaced_ident(id);
        let rt = rt();
        pq!({
            let #value = #right;
            let #slot: usize = #index;
            #rt::retire_slot(#input.get(#slot), &#coll[#slot], &mut #replaced, #slot);
            #coll[#slot] = #value;
        })
    }
}
