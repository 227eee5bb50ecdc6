//! Field places: tensors reached through a field of a parameter or of
//! `self` (`self.cache`, `c.cache`, `c.0`, `self.layer.w`), which real ports
//! mutate (module buffers, KV caches, running statistics, optimizer state).
//!
//! A field place is tracked like a tensor input: a handle is taken at entry
//! (`rt::place_handle`), every use of the place in the body reads the
//! tracked value, and its final value is written back into the field's
//! storage at every exit. This is sound only while the body reaches the
//! field through that place alone, so any other use of the struct that
//! holds it (passing `self` on, calling a method on it, assigning the
//! field) is refused with a spanned error.
//!
//! Input:
//! ```text
//! fn append(&mut self, pos: i64, k: &Tensor) { self.cache.narrow(0, pos, 1).copy_(k); }
//! ```
//! Output (the analysis): one place `self.cache` with base `self`; the
//! lowering then treats `self.cache` as a tensor input named by a hidden
//! variable.

use crate::fast::HashSet;

use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{Block, Expr, Member};

use funcz_optable::{self as optable, OpKind};

use crate::ctxt::Ctxt;

pub(crate) use crate::place_checks::{field_reads, untracked_compounds};

/// One tracked field place.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    /// `self.cache`, `c.0`: the path, as written (members joined by `.`).
    pub key: String,
    /// The parameter (or `self`) the path starts from.
    pub base: String,
    /// The place expression itself (for the entry handle).
    pub expr: Expr,
    /// A list of tensors (`opt.m` of `opt.m[i].mul_(..)`, a `Vec<Tensor>`
    /// field), tracked like a collection input, rather than a tensor.
    pub list: bool,
    /// Whether the base is reached mutably (`&mut self`, `c: &mut Cache`,
    /// `mut c: Cache`): a list place is then borrowed `&mut` and may change
    /// length (`opt.m.push(..)`).
    pub mutable: bool,
}

/// The base and the `.`-joined path of a field chain (`c.a.b` gives
/// `("c", "c.a.b")`), if `e` is one rooted at a plain identifier or `self`.
pub(crate) fn place_key(e: &Expr) -> Option<(String, String)> {
    match e {
        Expr::Field(f) => {
            let (base, key) = match &*f.base {
                Expr::Field(_) => place_key(&f.base)?,
                Expr::Path(p)
                    if p.qself.is_none()
                        && p.path.leading_colon.is_none()
                        && p.path.segments.len() == 1
                        && p.path.segments[0].arguments.is_empty() =>
                {
                    let b = crate::fast::text(&p.path.segments[0].ident);
                    (b.clone(), b)
                }
                _ => return None,
            };
            let member = match &f.member {
                Member::Named(i) => i.to_string(),
                Member::Unnamed(i) => i.index.to_string(),
            };
            Some((base, format!("{key}.{member}")))
        }
        _ => None,
    }
}

pub(crate) fn op_kind(name: &str) -> Option<OpKind> {
    optable::lookup(name).map(|i| i.kind)
}

/// The next link of a receiver chain below `e`, as [`chain_start`] walks
/// it: the op call `e` is (through parentheses, indexing, derefs and
/// references), if any.
fn next_link(mut e: &Expr) -> Option<*const syn::ExprMethodCall> {
    loop {
        match e {
            Expr::MethodCall(m) => {
                return op_kind(&crate::fast::text(&m.method))
                    .map(|_| m as *const syn::ExprMethodCall);
            }
            Expr::Paren(p) => e = &p.expr,
            Expr::Group(g) => e = &g.expr,
            Expr::Index(i) => e = &i.expr,
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => e = &u.expr,
            Expr::Reference(r) => e = &r.expr,
            _ => return None,
        }
    }
}

