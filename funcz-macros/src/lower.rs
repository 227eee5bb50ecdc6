//! Rewrites a function body: in-place ops become functional ops whose
//! results are committed back into their roots, views become tracked
//! aliases (or `*_copy`s), stale aliases are regenerated where they are
//! used, and every exit writes mutated inputs back.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, Ident, Pat, Stmt, Token, parse_quote};

use funcz_runtime::optable::{self, OpKind};

use crate::ctxt::Ctxt;
use crate::params::{Passing, is_tensor_type};
use crate::scope::{Facts, Kind, Scopes, base_ident, base_state_ident, state_ident};

/// Read-only `Tensor` methods that are not ops (queries): calling them is
/// never a mutation.
const QUERIES: &[&str] = &[
    "shape",
    "size",
    "strides",
    "numel",
    "dim",
    "is_contiguous",
    "to_vec",
    "item",
    "to_ndarray",
    "allclose",
    "equal",
    "version",
    "id",
    "same_storage",
    "storage_offset",
    "layout",
    "storage_use_count",
    "len",
    "is_empty",
];

type Args = Punctuated<Expr, Token![,]>;

/// One view applied on the way from a place to the mutated tensor.
#[derive(Clone)]
enum Step {
    View(Ident, Args),
    MultiOut(Ident, Args, Expr),
}

/// Where a tensor lives: a variable, or an element of a collection.
#[derive(Clone)]
enum Place {
    Var(usize),
    Index(usize, Expr),
}

#[allow(clippy::large_enum_variant)] // short-lived, one per in-place call
enum Target {
    Place {
        prelude: Vec<Stmt>,
        place: Place,
        steps: Vec<Step>,
    },
    Refused,
}

#[derive(Clone, Copy, PartialEq)]
enum Want {
    Nothing,
    Value,
    Bound,
}

pub(crate) struct Lowerer<'a> {
    pub cx: &'a Ctxt,
    pub mode: TokenStream,
    pub facts: Facts,
    pub found: Facts,
    pub scopes: Scopes,
    pub report: bool,
    pub fn_name: String,
    /// Statements that write mutated inputs back (emitted at every exit).
    pub exit: Vec<Stmt>,
    pre: Vec<Vec<Stmt>>,
    closure_floor: Vec<usize>,
}

fn rt() -> TokenStream {
    quote!(::funcz::rt)
}

