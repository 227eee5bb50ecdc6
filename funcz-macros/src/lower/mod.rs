//! Rewrites a function body: in-place ops become functional ops whose
//! results are committed back into their roots, views become tracked
//! aliases (or `*_copy`s), stale aliases are regenerated where they are
//! used, and every exit writes mutated inputs back.
//!
//! Input: `fn f(a: &Tensor) -> Tensor { let x = a.clone(); x.add_(1.0); x }`
//! Output: `let mut __fz_v_x_1 = a.clone(); let mut __fz_state_1 = rt::Tracked::root(&__fz_v_x_1);`
//! then `add_` as a donating update (`add_` on the buffer if nothing else
//! holds it, else `add` and `rt::commit_root`), and `x` returned.

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
use access::{Access, Field, var_pair};
use toks::Toks;

/// Read-only `Tensor` methods that are not ops (queries): calling them is
/// never a mutation.
/// Methods that only read their receiver and return a value whose layout
/// does not depend on the receiver's strides: in copies mode, a view chain
/// they read is lowered to `rt::read_view` (the view itself when no trace
/// is recorded, its `*_copy` when one is).
const READS: &[&str] = &[
    "sum",
    "sum_dim",
    "sum_dims",
    "mean",
    "mean_dim",
    "mean_dims",
    "amax",
    "amin",
    "max",
    "min",
    "argmax",
    "argmin",
    "max_dim",
    "min_dim",
    "item",
    "to_vec",
    "allclose",
    "equal",
    "norm",
    "vector_norm",
    "var",
    "std",
    "var_mean",
    "prod",
    "all",
    "any",
];