/// The start of a receiver chain, as [`chain_start`] finds it.
pub(crate) struct Start<'a> {
    pub(crate) expr: &'a Expr,
    /// The chain takes a view of (or a reference to) its start.
    pub(crate) saw_view: bool,
    /// The start is indexed (`opt.m` of `opt.m[i].mul_(..)`): a list.
    pub(crate) indexed: bool,
}

/// Peels the views and in-place ops of a receiver chain down to its start.
pub(crate) fn chain_start(mut e: &Expr) -> Start<'_> {
    let mut saw_view = false;
    let mut indexed = false;
    loop {
        match e {
            Expr::MethodCall(m) => match op_kind(&crate::fast::text(&m.method)) {
                Some(OpKind::View { .. } | OpKind::MaybeView { .. } | OpKind::MultiView { .. }) => {
                    saw_view = true;
                    indexed = false;
                    e = &m.receiver;
                }
                Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. }) => {
                    indexed = false;
                    e = &m.receiver;
                }
                _ => break,
            },
            Expr::Paren(p) => e = &p.expr,
            Expr::Group(g) => e = &g.expr,
            Expr::Index(i) => {
                indexed = true;
                e = &i.expr;
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                indexed = false;
                e = &u.expr;
            }
            // `let r = &s.a;` names `s.a`.
            Expr::Reference(r) => {
                saw_view = true;
                indexed = false;
                e = &r.expr;
            }
            _ => break,
        }
    }
    Start {
        expr: e,
        saw_view,
        indexed,
    }
}

/// The lists a `for` loop's pattern binds elements of: `(name, list)` for
/// `for m in s.m.iter()`, `for (p, m) in ps.iter().zip(s.m.iter_mut())`,
/// `for (i, m) in s.m.iter().enumerate()`, `for m in &s.m`.
pub(crate) fn loop_elements<'a>(pat: &'a syn::Pat, e: &'a Expr, out: &mut Vec<(String, &'a Expr)>) {
    let pat = match pat {
        syn::Pat::Type(pt) => &*pt.pat,
        p => p,
    };
    match e {
        Expr::Reference(r) => loop_elements(pat, &r.expr, out),
        Expr::Paren(p) => loop_elements(pat, &p.expr, out),
        Expr::MethodCall(m) => match crate::fast::text(&m.method).as_str() {
            "iter" | "iter_mut" | "into_iter" => loop_elements(pat, &m.receiver, out),
            "enumerate" => {
                if let syn::Pat::Tuple(t) = pat
                    && t.elems.len() == 2
                {
                    loop_elements(&t.elems[1], &m.receiver, out);
                }
            }
            "zip" => {
                if let syn::Pat::Tuple(t) = pat
                    && t.elems.len() == 2
                {
                    loop_elements(&t.elems[0], &m.receiver, out);
                    if let Some(a) = m.args.first() {
                        loop_elements(&t.elems[1], a, out);
                    }
                }
            }
            _ => {}
        },
        Expr::Field(_) => {
            if let syn::Pat::Ident(pi) = pat {
                out.push((crate::fast::text(&pi.ident), e));
            }
        }
        _ => {}
    }
}

pub(crate) fn single_ident(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            Some(crate::fast::text(&p.path.segments[0].ident))
        }
        _ => None,
    }
}

/// Finds the field places the body mutates: the start of the receiver
/// chain of an in-place op, directly (`self.w.add_(..)`,
/// `c.cache.narrow(..).copy_(..)`) or through a `let` view of it that is
/// then mutated. `bases` are the parameters (and `self`) a place may start
/// from. Also returns the parameters among `bases` that are themselves the
/// start of such a chain (`x: &Mat` with `type Mat = Tensor`): tensors
/// whose type the macro cannot see, proven tensors by the in-place op.
pub(crate) fn find(
    block: &Block,
    bases: &HashSet<String>,
    tensors: &HashSet<String>,
) -> (Vec<Place>, HashSet<String>) {
    if !uses_a_base(block, bases) {
        return (Vec::new(), HashSet::default());
    }
    find_all(block, bases, tensors)
}

