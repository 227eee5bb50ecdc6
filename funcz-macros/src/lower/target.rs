//! Where an in-place op's receiver lives: a place (a variable or a
//! collection element) and the views from it to the mutated tensor, or a
//! refusal. Only views and in-place ops pass a tensor's storage on.
//!
//! Input: `x.t().select(0, 1)` (the receiver of `.add_(1.0)`).
//! Output: `Target::Place { place: Var(x), steps: [t(), select(0, 1)] }`.

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// True if the receiver chain `e` starts from a binding with alias
    /// state (whose functional value may be laid out unlike the original).
    pub(super) fn receiver_tracked(&self, e: &Expr) -> bool {
        let mut cur = e;
        loop {
            match cur {
                Expr::MethodCall(m) => cur = &m.receiver,
                Expr::Paren(p) => cur = &p.expr,
                Expr::Index(i) => cur = &i.expr,
                Expr::Reference(r) => cur = &r.expr,
                _ => return self.binding_of(cur).is_some_and(|id| self.has_state(id)),
            }
        }
    }

    /// Called when binding `id` is mutated: a collection element is updated
    /// by replacing it, so a view of an element that is in scope would go
    /// stale, and a mutation through such a view would not reach the
    /// element. Both are refused.
    pub(super) fn check_elem_aliases(&self, id: usize) {
        let coll = match self.scopes.kind(id) {
            Kind::Coll { .. } => id,
            Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => *coll,
            _ => {
                if let Some(&(_, coll)) = self.elem_aliases.iter().find(|(a, _)| *a == id) {
                    crate::diag::mutation_through_elem_view(self, id, coll);
                }
                return;
            }
        };
        for &(alias, c) in &self.elem_aliases {
            let name = self.scopes.ident(alias);
            if c == coll && self.scopes.lookup(&name.to_string()) == Some(alias) {
                crate::diag::elem_view_goes_stale(self, alias, coll);
            }
        }
    }

    /// Peels views off `e` down to a place: returns (prelude, place, views
    /// from the place outward, and the multi-output view on top, if any).
    #[allow(clippy::type_complexity)]
    pub(super) fn view_chain(
        &mut self,
        e: &Expr,
    ) -> Option<(Vec<Stmt>, Place, Vec<Step>, Option<(Ident, Args)>)> {
        let (mut multi, inner) = match e {
            Expr::MethodCall(m)
                if matches!(
                    optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                    Some(OpKind::MultiView { .. })
                ) =>
            {
                (Some((m.method.clone(), m.args.clone())), &*m.receiver)
            }
            _ => (None, e),
        };
        let is_view = |e: &Expr| {
            matches!(e, Expr::MethodCall(m) if matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                Some(OpKind::View { .. } | OpKind::MaybeView { .. })
            ))
        };
        if multi.is_none() && !is_view(inner) && !matches!(inner, Expr::Index(_)) {
            return None;
        }
        match self.target(inner)? {
            Target::Place {
                prelude,
                place,
                steps,
            } => {
                if multi.is_none() && steps.is_empty() {
                    return None;
                }
                if let Some((_, args)) = &mut multi {
                    for a in args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                }
                Some((prelude, place, steps, multi))
            }
            _ => None,
        }
    }

    pub(super) fn place_root(&self, place: &Place) -> Option<usize> {
        match place {
            Place::Var(id) | Place::Index(id, _) => self.scopes.root_of(*id),
        }
    }

    /// Classifies the receiver of an in-place op (or of a view chain).
    pub(super) fn target(&mut self, e: &Expr) -> Option<Target> {
        grow(|| self.target_inner(e))
    }

    pub(super) fn target_inner(&mut self, e: &Expr) -> Option<Target> {
        match e {
            Expr::Paren(p) => self.target(&p.expr),
            Expr::Group(g) => self.target(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let id = self.binding_of(&u.expr)?;
                if let Kind::ElemAt { coll, index } = self.scopes.kind(id).clone() {
                    return Some(Target::Place {
                        prelude: Vec::new(),
                        place: Place::Index(coll, pq!(#index)),
                        steps: Vec::new(),
                    });
                }
                matches!(
                    self.scopes.kind(id),
                    Kind::ElemRef { .. } | Kind::Root { .. }
                )
                .then(|| Target::Place {
                    prelude: Vec::new(),
                    place: Place::Var(id),
                    steps: Vec::new(),
                })
            }
            Expr::Path(_) | Expr::Field(_) => {
                let id = self.binding_of(e)?;
                match self.scopes.kind(id) {
                    Kind::ElemAt { coll, index } => {
                        let (coll, index) = (*coll, index.clone());
                        Some(Target::Place {
                            prelude: Vec::new(),
                            place: Place::Index(coll, pq!(#index)),
                            steps: Vec::new(),
                        })
                    }
                    Kind::Root { .. } | Kind::Alias { .. } | Kind::ElemRef { .. } => {
                        Some(Target::Place {
                            prelude: Vec::new(),
                            place: Place::Var(id),
                            steps: Vec::new(),
                        })
                    }
                    Kind::Ambiguous => {
                        crate::diag::ambiguous_view(self, e, id);
                        Some(Target::Refused)
                    }
                    _ => None,
                }
            }
            Expr::Index(ix) => match self
                .binding_of(&ix.expr)
                .map(|id| (id, self.scopes.kind(id).clone()))
            {
                Some((id, Kind::Coll { .. } | Kind::Multi { .. })) => {
                    let mut index = (*ix.index).clone();
                    self.visit_expr_mut(&mut index);
                    Some(Target::Place {
                        prelude: Vec::new(),
                        place: Place::Index(id, index),
                        steps: Vec::new(),
                    })
                }
                _ => None,
            },
            Expr::MethodCall(m) => {
                let kind = optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind);
                match kind {
                    Some(OpKind::View { .. } | OpKind::MaybeView { .. }) => {
                        let inner = self.target(&m.receiver)?;
                        match inner {
                            Target::Place {
                                prelude,
                                place,
                                mut steps,
                            } => {
                                let mut args = m.args.clone();
                                for a in args.iter_mut() {
                                    self.visit_expr_mut(a);
                                }
                                steps.push(Step::View(m.method.clone(), args));
                                Some(Target::Place {
                                    prelude,
                                    place,
                                    steps,
                                })
                            }
                            other => Some(other),
                        }
                    }
                    Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. }) => {
                        // `x.mul_(2.0).add_(3.0)`: perform the inner op, then
                        // the outer one applies to the same place. Lowering
                        // `e` performed every in-place op inside it, so the
                        // place is found without lowering them again.
                        let first = self.try_inplace(e, Want::Nothing)?;
                        match self.target(peel_inplace(&m.receiver))? {
                            Target::Place {
                                mut prelude,
                                place,
                                steps,
                            } => {
                                prelude.insert(0, Stmt::Expr(first, Some(Default::default())));
                                Some(Target::Place {
                                    prelude,
                                    place,
                                    steps,
                                })
                            }
                            other => Some(other),
                        }
                    }
                    _ => None,
                }
            }
            _ => None,
        }
        .or_else(|| {
            if let Expr::Index(ix) = e
                && let Expr::MethodCall(m) = &*ix.expr
                && matches!(
                    optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                    Some(OpKind::MultiView { .. })
                )
                && let Some(Target::Place {
                    prelude,
                    place,
                    mut steps,
                }) = self.target(&m.receiver)
            {
                let mut args = m.args.clone();
                for a in args.iter_mut() {
                    self.visit_expr_mut(a);
                }
                let mut index = (*ix.index).clone();
                self.visit_expr_mut(&mut index);
                steps.push(Step::MultiOut(m.method.clone(), args, index));
                return Some(Target::Place {
                    prelude,
                    place,
                    steps,
                });
            }
            None
        })
    }

    /// Emits the views of `steps` from `place`; returns the statements, the
    /// place's own value and state, and the variables holding the final
    /// value and its state.
    #[allow(clippy::type_complexity)]
    pub(super) fn emit_steps_from(
        &mut self,
        prelude: Vec<Stmt>,
        place: &Place,
        steps: &[Step],
    ) -> (Vec<Stmt>, Access, Access, Access, Access) {
        let rt = rt();
        let mut stmts = prelude;
        // `r.view().mul_(a).add_(b)`: the prelude (`mul_`) made `r` stale.
        let chained = !stmts.is_empty();
        let (pv, ps) = self.place_value_state(place, &mut stmts);
        if chained
            && let Place::Var(id) | Place::Index(id, _) = place
            && let Some(sync) = self.sync_stmt(*id)
        {
            stmts.push(sync);
        }
        let (mut v, mut s) = (pv.clone(), ps.clone());
        for (k, step) in steps.iter().enumerate() {
            // Each view of the chain is an `rt::Var` (one local).
            let nv = format_ident!("__fz_view_{}", k, span = Span::mixed_site());
            let var = match step {
                Step::View(method, args) => {
                    let meta = view_meta(&rt, method, args);
                    match var_pair(&v, &s) {
                        Some(x) => rt_call(method.span(), "var_view", quote!(&#x, #meta)),
                        None => rt_call(method.span(), "var_view_of", quote!(&#v, &#s, #meta)),
                    }
                }
                Step::MultiOut(method, args, index) => {
                    let margs = meta_args(method, args);
                    let meta = quote!(#rt::MultiMeta::#method(#margs));
                    let out = rt_call(method.span(), "multi_out", quote!(&#v, &#s, #meta, #index));
                    quote!(#rt::Var::of_pair(#out)).into()
                }
            };
            stmts.push(pq!(let mut #nv = #var;));
            v = Access::Field(nv.clone(), Field::Value);
            s = Access::Field(nv, Field::State);
        }
        (stmts, pv, ps, v, s)
    }

    /// The value and state expressions of a place (binding temporaries for
    /// indices and for roots that carry no state).
    pub(super) fn place_value_state(
        &mut self,
        place: &Place,
        stmts: &mut Vec<Stmt>,
    ) -> (Access, Access) {
        let rt = rt();
        match place {
            Place::Var(id) => {
                let id = *id;
                let v = self.value(id);
                match self.scopes.kind(id).clone() {
                    Kind::ElemRef { .. } => {
                        let ts = tmp("__fz_elem_state");
                        stmts.push(pq!(let mut #ts = #rt::Tracked::element(&*#v);));
                        (Access::Tokens(quote!((*#v))), Access::Name(ts))
                    }
                    _ if self.has_state(id) => {
                        self.need_sync(id);
                        (v, self.state(id))
                    }
                    _ => {
                        let ts = tmp("__fz_root_state");
                        stmts.push(pq!(let mut #ts = #rt::Tracked::root(&#v);));
                        (v, Access::Name(ts))
                    }
                }
            }
            Place::Index(id, index) => {
                let id = *id;
                let v = self.value(id);
                let i = tmp("__fz_index");
                stmts.push(pq!(let #i: usize = #index;));
                match self.scopes.kind(id).clone() {
                    Kind::Multi { .. } if self.has_state(id) => {
                        self.need_sync(id);
                        let s = self.state(id);
                        (
                            Access::Tokens(quote!(#v[#i])),
                            Access::Tokens(quote!(#s[#i])),
                        )
                    }
                    _ => {
                        let ts = tmp("__fz_elem_state");
                        stmts.push(pq!(let mut #ts = #rt::Tracked::element(&#v[#i]);));
                        (Access::Tokens(quote!(#v[#i])), Access::Name(ts))
                    }
                }
            }
        }
    }

    /// True if `place` is a root variable (never a copy `reshape` made).
    pub(super) fn place_is_root(&self, place: &Place) -> bool {
        matches!(place, Place::Var(id) if matches!(self.scopes.kind(*id), Kind::Root { .. }))
    }

    /// The root value and state a mutation of `place` is committed into.
    pub(super) fn commit_root_of(&self, place: &Place) -> Option<(Access, Access)> {
        match place {
            Place::Var(id) => match self.scopes.kind(*id).clone() {
                Kind::Alias { root } => Some(self.root_value_state(root)),
                Kind::Root { .. } if self.based(*id) => Some(self.root_value_state(*id)),
                _ => None,
            },
            Place::Index(id, _) => match self.scopes.kind(*id).clone() {
                Kind::Multi { root } => Some(self.root_value_state(root)),
                _ => None,
            },
        }
    }
}
