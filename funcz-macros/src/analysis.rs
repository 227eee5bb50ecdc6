//! The analysis pass: one read-only walk of the body (a
//! [`syn::visit::Visit`]) that computes, before any code is generated, the
//! facts code generation needs about every binding: which roots are mutated
//! (directly, through an alias, a collection element, a field place or a
//! call the macro cannot see into), which have their layout changed in
//! place (`t_`, `transpose_`, a `resize_` that must keep the storage's
//! tail), and how many mutations and resizes of each root the body has.
//!
//! The walk declares bindings exactly as code generation does (the same
//! [`Resolve`] answers, in the same order), so a binding has one id in both.
//! A few facts depend on others (a root passed to a helper counts as
//! mutated if it has a re-laid-out base; a second `resize_` makes a root
//! keep its tail): the walk is repeated on its own facts until they stop
//! changing, which takes two or three cheap walks and no code generation.
//!
//! Input:
//! ```text
//! fn f(x: &Tensor, w: &Tensor) { let v = x.narrow(0, 0, 1); v.add_(w); x.t_(); }
//! ```
//! Output: `Facts { mutated: {x}, meta: {x}, mutations: {x: 1}, resizes: {} }`.

use std::collections::HashSet;

use syn::visit::{self, Visit};
use syn::{Block, Expr, ExprMethodCall, ItemFn, Pat, Stmt};

use funcz_optable::{self as optable, OpKind};

use crate::attr::Remove;
use crate::lower::{IterShape, QUERIES, Resolve, is_view_call, peel_inplace};
use crate::params::Passing;
use crate::scope::{Facts, Kind, Scopes};

/// Computes the facts of `func`'s body (see the module documentation).
pub(crate) fn analyze(
    func: &ItemFn,
    _mode: Remove,
    places: &[crate::places::Place],
    tensor_params: &HashSet<String>,
) -> Facts {
    let mut known = Facts::default();
    for _ in 0..8 {
        let mut a = Analyzer {
            scopes: Scopes::default(),
            places: Vec::new(),
            known: &known,
            found: Facts::default(),
            loop_depth: 0,
            closure_floor: Vec::new(),
        };
        a.scopes.push();
        a.places = crate::inputs::declare(func, tensor_params, places, &mut a.scopes).places;
        a.stmts(&func.block.stmts);
        let found = a.found;
        let done = found.mutated == known.mutated
            && found.meta == known.meta
            && found.mutations == known.mutations
            && found.resizes == known.resizes;
        known = found;
        if done {
            break;
        }
    }
    known
}

struct Analyzer<'k> {
    scopes: Scopes,
    places: Vec<(String, Option<usize>, usize)>,
    /// The facts of the previous walk (empty on the first).
    known: &'k Facts,
    found: Facts,
    loop_depth: usize,
    /// Per open closure: the number of bindings declared before it.
    closure_floor: Vec<usize>,
}

impl Resolve for Analyzer<'_> {
    fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    fn places(&self) -> &[(String, Option<usize>, usize)] {
        &self.places
    }
}

/// What [`Analyzer::target`] found at the bottom of a receiver chain.
enum Found {
    /// The binding written, and whether views lie between it and the value.
    Place(usize, bool),
    Refused,
}