/// Whether the body uses a base as a place may start: as the root of a
/// method call's receiver, of a field, of an index, of a reference, of a
/// compound assignment or of a `for` loop's expression (the root found
/// through all of these, parentheses and unary operators). Every place and
/// parameter [`find`] returns starts so (a chain's start is such a root,
/// and so is what a `let` or a loop variable views), so without one it
/// returns nothing, and the scan is skipped: `n: usize` used as `0..n` or
/// `n % 4`. (The scan costs an unoptimized macro half a million
/// instructions per function.)
pub(crate) fn uses_a_base(block: &Block, bases: &HashSet<String>) -> bool {
    struct Uses<'b> {
        bases: &'b HashSet<String>,
        found: bool,
    }
    impl Uses<'_> {
        fn root(&mut self, mut e: &Expr) {
            loop {
                e = match e {
                    Expr::Paren(p) => &p.expr,
                    Expr::Group(g) => &g.expr,
                    Expr::Reference(r) => &r.expr,
                    Expr::Unary(u) => &u.expr,
                    Expr::Field(f) => &f.base,
                    Expr::Index(i) => &i.expr,
                    Expr::MethodCall(m) => &m.receiver,
                    Expr::Path(p) => {
                        if let Some(seg) = p.path.segments.first()
                            && self.bases.contains(&crate::fast::text(&seg.ident))
                        {
                            self.found = true;
                        }
                        return;
                    }
                    _ => return,
                };
            }
        }
    }
    impl<'ast> Visit<'ast> for Uses<'_> {
        fn visit_expr(&mut self, e: &'ast Expr) {
            if self.found {
                return;
            }
            match e {
                Expr::MethodCall(m) => self.root(&m.receiver),
                Expr::Field(f) => self.root(&f.base),
                Expr::Index(i) => self.root(&i.expr),
                Expr::Reference(r) => self.root(&r.expr),
                Expr::ForLoop(f) => self.root(&f.expr),
                Expr::Binary(b) if crate::lower::is_compound(&b.op) => self.root(&b.left),
                _ => {}
            }
            visit::visit_expr(self, e);
        }
    }
    if bases.is_empty() {
        return false;
    }
    let mut uses = Uses {
        bases,
        found: false,
    };
    uses.visit_block(block);
    uses.found
}

