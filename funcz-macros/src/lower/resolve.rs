//! Reading the syntax against the bindings in scope, without writing
//! anything: which binding a name or field is, whether an expression is a
//! tensor, which root a receiver chain starts from, and the one
//! classification of an in-place op's receiver (see [`Receiver`]). Both the
//! analysis pass (`crate::analysis`) and code generation ask these
//! questions through this trait, so they always get the same answers.
//!
//! Input: `v.narrow(0, 0, 1)` with `v` a view of the input `x`.
//! Output: `receiver_root` = `x`; `classify_receiver` = `Receiver::Place(v)`.

#[allow(unused_imports)]
use super::*;

/// What the receiver of an in-place op (or metadata op) is: the rule the
/// macro enforces is that it either proves from syntax where the storage
/// comes from, or checks it at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// A place the macro tracks, through views and in-place ops: a tensor
    /// root (input, field place or local), an alias of one, a collection
    /// element (`xs[i]`, a loop variable, `let e = &xs[i]`). The binding
    /// whose storage is written (for an element, the collection).
    Place(usize),
    /// A binding made in branches from different bases: refused.
    Ambiguous,
    /// A value made by the expression itself (a call, arithmetic, a
    /// functional op): nothing else can see it, which `rt::check_temp`
    /// checks at run time.
    Made,
    /// Anything else (a binding the macro cannot track): refused.
    Untracked,
}

/// The bindings in scope and the field places, read by the answers below.
/// Macros known to only read their arguments (formatting, assertions,
/// `vec!`, whose stored views are refused separately): their arguments are
/// lowered as expressions, not watched as an opaque call's.
pub(crate) const READ_ONLY_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "dbg",
    "eprint",
    "eprintln",
    "format",
    "format_args",
    "matches",
    "panic",
    "print",
    "println",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
];

/// Whether `mac` is one of [`READ_ONLY_MACROS`] (by its last segment).
pub(crate) fn read_only_macro(mac: &syn::Macro) -> bool {
    mac.path
        .segments
        .last()
        .is_some_and(|s| READ_ONLY_MACROS.contains(&crate::fast::text(&s.ident).as_str()))
}

pub(crate) trait Resolve {
    fn scopes(&self) -> &Scopes;
    fn places(&self) -> &[(String, Option<usize>, usize)];