impl Analyzer<'_> {
    // ---------- facts ----------

    fn tracked_root(&self, root: usize) -> bool {
        self.known.mutated.contains(&root) || self.known.meta.contains(&root)
    }

    fn based(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Root { .. }) && self.known.meta.contains(&id)
    }

    fn has_state(&self, id: usize) -> bool {
        match self.scopes.kind(id) {
            Kind::Root { .. } => self.tracked_root(id),
            Kind::Alias { root } | Kind::Multi { root } => self.tracked_root(*root),
            _ => false,
        }
    }

    fn has_aliases(&self, root: usize) -> bool {
        self.scopes.bindings.iter().any(
            |b| matches!(b.kind, Kind::Alias { root: r } | Kind::Multi { root: r } if r == root),
        ) || self.based(root)
    }

    fn captured(&self, id: usize) -> bool {
        self.closure_floor.last().is_some_and(|&floor| id < floor)
    }

    /// Binding `id` is written: its root (or collection) is mutated.
    fn mark(&mut self, id: usize) {
        if let Some(root) = self.scopes.root_of(id) {
            *self.found.mutations.entry(root).or_default() += 1;
        }
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } | Kind::Coll { .. } => {
                self.found.mutated.insert(id);
            }
            Kind::Alias { root } | Kind::Multi { root } => {
                self.found.mutated.insert(root);
            }
            Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => {
                self.found.mutated.insert(coll);
            }
            _ => {}
        }
    }

    // ---------- declarations ----------

    fn declare_pat(&mut self, pat: &Pat, kind: Kind) {
        match pat {
            Pat::Ident(pi) => {
                self.scopes.declare(&pi.ident, kind);
            }
            Pat::Type(pt) => self.declare_pat(&pt.pat, kind),
            other => self.declare_all(other, Kind::Other),
        }
    }

    fn declare_all(&mut self, pat: &Pat, kind: Kind) {
        for ident in crate::lower::pat_idents(pat) {
            self.scopes.declare(&ident, kind.clone());
        }
    }

    // ---------- statements ----------

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            match s {
                Stmt::Local(l) => self.local(l),
                Stmt::Expr(e, _) => self.visit_expr(e),
                Stmt::Macro(m) => self.mac(&m.mac),
                Stmt::Item(_) => {}
            }
        }
    }

    fn local(&mut self, local: &syn::Local) {
        let Some(init) = &local.init else {
            let typed_other = matches!(&local.pat, Pat::Type(_))
                && !crate::lower::pat_is_tensor_typed(&local.pat);
            if crate::lower::pat_ident(&local.pat).is_some() && !typed_other {
                self.declare_pat(
                    &local.pat,
                    Kind::Root {
                        input: None,
                        known: false,
                    },
                );
            } else {
                self.declare_all(&local.pat, Kind::Other);
            }
            return;
        };
        let expr = &*init.expr;
        if init.diverge.is_none() && crate::lower::flat_tuple(&local.pat) {
            return self.tuple_local(&local.pat, expr);
        }
        if init.diverge.is_some() || crate::lower::pat_ident(&local.pat).is_none() {
            self.visit_expr(expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
            self.declare_all(&local.pat, Kind::Other);
            return;
        }
        let ident = crate::lower::pat_ident(&local.pat).expect("checked above");
        // `let x = &xs[i];`
        if let Expr::Reference(r) = expr
            && let Expr::Index(ix) = &*r.expr
            && let Some(coll) = self.binding_of(&ix.expr)
            && matches!(self.scopes.kind(coll), Kind::Coll { .. })
        {
            self.visit_expr(&ix.index);
            let index = crate::lower::elem_at_ident(self.scopes.bindings.len());
            self.scopes.declare(&ident, Kind::ElemAt { coll, index });
            return;
        }
        // `let r = &x;`
        if let Expr::Reference(r) = expr
            && r.mutability.is_none()
            && let Expr::Path(p) = &*r.expr
            && p.path.segments.len() == 1
            && let Some(to) = self.binding_of(&r.expr)
            && (self.is_tensor_binding(to)
                || matches!(
                    self.scopes.kind(to),
                    Kind::Root { .. } | Kind::Coll { .. } | Kind::Multi { .. }
                ))
        {
            self.scopes.declare_ref(&ident, to);
            return;
        }
        let elem_coll = self.elem_alias_coll(expr);
        // `let c = <in-place op>;`
        if self.is_inplace_call(expr) {
            let root = self.target_root_of(expr).filter(|_| elem_coll.is_none());
            self.visit_expr(expr);
            let kind = match root {
                Some(r) => Kind::Alias { root: r },
                None => Kind::Root {
                    input: None,
                    known: true,
                },
            };
            self.declare_pat(&local.pat, kind);
            return;
        }
        // `let v = <view chain of a place>;`
        if elem_coll.is_none()
            && let Some((place, multi)) = self.view_chain(expr)
            && let Some(root) = self.scopes.root_of(place)
        {
            let kind = if multi {
                Kind::Multi { root }
            } else {
                Kind::Alias { root }
            };
            if !self.tracked_root(root) {
                // (Code generation lowers the chain again as a plain value.)
                self.visit_expr(expr);
            }
            self.declare_pat(&local.pat, kind);
            return;
        }
        let proven = self.is_tensor_expr(expr);
        let known = proven || crate::lower::pat_is_tensor_typed(&local.pat);
        let tensor = known || matches!(expr, Expr::Call(_) | Expr::MethodCall(_));
        let ambiguous = self.mixes_aliases(expr);
        self.visit_expr(expr);
        if ambiguous {
            self.declare_pat(&local.pat, Kind::Ambiguous);
        } else if !tensor {
            self.declare_all(&local.pat, Kind::Other);
        } else {
            self.declare_pat(&local.pat, Kind::Root { input: None, known });
        }
    }

    fn tuple_local(&mut self, pat: &Pat, expr: &Expr) {
        let parts: Option<Vec<&Expr>> = match expr {
            Expr::Tuple(t) => Some(t.elems.iter().collect()),
            _ => None,
        };
        let fresh_tuple = matches!(expr, Expr::MethodCall(m)
            if matches!(
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
                Some(OpKind::Functional)
            ) && self.is_tensor_expr(&m.receiver));
        let Pat::Tuple(pt) = pat else { return };
        let proven: Vec<bool> = (0..pt.elems.len())
            .map(|k| {
                fresh_tuple
                    || parts
                        .as_ref()
                        .and_then(|ps| ps.get(k))
                        .is_some_and(|e| self.is_tensor_expr(e))
            })
            .collect();
        self.visit_expr(expr);
        for (k, p) in pt.elems.iter().enumerate() {
            if crate::lower::pat_ident(p).is_none() {
                continue;
            }
            self.declare_pat(
                p,
                Kind::Root {
                    input: None,
                    known: proven[k],
                },
            );
        }
    }

    // ---------- expressions ----------

    fn expr(&mut self, e: &Expr) {
        if let Some(m) = inplace_call(e) {
            return self.inplace_any(m);
        }
        match e {
            Expr::Path(_) | Expr::Field(_) if self.binding_of(e).is_some() => {}
            Expr::Index(ix)
                if self.binding_of(&ix.expr).is_some_and(|id| {
                    matches!(self.scopes.kind(id), Kind::Coll { input: Some(_) })
                }) =>
            {
                self.visit_expr(&ix.index)
            }
            Expr::Binary(b) if crate::lower::is_compound(&b.op) && self.is_tensor_expr(&b.left) => {
                self.inplace_parts(&b.left, std::iter::once(&*b.right));
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                let kind = optable::lookup(&name).map(|i| i.kind);
                let opaque = kind.is_none()
                    && !QUERIES.contains(&name.as_str())
                    && (self.binding_of(&m.receiver).is_some()
                        || matches!(&*m.receiver, Expr::Index(ix) if self.binding_of(&ix.expr)
                            .is_some_and(|id| matches!(self.scopes.kind(id), Kind::Multi { .. })))
                        || (is_view_call(&m.receiver) && self.is_tensor_expr(&m.receiver)));
                if opaque {
                    self.opaque(e);
                } else {
                    visit::visit_expr(self, e);
                }
            }
            Expr::Call(_) => self.opaque(e),
            Expr::Closure(c) => {
                self.closure_floor.push(self.scopes.bindings.len());
                self.scopes.push();
                for p in c.inputs.iter() {
                    self.declare_all(p, Kind::Other);
                }
                self.visit_expr(&c.body);
                self.scopes.pop();
                self.closure_floor.pop();
            }
            Expr::Async(a) => {
                self.closure_floor.push(self.scopes.bindings.len());
                self.visit_block(&a.block);
                self.closure_floor.pop();
            }
            Expr::Macro(m) => self.mac(&m.mac),
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Assign(a) => self.assign(a),
            Expr::Let(l) => {
                self.visit_expr(&l.expr);
                let plain = self.unwraps_tensors(&l.expr);
                self.declare_all(&l.pat, if plain { Kind::Plain } else { Kind::Other });
            }
            Expr::Match(m) => {
                self.visit_expr(&m.expr);
                let plain = self.unwraps_tensors(&m.expr);
                for arm in &m.arms {
                    self.scopes.push();
                    self.declare_all(&arm.pat, if plain { Kind::Plain } else { Kind::Other });
                    if let Pat::Guard(g) = &arm.pat {
                        self.visit_expr(&g.guard);
                    }
                    self.visit_expr(&arm.body);
                    self.scopes.pop();
                }
            }
            _ => visit::visit_expr(self, e),
        }
    }

    fn inplace_any(&mut self, m: &ExprMethodCall) {
        match optable::lookup(&m.method.to_string()).map(|i| i.kind) {
            Some(OpKind::Inplace { .. }) => self.inplace_parts(&m.receiver, m.args.iter()),
            Some(OpKind::InplaceView { .. }) => self.meta(m),
            Some(OpKind::Resize) => self.resize(m),
            _ => visit::visit_expr_method_call(self, m),
        }
    }

    /// An in-place op on `recv` with `args`: its receiver is classified
    /// (see [`Resolve::classify_receiver`]) and a place is marked written.
    fn inplace_parts<'e>(&mut self, recv: &Expr, args: impl Iterator<Item = &'e Expr>) {
        let root = self.receiver_root(recv);
        if !self.closure_floor.is_empty() && root.is_none_or(|r| self.captured(r)) {
            return; // refused by code generation
        }
        let found = self.target(recv);
        for a in args {
            self.visit_expr(a);
        }
        match found {
            Some(Found::Place(id, _)) => self.mark(id),
            Some(Found::Refused) => {}
            None => {
                if self.classify_receiver(recv) == crate::lower::Receiver::Made {
                    let mut bare = recv;
                    while let Expr::Paren(p) = bare {
                        bare = &p.expr;
                    }
                    self.visit_expr(bare);
                }
            }
        }
    }

    /// Walks a receiver chain as code generation does (the arguments of its
    /// views, the in-place ops inside it) and returns the place at its
    /// bottom.
    fn target(&mut self, e: &Expr) -> Option<Found> {
        crate::lower::grow(|| self.target_inner(e))
    }

    fn target_inner(&mut self, e: &Expr) -> Option<Found> {
        let first = match e {
            Expr::Paren(p) => return self.target(&p.expr),
            Expr::Group(g) => return self.target(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let id = self.binding_of(&u.expr)?;
                return match self.scopes.kind(id) {
                    Kind::ElemAt { coll, .. } => Some(Found::Place(*coll, false)),
                    Kind::ElemRef { .. } | Kind::Root { .. } => Some(Found::Place(id, false)),
                    _ => None,
                };
            }
            Expr::Path(_) | Expr::Field(_) => {
                let id = self.binding_of(e)?;
                return match self.scopes.kind(id) {
                    Kind::ElemAt { coll, .. } => Some(Found::Place(*coll, false)),
                    Kind::Root { .. } | Kind::Alias { .. } | Kind::ElemRef { .. } => {
                        Some(Found::Place(id, false))
                    }
                    Kind::Ambiguous => Some(Found::Refused),
                    _ => None,
                };
            }
            Expr::Index(ix) => match self.binding_of(&ix.expr) {
                Some(id)
                    if matches!(self.scopes.kind(id), Kind::Coll { .. } | Kind::Multi { .. }) =>
                {
                    self.visit_expr(&ix.index);
                    return Some(Found::Place(id, false));
                }
                _ => None,
            },
            Expr::MethodCall(m) => match optable::lookup(&m.method.to_string()).map(|i| i.kind) {
                Some(OpKind::View { .. } | OpKind::MaybeView { .. }) => {
                    let inner = self.target(&m.receiver)?;
                    return Some(match inner {
                        Found::Place(id, _) => {
                            for a in &m.args {
                                self.visit_expr(a);
                            }
                            Found::Place(id, true)
                        }
                        other => other,
                    });
                }
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. }) => {
                    self.inplace_any(m);
                    return self.target(peel_inplace(&m.receiver));
                }
                _ => None,
            },
            _ => None,
        };
        first.or_else(|| {
            if let Expr::Index(ix) = e
                && let Expr::MethodCall(m) = &*ix.expr
                && matches!(
                    optable::lookup(&m.method.to_string()).map(|i| i.kind),
                    Some(OpKind::MultiView { .. })
                )
                && let Some(Found::Place(id, _)) = self.target(&m.receiver)
            {
                for a in &m.args {
                    self.visit_expr(a);
                }
                self.visit_expr(&ix.index);
                return Some(Found::Place(id, true));
            }
            None
        })
    }

    /// `Some((place, multi))` if `e` is a view chain (or a multi-output
    /// view) of a place.
    fn view_chain(&mut self, e: &Expr) -> Option<(usize, bool)> {
        let (multi, inner) = match e {
            Expr::MethodCall(m)
                if matches!(
                    optable::lookup(&m.method.to_string()).map(|i| i.kind),
                    Some(OpKind::MultiView { .. })
                ) =>
            {
                (Some(m), &*m.receiver)
            }
            _ => (None, e),
        };
        let is_view = matches!(inner, Expr::MethodCall(m) if matches!(
            optable::lookup(&m.method.to_string()).map(|i| i.kind),
            Some(OpKind::View { .. } | OpKind::MaybeView { .. })
        ));
        if multi.is_none() && !is_view && !matches!(inner, Expr::Index(_)) {
            return None;
        }
        match self.target(inner)? {
            Found::Place(id, steps) => {
                if multi.is_none() && !steps {
                    return None;
                }
                if let Some(m) = multi {
                    for a in &m.args {
                        self.visit_expr(a);
                    }
                }
                Some((id, multi.is_some()))
            }
            Found::Refused => None,
        }
    }

    fn meta(&mut self, m: &ExprMethodCall) {
        for a in &m.args {
            self.visit_expr(a);
        }
        let Some(id) = self.binding_of(&m.receiver) else {
            return self.visit_expr(&m.receiver);
        };
        match self.scopes.kind(id) {
            Kind::Root { .. } => {
                self.found.meta.insert(id);
            }
            Kind::Alias { .. } => {}
            _ => visit::visit_expr_method_call(self, m),
        }
    }

    fn resize(&mut self, m: &ExprMethodCall) {
        for a in &m.args {
            self.visit_expr(a);
        }
        let Some(id) = self.binding_of(&m.receiver) else {
            return;
        };
        match self.scopes.kind(id) {
            Kind::Root { .. } => {
                self.mark(id);
                *self.found.resizes.entry(id).or_default() += 1;
                let keep_tail =
                    self.loop_depth > 0 || self.known.resizes.get(&id).is_some_and(|&n| n > 1);
                if keep_tail {
                    self.found.meta.insert(id);
                }
            }
            Kind::Alias { .. } => self.mark(id),
            _ => {}
        }
    }

    /// A call the macro cannot see into (as `Lowerer::opaque_call`).
    fn opaque(&mut self, e: &Expr) {
        let multi_elem = |this: &Self, a: &Expr| -> Option<usize> {
            let inner = match a {
                Expr::Reference(r) => &*r.expr,
                other => other,
            };
            match inner {
                Expr::Index(ix) => this
                    .binding_of(&ix.expr)
                    .filter(|&id| matches!(this.scopes.kind(id), Kind::Multi { .. })),
                _ => None,
            }
        };
        let mut elems: Vec<usize> = Vec::new();
        let mut passed: Vec<(usize, bool)> = Vec::new();
        let collect = |this: &Self, a: &Expr, passed: &mut Vec<(usize, bool)>| {
            let (inner, by_mut) = match a {
                Expr::Reference(r) => (&*r.expr, r.mutability.is_some()),
                other => (other, false),
            };
            if let Some(id) = this.binding_of(inner)
                && matches!(this.scopes.kind(id), Kind::Alias { .. } | Kind::Root { .. })
            {
                let borrowed = matches!(a, Expr::Reference(_))
                    || matches!(
                        this.scopes.kind(id),
                        Kind::Root {
                            input: Some(Passing::Ref | Passing::RefMut),
                            ..
                        }
                    );
                if borrowed {
                    passed.push((id, by_mut));
                }
            }
        };
        match e {
            Expr::Call(c) => {
                elems.extend(c.args.iter().filter_map(|a| multi_elem(self, a)));
                for a in &c.args {
                    collect(self, a, &mut passed);
                }
            }
            Expr::MethodCall(m) => {
                elems.extend(multi_elem(self, &m.receiver));
                elems.extend(m.args.iter().filter_map(|a| multi_elem(self, a)));
                if let Some(id) = self.binding_of(&m.receiver)
                    && matches!(self.scopes.kind(id), Kind::Alias { .. } | Kind::Root { .. })
                {
                    passed.push((id, false));
                }
                for a in &m.args {
                    collect(self, a, &mut passed);
                }
            }
            _ => {}
        }
        for (id, _) in passed.clone() {
            if let Kind::Alias { .. } = self.scopes.kind(id) {
                self.mark(id);
            }
        }
        for (id, _) in passed.clone() {
            if matches!(self.scopes.kind(id), Kind::Root { .. }) && self.has_aliases(id) {
                self.mark(id);
            }
        }
        for id in elems {
            self.mark(id);
        }
        for (id, by_mut) in passed {
            let mut_input = matches!(
                self.scopes.kind(id),
                Kind::Root {
                    input: Some(Passing::RefMut),
                    ..
                }
            );
            if (by_mut || mut_input) && matches!(self.scopes.kind(id), Kind::Root { .. }) {
                self.mark(id);
            }
        }
        // The arguments, as `Lowerer::visit_opaque_args` walks them: a view
        // given to the call is written back through its place.
        let args = match e {
            Expr::Call(c) => {
                self.visit_expr(&c.func);
                &c.args
            }
            Expr::MethodCall(m) => {
                let recv = &*m.receiver;
                if is_view_call(recv) && self.is_tensor_expr(recv) {
                    self.visit_expr(recv);
                    self.inplace_parts(recv, std::iter::empty());
                } else {
                    self.visit_expr(recv);
                }
                &m.args
            }
            _ => return visit::visit_expr(self, e),
        };
        for a in args {
            match a {
                Expr::Reference(r) if is_view_call(&r.expr) && self.is_tensor_expr(&r.expr) => {
                    self.visit_expr(&r.expr);
                    self.inplace_parts(&r.expr, std::iter::empty());
                }
                _ => self.visit_expr(a),
            }
        }
    }

    fn assign(&mut self, a: &syn::ExprAssign) {
        let Some(id) = self.binding_of(&a.left) else {
            if let Expr::Index(ix) = &*a.left
                && let Some(id) = self.binding_of(&ix.expr)
                && matches!(self.scopes.kind(id), Kind::Coll { .. })
            {
                self.mark(id);
            }
            visit::visit_expr(self, &a.right);
            visit::visit_expr(self, &a.left);
            return;
        };
        if let Kind::Root {
            input,
            known: false,
        } = self.scopes.kind(id).clone()
            && self.is_tensor_expr(&a.right)
        {
            self.scopes.bindings[id].kind = Kind::Root { input, known: true };
        }
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } => self.visit_expr(&a.right),
            Kind::Alias { root } => match self.view_chain(&a.right) {
                Some((place, false))
                    if self.scopes.root_of(place) == Some(root) && self.has_state(id) => {}
                _ => self.visit_expr(&a.right),
            },
            _ => visit::visit_expr(self, &a.right),
        }
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) {
        self.scopes.push();
        let ident = crate::lower::pat_ident(&f.pat);
        if let Some(ident) = &ident
            && self.elem_alias_coll(&f.expr).is_some()
        {
            self.visit_expr(&f.expr);
            self.scopes.declare(
                ident,
                Kind::Root {
                    input: None,
                    known: true,
                },
            );
            self.visit_block(&f.body);
            self.scopes.pop();
            return;
        }
        if ident.is_some()
            && let Some((place, true)) = self.view_chain(&f.expr)
            && let Some(root) = self.scopes.root_of(place)
        {
            if !self.tracked_root(root) {
                self.visit_expr(&f.expr);
            }
            self.declare_pat(&f.pat, Kind::Alias { root });
            self.visit_block(&f.body);
            self.scopes.pop();
            return;
        }
        match self.iter_shape(&f.expr) {
            Some(shape) => {
                self.iter_expr(&f.expr, &shape);
                self.bind_iter_pat(&f.pat, &shape);
            }
            None => {
                self.visit_expr(&f.expr);
                self.declare_all(&f.pat, Kind::Other);
            }
        }
        self.visit_block(&f.body);
        self.scopes.pop();
    }

    fn iter_expr(&mut self, e: &Expr, shape: &IterShape) {
        match (e, shape) {
            (_, IterShape::Coll(id)) if self.known.mutated.contains(id) => {}
            (Expr::MethodCall(m), IterShape::Enumerate(inner)) => {
                self.iter_expr(&m.receiver, inner)
            }
            (Expr::MethodCall(m), IterShape::Zip(a, b)) => {
                self.iter_expr(&m.receiver, a);
                if let Some(arg) = m.args.first() {
                    self.iter_expr(arg, b);
                }
            }
            (e, _) => self.visit_expr(e),
        }
    }

    fn bind_iter_pat(&mut self, pat: &Pat, shape: &IterShape) {
        match (pat, shape) {
            (Pat::Ident(pi), IterShape::Coll(id)) => {
                self.scopes.declare(&pi.ident, Kind::ElemRef { coll: *id });
            }
            (Pat::Tuple(t), IterShape::Enumerate(inner)) if t.elems.len() == 2 => {
                self.declare_all(&t.elems[0], Kind::Other);
                self.bind_iter_pat(&t.elems[1], inner);
            }
            (Pat::Tuple(t), IterShape::Zip(a, b)) if t.elems.len() == 2 => {
                self.bind_iter_pat(&t.elems[0], a);
                self.bind_iter_pat(&t.elems[1], b);
            }
            (p, _) => self.declare_all(p, Kind::Other),
        }
    }

    /// A macro invocation whose arguments parse as expressions is walked
    /// like code (as `Lowerer::lower_macro` lowers it).
    fn mac(&mut self, mac: &syn::Macro) {
        use syn::punctuated::Punctuated;
        let parser = Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        if let Ok(args) = syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
            for a in &args {
                self.visit_expr(a);
            }
            return;
        }
        if let Ok((a, b)) = syn::parse::Parser::parse2(
            |input: syn::parse::ParseStream| {
                let a: Expr = input.parse()?;
                input.parse::<syn::Token![;]>()?;
                let b: Expr = input.parse()?;
                Ok((a, b))
            },
            mac.tokens.clone(),
        ) {
            self.visit_expr(&a);
            self.visit_expr(&b);
        }
    }
}

impl<'ast> Visit<'ast> for Analyzer<'_> {
    fn visit_block(&mut self, b: &'ast Block) {
        self.scopes.push();
        self.stmts(&b.stmts);
        self.scopes.pop();
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        crate::lower::grow(|| {
            let looping = matches!(e, Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_));
            self.loop_depth += usize::from(looping);
            self.expr(e);
            self.loop_depth -= usize::from(looping);
        })
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {}

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.mac(m);
    }
}

/// The in-place (or metadata, or `resize_`) method call `e` is, if any.
fn inplace_call(e: &Expr) -> Option<&ExprMethodCall> {
    match e {
        Expr::MethodCall(m)
            if matches!(
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
            ) =>
        {
            Some(m)
        }
        Expr::Paren(p) => inplace_call(&p.expr),
        _ => None,
    }
}
