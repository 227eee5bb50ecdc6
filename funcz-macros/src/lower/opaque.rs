//! Calls the macro cannot see into: tracked tensors passed by reference
//! are checked with their storage's version counter around the call, and
//! written back when it changed.
//!
//! Input: `helper(&x.narrow(0, 0, 2))` in copies mode.
//! Output: `let a = narrow_copy(x); let ver = rt::version(&a); helper(&a); if changed { lowered x.narrow(0, 0, 2).copy_(&a) }`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// A call the macro cannot see into: tracked tensors passed to it are
    /// watched (`rt::watch`): they may come back mutated, or kept.
    pub(super) fn opaque_call(&mut self, e: &mut Expr) {
        let discarded = self.discarded.take() == Some(&*e as *const Expr);
        let name = call_name(e);
        let span = e.span();
        let (before, after) = self.opaque_parts(e, &name, span);
        *e = watched_block(before, e.clone(), after, discarded);
    }

    /// The statements that go before and after an opaque call `e` (named
    /// `call_name` in panics), its arguments lowered in place.
    pub(super) fn opaque_parts(
        &mut self,
        e: &mut Expr,
        call_name: &str,
        span: Span,
    ) -> (Vec<Stmt>, Vec<Stmt>) {
        let rt = rt();
        let (passed, elems) = self.opaque_passed(e);
        let mut passed = passed;
        // Views of collection elements cannot be written back: refused at
        // run time if the call mutates one.
        let elem_views: Vec<usize> = passed
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| self.elem_aliases.iter().any(|(a, _)| a == id))
            .collect();
        let passed_all = passed.clone();
        // Only aliases, and roots that have aliases, need anything done.
        passed.retain(|(id, _)| match self.scopes.kind(*id) {
            Kind::Alias { .. } => true,
            Kind::Root { .. } => {
                (self.facts.mutated.contains(id) && self.has_aliases(*id))
                    || (self.has_state(*id) && self.mutated_later(*id))
            }
            _ => false,
        });
        for (id, _) in &passed {
            if let Kind::Alias { .. } = self.scopes.kind(*id) {
                self.mark_mutated(*id);
            }
        }
        // A root with aliases that the call may mutate: track it, so that
        // its aliases are regenerated if it does.
        for (id, _) in passed_all.iter() {
            if matches!(self.scopes.kind(*id), Kind::Root { .. }) && self.has_aliases(*id) {
                self.mark_mutated(*id);
            }
        }
        for (id, _) in &elems {
            self.mark_mutated(*id);
        }
        // A `&mut Tensor` input passed on as is, or a root passed by `&mut`:
        // the call may replace its tensor, so it is tracked (see below).
        for (id, by_mut) in passed_all.iter() {
            let mut_input = matches!(
                self.scopes.kind(*id),
                Kind::Root {
                    input: Some(Passing::RefMut),
                    ..
                }
            );
            if (*by_mut || mut_input) && matches!(self.scopes.kind(*id), Kind::Root { .. }) {
                self.mark_mutated(*id);
            }
        }
        // `xs.swap(0, 1)` on a tracked collection: its elements may now sit
        // at other indices than their buffers' callers; detach them.
        let detach = if let Expr::MethodCall(m) = &*e
            && let Some(id) = self.binding_of(&m.receiver)
            && matches!(self.scopes.kind(id), Kind::Coll { .. })
            && self.facts.mutated.contains(&id)
            && !COLL_READS.contains(&crate::fast::text(&m.method).as_str())
        {
            let v = self.value(id);
            // (Appending leaves the caller's tensors where they are.)
            let appends = ["push", "extend", "extend_from_slice", "append"]
                .contains(&crate::fast::text(&m.method).as_str());
            if self.replaced.contains(&id) && !appends {
                let input = input_ident(id);
                let replaced = crate::scope::replaced_ident(id);
                let (coll, method) = (self.shown(id), crate::fast::text(&m.method));
                Some((
                    Some(pq!(#rt::check_reorder(&#input[..], &#v[..], #coll, #method);)),
                    pq!(#rt::reordered(&mut #v[..], &mut #replaced);),
                ))
            } else {
                Some((None, pq!(#rt::detach_all(&mut #v[..]);)))
            }
        } else {
            None
        };
        // `helper(xs)`, `swap(&mut xs, ..)` on a tracked collection input:
        // the call may replace its elements, as a reordering method may.
        let mut passed_colls = Vec::new();
        let call_args = match &*e {
            Expr::Call(c) => Some(&c.args),
            Expr::MethodCall(m) => Some(&m.args),
            _ => None,
        };
        for a in call_args.into_iter().flatten() {
            let Some(coll) = crate::elements::passed_mutably(a) else {
                continue;
            };
            let Some(id) = self.binding_of(coll).or_else(|| self.place_of(coll)) else {
                continue;
            };
            let Kind::Coll {
                input: Some((passing, _)),
            } = self.scopes.kind(id).clone()
            else {
                continue;
            };
            // (`xs` itself hands on a `&mut` collection; `&mut xs` any.)
            let by_mut = matches!(a, Expr::Reference(_)) || passing == Passing::RefMut;
            if !by_mut || passing == Passing::Ref || !self.is_tracked_input_coll(id) {
                continue;
            }
            if !self.replaced.contains(&id) {
                self.cx.internal(
                    a,
                    format!(
                        "`{}` is passed on mutably but was not seen at entry",
                        self.shown(id)
                    ),
                );
                continue;
            }
            let v = self.value(id);
            let input = input_ident(id);
            let replaced = crate::scope::replaced_ident(id);
            let coll = self.shown(id);
            let before = format_ident!(
                "__fz_slots_{}",
                passed_colls.len(),
                span = Span::mixed_site()
            );
            passed_colls.push((
                pq!(let #before = #rt::slots(&#v[..]);),
                pq!(#rt::replaced_by_call_all(
                    &#input[..], #before, &mut #v[..], &mut #replaced, #coll, #call_name
                );),
            ));
        }
        if stores_only(e) {
            let args = match &*e {
                Expr::Call(c) => &c.args,
                Expr::MethodCall(m) => &m.args,
                _ => unreachable!("stores_only is a call"),
            };
            for a in args.iter() {
                self.check_stored(a, true);
            }
        }
        let mut arg_before = Vec::new();
        let mut arg_after = Vec::new();
        self.visit_opaque_args(e, &mut arg_before, &mut arg_after, call_name, span);
        if let Some((check, detach)) = detach {
            arg_before.extend(check);
            arg_after.push(detach);
        }
        for (before, after) in passed_colls {
            arg_before.push(before);
            arg_after.push(after);
        }
        let replaceable = passed_all.iter().any(|(id, by_mut)| {
            (*by_mut
                || matches!(
                    self.scopes.kind(*id),
                    Kind::Root {
                        input: Some(Passing::RefMut),
                        ..
                    }
                ))
                && matches!(self.scopes.kind(*id), Kind::Root { .. })
                && self.has_state(*id)
        });
        if passed.is_empty()
            && elems.is_empty()
            && elem_views.is_empty()
            && !replaceable
            && arg_before.is_empty()
            && arg_after.is_empty()
        {
            return (Vec::new(), Vec::new());
        }
        let mut before = arg_before;
        let mut after = arg_after;
        let what = self.fn_name.clone();
        for (k, (id, index)) in elems.iter().enumerate() {
            let Kind::Multi { root } = self.scopes.kind(*id).clone() else {
                continue;
            };
            if !self.has_state(*id) {
                continue;
            }
            let (v, s) = (self.value(*id), self.state(*id));
            let i = format_ident!("__fz_elem_index_{}", k, span = Span::mixed_site());
            let ver = format_ident!("__fz_elem_version_{}", k, span = Span::mixed_site());
            before.push(pq!(let #i: usize = #index;));
            before.push(pq!(let #ver = #rt::version(&#v[#i]);));
            self.note_commit(Some(root), Some(*id));
            let (rv, rs) = self.root_value_state(root);
            after.push(pq!(if #rt::version(&#v[#i]) != #ver {
                let __fz_h = #rt::handle(&#v[#i]);
                #rt::commit(#what, &mut #rv, &mut #rs, &mut #v[#i], &mut #s[#i], __fz_h);
            }));
        }
        for (k, id) in elem_views.iter().enumerate() {
            let v = self.value(*id);
            let name = self.scopes.ident(*id).to_string();
            let ver = format_ident!("__fz_view_version_{}", k, span = Span::mixed_site());
            before.push(pq!(let #ver = #rt::version(&#v);));
            after.push(pq!(if #rt::version(&#v) != #ver {
                ::core::panic!(
                    "funcz: {}: a call mutated `{}`, a view of a collection element, which #[functionalize] \
                     cannot write back into the element; mutate the element itself, or pass a .clone()",
                    #what, #name
                );
            }));
        }
        for (k, (id, _by_mut)) in passed.iter().enumerate() {
            if !self.has_state(*id) {
                continue;
            }
            let v = self.value(*id);
            let ver = format_ident!("__fz_version_{}", k, span = Span::mixed_site());
            let name = self.scopes.ident(*id).to_string();
            let kept = self.kept_matters(*id);
            before.push(pq!(let #ver = #rt::watch(&#v);));
            let s = self.state(*id);
            let root = self.scopes.root_of(*id);
            self.note_commit(root, Some(*id));
            let commit: Stmt = match self.scopes.kind(*id).clone() {
                // A root re-laid-out by `t_()` & co. is a view of its hidden
                // base: commit into the base through its chain.
                Kind::Root { .. } if self.based(*id) => {
                    let (rv, rs) = self.root_value_state(*id);
                    pq!({
                        let __fz_h = #rt::handle(&#v);
                        #rt::commit(#what, &mut #rv, &mut #rs, &mut #v, &mut #s, __fz_h);
                    })
                }
                Kind::Alias { root } => {
                    let (rv, rs) = self.root_value_state(root);
                    pq!({
                        let __fz_h = #rt::handle(&#v);
                        #rt::commit(#what, &mut #rv, &mut #rs, &mut #v, &mut #s, __fz_h);
                    })
                }
                _ => pq!(#s.bump();),
            };
            let watched = quote_spanned!(span=> #rt::watched(#call_name, #name, &#v, #ver, #kept));
            after.push(pq!(if #watched { #commit }));
        }
        // A root the call receives by `&mut` (or a `&mut Tensor` input
        // passed on as is) may have its tensor replaced (`mem::swap`).
        for (k, (id, by_mut)) in passed_all.iter().enumerate() {
            let mut_input = matches!(
                self.scopes.kind(*id),
                Kind::Root {
                    input: Some(Passing::RefMut),
                    ..
                }
            );
            if !(*by_mut || mut_input)
                || !matches!(self.scopes.kind(*id), Kind::Root { .. })
                || !self.has_state(*id)
                || self.based(*id)
            {
                continue;
            }
            let v = self.value(*id);
            let s = self.state(*id);
            let name = self.scopes.ident(*id).to_string();
            let views = self.has_aliases(*id);
            let idt = format_ident!("__fz_identity_{}", k, span = Span::mixed_site());
            before.push(pq!(let #idt = #rt::identity(&#v);));
            after.push(pq!(if #rt::identity(&#v) != #idt { #rt::rebind(#name, &mut #v, &mut #s, #views); }));
        }
        (before, after)
    }

    /// Lowers the parts of an opaque call. A `&x.view(..)` argument is
    /// bound to a temporary (a `*_copy` in copies mode, the view in views
    /// mode); if the callee mutates it, the mutation is written back as
    /// `x.view(..).copy_(&tmp)`, lowered like any in-place op (so the
    /// original's values are kept and `x`'s other aliases see it).
    ///
    /// Input: `helper(&d.narrow(0, 0, 2))`
    /// Output (copies mode): `let __fz_arg_0 = narrow_copy(d); let v =
    /// version(&__fz_arg_0); helper(&__fz_arg_0); if version changed {
    /// <lowered d.narrow(0, 0, 2).copy_(&__fz_arg_0)> }`
    pub(super) fn visit_opaque_args(
        &mut self,
        e: &mut Expr,
        before: &mut Vec<Stmt>,
        after: &mut Vec<Stmt>,
        call_name: &str,
        span: Span,
    ) {
        // A view handed to the call: `(view, by &mut, by value)`.
        let view_arg = |a: &Expr| -> Option<(Expr, bool, bool)> {
            match a {
                Expr::Reference(r) if is_view_call(&r.expr) => {
                    Some(((*r.expr).clone(), r.mutability.is_some(), false))
                }
                _ if is_view_call(a) => Some((a.clone(), false, true)),
                _ => None,
            }
        };
        let stores = stores_only(e);
        let args = match e {
            Expr::Call(c) => {
                self.visit_expr_mut(&mut c.func);
                &mut c.args
            }
            Expr::MethodCall(m) => {
                // A method the macro does not know, on a view: a mutation
                // through it is written back like one through a `&view`
                // argument (in copies mode the view is a `*_copy`; in views
                // mode the write-back records the update, so the root's
                // other aliases are regenerated).
                let recv = (*m.receiver).clone();
                if is_view_call(&recv) && self.is_tensor_expr(&recv) {
                    let rt = rt();
                    let t = format_ident!("__fz_recv", span = Span::mixed_site());
                    let ver = format_ident!("__fz_recv_version", span = Span::mixed_site());
                    let name = view_name(&recv);
                    let mut value = recv.clone();
                    self.visit_expr_mut(&mut value);
                    before.push(pq!(let #t = #value;));
                    before.push(pq!(let #ver = #rt::watch(&#t);));
                    let write: Expr = syn::parse_quote!((#recv).copy_(&#t));
                    let lowered = self.try_inplace(&write, Want::Nothing);
                    let kept = self.view_kept_matters(&recv);
                    if let Some(lowered) = lowered {
                        let watched = quote_spanned!(span=> #rt::watched(#call_name, #name, &#t, #ver, #kept));
                        after.push(pq!(if #watched { #lowered; }));
                    }
                    *m.receiver = pq!(#t);
                } else if let Some((b, coll)) = self.loop_elem_arg(&recv) {
                    // `t.reset()` of `for t in xs.iter_mut()`: a method the
                    // macro does not know may replace `*self` (see the
                    // argument `t` below).
                    let rt = rt();
                    let t = self.scopes.ident(b).clone();
                    let base = super::loops::elem_base_ident(b);
                    let (k, h) = recv_slot_names();
                    before.push(pq!(let #k: usize = #rt::element_index(#base, &*#t);));
                    self.slot_watch(coll, (&k, &h), pq!((*#t)), before, after);
                    self.loop_bases_used.insert(b);
                } else if let Some((coll, mut index)) = self.slot_of(&recv) {
                    // `xs[i].reset()`: likewise, for the slot `i` names.
                    let (k, h) = recv_slot_names();
                    self.visit_expr_mut(&mut index);
                    before.push(pq!(let #k: usize = #index;));
                    let v = self.value(coll);
                    self.slot_watch(coll, (&k, &h), pq!(#v[#k]), before, after);
                    *m.receiver = pq!(#v[#k]);
                } else {
                    self.visit_expr_mut(&mut m.receiver);
                }
                &mut m.args
            }
            _ => return visit_mut::visit_expr_mut(self, e),
        };
        let mut args_taken = std::mem::take(args);
        for (k, a) in args_taken.iter_mut().enumerate() {
            match view_arg(a) {
                // In views mode too: the argument is then a real view, and
                // the write-back commits the call's write through the
                // regular path, so the root's other aliases are
                // regenerated; and where the view op copied (a `reshape`
                // of a value the functional ops laid out differently
                // from the original's), the write reaches the root.
                Some((view, by_mut, by_value))
                    if self.is_tensor_expr(&view) && !(by_value && stores) =>
                {
                    let rt = rt();
                    let t = format_ident!("__fz_arg_{}", k, span = Span::mixed_site());
                    let ver = format_ident!("__fz_arg_version_{}", k, span = Span::mixed_site());
                    let name = view_name(&view);
                    let mut value = view.clone();
                    self.visit_expr_mut(&mut value);
                    before.push(pq!(let mut #t = #value;));
                    before.push(pq!(let #ver = #rt::watch(&#t);));
                    let write: Expr = syn::parse_quote!((#view).copy_(&#t));
                    let lowered = self.try_inplace(&write, Want::Nothing);
                    // After the write-back's own mutation is counted.
                    let kept = self.view_kept_matters(&view);
                    if let Some(lowered) = lowered {
                        let watched = quote_spanned!(span=> #rt::watched(#call_name, #name, &#t, #ver, #kept));
                        after.push(pq!(if #watched { #lowered; }));
                    }
                    *a = if by_value {
                        pq!(#rt::handle(&#t))
                    } else if by_mut {
                        pq!(&mut #t)
                    } else {
                        pq!(&#t)
                    };
                }
                // `&mut xs[i]` of a collection input: the call may replace
                // the element (`*t = ..`); if it did, the slot is handed the
                // new tensor at the exit (`rt::replaced_by_call`).
                _ if self.slot_arg(a).is_some() => {
                    let (id, mut index) = self.slot_arg(a).expect("checked");
                    let (k_id, h) = (
                        format_ident!("__fz_slot_arg_{}", k, span = Span::mixed_site()),
                        format_ident!("__fz_slot_before_{}", k, span = Span::mixed_site()),
                    );
                    self.visit_expr_mut(&mut index);
                    let v = self.value(id);
                    before.push(pq!(let #k_id: usize = #index;));
                    self.slot_watch(id, (&k_id, &h), pq!(#v[#k_id]), before, after);
                    *a = pq!(&mut #v[#k_id]);
                }
                // `t` of `for t in xs.iter_mut()` (or `&mut *t`, `&mut t`)
                // of a collection input: the call may replace the element
                // (`*t = ..`); if it did, the slot its address names is
                // handed the new tensor at the exit, as for `&mut xs[i]`.
                _ if self.loop_elem_arg(a).is_some() => {
                    let (b, coll) = self.loop_elem_arg(a).expect("checked");
                    let rt = rt();
                    let (k_id, h) = (
                        format_ident!("__fz_slot_arg_{}", k, span = Span::mixed_site()),
                        format_ident!("__fz_slot_before_{}", k, span = Span::mixed_site()),
                    );
                    let t = self.scopes.ident(b).clone();
                    let base = super::loops::elem_base_ident(b);
                    before.push(pq!(let #k_id: usize = #rt::element_index(#base, &*#t);));
                    self.slot_watch(coll, (&k_id, &h), pq!((*#t)), before, after);
                    self.loop_bases_used.insert(b);
                    // (Reborrowed: the watch reads `t` after the call.)
                    if matches!(a, Expr::Path(_)) {
                        *a = pq!(&mut *#t);
                    }
                }
                // A tracked tensor moved into the call: the call gets
                // another handle of it, so the function keeps its own for
                // the write-back and the watch (`opaque_call`).
                _ if !stores && self.moved_tensor(a).is_some_and(|id| self.has_state(id)) => {
                    let rt = rt();
                    self.visit_expr_mut(a);
                    *a = pq!(#rt::handle(&#a));
                }
                _ => self.visit_expr_mut(a),
            }
        }
        match e {
            Expr::Call(c) => c.args = args_taken,
            Expr::MethodCall(m) => m.args = args_taken,
            _ => {}
        }
    }
}

impl Lowerer<'_> {
    /// A loop variable over a tracked collection input's elements, given
    /// to a call so that it may replace the element: `t`, `&mut *t` or
    /// `&mut t` (the binding and its collection).
    fn loop_elem_arg(&self, a: &Expr) -> Option<(usize, usize)> {
        let path = match a {
            Expr::Path(_) => a,
            Expr::Reference(r) if r.mutability.is_some() => match &*r.expr {
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => &*u.expr,
                e => e,
            },
            _ => return None,
        };
        let Expr::Path(p) = path else { return None };
        if p.qself.is_some() || p.path.segments.len() != 1 {
            return None;
        }
        let b = self.binding_of(path)?;
        let Kind::ElemRef { coll } = self.scopes.kind(b) else {
            return None;
        };
        (self.loop_elems.contains(&b) && self.is_input_coll(*coll) && self.replaced.contains(coll))
            .then_some((b, *coll))
    }

    /// `&mut xs[i]` of a collection input whose slots may be replaced:
    /// (the collection, the index expression).
    fn slot_arg(&self, a: &Expr) -> Option<(usize, Expr)> {
        let Expr::Reference(r) = a else { return None };
        r.mutability.is_some().then(|| self.slot_of(&r.expr))?
    }

    /// `xs[i]` of a collection input whose slots are tracked: the
    /// collection and the index.
    pub(super) fn slot_of(&self, e: &Expr) -> Option<(usize, Expr)> {
        let Expr::Index(ix) = e else {
            return None;
        };
        let id = self.binding_of(&ix.expr)?;
        (self.is_input_coll(id) && self.replaced.contains(&id)).then(|| (id, (*ix.index).clone()))
    }

    /// Around a call that may replace the element `elem` in slot `k` of
    /// the collection input `coll`: its handle before, and after, the
    /// slot retired if the element is another (`rt::replaced_by_call`).
    /// (`h` names the handle.)
    fn slot_watch(
        &self,
        coll: usize,
        (k, h): (&Ident, &Ident),
        elem: Expr,
        before: &mut Vec<Stmt>,
        after: &mut Vec<Stmt>,
    ) {
        let rt = rt();
        let (input, replaced) = (input_ident(coll), crate::scope::replaced_ident(coll));
        before.push(pq!(let #h = #rt::handle(&#elem);));
        after.push(pq!(#rt::replaced_by_call(#input.get(#k), #h, &#elem, &mut #replaced, #k);));
    }

    /// Whether a handle an opaque call keeps on `id`'s storage must panic
    /// (`rt::watched`): its root is written later, and a functional update
    /// would leave the handle behind.
    fn kept_matters(&self, id: usize) -> bool {
        self.mutated_later(self.scopes.root_of(id).unwrap_or(id))
    }

    /// [`Self::kept_matters`] for a view expression handed to a call.
    fn view_kept_matters(&self, view: &Expr) -> bool {
        self.view_chain_root(view)
            .is_some_and(|r| self.mutated_later(r))
    }
}

/// `call` between the statements that watch it: `{ before; let r = call;
/// after; r }`, or `call` itself when there are none. A `discarded` result
/// is dropped before the watch (`let _ = call;`): a handle in an unused
/// result is not kept.
pub(super) fn watched_block(
    before: Vec<Stmt>,
    call: Expr,
    after: Vec<Stmt>,
    discarded: bool,
) -> Expr {
    if before.is_empty() && after.is_empty() {
        call
    } else if discarded {
        pq!({ #(#before)* let _ = #call; #(#after)* })
    } else {
        let r = tmp("__fz_call");
        pq!({ #(#before)* let #r = #call; #(#after)* #r })
    }
}

/// How a panic names an opaque call: `helper(..)`, `.method(..)`,
/// `name!(..)`.
pub(super) fn call_name(e: &Expr) -> String {
    match e {
        Expr::Call(c) => format!("{}(..)", c.func.to_token_stream()).replace(' ', ""),
        Expr::MethodCall(m) => format!(".{}(..)", m.method),
        Expr::Macro(m) => format!("{}!(..)", m.mac.path.to_token_stream()).replace(' ', ""),
        _ => "a call".to_string(),
    }
}

/// How a panic names a view handed to a call: `b.narrow(..)`.
fn view_name(view: &Expr) -> String {
    let mut cur = view;
    let mut methods = Vec::new();
    while let Expr::MethodCall(m) = cur {
        methods.push(crate::fast::text(&m.method));
        cur = &m.receiver;
    }
    let mut out = cur.to_token_stream().to_string().replace(' ', "");
    for m in methods.iter().rev() {
        out.push_str(&format!(".{m}(..)"));
    }
    out
}

/// The names of the slot and the handle a call on an element watches
/// (`xs[i].reset()`, `t.reset()`; one receiver per call).
fn recv_slot_names() -> (Ident, Ident) {
    (
        format_ident!("__fz_slot_recv", span = Span::mixed_site()),
        format_ident!("__fz_slot_recv_before", span = Span::mixed_site()),
    )
}