pub(crate) const QUERIES: &[&str] = &[
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

/// A method neither in the op table nor a query: the macro does not know
/// what it does (it may replace its receiver, `*self = ..`).
pub(crate) fn unknown_method(name: &str) -> bool {
    optable::lookup(name).is_none() && !QUERIES.contains(&name)
}

/// Methods of a slice or `Vec` of tensors that neither reorder nor replace
/// elements.
pub(crate) const COLL_READS: &[&str] = &[
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

/// The arguments of the `ViewMeta`/`MultiMeta` constructor `method`,
/// with each unsuffixed integer literal that fits an `i32` (negated or
/// not) written `i64` where the constructor takes `impl AsI64`: the same
/// value (the original's literal falls back to `i32`, converted to `i64`
/// by the op), but the compiler need not infer and default the literal's
/// type through the trait's many impls, which made a 5,000-statement
/// body's views a fifth of its build time.
///
/// Input: `narrow`, `(0, i, -1)`
/// Output: `(0i64, i, -1i64)`
fn meta_args(method: &Ident, args: &Args) -> TokenStream {
    const AS_I64: &[&str] = &[
        "narrow",
        "slice",
        "select",
        "transpose",
        "diagonal",
        "squeeze_dim",
        "unsqueeze",
        "unfold",
        "split",
        "chunk",
        "unbind",
    ];
    if !AS_I64.contains(&method.to_string().as_str()) {
        return args.to_token_stream();
    }
    let typed = args.iter().map(|a| match literal_i64(a) {
        Some(t) => t.into_token_stream(),
        None => a.to_token_stream(),
    });
    quote!(#(#typed),*)
}

/// The `rt::ViewMeta` of the view `method(args)`: the variant itself
/// (`ViewMeta::Narrow(0i64, 0i64, 2i64)`, `ViewMeta::T`) when every argument
/// is an integer literal and their number is the variant's, else the
/// constructor call that converts them (`ViewMeta::narrow(0i64, i, 1i64)`),
/// which is also what reports a wrong argument at the user's span. A
/// variant is no call: cheaper to compile in an unoptimized build.
fn view_meta(rt: &Ident, method: &Ident, args: &Args) -> Toks {
    // (method, variant, arity) of the variants that hold only `i64`s.
    const VARIANTS: &[(&str, &str, usize)] = &[
        ("narrow", "Narrow", 3),
        ("slice", "Slice", 4),
        ("select", "Select", 2),
        ("transpose", "Transpose", 2),
        ("diagonal", "Diagonal", 3),
        ("squeeze_dim", "SqueezeDim", 1),
        ("unsqueeze", "Unsqueeze", 1),
        ("unfold", "Unfold", 3),
        ("t", "T", 0),
        ("squeeze", "Squeeze", 0),
    ];
    let name = method.to_string();
    if let Some(&(_, variant, arity)) = VARIANTS.iter().find(|(m, _, _)| *m == name)
        && args.len() == arity
    {
        let variant = Ident::new(variant, method.span());
        if arity == 0 {
            return meta_path(rt).ident(variant);
        }
        let typed: Option<Vec<Toks>> = args.iter().map(literal_i64).collect();
        if let Some(typed) = typed {
            return meta_path(rt).ident(variant).parens(quote!(#(#typed),*));
        }
    }
    let margs = meta_args(method, args);
    meta_path(rt).ident(method.clone()).parens(margs)
}

/// `__fz_rt::ViewMeta::`, as `quote!` writes it.
fn meta_path(rt: &Ident) -> Toks {
    let at = Span::call_site();
    Toks::default()
        .ident(rt.clone())
        .path_sep(at)
        .ident(Ident::new("ViewMeta", at))
        .path_sep(at)
}

/// An integer literal argument (`2`, `-1`) as an `i64` literal.
fn literal_i64(a: &Expr) -> Option<Toks> {
    match a {
        Expr::Lit(l) if l.attrs.is_empty() => typed_int(&l.lit, false),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) && u.attrs.is_empty() => match &*u.expr
        {
            Expr::Lit(l) if l.attrs.is_empty() => typed_int(&l.lit, true),
            _ => None,
        },
        _ => None,
    }
}

/// `lit` as an `i64` literal (negated if `neg`), if it is an unsuffixed
/// integer literal whose value an `i32` holds.
fn typed_int(lit: &syn::Lit, neg: bool) -> Option<Toks> {
    let syn::Lit::Int(i) = lit else { return None };
    if !i.suffix().is_empty() {
        return None;
    }
    let v: i64 = i.base10_parse().ok()?;
    let v = if neg { -v } else { v };
    i32::try_from(v).ok()?;
    let mut l = proc_macro2::Literal::i64_suffixed(v.abs());
    l.set_span(i.span());
    let t = Toks::default();
    Some(
        if neg {
            t.punct('-', Span::call_site())
        } else {
            t
        }
        .literal(l),
    )
}

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
    /// Collection inputs whose elements the body assigns (`xs[i] = ..`):
    /// they have a `rt::Replaced` (`scope::replaced_ident`).
    pub replaced: crate::fast::HashSet<usize>,
    pre: Vec<Vec<Stmt>>,
    /// Bindings already synced before the statement being lowered.
    synced: Vec<Vec<usize>>,
    /// Aliases known current per open block (see `current.rs`).
    current: current::Current,
    /// Whether syncs of known-current aliases are left out (no closures).
    pub(crate) elide_syncs: bool,
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
    /// Loop variables over a collection's elements (`t` of `for t in
    /// xs.iter_mut()`), and those of them an opaque call is given, whose
    /// loop then takes the collection's address first (see
    /// `rt::element_index`).
    loop_elems: crate::fast::IdSet,
    loop_bases_used: crate::fast::IdSet,
    /// Set while the function's own block is lowered: its tail expression
    /// is a returned value (see `eager_output`).
    pub(crate) fn_tail: bool,
    /// Set while the receiver of a reduction (see `READS`) is lowered: a
    /// view call met there is only read.
    read_only: bool,
    /// The expression of the statement being lowered when its value is
    /// discarded (`helper(&x);`): an opaque call there drops its result
    /// before its watch looks for kept handles.
    discarded: Option<*const Expr>,
    copies: bool,
    /// `FUNCZ_STRICT_ANALYSIS` is set: disagreements between the passes
    /// are reported (see `expand::generate`).
    strict: bool,
    /// Set when a `let` pattern was given a `mut` the user did not write
    /// (the lowering may reassign it): that `let` gets
    /// `#[allow(unused_mut)]`, and the user's own lints stay on.
    added_mut: bool,
    /// Tracked roots declared without a value (`let x;`): their value and
    /// state are two locals, not an `rt::Var` (see `Lowerer::in_var`).
    deferred: crate::fast::HashSet<usize>,
    /// The names a macro that may write its arguments is given (`bump!(b)`):
    /// such a root stays two locals, its value a name the macro's own
    /// patterns accept (see `Lowerer::in_var`).
    pub(crate) macro_names: crate::fast::HashSet<String>,
    /// Aliases bound as an `rt::Var` (a `let` of a view or of an in-place
    /// op's result; see `Lowerer::in_var`).
    alias_vars: crate::fast::HashSet<usize>,
    /// Set while a multi-root run's statements are lowered as its
    /// fall-back (see `fuse_multi.rs`): they are not searched again.
    no_multi: bool,
}

/// Generated code is kept as tokens (`Verbatim`) rather than re-parsed:
/// the macro never inspects what it generated, and parsing every snippet
/// dominated expansion time.
pub(crate) trait FromTokens {
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

/// Generated code as a statement or expression kept as tokens (see
/// [`FromTokens`]): `pq!(let a = #b;)`.
macro_rules! pq {
    ($($t:tt)*) => {
        $crate::lower::FromTokens::from_tokens(::quote::quote!($($t)*))
    };
}
pub(crate) use pq;

/// Runs `f` with at least 128 KiB of stack left, switching to a new 8 MiB
/// segment when less is (the expansion recurses once per link of a chain).
pub(crate) fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(128 * 1024, 8 * 1024 * 1024, f)
}

fn rt() -> Ident {
    // Not cached: proc_macro tokens must not outlive one expansion.
    // (The function's `use ::funcz::rt::views as __fz_rt;` or `copies`,
    // see `expand::lower_fn`: a path of 3 tokens, not 8, and no mode
    // argument. An identifier, not a stream: `quote!` appends it as one
    // token, where a stream is handed to the compiler to be joined.)
    Ident::new("__fz_rt", Span::call_site())
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
            discarded: None,
            scopes: Scopes::default(),
            fn_name,
            exit: Vec::new(),
            inputs: Vec::new(),
            places: Vec::new(),
            replaced: crate::fast::HashSet::default(),
            copies: mode == crate::attr::Remove::MutationsAndViews,
            strict: std::env::var_os("FUNCZ_STRICT_ANALYSIS").is_some(),
            added_mut: false,
            deferred: crate::fast::HashSet::default(),
            macro_names: crate::fast::HashSet::default(),
            alias_vars: crate::fast::HashSet::default(),
            no_multi: false,
            pre: Vec::new(),
            synced: Vec::new(),
            current: Default::default(),
            elide_syncs: false,
            stmt_mutated: Vec::new(),
            stmt_fresh: Vec::new(),
            closure_floor: Vec::new(),
            let_depth: 0,
            loop_depth: 0,
            closure_escapes: Vec::new(),
            elem_aliases: Vec::new(),
            converted: Vec::new(),
            shared_elems: Vec::new(),
            loop_elems: Default::default(),
            loop_bases_used: Default::default(),
            fn_tail: false,
            read_only: false,
        }
    }

    // ---------- facts about bindings ----------

    // ---------- blocks and statements ----------

    // ---------- in-place ops ----------

    // ---------- exits ----------
}

/// True if `steps` is one view whose inverse is a scatter into a window
/// (`narrow`, `slice`, `select`, `diagonal`): `rt::window` writes such
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
    let mut want = Vec::new();
    idents(place.clone(), &mut want, false);
    names_any(tokens, &want)
}