/// [`find`] without the check that the body uses a base.
pub(crate) fn find_all(
    block: &Block,
    bases: &HashSet<String>,
    tensors: &HashSet<String>,
) -> (Vec<Place>, HashSet<String>) {
    struct Scan {
        /// The tensor parameters (`g: &Tensor`), and the locals bound to
        /// a tensor of them (`let u = &g * lr;`) so far.
        tensors: HashSet<String>,
        /// Chain starts of in-place ops (and whether they are indexed).
        mutated: Vec<(Expr, bool)>,
        /// `let v = <view chain of e>` and loop variables over `e`'s
        /// elements: (v, e, whether `v` is an element of the list `e`).
        view_lets: Vec<(String, Expr, bool)>,
        /// Places of compound assignments (`s.w -= &g`, `st.step += 1.0`).
        compound: Vec<(Expr, bool)>,
        /// Places used as tensors: receivers of a method of the op table,
        /// and operands taken by reference (`&s.w`).
        tensor_uses: HashSet<String>,
        /// Inner links of the chain being visited, with its start (and
        /// the start's text); keys are the links' addresses in the body.
        chain_links: crate::fast::HashMap<*const syn::ExprMethodCall, (Expr, String, bool)>,
    }
    impl<'ast> Visit<'ast> for Scan {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let kind = op_kind(&crate::fast::text(&m.method));
            if kind.is_some() {
                // The links of one chain share its start: found once, at
                // the outermost link, and handed down (a scan from every
                // link of a 1,000-op chain was quadratic).
                let key: *const syn::ExprMethodCall = m;
                let (start, text, indexed) = match self.chain_links.remove(&key) {
                    Some(known) => known,
                    None => {
                        let start = chain_start(&m.receiver);
                        let text = start.expr.to_token_stream().to_string();
                        (start.expr.clone(), text, start.indexed)
                    }
                };
                if matches!(
                    kind,
                    Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
                ) {
                    self.mutated.push((start.clone(), indexed));
                }
                let name = crate::fast::text(&m.method);
                if !number_method(&name, m.args.len()) {
                    self.tensor_uses.insert(text.clone());
                }
                // `x.add_(&s.w)`: no op takes a reference to a number (a
                // comparison's `a.lt(&b)` is also a number's method).
                if !matches!(name.as_str(), "eq" | "ne" | "lt" | "le" | "gt" | "ge") {
                    for a in &m.args {
                        self.note_reference(a);
                    }
                }
                if let Some(next) = next_link(&m.receiver) {
                    self.chain_links.insert(next, (start, text, indexed));
                }
            }
            visit::visit_expr_method_call(self, m);
        }
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let Some(init) = &l.init {
                if let syn::Pat::Ident(pi) = &l.pat
                    && tensor_valued(&init.expr, &self.tensors)
                {
                    self.tensors.insert(crate::fast::text(&pi.ident));
                }
                let start = chain_start(&init.expr);
                let name = match &l.pat {
                    syn::Pat::Ident(pi) => Some(crate::fast::text(&pi.ident)),
                    syn::Pat::Type(pt) => match &*pt.pat {
                        syn::Pat::Ident(pi) => Some(crate::fast::text(&pi.ident)),
                        _ => None,
                    },
                    _ => None,
                };
                if let (true, Some(name)) = (start.saw_view, name) {
                    self.view_lets
                        .push((name, start.expr.clone(), start.indexed));
                }
            }
            visit::visit_local(self, l);
        }
        // `for r in s.b.unbind(0) { r.mul_(..) }`: `r` views `s.b`;
        // `for m in s.m.iter() { m.mul_(..) }`: `m` is an element of `s.m`.
        fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
            let start = chain_start(&f.expr);
            if let (true, syn::Pat::Ident(pi)) = (start.saw_view, &*f.pat) {
                self.view_lets
                    .push((crate::fast::text(&pi.ident), start.expr.clone(), false));
            }
            let mut elements = Vec::new();
            loop_elements(&f.pat, &f.expr, &mut elements);
            for (name, list) in elements {
                self.view_lets.push((name, list.clone(), true));
            }
            visit::visit_expr_for_loop(self, f);
        }
        // `v -= &w` mutates `v` in place.
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if crate::lower::is_compound(&b.op) {
                let start = chain_start(&b.left);
                self.compound.push((start.expr.clone(), start.indexed));
                // `s.w -= &g` with `g: &Tensor`: no number takes a tensor;
                // `s.w -= &s.m`: a reference combined by an operator.
                if tensor_valued(&b.right, &self.tensors)
                    || matches!(strip_parens(&b.right), Expr::Reference(_))
                {
                    self.tensor_uses
                        .insert(start.expr.to_token_stream().to_string());
                }
            }
            // `&s.w * 0.5`, `x - &s.m[i]`: how tensors are combined (a
            // number is combined by value).
            if crate::lower::is_compound(&b.op)
                || matches!(
                    b.op,
                    syn::BinOp::Add(_)
                        | syn::BinOp::Sub(_)
                        | syn::BinOp::Mul(_)
                        | syn::BinOp::Div(_)
                )
            {
                self.note_reference(&b.left);
                self.note_reference(&b.right);
            }
            visit::visit_expr_binary(self, b);
        }
    }
    impl Scan {
        /// `&e` (in parentheses or not): `e`'s place is used as a tensor.
        fn note_reference(&mut self, e: &Expr) {
            if let Expr::Reference(r) = strip_parens(e) {
                let start = chain_start(&r.expr);
                self.tensor_uses
                    .insert(start.expr.to_token_stream().to_string());
            }
        }
    }
    let mut scan = Scan {
        tensors: tensors.clone(),
        mutated: Vec::new(),
        view_lets: Vec::new(),
        compound: Vec::new(),
        tensor_uses: HashSet::default(),
        chain_links: crate::fast::HashMap::default(),
    };
    scan.visit_block(block);
    // A compound assignment mutates a tensor only if the place is one: a
    // field's type is unknown (`st.step += 1.0` may be an `f64`), so a
    // field counts when the body also uses it as only a tensor is used:
    // the receiver of an op-table method numbers do not have
    // (`s.w.narrow(..)`, `s.w.clone()`; not `s.n.max(1.0)`), or a
    // reference given to an op or an operator (`x.add_(&s.w)`, `&s.w *
    // 0.5`). An element (`s.m[i] -= &g`) counts when an in-place op also
    // updates an element of that list (`s.m[i].mul_(..)`), or the list is
    // used so: a list of numbers is indexed and compound-assigned too.
    // The compound-assigned fields that do not count are checked not to be
    // tensors at compile time (`place_checks::untracked_compounds`).
    let updated_lists: HashSet<String> = scan
        .mutated
        .iter()
        .filter(|(_, indexed)| *indexed)
        .map(|(e, _)| e.to_token_stream().to_string())
        .collect();
    // Names only compound-assigned (`*c += 1.0` in `for c in
    // st.counts.iter_mut()`): as much a number's update as a tensor's, so
    // what they view or iterate counts only if it is proven a tensor.
    let inplace_names: HashSet<String> = scan
        .mutated
        .iter()
        .filter_map(|(e, _)| single_ident(e))
        .collect();
    let mut weak: HashSet<String> = HashSet::default();
    for (e, indexed) in std::mem::take(&mut scan.compound) {
        let text = e.to_token_stream().to_string();
        let used = if indexed {
            updated_lists.contains(&text) || scan.tensor_uses.contains(&text)
        } else {
            scan.tensor_uses.contains(&text)
        };
        if let Some(name) = single_ident(&e) {
            if !used && !inplace_names.contains(&name) {
                weak.insert(name);
            }
            scan.mutated.push((e, indexed));
        } else if used {
            scan.mutated.push((e, indexed));
        }
    }
    let proven = |start: &Expr| {
        let text = start.to_token_stream().to_string();
        scan.tensor_uses.contains(&text) || updated_lists.contains(&text)
    };
    let mut starts: Vec<(Expr, bool)> = scan.mutated.clone();
    // Names mutated directly or through a `let` (or loop variable) viewing
    // them, transitively: `let v = r.alias(); v.mul_(..)` with `r` a view
    // of `s.b` mutates `s.b`.
    let mut names: HashSet<String> = scan
        .mutated
        .iter()
        .filter_map(|(e, _)| single_ident(e))
        .collect();
    let mut done: HashSet<usize> = HashSet::default();
    loop {
        let before = done.len();
        for (k, (name, start, indexed)) in scan.view_lets.iter().enumerate() {
            if !done.contains(&k) && names.contains(name) {
                done.insert(k);
                if weak.contains(name) && !proven(start) {
                    continue;
                }
                starts.push((start.clone(), *indexed));
                if let Some(n) = single_ident(start) {
                    names.insert(n);
                }
            }
        }
        if done.len() == before {
            break;
        }
    }
    let mut out: Vec<Place> = Vec::new();
    let mut params = HashSet::default();
    for (e, indexed) in &starts {
        if let Some(name) = single_ident(e)
            && !indexed
            && bases.contains(&name)
        {
            params.insert(name);
        }
    }
    for (e, indexed) in starts {
        if let Some((base, key)) = place_key(&e)
            && bases.contains(&base)
        {
            match out.iter_mut().find(|p| p.key == key) {
                Some(p) => p.list |= indexed,
                None => out.push(Place {
                    key,
                    base,
                    expr: e.clone(),
                    list: indexed,
                    mutable: false,
                }),
            }
        }
    }
    // A place inside another (`self.a` and `self.a.b`) cannot both be
    // tracked: keep the outer one only if both are tensors is impossible,
    // so refuse the nesting later by treating the inner as a use of the
    // outer. Here: drop places that extend another.
    let keys: Vec<String> = out.iter().map(|p| p.key.clone()).collect();
    out.retain(|p| {
        !keys
            .iter()
            .any(|k| k != &p.key && p.key.starts_with(&format!("{k}.")))
    });
    (out, params)
}