    /// Splits a statement that chains in-place ops on a variable or field
    /// (`x.mul_(2.0).add_(3.0);`) into one statement per op, in order: the
    /// same program (each op runs on the same tensor, its arguments read
    /// after the ops before it), lowered flat however long the chain.
    ///
    /// Input: `x.mul_(2.0).add_(&y);`
    /// Output: `x.mul_(2.0); x.add_(&y);`
    ///
    /// Both passes split such a statement before they walk it, so a chain
    /// of any length is walked in linear time.
    fn split_chain(&self, stmt: &Stmt) -> Option<Vec<Stmt>> {
        let Stmt::Expr(e, Some(semi)) = stmt else {
            return None;
        };
        let mut ops: Vec<&syn::ExprMethodCall> = Vec::new();
        let mut cur = e;
        while let Expr::MethodCall(m) = cur
            && matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                Some(OpKind::Inplace { .. })
            )
        {
            ops.push(m);
            cur = &m.receiver;
        }
        if ops.len() < 2
            || !matches!(cur, Expr::Path(_) | Expr::Field(_))
            || self.binding_of(cur).is_none()
        {
            return None;
        }
        Some(
            ops.iter()
                .rev()
                .map(|m| {
                    // Built field by field: cloning `m` would copy the rest
                    // of the chain (its receiver) once per op.
                    let one = syn::ExprMethodCall {
                        attrs: m.attrs.clone(),
                        receiver: Box::new(cur.clone()),
                        dot_token: m.dot_token,
                        method: m.method.clone(),
                        turbofish: m.turbofish.clone(),
                        paren_token: m.paren_token,
                        args: m.args.clone(),
                    };
                    Stmt::Expr(Expr::MethodCall(one), Some(*semi))
                })
                .collect(),
        )
    }

    fn binding_of(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Path(p)
                if p.qself.is_none()
                    && p.path.segments.len() == 1
                    && p.path.leading_colon.is_none() =>
            {
                self.scopes()
                    .lookup(&crate::fast::text(&p.path.segments[0].ident))
            }
            Expr::Paren(p) => self.binding_of(&p.expr),
            Expr::Group(g) => self.binding_of(&g.expr),
            Expr::Field(_) => self.place_of(e),
            _ => None,
        }
    }

    /// The binding of a tracked field place (`self.cache`), unless the
    /// body has shadowed the name it starts from.
    fn place_of(&self, e: &Expr) -> Option<usize> {
        if self.places().is_empty() {
            return None;
        }
        let (base, key) = crate::places::place_key(e)?;
        let (_, at_entry, id) = self.places().iter().find(|(k, _, _)| *k == key)?;
        (base == "self" || self.scopes().lookup(&base) == *at_entry).then_some(*id)
    }

    fn is_tensor_binding(&self, id: usize) -> bool {
        matches!(
            self.scopes().kind(id),
            Kind::Root { known: true, .. }
                | Kind::Alias { .. }
                | Kind::ElemRef { .. }
                | Kind::ElemAt { .. }
                | Kind::Ambiguous
                | Kind::Plain
        )
    }

    /// Whether `e` evaluates to a tensor, as far as the syntax shows.
    fn is_tensor_expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Path(p) => {
                if let Some(id) = self.binding_of(e) {
                    return self.is_tensor_binding(id);
                }
                p.path.segments.len() >= 2 && p.path.segments.iter().any(|s| s.ident == "Tensor")
            }
            Expr::Field(_) => self
                .place_of(e)
                .is_some_and(|id| self.is_tensor_binding(id)),
            Expr::Paren(p) => self.is_tensor_expr(&p.expr),
            Expr::Group(g) => self.is_tensor_expr(&g.expr),
            Expr::If(_) | Expr::Match(_) | Expr::Block(_) => {
                let t = tails(e);
                !t.is_empty() && t.iter().all(|t| self.is_tensor_expr(t))
            }
            Expr::Reference(r) => self.is_tensor_expr(&r.expr),
            Expr::Unary(u) => self.is_tensor_expr(&u.expr),
            Expr::Binary(b) => self.is_tensor_expr(&b.left) || self.is_tensor_expr(&b.right),
            Expr::Index(i) => self.binding_of(&i.expr).is_some_and(|id| {
                matches!(
                    self.scopes().kind(id),
                    Kind::Coll { .. } | Kind::Multi { .. }
                )
            }),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => p.path.segments.iter().any(|s| s.ident == "Tensor"),
                _ => false,
            },
            Expr::MethodCall(m) => {
                let name = crate::fast::text(&m.method);
                match optable::lookup(&name) {
                    Some(info) => {
                        !matches!(info.kind, OpKind::MultiView { .. } | OpKind::Autograd)
                            && self.is_tensor_expr(&m.receiver)
                    }
                    None => false,
                }
            }
            _ => false,
        }
    }

    fn iter_shape(&self, e: &Expr) -> Option<IterShape> {
        match e {
            Expr::Reference(r) => self.iter_shape(&r.expr),
            Expr::Paren(p) => self.iter_shape(&p.expr),
            Expr::Path(_) | Expr::Field(_) => {
                let id = self.binding_of(e)?;
                matches!(self.scopes().kind(id), Kind::Coll { .. }).then_some(IterShape::Coll(id))
            }
            Expr::MethodCall(m) => match crate::fast::text(&m.method).as_str() {
                "iter" | "iter_mut" | "into_iter" => self.iter_shape(&m.receiver),
                "enumerate" => Some(IterShape::Enumerate(Box::new(
                    self.iter_shape(&m.receiver)?,
                ))),
                "rev" | "skip" | "take" | "step_by" => {
                    Some(IterShape::Adapted(Box::new(self.iter_shape(&m.receiver)?)))
                }
                "zip" => Some(IterShape::Zip(
                    Box::new(self.iter_shape(&m.receiver).unwrap_or(IterShape::Other)),
                    Box::new(
                        m.args
                            .first()
                            .and_then(|a| self.iter_shape(a))
                            .unwrap_or(IterShape::Other),
                    ),
                )),
                _ => None,
            },
            _ => None,
        }
    }

    /// True if matching on `e` binds tensors that are only read (`e` is an
    /// `Option<&Tensor>` input).
    fn unwraps_tensors(&self, e: &Expr) -> bool {
        self.binding_of(e)
            .is_some_and(|id| matches!(self.scopes().kind(id), Kind::Optional))
    }

    /// The collection whose element the receiver chain `e` starts from
    /// (`d[i]...`, or a loop variable over `d`'s elements), through views
    /// and in-place ops only (`d[0].clone().add_(1.0)` is fresh).
    fn elem_coll(&self, e: &Expr) -> Option<usize> {
        let mut cur = e;
        loop {
            match cur {
                Expr::MethodCall(m) if passes_storage(m) => cur = &m.receiver,
                Expr::MethodCall(_) => return None,
                Expr::Paren(p) => cur = &p.expr,
                Expr::Unary(u) => cur = &u.expr,
                Expr::Index(i) => {
                    let id = self.binding_of(&i.expr)?;
                    return matches!(self.scopes().kind(id), Kind::Coll { .. }).then_some(id);
                }
                _ => {
                    let id = self.binding_of(cur)?;
                    return match self.scopes().kind(id) {
                        Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => Some(*coll),
                        _ => None,
                    };
                }
            }
        }
    }

    /// The collection `c` if `e` is a view (or the in-place result) of an
    /// element of `c`: such a value is bound as a plain tensor, and
    /// [`check_elem_aliases`](Self::check_elem_aliases) refuses the programs
    /// where it could not be kept in sync with its element.
    fn elem_alias_coll(&self, e: &Expr) -> Option<usize> {
        let aliasing = self.is_inplace_call(e)
            || matches!(e, Expr::MethodCall(m) if matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                Some(OpKind::View { .. } | OpKind::MaybeView { .. } | OpKind::MultiView { .. })
            ));
        self.elem_coll(e).filter(|_| aliasing)
    }

    /// True if `e` is an `if`/`match`/block whose branches are views of
    /// tracked variables: the result's root cannot be known statically.
    fn mixes_aliases(&self, e: &Expr) -> bool {
        let tails = tails(e);
        if tails.len() < 2 {
            return false;
        }
        tails.iter().any(|t| self.view_chain_root(t).is_some())
    }

    fn view_chain_root(&self, e: &Expr) -> Option<usize> {
        let mut cur = e;
        let mut saw_view = false;
        loop {
            match cur {
                // An in-place op returns its receiver: a handle of the same
                // tensor, as much an alias as a view
                // (`[x.mul_(0.5).unsqueeze(0)]` stores a view of `x`).
                Expr::MethodCall(m)
                    if passes_storage(m)
                        || optable::lookup(&crate::fast::text(&m.method))
                            .is_some_and(|i| i.kind == OpKind::Resize) =>
                {
                    saw_view = true;
                    cur = &m.receiver;
                }
                Expr::MethodCall(_) => return None,
                Expr::Paren(p) => cur = &p.expr,
                _ => {
                    let id = self.binding_of(cur)?;
                    return if saw_view {
                        self.scopes().root_of(id)
                    } else {
                        None
                    };
                }
            }
        }
    }

    fn is_inplace_call(&self, e: &Expr) -> bool {
        match e {
            Expr::MethodCall(m) => matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
            ),
            Expr::Paren(p) => self.is_inplace_call(&p.expr),
            _ => false,
        }
    }

    /// The root an in-place expression mutates, if it is a tracked place.
    fn target_root_of(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::MethodCall(m) => self.receiver_root(&m.receiver),
            Expr::Paren(p) => self.target_root_of(&p.expr),
            _ => None,
        }
    }

    /// The root the receiver chain `recv` of an in-place op starts from.
    fn receiver_root(&self, recv: &Expr) -> Option<usize> {
        let mut cur: &Expr = recv;
        loop {
            match cur {
                // Only views and in-place ops pass the storage on:
                // `a.add(1.0).sqrt_()` mutates a fresh value.
                Expr::MethodCall(mm) if passes_storage(mm) => cur = &mm.receiver,
                Expr::MethodCall(_) => return None,
                Expr::Paren(p) => cur = &p.expr,
                Expr::Index(i) => cur = &i.expr,
                Expr::Unary(u) => cur = &u.expr,
                _ => break,
            }
        }
        self.binding_of(cur)
            .and_then(|id| self.scopes().root_of(id))
    }

    /// `Some(x)` if `init` (a `let r = init;`) is `&x` of a tensor binding:
    /// `r` is then another name for `x`.
    fn ref_target(&self, init: &Expr) -> Option<usize> {
        let Expr::Reference(r) = init else {
            return None;
        };
        let Expr::Path(p) = &*r.expr else { return None };
        if r.mutability.is_some() || p.path.segments.len() != 1 {
            return None;
        }
        let to = self.binding_of(&r.expr)?;
        (self.is_tensor_binding(to)
            || matches!(
                self.scopes().kind(to),
                Kind::Root { .. } | Kind::Coll { .. } | Kind::Multi { .. }
            ))
        .then_some(to)
    }

    /// The kind binding `id` has after `id = right;`: a root not yet known
    /// to be a tensor (`let v;`, an unknown call's result) assigned a value
    /// that is one is a tensor from then on. `None`: unchanged.
    fn kind_after_assign(&self, id: usize, right: &Expr) -> Option<Kind> {
        match self.scopes().kind(id) {
            Kind::Root {
                input,
                known: false,
            } if self.is_tensor_expr(right) => Some(Kind::Root {
                input: *input,
                known: true,
            }),
            _ => None,
        }
    }

    /// What a call the macro cannot see into (`helper(&x)`, `v.unknown()`)
    /// receives: the tracked tensors it gets by reference (binding, and
    /// whether by `&mut`), and the elements `p[i]` of multi-output views it
    /// gets or is called on (binding, index).
    #[allow(clippy::type_complexity)]
    fn opaque_passed(&self, e: &Expr) -> (Vec<(usize, bool)>, Vec<(usize, Expr)>) {
        let multi_elem = |a: &Expr| -> Option<(usize, Expr)> {
            let inner = match a {
                Expr::Reference(r) => &*r.expr,
                other => other,
            };
            match inner {
                Expr::Index(ix) => self
                    .binding_of(&ix.expr)
                    .filter(|&id| matches!(self.scopes().kind(id), Kind::Multi { .. }))
                    .map(|id| (id, (*ix.index).clone())),
                _ => None,
            }
        };
        let tracked = |id: usize| {
            matches!(
                self.scopes().kind(id),
                Kind::Alias { .. } | Kind::Root { .. }
            )
        };
        let by_ref = |a: &Expr| -> Option<(usize, bool)> {
            let (inner, by_mut) = match a {
                Expr::Reference(r) => (&*r.expr, r.mutability.is_some()),
                other => (other, false),
            };
            let id = self.binding_of(inner).filter(|&id| tracked(id))?;
            // `let w = &v;` then `helper(w)` passes `v` by reference too.
            let ref_name = matches!(inner, Expr::Path(p) if p.path.segments.len() == 1
                && self.scopes().is_ref_name(&crate::fast::text(&p.path.segments[0].ident)));
            let borrowed = matches!(a, Expr::Reference(_))
                || ref_name
                || matches!(
                    self.scopes().kind(id),
                    Kind::Root {
                        input: Some(Passing::Ref | Passing::RefMut),
                        ..
                    }
                );
            // A tensor moved into the call (`helper(b)`, `Some(b)`) is
            // handed over as another handle of it (see
            // `Lowerer::visit_opaque_args`), and watched like a borrow.
            (borrowed || self.moved_tensor(a).is_some()).then_some((id, by_mut))
        };
        let stores = stores_only(e);
        let by_ref = |a: &Expr| by_ref(a).filter(|_| !stores || matches!(a, Expr::Reference(_)));
        let mut passed = Vec::new();
        let mut elems = Vec::new();
        match e {
            Expr::Call(c) => {
                elems.extend(c.args.iter().filter_map(multi_elem));
                passed.extend(c.args.iter().filter_map(by_ref));
            }
            Expr::MethodCall(m) => {
                elems.extend(multi_elem(&m.receiver));
                elems.extend(m.args.iter().filter_map(multi_elem));
                if let Some(id) = self.binding_of(&m.receiver).filter(|&id| tracked(id)) {
                    passed.push((id, false));
                }
                passed.extend(m.args.iter().filter_map(by_ref));
            }
            _ => {}
        }
        (passed, elems)
    }

    /// An invocation of a macro this crate does not know to only read its
    /// arguments (`bump!(b)`, whose body may expand to `b.add_(1.0)`), as
    /// the opaque call both passes treat it as: a tensor binding or view
    /// named as a whole argument is handed by reference (by `&mut` for a
    /// root the macro could assign), so the call is watched like any
    /// opaque call. Also says which arguments were wrapped. `None` for a
    /// known macro, arguments that are not expressions, or no tensor
    /// argument.
    ///
    /// Input: `bump!(b, x.narrow(0, 0, 1), 2.0)`
    /// Output: `bump(&mut b, &x.narrow(0, 0, 1), 2.0)` and `[true, true, false]`.
    fn macro_as_call(&self, mac: &syn::Macro) -> Option<(Expr, Vec<bool>)> {
        if read_only_macro(mac) {
            return None;
        }
        let parser = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        let args = syn::parse::Parser::parse2(parser, mac.tokens.clone()).ok()?;
        let mut wrapped = Vec::new();
        let mut call_args: syn::punctuated::Punctuated<Expr, syn::Token![,]> =
            syn::punctuated::Punctuated::new();
        for a in args {
            let whole = match self.binding_of(&a).map(|id| self.scopes().kind(id)) {
                Some(Kind::Root {
                    input: None | Some(Passing::Value),
                    known: true,
                })
                | Some(Kind::Root {
                    input: Some(Passing::RefMut),
                    ..
                }) => Some(true),
                Some(
                    Kind::Alias { .. }
                    | Kind::Root {
                        input: Some(Passing::Ref),
                        ..
                    },
                ) => Some(false),
                _ if is_view_call(&a) && self.is_tensor_expr(&a) => Some(false),
                _ => None,
            };
            wrapped.push(whole.is_some());
            call_args.push(match whole {
                Some(true) => syn::parse_quote!(&mut #a),
                Some(false) => syn::parse_quote!(&#a),
                None => a,
            });
        }
        if !wrapped.contains(&true) {
            return None;
        }
        let path = &mac.path;
        Some((syn::parse_quote!(#path(#call_args)), wrapped))
    }

    /// `a` is a tensor binding the macro tracks, named as a whole value
    /// (an argument that moves it): an alias, or a root known to be a
    /// tensor that is not a reference input.
    fn moved_tensor(&self, a: &Expr) -> Option<usize> {
        let Expr::Path(p) = a else { return None };
        if p.path.segments.len() != 1 {
            return None;
        }
        // `let w = &v;` then `helper(w)`: a reference, not a move.
        if self
            .scopes()
            .is_ref_name(&crate::fast::text(&p.path.segments[0].ident))
        {
            return None;
        }
        let id = self.binding_of(a)?;
        match self.scopes().kind(id) {
            Kind::Alias { .. } => Some(id),
            Kind::Root {
                input: None | Some(Passing::Value),
                known: true,
            } => Some(id),
            _ => None,
        }
    }

    /// The one classification of an in-place op's receiver `recv` (see
    /// [`Receiver`]). Only views and in-place ops pass a tensor's storage
    /// on; anything else a method returns is made by it.
    fn classify_receiver(&self, recv: &Expr) -> Receiver {
        match recv {
            Expr::Paren(p) => self.classify_receiver(&p.expr),
            Expr::Group(g) => self.classify_receiver(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => match self.binding_of(&u.expr)
            {
                Some(id) => match self.scopes().kind(id) {
                    Kind::ElemAt { coll, .. } => Receiver::Place(*coll),
                    Kind::ElemRef { .. } | Kind::Root { .. } => Receiver::Place(id),
                    _ => self.made(recv),
                },
                None => self.made(recv),
            },
            Expr::Path(_) | Expr::Field(_) => match self.binding_of(recv) {
                Some(id) => match self.scopes().kind(id) {
                    Kind::ElemAt { coll, .. } => Receiver::Place(*coll),
                    Kind::Root { .. } | Kind::Alias { .. } | Kind::ElemRef { .. } => {
                        Receiver::Place(id)
                    }
                    Kind::Ambiguous => Receiver::Ambiguous,
                    _ => self.made(recv),
                },
                None => self.made(recv),
            },
            Expr::Index(ix) => {
                if let Some(id) = self.binding_of(&ix.expr)
                    && matches!(
                        self.scopes().kind(id),
                        Kind::Coll { .. } | Kind::Multi { .. }
                    )
                {
                    return Receiver::Place(id);
                }
                if let Expr::MethodCall(m) = &*ix.expr
                    && matches!(
                        optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                        Some(OpKind::MultiView { .. })
                    )
                    && let Receiver::Place(id) = self.classify_receiver(&m.receiver)
                {
                    return Receiver::Place(id);
                }
                self.made(recv)
            }
            Expr::MethodCall(m) => {
                match optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind) {
                    Some(OpKind::View { .. } | OpKind::MaybeView { .. }) => {
                        match self.classify_receiver(&m.receiver) {
                            Receiver::Untracked | Receiver::Made => self.made(recv),
                            other => other,
                        }
                    }
                    Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. }) => {
                        match self.classify_receiver(peel_inplace(&m.receiver)) {
                            Receiver::Untracked | Receiver::Made => self.made(recv),
                            other => other,
                        }
                    }
                    _ => self.made(recv),
                }
            }
            _ => self.made(recv),
        }
    }

    /// `Made` if `e` (not a place) is a value the expression makes itself:
    /// a call, arithmetic, or a tensor expression that names no binding.
    fn made(&self, e: &Expr) -> Receiver {
        let mut bare = e;
        while let Expr::Paren(p) = bare {
            bare = &p.expr;
        }
        let named = self.binding_of(e).is_some();
        let made = matches!(bare, Expr::Call(_) | Expr::MethodCall(_))
            || matches!(bare, Expr::Binary(b) if matches!(
                b.op,
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) | syn::BinOp::Div(_)
            ))
            || matches!(bare, Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)));
        if !named && (self.is_tensor_expr(e) || made) {
            Receiver::Made
        } else {
            Receiver::Untracked
        }
    }
}

impl Resolve for Lowerer<'_> {
    fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    fn places(&self) -> &[(String, Option<usize>, usize)] {
        &self.places
    }
}

/// A call that only stores what it is given (`Some(v)`, `Ok(v)`,
/// `Wrapper(v)`, `Box::new(v)`, `list.push(v)`): a view or tensor moved into
/// it is not written by it; storing a view of a tensor written later is
/// refused (`Lowerer::check_stored`).
pub(crate) fn stores_only(e: &Expr) -> bool {
    match e {
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else {
                return false;
            };
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| crate::fast::text(&s.ident))
                .collect();
            match segs.as_slice() {
                [.., last] if last.starts_with(|c: char| c.is_uppercase()) => true,
                [.., ty, new] => {
                    new == "new" && matches!(ty.as_str(), "Box" | "Rc" | "Arc" | "Cell" | "RefCell")
                }
                _ => false,
            }
        }
        Expr::MethodCall(m) => STORING_METHODS.contains(&crate::fast::text(&m.method).as_str()),
        _ => false,
    }
}

/// Methods of collections that store their argument.
pub(crate) const STORING_METHODS: &[&str] = &[
    "push",
    "insert",
    "push_back",
    "push_front",
    "extend",
    "append",
];