/// True if `tokens` mention an identifier of `places` (see [`mentions`]).
fn mentions_any(tokens: TokenStream, places: &[&Access]) -> bool {
    let mut want = Vec::new();
    for p in places {
        match p {
            // (The field's name is not a variable: as in `mentions`.)
            Access::Field(v, _) | Access::Name(v) => want.push(crate::fast::text(v)),
            Access::Tokens(ts) => idents(ts.clone(), &mut want, false),
        }
    }
    names_any(tokens, &want)
}

/// True if `tokens` name one of `want` (each identifier's text, once).
fn names_any(tokens: TokenStream, want: &[String]) -> bool {
    let mut seen = Vec::new();
    idents(tokens, &mut seen, true);
    seen.iter().any(|i| want.iter().any(|w| w == i))
}

/// The texts of the identifiers in `ts`; with `fields`, also the names
/// after a `.` (`value` in `v.value`), which are not a place's variables.
/// (As text, each once: comparing two `Ident`s asks the compiler for both
/// texts, every time.)
fn idents(ts: TokenStream, out: &mut Vec<String>, fields: bool) {
    let mut after_dot = false;
    for t in ts {
        match &t {
            TokenTree::Ident(i) if fields || !after_dot => out.push(crate::fast::text(i)),
            TokenTree::Group(g) => idents(g.stream(), out, fields),
            _ => {}
        }
        after_dot = matches!(&t, TokenTree::Punct(p) if p.as_char() == '.');
    }
}