/// `e` inside any parentheses.
pub(crate) fn strip_parens(mut e: &Expr) -> &Expr {
    while let Expr::Paren(syn::ExprParen { expr, .. }) | Expr::Group(syn::ExprGroup { expr, .. }) =
        e
    {
        e = expr;
    }
    e
}

/// Whether `e` is surely a tensor: a tensor parameter (or an element of
/// one that is a collection), a reference to one, an operator with one as an operand, or an op-table method on one
/// (`&g * lr`, `g.mul(lr)`; not `g.sum().item()`).
///
/// Input: `&(&g * 0.1)` with `g` in `tensors` → true; `1.0` → false.
fn tensor_valued(e: &Expr, tensors: &HashSet<String>) -> bool {
    match e {
        Expr::Paren(p) => tensor_valued(&p.expr, tensors),
        Expr::Group(g) => tensor_valued(&g.expr, tensors),
        Expr::Reference(r) => tensor_valued(&r.expr, tensors),
        Expr::Unary(u) => tensor_valued(&u.expr, tensors),
        // `&grads[i]` of `grads: &[Tensor]`.
        Expr::Index(ix) => tensor_valued(&ix.expr, tensors),
        Expr::Path(p) => p
            .path
            .get_ident()
            .is_some_and(|i| tensors.contains(&i.to_string())),
        Expr::Binary(b) => tensor_valued(&b.left, tensors) || tensor_valued(&b.right, tensors),
        Expr::MethodCall(m) => {
            op_kind(&crate::fast::text(&m.method)).is_some() && tensor_valued(&m.receiver, tensors)
        }
        _ => false,
    }
}

