//! Rewrites a function body: in-place ops become functional ops whose
//! results are committed back into their roots, views become tracked
//! aliases (or `*_copy`s), stale aliases are regenerated where they are
//! used, and every exit writes mutated inputs back.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, Ident, Pat, Stmt, Token};

use funcz_optable::{self as optable, OpKind};

use crate::ctxt::Ctxt;
use crate::params::{Passing, is_tensor_type};
use crate::scope::{Facts, Kind, Scopes, base_ident, base_state_ident, input_ident, state_ident};

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

/// Methods of a slice or `Vec` of tensors that neither reorder nor replace
/// elements.
const COLL_READS: &[&str] = &[
    "len",
    "is_empty",
    "iter",
    "get",
    "first",
    "last",
    "contains",
    "to_vec",
    "clone",
    "as_slice",
    "windows",
    "chunks",
    "split_at",
    "split_first",
    "split_last",
    "into_iter",
    "capacity",
    "iter_mut",
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
    pub mode: crate::attr::Remove,
    pub facts: Facts,
    pub found: Facts,
    pub scopes: Scopes,
    pub fn_name: String,
    /// Statements that write mutated inputs back (emitted at every exit).
    pub exit: Vec<Stmt>,
    /// Tracked field places: (`self.cache`, the binding of the base it
    /// starts from when it was looked up at entry, the place's binding).
    pub places: Vec<(String, Option<usize>, usize)>,
    /// `("name", expr)` of every tensor input, for freshness checks.
    pub inputs: Vec<(String, TokenStream)>,
    pre: Vec<Vec<Stmt>>,
    /// Bindings already synced before the statement being lowered.
    synced: Vec<Vec<usize>>,
    /// Per open statement: roots mutated so far in it (nested statements
    /// included), and aliases a commit made current again.
    stmt_mutated: Vec<Vec<usize>>,
    stmt_fresh: Vec<Vec<usize>>,
    closure_floor: Vec<usize>,
    /// How many `let` statements are being lowered (closures made inside
    /// one may outlive the statement).
    let_depth: usize,
    /// How many loops enclose the code being lowered.
    loop_depth: usize,
    /// Per open closure: whether it was made inside a `let`.
    closure_escapes: Vec<bool>,
    /// Bindings that are views of a collection element, with the collection.
    elem_aliases: Vec<(usize, usize)>,
    /// Collections whose `.iter()` the current loop turned into `.iter_mut()`.
    converted: Vec<usize>,
    /// Loop variables over such a collection: `&Tensor` in the original, so
    /// read as `&*t`.
    shared_elems: Vec<usize>,
    copies: bool,
    /// Set when a `let` pattern was given a `mut` the user did not write
    /// (the lowering may reassign it): that `let` gets
    /// `#[allow(unused_mut)]`, and the user's own lints stay on.
    added_mut: bool,
}

/// Generated code is kept as tokens (`Verbatim`) rather than re-parsed:
/// the macro never inspects what it generated, and parsing every snippet
/// dominated expansion time.
trait FromTokens {
    fn from_tokens(ts: TokenStream) -> Self;
}

impl FromTokens for Stmt {
    fn from_tokens(ts: TokenStream) -> Self {
        // An item-position statement: never mistaken for a tail expression.
        Stmt::Item(syn::Item::Verbatim(ts))
    }
}

impl FromTokens for Expr {
    fn from_tokens(ts: TokenStream) -> Self {
        Expr::Verbatim(ts)
    }
}

thread_local! {
    static DRY_RUN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with code generation turned off: a pass that only learns which
/// roots are mutated does not need the tokens it would write.
pub(crate) fn with_dry_run<R>(dry: bool, f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            DRY_RUN.with(|d| d.set(self.0));
        }
    }
    let _reset = Reset(DRY_RUN.with(|d| d.replace(dry)));
    f()
}

fn dry_run() -> bool {
    DRY_RUN.with(|d| d.get())
}

macro_rules! pq {
    ($($t:tt)*) => {
        if dry_run() {
            FromTokens::from_tokens(TokenStream::new())
        } else {
            FromTokens::from_tokens(quote!($($t)*))
        }
    };
}

/// Runs `f` with at least 128 KiB of stack left, switching to a new 8 MiB
/// segment when less is (the expansion recurses once per link of a chain).
pub(crate) fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 8 * 1024 * 1024, f)
}

fn rt() -> TokenStream {
    // Not cached: proc_macro tokens must not outlive one expansion.
    quote!(::funcz::rt)
}