fn tmp(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

impl<'a> Lowerer<'a> {
    pub fn new(
        cx: &'a Ctxt,
        mode: TokenStream,
        facts: Facts,
        report: bool,
        fn_name: String,
    ) -> Self {
        Lowerer {
            cx,
            mode,
            facts,
            found: Facts::default(),
            scopes: Scopes::default(),
            report,
            fn_name,
            exit: Vec::new(),
            pre: Vec::new(),
            closure_floor: Vec::new(),
        }
    }

    fn error(
        &self,
        tokens: impl ToTokens,
        msg: impl std::fmt::Display,
        help: impl std::fmt::Display,
    ) {
        if self.report {
            self.cx.error(tokens, msg, help);
        }
    }

    // ---------- facts about bindings ----------

    fn copies(&self) -> bool {
        self.mode.to_string().contains("Copies")
    }

    fn tracked_root(&self, root: usize) -> bool {
        self.facts.mutated.contains(&root) || self.facts.meta.contains(&root)
    }

    fn based(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Root { .. }) && self.facts.meta.contains(&id)
    }

    /// True if binding `id` carries a `Tracked` state.
    fn has_state(&self, id: usize) -> bool {
        match self.scopes.kind(id) {
            Kind::Root { .. } => self.tracked_root(id),
            Kind::Alias { root } | Kind::Multi { root } => self.tracked_root(*root),
            _ => false,
        }
    }

    /// The variable holding the root's data, and its state.
    fn root_value_state(&self, root: usize) -> (TokenStream, TokenStream) {
        if self.based(root) {
            let (b, s) = (base_ident(root), base_state_ident(root));
            (quote!(#b), quote!(#s))
        } else {
            let (v, s) = (self.scopes.ident(root).clone(), state_ident(root));
            (quote!(#v), quote!(#s))
        }
    }

    fn mark_mutated(&mut self, id: usize) {
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } | Kind::Coll { .. } => {
                self.found.mutated.insert(id);
            }
            Kind::Alias { root } | Kind::Multi { root } => {
                self.found.mutated.insert(root);
            }
            Kind::ElemRef { coll } => {
                self.found.mutated.insert(coll);
            }
            _ => {}
        }
    }

    fn captured(&self, id: usize) -> bool {
        self.closure_floor.last().is_some_and(|&floor| id < floor)
    }

    fn binding_of(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Path(p)
                if p.qself.is_none()
                    && p.path.segments.len() == 1
                    && p.path.leading_colon.is_none() =>
            {
                self.scopes.lookup(&p.path.segments[0].ident.to_string())
            }
            Expr::Paren(p) => self.binding_of(&p.expr),
            Expr::Group(g) => self.binding_of(&g.expr),
            _ => None,
        }
    }

    fn is_tensor_binding(&self, id: usize) -> bool {
        matches!(
            self.scopes.kind(id),
            Kind::Root { known: true, .. }
                | Kind::Alias { .. }
                | Kind::ElemRef { .. }
                | Kind::Ambiguous
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
            Expr::Paren(p) => self.is_tensor_expr(&p.expr),
            Expr::Group(g) => self.is_tensor_expr(&g.expr),
            Expr::Reference(r) => self.is_tensor_expr(&r.expr),
            Expr::Unary(u) => self.is_tensor_expr(&u.expr),
            Expr::Binary(b) => self.is_tensor_expr(&b.left) || self.is_tensor_expr(&b.right),
            Expr::Index(i) => self.binding_of(&i.expr).is_some_and(|id| {
                matches!(self.scopes.kind(id), Kind::Coll { .. } | Kind::Multi { .. })
            }),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => p.path.segments.iter().any(|s| s.ident == "Tensor"),
                _ => false,
            },
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
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

    // ---------- blocks and statements ----------

    fn push_pre(&mut self, s: Stmt) {
        if let Some(list) = self.pre.last_mut() {
            let text = s.to_token_stream().to_string();
            if !list.iter().any(|o| o.to_token_stream().to_string() == text) {
                list.push(s);
            }
        }
    }

    /// Ensures the alias `id` is current before the statement being lowered.
    fn need_sync(&mut self, id: usize) {
        if !self.has_state(id) {
            return;
        }
        let mode = self.mode.clone();
        let rt = rt();
        match self.scopes.kind(id).clone() {
            Kind::Alias { root } => {
                let v = self.scopes.ident(id).clone();
                let s = state_ident(id);
                let (rv, rs) = self.root_value_state(root);
                self.push_pre(parse_quote!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs, #mode);));
            }
            Kind::Multi { root } => {
                let v = self.scopes.ident(id).clone();
                let s = state_ident(id);
                let (rv, rs) = self.root_value_state(root);
                self.push_pre(parse_quote!(#rt::sync_all(&mut #v, &mut #s, &#rv, &#rs, #mode);));
            }
            Kind::Root { .. } if self.based(id) => {
                let v = self.scopes.ident(id).clone();
                let s = state_ident(id);
                let (rv, rs) = self.root_value_state(id);
                self.push_pre(parse_quote!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs, #mode);));
            }
            _ => {}
        }
    }

    pub fn lower_stmts(&mut self, stmts: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::new();
        for stmt in stmts {
            self.pre.push(Vec::new());
            let lowered = self.lower_stmt(stmt);
            let pre = self.pre.pop().unwrap_or_default();
            out.extend(pre);
            out.extend(lowered);
        }
        out
    }

    fn lower_stmt(&mut self, stmt: Stmt) -> Vec<Stmt> {
        match stmt {
            Stmt::Local(local) => self.lower_local(local),
            Stmt::Expr(e, semi) => {
                if let Some(lowered) = self.try_inplace(
                    &e,
                    if semi.is_some() {
                        Want::Nothing
                    } else {
                        Want::Value
                    },
                ) {
                    return vec![Stmt::Expr(lowered, semi)];
                }
                let mut e = e;
                self.visit_expr_mut(&mut e);
                vec![Stmt::Expr(e, semi)]
            }
            Stmt::Macro(mut m) => {
                self.check_macro(&m.mac);
                let _ = &mut m;
                vec![Stmt::Macro(m)]
            }
            other => vec![other],
        }
    }

    fn declare_pat(&mut self, pat: &mut Pat, kind: Kind) {
        match pat {
            Pat::Ident(pi) => {
                if matches!(
                    kind,
                    Kind::Root { .. } | Kind::Alias { .. } | Kind::Multi { .. }
                ) && pi.by_ref.is_none()
                {
                    pi.mutability = Some(Token![mut](pi.ident.span()));
                }
                self.scopes.declare(&pi.ident, kind);
            }
            Pat::Type(pt) => self.declare_pat(&mut pt.pat, kind),
            other => self.declare_other(other),
        }
    }

    /// Declares every identifier a pattern binds as a non-tensor.
    fn declare_other(&mut self, pat: &Pat) {
        struct Collect<'b>(&'b mut Vec<Ident>);
        impl<'ast, 'b> syn::visit::Visit<'ast> for Collect<'b> {
            fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
                self.0.push(p.ident.clone());
                syn::visit::visit_pat_ident(self, p);
            }
        }
        let mut ids = Vec::new();
        syn::visit::Visit::visit_pat(&mut Collect(&mut ids), pat);
        for id in ids {
            self.scopes.declare(&id, Kind::Other);
        }
    }

    fn pat_ident(pat: &Pat) -> Option<Ident> {
        match pat {
            Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => Some(pi.ident.clone()),
            Pat::Type(pt) => Self::pat_ident(&pt.pat),
            _ => None,
        }
    }

    fn pat_is_tensor_typed(pat: &Pat) -> bool {
        matches!(pat, Pat::Type(pt) if is_tensor_type(&pt.ty))
    }

    fn lower_local(&mut self, mut local: syn::Local) -> Vec<Stmt> {
        let Some(init) = local.init.take() else {
            self.declare_other(&local.pat);
            return vec![Stmt::Local(local)];
        };
        if init.diverge.is_some() || Self::pat_ident(&local.pat).is_none() {
            let mut init = init;
            self.visit_expr_mut(&mut init.expr);
            self.declare_other(&local.pat);
            local.init = Some(init);
            return vec![Stmt::Local(local)];
        }
        let ident = Self::pat_ident(&local.pat).expect("checked above");
        let expr = *init.expr;
        let rt = rt();
        let mode = self.mode.clone();

        // `let c = <in-place op>;` : c is the receiver (an alias of its root).
        if self.is_inplace_call(&expr) {
            let root = self.target_root_of(&expr);
            if let Some(root) = root.filter(|&r| self.tracked_root(r)) {
                let lowered = self
                    .try_inplace(&expr, Want::Bound)
                    .expect("an in-place call");
                let id = self.scopes.declare(&ident, Kind::Alias { root });
                let s = state_ident(id);
                return vec![parse_quote!(let (mut #ident, mut #s) = #lowered;)];
            }
            let lowered = self
                .try_inplace(&expr, Want::Value)
                .expect("an in-place call");
            let kind = match root {
                Some(r) => Kind::Alias { root: r },
                None => Kind::Root {
                    input: None,
                    known: true,
                },
            };
            self.declare_pat(&mut local.pat, kind);
            local.init = Some(syn::LocalInit {
                eq_token: init.eq_token,
                expr: Box::new(lowered),
                diverge: None,
            });
            return vec![Stmt::Local(local)];
        }

        // `let v = <view chain of a place>;`
        if let Some((prelude, place, steps, multi)) = self.view_chain(&expr) {
            let root = self.place_root(&place);
            if let Some(root) = root {
                let kind = if multi.is_some() {
                    Kind::Multi { root }
                } else {
                    Kind::Alias { root }
                };
                if self.tracked_root(root) {
                    let (mut stmts, v, s) = self.emit_steps(prelude, &place, &steps);
                    let id = self.scopes.declare(&ident, kind);
                    let st = state_ident(id);
                    if let Some((method, args)) = multi {
                        stmts.push(parse_quote!(
                            let (mut #ident, mut #st) = #rt::multi_view(&#v, &#s, #rt::MultiMeta::#method(#args), #mode);
                        ));
                    } else {
                        stmts.push(parse_quote!(let (mut #ident, mut #st) = (#v, #s);));
                    }
                    return stmts;
                }
                // Root never mutated: the alias is a plain value.
                let value = self.plain_value(&expr);
                self.declare_pat(&mut local.pat, kind);
                local.init = Some(syn::LocalInit {
                    eq_token: init.eq_token,
                    expr: Box::new(value),
                    diverge: None,
                });
                return vec![Stmt::Local(local)];
            }
        }

        // Anything else: a fresh root if it is a tensor.
        let known = self.is_tensor_expr(&expr) || Self::pat_is_tensor_typed(&local.pat);
        let tensor = known || matches!(&expr, Expr::Call(_) | Expr::MethodCall(_));
        let ambiguous = self.mixes_aliases(&expr);
        let mut expr = expr;
        self.visit_expr_mut(&mut expr);
        local.init = Some(syn::LocalInit {
            eq_token: init.eq_token,
            expr: Box::new(expr),
            diverge: None,
        });
        if ambiguous {
            self.declare_pat(&mut local.pat, Kind::Ambiguous);
            return vec![Stmt::Local(local)];
        }
        if !tensor {
            self.declare_other(&local.pat);
            return vec![Stmt::Local(local)];
        }
        self.declare_pat(&mut local.pat, Kind::Root { input: None, known });
        let id = self
            .scopes
            .lookup(&ident.to_string())
            .expect("just declared");
        let mut out = vec![Stmt::Local(local)];
        out.extend(self.root_prologue(id));
        out
    }

    /// State (and hidden base) for a root that is mutated or re-laid-out.
    pub fn root_prologue(&self, id: usize) -> Vec<Stmt> {
        let rt = rt();
        let v = self.scopes.ident(id).clone();
        let s = state_ident(id);
        if self.based(id) {
            let (b, bs) = (base_ident(id), base_state_ident(id));
            vec![
                parse_quote!(let mut #b = #rt::handle(&#v);),
                parse_quote!(let mut #bs = #rt::Tracked::root(&#b);),
                parse_quote!(let mut #s = #bs.clone();),
            ]
        } else if self.tracked_root(id) {
            vec![parse_quote!(let mut #s = #rt::Tracked::root(&#v);)]
        } else {
            Vec::new()
        }
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
                Expr::MethodCall(m) => match optable::lookup(&m.method.to_string()).map(|i| i.kind)
                {
                    Some(
                        OpKind::View { .. } | OpKind::MaybeView { .. } | OpKind::MultiView { .. },
                    ) => {
                        saw_view = true;
                        cur = &m.receiver;
                    }
                    _ => return None,
                },
                Expr::Paren(p) => cur = &p.expr,
                _ => {
                    let id = self.binding_of(cur)?;
                    return if saw_view {
                        self.scopes.root_of(id)
                    } else {
                        None
                    };
                }
            }
        }
    }

    // ---------- in-place ops ----------

    fn is_inplace_call(&self, e: &Expr) -> bool {
        match e {
            Expr::MethodCall(m) => matches!(
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
            ),
            Expr::Paren(p) => self.is_inplace_call(&p.expr),
            _ => false,
        }
    }

    /// The root an in-place expression mutates, if it is a tracked place.
    fn target_root_of(&self, e: &Expr) -> Option<usize> {
        match e {
            Expr::MethodCall(m) => {
                let mut cur: &Expr = &m.receiver;
                loop {
                    match cur {
                        Expr::MethodCall(mm) => cur = &mm.receiver,
                        Expr::Paren(p) => cur = &p.expr,
                        Expr::Index(i) => cur = &i.expr,
                        Expr::Unary(u) => cur = &u.expr,
                        _ => break,
                    }
                }
                self.binding_of(cur).and_then(|id| self.scopes.root_of(id))
            }
            Expr::Paren(p) => self.target_root_of(&p.expr),
            _ => None,
        }
    }

    /// Peels views off `e` down to a place: returns (prelude, place, views
    /// from the place outward, and the multi-output view on top, if any).
    #[allow(clippy::type_complexity)]
    fn view_chain(
        &mut self,
        e: &Expr,
    ) -> Option<(Vec<Stmt>, Place, Vec<Step>, Option<(Ident, Args)>)> {
        let (mut multi, inner) = match e {
            Expr::MethodCall(m)
                if matches!(
                    optable::lookup(&m.method.to_string()).map(|i| i.kind),
                    Some(OpKind::MultiView { .. })
                ) =>
            {
                (Some((m.method.clone(), m.args.clone())), &*m.receiver)
            }
            _ => (None, e),
        };
        let is_view = |e: &Expr| {
            matches!(e, Expr::MethodCall(m) if matches!(
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
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

    fn place_root(&self, place: &Place) -> Option<usize> {
        match place {
            Place::Var(id) | Place::Index(id, _) => self.scopes.root_of(*id),
        }
    }

    /// Classifies the receiver of an in-place op (or of a view chain).
    fn target(&mut self, e: &Expr) -> Option<Target> {
        match e {
            Expr::Paren(p) => self.target(&p.expr),
            Expr::Group(g) => self.target(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let id = self.binding_of(&u.expr)?;
                matches!(self.scopes.kind(id), Kind::ElemRef { .. } | Kind::Root { .. }).then(|| Target::Place {
                    prelude: Vec::new(),
                    place: Place::Var(id),
                    steps: Vec::new(),
                })
            }
            Expr::Path(_) => {
                let id = self.binding_of(e)?;
                match self.scopes.kind(id) {
                    Kind::Root { .. } | Kind::Alias { .. } | Kind::ElemRef { .. } => Some(Target::Place {
                        prelude: Vec::new(),
                        place: Place::Var(id),
                        steps: Vec::new(),
                    }),
                    Kind::Ambiguous => {
                        self.error(
                            e,
                            format!(
                                "cannot tell statically which tensor `{}` is a view of, so its mutation cannot be \
                                 written back",
                                self.scopes.ident(id)
                            ),
                            "make the view in one place after the branch (e.g. compute the index in the `if` and \
                             call `.narrow(..)` once), or `.clone()` it in each branch",
                        );
                        Some(Target::Refused)
                    }
                    _ => None,
                }
            }
            Expr::Index(ix) => match self.binding_of(&ix.expr).map(|id| (id, self.scopes.kind(id).clone())) {
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
                let kind = optable::lookup(&m.method.to_string()).map(|i| i.kind);
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
                                Some(Target::Place { prelude, place, steps })
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
                                Some(Target::Place { prelude, place, steps })
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
                    optable::lookup(&m.method.to_string()).map(|i| i.kind),
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
                return Some(Target::Place { prelude, place, steps });
            }
            None
        })
    }

    /// Emits the views of `steps` from `place`; returns the statements and
    /// the variables holding the final value and its state.
    fn emit_steps(
        &mut self,
        prelude: Vec<Stmt>,
        place: &Place,
        steps: &[Step],
    ) -> (Vec<Stmt>, TokenStream, TokenStream) {
        let (stmts, _, _, v, s) = self.emit_steps_from(prelude, place, steps);
        (stmts, v, s)
    }

    /// Like `emit_steps`, also returning the place's own value and state.
    #[allow(clippy::type_complexity)]
    fn emit_steps_from(
        &mut self,
        prelude: Vec<Stmt>,
        place: &Place,
        steps: &[Step],
    ) -> (
        Vec<Stmt>,
        TokenStream,
        TokenStream,
        TokenStream,
        TokenStream,
    ) {
        let rt = rt();
        let mode = self.mode.clone();
        let mut stmts = prelude;
        let (pv, ps) = self.place_value_state(place, &mut stmts);
        let (mut v, mut s) = (pv.clone(), ps.clone());
        for (k, step) in steps.iter().enumerate() {
            let nv = format_ident!("__fz_view_{}", k, span = Span::mixed_site());
            let ns = format_ident!("__fz_view_state_{}", k, span = Span::mixed_site());
            match step {
                Step::View(method, args) => stmts.push(parse_quote!(
                    let (mut #nv, mut #ns) = #rt::view(&#v, &#s, #rt::ViewMeta::#method(#args), #mode);
                )),
                Step::MultiOut(method, args, index) => stmts.push(parse_quote!(
                    let (mut #nv, mut #ns) = #rt::multi_out(&#v, &#s, #rt::MultiMeta::#method(#args), #index, #mode);
                )),
            }
            v = quote!(#nv);
            s = quote!(#ns);
        }
        (stmts, pv, ps, v, s)
    }

    /// The value and state expressions of a place (binding temporaries for
    /// indices and for roots that carry no state).
    fn place_value_state(
        &mut self,
        place: &Place,
        stmts: &mut Vec<Stmt>,
    ) -> (TokenStream, TokenStream) {
        let rt = rt();
        match place {
            Place::Var(id) => {
                let id = *id;
                let v = self.scopes.ident(id).clone();
                match self.scopes.kind(id).clone() {
                    Kind::ElemRef { .. } => {
                        let ts = tmp("__fz_elem_state");
                        stmts.push(parse_quote!(let mut #ts = #rt::Tracked::root(&*#v);));
                        (quote!((*#v)), quote!(#ts))
                    }
                    _ if self.has_state(id) => {
                        self.need_sync(id);
                        let s = state_ident(id);
                        (quote!(#v), quote!(#s))
                    }
                    _ => {
                        let ts = tmp("__fz_root_state");
                        stmts.push(parse_quote!(let mut #ts = #rt::Tracked::root(&#v);));
                        (quote!(#v), quote!(#ts))
                    }
                }
            }
            Place::Index(id, index) => {
                let id = *id;
                let v = self.scopes.ident(id).clone();
                let i = tmp("__fz_index");
                stmts.push(parse_quote!(let #i: usize = #index;));
                match self.scopes.kind(id).clone() {
                    Kind::Multi { .. } if self.has_state(id) => {
                        self.need_sync(id);
                        let s = state_ident(id);
                        (quote!(#v[#i]), quote!(#s[#i]))
                    }
                    _ => {
                        let ts = tmp("__fz_elem_state");
                        stmts.push(parse_quote!(let mut #ts = #rt::Tracked::root(&#v[#i]);));
                        (quote!(#v[#i]), quote!(#ts))
                    }
                }
            }
        }
    }

    /// The root value and state a mutation of `place` is committed into.
    fn commit_root_of(&self, place: &Place) -> Option<(TokenStream, TokenStream)> {
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

    /// Lowers `e` if it is an in-place op call; `None` otherwise.
    fn try_inplace(&mut self, e: &Expr, want: Want) -> Option<Expr> {
        let m = match e {
            Expr::MethodCall(m) => m,
            Expr::Paren(p) => return self.try_inplace(&p.expr, want),
            _ => return None,
        };
        let name = m.method.to_string();
        let info = optable::lookup(&name)?;
        match info.kind {
            OpKind::Inplace { functional } => Some(self.lower_inplace(m, functional, want)),
            OpKind::InplaceView { view } => Some(self.lower_meta(m, view, want)),
            OpKind::Resize => Some(self.lower_resize(m)),
            _ => None,
        }
    }

    fn refuse_in_closure(&self, m: &syn::ExprMethodCall, root: Option<usize>) -> bool {
        if self.closure_floor.is_empty() {
            return false;
        }
        let captured = root.is_none_or(|r| self.captured(r));
        if captured {
            self.error(
                m,
                format!(
                    "in-place `{}` inside a closure on a tensor from outside the closure: #[functionalize] cannot \
                     see when the closure runs, so it cannot write the mutation back",
                    m.method
                ),
                "write the loop as a `for` loop in the function body, or use the out-of-place op and return the \
                 new value from the closure",
            );
        }
        captured
    }

    fn lower_inplace(&mut self, m: &syn::ExprMethodCall, functional: &str, want: Want) -> Expr {
        let rt = rt();
        let mode = self.mode.clone();
        let op = m.method.to_string();
        let fname = Ident::new(functional, m.method.span());
        let mut args = m.args.clone();
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        let root = self.target_root_of(&Expr::MethodCall(m.clone()));
        if self.refuse_in_closure(m, root) {
            return Expr::MethodCall(m.clone());
        }
        let target = self.target(&m.receiver);
        match target {
            None => {
                if self.is_tensor_expr(&m.receiver)
                    || matches!(&*m.receiver, Expr::Call(_) | Expr::MethodCall(_))
                {
                    let mut recv = (*m.receiver).clone();
                    self.visit_expr_mut(&mut recv);
                    return parse_quote!(#recv.#fname(#args));
                }
                self.error(
                    &m.receiver,
                    format!(
                        "in-place `{op}` on `{}`, a value #[functionalize] cannot track (it is not a tensor \
                         parameter or a tensor made in this function)",
                        m.receiver.to_token_stream()
                    ),
                    "pass the tensor as a parameter (`&Tensor`, `&mut Tensor`, `&mut [Tensor]`), or bind it with \
                     a type: `let x: Tensor = ...;`",
                );
                Expr::MethodCall(m.clone())
            }
            Some(Target::Refused) => Expr::MethodCall(m.clone()),
            Some(Target::Place {
                prelude,
                place,
                steps,
            }) => {
                match &place {
                    Place::Var(id) | Place::Index(id, _) => self.mark_mutated(*id),
                }
                let direct_root = steps.is_empty() && self.commit_root_of(&place).is_none();
                if direct_root {
                    return self.commit_direct(prelude, &place, &fname, &args, &op, want);
                }
                let (mut stmts, pv, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                // An alias commits into its root; views of a root place
                // commit into the place itself.
                let (rv, rs) = self.commit_root_of(&place).unwrap_or((pv, ps));
                let new = tmp("__fz_new");
                let functional = vec![
                    parse_quote!(let #new = #v.#fname(#args);),
                    parse_quote!(#rt::commit(#op, &mut #rv, &mut #rs, &mut #v, &mut #s, #new, #mode);),
                ];
                let fname_str = fname.to_string();
                stmts.extend(donating_update(
                    quote!(#rt::can_donate_alias(&#rv, &#rs, &#v, &#s)),
                    {
                        let method = &m.method;
                        quote!(#v.#method(#args);)
                    },
                    parse_quote!(#rt::commit_donated(#op, #fname_str, &mut #rv, &mut #rs, &mut #v, &mut #s, #mode);),
                    functional,
                    &args,
                ));
                let tail: Expr = match want {
                    Want::Nothing => return parse_quote!({ #(#stmts)* }),
                    Want::Value => parse_quote!(#rt::handle(&#v)),
                    Want::Bound => parse_quote!((#rt::handle(&#v), #s.clone())),
                };
                parse_quote!({ #(#stmts)* #tail })
            }
        }
    }

    /// In-place op directly on a root place: a functional update.
    fn commit_direct(
        &mut self,
        prelude: Vec<Stmt>,
        place: &Place,
        f: &Ident,
        args: &Args,
        op: &str,
        want: Want,
    ) -> Expr {
        let rt = rt();
        let mut stmts = prelude;
        let new = tmp("__fz_new");
        let (value, state): (TokenStream, Option<TokenStream>) = match place {
            Place::Var(id) => {
                let v = self.scopes.ident(*id).clone();
                match self.scopes.kind(*id) {
                    Kind::ElemRef { .. } => (quote!((*#v)), None),
                    _ if self.has_state(*id) => {
                        let s = state_ident(*id);
                        (quote!(#v), Some(quote!(#s)))
                    }
                    _ => (quote!(#v), None),
                }
            }
            Place::Index(id, index) => {
                let v = self.scopes.ident(*id).clone();
                let i = tmp("__fz_index");
                stmts.push(parse_quote!(let #i: usize = #index;));
                (quote!(#v[#i]), None)
            }
        };
        let mut functional: Vec<Stmt> = vec![parse_quote!(let #new = #value.#f(#args);)];
        match &state {
            Some(s) => {
                functional.push(parse_quote!(#rt::commit_root(#op, &mut #value, &mut #s, #new);))
            }
            None => functional.push(parse_quote!(#value = #new;)),
        }
        let inplace = Ident::new(op, f.span());
        let fname = f.to_string();
        let donated: Stmt = match &state {
            Some(s) => parse_quote!(#rt::donated_root(#op, #fname, &mut #value, &mut #s);),
            None => parse_quote!(#rt::donated(#fname, &mut #value);),
        };
        stmts.extend(donating_update(
            quote!(#rt::can_donate(&mut #value)),
            quote!(#value.#inplace(#args);),
            donated,
            functional,
            args,
        ));
        let tail: Expr = match (want, &state) {
            (Want::Nothing, _) => return parse_quote!({ #(#stmts)* }),
            (Want::Value, _) => parse_quote!(#rt::handle(&#value)),
            (Want::Bound, Some(s)) => parse_quote!((#rt::handle(&#value), #s.clone())),
            (Want::Bound, None) => {
                parse_quote!((#rt::handle(&#value), #rt::Tracked::root(&#value)))
            }
        };
        parse_quote!({ #(#stmts)* #tail })
    }

    fn lower_meta(&mut self, m: &syn::ExprMethodCall, view: &str, want: Want) -> Expr {
        let rt = rt();
        let mode = self.mode.clone();
        let meta = Ident::new(view, m.method.span());
        let mut args = m.args.clone();
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        let Some(id) = self.binding_of(&m.receiver) else {
            let mut e = Expr::MethodCall(m.clone());
            visit_mut::visit_expr_mut(self, &mut e);
            return e;
        };
        let v = self.scopes.ident(id).clone();
        let tail: Expr = if want == Want::Nothing {
            parse_quote!(())
        } else {
            parse_quote!(#rt::handle(&#v))
        };
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } if !self.based(id) => {
                self.found.meta.insert(id);
                parse_quote!({ #v = #rt::view_value(&#v, #rt::ViewMeta::#meta(#args), #mode); #tail })
            }
            Kind::Root { .. } | Kind::Alias { .. } if self.has_state(id) => {
                if let Kind::Root { .. } = self.scopes.kind(id) {
                    self.found.meta.insert(id);
                }
                self.need_sync(id);
                let s = state_ident(id);
                parse_quote!({ #rt::meta_inplace(&mut #v, &mut #s, #rt::ViewMeta::#meta(#args), #mode); #tail })
            }
            Kind::Alias { .. } => {
                parse_quote!({ #v = #rt::view_value(&#v, #rt::ViewMeta::#meta(#args), #mode); #tail })
            }
            _ => {
                let mut e = Expr::MethodCall(m.clone());
                visit_mut::visit_expr_mut(self, &mut e);
                e
            }
        }
    }

    fn lower_resize(&mut self, m: &syn::ExprMethodCall) -> Expr {
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
                let v = self.scopes.ident(id).clone();
                if self.has_state(id) {
                    let s = state_ident(id);
                    parse_quote!({ let __fz_new = #rt::resized(&#v, #args); #rt::commit_root("resize_", &mut #v, &mut #s, __fz_new); #rt::handle(&#v) })
                } else {
                    parse_quote!({ #v = #rt::resized(&#v, #args); #rt::handle(&#v) })
                }
            }
            _ => {
                self.error(
                    m,
                    "`resize_` on a view: functionalization cannot grow a tensor that shares its storage \
                     (\"Attempted to resize a view tensor to a larger size\")",
                    "resize a fresh tensor (e.g. `.clone()` the view first), or build the new tensor with \
                     `Tensor::zeros` and copy into a `narrow` of it",
                );
                Expr::MethodCall(m.clone())
            }
        }
    }

    /// A view chain only read: plain view values (or `*_copy`s by mode).
    fn plain_value(&mut self, e: &Expr) -> Expr {
        let mut e = e.clone();
        self.visit_expr_mut(&mut e);
        e
    }

    // ---------- exits ----------

    fn exit_block(&self, value: Expr, pure: bool, ret: bool) -> Expr {
        let wb = &self.exit;
        if pure {
            if ret {
                parse_quote!({ #(#wb)* return #value; })
            } else {
                parse_quote!({ #(#wb)* #value })
            }
        } else {
            let r = tmp("__fz_ret");
            if ret {
                parse_quote!({ let #r = #value; #(#wb)* return #r; })
            } else {
                parse_quote!({ let #r = #value; #(#wb)* #r })
            }
        }
    }

    /// Wraps the function's tail expression with the input write-backs.
    pub fn lower_tail(&mut self, e: Expr) -> Expr {
        if self.exit.is_empty() {
            return e;
        }
        let pure = !has_effects(&e);
        self.exit_block(e, pure, false)
    }

    fn check_macro(&mut self, mac: &syn::Macro) {
        let mut found: Option<(Ident, TokenTree)> = None;
        scan_tokens(mac.tokens.clone(), &mut |prev_dot, ident: &Ident| {
            if prev_dot
                && found.is_none()
                && matches!(
                    optable::lookup(&ident.to_string()).map(|i| i.kind),
                    Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
                )
            {
                found = Some((ident.clone(), TokenTree::Ident(ident.clone())));
            }
        });
        if let Some((ident, _)) = found {
            self.error(
                &ident,
                format!(
                    "in-place `{ident}` inside a macro invocation: #[functionalize] cannot see into macro arguments"
                ),
                "do the in-place op in its own statement before the macro call",
            );
        }
        // Aliases read by the macro must be current.
        let mut names = Vec::new();
        scan_tokens(mac.tokens.clone(), &mut |_, ident: &Ident| {
            names.push(ident.to_string())
        });
        for n in names {
            if let Some(id) = self.scopes.lookup(&n) {
                self.need_sync(id);
            }
        }
    }
}

/// A functional update with buffer donation: `if test { inplace; donated }
/// else { functional }`. When the runtime `test` says nobody else can
/// observe the old value's buffer, the in-place op runs on it and `donated`
/// gives the result a fresh identity, recorded as the functional op;
/// otherwise the `functional` statements compute a fresh value and commit
/// it. The test runs before the arguments are evaluated, and the arguments
/// are written in both branches (exactly one runs), so this is only done
/// for short arguments that call no user code ([`pure_args`]); otherwise
/// just the `functional` statements are emitted.
fn donating_update(
    test: TokenStream,
    inplace: TokenStream,
    donated: Stmt,
    functional: Vec<Stmt>,
    args: &Args,
) -> Vec<Stmt> {
    if !pure_args(args) {
        return functional;
    }
    vec![Stmt::Expr(
        parse_quote!(if #test {
            #inplace
            #donated
        } else {
            #(#functional)*
        }),
        Some(Default::default()),
    )]
}

/// True if the (lowered) arguments of an in-place op are short and made
/// only of literals, variables, operators, indexing, field accesses, tensor
/// ops and queries, and funcz's runtime helpers: evaluating them calls no
/// user function or method, so (short of a user operator or `Deref` impl
/// doing so) it cannot stash a handle to the buffer being donated after the
/// donation test. Handles that live only while the op runs are harmless:
/// the in-place kernels read an operand that shares the destination's
/// buffer completely before writing.
fn pure_args(args: &Args) -> bool {
    use syn::visit::{self, Visit};
    struct Pure {
        ok: bool,
        budget: usize,
    }
    impl<'ast> Visit<'ast> for Pure {
        fn visit_expr(&mut self, e: &'ast Expr) {
            self.budget = self.budget.saturating_sub(1);
            if !self.ok || self.budget == 0 {
                self.ok = false;
                return;
            }
            let allowed = match e {
                Expr::Lit(_)
                | Expr::Path(_)
                | Expr::Reference(_)
                | Expr::Unary(_)
                | Expr::Binary(_)
                | Expr::Paren(_)
                | Expr::Group(_)
                | Expr::Field(_)
                | Expr::Index(_)
                | Expr::Cast(_)
                | Expr::Tuple(_)
                | Expr::Array(_)
                | Expr::Range(_) => true,
                Expr::MethodCall(m) => {
                    let name = m.method.to_string();
                    m.turbofish.is_none()
                        && (QUERIES.contains(&name.as_str())
                            || SCALAR_METHODS.contains(&name.as_str())
                            || optable::lookup(&name).is_some_and(|i| {
                                !matches!(
                                    i.kind,
                                    OpKind::Inplace { .. }
                                        | OpKind::InplaceView { .. }
                                        | OpKind::Resize
                                        | OpKind::Autograd
                                )
                            }))
                }
                Expr::Call(c) => match &*c.func {
                    Expr::Path(p) => {
                        let segs: Vec<String> = p
                            .path
                            .segments
                            .iter()
                            .map(|s| s.ident.to_string())
                            .collect();
                        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
                        matches!(segs.as_slice(), ["Some"] | ["funcz", "rt", _])
                    }
                    _ => false,
                },
                _ => false,
            };
            if allowed {
                visit::visit_expr(self, e);
            } else {
                self.ok = false;
            }
        }
    }
    let mut p = Pure {
        ok: true,
        budget: 24,
    };
    for a in args {
        p.visit_expr(a);
    }
    p.ok
}

/// Scalar methods allowed in the arguments of a donating update.
const SCALAR_METHODS: &[&str] = &["powi", "powf", "recip", "min", "max"];

/// `e` without the in-place ops applied on top of it: the receiver they
/// all mutate (`x.narrow(0, 0, 1)` for `x.narrow(0, 0, 1).mul_(2.0).t_()`).
fn peel_inplace(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => peel_inplace(&p.expr),
        Expr::MethodCall(m)
            if matches!(
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. })
            ) =>
        {
            peel_inplace(&m.receiver)
        }
        _ => e,
    }
}

fn scan_tokens(ts: TokenStream, f: &mut impl FnMut(bool, &Ident)) {
    let mut prev_dot = false;
    for tt in ts {
        match &tt {
            TokenTree::Group(g) => {
                scan_tokens(g.stream(), f);
                prev_dot = false;
            }
            TokenTree::Ident(i) => {
                f(prev_dot, i);
                prev_dot = false;
            }
            TokenTree::Punct(p) => prev_dot = p.as_char() == '.',
            TokenTree::Literal(_) => prev_dot = false,
        }
    }
}

/// The tail expressions of an `if`/`match`/block (the values it can take).
fn tails(e: &Expr) -> Vec<&Expr> {
    fn block_tail(b: &Block) -> Vec<&Expr> {
        match b.stmts.last() {
            Some(Stmt::Expr(e, None)) => tails(e),
            _ => Vec::new(),
        }
    }
    match e {
        Expr::If(i) => {
            let mut v = block_tail(&i.then_branch);
            if let Some((_, els)) = &i.else_branch {
                v.extend(tails(els));
            }
            v
        }
        Expr::Match(m) => m.arms.iter().flat_map(|a| tails(&a.body)).collect(),
        Expr::Block(b) => block_tail(&b.block),
        Expr::Paren(p) => tails(&p.expr),
        other => vec![other],
    }
}

/// True if evaluating `e` may mutate or call code the macro cannot see.
fn has_effects(e: &Expr) -> bool {
    struct V(bool);
    impl<'ast> syn::visit::Visit<'ast> for V {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let name = m.method.to_string();
            match optable::lookup(&name).map(|i| i.kind) {
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize) => {
                    self.0 = true
                }
                Some(_) => {}
                None if QUERIES.contains(&name.as_str()) => {}
                None => self.0 = true,
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            let ctor = matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| {
                s.ident.to_string().chars().next().is_some_and(char::is_uppercase)
            }));
            if !ctor {
                self.0 = true;
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_block(&mut self, _: &'ast syn::ExprBlock) {
            self.0 = true;
        }
        fn visit_macro(&mut self, _: &'ast syn::Macro) {
            self.0 = true;
        }
    }
    let mut v = V(false);
    syn::visit::Visit::visit_expr(&mut v, e);
    v.0
}

impl VisitMut for Lowerer<'_> {
    fn visit_block_mut(&mut self, b: &mut Block) {
        self.scopes.push();
        let stmts = std::mem::take(&mut b.stmts);
        b.stmts = self.lower_stmts(stmts);
        self.scopes.pop();
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
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
            Expr::Binary(b) if is_compound(&b.op) && self.is_tensor_expr(&b.left) => {
                let method = match b.op {
                    syn::BinOp::AddAssign(_) => "add_",
                    syn::BinOp::SubAssign(_) => "sub_",
                    syn::BinOp::MulAssign(_) => "mul_",
                    _ => "div_",
                };
                let method = Ident::new(method, b.op.span());
                let (l, r) = (&b.left, &b.right);
                let call: Expr = parse_quote!(#l.#method(#r));
                if let Some(lowered) = self.try_inplace(&call, Want::Nothing) {
                    *e = lowered;
                }
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                let kind = optable::lookup(&name).map(|i| i.kind);
                match kind {
                    Some(OpKind::Autograd) => {
                        self.error(
                            &m.method,
                            format!(
                                "`.{name}()` inside a #[functionalize] function: functionalize() doesn't work \
                                 with functions that directly use autograd"
                            ),
                            "compute gradients outside the functionalized function, or functionalize the \
                             gradient computation as a whole",
                        );
                        visit_mut::visit_expr_mut(self, e);
                    }
                    Some(
                        OpKind::View { .. } | OpKind::MaybeView { .. } | OpKind::MultiView { .. },
                    ) if self.copies() && self.is_tensor_expr(&m.receiver) => {
                        // A view only read: its `*_copy` in copies mode.
                        let multi = matches!(kind, Some(OpKind::MultiView { .. }));
                        visit_mut::visit_expr_mut(self, e);
                        if let Expr::MethodCall(m) = e {
                            let rt = rt();
                            let mode = self.mode.clone();
                            let (recv, method, args) = (&m.receiver, &m.method, &m.args);
                            *e = if multi {
                                parse_quote!(#rt::MultiMeta::#method(#args).forward(&#recv, #mode))
                            } else {
                                parse_quote!(#rt::view_value(&#recv, #rt::ViewMeta::#method(#args), #mode))
                            };
                        }
                    }
                    None if !QUERIES.contains(&name.as_str())
                        && self.binding_of(&m.receiver).is_some() =>
                    {
                        self.opaque_call(e);
                    }
                    _ => visit_mut::visit_expr_mut(self, e),
                }
            }
            Expr::Call(_) => self.opaque_call(e),
            Expr::Closure(c) => {
                self.closure_floor.push(self.scopes.bindings.len());
                self.scopes.push();
                for p in c.inputs.iter() {
                    self.declare_other(p);
                }
                self.visit_expr_mut(&mut c.body);
                self.scopes.pop();
                self.closure_floor.pop();
            }
            Expr::Async(a) => {
                self.closure_floor.push(self.scopes.bindings.len());
                self.visit_block_mut(&mut a.block);
                self.closure_floor.pop();
            }
            Expr::Macro(m) => {
                let mac = m.mac.clone();
                self.check_macro(&mac);
            }
            Expr::Return(r) if self.closure_floor.is_empty() && !self.exit.is_empty() => {
                let mut value: Expr = match r.expr.take() {
                    Some(v) => *v,
                    None => parse_quote!(()),
                };
                self.visit_expr_mut(&mut value);
                let pure = !has_effects(&value);
                *e = self.exit_block(value, pure, true);
            }
            Expr::Try(t) if self.closure_floor.is_empty() && !self.exit.is_empty() => {
                let mut inner = (*t.expr).clone();
                self.visit_expr_mut(&mut inner);
                let wb = &self.exit;
                let rt = rt();
                let x = tmp("__fz_try");
                *e = parse_quote!({ let #x = #inner; if #rt::is_exit(&#x) { #(#wb)* } #x? });
            }
            Expr::ForLoop(_) => self.lower_for(e),
            Expr::Assign(a) => self.lower_assign(e_assign(a)),
            Expr::Let(l) => {
                self.visit_expr_mut(&mut l.expr);
                self.declare_other(&l.pat);
            }
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }
}

fn e_assign(a: &mut syn::ExprAssign) -> &mut syn::ExprAssign {
    a
}

fn is_compound(op: &syn::BinOp) -> bool {
    matches!(
        op,
        syn::BinOp::AddAssign(_)
            | syn::BinOp::SubAssign(_)
            | syn::BinOp::MulAssign(_)
            | syn::BinOp::DivAssign(_)
    )
}

impl Lowerer<'_> {
    /// A read of binding `id`: regenerate it if stale, and rename shadowed
    /// inputs so the body sees the type it was written against.
    fn use_binding(&mut self, id: usize, e: &mut Expr) {
        self.need_sync(id);
        let ident = self.scopes.ident(id).clone();
        match self.scopes.kind(id).clone() {
            Kind::Root { input: Some(p), .. } if self.tracked_root(id) => match p {
                Passing::Ref => *e = parse_quote_spanned_ref(&ident, false),
                Passing::RefMut => *e = parse_quote_spanned_ref(&ident, true),
                Passing::Value => {}
            },
            Kind::Coll {
                input: Some((p, vec)),
            } if self.facts.mutated.contains(&id) => match (p, vec) {
                (Passing::Ref, false) => *e = parse_quote!((&#ident[..])),
                (Passing::RefMut, false) => *e = parse_quote!((&mut #ident[..])),
                (Passing::Ref, true) => *e = parse_quote!((&#ident)),
                (Passing::RefMut, true) => *e = parse_quote!((&mut #ident)),
                (Passing::Value, _) => {}
            },
            _ => {}
        }
    }

    /// A call the macro cannot see into: tracked tensors passed to it may
    /// come back mutated (checked with the storage version counter).
    fn opaque_call(&mut self, e: &mut Expr) {
        let rt = rt();
        let mode = self.mode.clone();
        // Which tracked bindings does the call receive by reference?
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
        match &*e {
            Expr::Call(c) => {
                for a in &c.args {
                    collect(self, a, &mut passed);
                }
            }
            Expr::MethodCall(m) => {
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
        // Only aliases, and roots that have aliases, need anything done.
        passed.retain(|(id, _)| match self.scopes.kind(*id) {
            Kind::Alias { .. } => true,
            Kind::Root { .. } => self.facts.mutated.contains(id) && self.has_aliases(*id),
            _ => false,
        });
        for (id, _) in &passed {
            if let Kind::Alias { .. } = self.scopes.kind(*id) {
                self.mark_mutated(*id);
            }
        }
        visit_mut::visit_expr_mut(self, e);
        if passed.is_empty() {
            return;
        }
        let mut before = Vec::<Stmt>::new();
        let mut after = Vec::<Stmt>::new();
        let what = self.fn_name.clone();
        for (k, (id, _by_mut)) in passed.iter().enumerate() {
            if !self.has_state(*id) {
                continue;
            }
            let v = self.scopes.ident(*id).clone();
            let ver = format_ident!("__fz_version_{}", k, span = Span::mixed_site());
            before.push(parse_quote!(let #ver = #rt::version(&#v);));
            let s = state_ident(*id);
            let commit: Stmt = match self.scopes.kind(*id).clone() {
                Kind::Alias { root } => {
                    let (rv, rs) = self.root_value_state(root);
                    parse_quote!({
                        let __fz_h = #rt::handle(&#v);
                        #rt::commit(#what, &mut #rv, &mut #rs, &mut #v, &mut #s, __fz_h, #mode);
                    })
                }
                _ => parse_quote!(#s.bump();),
            };
            after.push(parse_quote!(if #rt::version(&#v) != #ver { #commit }));
        }
        if before.is_empty() {
            return;
        }
        let r = tmp("__fz_call");
        let call = e.clone();
        *e = parse_quote!({ #(#before)* let #r = #call; #(#after)* #r });
    }

    fn has_aliases(&self, root: usize) -> bool {
        self.scopes.bindings.iter().any(
            |b| matches!(b.kind, Kind::Alias { root: r } | Kind::Multi { root: r } if r == root),
        ) || self.based(root)
    }

    fn lower_assign(&mut self, a: &mut syn::ExprAssign) {
        let Some(id) = self.binding_of(&a.left) else {
            // `xs[i] = value` replaces an element of a collection.
            if let Expr::Index(ix) = &*a.left
                && let Some(id) = self.binding_of(&ix.expr)
                && matches!(self.scopes.kind(id), Kind::Coll { .. })
            {
                self.mark_mutated(id);
            }
            visit_mut::visit_expr_mut(self, &mut a.right);
            visit_mut::visit_expr_mut(self, &mut a.left);
            return;
        };
        match self.scopes.kind(id).clone() {
            Kind::Root { .. } => {
                self.visit_expr_mut(&mut a.right);
                if self.has_state(id) {
                    let v = self.scopes.ident(id).clone();
                    let s = state_ident(id);
                    let right = &a.right;
                    let e: Expr = parse_quote!({ #v = #right; #s.rebind(&#v); });
                    *a.right = e;
                    // `x = { x = new; state.rebind(&x); }` would assign (): rewrite the
                    // whole assignment instead.
                    let replaced: Expr = parse_quote!(#v = #v);
                    let _ = replaced;
                    let new_right = (*a.right).clone();
                    *a = parse_quote!(_ = #new_right);
                }
            }
            Kind::Alias { root } => {
                let expr = (*a.right).clone();
                if let Some((prelude, place, steps, None)) = self.view_chain(&expr)
                    && self.place_root(&place) == Some(root)
                {
                    if self.has_state(id) {
                        let (mut stmts, v, s) = self.emit_steps(prelude, &place, &steps);
                        let ident = self.scopes.ident(id).clone();
                        let st = state_ident(id);
                        stmts.push(parse_quote!({ #ident = #v; #st = #s; }));
                        let block: Expr = parse_quote!({ #(#stmts)* });
                        *a = parse_quote!(_ = #block);
                    } else {
                        self.visit_expr_mut(&mut a.right);
                    }
                } else {
                    self.error(
                        &a.right,
                        format!(
                            "`{}` is a view, and this assigns it something that is not a view of the same tensor: \
                             #[functionalize] tracks one base per variable",
                            self.scopes.ident(id)
                        ),
                        "use a new variable for the new value",
                    );
                    self.visit_expr_mut(&mut a.right);
                }
            }
            _ => {
                visit_mut::visit_expr_mut(self, &mut a.right);
            }
        }
    }

    fn lower_for(&mut self, e: &mut Expr) {
        let Expr::ForLoop(f) = e else { return };
        let rt = rt();
        let mode = self.mode.clone();
        self.scopes.push();
        let expr = (*f.expr).clone();
        let ident = Self::pat_ident(&f.pat);
        // `for r in x.unbind(0) { .. }`: r is a view of x's root.
        if let Some(ident) = ident.clone()
            && let Some((prelude, place, steps, Some((method, args)))) = self.view_chain(&expr)
            && let Some(root) = self.place_root(&place)
        {
            if self.tracked_root(root) {
                let (stmts, v, s) = self.emit_steps(prelude, &place, &steps);
                let id = self.scopes.declare(&ident, Kind::Alias { root });
                let st = state_ident(id);
                let vals = tmp("__fz_values");
                let sts = tmp("__fz_states");
                self.visit_block_mut(&mut f.body);
                let body = &f.body;
                let label = &f.label;
                let new: Expr = parse_quote!({
                    #(#stmts)*
                    let (#vals, #sts) = #rt::multi_view(&#v, &#s, #rt::MultiMeta::#method(#args), #mode);
                    #label for (mut #ident, mut #st) in ::core::iter::zip(#vals, #sts) #body
                });
                self.scopes.pop();
                *e = new;
                return;
            }
            self.visit_expr_mut(&mut f.expr);
            let mut pat = (*f.pat).clone();
            self.declare_pat(&mut pat, Kind::Alias { root });
            self.visit_block_mut(&mut f.body);
            self.scopes.pop();
            return;
        }
        // Loops over collections of tensors: the loop variables are elements.
        let shape = self.iter_shape(&f.expr);
        let mut expr = (*f.expr).clone();
        if let Some(shape) = &shape {
            self.mutable_iter(&mut expr, shape);
            *f.expr = expr;
            let mut pat = (*f.pat).clone();
            self.bind_iter_pat(&mut pat, shape);
            *f.pat = pat;
        } else {
            self.visit_expr_mut(&mut f.expr);
            self.declare_other(&f.pat);
        }
        self.visit_block_mut(&mut f.body);
        self.scopes.pop();
    }

    fn iter_shape(&self, e: &Expr) -> Option<IterShape> {
        match e {
            Expr::Reference(r) => self.iter_shape(&r.expr),
            Expr::Paren(p) => self.iter_shape(&p.expr),
            Expr::Path(_) => {
                let id = self.binding_of(e)?;
                matches!(self.scopes.kind(id), Kind::Coll { .. }).then_some(IterShape::Coll(id))
            }
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "iter" | "iter_mut" | "into_iter" => self.iter_shape(&m.receiver),
                "enumerate" => Some(IterShape::Enumerate(Box::new(
                    self.iter_shape(&m.receiver)?,
                ))),
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

    /// Makes iteration over mutated collections yield `&mut` elements of
    /// the functional copies.
    fn mutable_iter(&mut self, e: &mut Expr, shape: &IterShape) {
        match (e, shape) {
            (e, IterShape::Coll(id)) if self.facts.mutated.contains(id) => {
                let ident = self.scopes.ident(*id).clone();
                *e = parse_quote!(#ident.iter_mut());
            }
            (Expr::MethodCall(m), IterShape::Enumerate(inner)) => {
                self.mutable_iter(&mut m.receiver, inner)
            }
            (Expr::MethodCall(m), IterShape::Zip(a, b)) => {
                self.mutable_iter(&mut m.receiver, a);
                if let Some(arg) = m.args.first_mut() {
                    self.mutable_iter(arg, b);
                }
            }
            (e, _) => self.visit_expr_mut(e),
        }
    }

    fn bind_iter_pat(&mut self, pat: &mut Pat, shape: &IterShape) {
        match (pat, shape) {
            (Pat::Ident(pi), IterShape::Coll(id)) => {
                self.scopes.declare(&pi.ident, Kind::ElemRef { coll: *id });
            }
            (Pat::Tuple(t), IterShape::Enumerate(inner)) if t.elems.len() == 2 => {
                let mut it = t.elems.iter_mut();
                let first = it.next().expect("two elements");
                self.declare_other(first);
                let second = it.next().expect("two elements");
                self.bind_iter_pat(second, inner);
            }
            (Pat::Tuple(t), IterShape::Zip(a, b)) if t.elems.len() == 2 => {
                let mut it = t.elems.iter_mut();
                let first = it.next().expect("two elements");
                self.bind_iter_pat(first, a);
                let second = it.next().expect("two elements");
                self.bind_iter_pat(second, b);
            }
            (p, _) => self.declare_other(p),
        }
    }
}

#[derive(Clone, Debug)]
enum IterShape {
    Coll(usize),
    Enumerate(Box<IterShape>),
    Zip(Box<IterShape>, Box<IterShape>),
    Other,
}

fn parse_quote_spanned_ref(ident: &Ident, by_mut: bool) -> Expr {
    let span = ident.span();
    if by_mut {
        syn::parse2(quote_spanned!(span=> (&mut #ident))).expect("a reference expression")
    } else {
        syn::parse2(quote_spanned!(span=> (&#ident))).expect("a reference expression")
    }
}