/// Whether Rust's numbers have a method of this name and number of
/// arguments that the op table has too (`x.sqrt()` on an `f32`, `n.abs()`
/// on an `i64`, `x.max(1.0)`): a call of one proves nothing about its
/// receiver's type. A tensor's `x.max()` or `x.log()` (numbers' take an
/// argument) does, and so does `clone` (numbers are copied) and
/// `add`/`mul`/... (a number's need `std::ops` imported).
///
/// Input: `("sqrt", 0)` → true; `("max", 0)` → false; `("narrow", 3)` → false.
fn number_method(name: &str, args: usize) -> bool {
    const UNARY: &[&str] = &[
        "abs",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "cbrt",
        "ceil",
        "cos",
        "cosh",
        "exp",
        "exp2",
        "floor",
        "fract",
        "is_finite",
        "is_infinite",
        "is_nan",
        "ln",
        "log10",
        "log2",
        "recip",
        "round",
        "signum",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "to_string",
        "trunc",
    ];
    const BINARY: &[&str] = &[
        "atan2",
        "copysign",
        "eq",
        "ge",
        "gt",
        "hypot",
        "le",
        "log",
        "lt",
        "max",
        "maximum",
        "min",
        "minimum",
        "ne",
        "pow",
        "powf",
        "powi",
        "rem_euclid",
    ];
    const TERNARY: &[&str] = &["clamp", "mul_add"];
    match args {
        0 => UNARY.contains(&name),
        1 => BINARY.contains(&name),
        2 => TERNARY.contains(&name),
        _ => false,
    }
}

