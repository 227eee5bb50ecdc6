//! The analysis walk of statements and of the constructs that declare
//! bindings: `let` in all its forms, `for` loops, assignments (which may
//! make an unknown root a tensor), and macro arguments that are
//! expressions.
//!
//! Input: `let v = x.narrow(0, 0, 2);` (`x` an input).
//! Output: `v` declared as `Kind::Alias { root: x }`.

use syn::visit::{self, Visit};
use syn::{Expr, Pat, Stmt};

use funcz_optable::{self as optable, OpKind};

use super::Analyzer;
use crate::lower::{IterShape, Resolve};
use crate::scope::Kind;

impl Analyzer<'_> {
    pub(super) fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            // As code generation does (see `Resolve::split_chain`).
            if let Some(split) = self.split_chain(s) {
                self.stmts(&split);
                continue;
            }
            match s {
                Stmt::Local(l) => self.local(l),
                Stmt::Expr(e, _) => self.visit_expr(e),
                Stmt::Macro(m) => self.mac(&m.mac),
                Stmt::Item(_) => {}
            }
        }
    }

    pub(super) fn local(&mut self, local: &syn::Local) {
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
        if let Some(to) = self.ref_target(expr) {
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

    pub(super) fn tuple_local(&mut self, pat: &Pat, expr: &Expr) {
        let parts: Option<Vec<&Expr>> = match expr {
            Expr::Tuple(t) => Some(t.elems.iter().collect()),
            _ => None,
        };
        let fresh_tuple = matches!(expr, Expr::MethodCall(m)
            if matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
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

    pub(super) fn assign(&mut self, a: &syn::ExprAssign) {
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
        if let Some(kind) = self.kind_after_assign(id, &a.right) {
            self.scopes.bindings[id].kind = kind;
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

    pub(super) fn for_loop(&mut self, f: &syn::ExprForLoop) {
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

    pub(super) fn iter_expr(&mut self, e: &Expr, shape: &IterShape) {
        match (e, shape) {
            (_, IterShape::Coll(id)) if self.known.mutated.contains(id) => {}
            (Expr::MethodCall(m), IterShape::Enumerate(inner)) => {
                self.iter_expr(&m.receiver, inner)
            }
            (Expr::MethodCall(m), IterShape::Adapted(inner)) => {
                self.iter_expr(&m.receiver, inner);
                for a in &m.args {
                    self.visit_expr(a);
                }
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

    pub(super) fn bind_iter_pat(&mut self, pat: &Pat, shape: &IterShape) {
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
            (p, IterShape::Adapted(inner)) => self.bind_iter_pat(p, inner),
            (p, _) => self.declare_all(p, Kind::Other),
        }
    }

    /// A macro invocation whose arguments parse as expressions is walked
    /// like code (as `Lowerer::lower_macro` lowers it).
    pub(super) fn mac(&mut self, mac: &syn::Macro) {
        use syn::punctuated::Punctuated;
        // A macro that may write what it is given: an opaque call.
        if let Some((call, _)) = self.macro_as_call(mac) {
            return self.opaque(&call);
        }
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