/// A functional update with buffer donation. The arguments are evaluated
/// first, into bindings of a `match` (so their temporaries live through
/// the update, as in the original call), then checked as the op checks
/// them against its target ([`overlap_check`]), then `test` asks the runtime
/// whether nobody else can observe the old value's buffer: if so,
/// `inplace` runs the in-place kernel on it and records the result as the
/// functional op with a fresh identity; otherwise `functional` computes a
/// fresh value and commits it. Each closure receives the argument list to
/// call with. The test runs after every piece of user code in the
/// arguments, so a handle they make to the buffer blocks the donation.
#[allow(clippy::too_many_arguments)]
fn donating_update(
    args: &Args,
    paren: Span,
    op: &str,
    target: &Access,
    before: Option<Stmt>,
    test: Stmt,
    inplace: impl FnOnce(&TokenStream) -> Stmt,
    functional: impl FnOnce(&TokenStream) -> Stmt,
) -> Stmt {
    let names = arg_names(args.len());
    let a = parens(paren, quote!(#(#names),*)).into_token_stream();
    let inplace = inplace(&a);
    let functional = functional(&a);
    // (Before the test: an element's test refuses a buffer shared with
    // another handle, and the argument may be that handle.)
    let check = overlap_check(paren, op, target, &names);
    let update = quote!({ #before #check if #test { #inplace } else { #functional } });
    if args.is_empty() {
        return pq!(#update);
    }
    let values = args.iter();
    pq!(match (#(#values,)*) { (#(#names,)*) => #update })
}

/// The functional twin reads the target's old value whatever the
/// arguments overlap: refuse what the in-place op `op` on `target`
/// refuses, an argument (bound to one of `names`) overlapping the target
/// (`rt::check_args_overlap`, whose panic is the op's own). `None` for an
/// op that checks nothing (`optable::OVERLAP_CHECKED_OPS`;
/// `masked_scatter_` does not check its source: regression test
/// `regress_an_op_that_does_not_check_its_source_is_not_refused`).
fn overlap_check(paren: Span, op: &str, target: &Access, names: &[Ident]) -> Option<TokenStream> {
    if names.is_empty() || !optable::OVERLAP_CHECKED_OPS.contains(&op) {
        return None;
    }
    let rt = rt();
    let probes = names.iter().map(|n| quote!((&#rt::KeyProbe(&#n)).key()));
    let call = rt_call(
        paren,
        "check_args_overlap",
        quote!(#op, &#target, &[#(#probes),*]),
    );
    Some(quote!(
        #[allow(unused_imports)]
        use ::funcz::rt::{ViaKey as _, ViaNone as _};
        #call;
    ))
}

/// `let new = v.fname(args);`, the functional twin `fname` standing in for
/// the in-place op `op` on `v`. Its arguments are bound first where it must
/// check them: `before` (a statement that runs after them) and the op's
/// overlap check ([`overlap_check`]).
fn functional_twin(
    new: &Ident,
    v: &Access,
    fname: &Ident,
    args: &Args,
    paren: Span,
    op: &str,
    before: Option<Stmt>,
) -> Stmt {
    let names = arg_names(args.len());
    let check = overlap_check(paren, op, v, &names);
    if check.is_none() && before.is_none() {
        let ca = parens(paren, args);
        return pq!(let #new = #v.#fname #ca;);
    }
    let call = parens(paren, quote!(#(#names),*));
    let vals = args.iter();
    pq!(let #new = match (#(#vals,)*) {
        (#(#names,)*) => {
            #before
            #check
            #v.#fname #call
        }
    };)
}

/// `(inner)`, the arguments of the user's call `m(..)` as the generated
/// code passes them, with the span of the user's parentheses (`paren`):
/// the location a `#[track_caller]` op reports is the call's span, from
/// the method's name to the closing parenthesis, and with parentheses the
/// macro made it was the attribute's line, not the user's.
fn parens(paren: Span, inner: impl ToTokens) -> proc_macro2::Group {
    let mut g = proc_macro2::Group::new(
        proc_macro2::Delimiter::Parenthesis,
        inner.into_token_stream(),
    );
    g.set_span(paren);
    g
}

/// `__fz_rt::name(args)`, every token of the callee and the parentheses at
/// `at`, a token of the user's call (the view's method in `x.narrow(0, pos,
/// 1)`, the op's in a commit): a panic in the runtime's `#[track_caller]`
/// functions (a view's index out of range, a result of another shape)
/// then reports the user's line, as the original's does (see [`parens`]).
/// Only the callee's path and parentheses are the user's; the arguments
/// keep their own spans (the temporaries their mixed-site hygiene).
fn rt_call(at: Span, name: &str, args: TokenStream) -> Toks {
    Toks::default()
        .ident(Ident::new("__fz_rt", at))
        .path_sep(at)
        .ident(Ident::new(name, at))
        .group(parens(at, args))
}

/// `__fz_rt::form::op(args)`, an in-place op in one call (`rt::on_var::add_(&mut
/// v, x)`, `rt::views::on_alias`, ..): one call and no value borrowing the
/// target between two, which an unoptimized build compiles faster. The
/// path is at the user's op and the parentheses are the user's (`paren`),
/// so a panic in the `#[track_caller]` op reports the user's line.
fn rt_op(form: &str, op: &Ident, paren: Span, args: TokenStream) -> Toks {
    let at = op.span();
    Toks::default()
        .ident(Ident::new("__fz_rt", at))
        .path_sep(at)
        .ident(Ident::new(form, at))
        .path_sep(at)
        .ident(op.clone())
        .group(parens(paren, args))
}

/// The bindings of `n` evaluated in-place op arguments.
fn arg_names(n: usize) -> Vec<Ident> {
    (0..n).map(|k| tmp(&format!("__fz_arg{k}"))).collect()
}

/// `e` without the in-place ops applied on top of it: the receiver they
/// all mutate (`x.narrow(0, 0, 1)` for `x.narrow(0, 0, 1).mul_(2.0).t_()`).
pub(crate) fn peel_inplace(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => peel_inplace(&p.expr),
        Expr::MethodCall(m)
            if matches!(
                optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
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
        optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
        Some(
            OpKind::View { .. }
                | OpKind::MaybeView { .. }
                | OpKind::MultiView { .. }
                | OpKind::Inplace { .. }
                | OpKind::InplaceView { .. }
        )
    )
}

/// `+=`, `-=`, `*=` or `/=`: a tensor's compound assignment (the lowering
/// and `places.rs`'s scans ask).
pub(crate) fn is_compound(op: &syn::BinOp) -> bool {
    matches!(
        op,
        syn::BinOp::AddAssign(_)
            | syn::BinOp::SubAssign(_)
            | syn::BinOp::MulAssign(_)
            | syn::BinOp::DivAssign(_)
    )
}

#[derive(Clone, Debug)]
pub(crate) enum IterShape {
    Coll(usize),
    Enumerate(Box<IterShape>),
    Zip(Box<IterShape>, Box<IterShape>),
    /// An adaptor that yields the same elements, fewer or in another order
    /// (`rev()`, `skip(n)`, `take(n)`, `step_by(n)`).
    Adapted(Box<IterShape>),
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
        && (matches!(&*r.expr, Expr::Path(_)) || is_var_value(&r.expr))
    {
        let inner = (*r.expr).clone();
        *m.receiver = inner;
    }
}

/// `v.value`: the value of a root held in an `rt::Var`.
fn is_var_value(e: &Expr) -> bool {
    matches!(e, Expr::Field(f) if matches!(&*f.base, Expr::Path(_))
        && matches!(&f.member, syn::Member::Named(m) if m == "value"))
}

/// `(&value)` or `(&mut value)`, the parentheses and the `&` at `span`:
/// built as the syntax tree that parsing its tokens gives (parsing cost an
/// unoptimized macro 7,000 instructions per use of an input).
fn reference_to(value: &Access, span: Span, by_mut: bool) -> Expr {
    let path = |i: &Ident| {
        Expr::Path(syn::ExprPath {
            attrs: Vec::new(),
            qself: None,
            path: i.clone().into(),
        })
    };
    let inner = match value {
        Access::Name(i) => path(i),
        Access::Field(v, field) => Expr::Field(syn::ExprField {
            attrs: Vec::new(),
            base: Box::new(path(v)),
            dot_token: Token![.](Span::call_site()),
            member: syn::Member::Named(Ident::new(field.name(), Span::call_site())),
        }),
        Access::Tokens(ts) => Expr::Verbatim(ts.clone()),
    };
    Expr::Paren(syn::ExprParen {
        attrs: Vec::new(),
        paren_token: syn::token::Paren(span),
        expr: Box::new(Expr::Reference(syn::ExprReference {
            attrs: Vec::new(),
            and_token: Token![&](span),
            mutability: by_mut.then(|| Token![mut](span)),
            expr: Box::new(inner),
        })),
    })
}

mod access;
mod assign;
mod current;
mod destructure;
mod exits;
mod expr;
mod facts;
mod fuse;
mod fuse_multi;
mod inplace;
mod loops;
mod macros;
mod opaque;
pub(crate) mod resolve;
mod stmts;
mod target;
mod toks;

pub(crate) use current::without_closures;
pub(crate) use macros::macro_names;
// (For the unit tests; the expansion bench compiles these modules in a
// test build without them.)
#[cfg(test)]
#[allow(unused_imports)]
pub(crate) use stmts::unbraced;

/// Makes this thread expand fused runs as a user's build does (see
/// `fuse::kernels_in_debug`).
#[cfg(test)]
pub(crate) fn fuse_no_kernels_in_debug(on: bool) {
    fuse::NO_KERNELS_IN_DEBUG.with(|c| c.set(on));
}
pub(crate) use resolve::{Receiver, Resolve, stores_only};

/// The name a `let` pattern binds, if it binds one name (`x`, `x: T`).
pub(crate) fn pat_ident(pat: &Pat) -> Option<Ident> {
    Lowerer::pat_ident(pat)
}

/// Whether a pattern is typed as a tensor (`x: Tensor`).
pub(crate) fn pat_is_tensor_typed(pat: &Pat) -> bool {
    Lowerer::pat_is_tensor_typed(pat)
}

/// Whether a pattern is a tuple of names (`(a, b)`, `(a, _)`).
pub(crate) fn flat_tuple(pat: &Pat) -> bool {
    Lowerer::flat_tuple(pat)
}

/// The hidden index variable of `let e = &xs[i];`, the `n`-th binding.
pub(crate) fn elem_at_ident(n: usize) -> Ident {
    format_ident!("__fz_elem_at_{}", n, span = Span::mixed_site())
}

/// Every identifier a pattern binds, in order.
pub(crate) fn pat_idents(pat: &Pat) -> Vec<Ident> {
    struct Collect<'b>(&'b mut Vec<Ident>);
    impl<'ast, 'b> syn::visit::Visit<'ast> for Collect<'b> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.clone());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut ids = Vec::new();
    syn::visit::Visit::visit_pat(&mut Collect(&mut ids), pat);
    ids
}

/// Whether `e` is a call of a view op (`View` or `MaybeView` in the table).
pub(crate) fn is_view_call(e: &Expr) -> bool {
    matches!(e, Expr::MethodCall(m) if matches!(
        optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
        Some(OpKind::View { .. } | OpKind::MaybeView { .. })
    ))
}
