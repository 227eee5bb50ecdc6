//! Loops over tensors and collections: `for r in x.unbind(0)` binds views,
//! `for t in xs.iter()` elements whose mutation is written back to the
//! collection (`iter` becomes `iter_mut` when needed).
//!
//! Input: `for x in xs.iter() { x.mul_(2.0); }` with `xs: &mut [Tensor]`.
//! Output: `for x in xs.iter_mut() { if rt::can_donate(&(*x)) { (*x).mul_(2.0); rt::donated("mul", &mut (*x)); } else { (*x) = (*x).mul(2.0); } }`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    pub(super) fn lower_for(&mut self, e: &mut Expr) {
        let Expr::ForLoop(f) = e else { return };
        let rt = rt();
        self.scopes.push();
        let expr = (*f.expr).clone();
        let ident = Self::pat_ident(&f.pat);
        if let Some(ident) = &ident
            && let Some(coll) = self.elem_alias_coll(&expr)
        {
            // `for r in xs[i].unbind(0)`: plain values, watched like a `let`.
            self.visit_expr_mut(&mut f.expr);
            let id = self.scopes.declare(
                ident,
                Kind::Root {
                    input: None,
                    known: true,
                },
            );
            self.elem_aliases.push((id, coll));
            self.visit_block_mut(&mut f.body);
            self.scopes.pop();
            return;
        }
        // `for r in x.unbind(0) { .. }`: r is a view of x's root.
        if let Some(ident) = ident.clone()
            && let Some((prelude, place, steps, Some((method, args)))) = self.view_chain(&expr)
            && let Some(root) = self.place_root(&place)
        {
            if self.tracked_root(root) {
                let (stmts, _, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                let margs = meta_args(&method, &args);
                let id = self.scopes.declare(&ident, Kind::Alias { root });
                let st = self.state(id);
                let vals = tmp("__fz_values");
                let sts = tmp("__fz_states");
                self.visit_block_mut(&mut f.body);
                let body = &f.body;
                let label = &f.label;
                let may_copy = steps_may_copy(&steps);
                let bind: Option<Stmt> = may_copy.then(|| pq!(#rt::bind_views(&#ps, &mut #sts);));
                let mutability = may_copy.then(|| quote!(mut));
                let meta = quote!(#rt::MultiMeta::#method(#margs));
                let views = rt_call(method.span(), "multi_view", quote!(&#v, &#s, #meta));
                let new: Expr = pq!({
                    #(#stmts)*
                    let (#vals, #mutability #sts) = #views;
                    #bind
                    #label for (mut #ident, mut #st) in ::core::iter::zip(#vals, #sts) #body
                });
                self.scopes.pop();
                *e = new;
                return;
            }
            self.visit_expr_mut(&mut f.expr);
            let mut pat = (*f.pat).clone();
            self.declare_pat(&mut pat, Kind::Alias { root });
            self.visit_block_mut(&mut f.body);
            self.scopes.pop();
            return;
        }
        // Loops over collections of tensors: the loop variables are elements.
        let shape = self.iter_shape(&f.expr);
        let mut expr = (*f.expr).clone();
        let first = self.scopes.bindings.len();
        if let Some(shape) = &shape {
            self.converted.clear();
            self.mutable_iter(&mut expr, shape);
            *f.expr = expr;
            let mut pat = (*f.pat).clone();
            self.bind_iter_pat(&mut pat, shape);
            self.converted.clear();
            *f.pat = pat;
        } else {
            // Elements of a collection input through an iterator the
            // macro cannot follow, given to a call: refused (see
            // `diag::loop_elements_passed_on`).
            if let Some(coll) = self.mutable_iter_root(&f.expr) {
                let mut vars = Vec::new();
                crate::elements::pattern_idents(&f.pat, &mut vars);
                if crate::elements::passes_any(&f.body, &vars) {
                    crate::diag::loop_elements_passed_on(self, &f.expr, coll);
                }
            }
            self.visit_expr_mut(&mut f.expr);
            self.declare_other(&f.pat);
        }
        self.visit_block_mut(&mut f.body);
        // The collections whose elements an opaque call in the body was
        // given through a loop variable: their addresses, taken before the
        // loop borrows them, name the slot a replaced element sat in.
        let bases: Vec<Stmt> = (first..self.scopes.bindings.len())
            .filter(|b| self.loop_bases_used.contains(b))
            .filter_map(|b| match self.scopes.kind(b) {
                Kind::ElemRef { coll } => {
                    let (base, v) = (elem_base_ident(b), self.value(*coll));
                    Some(pq!(let #base = #rt::slots_at(&#v[..]);))
                }
                _ => None,
            })
            .collect();
        self.scopes.pop();
        if !bases.is_empty() {
            let lowered = std::mem::replace(e, Expr::Verbatim(TokenStream::new()));
            *e = pq!({ #(#bases)* #lowered });
        }
    }

    /// The tracked collection input a loop's iterator walks mutably
    /// (`xs.iter_mut()` or `xs.chunks_mut(2)` at the start of a chain of
    /// adaptors, or `&mut xs`).
    fn mutable_iter_root(&self, e: &Expr) -> Option<usize> {
        let (mut cur, mut by_mut) = (e, false);
        loop {
            match cur {
                Expr::MethodCall(m) => {
                    // (`iter_mut`, `chunks_mut`, `split_at_mut`, ..)
                    by_mut |= crate::fast::text(&m.method).ends_with("_mut");
                    cur = &m.receiver;
                }
                Expr::Reference(r) => {
                    by_mut |= r.mutability.is_some();
                    cur = &r.expr;
                }
                Expr::Paren(p) => cur = &p.expr,
                _ => break,
            }
        }
        let id = self.binding_of(cur)?;
        (by_mut && self.is_tracked_input_coll(id)).then_some(id)
    }

    /// Makes iteration over mutated collections yield `&mut` elements of
    /// the functional copies.
    pub(super) fn mutable_iter(&mut self, e: &mut Expr, shape: &IterShape) {
        match (e, shape) {
            (e, IterShape::Coll(id)) if self.facts.mutated.contains(id) => {
                // `d.iter()` / `&d` / `d` of a `&[Tensor]` yields `&Tensor`.
                let yields_mut = match &*e {
                    Expr::MethodCall(m) => m.method == "iter_mut",
                    Expr::Reference(r) => r.mutability.is_some(),
                    _ => matches!(
                        self.scopes.kind(*id),
                        Kind::Coll {
                            input: Some((Passing::RefMut, _))
                        }
                    ),
                };
                if !yields_mut {
                    self.converted.push(*id);
                }
                let ident = self.value(*id);
                *e = pq!(#ident.iter_mut());
            }
            (Expr::MethodCall(m), IterShape::Enumerate(inner)) => {
                self.mutable_iter(&mut m.receiver, inner)
            }
            (Expr::MethodCall(m), IterShape::Adapted(inner)) => {
                self.mutable_iter(&mut m.receiver, inner);
                for a in m.args.iter_mut() {
                    self.visit_expr_mut(a);
                }
            }
            (Expr::MethodCall(m), IterShape::Zip(a, b)) => {
                self.mutable_iter(&mut m.receiver, a);
                if let Some(arg) = m.args.first_mut() {
                    self.mutable_iter(arg, b);
                }
            }
            (e, _) => self.visit_expr_mut(e),
        }
    }

    pub(super) fn bind_iter_pat(&mut self, pat: &mut Pat, shape: &IterShape) {
        match (pat, shape) {
            (Pat::Ident(pi), IterShape::Coll(id)) => {
                let b = self.scopes.declare(&pi.ident, Kind::ElemRef { coll: *id });
                if self.converted.contains(id) {
                    self.shared_elems.push(b);
                } else if self.facts.mutated.contains(id) {
                    // (`iter_mut()` of a collection with handles of its
                    // own: an element a call replaces is one of those.)
                    self.loop_elems.insert(b);
                }
            }
            (Pat::Tuple(t), IterShape::Enumerate(inner)) if t.elems.len() == 2 => {
                let mut it = t.elems.iter_mut();
                let first = it.next().expect("two elements");
                self.declare_other(first);
                let second = it.next().expect("two elements");
                self.bind_iter_pat(second, inner);
            }
            (Pat::Tuple(t), IterShape::Zip(a, b)) if t.elems.len() == 2 => {
                let mut it = t.elems.iter_mut();
                let first = it.next().expect("two elements");
                self.bind_iter_pat(first, a);
                let second = it.next().expect("two elements");
                self.bind_iter_pat(second, b);
            }
            (p, IterShape::Adapted(inner)) => self.bind_iter_pat(p, inner),
            (p, _) => self.declare_other(p),
        }
    }
}

/// The address of the collection a loop variable `b` walks, taken before
/// the loop (see `Lowerer::lower_for`).
pub(super) fn elem_base_ident(b: usize) -> Ident {
    format_ident!("__fz_elem_base_{}", b, span = Span::mixed_site())
}
