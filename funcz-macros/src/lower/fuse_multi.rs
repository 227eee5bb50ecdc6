//! Multi-root fusion: consecutive statements that update collection
//! elements in place (`m[i]`, `v[i]`, `params[i]`: elements of tracked
//! tensor collections), with temporaries made and used only between them
//! (`let denom = (&v[i] / bc2).sqrt(); denom.add_(1e-8);`, an argument
//! `&(&grads[i] * 0.1)`), run as one pass over memory when the runtime
//! allows (`rt::fused_elems`), and as written otherwise.
//!
//! Input: `m[i].mul_(b1).add_(&(&g[i] * c)); p[i].addcdiv_(&m[i], &d, s);` (with `let d = ..` between)
//! Output: `let fused = rt::elems_fusable() && rt::fused_elems([&mut m[i], &mut p[i]], .., &|..| <formula>);
//! if !fused { <the statements, lowered as usual> }`
//!
//! The formula is the ops' per-element formulas (`rt::k`) in program
//! order: a read of a run's element (`&m[i]` above) reads its value after
//! the ops before it, a temporary is computed where its `let` was, with
//! the same float operations in the same order as the tensor ops, so the
//! bits are those of the statements. The operands it reads (`b1`,
//! `&g[i]`, `c`) are evaluated once before the pass: only expressions that
//! cannot depend on the run's elements nor change anything are (see
//! `leaf`), and only when no trace records (`rt::elems_fusable`), so a
//! traced run is the statements' trace. The fall-back evaluates them
//! again, as written.

#[allow(unused_imports)]
use super::*;

/// A multi-root run found at some statement.
#[derive(Clone, Default)]
pub(super) struct MultiRun {
    /// How many statements it spans.
    pub len: usize,
    /// The collections whose elements it updates, with the index (and its
    /// tokens, which every use in the run must repeat).
    roots: Vec<(usize, Expr, String)>,
    /// Temporaries: name, number of reads.
    temps: Vec<(String, usize)>,
    /// Operands the formula reads, evaluated before the pass, with their
    /// tokens (one operand per distinct expression).
    leaves: Vec<(TokenStream, String)>,
    /// Scalar parameters (`value` of `addcmul_`, `alpha`, clamp bounds),
    /// evaluated before the pass.
    params: Vec<TokenStream>,
    /// The per-element statements of the kernel.
    body: TokenStream,
    /// The kernel's parameter structs (one per step with parameters).
    param_structs: TokenStream,
    /// Every in-place op on a root: the root's position.
    steps: Vec<usize>,
    /// In-place ops in all (on roots and temporaries).
    ops: usize,
}

/// A per-element value of the formula, and whether it is a tensor's (a
/// run element, a temporary or a tensor operand) rather than a scalar.
struct Val {
    tokens: TokenStream,
    tensor: bool,
}

/// In-place ops a multi-root run may hold: the op, its `rt::k` function,
/// how many tensor-or-scalar operands it takes, and how many scalar
/// parameters follow them (`s0`, `s1`).
const MULTI_OPS: &[(&str, &str, usize, usize)] = &[
    ("add_", "add", 1, 0),
    ("sub_", "sub", 1, 0),
    ("mul_", "mul", 1, 0),
    ("div_", "div", 1, 0),
    ("add_scaled_", "add_scaled", 1, 1),
    ("sub_scaled_", "sub_scaled", 1, 1),
    ("neg_", "neg", 0, 0),
    ("abs_", "abs", 0, 0),
    ("relu_", "relu", 0, 0),
    ("sign_", "sign", 0, 0),
    ("sqrt_", "sqrt", 0, 0),
    ("exp_", "exp", 0, 0),
    ("log_", "log", 0, 0),
    ("sigmoid_", "sigmoid", 0, 0),
    ("tanh_", "tanh", 0, 0),
    ("clamp_min_", "clamp_min", 0, 1),
    ("clamp_max_", "clamp_max", 0, 1),
    ("hardtanh_", "hardtanh", 0, 2),
    ("addcmul_", "addcmul", 2, 1),
    ("addcdiv_", "addcdiv", 2, 1),
];

