//! Entry checks on fields of struct parameters that are not tracked
//! places (`places.rs`): fields the body only reads as tensors, checked
//! not to share storage with a mutated input (`field_reads`), and fields
//! it compound-assigns without proving them tensors, checked at compile
//! time not to be tensors (`untracked_compounds`).
//!
//! Input: `fn f(x: &mut Tensor, cfg: &Cfg, st: &mut St) { x.add_(1.0);
//! st.n += 1.0; cfg.w.sum() }`.
//! Output: `[("cfg.w", cfg.w)]` and `[(st.n, <span>)]`, which
//! `expand.rs` turns into `rt::check_readers_disjoint(..)` and
//! `(&rt::CompoundProbe(&st.n)).not_a_tensor();` at entry.

use crate::fast::HashSet;

use syn::visit::{self, Visit};
use syn::{Block, Expr};

use crate::places::{Place, chain_start, loop_elements, op_kind, place_key, single_ident};

/// The key (`st.n`) of `e` if it is a field of one of `bases`, not bound
/// again so far (`rebound`), that neither is, lies in nor holds a tracked
/// place.
fn untracked_field(
    e: &Expr,
    bases: &HashSet<String>,
    rebound: &HashSet<String>,
    places: &[Place],
) -> Option<String> {
    let (base, key) = place_key(e)?;
    let tracked = places.iter().any(|p| {
        p.key == key
            || key.starts_with(&format!("{}.", p.key))
            || p.key.starts_with(&format!("{key}."))
    });
    (bases.contains(&base) && !rebound.contains(&base) && !tracked).then_some(key)
}

/// The fields of `bases` that the body compound-assigns (`st.n += 1.0`,
/// `st.counts[i] -= 1.0`, `*c += 1.0` in `for c in st.counts.iter_mut()`)
/// and that are not `places`: the body does not
/// use them as only a tensor is used (see [`find`]), so they are left as
/// written, and the entry checks at compile time that none is a tensor
/// (`rt::CompoundProbe`; a tensor's update would be left out of the
/// functional graph).
///
/// Input: `st.n += 1.0; x.add_(st.n.max(1.0));` with `st` a parameter.
/// Output: `[(st.n, <the span of st.n in `st.n += 1.0`>)]`.
pub(crate) fn untracked_compounds(
    block: &Block,
    bases: &HashSet<String>,
    places: &[Place],
) -> Vec<(Expr, proc_macro2::Span)> {
    struct Scan<'a> {
        bases: &'a HashSet<String>,
        places: &'a [Place],
        /// Loop variables over a field's elements, and names bound to an
        /// element, a reference or a view of a field (`for c in
        /// st.counts.iter_mut()`, `let e = &mut st.counts[0]`, `let v =
        /// &mut s.w`), with the field.
        elements: Vec<(String, Expr)>,
        /// Bases bound again so far (see [`bind_after_init`]).
        rebound: HashSet<String>,
        out: Vec<(String, Expr, proc_macro2::Span)>,
    }
    impl<'ast> Visit<'ast> for Scan<'_> {
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            let mut found = Vec::new();
            loop_elements(&f.pat, &f.expr, &mut found);
            for (name, list) in found {
                self.elements.push((name, list.clone()));
            }
            visit::visit_expr_for_loop(self, f);
        }
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let (syn::Pat::Ident(pi), Some(init)) = (&l.pat, &l.init) {
                let start = chain_start(&init.expr);
                if start.indexed || start.saw_view {
                    self.elements
                        .push((crate::fast::text(&pi.ident), start.expr.clone()));
                }
            }
            bind_after_init(self, l);
        }
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.rebound.insert(crate::fast::text(&p.ident));
            visit::visit_pat_ident(self, p);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if crate::lower::is_compound(&b.op) {
                let start = chain_start(&b.left);
                // `*c += 1.0` of a loop variable: the field it iterates.
                let start = match single_ident(start.expr)
                    .and_then(|n| self.elements.iter().rev().find(|(name, _)| *name == n))
                {
                    Some((_, list)) => list.clone(),
                    None => start.expr.clone(),
                };
                if let Some(key) = untracked_field(&start, self.bases, &self.rebound, self.places)
                    && !self.out.iter().any(|(k, _, _)| *k == key)
                {
                    // The error points at the assignment.
                    let span = syn::spanned::Spanned::span(&b.left);
                    self.out.push((key, start, span));
                }
            }
            visit::visit_expr_binary(self, b);
        }
        fn visit_item(&mut self, _i: &'ast syn::Item) {}
    }
    let mut scan = Scan {
        bases,
        places,
        elements: Vec::new(),
        rebound: HashSet::default(),
        out: Vec::new(),
    };
    scan.visit_block(block);
    scan.out.into_iter().map(|(_, e, s)| (e, s)).collect()
}

/// The fields of `bases` (struct parameters and `self`) that the body uses
/// as tensors without tracking them: the receivers' starts of op-table
/// methods (`cfg.w.add(..)`, `cfg.ws[0].sum()`) and operands taken by
/// reference (`&cfg.w`), other than `places`. The entry checks them against
/// the inputs the body mutates (`rt::check_readers_disjoint`).
///
/// Input: `x.add_(1.0); cfg.w.sum()` with `cfg` a struct parameter.
/// Output: `[("cfg.w", cfg.w)]`.
pub(crate) fn field_reads(
    block: &Block,
    bases: &HashSet<String>,
    places: &[Place],
) -> Vec<(String, Expr)> {
    struct Scan<'a> {
        bases: &'a HashSet<String>,
        places: &'a [Place],
        /// Bases bound again so far (see [`bind_after_init`]).
        rebound: HashSet<String>,
        out: Vec<(String, Expr)>,
    }
    impl Scan<'_> {
        fn note(&mut self, e: &Expr) {
            if let Some(key) = untracked_field(e, self.bases, &self.rebound, self.places)
                && !self.out.iter().any(|(k, _)| *k == key)
            {
                self.out.push((key, e.clone()));
            }
        }
    }
    impl<'ast> Visit<'ast> for Scan<'_> {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if op_kind(&crate::fast::text(&m.method)).is_some() {
                let start = chain_start(&m.receiver);
                self.note(start.expr);
            }
            visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
            let mut e = &*r.expr;
            if let Expr::Index(ix) = e {
                e = &ix.expr;
            }
            self.note(e);
            visit::visit_expr_reference(self, r);
        }
        fn visit_local(&mut self, l: &'ast syn::Local) {
            bind_after_init(self, l);
        }
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.rebound.insert(crate::fast::text(&p.ident));
            visit::visit_pat_ident(self, p);
        }
        fn visit_item(&mut self, _i: &'ast syn::Item) {}
    }
    let mut scan = Scan {
        bases,
        places,
        rebound: HashSet::default(),
        out: Vec::new(),
    };
    scan.visit_block(block);
    scan.out
}

/// Visits a `let`'s initializer before its pattern, as it runs: in `let s
/// = B { v: s.w.clone() };` the `s.w` is the parameter's, the `s` after it
/// another value. The entry checks name fields on the parameters, so the
/// scans that find them stop at a base's first new binding (a field of
/// the new value may not exist on the parameter's type: E0609 at the
/// user's line for code the original compiles).
fn bind_after_init<'ast, V: Visit<'ast>>(v: &mut V, l: &'ast syn::Local) {
    if let Some(init) = &l.init {
        v.visit_expr(&init.expr);
        if let Some((_, diverge)) = &init.diverge {
            v.visit_expr(diverge);
        }
    }
    v.visit_pat(&l.pat);
}