/// Refuses every use of a struct that holds a tracked place other than
/// reaching a field through it: `helper(&self)`, `self.step()`, `*c = ..`,
/// `c.cache = ..` would read or change the field behind the tracked value.
pub(crate) fn check_uses(block: &Block, places: &[Place], cx: &Ctxt) {
    if places.is_empty() {
        return;
    }
    struct Check<'a> {
        places: &'a [Place],
        cx: &'a Ctxt,
        /// Per open block, the bases a `let` of it bound again so far: in
        /// the rest of that block the name is a local, not the parameter
        /// (`{ let s = Pair { .. }; let mut s = s; .. }`).
        shadowed: Vec<Vec<String>>,
    }
    impl Check<'_> {
        /// The tracked place `key` is, or lies inside (none if its base is
        /// a local that shadows the parameter here).
        fn holder(&self, key: &str) -> Option<&Place> {
            let base = key.split('.').next().unwrap_or(key);
            if self.is_shadowed(base) {
                return None;
            }
            self.places
                .iter()
                .find(|p| p.key == key || p.key.starts_with(&format!("{key}.")))
        }
        fn is_shadowed(&self, name: &str) -> bool {
            self.shadowed.iter().any(|f| f.iter().any(|n| n == name))
        }
        fn refuse(&self, e: &dyn ToTokens, what: &str, place: &Place) {
            crate::diag::field_base_used_whole(self.cx, e, what, &place.key);
        }
    }
    impl<'ast> Visit<'ast> for Check<'_> {
        fn visit_expr(&mut self, e: &'ast Expr) {
            match e {
                Expr::Field(_) => {
                    if let Some((_, key)) = place_key(e) {
                        if let Some(p) = self.holder(&key) {
                            if p.key != key {
                                // A prefix of a place used as a value.
                                self.refuse(e, &key, p);
                            }
                            return;
                        }
                        // A disjoint field (`self.n_heads`): fine.
                        return;
                    }
                    visit::visit_expr(self, e);
                }
                Expr::Path(_) => {
                    if let Some(name) = single_ident(e)
                        && !self.is_shadowed(&name)
                        && let Some(p) = self.places.iter().find(|p| p.base == name)
                    {
                        self.refuse(e, &name, p);
                    }
                }
                Expr::Assign(a) => {
                    if let Some((_, key)) = place_key(&a.left)
                        && let Some(p) = self.holder(&key)
                    {
                        crate::diag::field_assigned(self.cx, &a.left, &key, &p.key);
                        self.visit_expr(&a.right);
                        return;
                    }
                    visit::visit_expr(self, e);
                }
                _ => visit::visit_expr(self, e),
            }
        }
        fn visit_block(&mut self, b: &'ast Block) {
            self.shadowed.push(Vec::new());
            for stmt in &b.stmts {
                self.visit_stmt(stmt);
                // After its initializer (which still sees the parameter),
                // a `let` of a base's name shadows it.
                if let syn::Stmt::Local(l) = stmt {
                    for n in crate::lower::pat_idents(&l.pat)
                        .iter()
                        .map(|i| i.to_string())
                    {
                        if self.places.iter().any(|p| p.base == n) {
                            self.shadowed.last_mut().expect("open block").push(n);
                        }
                    }
                }
            }
            self.shadowed.pop();
        }
        fn visit_local(&mut self, l: &'ast syn::Local) {
            // The pattern binds names, it reads none.
            if let Some(init) = &l.init {
                self.visit_expr(&init.expr);
                if let Some((_, diverge)) = &init.diverge {
                    self.visit_expr(diverge);
                }
            }
        }
        fn visit_macro(&mut self, _m: &'ast syn::Macro) {}
        fn visit_item(&mut self, _i: &'ast syn::Item) {}
    }
    Check {
        places,
        cx,
        shadowed: Vec::new(),
    }
    .visit_block(block);
}
