//! The analysis walk of expressions: in-place ops (their receiver
//! classified, the place written marked), metadata ops and `resize_`, and
//! calls the macro cannot see into (tensors they receive by reference may
//! come back mutated).
//!
//! Input: `helper(&x.narrow(0, 0, 2))` (`x` an input).
//! Output: `x` marked mutated once (the view is written back through it).

use syn::visit::{self, Visit};
use syn::{Expr, ExprMethodCall, Pat};

use funcz_optable::{self as optable, OpKind};

use super::{Analyzer, Found, inplace_call};
use crate::lower::{QUERIES, Resolve, is_view_call, peel_inplace, stores_only};
use crate::params::Passing;
use crate::scope::Kind;

impl Analyzer<'_> {
    pub(super) fn expr(&mut self, e: &Expr) {
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
                let name = crate::fast::text(&m.method);
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

    pub(super) fn inplace_any(&mut self, m: &ExprMethodCall) {
        match optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind) {
            Some(OpKind::Inplace { .. }) => self.inplace_parts(&m.receiver, m.args.iter()),
            Some(OpKind::InplaceView { .. }) => self.meta(m),
            Some(OpKind::Resize) => self.resize(m),
            _ => visit::visit_expr_method_call(self, m),
        }
    }

    /// An in-place op on `recv` with `args`: its receiver is classified
    /// (see [`Resolve::classify_receiver`]) and a place is marked written.
    pub(super) fn inplace_parts<'e>(&mut self, recv: &Expr, args: impl Iterator<Item = &'e Expr>) {
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
    pub(super) fn target(&mut self, e: &Expr) -> Option<Found> {
        crate::lower::grow(|| self.target_inner(e))
    }

    pub(super) fn target_inner(&mut self, e: &Expr) -> Option<Found> {
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
            Expr::MethodCall(m) => {
                match optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind) {
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
                }
            }
            _ => None,
        };
        first.or_else(|| {
            if let Expr::Index(ix) = e
                && let Expr::MethodCall(m) = &*ix.expr
                && matches!(
                    optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
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
    pub(super) fn view_chain(&mut self, e: &Expr) -> Option<(usize, bool)> {
        let (multi, inner) = match e {
            Expr::MethodCall(m)
                if matches!(
                    optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                    Some(OpKind::MultiView { .. })
                ) =>
            {
                (Some(m), &*m.receiver)
            }
            _ => (None, e),
        };
        let is_view = matches!(inner, Expr::MethodCall(m) if matches!(
            optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
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

    pub(super) fn meta(&mut self, m: &ExprMethodCall) {
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

    pub(super) fn resize(&mut self, m: &ExprMethodCall) {
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
    pub(super) fn opaque(&mut self, e: &Expr) {
        let (passed, elems) = self.opaque_passed(e);
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
        for (id, _) in elems {
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
                // A view moved into the call: written back the same way.
                _ if is_view_call(a) && self.is_tensor_expr(a) && !stores_only(e) => {
                    self.visit_expr(a);
                    self.inplace_parts(a, std::iter::empty());
                }
                _ => self.visit_expr(a),
            }
        }
    }
}