fn tmp(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

impl<'a> Lowerer<'a> {
    pub fn new(cx: &'a Ctxt, mode: crate::attr::Remove, facts: Facts, fn_name: String) -> Self {
        Lowerer {
            cx,
            mode,
            facts,
            found: Facts::default(),
            scopes: Scopes::default(),
            fn_name,
            exit: Vec::new(),
            inputs: Vec::new(),
            places: Vec::new(),
            copies: mode == crate::attr::Remove::MutationsAndViews,
            added_mut: false,
            pre: Vec::new(),
            synced: Vec::new(),
            stmt_mutated: Vec::new(),
            stmt_fresh: Vec::new(),
            closure_floor: Vec::new(),
            let_depth: 0,
            loop_depth: 0,
            closure_escapes: Vec::new(),
            elem_aliases: Vec::new(),
            converted: Vec::new(),
            shared_elems: Vec::new(),
        }
    }

    pub(crate) fn error(
        &self,
        tokens: impl ToTokens,
        msg: impl std::fmt::Display,
        help: impl std::fmt::Display,
    ) {
        self.cx.error(tokens, msg, help);
    }

    // ---------- facts about bindings ----------

    /// The variable generated code uses for binding `id`: a tracked root
    /// lives in a hidden variable, so that a user `let` shadowing its name
    /// cannot hide it from the write-backs of its views.
    pub fn var(&self, id: usize) -> Ident {
        if matches!(self.scopes.kind(id), Kind::Root { .. }) && self.has_state(id) {
            let name = self.scopes.ident(id).to_string();
            let name = name.trim_start_matches("r#");
            format_ident!("__fz_{}_{}", name, id, span = Span::mixed_site())
        } else {
            self.scopes.ident(id).clone()
        }
    }

    fn copies(&self) -> bool {
        self.copies
    }

    fn tracked_root(&self, root: usize) -> bool {
        self.facts.mutated.contains(&root) || self.facts.meta.contains(&root)
    }

    fn based(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Root { .. }) && self.facts.meta.contains(&id)
    }

    /// True if binding `id` is a collection input (its caller's elements
    /// are in the hidden variable `input_ident(id)`).
    fn is_input_coll(&self, id: usize) -> bool {
        matches!(self.scopes.kind(id), Kind::Coll { input: Some(_) })
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
            let (v, s) = (self.var(root), state_ident(root));
            (quote!(#v), quote!(#s))
        }
    }

    /// Records that a commit into `root` happened at this point of the
    /// statement being lowered, making `alias` (the mutated one) current.
    fn note_commit(&mut self, root: Option<usize>, alias: Option<usize>) {
        if let (Some(r), Some(level)) = (root, self.stmt_mutated.last_mut()) {
            level.push(r);
        }
        if let (Some(a), Some(level)) = (alias, self.stmt_fresh.last_mut()) {
            level.push(a);
        }
    }

    /// A read of alias `id` after a mutation of its root earlier in the
    /// same statement would see a stale value: refuse it.
    fn check_stale_read(&self, id: usize, at: &dyn ToTokens) {
        let root = match self.scopes.kind(id) {
            Kind::Alias { root } | Kind::Multi { root } => *root,
            Kind::Root { .. } if self.based(id) => id,
            _ => return,
        };
        let mutated = self.stmt_mutated.last().is_some_and(|l| l.contains(&root));
        let fresh = self.stmt_fresh.last().is_some_and(|l| l.contains(&id));
        if mutated && !fresh {
            self.error(
                at,
                format!(
                    "`{}` is read after `{}` is mutated in the same statement; #[functionalize] regenerates views \
                     between statements",
                    self.scopes.ident(id),
                    self.scopes.ident(root)
                ),
                "split the statement in two: do the in-place op first, then read the view",
            );
        }
    }

    fn mark_mutated(&mut self, id: usize) {
        self.check_elem_aliases(id);
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

    /// True if `root` may be mutated after the code being lowered: a
    /// mutation lowered later in the text (as the previous pass counted),
    /// or any mutation while inside a loop.
    fn mutated_later(&self, root: usize) -> bool {
        let total = self.facts.mutations.get(&root).copied().unwrap_or(0);
        let seen = self.found.mutations.get(&root).copied().unwrap_or(0);
        self.tracked_root(root) && (seen < total || (self.loop_depth > 0 && total > 0))
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
            Expr::Field(_) => self.place_of(e),
            _ => None,
        }
    }

    /// The binding of a tracked field place (`self.cache`), unless the
    /// body has shadowed the name it starts from.
    fn place_of(&self, e: &Expr) -> Option<usize> {
        if self.places.is_empty() {
            return None;
        }
        let (base, key) = crate::places::place_key(e)?;
        let (_, at_entry, id) = self.places.iter().find(|(k, _, _)| *k == key)?;
        (base == "self" || self.scopes.lookup(&base) == *at_entry).then_some(*id)
    }

    fn is_tensor_binding(&self, id: usize) -> bool {
        matches!(
            self.scopes.kind(id),
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
            list.push(s);
        }
    }

    /// Ensures the alias `id` is current before the statement being lowered.
    fn need_sync(&mut self, id: usize) {
        if !self.has_state(id) {
            return;
        }
        match self.synced.last_mut() {
            Some(done) if done.contains(&id) => return,
            Some(done) => done.push(id),
            None => {}
        }
        if let Some(stmt) = self.sync_stmt(id) {
            self.push_pre(stmt);
        }
    }

    /// The statement that regenerates the alias `id` if it is stale.
    fn sync_stmt(&self, id: usize) -> Option<Stmt> {
        if !self.has_state(id) {
            return None;
        }
        let mode = self.mode;
        let rt = rt();
        let (v, s) = (self.var(id), state_ident(id));
        match self.scopes.kind(id).clone() {
            Kind::Alias { root } => {
                let (rv, rs) = self.root_value_state(root);
                Some(pq!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs, #mode);))
            }
            Kind::Multi { root } => {
                let (rv, rs) = self.root_value_state(root);
                Some(pq!(#rt::sync_all(&mut #v, &mut #s, &#rv, &#rs, #mode);))
            }
            Kind::Root { .. } if self.based(id) => {
                let (rv, rs) = self.root_value_state(id);
                Some(pq!(#rt::sync(&mut #v, &mut #s, &#rv, &#rs, #mode);))
            }
            _ => None,
        }
    }

    /// Splits a statement that chains in-place ops on a variable or field
    /// (`x.mul_(2.0).add_(3.0);`) into one statement per op, in order: the
    /// same program (each op runs on the same tensor, its arguments read
    /// after the ops before it), lowered flat however long the chain.
    ///
    /// Input: `x.mul_(2.0).add_(&y);`
    /// Output: `x.mul_(2.0); x.add_(&y);`
    fn split_chain(&self, stmt: &Stmt) -> Option<Vec<Stmt>> {
        let Stmt::Expr(e, Some(semi)) = stmt else {
            return None;
        };
        let mut ops: Vec<&syn::ExprMethodCall> = Vec::new();
        let mut cur = e;
        while let Expr::MethodCall(m) = cur
            && matches!(
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
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

    pub fn lower_stmts(&mut self, stmts: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::new();
        let mut stmts = stmts;
        let mut k = 0;
        while k < stmts.len() {
            if let Some(split) = self.split_chain(&stmts[k]) {
                stmts.splice(k..=k, split);
            }
            k += 1;
        }
        for stmt in stmts {
            self.pre.push(Vec::new());
            self.synced.push(Vec::new());
            self.stmt_mutated.push(Vec::new());
            self.stmt_fresh.push(Vec::new());
            let lowered = self.lower_stmt(stmt);
            self.synced.pop();
            self.stmt_fresh.pop();
            let mutated = self.stmt_mutated.pop().unwrap_or_default();
            if let Some(outer) = self.stmt_mutated.last_mut() {
                outer.extend(mutated);
            }
            let pre = self.pre.pop().unwrap_or_default();
            out.extend(pre);
            out.extend(lowered);
        }
        out
    }

    fn lower_stmt(&mut self, stmt: Stmt) -> Vec<Stmt> {
        match stmt {
            Stmt::Local(local) => {
                self.let_depth += 1;
                let outer = std::mem::replace(&mut self.added_mut, false);
                let mut out = self.lower_local(local);
                if std::mem::replace(&mut self.added_mut, outer) {
                    for s in &mut out {
                        if let Stmt::Local(l) = s {
                            l.attrs.push(syn::parse_quote!(#[allow(unused_mut)]));
                        }
                    }
                }
                self.let_depth -= 1;
                out
            }
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
                self.lower_macro(&mut m.mac);
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
                    && pi.mutability.is_none()
                {
                    pi.mutability = Some(Token![mut](pi.ident.span()));
                    self.added_mut = true;
                }
                let id = self.scopes.declare(&pi.ident, kind);
                pi.ident = self.var(id);
            }
            Pat::Type(pt) => self.declare_pat(&mut pt.pat, kind),
            other => self.declare_other(other),
        }
    }

    /// Declares every identifier a pattern binds as a non-tensor.
    fn declare_other(&mut self, pat: &Pat) {
        self.declare_all(pat, Kind::Other);
    }

    /// Declares every identifier `pat` binds with `kind`.
    fn declare_all(&mut self, pat: &Pat, kind: Kind) {
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
            self.scopes.declare(&id, kind.clone());
        }
    }

    /// True if matching on `e` binds tensors that are only read (`e` is an
    /// `Option<&Tensor>` input).
    fn unwraps_tensors(&self, e: &Expr) -> bool {
        self.binding_of(e)
            .is_some_and(|id| matches!(self.scopes.kind(id), Kind::Optional))
    }

    /// Declares the identifiers a `match`/`if let` pattern binds.
    fn declare_bound(&mut self, pat: &Pat, plain: bool) {
        self.declare_all(pat, if plain { Kind::Plain } else { Kind::Other });
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
            // `let … else { … }`: the else block is ordinary code (its
            // in-place ops are lowered, its `return` writes inputs back).
            if let Some((_, diverge)) = &mut init.diverge {
                self.visit_expr_mut(diverge);
            }
            self.declare_other(&local.pat);
            local.init = Some(init);
            return vec![Stmt::Local(local)];
        }
        let ident = Self::pat_ident(&local.pat).expect("checked above");
        // `let x = &xs[i];` names the place `xs[i]`: its in-place ops write
        // the element, its reads read it.
        if let Expr::Reference(r) = &*init.expr
            && let Expr::Index(ix) = &*r.expr
            && let Some(coll) = self.binding_of(&ix.expr)
            && matches!(self.scopes.kind(coll), Kind::Coll { .. })
        {
            let mut index = (*ix.index).clone();
            self.visit_expr_mut(&mut index);
            let n = self.scopes.bindings.len();
            let hidden = format_ident!("__fz_elem_at_{}", n, span = Span::mixed_site());
            self.scopes.declare(
                &ident,
                Kind::ElemAt {
                    coll,
                    index: hidden.clone(),
                },
            );
            return vec![pq!(let #hidden: usize = #index;)];
        }
        // `let r = &x;` of a tensor binding: `r` is another name for `x`.
        if let Expr::Reference(r) = &*init.expr
            && r.mutability.is_none()
            && let Expr::Path(p) = &*r.expr
            && p.path.segments.len() == 1
            && let Some(to) = self.binding_of(&r.expr)
            && (self.is_tensor_binding(to)
                || matches!(self.scopes.kind(to), Kind::Coll { .. } | Kind::Multi { .. }))
        {
            self.scopes.declare_ref(&ident, to);
            return Vec::new();
        }
        let expr = *init.expr;
        let rt = rt();
        let mode = self.mode;

        // A view of a collection element (or the in-place result on one)
        // is bound as a plain value, watched by `elem_aliases`.
        let elem_coll = self.elem_alias_coll(&expr);

        // `let c = <in-place op>;` : c is the receiver (an alias of its root).
        if self.is_inplace_call(&expr) {
            let root = self.target_root_of(&expr).filter(|_| elem_coll.is_none());
            if let Some(root) = root.filter(|&r| self.tracked_root(r)) {
                let lowered = self
                    .try_inplace(&expr, Want::Bound)
                    .expect("an in-place call");
                let id = self.scopes.declare(&ident, Kind::Alias { root });
                let s = state_ident(id);
                return vec![pq!(let (mut #ident, mut #s) = #lowered;)];
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
            let fresh = matches!(kind, Kind::Root { .. });
            self.declare_pat(&mut local.pat, kind);
            local.init = Some(syn::LocalInit {
                eq_token: init.eq_token,
                expr: Box::new(lowered),
                diverge: None,
            });
            let mut out = vec![Stmt::Local(local)];
            if fresh {
                let id = self
                    .scopes
                    .lookup(&ident.to_string())
                    .expect("just declared");
                if let Some(coll) = elem_coll {
                    self.elem_aliases.push((id, coll));
                }
                out.extend(self.root_prologue(id));
            }
            return out;
        }

        // `let v = <view chain of a place>;`
        if elem_coll.is_none()
            && let Some((prelude, place, steps, multi)) = self.view_chain(&expr)
        {
            let root = self.place_root(&place);
            if let Some(root) = root {
                let kind = if multi.is_some() {
                    Kind::Multi { root }
                } else {
                    Kind::Alias { root }
                };
                if self.tracked_root(root) {
                    let (mut stmts, _, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                    let id = self.scopes.declare(&ident, kind);
                    let st = state_ident(id);
                    if let Some((method, args)) = multi {
                        stmts.push(pq!(
                            let (mut #ident, mut #st) = #rt::multi_view(&#v, &#s, #rt::MultiMeta::#method(#args), #mode);
                        ));
                        if steps_may_copy(&steps) {
                            stmts.push(pq!(#rt::bind_views(&#ps, &mut #st);));
                        }
                    } else {
                        stmts.push(pq!(let (mut #ident, mut #st) = (#v, #s);));
                        if steps_may_copy(&steps) {
                            stmts.push(pq!(#rt::bind_view(&#ps, &mut #st);));
                        }
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
        if let Some(coll) = elem_coll {
            self.elem_aliases.push((id, coll));
        }
        let mut out = vec![Stmt::Local(local)];
        out.extend(self.root_prologue(id));
        if !known && self.tracked_root(id) {
            out.extend(self.freshness_check(id));
        }
        out
    }

    /// A value from a call the macro cannot see is treated as a fresh root;
    /// at run time, refuse it if anything else holds its storage (it may be
    /// a view of a tensor of this function, whose mutation would be lost).
    fn freshness_check(&self, id: usize) -> Option<Stmt> {
        let rt = rt();
        let ident = self.var(id);
        let name = self.scopes.ident(id).to_string();
        Some(pq!(#rt::check_fresh(#name, &#ident);))
    }

    /// State (and hidden base) for a root that is mutated or re-laid-out.
    pub fn root_prologue(&self, id: usize) -> Vec<Stmt> {
        let rt = rt();
        let v = self.var(id);
        let s = state_ident(id);
        if self.based(id) {
            let (b, bs) = (base_ident(id), base_state_ident(id));
            vec![
                pq!(let mut #b = #rt::handle(&#v);),
                pq!(let mut #bs = #rt::Tracked::root(&#b);),
                pq!(let mut #s = #bs.clone();),
            ]
        } else if self.tracked_root(id) {
            if matches!(self.scopes.kind(id), Kind::Root { input: Some(_), .. }) {
                // Updates may be computed in the caller's buffer.
                vec![pq!(let mut #s = #rt::Tracked::input(&#v);)]
            } else {
                vec![pq!(let mut #s = #rt::Tracked::root(&#v);)]
            }
        } else {
            Vec::new()
        }
    }

    /// True if the receiver chain `e` starts from a binding with alias
    /// state (whose functional value may be laid out unlike the original).
    fn receiver_tracked(&self, e: &Expr) -> bool {
        let mut cur = e;
        loop {
            match cur {
                Expr::MethodCall(m) => cur = &m.receiver,
                Expr::Paren(p) => cur = &p.expr,
                Expr::Index(i) => cur = &i.expr,
                Expr::Reference(r) => cur = &r.expr,
                _ => return self.binding_of(cur).is_some_and(|id| self.has_state(id)),
            }
        }
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
                    return matches!(self.scopes.kind(id), Kind::Coll { .. }).then_some(id);
                }
                _ => {
                    let id = self.binding_of(cur)?;
                    return match self.scopes.kind(id) {
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
                optable::lookup(&m.method.to_string()).map(|i| i.kind),
                Some(OpKind::View { .. } | OpKind::MaybeView { .. } | OpKind::MultiView { .. })
            ));
        self.elem_coll(e).filter(|_| aliasing)
    }

    /// Called when binding `id` is mutated: a collection element is updated
    /// by replacing it, so a view of an element that is in scope would go
    /// stale, and a mutation through such a view would not reach the
    /// element. Both are refused.
    fn check_elem_aliases(&self, id: usize) {
        let coll = match self.scopes.kind(id) {
            Kind::Coll { .. } => id,
            Kind::ElemRef { coll } | Kind::ElemAt { coll, .. } => *coll,
            _ => {
                if let Some(&(_, coll)) = self.elem_aliases.iter().find(|(a, _)| *a == id) {
                    let name = self.scopes.ident(id);
                    self.error(
                        name,
                        format!(
                            "`{name}` is a view of an element of `{}`: #[functionalize] cannot write a mutation \
                             through it back into the element",
                            self.scopes.ident(coll)
                        ),
                        "mutate through the element itself (`xs[i].narrow(..).add_(..)`), or `.clone()` the view \
                         if it should be independent",
                    );
                }
                return;
            }
        };
        for &(alias, c) in &self.elem_aliases {
            let name = self.scopes.ident(alias);
            if c == coll && self.scopes.lookup(&name.to_string()) == Some(alias) {
                self.error(
                    name,
                    format!(
                        "`{}` is mutated while `{name}`, a view of one of its elements, is in scope: \
                         #[functionalize] replaces mutated elements, so `{name}` would go stale",
                        self.scopes.ident(coll)
                    ),
                    "make the view after the mutation (or in a block that ends before it), index the element \
                     where it is used, or `.clone()` the view if the old value is wanted",
                );
            }
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
        self.binding_of(cur).and_then(|id| self.scopes.root_of(id))
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
        grow(|| self.target_inner(e))
    }

    fn target_inner(&mut self, e: &Expr) -> Option<Target> {
        match e {
            Expr::Paren(p) => self.target(&p.expr),
            Expr::Group(g) => self.target(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let id = self.binding_of(&u.expr)?;
                if let Kind::ElemAt { coll, index } = self.scopes.kind(id).clone() {
                    return Some(Target::Place {
                        prelude: Vec::new(),
                        place: Place::Index(coll, pq!(#index)),
                        steps: Vec::new(),
                    });
                }
                matches!(self.scopes.kind(id), Kind::ElemRef { .. } | Kind::Root { .. }).then(|| Target::Place {
                    prelude: Vec::new(),
                    place: Place::Var(id),
                    steps: Vec::new(),
                })
            }
            Expr::Path(_) | Expr::Field(_) => {
                let id = self.binding_of(e)?;
                match self.scopes.kind(id) {
                    Kind::ElemAt { coll, index } => {
                        let (coll, index) = (*coll, index.clone());
                        Some(Target::Place {
                            prelude: Vec::new(),
                            place: Place::Index(coll, pq!(#index)),
                            steps: Vec::new(),
                        })
                    }
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

    /// Emits the views of `steps` from `place`; returns the statements, the
    /// place's own value and state, and the variables holding the final
    /// value and its state.
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
        let mode = self.mode;
        let mut stmts = prelude;
        // `r.view().mul_(a).add_(b)`: the prelude (`mul_`) made `r` stale.
        let chained = !stmts.is_empty();
        let (pv, ps) = self.place_value_state(place, &mut stmts);
        if chained
            && let Place::Var(id) | Place::Index(id, _) = place
            && let Some(sync) = self.sync_stmt(*id)
        {
            stmts.push(sync);
        }
        let (mut v, mut s) = (pv.clone(), ps.clone());
        for (k, step) in steps.iter().enumerate() {
            let nv = format_ident!("__fz_view_{}", k, span = Span::mixed_site());
            let ns = format_ident!("__fz_view_state_{}", k, span = Span::mixed_site());
            match step {
                Step::View(method, args) => stmts.push(pq!(
                    let (mut #nv, mut #ns) = #rt::view(&#v, &#s, #rt::ViewMeta::#method(#args), #mode);
                )),
                Step::MultiOut(method, args, index) => stmts.push(pq!(
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
                let v = self.var(id);
                match self.scopes.kind(id).clone() {
                    Kind::ElemRef { .. } => {
                        let ts = tmp("__fz_elem_state");
                        stmts.push(pq!(let mut #ts = #rt::Tracked::element(&*#v);));
                        (quote!((*#v)), quote!(#ts))
                    }
                    _ if self.has_state(id) => {
                        self.need_sync(id);
                        let s = state_ident(id);
                        (quote!(#v), quote!(#s))
                    }
                    _ => {
                        let ts = tmp("__fz_root_state");
                        stmts.push(pq!(let mut #ts = #rt::Tracked::root(&#v);));
                        (quote!(#v), quote!(#ts))
                    }
                }
            }
            Place::Index(id, index) => {
                let id = *id;
                let v = self.var(id);
                let i = tmp("__fz_index");
                stmts.push(pq!(let #i: usize = #index;));
                match self.scopes.kind(id).clone() {
                    Kind::Multi { .. } if self.has_state(id) => {
                        self.need_sync(id);
                        let s = state_ident(id);
                        (quote!(#v[#i]), quote!(#s[#i]))
                    }
                    _ => {
                        let ts = tmp("__fz_elem_state");
                        stmts.push(pq!(let mut #ts = #rt::Tracked::element(&#v[#i]);));
                        (quote!(#v[#i]), quote!(#ts))
                    }
                }
            }
        }
    }

    /// True if `place` is a root variable (never a copy `reshape` made).
    fn place_is_root(&self, place: &Place) -> bool {
        matches!(place, Place::Var(id) if matches!(self.scopes.kind(*id), Kind::Root { .. }))
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
        let mode = self.mode;
        let op = m.method.to_string();
        let fname = Ident::new(functional, m.method.span());
        let root = self.receiver_root(&m.receiver);
        if self.refuse_in_closure(m, root) {
            return Expr::MethodCall(m.clone());
        }
        // The receiver first, as Rust evaluates it: in `v.mul_(2.0).add_(&w)`
        // the inner `mul_` runs before `&w` is read.
        let target = self.target(&m.receiver);
        let mut args = m.args.clone();
        for a in args.iter_mut() {
            self.visit_expr_mut(a);
        }
        match target {
            None => {
                let named = self.binding_of(&m.receiver).is_some();
                if !named
                    && (self.is_tensor_expr(&m.receiver)
                        || matches!(&*m.receiver, Expr::Call(_) | Expr::MethodCall(_)))
                {
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
                    return pq!({
                        let #t = #recv;
                        #rt::check_temp(#op, #text, &#t);
                        #t.#fname(#args)
                    });
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
                let (target_id, alias) = match &place {
                    Place::Var(id) => (*id, Some(*id)),
                    Place::Index(id, _) => (*id, None),
                };
                self.mark_mutated(target_id);
                let commit_root = self.scopes.root_of(target_id);
                let fresh = if steps.is_empty() { alias } else { None };
                let direct_root = steps.is_empty() && self.commit_root_of(&place).is_none();
                if direct_root {
                    self.note_commit(commit_root, fresh);
                    return self.commit_direct(prelude, &place, &fname, &args, &op, want);
                }
                let chained = !prelude.is_empty();
                let (mut stmts, pv, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                if chained && steps_may_copy(&steps) {
                    // Each op of a chain re-makes the views from the place: a
                    // copy `reshape` made would be made afresh (refused).
                    stmts.push(pq!(#rt::check_chain_copy(#op, &#ps, &#s);));
                }
                // An alias commits into its root; views of a root place
                // commit into the place itself.
                let new = tmp("__fz_new");
                // Views made in this statement: the runtime also handles the
                // copies `reshape` & co. make (in the place, or in between).
                match self.commit_root_of(&place) {
                    Some((rv, rs))
                        if !steps.is_empty()
                            && (steps_may_copy(&steps) || !self.place_is_root(&place)) =>
                    {
                        stmts.push(pq!(let #new = #v.#fname(#args);));
                        stmts.push(pq!(
                        #rt::commit_from(#op, &mut #rv, &mut #rs, Some((&mut #pv, &mut #ps)), &mut #v, &mut #s, #new, #mode);
                        ))
                    }
                    None if steps_may_copy(&steps) => {
                        stmts.push(pq!(let #new = #v.#fname(#args);));
                        stmts.push(pq!(
                            #rt::commit_from(#op, &mut #pv, &mut #ps, None, &mut #v, &mut #s, #new, #mode);
                        ))
                    }
                    None if matches!(want, Want::Nothing)
                        && window_step(&steps)
                        && !args.iter().any(|a| mentions(a.to_token_stream(), &pv)) =>
                    {
                        // `root.narrow(..).copy_(x);`: the view is a
                        // temporary, so the runtime needs no state for it
                        // and writes straight into a uniquely held root.
                        let Step::View(vm, vargs) = &steps[0] else {
                            unreachable!("a multi-output step is not a statement's only step")
                        };
                        stmts.pop(); // the view `emit_steps_from` made: `update_view` makes it
                        let fname_str = fname.to_string();
                        let method = &m.method;
                        let names = arg_names(args.len());
                        let vals = args.iter();
                        let tv = tmp("__fz_v");
                        stmts.push(pq!(
                            #rt::update_view(
                                #op, #fname_str, &mut #pv, &mut #ps,
                                #rt::ViewMeta::#vm(#vargs), #mode, (#(#vals,)*),
                                |#tv, (#(#names,)*)| { #tv.#method(#(#names),*); },
                                |#tv, (#(#names,)*)| #tv.#fname(#(#names),*),
                            );
                        ));
                    }
                    other => {
                        // A view of the root: the in-place kernel may run on
                        // the view when nobody else can observe it.
                        let (rv, rs) = other.unwrap_or((pv, ps));
                        let fname_str = fname.to_string();
                        let method = &m.method;
                        stmts.push(donating_update(
                            &args,
                            pq!(#rt::can_donate_alias(&#rv, &#rs, &#v, &#s)),
                            |a| {
                                pq!(
                                    #v.#method(#a);
                                    #rt::commit_donated(#op, #fname_str, &mut #rv, &mut #rs, &mut #v, &mut #s, #mode);
                                )
                            },
                            |a| {
                                pq!(
                                    let #new = #v.#fname(#a);
                                    #rt::commit(#op, &mut #rv, &mut #rs, &mut #v, &mut #s, #new, #mode);
                                )
                            },
                        ));
                    }
                }
                self.note_commit(commit_root, fresh);
                let tail: Expr = match want {
                    Want::Nothing => return pq!({ #(#stmts)* }),
                    Want::Value => pq!(#rt::handle(&#v)),
                    Want::Bound => pq!((#rt::handle(&#v), #s.clone())),
                };
                pq!({ #(#stmts)* #tail })
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
        let index_tmp = tmp("__fz_index");
        let (value, state): (TokenStream, Option<TokenStream>) = match place {
            Place::Var(id) => {
                let v = self.var(*id);
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
                let v = self.var(*id);
                stmts.push(pq!(let #index_tmp: usize = #index;));
                (quote!(#v[#index_tmp]), None)
            }
        };
        let inplace = Ident::new(op, f.span());
        let fname = f.to_string();
        // The test: an input's buffer may be updated in place while the
        // caller's tensor is its only other handle (see `rt::Tracked::input`).
        let test: Stmt = match (place, &state) {
            (_, Some(s)) => pq!(#rt::can_donate_root(&#value, &#s)),
            (Place::Index(id, _), None) if self.is_input_coll(*id) => {
                let caller = input_ident(*id);
                pq!(#rt::can_donate_elem(&#value, #caller.get(#index_tmp)))
            }
            _ => pq!(#rt::can_donate(&#value)),
        };
        stmts.push(donating_update(
            args,
            test,
            |a| match &state {
                Some(s) => pq!(
                    #value.#inplace(#a);
                    #rt::donated_root(#op, #fname, &mut #value, &mut #s);
                ),
                None => pq!(
                    #value.#inplace(#a);
                    #rt::donated(#fname, &mut #value);
                ),
            },
            |a| match &state {
                Some(s) => pq!(
                    let #new = #value.#f(#a);
                    #rt::commit_root(#op, &mut #value, &mut #s, #new);
                ),
                None => pq!(
                    let #new = #value.#f(#a);
                    #value = #new;
                ),
            },
        ));
        let tail: Expr = match (want, &state) {
            (Want::Nothing, _) => return pq!({ #(#stmts)* }),
            (Want::Value, _) => pq!(#rt::handle(&#value)),
            (Want::Bound, Some(s)) => pq!((#rt::handle(&#value), #s.clone())),
            (Want::Bound, None) => {
                pq!((#rt::handle(&#value), #rt::Tracked::root(&#value)))
            }
        };
        pq!({ #(#stmts)* #tail })
    }

    fn lower_meta(&mut self, m: &syn::ExprMethodCall, view: &str, want: Want) -> Expr {
        let rt = rt();
        let mode = self.mode;
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
        let v = self.var(id);
        let s = state_ident(id);
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
                pq!({ #v = #rt::view_value(&#v, #rt::ViewMeta::#meta(#args), #mode); #tail })
            }
            Kind::Root { .. } | Kind::Alias { .. } if self.has_state(id) => {
                if let Kind::Root { .. } = self.scopes.kind(id) {
                    self.found.meta.insert(id);
                }
                self.need_sync(id);
                pq!({ #rt::meta_inplace(&mut #v, &mut #s, #rt::ViewMeta::#meta(#args), #mode); #tail })
            }
            Kind::Alias { .. } => {
                pq!({ #v = #rt::view_value(&#v, #rt::ViewMeta::#meta(#args), #mode); #tail })
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
                let viewed = self.scopes.bindings.iter().any(
                    |b| matches!(b.kind, Kind::Alias { root } | Kind::Multi { root } if root == id),
                );
                if viewed {
                    // The views keep addressing the storage as laid out
                    // before; replaying them on the new layout would not.
                    self.error(
                        m,
                        format!(
                            "`resize_` on `{}`, which has views: #[functionalize] cannot keep them in sync \
                             with the resized tensor",
                            self.scopes.ident(id)
                        ),
                        "resize before making views of it, or resize a `.clone()`",
                    );
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
                let v = self.var(id);
                if self.based(id) {
                    let s = state_ident(id);
                    let (b, bs) = (base_ident(id), base_state_ident(id));
                    let name = self.scopes.ident(id).to_string();
                    let mode = self.mode;
                    pq!(#rt::resize_root(#name, &mut #v, &mut #s, (&mut #b, &mut #bs), #args, #keep_tail, #mode))
                } else if self.has_state(id) {
                    let s = state_ident(id);
                    pq!({ let __fz_new = #rt::resized(&#v, #args); #rt::commit_root("resize_", &mut #v, &mut #s, __fz_new); #rt::handle(&#v) })
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
                let (v, s) = (self.var(id), state_ident(id));
                let name = self.scopes.ident(id).to_string();
                let mode = self.mode;
                pq!(#rt::resize_view(#name, &mut #v, &mut #s, #args, #mode))
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

    /// Builds an exit: the write-backs, then `value`, when `value` moves an
    /// input (so it cannot be read after); else `value` first, as PyTorch
    /// (the `copy_` epilogue comes last).
    fn exit_block(&self, value: Expr, write_back_first: bool, ret: bool) -> Expr {
        let wb = &self.exit;
        if write_back_first {
            if ret {
                pq!({ #(#wb)* return #value; })
            } else {
                pq!({ #(#wb)* #value })
            }
        } else {
            // The value may diverge (`panic!(..)` as the tail): the
            // write-back after it is unreachable, which is not the user's
            // code to be warned about.
            let r = tmp("__fz_ret");
            if ret {
                pq!({
                    #[allow(clippy::diverging_sub_expression)] let #r = #value;
                    #[allow(unreachable_code)] { #(#wb)* }
                    return #r;
                })
            } else {
                pq!({
                    #[allow(clippy::diverging_sub_expression)] let #r = #value;
                    #[allow(unreachable_code)] { #(#wb)* }
                    #r
                })
            }
        }
    }

    /// True if evaluating `e` may move a shadowed input variable (a bare
    /// use that is not borrowed, indexed or a method receiver).
    pub fn moves_input(&self, e: &Expr) -> bool {
        struct V<'l, 'a> {
            lw: &'l Lowerer<'a>,
            moved: bool,
        }
        impl V<'_, '_> {
            fn input(&self, e: &Expr) -> bool {
                self.lw.binding_of(e).is_some_and(|id| {
                    matches!(
                        self.lw.scopes.kind(id),
                        Kind::Root { input: Some(_), .. } | Kind::Coll { input: Some(_) }
                    )
                })
            }
            fn borrowed(&mut self, e: &Expr) {
                if !self.input(e) {
                    syn::visit::Visit::visit_expr(self, e);
                }
            }
        }
        impl<'ast> syn::visit::Visit<'ast> for V<'_, '_> {
            fn visit_expr(&mut self, e: &'ast Expr) {
                match e {
                    Expr::Path(_) if self.input(e) => self.moved = true,
                    Expr::MethodCall(m) => {
                        self.borrowed(&m.receiver);
                        for a in &m.args {
                            self.visit_expr(a);
                        }
                    }
                    Expr::Reference(r) => self.borrowed(&r.expr),
                    // `*y` of a `&`/`&mut` input is a place, not a move of `y`.
                    Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.borrowed(&u.expr),
                    Expr::Index(i) => {
                        self.borrowed(&i.expr);
                        self.visit_expr(&i.index);
                    }
                    Expr::Field(f) => self.borrowed(&f.base),
                    _ => syn::visit::visit_expr(self, e),
                }
            }
        }
        let mut v = V {
            lw: self,
            moved: false,
        };
        syn::visit::Visit::visit_expr(&mut v, e);
        v.moved
    }

    /// Wraps the function's tail expression with the input write-backs.
    /// `moves` is whether the tail as written moves an input.
    pub fn lower_tail(&mut self, e: Expr, moves: bool) -> Expr {
        if self.exit.is_empty() {
            return e;
        }
        self.exit_block(e, moves, false)
    }

    /// Lowers a macro invocation whose arguments are expressions
    /// (`vec![a, b]`, `vec![x; n]`, `println!("{}", x)`, `assert!(..)`): each
    /// argument is lowered like any expression, and a tensor named inside a
    /// format string (`"{x}"`) that lives in a hidden variable is passed as a
    /// named argument. Arguments that are not expressions are left as
    /// written; reading a tracked tensor there is refused.
    ///
    /// Input: `println!("{x:?} {}", y.sum())` with `x` mutated before.
    /// Output: `println!("{x:?} {}", y.sum(), x = __fz_x_0)`.
    fn lower_macro(&mut self, mac: &mut syn::Macro) {
        self.check_macro(mac);
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        if let Ok(mut args) = syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
            if mac.path.segments.last().is_some_and(|s| s.ident == "vec") {
                for a in args.iter() {
                    self.check_stored(a, false);
                }
            }
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            // Implicit captures of a format string.
            let mut extra: Vec<TokenStream> = Vec::new();
            if let Some(Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(fmt),
                ..
            })) = args.iter().find(|a| {
                matches!(
                    a,
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(_),
                        ..
                    })
                )
            }) {
                for name in format_captures(&fmt.value()) {
                    if extra
                        .iter()
                        .any(|t| t.to_string().starts_with(&format!("{name} =")))
                    {
                        continue;
                    }
                    if let Some(id) = self.scopes.lookup(&name) {
                        let ident = Ident::new(&name, fmt.span());
                        let mut value: Expr = syn::parse_quote!(#ident);
                        self.use_binding(id, &mut value);
                        if value.to_token_stream().to_string() != name {
                            extra.push(quote!(#ident = #value));
                        }
                    }
                }
            }
            mac.tokens = if extra.is_empty() {
                args.to_token_stream()
            } else {
                let sep = (!args.empty_or_trailing()).then(|| quote!(,));
                quote!(#args #sep #(#extra),*)
            };
            return;
        }
        // `vec![x; n]`.
        struct Repeat(Expr, Token![;], Expr);
        impl syn::parse::Parse for Repeat {
            fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
                Ok(Repeat(input.parse()?, input.parse()?, input.parse()?))
            }
        }
        if let Ok(Repeat(mut a, semi, mut b)) = syn::parse2::<Repeat>(mac.tokens.clone()) {
            self.visit_expr_mut(&mut a);
            self.visit_expr_mut(&mut b);
            mac.tokens = quote!(#a #semi #b);
            return;
        }
        // Not expressions: a tracked tensor named there would be read as
        // the caller's, stale.
        let mut names = Vec::new();
        scan_tokens(mac.tokens.clone(), &mut |_, ident: &Ident| {
            names.push(ident.clone())
        });
        for ident in names {
            if let Some(id) = self.scopes.lookup(&ident.to_string())
                && self.var(id) != ident
                && self.has_state(id)
            {
                self.error(
                    &ident,
                    format!(
                        "`{ident}` is read inside a macro whose arguments are not expressions: #[functionalize] \
                         cannot see into them, and `{ident}` is mutated in this function"
                    ),
                    format!("bind what the macro needs first: `let v = &{ident};` and pass `v` to the macro"),
                );
            }
        }
    }

    /// Refuses storing a view of a tensor this function mutates in a
    /// collection or struct that outlives the statement (`let v = vec![x.t()]`,
    /// `list.push(x.narrow(..))`): the stored view would not follow later
    /// mutations of `x` (issue 11's `vec![..]` repro read a stale value).
    fn check_stored(&self, e: &Expr, always: bool) {
        if !(always || self.let_depth > 0) {
            return;
        }
        if let Some(root) = self.view_chain_root(e)
            && self.mutated_later(root)
        {
            self.error(
                e,
                format!(
                    "a view of `{}` is stored in a collection or struct, but this function mutates `{}` later: \
                     the stored view would not follow the mutation",
                    self.scopes.ident(root),
                    self.scopes.ident(root)
                ),
                "store a copy (`.clone()`), or build the collection after the last mutation, or keep the view in \
                 its own variable (`let v = ...;`), which #[functionalize] keeps up to date",
            );
        }
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

/// True if `steps` is one view whose inverse is a scatter into a window
/// (`narrow`, `slice`, `select`, `diagonal`): `rt::update_view` writes such
/// a view of a uniquely held root in place.
fn window_step(steps: &[Step]) -> bool {
    use optable::Inverse::*;
    match steps {
        [Step::View(m, _)] => matches!(
            optable::lookup(&m.to_string()).map(|i| i.kind),
            Some(OpKind::View {
                inverse: SliceScatter | SelectScatter | DiagonalScatter,
                ..
            })
        ),
        _ => false,
    }
}

/// True if `tokens` mention an identifier of `place` (an argument that
/// borrows the place cannot be passed beside `&mut place`).
fn mentions(tokens: TokenStream, place: &TokenStream) -> bool {
    fn idents(ts: TokenStream, out: &mut Vec<Ident>) {
        for t in ts {
            match t {
                TokenTree::Ident(i) => out.push(i),
                TokenTree::Group(g) => idents(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut want = Vec::new();
    idents(place.clone(), &mut want);
    let mut seen = Vec::new();
    idents(tokens, &mut seen);
    seen.iter().any(|i| want.contains(i))
}

/// A functional update with buffer donation. The arguments are evaluated
/// first, into bindings of a `match` (so their temporaries live through
/// the update, as in the original call), then `test` asks the runtime
/// whether nobody else can observe the old value's buffer: if so,
/// `inplace` runs the in-place kernel on it and records the result as the
/// functional op with a fresh identity; otherwise `functional` computes a
/// fresh value and commits it. Each closure receives the argument list to
/// call with. The test runs after every piece of user code in the
/// arguments, so a handle they make to the buffer blocks the donation.
fn donating_update(
    args: &Args,
    test: Stmt,
    inplace: impl FnOnce(&TokenStream) -> Stmt,
    functional: impl FnOnce(&TokenStream) -> Stmt,
) -> Stmt {
    let names = arg_names(args.len());
    let a = quote!(#(#names),*);
    let inplace = inplace(&a);
    let functional = functional(&a);
    let update = quote!(if #test { #inplace } else { #functional });
    if args.is_empty() {
        return pq!(#update);
    }
    let values = args.iter();
    pq!(match (#(#values,)*) { (#(#names,)*) => #update })
}

/// The bindings of `n` evaluated in-place op arguments.
fn arg_names(n: usize) -> Vec<Ident> {
    (0..n).map(|k| tmp(&format!("__fz_arg{k}"))).collect()
}

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

impl VisitMut for Lowerer<'_> {
    fn visit_block_mut(&mut self, b: &mut Block) {
        self.scopes.push();
        let stmts = std::mem::take(&mut b.stmts);
        b.stmts = self.lower_stmts(stmts);
        self.scopes.pop();
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // Long chains (`x.add_(1).add_(1)...`, `a + b + ...`, nested blocks)
        // recurse once per link: grow the stack instead of overflowing it.
        grow(|| {
            let looping = matches!(e, Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_));
            self.loop_depth += usize::from(looping);
            self.lower_expr(e);
            self.loop_depth -= usize::from(looping);
        })
    }
}

impl Lowerer<'_> {
    /// Lowers one expression (see [`VisitMut::visit_expr_mut`], which
    /// counts the loops around it).
    fn lower_expr(&mut self, e: &mut Expr) {
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
                    let mode = self.mode;
                    let (v, s) = (self.var(id), state_ident(id));
                    let (rv, rs) = self.root_value_state(root);
                    let k = &ix.index;
                    self.push_pre(pq!(#rt::sync(&mut #v[#k], &mut #s[#k], &#rv, &#rs, #mode);));
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
                let ident = self.var(id);
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
                let call: Expr = if matches!(&**l, Expr::Unary(_)) {
                    syn::parse_quote!((#l).#method(#r))
                } else {
                    syn::parse_quote!(#l.#method(#r))
                };
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
                        visit_mut::visit_expr_mut(self, e);
                        unmut_receiver(e);
                        if let Expr::MethodCall(m) = e {
                            let rt = rt();
                            let mode = self.mode;
                            let (recv, method, args) = (&m.receiver, &m.method, &m.args);
                            *e = if multi {
                                pq!(#rt::MultiMeta::#method(#args).forward(&#recv, #mode))
                            } else {
                                pq!(#rt::view_value(&#recv, #rt::ViewMeta::#method(#args), #mode))
                            };
                        }
                    }
                    None if !QUERIES.contains(&name.as_str())
                        && (self.binding_of(&m.receiver).is_some()
                            || matches!(&*m.receiver, Expr::Index(ix) if self.binding_of(&ix.expr)
                                .is_some_and(|id| matches!(self.scopes.kind(id), Kind::Multi { .. })))) =>
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
            Expr::Macro(m) => self.lower_macro(&mut m.mac),
            Expr::Return(r) if self.closure_floor.is_empty() && !self.exit.is_empty() => {
                let mut value: Expr = match r.expr.take() {
                    Some(v) => *v,
                    None => pq!(()),
                };
                let first = self.moves_input(&value);
                self.visit_expr_mut(&mut value);
                *e = self.exit_block(value, first, true);
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
}

/// The identifiers a format string captures implicitly (`{x}`, `{x:?}`,
/// `{x:>8}`), not positional (`{}`, `{0}`) or escaped (`{{`).
fn format_captures(fmt: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            continue;
        }
        if chars.peek() == Some(&'{') {
            chars.next();
            continue;
        }
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_alphanumeric() || c == '_' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        if name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// Whether the method call returns (a view of) its receiver's storage: a
/// view op or an in-place op of the op table.
fn passes_storage(m: &syn::ExprMethodCall) -> bool {
    matches!(
        optable::lookup(&m.method.to_string()).map(|i| i.kind),
        Some(
            OpKind::View { .. }
                | OpKind::MaybeView { .. }
                | OpKind::MultiView { .. }
                | OpKind::Inplace { .. }
                | OpKind::InplaceView { .. }
        )
    )
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
        let root = self.scopes.root_of(id).unwrap_or(id);
        if self.has_state(id)
            && self.captured(id)
            && self.closure_escapes.last() == Some(&true)
            && self.mutated_later(root)
        {
            self.error(
                &*e,
                format!(
                    "a closure bound in a `let` reads `{}`, which this function mutates later (through `{}`): \
                     #[functionalize] cannot see when the closure runs, so it could read a stale value",
                    self.scopes.ident(id),
                    self.scopes.ident(root)
                ),
                format!(
                    "pass the tensor to the closure as an argument (`|t: &Tensor| ...` called as `c(&{})`), or \
                     compute the value where the closure would run",
                    self.scopes.ident(id)
                ),
            );
        }
        if self.has_state(id) {
            self.check_stale_read(id, &*e);
        }
        self.need_sync(id);
        // `r` of `let r = &x;` reads `(&x)`.
        let via_ref = match &*e {
            Expr::Path(p) if p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.to_string();
                self.scopes.is_ref_name(&name).then_some(name)
            }
            _ => None,
        };
        if let Some(name) = &via_ref {
            let target = self.scopes.ident(id).clone();
            if self.scopes.lookup(&target.to_string()) != Some(id) {
                self.error(
                    &*e,
                    format!(
                        "`{name}` is a reference to `{target}`, which a later `let` shadows: #[functionalize] \
                         reads `{name}` as `&{target}` and cannot name the shadowed tensor"
                    ),
                    format!("rename the later `{target}`"),
                );
                return;
            }
            *e = pq!(#target);
        }
        self.use_binding_inner(id, e);
        if via_ref.is_some() {
            *e = pq!((&#e));
        }
    }

    fn use_binding_inner(&mut self, id: usize, e: &mut Expr) {
        let ident = self.var(id);
        match self.scopes.kind(id).clone() {
            Kind::Root { input: Some(p), .. } if self.tracked_root(id) => match p {
                Passing::Ref => *e = parse_quote_spanned_ref(&ident, false),
                Passing::RefMut => *e = parse_quote_spanned_ref(&ident, true),
                Passing::Value => *e = pq!(#ident),
            },
            Kind::Root { input: None, .. } if self.has_state(id) => *e = pq!(#ident),
            Kind::ElemRef { .. } if self.shared_elems.contains(&id) => *e = pq!((&*#ident)),
            Kind::ElemAt { coll, index } => {
                let c = self.var(coll);
                *e = pq!((&#c[#index]));
            }
            Kind::Coll {
                input: Some((p, vec)),
            } if self.facts.mutated.contains(&id) => match (p, vec) {
                (Passing::Ref, false) => *e = pq!((&#ident[..])),
                (Passing::RefMut, false) => *e = pq!((&mut #ident[..])),
                (Passing::Ref, true) => *e = pq!((&#ident)),
                (Passing::RefMut, true) => *e = pq!((&mut #ident)),
                (Passing::Value, _) => {}
            },
            _ => {}
        }
    }

    /// A call the macro cannot see into: tracked tensors passed to it may
    /// come back mutated (checked with the storage version counter).
    fn opaque_call(&mut self, e: &mut Expr) {
        let rt = rt();
        let mode = self.mode;
        // Which tracked bindings does the call receive by reference?
        let mut passed: Vec<(usize, bool)> = Vec::new();
        // Elements `p[i]` of multi-output views it receives (or is called on).
        let mut elems: Vec<(usize, Expr)> = Vec::new();
        let multi_elem = |this: &Self, a: &Expr| -> Option<(usize, Expr)> {
            let inner = match a {
                Expr::Reference(r) => &*r.expr,
                other => other,
            };
            match inner {
                Expr::Index(ix) => this
                    .binding_of(&ix.expr)
                    .filter(|&id| matches!(this.scopes.kind(id), Kind::Multi { .. }))
                    .map(|id| (id, (*ix.index).clone())),
                _ => None,
            }
        };
        match &*e {
            Expr::Call(c) => elems.extend(c.args.iter().filter_map(|a| multi_elem(self, a))),
            Expr::MethodCall(m) => {
                elems.extend(multi_elem(self, &m.receiver));
                elems.extend(m.args.iter().filter_map(|a| multi_elem(self, a)));
            }
            _ => {}
        }
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
            Kind::Root { .. } => self.facts.mutated.contains(id) && self.has_aliases(*id),
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
            && !COLL_READS.contains(&m.method.to_string().as_str())
        {
            let v = self.var(id);
            Some(pq!(#rt::detach_all(&mut #v[..]);))
        } else {
            None
        };
        if let Expr::MethodCall(m) = &*e
            && matches!(
                m.method.to_string().as_str(),
                "push" | "insert" | "push_back" | "push_front" | "extend"
            )
        {
            for a in m.args.iter() {
                self.check_stored(a, true);
            }
        }
        let mut arg_before = Vec::new();
        let mut arg_after = Vec::new();
        self.visit_opaque_args(e, &mut arg_before, &mut arg_after);
        arg_after.extend(detach);
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
            return;
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
            let (v, s) = (self.var(*id), state_ident(*id));
            let i = format_ident!("__fz_elem_index_{}", k, span = Span::mixed_site());
            let ver = format_ident!("__fz_elem_version_{}", k, span = Span::mixed_site());
            before.push(pq!(let #i: usize = #index;));
            before.push(pq!(let #ver = #rt::version(&#v[#i]);));
            self.note_commit(Some(root), Some(*id));
            let (rv, rs) = self.root_value_state(root);
            after.push(pq!(if #rt::version(&#v[#i]) != #ver {
                let __fz_h = #rt::handle(&#v[#i]);
                #rt::commit(#what, &mut #rv, &mut #rs, &mut #v[#i], &mut #s[#i], __fz_h, #mode);
            }));
        }
        for (k, id) in elem_views.iter().enumerate() {
            let v = self.var(*id);
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
            let v = self.var(*id);
            let ver = format_ident!("__fz_version_{}", k, span = Span::mixed_site());
            before.push(pq!(let #ver = #rt::version(&#v);));
            let s = state_ident(*id);
            let root = self.scopes.root_of(*id);
            self.note_commit(root, Some(*id));
            let commit: Stmt = match self.scopes.kind(*id).clone() {
                // A root re-laid-out by `t_()` & co. is a view of its hidden
                // base: commit into the base through its chain.
                Kind::Root { .. } if self.based(*id) => {
                    let (rv, rs) = self.root_value_state(*id);
                    pq!({
                        let __fz_h = #rt::handle(&#v);
                        #rt::commit(#what, &mut #rv, &mut #rs, &mut #v, &mut #s, __fz_h, #mode);
                    })
                }
                Kind::Alias { root } => {
                    let (rv, rs) = self.root_value_state(root);
                    pq!({
                        let __fz_h = #rt::handle(&#v);
                        #rt::commit(#what, &mut #rv, &mut #rs, &mut #v, &mut #s, __fz_h, #mode);
                    })
                }
                _ => pq!(#s.bump();),
            };
            after.push(pq!(if #rt::version(&#v) != #ver { #commit }));
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
            let v = self.var(*id);
            let s = state_ident(*id);
            let name = self.scopes.ident(*id).to_string();
            let views = self.has_aliases(*id);
            let idt = format_ident!("__fz_identity_{}", k, span = Span::mixed_site());
            before.push(pq!(let #idt = #rt::identity(&#v);));
            after.push(pq!(if #rt::identity(&#v) != #idt { #rt::rebind(#name, &mut #v, &mut #s, #views); }));
        }
        if before.is_empty() && after.is_empty() {
            return;
        }
        let r = tmp("__fz_call");
        let call = e.clone();
        *e = pq!({ #(#before)* let #r = #call; #(#after)* #r });
    }

    /// Lowers the parts of an opaque call. In copies mode a `&x.view(..)`
    /// argument is a `*_copy` bound to a temporary; if the callee mutates
    /// it, the mutation is written back as `x.view(..).copy_(&tmp)`, lowered
    /// like any in-place op (so the original's values are kept).
    ///
    /// Input: `helper(&d.narrow(0, 0, 2))`
    /// Output (copies mode): `let __fz_arg_0 = narrow_copy(d); let v =
    /// version(&__fz_arg_0); helper(&__fz_arg_0); if version changed {
    /// <lowered d.narrow(0, 0, 2).copy_(&__fz_arg_0)> }`
    fn visit_opaque_args(&mut self, e: &mut Expr, before: &mut Vec<Stmt>, after: &mut Vec<Stmt>) {
        let view_arg = |a: &Expr| -> Option<(Expr, bool)> {
            match a {
                Expr::Reference(r) => match &*r.expr {
                    Expr::MethodCall(m)
                        if matches!(
                            optable::lookup(&m.method.to_string()).map(|i| i.kind),
                            Some(OpKind::View { .. } | OpKind::MaybeView { .. })
                        ) =>
                    {
                        Some(((*r.expr).clone(), r.mutability.is_some()))
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let args = match e {
            Expr::Call(c) => {
                self.visit_expr_mut(&mut c.func);
                &mut c.args
            }
            Expr::MethodCall(m) => {
                self.visit_expr_mut(&mut m.receiver);
                &mut m.args
            }
            _ => return visit_mut::visit_expr_mut(self, e),
        };
        let mut args_taken = std::mem::take(args);
        for (k, a) in args_taken.iter_mut().enumerate() {
            match view_arg(a) {
                Some((view, by_mut)) if self.copies() && self.is_tensor_expr(&view) => {
                    let rt = rt();
                    let t = format_ident!("__fz_arg_{}", k, span = Span::mixed_site());
                    let ver = format_ident!("__fz_arg_version_{}", k, span = Span::mixed_site());
                    let mut value = view.clone();
                    self.visit_expr_mut(&mut value);
                    before.push(pq!(let mut #t = #value;));
                    before.push(pq!(let #ver = #rt::version(&#t);));
                    let write: Expr = syn::parse_quote!((#view).copy_(&#t));
                    if let Some(lowered) = self.try_inplace(&write, Want::Nothing) {
                        after.push(pq!(if #rt::version(&#t) != #ver { #lowered; }));
                    }
                    *a = if by_mut { pq!(&mut #t) } else { pq!(&#t) };
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

    fn has_aliases(&self, root: usize) -> bool {
        self.scopes.bindings.iter().any(
            |b| matches!(b.kind, Kind::Alias { root: r } | Kind::Multi { root: r } if r == root),
        ) || self.based(root)
    }

    fn lower_assign(&mut self, e: &mut Expr) {
        let Expr::Assign(a) = e else { return };
        let mut replace: Option<Expr> = None;
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
            Kind::Root { input, .. } => {
                // The new value must be fresh: the root's mutations are not
                // written anywhere else. A view (or the handle) of a tensor
                // of this function is refused; an unknown value is checked.
                let mut check_fresh = false;
                if self.has_state(id) {
                    let direct = self
                        .binding_of(&a.right)
                        .filter(|&b| self.is_tensor_binding(b))
                        .and_then(|b| self.scopes.root_of(b))
                        .map(|r| (r, false));
                    match self.view_chain_root(&a.right).map(|r| (r, true)).or(direct) {
                        // `x = x.narrow(..)` of a local: its old storage is
                        // not seen elsewhere. `x = w` moves a local.
                        Some((r, true)) if r == id && input.is_none() => {}
                        Some((r, false))
                            if r != id
                                && matches!(
                                    self.scopes.kind(r),
                                    Kind::Root { input: None, .. }
                                )
                                && !self.has_aliases(r) => {}
                        Some((r, _)) => crate::diag::assign_alias_to_root(self, &a.right, id, r),
                        None => check_fresh = !self.is_tensor_expr(&a.right),
                    }
                }
                self.visit_expr_mut(&mut a.right);
                // Aliases of the old value keep it: bring those in scope up to
                // date now, while the old value is still there.
                let mut resync: Vec<Stmt> = Vec::new();
                if self.has_state(id) {
                    for (b, binding) in self.scopes.bindings.iter().enumerate() {
                        let of_root = matches!(binding.kind,
                            Kind::Alias { root } | Kind::Multi { root } if root == id);
                        let visible = self.scopes.lookup(&binding.ident.to_string()) == Some(b);
                        if of_root
                            && visible
                            && let Some(stmt) = self.sync_stmt(b)
                        {
                            resync.push(stmt);
                        }
                    }
                }
                // An owned input (`mut x: Tensor`) assigned a new value: the
                // caller's tensor keeps what the body did to it so far (it is
                // written now), and is not written at exit (the new value is
                // fresh: proved, refused or checked above).
                let mut after: Vec<Stmt> = Vec::new();
                if self.has_state(id)
                    && let Kind::Root {
                        input: Some(Passing::Value),
                        ..
                    } = self.scopes.kind(id)
                {
                    let rt = rt();
                    let input = input_ident(id);
                    let (cur, _) = self.root_value_state(id);
                    resync.push(pq!(#rt::write_back_owned(&#input, &#cur);));
                    after.push(pq!(#input = #rt::released();));
                }
                if self.based(id) {
                    // A root re-laid-out by `t_()` & co.: the new value is its
                    // new hidden base, and it no longer views the old one.
                    let check = if check_fresh {
                        self.freshness_check(id)
                    } else {
                        None
                    };
                    let v = self.var(id);
                    let s = state_ident(id);
                    let (b, bs) = (base_ident(id), base_state_ident(id));
                    let right = &a.right;
                    let rt = rt();
                    replace = Some(pq!({
                        #(#resync)*
                        #v = #right;
                        #check
                        #b = #rt::handle(&#v);
                        #bs.rebind(&#b);
                        #s = #bs.clone();
                        #(#after)*
                    }));
                } else if self.has_state(id) {
                    let v = self.var(id);
                    let s = state_ident(id);
                    let right = &a.right;
                    let check = if check_fresh {
                        self.freshness_check(id)
                    } else {
                        None
                    };
                    replace =
                        Some(pq!({ #(#resync)* #v = #right; #check #s.rebind(&#v); #(#after)* }));
                }
            }
            Kind::Alias { root } => {
                let expr = (*a.right).clone();
                if let Some((prelude, place, steps, None)) = self.view_chain(&expr)
                    && self.place_root(&place) == Some(root)
                {
                    if self.has_state(id) {
                        let (mut stmts, _, ps, v, s) =
                            self.emit_steps_from(prelude, &place, &steps);
                        let rt = rt();
                        let ident = self.var(id);
                        let st = state_ident(id);
                        if steps_may_copy(&steps) {
                            // (`v = v.reshape(..)`: the place may be `v` itself.)
                            stmts.push(pq!({
                                let __fz_place_state = #ps.clone();
                                #ident = #v;
                                #st = #s;
                                #rt::bind_view(&__fz_place_state, &mut #st);
                            }));
                        } else {
                            stmts.push(pq!({ #ident = #v; #st = #s; }));
                        }
                        replace = Some(pq!({ #(#stmts)* }));
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
        if let Some(new) = replace {
            *e = new;
        }
    }

    fn lower_for(&mut self, e: &mut Expr) {
        let Expr::ForLoop(f) = e else { return };
        let rt = rt();
        let mode = self.mode;
        self.scopes.push();
        let expr = (*f.expr).clone();
        let ident = Self::pat_ident(&f.pat);
        if let Some(ident) = &ident
            && let Some(coll) = self.elem_alias_coll(&expr)
        {
            // `for r in xs[i].unbind(0)`: plain values, watched like a `let`.
            self.visit_expr_mut(&mut f.expr);
            let id = self.scopes.declare(
                ident,
                Kind::Root {
                    input: None,
                    known: true,
                },
            );
            self.elem_aliases.push((id, coll));
            self.visit_block_mut(&mut f.body);
            self.scopes.pop();
            return;
        }
        // `for r in x.unbind(0) { .. }`: r is a view of x's root.
        if let Some(ident) = ident.clone()
            && let Some((prelude, place, steps, Some((method, args)))) = self.view_chain(&expr)
            && let Some(root) = self.place_root(&place)
        {
            if self.tracked_root(root) {
                let (stmts, _, ps, v, s) = self.emit_steps_from(prelude, &place, &steps);
                let id = self.scopes.declare(&ident, Kind::Alias { root });
                let st = state_ident(id);
                let vals = tmp("__fz_values");
                let sts = tmp("__fz_states");
                self.visit_block_mut(&mut f.body);
                let body = &f.body;
                let label = &f.label;
                let may_copy = steps_may_copy(&steps);
                let bind: Option<Stmt> = may_copy.then(|| pq!(#rt::bind_views(&#ps, &mut #sts);));
                let mutability = may_copy.then(|| quote!(mut));
                let new: Expr = pq!({
                    #(#stmts)*
                    let (#vals, #mutability #sts) = #rt::multi_view(&#v, &#s, #rt::MultiMeta::#method(#args), #mode);
                    #bind
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
            self.converted.clear();
            self.mutable_iter(&mut expr, shape);
            *f.expr = expr;
            let mut pat = (*f.pat).clone();
            self.bind_iter_pat(&mut pat, shape);
            self.converted.clear();
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
                // `d.iter()` / `&d` / `d` of a `&[Tensor]` yields `&Tensor`.
                let yields_mut = match &*e {
                    Expr::MethodCall(m) => m.method == "iter_mut",
                    Expr::Reference(r) => r.mutability.is_some(),
                    _ => matches!(
                        self.scopes.kind(*id),
                        Kind::Coll {
                            input: Some((Passing::RefMut, _))
                        }
                    ),
                };
                if !yields_mut {
                    self.converted.push(*id);
                }
                let ident = self.var(*id);
                *e = pq!(#ident.iter_mut());
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
                let b = self.scopes.declare(&pi.ident, Kind::ElemRef { coll: *id });
                if self.converted.contains(id) {
                    self.shared_elems.push(b);
                }
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

/// True if a view step may copy (`reshape`, `flatten`, `contiguous`): the
/// runtime then has a copy's bookkeeping to do (`bind_view`, `commit_from`).
fn steps_may_copy(steps: &[Step]) -> bool {
    steps.iter().any(|s| {
        matches!(s, Step::View(m, _) if matches!(
            optable::lookup(&m.to_string()).map(|i| i.kind),
            Some(OpKind::MaybeView { .. })
        ))
    })
}

/// `(&mut y).op(..)` -> `y.op(..)` for a `&self` tensor method on a
/// shadowed `&mut` input (a mutable borrow of the receiver would conflict
/// with reads of `y` in the arguments: `y.mul(&*y)`).
fn unmut_receiver(e: &mut Expr) {
    if let Expr::MethodCall(m) = e
        && let Expr::Paren(p) = &*m.receiver
        && let Expr::Reference(r) = &*p.expr
        && r.mutability.is_some()
        && matches!(&*r.expr, Expr::Path(_))
    {
        let inner = (*r.expr).clone();
        *m.receiver = inner;
    }
}

fn parse_quote_spanned_ref(ident: &Ident, by_mut: bool) -> Expr {
    let span = ident.span();
    if by_mut {
        syn::parse2(quote_spanned!(span=> (&mut #ident))).expect("a reference expression")
    } else {
        syn::parse2(quote_spanned!(span=> (&#ident))).expect("a reference expression")
    }
}
