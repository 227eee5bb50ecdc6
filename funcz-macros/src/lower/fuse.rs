//! Fusion: a run of elementwise in-place ops on one tracked root, in
//! consecutive statements (or one chain, which `split_chain` made into
//! statements), runs as one pass over memory (`rt::fused_root`), which
//! falls back to the ops one by one wherever a single pass would not be
//! the same computation. The trace still records each functional op.
//!
//! Input: `y.sub_(&mean); y.div_(&std); y.mul_(w);` (`y` a root with state)
//! Output: `rt::fused_run(&mut y, &mut s, &mut [rt::Step::sub_(&mean), rt::Step::div_(&std), rt::Step::mul_(&(w))]);`
//!
//! The arguments of the whole run are evaluated before its first op runs,
//! where the original evaluates each one after the op before it: so every
//! argument must be one whose value cannot depend on the root (see
//! `independent`).

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// The number of statements from `stmts[k]` on that form one fused run
    /// (0 when fewer than two do).
    pub(super) fn fusion_run(&self, stmts: &[Stmt], k: usize) -> usize {
        let Some((name, _)) = fusible_stmt(&stmts[k]) else {
            return 0;
        };
        let Some(id) = self.fusion_root(name) else {
            return 0;
        };
        let n = stmts[k..]
            .iter()
            .take_while(|s| {
                fusible_stmt(s).is_some_and(|(other, m)| {
                    other == name && m.args.iter().all(|a| self.independent(a, id))
                })
            })
            .take(MAX_RUN)
            .count();
        if n >= 2 { n } else { 0 }
    }

    /// Whether `stmt` is `name.op(args);` with `op` fusible.
    pub(super) fn is_fusible_stmt(&self, stmt: &Stmt) -> bool {
        fusible_stmt(stmt).is_some()
    }

    /// The root named `name`, if its in-place ops are committed directly
    /// into its own value and state (a tensor input or a local, not a view,
    /// not a root whose layout metadata ops changed).
    fn fusion_root(&self, name: &Ident) -> Option<usize> {
        if !self.closure_floor.is_empty() || self.scopes.is_ref_name(&name.to_string()) {
            return None;
        }
        let id = self.scopes.lookup(&name.to_string())?;
        (matches!(self.scopes.kind(id), Kind::Root { .. }) && self.has_state(id) && !self.based(id))
            .then_some(id)
    }

    /// True if `e`'s value cannot depend on the root `root`'s data, nor
    /// change anything: literals, names of values that are not views of
    /// `root`, and arithmetic, references, indexing, fields and op-table
    /// functional ops of those. A call of anything else might read or write
    /// `root` (a helper given a view of it), so it is not.
    fn independent(&self, e: &Expr, root: usize) -> bool {
        match e {
            Expr::Lit(_) => true,
            Expr::Path(p) if p.qself.is_none() => match self.binding_of(e) {
                Some(id) => {
                    self.scopes.root_of(id) != Some(root)
                        && id != root
                        && !matches!(self.scopes.kind(id), Kind::Ambiguous)
                }
                // A constant or a name from outside the function.
                None => p.path.segments.len() > 1 || p.path.segments[0].arguments.is_none(),
            },
            Expr::Paren(p) => self.independent(&p.expr, root),
            Expr::Group(g) => self.independent(&g.expr, root),
            Expr::Reference(r) => r.mutability.is_none() && self.independent(&r.expr, root),
            Expr::Unary(u) => self.independent(&u.expr, root),
            Expr::Cast(c) => self.independent(&c.expr, root),
            Expr::Binary(b) => {
                matches!(
                    b.op,
                    syn::BinOp::Add(_)
                        | syn::BinOp::Sub(_)
                        | syn::BinOp::Mul(_)
                        | syn::BinOp::Div(_)
                        | syn::BinOp::Rem(_)
                ) && self.independent(&b.left, root)
                    && self.independent(&b.right, root)
            }
            Expr::Field(f) => match self.place_of(e) {
                Some(id) => self.scopes.root_of(id) != Some(root) && id != root,
                None => self.independent(&f.base, root),
            },
            Expr::Index(i) => self.independent(&i.expr, root) && self.independent(&i.index, root),
            Expr::MethodCall(m) => {
                let pure = matches!(
                    optable::lookup(&crate::fast::text(&m.method)).map(|i| i.kind),
                    Some(OpKind::Functional | OpKind::View { .. } | OpKind::MaybeView { .. })
                );
                pure && m.turbofish.is_none()
                    && self.independent(&m.receiver, root)
                    && m.args.iter().all(|a| self.independent(a, root))
            }
            _ => false,
        }
    }

    /// Lowers a run that [`Self::fusion_run`] found.
    pub(super) fn lower_fused(&mut self, run: &[Stmt]) -> Stmt {
        let (name, _) = fusible_stmt(&run[0]).expect("a fused run");
        let id = self.fusion_root(name).expect("a fused run");
        let (v, s) = (self.value(id), self.state(id));
        let rt = rt();
        let kernel = kernel(run);
        let mut steps = Vec::new();
        for stmt in run {
            let (_, m) = fusible_stmt(stmt).expect("a fused run");
            let mut args = m.args.clone();
            let operand = optable::STEP_OPERANDS
                .iter()
                .find(|(op, _)| m.method == op)
                .map(|&(_, k)| k);
            for (k, a) in args.iter_mut().enumerate() {
                self.visit_expr_mut(a);
                // A step borrows its operand (`rt::StepArg`): an owned
                // one lives in a temporary until the end of the run's
                // statement.
                if Some(k) == operand && !literal_or_reference(a) {
                    *a = pq!(&(#a));
                }
            }
            self.mark_mutated(id);
            self.note_commit(self.scopes.root_of(id), Some(id));
            let method = &m.method;
            steps.push(quote!(#rt::Step::#method(#args)));
        }
        // One call: the temporaries of the arguments (`&(&g * 0.1)`) live
        // until the end of the statement, after the run has run, as they
        // would in the original calls; the arguments never name the root
        // (see `independent`), so its `&mut` conflicts with none of them.
        // The steps are an array in the caller's frame (nothing is
        // allocated to record them).
        let steps = quote!(&mut [#(#steps),*]);
        // The call is spanned at the run's first op: a step's panic (its
        // op's shape checks, which the runtime repeats from
        // `#[track_caller]` code) reports the user's line.
        let at = fusible_stmt(&run[0]).expect("a fused run").1.method.span();
        let run_call = || rt_call(at, "fused_run", quote!(&mut #v, &mut #s, #steps));
        let kernel_call =
            |k: &TokenStream| rt_call(at, "fused_run_kernel", quote!(&mut #v, &mut #s, #steps, #k));
        match kernel {
            // `FUNCZ_KERNELS_IN_DEBUG` (set for this workspace's own
            // builds): in every build, so that the tests run them.
            Some(k) if kernels_in_debug() => {
                let call = kernel_call(&k);
                pq!(#call;)
            }
            // The compiled kernel only where the code is optimized (it is
            // the same computation, and each one is a loop the compiler
            // builds for this run alone).
            Some(k) => {
                let (plain, compiled) = (run_call(), kernel_call(&k));
                pq!({
                    #[cfg(debug_assertions)]
                    #plain;
                    #[cfg(not(debug_assertions))]
                    #compiled;
                })
            }
            None => {
                let call = run_call();
                pq!(#call;)
            }
        }
    }
}

/// The kernel argument of `rt::fused_run_kernel` for `run` if it has at
/// least `MIN_KERNEL` ops and every op of it has a per-element formula
/// (`optable::KERNELS`): a closure that applies the formulas in order to
/// each element, through `rt::fuse_loop_wide` (one copy of the loop, with
/// AVX2: each kernel is compiled in the user's crate, once per run).
///
/// Input: `y.mul_(2.0); y.add_(&w); y.relu_();`
/// Output: `&|x, o, p| { let p0 = p[0]; let p1 = p[1]; let p2 = p[2];
/// rt::fuse_loop_wide::<_, 2>(x, o, |e, [a0, a1]| { let e = rt::k::mul(e, a0, &p0);
/// let e = rt::k::add(e, a1, &p1); let e = rt::k::relu(e, &p2); e }) }`
fn kernel(run: &[Stmt]) -> Option<TokenStream> {
    // Each kernel is code the user's crate compiles; with two ops the
    // blocked pass already reads memory once, and a kernel gains little.
    if run.len() < MIN_KERNEL {
        return None;
    }
    let rt = rt();
    let (x, o, p, e) = (tmp("__fz_x"), tmp("__fz_o"), tmp("__fz_p"), tmp("__fz_e"));
    let mut body = TokenStream::new();
    let mut params = TokenStream::new();
    let mut operands = Vec::new();
    for (i, stmt) in run.iter().enumerate() {
        let (_, m) = fusible_stmt(stmt)?;
        let name = crate::fast::text(&m.method);
        let &(_, f, n) = optable::KERNELS.iter().find(|(op, _, _)| *op == name)?;
        let f = tmp(f);
        let args: Vec<Ident> = (0..n)
            .map(|_| {
                operands.push(tmp(&format!("__fz_a{}", operands.len())));
                operands.last().expect("just pushed").clone()
            })
            .collect();
        // Each step's parameters are copied into a local first: the loop
        // then sees they cannot change while it writes the block.
        let pi = tmp(&format!("__fz_p{i}"));
        let i = proc_macro2::Literal::usize_unsuffixed(i);
        params.extend(quote!(let #pi = #p[#i];));
        body.extend(quote!(let #e = #rt::k::#f(#e, #(#args,)* &#pi);));
    }
    let n = proc_macro2::Literal::usize_unsuffixed(operands.len());
    Some(quote!(&|#x, #o, #p| {
        #params
        #rt::fuse_loop_wide::<_, #n>(#x, #o, |#e, [#(#operands),*]| { #body #e })
    }))
}

/// Whether compiled kernels are emitted for debug builds too
/// (`FUNCZ_KERNELS_IN_DEBUG`, which this workspace's builds set so that
/// the tests run them; the unit tests of the user-facing form turn it off
/// for their thread).
pub(super) fn kernels_in_debug() -> bool {
    #[cfg(test)]
    if NO_KERNELS_IN_DEBUG.with(std::cell::Cell::get) {
        return false;
    }
    std::env::var_os("FUNCZ_KERNELS_IN_DEBUG").is_some()
}

#[cfg(test)]
thread_local! {
    /// Set by a test to expand as a user's build does.
    pub(crate) static NO_KERNELS_IN_DEBUG: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The fewest ops of a run compiled into a kernel.
const MIN_KERNEL: usize = 3;

/// The most ops one fused call holds: its steps are an array in the
/// caller's frame (about 64 bytes a step), and the blocked pass reads a
/// block of every operand of the run (a longer run is cut into several).
const MAX_RUN: usize = 32;

/// Whether `e` is a literal (`1.5`, `-2.0`) or a reference (`&w`), which a
/// step takes as it is.
fn literal_or_reference(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) | Expr::Reference(_) => true,
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && matches!(&*u.expr, Expr::Lit(_)),
        Expr::Paren(p) => literal_or_reference(&p.expr),
        Expr::Group(g) => literal_or_reference(&g.expr),
        _ => false,
    }
}

/// `name.op(args);` with `op` an elementwise in-place op a fused run can
/// hold.
fn fusible_stmt(stmt: &Stmt) -> Option<(&Ident, &syn::ExprMethodCall)> {
    let Stmt::Expr(Expr::MethodCall(m), Some(_)) = stmt else {
        return None;
    };
    let Expr::Path(p) = &*m.receiver else {
        return None;
    };
    let name = p.path.get_ident()?;
    let ok = m.attrs.is_empty()
        && m.turbofish.is_none()
        && p.attrs.is_empty()
        && optable::FUSIBLE.contains(&crate::fast::text(&m.method).as_str());
    ok.then_some((name, m))
}
