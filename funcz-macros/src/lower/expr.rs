//! Expressions: in-place calls, reads of bindings (regenerated if stale),
//! and the walk into every sub-expression.
//!
//! Input: `v.sum()` with `v` a view of a mutated root.
//! Output: `{ rt::sync(&mut v, &mut s, &root, &root_state, mode); v.sum() }` (the sync before the statement).

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// Lowers one expression (see [`VisitMut::visit_expr_mut`], which
    /// counts the loops around it).
    pub(super) fn lower_expr(&mut self, e: &mut Expr) {
        if self.is_inplace_call(e) {
            if let Some(lowered) = self.try_inplace(e, Want::Value) {
                *e = lowered;
            }
            return;
        }
        match e {
            Expr::Path(_) => {
                if let Some(id) = self.binding_of(e) {
                    self.use_binding(id, e);
                }
            }
            Expr::Field(_) if self.place_of(e).is_some() => {
                let id = self.place_of(e).expect("checked");
                self.use_binding(id, e);
            }
            // `xs[i]` of a collection input the body shadows with a `Vec`:
            // index the `Vec` (not `(&mut xs[..])[i]`, which would borrow it
            // mutably in a read such as `xs[0].add_(&xs[1])`).
            Expr::Index(ix)
                if self.binding_of(&ix.expr).is_some_and(|id| {
                    matches!(self.scopes.kind(id), Kind::Coll { input: Some(_) })
                }) =>
            {
                // `s.m[i]` of a list held in a field: index its `Vec`.
                if matches!(&*ix.expr, Expr::Field(_)) {
                    let id = self.binding_of(&ix.expr).expect("checked");
                    let v = self.value(id);
                    *ix.expr = pq!(#v);
                }
                self.visit_expr_mut(&mut ix.index);
            }
            // `p[k]` of a multi-output view read with a literal or variable
            // index: regenerate that output only (not all of them, whose
            // regenerations would be dead).
            Expr::Index(ix)
                if matches!(&*ix.index, Expr::Lit(_) | Expr::Path(_))
                    && self.binding_of(&ix.expr).is_some_and(|id| {
                        matches!(self.scopes.kind(id), Kind::Multi { .. }) && self.has_state(id)
                    }) =>
            {
                let id = self.binding_of(&ix.expr).expect("checked");
                self.check_stale_read(id, &*ix);
                self.visit_expr_mut(&mut ix.index);
                let Kind::Multi { root } = self.scopes.kind(id).clone() else {
                    unreachable!("checked")
                };
                let already = self.synced.last().is_some_and(|d| d.contains(&id));
                if !already {
                    let rt = rt();
                    let (v, s) = (self.value(id), self.state(id));
                    let (rv, rs) = self.root_value_state(root);
                    let k = &ix.index;
                    self.push_pre(pq!(#rt::sync(&mut #v[#k], &mut #s[#k], &#rv, &#rs);));
                }
            }
            // `*y` of a `&`/`&mut` tensor input the body shadows with an owned
            // tensor: the local itself (not `*(&mut y)`, which would borrow it
            // mutably in a read such as `y.add_(&*y)`).
            Expr::Unary(u)
                if matches!(u.op, syn::UnOp::Deref(_))
                    && self.binding_of(&u.expr).is_some_and(|id| {
                        matches!(
                            self.scopes.kind(id),
                            Kind::Root {
                                input: Some(Passing::Ref | Passing::RefMut),
                                ..
                            }
                        ) && self.tracked_root(id)
                    }) =>
            {
                let id = self.binding_of(&u.expr).expect("checked");
                self.need_sync(id);
                let ident = self.value(id);
                *e = pq!(#ident);
            }
            Expr::Binary(b) if is_compound(&b.op) && self.is_tensor_expr(&b.left) => {
                let method = match b.op {
                    syn::BinOp::AddAssign(_) => "add_",
                    syn::BinOp::SubAssign(_) => "sub_",
                    syn::BinOp::MulAssign(_) => "mul_",
                    _ => "div_",
                };
                let method = Ident::new(method, b.op.span());
                let (l, r) = (&b.left, &b.right);
                // `*y += x` is `(*y).add_(x)`, not `*(y.add_(x))`.
                let mut call: Expr = if matches!(&**l, Expr::Unary(_)) {
                    syn::parse_quote!((#l).#method(#r))
                } else {
                    syn::parse_quote!(#l.#method(#r))
                };
                // The operator's span on the parentheses too: an op's panic
                // is then at the user's line (see `parens`).
                if let Expr::MethodCall(mc) = &mut call {
                    mc.paren_token = syn::token::Paren(b.op.span());
                }
                if let Some(lowered) = self.try_inplace(&call, Want::Nothing) {
                    // An operand borrowed for the operator (`s += &w.sum()`)
                    // is now an argument of a generic op (`on_var::add_`),
                    // which clippy would flag in the user's code.
                    *e = pq!({
                        #[allow(clippy::needless_borrows_for_generic_args)]
                        let () = #lowered;
                    });
                }
            }
            Expr::Binary(b) if !is_compound(&b.op) => {
                // An operand the lowering rewrites (`&b` read as
                // `&__fz_v_b.value`) is put in parentheses spanned as the
                // user's operand: the operator's span, which an op's panic
                // reports (`#[track_caller]`), runs from the first token of
                // the left operand to the last of the right one, and the
                // macro's tokens there made it the attribute's line.
                let names = [operand_name(&b.left), operand_name(&b.right)];
                let spans = [b.left.span(), b.right.span()];
                visit_mut::visit_expr_mut(self, e);
                if let Expr::Binary(b) = e {
                    for ((operand, name), at) in [&mut b.left, &mut b.right]
                        .into_iter()
                        .zip(names)
                        .zip(spans)
                    {
                        // (The user's own parentheses already carry the span.)
                        let paren = matches!(**operand, Expr::Paren(_));
                        if name.is_some() && !paren && operand_name(operand) != name {
                            let inner = std::mem::replace(
                                &mut **operand,
                                Expr::Verbatim(TokenStream::new()),
                            );
                            **operand = Expr::Paren(syn::ExprParen {
                                attrs: Vec::new(),
                                paren_token: syn::token::Paren(at),
                                expr: Box::new(inner),
                            });
                        }
                    }
                }
            }
            Expr::MethodCall(m) => {
                let name = crate::fast::text(&m.method);
                let kind = optable::lookup(&name).map(|i| i.kind);
                // The view chain under a reduction is only read: in copies
                // mode it may be served by the view itself (see below).
                let read_only = std::mem::take(&mut self.read_only);
                if self.copies()
                    && READS.contains(&name.as_str())
                    && (kind == Some(OpKind::Functional) || QUERIES.contains(&name.as_str()))
                    && is_read_view(&m.receiver)
                {
                    self.read_only = true;
                    self.visit_expr_mut(&mut m.receiver);
                    self.read_only = false;
                    for a in m.args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                    unmut_receiver(e);
                    return;
                }
                match kind {
                    Some(OpKind::Autograd) => {
                        crate::diag::autograd_call(self, &m.method);
                        visit_mut::visit_expr_mut(self, e);
                    }
                    Some(
                        OpKind::View { .. } | OpKind::MaybeView { .. } | OpKind::MultiView { .. },
                    ) if (self.copies()
                        || (matches!(name.as_str(), "view" | "as_strided")
                            && self.receiver_tracked(&m.receiver)))
                        && self.is_tensor_expr(&m.receiver) =>
                    {
                        // A view only read: its `*_copy` in copies mode. In views
                        // mode, `view` and `as_strided` of a tracked value also go
                        // through the runtime, which knows that the functional
                        // value's strides may differ from the original's.
                        let multi = matches!(kind, Some(OpKind::MultiView { .. }));
                        // Only a view chain ending in a reduction is read-only.
                        let read_only = read_only && !multi;
                        if let Expr::MethodCall(m) = e {
                            self.read_only = read_only && is_read_view(&m.receiver);
                            self.visit_expr_mut(&mut m.receiver);
                            self.read_only = false;
                            for a in m.args.iter_mut() {
                                self.visit_expr_mut(a);
                            }
                        }
                        unmut_receiver(e);
                        if let Expr::MethodCall(m) = e {
                            let rt = rt();
                            let mode = self.mode;
                            let (recv, method) = (&m.receiver, &m.method);
                            let args = meta_args(method, &m.args);
                            let at = method.span();
                            *e = if multi {
                                let forward = Ident::new("forward", at);
                                let call = parens(at, quote!(&#recv, #mode));
                                pq!(#rt::MultiMeta::#method(#args).#forward #call)
                            } else {
                                let meta = view_meta(&rt, method, &m.args);
                                let f = if read_only { "read_view" } else { "view_value" };
                                let call = rt_call(at, f, quote!(&#recv, #meta));
                                pq!(#call)
                            };
                        }
                    }
                    None if !QUERIES.contains(&name.as_str())
                        && (self.binding_of(&m.receiver).is_some()
                            || matches!(&*m.receiver, Expr::Index(ix) if self.binding_of(&ix.expr)
                                .is_some_and(|id| matches!(self.scopes.kind(id), Kind::Multi { .. })))
                            // On an element of a collection input whose
                            // slots are tracked: the method may replace it.
                            || self.slot_of(&m.receiver).is_some()
                            // On a view (a `*_copy` in copies mode): the
                            // method may mutate it (written back if so).
                            || (matches!(&*m.receiver, Expr::MethodCall(r) if matches!(
                                    optable::lookup(&crate::fast::text(&r.method)).map(|i| i.kind),
                                    Some(OpKind::View { .. } | OpKind::MaybeView { .. })
                                ))
                                && self.is_tensor_expr(&m.receiver))) =>
                    {
                        self.opaque_call(e);
                    }
                    _ => {
                        visit_mut::visit_expr_mut(self, e);
                        unmut_receiver(e);
                    }
                }
            }
            Expr::Call(_) => self.opaque_call(e),
            Expr::Closure(c) => {
                self.closure_escapes.push(self.let_depth > 0);
                self.closure_floor.push(self.scopes.bindings.len());
                self.scopes.push();
                for p in c.inputs.iter() {
                    self.declare_other(p);
                }
                self.visit_expr_mut(&mut c.body);
                self.scopes.pop();
                self.closure_floor.pop();
                self.closure_escapes.pop();
            }
            Expr::Async(a) => {
                self.closure_floor.push(self.scopes.bindings.len());
                self.visit_block_mut(&mut a.block);
                self.closure_floor.pop();
            }
            Expr::Macro(_) => self.lower_macro_expr(e),
            Expr::Return(r) if self.closure_floor.is_empty() && !self.exit.is_empty() => {
                let value: Expr = match r.expr.take() {
                    Some(v) => *v,
                    None => pq!(()),
                };
                let first = self.moves_input(&value);
                let mut value = self.eager_output(value);
                self.visit_expr_mut(&mut value);
                *e = self.exit_block(value, first, true);
            }
            Expr::Return(r) if self.closure_floor.is_empty() && r.expr.is_some() => {
                let mut value = self.eager_output(*r.expr.take().expect("checked"));
                self.visit_expr_mut(&mut value);
                *e = pq!(return #value);
            }
            Expr::Try(t) if self.closure_floor.is_empty() && !self.exit.is_empty() => {
                let mut inner = (*t.expr).clone();
                self.visit_expr_mut(&mut inner);
                let wb = &self.exit;
                let rt = rt();
                let x = tmp("__fz_try");
                // The exit branch visibly diverges (`?` then `unreachable!`),
                // so the write-back's borrows end there (e.g. inside a loop
                // that borrows a collection mutably).
                *e = pq!({
                    let #x = #inner;
                    if #rt::is_exit(&#x) {
                        #(#wb)*
                        #x?;
                        ::core::unreachable!("funcz: `?` on an exit value returns");
                    }
                    #x?
                });
            }
            Expr::ForLoop(_) => self.lower_for(e),
            Expr::While(w) if !matches!(&*w.cond, Expr::Let(_)) => {
                // The condition runs before every iteration: views it reads
                // are regenerated there, not once before the loop.
                self.pre.push(Vec::new());
                self.synced.push(Vec::new());
                self.visit_expr_mut(&mut w.cond);
                self.synced.pop();
                let pre = self.pre.pop().unwrap_or_default();
                self.visit_block_mut(&mut w.body);
                if !pre.is_empty() {
                    let (label, cond, body) = (&w.label, &w.cond, &w.body);
                    *e = pq!(#label loop { #(#pre)* if !(#cond) { break; } #body });
                }
            }
            Expr::Assign(_) => self.lower_assign(e),
            Expr::Let(l) => {
                self.visit_expr_mut(&mut l.expr);
                let plain = self.unwraps_tensors(&l.expr);
                self.declare_bound(&l.pat, plain);
            }
            Expr::Array(a) => {
                for el in a.elems.iter() {
                    self.check_stored(el, false);
                }
                visit_mut::visit_expr_mut(self, e);
            }
            Expr::Tuple(t) => {
                for el in t.elems.iter() {
                    self.check_stored(el, false);
                }
                visit_mut::visit_expr_mut(self, e);
            }
            Expr::Struct(st) => {
                for f in st.fields.iter() {
                    self.check_stored(&f.expr, false);
                }
                visit_mut::visit_expr_mut(self, e);
            }
            Expr::Match(m) => {
                self.visit_expr_mut(&mut m.expr);
                let plain = self.unwraps_tensors(&m.expr);
                for arm in m.arms.iter_mut() {
                    self.scopes.push();
                    self.declare_bound(&arm.pat, plain);
                    // A guard is ordinary code (its in-place ops are lowered).
                    if let Pat::Guard(g) = &mut arm.pat {
                        self.visit_expr_mut(&mut g.guard);
                    }
                    self.visit_expr_mut(&mut arm.body);
                    self.scopes.pop();
                }
            }
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    /// A read of binding `id`: regenerate it if stale, and rename shadowed
    /// inputs so the body sees the type it was written against.
    pub(super) fn use_binding(&mut self, id: usize, e: &mut Expr) {
        let root = self.scopes.root_of(id).unwrap_or(id);
        if self.has_state(id)
            && self.captured(id)
            && self.closure_escapes.last() == Some(&true)
            && self.mutated_later(root)
        {
            crate::diag::closure_reads_mutated(self, e, id, root);
        }
        if self.has_state(id) {
            self.check_stale_read(id, &*e);
        }
        self.need_sync(id);
        // `r` of `let r = &x;` reads `(&x)`.
        let via_ref = match &*e {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let name = crate::fast::text(&p.path.segments[0].ident);
                self.scopes.is_ref_name(&name).then_some(name)
            }
            _ => None,
        };
        if let Some(name) = &via_ref {
            let target = self.scopes.ident(id).clone();
            if self.scopes.lookup(&target.to_string()) != Some(id) {
                crate::diag::reference_to_shadowed(self, e, name, &target);
                return;
            }
            *e = pq!(#target);
        }
        self.use_binding_inner(id, e);
        if via_ref.is_some() {
            *e = pq!((&#e));
        }
    }

    pub(super) fn use_binding_inner(&mut self, id: usize, e: &mut Expr) {
        let ident = self.value(id);
        match self.scopes.kind(id).clone() {
            // `s.m` of a list held in a field: its `Vec` of handles (or,
            // untracked, the field's borrow).
            Kind::Coll { .. } if matches!(e, Expr::Field(_)) => *e = pq!(#ident),
            Kind::Root { input: Some(p), .. } if self.tracked_root(id) => match p {
                Passing::Ref => *e = reference_to(&ident, self.var(id).span(), false),
                Passing::RefMut => *e = reference_to(&ident, self.var(id).span(), true),
                Passing::Value => *e = pq!(#ident),
            },
            Kind::Root { input: None, .. } if self.has_state(id) => *e = pq!(#ident),
            Kind::Alias { .. } if self.in_var(id) => *e = pq!(#ident),
            Kind::ElemRef { .. } if self.shared_elems.contains(&id) => *e = pq!((&*#ident)),
            Kind::ElemAt { coll, index } => {
                let c = self.value(coll);
                *e = pq!((&#c[#index]));
            }
            Kind::Coll {
                input: Some((p, vec)),
            } if self.facts.mutated.contains(&id) => match (p, vec) {
                (Passing::Ref, false) => *e = pq!((&*#ident)),
                (Passing::RefMut, false) => *e = pq!((&mut *#ident)),
                (Passing::Ref, true) => *e = pq!((&#ident)),
                (Passing::RefMut, true) => *e = pq!((&mut #ident)),
                (Passing::Value, _) => {}
            },
            _ => {}
        }
    }
}

/// A view op call (not `as_strided`, whose result depends on the strides
/// of its receiver) that a reduction may read as a view in copies mode.
fn is_read_view(e: &Expr) -> bool {
    matches!(e, Expr::MethodCall(m) if m.method != "as_strided" && matches!(
        optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
        Some(OpKind::View { .. } | OpKind::MaybeView { .. })
    ))
}

/// The variable an operand reads as the user wrote it (`x`, `&x`,
/// `&mut x`, `*x`, `&*x`, `(x)`): its name; `None` for anything else.
fn operand_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(crate::fast::text(&p.path.segments[0].ident))
        }
        Expr::Reference(r) => operand_name(&r.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => operand_name(&u.expr),
        Expr::Paren(p) => operand_name(&p.expr),
        _ => None,
    }
}
