//! In-place ops: the functional twin of the op applied to the mutated
//! view, and the commit that scatters it back into its root (in place when
//! the root is uniquely held); metadata ops (`t_`, `transpose_`) grow a
//! view chain; `resize_`.
//!
//! Input: `x.narrow(0, 0, 2).mul_(2.0);`
//! Output: `let (v, s) = rt::view(&x, ..narrow..); let new = v.mul(2.0); rt::commit("mul_", &mut x, .., new, mode);`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// Lowers `e` if it is an in-place op call; `None` otherwise.
    pub(super) fn try_inplace(&mut self, e: &Expr, want: Want) -> Option<Expr> {
        let m = match e {
            Expr::MethodCall(m) => m,
            Expr::Paren(p) => return self.try_inplace(&p.expr, want),
            _ => return None,
        };
        let name = crate::fast::text(&m.method);
        let info = optable::lookup(&name)?;
        match info.kind {
            OpKind::Inplace { functional } => Some(self.lower_inplace(m, functional, want)),
            OpKind::InplaceView { view } => Some(self.lower_meta(m, view, want)),
            OpKind::Resize => Some(self.lower_resize(m)),
            _ => None,
        }
    }

    pub(super) fn refuse_in_closure(&self, m: &syn::ExprMethodCall, root: Option<usize>) -> bool {
        if self.closure_floor.is_empty() {
            return false;
        }
        let captured = root.is_none_or(|r| self.captured(r));
        if captured {
            crate::diag::inplace_in_closure(self, m);
        }
        captured
    }

    pub(super) fn lower_inplace(
        &mut self,
        m: &syn::ExprMethodCall,
        functional: &str,
        want: Want,
    ) -> Expr {
        let rt = rt();
        let op = crate::fast::text(&m.method);
        let fname = Ident::new(functional, m.method.span());
        let paren = m.paren_token.span.join();
        let root = self.receiver_root(&m.receiver);
        if self.refuse_in_closure(m, root) {
            return Expr::MethodCall(m.clone());
        }
        let class = self.classify_receiver(&m.receiver);
        // The receiver first, as Rust evaluates it: in `v.mul_(2.0).add_(&w)`
        // the inner `mul_` runs before `&w` is read.
        let target = self.target(&m.receiver);
        let mut args = m.args.clone();
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        match target {
            None => {
                if self.classify_receiver(&m.receiver) == Receiver::Made {
                    // A fresh temporary (`(&a + 1.0).relu_()`): nothing else
                    // can see it, so the functional op is the whole story.
                    // At run time, check that it is one: a view of a
                    // tensor the macro does not track would lose the write.
                    let text = m.receiver.to_token_stream().to_string();
                    let mut recv = (*m.receiver).clone();
                    while let Expr::Paren(p) = recv {
                        recv = *p.expr;
                    }
                    self.visit_expr_mut(&mut recv);
                    let t = tmp("__fz_temp");
                    let ca = parens(paren, &args);
                    // (Its shape kept, as the in-place op's would be: see
                    // `rt::kept`.)
                    let new = quote!(#t.#fname #ca);
                    let kept = rt_call(m.method.span(), "kept", quote!(#op, &#t, #new));
                    return pq!({
                        let #t = #recv;
                        #rt::check_temp(#op, #text, &#t);
                        #kept
                    });
                }
                crate::diag::inplace_on_untracked(self, &m.receiver, &op);
                Expr::MethodCall(m.clone())
            }
            Some(Target::Refused) => Expr::MethodCall(m.clone()),
            Some(Target::Place {
                prelude,
                place,
                steps,
            }) => {
                let (target_id, alias) = match &place {
                    Place::Var(id) => (*id, Some(*id)),
                    Place::Index(id, _) => (*id, None),
                };
                if class != Receiver::Place(target_id) && self.strict {
                    self.cx.internal(
                        &m.receiver,
                        format!("the receiver is classified {class:?}, code generation writes binding {target_id}"),
                    );
                }
                self.mark_mutated(target_id);
                let commit_root = self.scopes.root_of(target_id);
                let fresh = if steps.is_empty() { alias } else { None };
                let direct_root = steps.is_empty() && self.commit_root_of(&place).is_none();
                if direct_root {
                    self.note_commit(commit_root, fresh);
                    return self.commit_direct(prelude, &place, &fname, &args, paren, &op, want);
                }
                let chained = !prelude.is_empty();
                let prelude_len = prelude.len();
                let (mut stmts, pv, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                // Arguments that may change the receiver's root (a helper
                // given it, or another handle of it) are evaluated first:
                // the place is made current and the views made after them,
                // as the original's views see the change.
                let (hoisted, check) =
                    self.hoist_args(&mut args, &mut stmts, prelude_len, &place, &steps, &pv, &ps);
                let ca = parens(paren, &args);
                if chained && steps_may_copy(&steps) {
                    // Each op of a chain re-makes the views from the place: a
                    // copy `reshape` made would be made afresh (refused).
                    stmts.push(pq!(#rt::check_chain_copy(#op, &#ps, &#s);));
                }
                // An alias commits into its root; views of a root place
                // commit into the place itself.
                let new = tmp("__fz_new");
                // The one call of a one-call form, when it is the last
                // statement (see `single_call`).
                let mut one: Option<Toks> = None;
                // Views made in this statement: the runtime also handles the
                // copies `reshape` & co. make (in the place, or in between).
                match self.commit_root_of(&place) {
                    Some((rv, rs))
                        if !steps.is_empty()
                            && (steps_may_copy(&steps) || !self.place_is_root(&place)) =>
                    {
                        let current = check.stmt(&op, (&rv, &rs), (&v, &s));
                        stmts.push(functional_twin(
                            &new, &v, &fname, &args, paren, &op, current,
                        ));
                        let place = quote!(Some((&mut #pv, &mut #ps)));
                        let args = quote!(#op, &mut #rv, &mut #rs, #place, &mut #v, &mut #s, #new);
                        let call = rt_call(m.method.span(), "commit_from", args);
                        stmts.push(pq!(#call;))
                    }
                    None if steps_may_copy(&steps) => {
                        let refresh = check.stmt(&op, (&pv, &ps), (&v, &s));
                        stmts.push(functional_twin(
                            &new, &v, &fname, &args, paren, &op, refresh,
                        ));
                        let args = quote!(#op, &mut #pv, &mut #ps, None, &mut #v, &mut #s, #new);
                        let call = rt_call(m.method.span(), "commit_from", args);
                        stmts.push(pq!(#call;))
                    }
                    None if matches!(want, Want::Nothing)
                        && hoisted.is_none()
                        && window_step(&steps)
                        && !mentions_any(args.to_token_stream(), &[&pv, &ps]) =>
                    {
                        // `root.narrow(..).copy_(x);`: the view is a
                        // temporary, so the runtime needs no state for it
                        // and writes straight into a uniquely held root
                        // (see `rt::window`); the user's call runs on it.
                        let Step::View(vm, vargs) = &steps[0] else {
                            unreachable!("a multi-output step is not a statement's only step")
                        };
                        stmts.pop(); // the view `emit_steps_from` made: `rt::window` makes it
                        let method = &m.method;
                        let meta = view_meta(&rt, vm, vargs);
                        if one_call(&op) && args.iter().all(effect_free) {
                            // One call, the window made inside it
                            // (`rt::views::on_window_var::add_`): the
                            // arguments, evaluated before it, have no
                            // effects the window's making could be ordered
                            // against (literals, variables).
                            let (form, target) = match var_pair(&pv, &ps) {
                                Some(x) => ("on_window_var", quote!(&mut #x)),
                                None => ("on_window", quote!(&mut #pv, &mut #ps)),
                            };
                            let call = rt_op(form, method, paren, quote!(#target, #meta, #args));
                            stmts.push(pq!(#call;));
                            one = Some(call);
                        } else if one_call(&op) {
                            // One call and the op (`rt::InPlaceWindow`).
                            let window = match var_pair(&pv, &ps) {
                                Some(x) => {
                                    rt_call(vm.span(), "inplace_window_var", quote!(&mut #x, #meta))
                                }
                                None => rt_call(
                                    vm.span(),
                                    "inplace_window",
                                    quote!(&mut #pv, &mut #ps, #meta),
                                ),
                            };
                            stmts.push(pq!(#window.#method #ca;));
                        } else {
                            let w = tmp("__fz_window");
                            let window = match var_pair(&pv, &ps) {
                                Some(x) => rt_call(vm.span(), "window_var", quote!(&mut #x, #meta)),
                                None => {
                                    rt_call(vm.span(), "window", quote!(&mut #pv, &mut #ps, #meta))
                                }
                            };
                            stmts.push(pq!(let mut #w = #window;));
                            stmts.push(pq!(#w.#method #ca;));
                            stmts.push(match var_pair(&pv, &ps) {
                                Some(x) => pq!(
                                    #rt::window_var_done(#op, &mut #x, &mut #w);
                                ),
                                None => pq!(
                                    #rt::window_done(#op, &mut #pv, &mut #ps, &mut #w);
                                ),
                            });
                        }
                    }
                    other => {
                        // A view of the root: the in-place kernel may run on
                        // the view when nobody else can observe it.
                        let (rv, rs) = other.unwrap_or((pv, ps));
                        let method = &m.method;
                        if !mentions_any(args.to_token_stream(), &[&rv, &rs, &v, &s]) {
                            // The view made private if it is shared, then the
                            // user's own call (see `rt::own_alias`).
                            match (var_pair(&rv, &rs), var_pair(&v, &s)) {
                                (Some(x), Some(a)) if one_call(&op) && hoisted.is_none() => {
                                    // One call and the op (`rt::InPlace`):
                                    // the arguments name neither (nor are
                                    // they hoisted values, which may borrow
                                    // the root).
                                    let target = quote!(&mut #x, &mut #a, #args);
                                    let call = rt_op("on_alias", method, paren, target);
                                    stmts.push(pq!(#call;));
                                    one = Some(call);
                                }
                                (Some(x), Some(a)) => {
                                    stmts.push(pq!(#rt::own_alias_vars(&#x, &mut #a);));
                                    stmts.push(pq!(#v.#method #ca;));
                                    stmts.push(pq!(
                                        #rt::commit_vars(#op, &mut #x, &mut #a);
                                    ));
                                }
                                (Some(x), None) => {
                                    stmts.push(pq!(#rt::own_alias_var(&#x, &mut #v, &#s);));
                                    stmts.push(pq!(#v.#method #ca;));
                                    stmts.push(pq!(
                                        #rt::commit_var(#op, &mut #x, &mut #v, &mut #s);
                                    ));
                                }
                                (None, _) => {
                                    stmts.push(pq!(#rt::own_alias(&#rv, &#rs, &mut #v, &#s);));
                                    stmts.push(pq!(#v.#method #ca;));
                                    stmts.push(pq!(
                                        #rt::commit_donated(#op, &mut #rv, &mut #rs, &mut #v, &mut #s);
                                    ));
                                }
                            }
                        } else {
                            // Arguments that may change the root (a helper
                            // given it) run before the op: the view is
                            // made current again after them.
                            let before = check.stmt(&op, (&rv, &rs), (&v, &s));
                            stmts.push(donating_update(
                            &args,
                            paren,
                            &op,
                            &v,
                            before,
                            pq!(#rt::can_donate_alias(&#rv, &#rs, &#v, &#s)),
                            |a| {
                                pq!(
                                    #v.#method #a;
                                    #rt::commit_donated(#op, &mut #rv, &mut #rs, &mut #v, &mut #s);
                                )
                            },
                            |a| {
                                let args = quote!(#op, &mut #rv, &mut #rs, &mut #v, &mut #s, #new);
                                let commit = rt_call(m.method.span(), "commit", args);
                                pq!(
                                    let #new = #v.#fname #a;
                                    #commit;
                                )
                            },
                        ));
                        }
                    }
                }
                self.note_commit(commit_root, fresh);
                let tail: Option<Expr> = match want {
                    Want::Nothing => None,
                    Want::Value => Some(pq!(#rt::handle(&#v))),
                    Want::Bound => Some(pq!((#rt::handle(&#v), #s.clone()))),
                };
                match hoisted {
                    Some((outer, values, names)) => pq!({
                        #(#outer)*
                        match (#(#values,)*) {
                            (#(#names,)*) => { #(#stmts)* #tail }
                        }
                    }),
                    None if tail.is_none() => single_call(stmts, one),
                    None => pq!({ #(#stmts)* #tail }),
                }
            }
        }
    }

    /// Arguments that may change the receiver's root (a helper given it,
    /// `v.add_(f(&x))` with `v` a view of `x`) run after the views are
    /// made (the original's views would see the change). If they do not
    /// name the place itself, they are evaluated first: returns the
    /// statements to run before them (the receiver's own in-place ops,
    /// `prelude_len` of `stmts`), their values and the names they are
    /// bound to (now `args`); `stmts` keeps the rest, with the place made
    /// current first. If they name it too (a borrow of it may be alive), the
    /// second result asks for a run-time check that the receiver is still
    /// current after them (a clear panic, never a stale value).
    ///
    /// Input: `v.narrow(0, 0, 1).add_(f(&x));`
    /// Output: `match (f(&x),) { (a,) => { rt::sync(&mut v, ..); let (w, s) = rt::view(&v, ..); .. w.add_(a); .. } }`
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn hoist_args(
        &self,
        args: &mut Args,
        stmts: &mut Vec<Stmt>,
        prelude_len: usize,
        place: &Place,
        steps: &[Step],
        pv: &Access,
        ps: &Access,
    ) -> (Option<(Vec<Stmt>, Vec<Expr>, Vec<Ident>)>, Check) {
        let root = self.commit_root_of(place);
        let tokens = args.to_token_stream();
        let names_place = mentions_any(tokens.clone(), &[pv, ps]);
        let names_root = root
            .as_ref()
            .is_some_and(|(rv, rs)| mentions_any(tokens, &[rv, rs]));
        let hoist = match &root {
            Some(_) => names_root && !names_place,
            None => names_place && !steps.is_empty(),
        };
        if hoist && steps_may_copy(steps) {
            // Past a step that may copy (`flatten` of a non-contiguous
            // view), the chain is made first, as the original makes it (a
            // copy does not see what the arguments change), and made again
            // after them if it is a view (`rt::refresh_chain`).
            return (None, Check::Refresh);
        }
        if !hoist {
            return (
                None,
                if names_root && names_place {
                    Check::Current
                } else {
                    Check::None
                },
            );
        }
        let names = arg_names(args.len());
        let values: Vec<Expr> = std::mem::take(args).into_iter().collect();
        *args = names.iter().map(|n| -> Expr { pq!(#n) }).collect();
        let outer: Vec<Stmt> = stmts.drain(..prelude_len).collect();
        if root.is_some()
            && let Place::Var(id) | Place::Index(id, _) = place
            && let Some(sync) = self.sync_stmt(*id)
        {
            stmts.insert(0, sync);
        }
        (Some((outer, values, names)), Check::None)
    }

    /// In-place op directly on a root place: a functional update.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn commit_direct(
        &mut self,
        prelude: Vec<Stmt>,
        place: &Place,
        f: &Ident,
        args: &Args,
        paren: Span,
        op: &str,
        want: Want,
    ) -> Expr {
        let rt = rt();
        let mut stmts = prelude;
        // The one call of a one-call form (see `single_call`).
        let mut one: Option<Toks> = None;
        let index_tmp = tmp("__fz_index");
        let (value, state): (Access, Option<Access>) = match place {
            Place::Var(id) => {
                let v = self.value(*id);
                match self.scopes.kind(*id) {
                    Kind::ElemRef { .. } => (Access::Tokens(quote!((*#v))), None),
                    _ if self.has_state(*id) => (v, Some(self.state(*id))),
                    _ => (v, None),
                }
            }
            Place::Index(id, index) => {
                let v = self.value(*id);
                stmts.push(pq!(let #index_tmp: usize = #index;));
                (Access::Tokens(quote!(#v[#index_tmp])), None)
            }
        };
        let inplace = Ident::new(op, f.span());
        let input_elem = matches!(place, Place::Index(id, _) if self.is_input_coll(*id));
        let arg_tokens = args.to_token_stream();
        let names_value = mentions_any(arg_tokens.clone(), &[&value]);
        let names_state = state
            .as_ref()
            .is_some_and(|s| mentions_any(arg_tokens, &[s]));
        let var = state.as_ref().and_then(|s| var_pair(&value, s));
        if !names_value && !names_state && one_call(op) && (state.is_some() || !input_elem) {
            // One call (`rt::on_var::add_`, see `rt_op`) makes the value
            // private if it is shared (see `rt::own_root`), runs the user's
            // call's kernel and commits it: the arguments, evaluated while
            // it is borrowed, do not name it.
            let (form, target) = match (&state, &var) {
                (Some(_), Some(x)) => ("on_var", quote!(&mut #x)),
                (Some(s), None) => ("on_root", quote!(&mut #value, &mut #s)),
                (None, _) => ("on_value", quote!(&mut #value)),
            };
            let call = rt_op(form, &inplace, paren, quote!(#target, #args));
            stmts.push(pq!(#call;));
            one = Some(call);
        } else if !names_value {
            // The value made private if it is shared, then the user's own
            // call (see `rt::own_root`); its commit names the functional op.
            let ca = parens(paren, args);
            stmts.push(match (place, &state) {
                (_, Some(_)) if var.is_some() => {
                    let x = var.as_ref().expect("checked");
                    pq!(#rt::own_var(&mut #x);)
                }
                (_, Some(s)) => pq!(#rt::own_root(&mut #value, &#s);),
                (Place::Index(id, _), None) if self.is_input_coll(*id) => {
                    let caller = input_ident(*id);
                    let coll = self.shown(*id);
                    pq!(#rt::own_element(&mut #value, #caller.get(#index_tmp), #op, #coll);)
                }
                _ => pq!(#rt::own(&mut #value);),
            });
            stmts.push(pq!(#value.#inplace #ca;));
            stmts.push(match (&state, &var) {
                (Some(_), Some(x)) => pq!(#rt::donated_var(#op, &mut #x);),
                (Some(s), None) => pq!(#rt::donated_root(#op, &mut #value, &mut #s);),
                (None, _) => pq!(#rt::donated(&mut #value);),
            });
        } else {
            // The test: an input's buffer may be updated in place while the
            // caller's tensor is its only other handle (see
            // `rt::Tracked::input`).
            let test: Stmt = match (place, &state) {
                (_, Some(s)) => pq!(#rt::can_donate_root(&#value, &#s)),
                (Place::Index(id, _), None) if self.is_input_coll(*id) => {
                    let caller = input_ident(*id);
                    let coll = self.shown(*id);
                    pq!(#rt::can_update_element(&#value, #caller.get(#index_tmp), #op, #coll))
                }
                _ => pq!(#rt::can_donate(&#value)),
            };
            let new = tmp("__fz_new");
            stmts.push(donating_update(
                args,
                paren,
                op,
                &value,
                None,
                test,
                |a| match &state {
                    Some(s) => pq!(
                        #value.#inplace #a;
                        #rt::donated_root(#op, &mut #value, &mut #s);
                    ),
                    None => pq!(
                        #value.#inplace #a;
                        #rt::donated(&mut #value);
                    ),
                },
                // (A commit refuses a result of another shape than the
                // value's, as the in-place op would: see `rt::kept`.)
                |a| match &state {
                    Some(s) => {
                        let args = quote!(#op, &mut #value, &mut #s, #new);
                        let commit = rt_call(f.span(), "commit_root", args);
                        pq!(
                            let #new = #value.#f #a;
                            #commit;
                        )
                    }
                    None => {
                        let kept = rt_call(f.span(), "kept", quote!(#op, &#value, #new));
                        pq!(
                            let #new = #value.#f #a;
                            #value = #kept;
                        )
                    }
                },
            ));
        }
        let tail: Expr = match (want, &state) {
            (Want::Nothing, _) => return single_call(stmts, one),
            (Want::Value, _) => pq!(#rt::handle(&#value)),
            (Want::Bound, Some(s)) => pq!((#rt::handle(&#value), #s.clone())),
            (Want::Bound, None) => {
                pq!((#rt::handle(&#value), #rt::Tracked::root(&#value)))
            }
        };
        pq!({ #(#stmts)* #tail })
    }

    pub(super) fn lower_meta(&mut self, m: &syn::ExprMethodCall, view: &str, want: Want) -> Expr {
        let rt = rt();
        let meta = Ident::new(view, m.method.span());
        let mut args = m.args.clone();
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        let Some(id) = self.binding_of(&m.receiver) else {
            // On a temporary (`grad.abs().add_(eps).unsqueeze_(0)`, torch's
            // Adamax): the new layout is seen only through the result, so
            // the result is the view (its `*_copy` in copies mode) of the
            // temporary; no tensor of the function changes.
            if !matches!(want, Want::Bound) {
                let mut recv = (*m.receiver).clone();
                self.visit_expr_mut(&mut recv);
                let meta = view_meta(&rt, &meta, &args);
                let call = rt_call(m.method.span(), "view_value", quote!(&#recv, #meta));
                return pq!(#call);
            }
            let mut e = Expr::MethodCall(m.clone());
            visit_mut::visit_expr_mut(self, &mut e);
            return e;
        };
        let v = self.value(id);
        let s = self.state(id);
        let at = m.method.span();
        let meta = view_meta(&rt, &meta, &args);
        let value = rt_call(at, "view_value", quote!(&#v, #meta));
        // `let w = v.t_();` binds an alias of `v`'s root: value and state.
        let tail: TokenStream = match want {
            Want::Nothing => TokenStream::new(),
            Want::Value => quote!(#rt::handle(&#v)),
            Want::Bound if self.has_state(id) => quote!((#rt::handle(&#v), #s.clone())),
            Want::Bound => quote!((#rt::handle(&#v), #rt::Tracked::root(&#v))),
        };
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } if !self.based(id) => {
                self.found.meta.insert(id);
                pq!({ #v = #value; #tail })
            }
            Kind::Root { .. } | Kind::Alias { .. } if self.has_state(id) => {
                if let Kind::Root { .. } = self.scopes.kind(id) {
                    self.found.meta.insert(id);
                }
                self.need_sync(id);
                let call = rt_call(at, "meta_inplace", quote!(&mut #v, &mut #s, #meta));
                pq!({ #call; #tail })
            }
            Kind::Alias { .. } => {
                pq!({ #v = #value; #tail })
            }
            _ => {
                let mut e = Expr::MethodCall(m.clone());
                visit_mut::visit_expr_mut(self, &mut e);
                e
            }
        }
    }

    pub(super) fn lower_resize(&mut self, m: &syn::ExprMethodCall) -> Expr {
        let rt = rt();
        let mut args = m.args.clone();
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        match self
            .binding_of(&m.receiver)
            .map(|id| (id, self.scopes.kind(id).clone()))
        {
            Some((id, Kind::Root { .. })) => {
                self.mark_mutated(id);
                let viewed = self.scopes.bindings.iter().any(
                    |b| matches!(b.kind, Kind::Alias { root } | Kind::Multi { root } if root == id),
                );
                if viewed {
                    // The views keep addressing the storage as laid out
                    // before; replaying them on the new layout would not.
                    crate::diag::resize_with_views(self, m, id);
                }
                // A root resized more than once (or in a loop) is held as a
                // view of a hidden base standing for its storage, which
                // keeps the elements a smaller size hides for a later
                // larger one (the next pass has the base). One resize of a
                // root is a functional `resize` of it.
                *self.found.resizes.entry(id).or_default() += 1;
                let keep_tail =
                    self.loop_depth > 0 || self.facts.resizes.get(&id).is_some_and(|&n| n > 1);
                if keep_tail {
                    self.found.meta.insert(id);
                }
                let v = self.value(id);
                if self.based(id) {
                    let s = self.state(id);
                    let (b, bs) = (base_ident(id), base_state_ident(id));
                    let name = self.scopes.ident(id).to_string();
                    pq!(#rt::resize_root(#name, &mut #v, &mut #s, (&mut #b, &mut #bs), #args, #keep_tail))
                } else if self.has_state(id) {
                    let s = self.state(id);
                    pq!({ let __fz_new = #rt::resized(&#v, #args); #rt::commit_resized(&mut #v, &mut #s, __fz_new); #rt::handle(&#v) })
                } else {
                    pq!({ #v = #rt::resized(&#v, #args); #rt::handle(&#v) })
                }
            }
            Some((id, Kind::Alias { .. })) => {
                // Shrinking a view is a new view of its first elements;
                // growing it panics with PyTorch's message (rt::resize_view).
                self.mark_mutated(id);
                if !self.has_state(id) {
                    // Learned on this pass; the next one has the state.
                    return Expr::MethodCall(m.clone());
                }
                self.need_sync(id);
                let (v, s) = (self.value(id), self.state(id));
                let name = self.scopes.ident(id).to_string();
                pq!(#rt::resize_view(#name, &mut #v, &mut #s, #args))
            }
            _ => {
                crate::diag::resize_of_view(self, m);
                Expr::MethodCall(m.clone())
            }
        }
    }

    /// A view chain only read: plain view values (or `*_copy`s by mode).
    pub(super) fn plain_value(&mut self, e: &Expr) -> Expr {
        let mut e = e.clone();
        self.visit_expr_mut(&mut e);
        e
    }
}

/// An argument whose evaluation has no effect to order against other
/// work: a literal (`1.0`, `-1.0`), a variable or a field of one, or a
/// reference to one.
fn effect_free(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Path(p) => p.qself.is_none(),
        Expr::Reference(r) => effect_free(&r.expr),
        Expr::Paren(p) => effect_free(&p.expr),
        Expr::Field(f) => effect_free(&f.base),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => matches!(&*u.expr, Expr::Lit(_)),
        _ => false,
    }
}

/// Whether the in-place op `op` has a one-call form (`rt::on_var::add_`,
/// the methods of `rt::InPlace` and `rt::InPlaceWindow`).
fn one_call(op: &str) -> bool {
    optable::INPLACE_TARGET_OPS.contains(&op)
}

/// `{ stmts }`, or, when its one statement is the call `one` (a one-call
/// form, which returns `()`), that call: the statement it lowers is then
/// `call;`, with no block of its own to take apart again (see
/// `stmts::unbraced`) or to cost an unoptimized build a scope.
fn single_call(stmts: Vec<Stmt>, one: Option<Toks>) -> Expr {
    match one {
        Some(call) if stmts.len() == 1 => pq!(#call),
        _ => pq!({ #(#stmts)* }),
    }
}

/// What runs after an in-place op's arguments when they may have changed
/// the receiver's root (see `Lowerer::hoist_args`).
#[derive(Clone, Copy)]
enum Check {
    None,
    /// The receiver must still be current: a clear panic if not.
    Current,
    /// A chain with a step that may copy, made before the arguments: made
    /// again if it is a view (`rt::refresh_chain`).
    Refresh,
}

impl Check {
    /// The statement, for the receiver `view` (value, state) of the op `op`
    /// on the root `root`.
    fn stmt(self, op: &str, root: (&Access, &Access), view: (&Access, &Access)) -> Option<Stmt> {
        let rt = rt();
        let ((rv, rs), (v, s)) = (root, view);
        match self {
            Check::None => None,
            Check::Current => Some(pq!(#rt::check_current(#op, &#rv, &#rs, &#v, &#s);)),
            Check::Refresh => Some(pq!(#rt::refresh_chain(&mut #v, &mut #s, &#rv, &#rs);)),
        }
    }
}