/// Functional methods folded into the formula: the method and its `rt::k`
/// function, whose per-element formula is the method's (`Tensor::sqrt`
/// computes `x.sqrt()`, as `k::sqrt`).
const MULTI_METHODS: &[(&str, &str)] = &[
    ("sqrt", "sqrt"),
    ("exp", "exp"),
    ("log", "log"),
    ("neg", "neg"),
    ("abs", "abs"),
];

/// Methods of Rust's float types a leaf may call (pure; `Tensor` has
/// none of these names, so the receiver is a scalar).
const SCALAR_METHODS: &[&str] = &["powi", "powf"];

/// The most in-place ops one run holds.
const MAX_MULTI_OPS: usize = 32;

impl Lowerer<'_> {
    /// The multi-root run starting at `stmts[k]`, if one of at least two
    /// statements that is worth a pass is there.
    pub(super) fn multi_run(&self, stmts: &[Stmt], k: usize) -> Option<MultiRun> {
        if self.no_multi || !self.closure_floor.is_empty() {
            return None;
        }
        // Cheap first test: the first statement is an in-place chain on a
        // collection element.
        if !self.elem_chain_start(&stmts[k]) {
            return None;
        }
        let mut prefixes: Vec<MultiRun> = Vec::new();
        let mut plan = MultiRun::default();
        for stmt in &stmts[k..] {
            if self.split_chain(stmt).is_some() || !self.plan_stmt(&mut plan, stmt) {
                break;
            }
            plan.len += 1;
            if plan.ops > MAX_MULTI_OPS {
                break;
            }
            prefixes.push(plan.clone());
        }
        // The longest prefix that is a valid run.
        prefixes
            .into_iter()
            .rev()
            .find(|p| self.valid_run(p, &stmts[k + p.len..]))
    }

    /// Whether `stmt` is an in-place chain whose receiver is `coll[index]`.
    fn elem_chain_start(&self, stmt: &Stmt) -> bool {
        let Stmt::Expr(Expr::MethodCall(m), Some(_)) = stmt else {
            return false;
        };
        let mut cur: &Expr = &Expr::MethodCall(m.clone());
        while let Expr::MethodCall(m) = cur {
            cur = &m.receiver;
        }
        matches!(cur, Expr::Index(ix) if self.root_coll(&ix.expr).is_some())
    }

    /// The collection binding `e` names, if it is a collection of
    /// independent tensors (`&mut [Tensor]`, `Vec<Tensor>`).
    fn root_coll(&self, e: &Expr) -> Option<usize> {
        let Expr::Path(p) = e else { return None };
        p.path.get_ident()?;
        let id = self.binding_of(e)?;
        matches!(self.scopes.kind(id), Kind::Coll { .. }).then_some(id)
    }

    /// A prefix is a run if: every temporary is read in it and named by no
    /// later statement of the block, no operand names a collection whose
    /// elements it updates, and it updates two elements or one element and
    /// a temporary, or one element twice (at least two ops).
    fn valid_run(&self, p: &MultiRun, rest: &[Stmt]) -> bool {
        if p.ops < 2 || p.roots.is_empty() {
            return false;
        }
        if p.temps.iter().any(|(_, reads)| *reads == 0) {
            return false;
        }
        let names: Vec<Ident> = p.temps.iter().map(|(n, _)| tmp(n)).collect();
        let temps = quote!(#(#names)*);
        if rest.iter().any(|s| mentions(s.to_token_stream(), &temps)) {
            return false;
        }
        let colls: Vec<Ident> = p
            .roots
            .iter()
            .map(|(id, _, _)| self.scopes.ident(*id).clone())
            .collect();
        let colls = quote!(#(#colls)*);
        let mut operands = p.leaves.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
        operands.extend(p.params.iter().cloned());
        operands.extend(p.roots.iter().map(|(_, i, _)| i.to_token_stream()));
        !operands.iter().any(|t| mentions(t.clone(), &colls))
    }

    /// Adds `stmt` to `plan`, or returns false (the plan may then be
    /// partly updated: the caller discards it).
    fn plan_stmt(&self, plan: &mut MultiRun, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Local(local) => {
                let Pat::Ident(pi) = &local.pat else {
                    return false;
                };
                let Some(init) = &local.init else {
                    return false;
                };
                if !local.attrs.is_empty()
                    || pi.by_ref.is_some()
                    || pi.subpat.is_some()
                    || init.diverge.is_some()
                {
                    return false;
                }
                let name = crate::fast::text(&pi.ident);
                if plan.temps.iter().any(|(n, _)| *n == name)
                    || plan
                        .roots
                        .iter()
                        .any(|(id, _, _)| *self.scopes.ident(*id) == pi.ident)
                {
                    return false;
                }
                // A temporary is a tensor op's fresh result.
                let fresh = matches!(
                    strip(&init.expr),
                    Expr::Binary(_) | Expr::MethodCall(_) | Expr::Unary(_)
                );
                if !fresh || !self.tensorish(plan, &init.expr) {
                    return false;
                }
                let Some(v) = self.fold(plan, &init.expr) else {
                    return false;
                };
                let t = tmp(&format!("__fz_t{}", plan.temps.len()));
                let tokens = v.tokens;
                plan.body.extend(quote!(let #t = #tokens;));
                plan.temps.push((name, 0));
                true
            }
            Stmt::Expr(e, Some(_)) => {
                let mut calls = Vec::new();
                let mut cur = e;
                while let Expr::MethodCall(m) = cur {
                    calls.push(m);
                    cur = &m.receiver;
                }
                if calls.is_empty() {
                    return false;
                }
                // The receiver: an element of a collection (a root of the
                // run) or a temporary.
                let (var, root) = match cur {
                    Expr::Index(ix) if ix.attrs.is_empty() => {
                        let Some(coll) = self.root_coll(&ix.expr) else {
                            return false;
                        };
                        let Some(r) = self.add_root(plan, coll, &ix.index) else {
                            return false;
                        };
                        (tmp(&format!("__fz_r{r}")), Some(r))
                    }
                    Expr::Path(p) if p.attrs.is_empty() => {
                        let Some(t) = p
                            .path
                            .get_ident()
                            .and_then(|i| plan.temps.iter().position(|(n, _)| *i == n))
                        else {
                            return false;
                        };
                        (tmp(&format!("__fz_t{t}")), None)
                    }
                    _ => return false,
                };
                for m in calls.into_iter().rev() {
                    if !m.attrs.is_empty() || m.turbofish.is_some() {
                        return false;
                    }
                    let name = crate::fast::text(&m.method);
                    let Some(&(_, f, n, np)) = MULTI_OPS.iter().find(|(op, ..)| *op == name) else {
                        return false;
                    };
                    if m.args.len() != n + np {
                        return false;
                    }
                    let mut operands = Vec::new();
                    for a in m.args.iter().take(n) {
                        let Some(v) = self.fold(plan, a) else {
                            return false;
                        };
                        operands.push(v.tokens);
                    }
                    let p = if np == 0 {
                        quote!(&__fz_d)
                    } else {
                        let mut fields = TokenStream::new();
                        for (a, field) in m.args.iter().skip(n).zip(["s0", "s1"]) {
                            if !self.leaf(plan, a) {
                                return false;
                            }
                            let s = tmp(&format!("__fz_s{}", plan.params.len()));
                            plan.params.push(self.no_moves(strip(a)).to_token_stream());
                            let field = tmp(field);
                            fields.extend(quote!(#field: #s,));
                        }
                        let pi = tmp(&format!("__fz_p{}", plan.ops));
                        let rt = rt();
                        plan.param_structs.extend(quote!(
                            let #pi = #rt::FusedParams { #fields ..#rt::FusedParams::default() };
                        ));
                        quote!(&#pi)
                    };
                    let f = tmp(f);
                    let rt = rt();
                    plan.body
                        .extend(quote!(let #var = #rt::k::#f(#var, #(#operands,)* #p);));
                    plan.ops += 1;
                    if let Some(r) = root {
                        if !matches!(
                            optable::lookup(&name).map(|i| i.kind),
                            Some(OpKind::Inplace { .. })
                        ) {
                            return false;
                        }
                        plan.steps.push(r);
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// The position of the run's element `coll[index]`, added if new;
    /// `None` if the run already updates another element of `coll`.
    fn add_root(&self, plan: &mut MultiRun, coll: usize, index: &Expr) -> Option<usize> {
        let key = index.to_token_stream().to_string();
        if let Some(r) = plan.roots.iter().position(|(c, _, _)| *c == coll) {
            return (plan.roots[r].2 == key).then_some(r);
        }
        if !self.leaf(plan, index) {
            return None;
        }
        plan.roots.push((coll, index.clone(), key));
        Some(plan.roots.len() - 1)
    }

    /// Whether `e`'s value is a tensor's as far as the formula goes: it
    /// reads a run element, a temporary or a tensor the macro knows, or is
    /// a folded op on one. Only a tensor on the left of an operator makes
    /// the operator a tensor op (no `scalar op Tensor` exists).
    fn tensorish(&self, plan: &MultiRun, e: &Expr) -> bool {
        match e {
            Expr::Paren(p) => self.tensorish(plan, &p.expr),
            Expr::Group(g) => self.tensorish(plan, &g.expr),
            Expr::Reference(r) => r.mutability.is_none() && self.tensorish(plan, &r.expr),
            Expr::Index(ix) => self.root_coll(&ix.expr).is_some(),
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| plan.temps.iter().any(|(n, _)| *i == n) || self.known_tensor(e)),
            Expr::Binary(b) => arith(&b.op).is_some() && self.tensorish(plan, &b.left),
            Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && self.tensorish(plan, &u.expr),
            Expr::MethodCall(m) => {
                m.args.is_empty()
                    && MULTI_METHODS.iter().any(|(n, _)| m.method == n)
                    && self.tensorish(plan, &m.receiver)
            }
            _ => false,
        }
    }

    /// A binding that is surely a tensor and may be read as written (a
    /// root without a tracked state, or a read-only tensor).
    fn known_tensor(&self, e: &Expr) -> bool {
        self.binding_of(e)
            .is_some_and(|id| match self.scopes.kind(id) {
                Kind::Root { known: true, .. } => !self.has_state(id),
                Kind::Plain => true,
                _ => false,
            })
    }

    /// The formula of `e`, adding the operands it reads to `plan`.
    fn fold(&self, plan: &mut MultiRun, e: &Expr) -> Option<Val> {
        let rt = rt();
        let tensor = |tokens| {
            Some(Val {
                tokens,
                tensor: true,
            })
        };
        if !self.tensorish(plan, e) {
            if !self.leaf(plan, e) {
                return None;
            }
            return Some(Val {
                tokens: self.add_leaf(plan, self.no_moves(strip(e)).to_token_stream()),
                tensor: false,
            });
        }
        match e {
            Expr::Paren(p) => self.fold(plan, &p.expr),
            Expr::Group(g) => self.fold(plan, &g.expr),
            Expr::Reference(r) => {
                // `&coll[i]` of a collection the run does not update, or
                // `&x` of a known tensor: an operand as written.
                if !matches!(strip(&r.expr), Expr::Index(_) | Expr::Path(_))
                    || self.is_run_read(plan, &r.expr)
                {
                    return self.fold(plan, &r.expr);
                }
                if !self.leaf(plan, e) {
                    return None;
                }
                tensor(self.add_leaf(plan, e.to_token_stream()))
            }
            Expr::Index(ix) => {
                let coll = self.root_coll(&ix.expr)?;
                let key = ix.index.to_token_stream().to_string();
                match plan.roots.iter().position(|(c, _, _)| *c == coll) {
                    Some(r) if plan.roots[r].2 == key => {
                        tensor(tmp(&format!("__fz_r{r}")).to_token_stream())
                    }
                    Some(_) => None,
                    // An element the run does not update: an operand.
                    None => {
                        if !self.leaf(plan, e) {
                            return None;
                        }
                        tensor(self.add_leaf(plan, quote!(&#e)))
                    }
                }
            }
            Expr::Path(p) => {
                let i = p.path.get_ident()?;
                if let Some(t) = plan.temps.iter().position(|(n, _)| *i == n) {
                    plan.temps[t].1 += 1;
                    return tensor(tmp(&format!("__fz_t{t}")).to_token_stream());
                }
                if !self.leaf(plan, e) {
                    return None;
                }
                tensor(self.add_leaf(plan, quote!(&#e)))
            }
            Expr::Binary(b) => {
                let f = tmp(arith(&b.op)?);
                let l = self.fold(plan, &b.left)?;
                let r = self.fold(plan, &b.right)?;
                debug_assert!(l.tensor);
                let (l, r) = (l.tokens, r.tokens);
                tensor(quote!(#rt::k::#f(#l, #r, &__fz_d)))
            }
            Expr::Unary(u) => {
                let v = self.fold(plan, &u.expr)?.tokens;
                tensor(quote!(#rt::k::neg(#v, &__fz_d)))
            }
            Expr::MethodCall(m) => {
                let (_, f) = MULTI_METHODS.iter().find(|(n, _)| m.method == n)?;
                let f = tmp(f);
                let v = self.fold(plan, &m.receiver)?.tokens;
                tensor(quote!(#rt::k::#f(#v, &__fz_d)))
            }
            _ => None,
        }
    }

    /// Whether `e` reads an element the run updates or a temporary.
    fn is_run_read(&self, plan: &MultiRun, e: &Expr) -> bool {
        match strip(e) {
            Expr::Index(ix) => self
                .root_coll(&ix.expr)
                .is_some_and(|c| plan.roots.iter().any(|(r, _, _)| *r == c)),
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| plan.temps.iter().any(|(n, _)| *i == n)),
            _ => false,
        }
    }

    /// `e` (a leaf) with every name of a value that may be a tensor
    /// (`Kind::Root`, not known to be one: `let (b1, b2) = (0.9, 0.99)`)
    /// read through `Clone::clone(&x)`: the fast path evaluates the leaves
    /// and the fall-back again, so neither may move them (a scalar's clone
    /// is its copy; a tensor's has its values).
    fn no_moves(&self, e: &Expr) -> Expr {
        let mut e = e.clone();
        self.no_moves_in(&mut e);
        e
    }

    fn no_moves_in(&self, e: &mut Expr) {
        match e {
            Expr::Path(_)
                if self.binding_of(e).is_some_and(|id| {
                    matches!(self.scopes.kind(id), Kind::Root { known: false, .. })
                }) =>
            {
                *e = pq!(::core::clone::Clone::clone(&#e));
            }
            Expr::Paren(p) => self.no_moves_in(&mut p.expr),
            Expr::Group(g) => self.no_moves_in(&mut g.expr),
            Expr::Cast(c) => self.no_moves_in(&mut c.expr),
            Expr::Unary(u) => self.no_moves_in(&mut u.expr),
            Expr::Binary(b) => {
                self.no_moves_in(&mut b.left);
                self.no_moves_in(&mut b.right);
            }
            Expr::MethodCall(m) => {
                self.no_moves_in(&mut m.receiver);
                for a in m.args.iter_mut() {
                    self.no_moves_in(a);
                }
            }
            Expr::Index(ix) => self.no_moves_in(&mut ix.index),
            // A reference or a literal moves nothing.
            _ => {}
        }
    }

    /// The kernel operand for the leaf `tokens` (one per distinct
    /// expression).
    fn add_leaf(&self, plan: &mut MultiRun, tokens: TokenStream) -> TokenStream {
        let key = tokens.to_string();
        let k = match plan.leaves.iter().position(|(_, k)| *k == key) {
            Some(k) => k,
            None => {
                plan.leaves.push((tokens, key));
                plan.leaves.len() - 1
            }
        };
        tmp(&format!("__fz_a{k}")).to_token_stream()
    }

    /// Whether `e` may be evaluated before the run and again by the
    /// fall-back: a literal, a name (of a scalar, or a tensor read as
    /// written), a reference to a place, an element read, a cast, or
    /// arithmetic of those. Nothing that calls a function (no side
    /// effects, no tensor op on a tensor the macro knows), names a
    /// temporary or a binding whose value the lowering tracks (a view, a
    /// root with state), or moves a tensor.
    fn leaf(&self, plan: &MultiRun, e: &Expr) -> bool {
        let ok_name = |e: &Expr| -> bool {
            let Expr::Path(p) = e else { return false };
            if p.qself.is_some() || !p.attrs.is_empty() {
                return false;
            }
            if let Some(i) = p.path.get_ident()
                && plan.temps.iter().any(|(n, _)| *i == n)
            {
                return false;
            }
            match self.binding_of(e) {
                None => true,
                Some(id) => match self.scopes.kind(id) {
                    Kind::Other | Kind::Plain => true,
                    // (One that may not be a tensor is read through a
                    // clone: see `no_moves`.)
                    Kind::Root { .. } => !self.has_state(id),
                    _ => false,
                },
            }
        };
        match e {
            Expr::Lit(l) => {
                l.attrs.is_empty() && matches!(l.lit, syn::Lit::Float(_) | syn::Lit::Int(_))
            }
            Expr::Path(_) => ok_name(e),
            Expr::Paren(p) => self.leaf(plan, &p.expr),
            Expr::Group(g) => self.leaf(plan, &g.expr),
            Expr::Cast(c) => c.attrs.is_empty() && self.leaf(plan, &c.expr),
            Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && self.leaf(plan, &u.expr),
            Expr::Binary(b) => {
                arith(&b.op).is_some()
                    && !self.tensorish(plan, &b.left)
                    && self.leaf(plan, &b.left)
                    && self.leaf(plan, &b.right)
            }
            Expr::Reference(r) => r.mutability.is_none() && self.place_leaf(plan, &r.expr),
            // `b1.powi(step)`: the float powers, on a scalar (no tensor
            // has these methods), of leaves.
            Expr::MethodCall(m) => {
                m.attrs.is_empty()
                    && m.turbofish.is_none()
                    && SCALAR_METHODS.iter().any(|n| m.method == n)
                    && !self.tensorish(plan, &m.receiver)
                    && self.leaf(plan, &m.receiver)
                    && m.args.iter().all(|a| self.leaf(plan, a))
            }
            Expr::Index(ix) => self.place_leaf(plan, e) && self.root_coll(&ix.expr).is_none(),
            _ => false,
        }
    }

    /// A place whose value a leaf may read by reference: a name, a field
    /// of one, or an element (with a leaf index).
    fn place_leaf(&self, plan: &MultiRun, e: &Expr) -> bool {
        match e {
            Expr::Paren(p) => self.place_leaf(plan, &p.expr),
            Expr::Path(p) => {
                p.qself.is_none()
                    && p.path
                        .get_ident()
                        .is_some_and(|i| !plan.temps.iter().any(|(n, _)| *i == n))
                    && match self.binding_of(e) {
                        None => true,
                        Some(id) => match self.scopes.kind(id) {
                            Kind::Other | Kind::Plain | Kind::Coll { .. } => true,
                            Kind::Root { .. } => !self.has_state(id),
                            _ => false,
                        },
                    }
            }
            Expr::Field(f) => self.place_of(e).is_none() && self.place_leaf(plan, &f.base),
            Expr::Index(ix) => self.place_leaf(plan, &ix.expr) && self.leaf(plan, &ix.index),
            _ => false,
        }
    }

    /// Lowers the run `plan` found at `stmts[k..]`: `run` is those
    /// statements, already lowered as one block (the fall-back).
    pub(super) fn lower_multi(&self, plan: &MultiRun, fallback: Vec<Stmt>) -> Vec<Stmt> {
        let rt = rt();
        let fused = tmp("__fz_fused");
        let mut prelude = TokenStream::new();
        let mut roots = Vec::new();
        let mut callers = Vec::new();
        let mut xs = Vec::new();
        let mut rs = Vec::new();
        for (r, (coll, index, _)) in plan.roots.iter().enumerate() {
            let ix = tmp(&format!("__fz_ix{r}"));
            prelude.extend(quote!(let #ix: usize = #index;));
            let v = self.value(*coll);
            roots.push(quote!(#v.get_mut(#ix)));
            callers.push(if self.is_input_coll(*coll) {
                let caller = input_ident(*coll);
                quote!(#caller.get(#ix))
            } else {
                quote!(::core::option::Option::None)
            });
            xs.push(tmp(&format!("__fz_x{r}")));
            rs.push(tmp(&format!("__fz_r{r}")));
        }
        for (k, p) in plan.params.iter().enumerate() {
            let s = tmp(&format!("__fz_s{k}"));
            prelude.extend(quote!(let #s = #p;));
        }
        let leaves: Vec<TokenStream> = plan
            .leaves
            .iter()
            .map(|(t, _)| quote!(#rt::IntoFuseArg::into_fuse_arg(#t)))
            .collect();
        let operands: Vec<Ident> = (0..plan.leaves.len())
            .map(|k| tmp(&format!("__fz_a{k}")))
            .collect();
        let steps: Vec<TokenStream> = plan
            .steps
            .iter()
            .map(|r| {
                let r = proc_macro2::Literal::u8_unsuffixed(
                    u8::try_from(*r).expect("at most 32 roots"),
                );
                quote!(#r)
            })
            .collect();
        let (nr, nl) = (
            proc_macro2::Literal::usize_unsuffixed(plan.roots.len()),
            proc_macro2::Literal::usize_unsuffixed(plan.leaves.len()),
        );
        let (body, param_structs) = (&plan.body, &plan.param_structs);
        // The parameters of the steps that take none, declared only when
        // one reads them: unread, their element type cannot be inferred
        // (E0283 at the attribute, `regress_run_of_steps_with_scalars`).
        let no_params = if mentions(body.clone(), &quote!(__fz_d)) {
            quote!(let __fz_d = #rt::FusedParams::default();)
        } else {
            TokenStream::new()
        };
        let o = tmp("__fz_o");
        let call = quote!(
            #rt::elems_fusable() && {
                #prelude
                // An index out of bounds: the statements panic where
                // they would.
                if let (#(::core::option::Option::Some(#xs),)*) = (#(#roots,)*) {
                #rt::fused_elems(
                    [#(#xs),*],
                    [#(#callers),*],
                    &[#(#steps),*],
                    [#(#leaves),*],
                    &|[#(#xs),*], #o| {
                        #no_params
                        #param_structs
                        #rt::fuse_loop_multi::<_, #nr, #nl>([#(#xs),*], #o, |[#(#rs),*], [#(#operands),*]| {
                            #body
                            [#(#rs),*]
                        })
                    },
                )
                } else {
                    false
                }
            }
        );
        let mut out: Vec<Stmt> = if super::fuse::kernels_in_debug() {
            vec![pq!(let #fused = #call;)]
        } else {
            vec![
                pq!(#[cfg(not(debug_assertions))] let #fused = #call;),
                pq!(#[cfg(debug_assertions)] let #fused = false;),
            ]
        };
        // The statements' block, unwrapped.
        let fallback = match <[Stmt; 1]>::try_from(fallback) {
            Ok([Stmt::Expr(Expr::Block(b), _)]) if b.attrs.is_empty() && b.label.is_none() => {
                b.block.stmts
            }
            Ok(one) => one.to_vec(),
            Err(all) => all,
        };
        out.push(pq!(if !#fused { #(#fallback)* };));
        out
    }
}

/// The `rt::k` function of an arithmetic operator.
fn arith(op: &syn::BinOp) -> Option<&'static str> {
    match op {
        syn::BinOp::Add(_) => Some("add"),
        syn::BinOp::Sub(_) => Some("sub"),
        syn::BinOp::Mul(_) => Some("mul"),
        syn::BinOp::Div(_) => Some("div"),
        _ => None,
    }
}

/// `e` without parentheses.
fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        _ => e,
    }
}

/// `{ stmts };`: a run's statements as one block statement.
pub(super) fn block_stmt(stmts: Vec<Stmt>) -> Stmt {
    Stmt::Expr(
        Expr::Block(syn::ExprBlock {
            attrs: Vec::new(),
            label: None,
            block: Block {
                brace_token: Default::default(),
                stmts,
            },
        }),
        Some(Default::default()),
    )
}
