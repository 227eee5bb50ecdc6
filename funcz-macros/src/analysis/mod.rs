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

use crate::fast::HashSet;

use syn::visit::Visit;
use syn::{Block, Expr, ExprMethodCall, ItemFn, Pat};

use funcz_optable::{self as optable, OpKind};

use crate::lower::Resolve;
use crate::scope::{Facts, Kind, Scopes};

mod calls;
mod stmts;

/// Computes the facts of `func`'s body (see the module documentation).
pub(crate) fn analyze(
    func: &ItemFn,
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
        let mut found = a.found;
        found.declared = a.scopes.declared;
        let done = found.same_as(&known);
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
pub(super) enum Found {
    /// The binding written, and whether views lie between it and the value.
    Place(usize, bool),
    Refused,
}

impl Analyzer<'_> {
    pub(super) fn tracked_root(&self, root: usize) -> bool {
        self.known.mutated.contains(&root) || self.known.meta.contains(&root)
    }

    pub(super) fn based(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Root { .. }) && self.known.meta.contains(&id)
    }

    pub(super) fn has_state(&self, id: usize) -> bool {
        match self.scopes.kind(id) {
            Kind::Root { .. } => self.tracked_root(id),
            Kind::Alias { root } | Kind::Multi { root } => self.tracked_root(*root),
            _ => false,
        }
    }

    pub(super) fn has_aliases(&self, root: usize) -> bool {
        self.scopes.bindings.iter().any(
            |b| matches!(b.kind, Kind::Alias { root: r } | Kind::Multi { root: r } if r == root),
        ) || self.based(root)
    }

    pub(super) fn captured(&self, id: usize) -> bool {
        self.closure_floor.last().is_some_and(|&floor| id < floor)
    }

    /// Binding `id` is written: its root (or collection) is mutated.
    pub(super) fn mark(&mut self, id: usize) {
        self.found.mark(&self.scopes, id);
    }

    pub(super) fn declare_pat(&mut self, pat: &Pat, kind: Kind) {
        match pat {
            Pat::Ident(pi) => {
                self.scopes.declare(&pi.ident, kind);
            }
            Pat::Type(pt) => self.declare_pat(&pt.pat, kind),
            other => self.declare_all(other, Kind::Other),
        }
    }

    pub(super) fn declare_all(&mut self, pat: &Pat, kind: Kind) {
        for ident in crate::lower::pat_idents(pat) {
            self.scopes.declare(&ident, kind.clone());
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
pub(super) fn inplace_call(e: &Expr) -> Option<&ExprMethodCall> {
    match e {
        Expr::MethodCall(m)
            if matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
            ) =>
        {
            Some(m)
        }
        Expr::Paren(p) => inplace_call(&p.expr),
        _ => None,
    }
}
