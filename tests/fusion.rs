//! Runs of in-place elementwise ops on one tensor run as one fused pass
//! in functionalized code (`rt::fused_root`). The values, the inputs and
//! the traces are the unfused program's; an argument whose value could
//! depend on the tensor ends the run (it is evaluated after the ops before
//! it, as in the original).

mod common;

use common::{check, iota};
use funcz::Tensor;

// The chain kernel of the benchmark, on a local and on an input.
variants!(chain_local, chain_local_f, chain_local_fv; fn (x: &Tensor, w: &Tensor) -> Tensor {
    let y = x.clone();
    y.mul_(1.01);
    y.add_(w);
    y.sub_(0.5);
    y.relu_();
    y.div_(1.01);
    y.sub_(w);
    y.add_(0.5);
    y.clamp_(-1000.0, 1000.0);
    y.abs_();
    y.neg_();
    y
});

variants!(chain_input, chain_input_f, chain_input_fv; fn (x: &mut Tensor, w: &Tensor) {
    x.mul_(1.01).add_(w).sub_(0.5).relu_();
    x.div_(1.01).sub_(w).add_(0.5).clamp_(-1000.0, 1000.0).abs_().neg_();
});

#[test]
fn a_chain_of_elementwise_ops_fuses_and_traces_each_op() {
    // Values from 2048 elements fuse (the default is 4M; tests run one per
    // thread, and the threshold is per thread).
    funcz::rt::set_min_fused(2048);
    let n = 5000; // more than one block of the fused pass
    let x = Tensor::randn(&[n], 1);
    let w = Tensor::rand(&[n], 2);
    let [g1, g2] = check("chain_local", &[x.clone(), w.clone()], |v, t| {
        vec![[chain_local, chain_local_f, chain_local_fv][v](
            &t[0], &t[1],
        )]
    });
    let ops = "clone mul add sub relu div sub add clamp abs neg";
    assert_eq!(g1.ops().join(" "), ops, "{g1}");
    assert_eq!(g2.ops().join(" "), ops, "{g2}");
    let [g1, _] = check("chain_input", &[x.clone(), w.clone()], |v, t| {
        let (a, b) = t.split_at_mut(1);
        [chain_input, chain_input_f, chain_input_fv][v](&mut a[0], &b[0]);
        vec![]
    });
    assert_eq!(g1.ops().len(), 11, "{g1}");
    // Untraced (the fused pass runs only then): one pass, the same bits.
    let before = funcz::rt::fused_passes();
    let (a, b) = (chain_local(&x, &w), chain_local_f(&x, &w));
    assert_eq!(funcz::rt::fused_passes(), before + 1);
    assert_eq!(a.to_vec(), b.to_vec());
    let (mut a, mut b) = (x.clone(), x.clone());
    chain_input(&mut a, &w);
    chain_input_f(&mut b, &w);
    assert_eq!(funcz::rt::fused_passes(), before + 2);
    assert_eq!(a.to_vec(), b.to_vec());
}

// Layer norm's tail: a column and two rows broadcast against the rows.
// Every kind of operand a run's step borrows (`rt::StepArg`): an owned
// tensor expression, an owned local (moved into the op by the original), a
// scalar name, a scalar expression, a `&Tensor` name, a scalar field, a
// negative literal. Each is passed as `&(operand)`, a temporary living
// until the end of the run's statement, so no step owns (or drops) a
// tensor.
struct Scale {
    lr: f32,
}

variants!(operand_kinds, operand_kinds_f, operand_kinds_fv; fn (x: &mut Tensor, w: &Tensor, g: &Tensor, st: &Scale) -> Tensor {
    let lr = 0.5f32;
    let owned = g.mul(3.0);
    let y = x.clone();
    y.add_(g * 0.1);
    y.sub_(owned);
    y.mul_(lr);
    y.add_scaled_(w, lr * 2.0);
    y.div_(st.lr);
    y.lerp_(w, lr);
    y.add_(-1.5);
    x.mul_(lr).sub_(g * 2.0).add_(w);
    y
});

#[test]
fn run_operands_of_every_kind_are_borrowed() {
    funcz::rt::set_min_fused(2048);
    let n = 3000;
    let st = Scale { lr: 4.0 };
    let (x, w, g) = (
        Tensor::randn(&[n], 3),
        Tensor::rand(&[n], 4),
        Tensor::randn(&[n], 5),
    );
    let [g1, g2] = check(
        "operand_kinds",
        &[x.clone(), w.clone(), g.clone()],
        |v, t| {
            let (a, b) = t.split_at_mut(1);
            vec![[operand_kinds, operand_kinds_f, operand_kinds_fv][v](
                &mut a[0], &b[0], &b[1], &st,
            )]
        },
    );
    assert!(g1.ops().contains(&"lerp"), "{g1}");
    assert_eq!(g1.ops().len(), g2.ops().len(), "{g2}");
    // Untraced: both runs fuse, with the original's bits.
    let before = funcz::rt::fused_passes();
    let (mut a, mut b) = (x.clone(), x.clone());
    let (ya, yb) = (
        operand_kinds(&mut a, &w, &g, &st),
        operand_kinds_f(&mut b, &w, &g, &st),
    );
    assert_eq!(funcz::rt::fused_passes(), before + 2);
    let bits = |t: &Tensor| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&ya), bits(&yb));
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a.version(), b.version());
}

variants!(norm_tail, norm_tail_f, norm_tail_fv; fn (x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    let y = x.clone();
    y.sub_(x.mean_dim(-1, true));
    let var = y.mul(&y).mean_dim(-1, true);
    var.add_(1e-5).sqrt_();
    y.div_(&var).mul_(w).add_(b);
    y
});

#[test]
fn broadcast_operands_fuse_with_the_unfused_values() {
    funcz::rt::set_min_fused(2048); // (see above)
    let x = Tensor::randn(&[64, 300], 3);
    let w = Tensor::rand(&[300], 4);
    let b = Tensor::randn(&[300], 5);
    check("norm_tail", &[x.clone(), w.clone(), b.clone()], |v, t| {
        vec![[norm_tail, norm_tail_f, norm_tail_fv][v](
            &t[0], &t[1], &t[2],
        )]
    });
    let before = funcz::rt::fused_passes();
    assert_eq!(
        norm_tail(&x, &w, &b).to_vec(),
        norm_tail_f(&x, &w, &b).to_vec()
    );
    // `y.div_(&var).mul_(w).add_(b)`; `var.add_(1e-5).sqrt_()` is too
    // small to need a fused pass (64 elements).
    assert_eq!(funcz::rt::fused_passes(), before + 1);
}

fn total(t: &Tensor) -> Tensor {
    t.sum()
}

// Arguments that read the tensor end the run: `y.sum()` after `add_` sees
// the added value, a view of `y` too, and so does a helper's result.
variants!(reads_root, reads_root_f, reads_root_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    let v = y.narrow(0, 0, 1);
    y.add_(1.0);
    y.mul_(y.sum());
    y.add_(2.0);
    y.div_(v.clone());
    y.sub_(1.0);
    y.mul_(total(&y));
    y.add_(&y);
    y
});

#[test]
fn arguments_that_read_the_tensor_end_the_run() {
    check("reads_root", &[iota(&[3])], |v, t| {
        vec![[reads_root, reads_root_f, reads_root_fv][v](&t[0])]
    });
    let x = iota(&[3]);
    assert_eq!(reads_root(&x).to_vec(), reads_root_f(&x).to_vec());
}

// Every op with a compiled formula (`optable::KERNELS`), in runs the macro
// compiles into one kernel: scalar, same-shape, row and column operands.
variants!(kernel_ops, kernel_ops_f, kernel_ops_fv;
    fn (x: &Tensor, w: &Tensor, row: &Tensor, col: &Tensor) -> Tensor {
    let y = x.clone();
    y.mul_(1.5);
    y.add_(w);
    y.sub_(row);
    y.div_(col);
    y.add_scaled_(w, 0.25);
    y.sub_scaled_(row, 2.0);
    y.neg_();
    y.abs_();
    y.sqrt_();
    y.log_();
    y.exp_();
    y.sigmoid_();
    y.tanh_();
    y.addcmul_(w, row, 0.5);
    y.addcdiv_(row, col, -0.75);
    y.sign_();
    y.add_(w);
    y.relu_();
    y.clamp_(0.1, 0.9);
    y.clamp_min_(0.2);
    y.clamp_max_(0.8);
    y.hardtanh_(0.3, 0.7);
    y
});

/// `kernel_ops` fused against the ops one by one, bit for bit: with the
/// compiled kernel where kernels run (a CPU with AVX2), with the blocked
/// pass elsewhere (`FUNCZ_NO_AVX2`, see the child test below).
fn check_kernel_ops() {
    let w = Tensor::randn(&[70, 90], 7);
    let row = Tensor::rand(&[90], 8).add(0.5);
    let col = Tensor::rand(&[70, 1], 9).add(0.5);
    let x = Tensor::randn(&[70, 90], 6);
    check(
        "kernel_ops",
        &[x.clone(), w.clone(), row.clone(), col.clone()],
        |v, t| {
            vec![[kernel_ops, kernel_ops_f, kernel_ops_fv][v](
                &t[0], &t[1], &t[2], &t[3],
            )]
        },
    );
    let want = bits(&kernel_ops(&x, &w, &row, &col));
    // Large enough for the one-pass path (6300 elements: several blocks of
    // 90-element rows, and a tail shorter than the kernel's chunk), and
    // small values fused too.
    for min in [2048, 0] {
        let prev = funcz::rt::set_min_fused(min);
        let (passes, blocks) = (funcz::rt::fused_passes(), funcz::rt::kernel_blocks());
        assert_eq!(bits(&kernel_ops_f(&x, &w, &row, &col)), want);
        assert_eq!(bits(&kernel_ops_fv(&x, &w, &row, &col)), want);
        assert_eq!(funcz::rt::fused_passes(), passes + 2, "one pass each");
        assert_eq!(
            funcz::rt::kernel_blocks() > blocks,
            funcz::rt::kernels_run(),
            "the kernel ran where kernels run"
        );
        funcz::rt::set_min_fused(prev);
    }
    // Non-finite values and signed zeros go through the same formulas.
    let odd = Tensor::from_vec(corners(6300, 0), &[70, 90]);
    let prev = funcz::rt::set_min_fused(0);
    assert_eq!(
        bits(&kernel_ops_f(&odd, &w, &row, &col)),
        bits(&kernel_ops(&odd, &w, &row, &col))
    );
    funcz::rt::set_min_fused(prev);
}

#[test]
fn compiled_kernels_give_the_bits_of_the_ops_one_by_one() {
    check_kernel_ops();
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec().iter().map(|v| v.to_bits()).collect()
}

/// `n` values cycling through every float corner (NaN, infinities, signed
/// zeros, a subnormal) and ordinary values, shifted by `seed`.
fn corners(n: usize, seed: usize) -> Vec<f32> {
    const C: [f32; 13] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        1e-40,
        -3.0,
        0.75,
        2.5,
        -0.3,
        1.0,
        7.0,
        -1e30,
    ];
    (0..n)
        .map(|i| {
            let k = (i * 7 + seed * 3) % 29;
            if k < C.len() {
                C[k]
            } else {
                (k as f32 - 20.0) * 0.37
            }
        })
        .collect()
}

/// The receiver and operands of the step runs on `rows`x`cols` float
/// corners: `x` and `w` of that shape, `off` of that shape at an offset
/// into its storage, a row and a column that broadcast.
fn operands(rows: usize, cols: usize) -> [Tensor; 5] {
    let n = rows * cols;
    let x = Tensor::from_vec(corners(n, 1), &[rows, cols]);
    let w = Tensor::from_vec(corners(n, 2), &[rows, cols]);
    let big = Tensor::from_vec(corners(n + 3, 3), &[n + 3]);
    let off = big.narrow(0, 3, n).view([rows as i64, cols as i64]);
    let row = Tensor::from_vec(corners(cols, 4), &[cols]);
    let col = Tensor::from_vec(corners(rows, 5), &[rows, 1]);
    [x, w, off, row, col]
}

/// Every kind of operand and op of the fused pass, on `rows`x`cols`: the
/// run of `rt::fused_run` against the ops one by one, bit for bit; returns
/// whether the run took the fused pass.
fn check_step_run(rows: usize, cols: usize) -> bool {
    use funcz::rt::{Step, Tracked};
    let [x, w, off, row, col] = operands(rows, cols);
    let one = Tensor::from_vec(vec![1.5], &[1]);
    let want = x.clone();
    want.mul_(1.01);
    want.add_(&w);
    want.sub_(&row);
    want.div_(&col);
    want.add_scaled_(&off, 0.25);
    want.mul_(&one);
    want.sub_scaled_(w.mul(2.0), 0.5);
    want.clamp_(-2.0, None);
    want.sqrt_();
    want.addcmul_(&w, &row, 0.5);
    want.lerp_(&off, 0.3);
    want.lerp_(&w, &col);
    want.neg_();
    want.pow_(2.0);
    want.hardtanh_(-0.5, 3.0);
    want.abs_();
    want.relu_();
    want.exp_();
    want.sign_();
    let mut y = x.clone();
    let mut s = Tracked::root(&y);
    let passes = funcz::rt::fused_passes();
    funcz::rt::fused_run(
        &mut y,
        &mut s,
        &mut [
            Step::mul_(1.01),
            Step::add_(&w),
            Step::sub_(&row),
            Step::div_(&col),
            Step::add_scaled_(&off, 0.25),
            Step::mul_(&one),
            Step::sub_scaled_(&(w.mul(2.0)), 0.5),
            Step::clamp_(-2.0, None),
            Step::sqrt_(),
            Step::addcmul_(&w, &row, 0.5),
            Step::lerp_(&off, 0.3),
            Step::lerp_(&w, &col),
            Step::neg_(),
            Step::pow_(2.0),
            Step::hardtanh_(-0.5, 3.0),
            Step::abs_(),
            Step::relu_(),
            Step::exp_(),
            Step::sign_(),
        ],
    );
    assert_eq!(bits(&y), bits(&want), "{rows}x{cols}");
    assert_eq!(y.version(), 19, "one version per op");
    funcz::rt::fused_passes() > passes
}

/// Shapes with lengths around the kernels' vector widths and the pass's
/// blocks (2048 `f32`), rows shorter and longer than its shortest period.
const SHAPES: [(usize, usize); 9] = [
    (1, 1),
    (1, 7),
    (3, 65),
    (2, 257),
    (9, 300),
    (1, 2049),
    (3, 1500),
    (700, 3),
    (5, 4099),
];

/// `check` on every shape, fused (it must say so) and op by op.
fn fused_and_op_by_op(check: fn(usize, usize) -> bool) {
    for (rows, cols) in SHAPES {
        let prev = funcz::rt::set_min_fused(0);
        assert!(check(rows, cols), "{rows}x{cols} fused");
        funcz::rt::set_min_fused(usize::MAX);
        assert!(!check(rows, cols), "{rows}x{cols} op by op");
        funcz::rt::set_min_fused(prev);
    }
}

fn check_step_runs() {
    fused_and_op_by_op(check_step_run);
}

#[test]
fn step_runs_give_the_bits_of_the_ops_one_by_one() {
    check_step_runs();
}

/// The float ops whose fused-run table entry calls their crate-private
/// `*_in_place` form (`float_unary!`'s ops, `addcmul1_`, `addcdiv1_`): the
/// name of each, its step, and its public op.
type MoreOp<'a> = (&'static str, Step<'a, f32>, Box<dyn Fn(&Tensor) + 'a>);

fn more_ops<'a>(
    w: &'a Tensor,
    row: &'a Tensor,
    off: &'a Tensor,
    col: &'a Tensor,
) -> Vec<MoreOp<'a>> {
    vec![
        (
            "rsqrt_",
            Step::rsqrt_(),
            Box::new(|t: &Tensor| drop(t.rsqrt_())),
        ),
        (
            "reciprocal_",
            Step::reciprocal_(),
            Box::new(|t: &Tensor| drop(t.reciprocal_())),
        ),
        ("sin_", Step::sin_(), Box::new(|t: &Tensor| drop(t.sin_()))),
        ("cos_", Step::cos_(), Box::new(|t: &Tensor| drop(t.cos_()))),
        ("erf_", Step::erf_(), Box::new(|t: &Tensor| drop(t.erf_()))),
        (
            "floor_",
            Step::floor_(),
            Box::new(|t: &Tensor| drop(t.floor_())),
        ),
        (
            "round_",
            Step::round_(),
            Box::new(|t: &Tensor| drop(t.round_())),
        ),
        (
            "addcmul1_",
            Step::addcmul1_(w, row),
            Box::new(move |t: &Tensor| drop(t.addcmul1_(w, row))),
        ),
        (
            "addcdiv1_",
            Step::addcdiv1_(off, col),
            Box::new(move |t: &Tensor| drop(t.addcdiv1_(off, col))),
        ),
    ]
}

use funcz::rt::Step;

/// Each of [`more_ops`] on `rows`x`cols` float corners (NaN, infinities,
/// signed zeros, a subnormal), alone and all in one run: `rt::fused_run`
/// against the public ops, bit for bit; returns whether every run took
/// the fused pass.
fn check_more_step_run(rows: usize, cols: usize) -> bool {
    use funcz::rt::Tracked;
    let n = rows * cols;
    let [x, w, off, row, col] = operands(rows, cols);
    let mut all_fused = true;
    // One op at a time: the corners reach each op's formula.
    for (name, step, public) in more_ops(&w, &row, &off, &col) {
        let want = x.clone();
        public(&want);
        let mut y = x.clone();
        let mut s = Tracked::root(&y);
        let passes = funcz::rt::fused_passes();
        funcz::rt::fused_run(&mut y, &mut s, &mut [step]);
        all_fused &= funcz::rt::fused_passes() > passes;
        assert_eq!(bits(&y), bits(&want), "{name} on {rows}x{cols}");
        assert_eq!(y.version(), 1, "{name}: one version");
        assert!(
            want.to_vec().iter().any(|v| v.is_nan()) || n < 13,
            "{name}: the corners reach NaN"
        );
    }
    // All of them in one run (on values that stay mostly finite: each op
    // sees ordinary values too).
    let x = Tensor::from_vec(
        (0..n).map(|i| 0.3 + (i % 17) as f32 * 0.11).collect(),
        &[rows, cols],
    );
    let want = x.clone();
    let (mut steps, publics): (Vec<_>, Vec<_>) = more_ops(&w, &row, &off, &col)
        .into_iter()
        .map(|(_, step, public)| (step, public))
        .unzip();
    for public in &publics {
        public(&want);
    }
    let mut y = x.clone();
    let mut s = Tracked::root(&y);
    let passes = funcz::rt::fused_passes();
    funcz::rt::fused_run(&mut y, &mut s, &mut steps);
    all_fused &= funcz::rt::fused_passes() > passes;
    assert_eq!(bits(&y), bits(&want), "the run on {rows}x{cols}");
    assert_eq!(y.version(), 9, "one version per op");
    all_fused
}

fn check_more_step_runs() {
    fused_and_op_by_op(check_more_step_run);
}

#[test]
fn runs_of_more_float_ops_give_the_bits_of_the_public_ops() {
    check_more_step_runs();
}

#[test]
fn runs_of_more_float_ops_trace_as_the_public_ops_donated() {
    use funcz::rt::Tracked;
    use funcz::trace::Tracer;
    let x = Tensor::from_vec(vec![0.5, -0.0, f32::INFINITY, 2.5, f32::NAN, -3.0], &[2, 3]);
    let w = Tensor::rand(&[2, 3], 11);
    let row = Tensor::rand(&[3], 12);
    let off = Tensor::rand(&[2, 3], 13).add(0.5);
    let col = Tensor::rand(&[2, 1], 14).add(0.5);
    let tracer = || {
        Tracer::new("more")
            .input("x", &x)
            .input("w", &w)
            .input("row", &row)
            .input("off", &off)
            .input("col", &col)
    };
    // The run, traced (the traced run calls each step's in-place op, one
    // by one, and records it as its functional twin).
    let (fused, g_fused) = tracer().run(|| {
        let (mut steps, _): (Vec<_>, Vec<_>) = more_ops(&w, &row, &off, &col)
            .into_iter()
            .map(|(_, step, public)| (step, public))
            .unzip();
        let mut y = x.clone();
        let mut s = Tracked::root(&y);
        funcz::rt::fused_run(&mut y, &mut s, &mut steps);
        y
    });
    // The public ops, each donated as generated code does one op.
    let (public, g_public) = tracer().run(|| {
        let mut y = x.clone();
        for (_, _, op) in more_ops(&w, &row, &off, &col) {
            op(&y);
            funcz::rt::donated(&mut y);
        }
        y
    });
    assert_eq!(bits(&fused), bits(&public));
    assert_eq!(
        g_fused.ops().join(" "),
        "clone rsqrt reciprocal sin cos erf floor round addcmul addcdiv",
        "{g_fused}"
    );
    assert_eq!(g_fused.to_string(), g_public.to_string());
    let metas =
        |g: &funcz::trace::Graph| -> Vec<_> { g.nodes().iter().map(|n| n.metas.clone()).collect() };
    assert_eq!(metas(&g_fused), metas(&g_public));
    assert!(
        g_fused
            .to_string()
            .contains("aten::addcdiv(addcmul, off_1, col_1, 1.0)"),
        "{g_fused}"
    );
    // The public in-place ops themselves still record their own names,
    // their receiver as their output.
    let y = x.clone();
    let (_, g) = Tracer::new("inplace")
        .input("y", &y)
        .input("w", &w)
        .input("row", &row)
        .run(|| {
            y.rsqrt_().sin_().addcmul1_(&w, &row);
        });
    assert_eq!(g.ops().join(" "), "rsqrt_ sin_ addcmul_", "{g}");
    assert!(
        g.to_string()
            .contains("aten::addcmul_(sin_, w_1, row_1, 1.0)"),
        "{g}"
    );
}

/// Run by `without_avx2_the_blocked_pass_gives_the_same_bits` in a child
/// process (`FUNCZ_NO_AVX2`: compiled kernels do not run, the blocked pass
/// does).
#[test]
fn child_checks_the_baseline_blocked_pass() {
    if std::env::var_os("FUNCZ_FUSION_CHILD").is_some() {
        assert!(!funcz::rt::kernels_run(), "no compiled kernel runs");
        check_kernel_ops();
        check_step_runs();
        check_more_step_runs();
        println!("FUNCZ_FUSION_CHILD ran");
    }
}

#[test]
fn without_avx2_the_blocked_pass_gives_the_same_bits() {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "child_checks_the_baseline_blocked_pass",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FUNCZ_NO_AVX2", "1")
        .env("FUNCZ_FUSION_CHILD", "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    assert!(
        stdout.contains("FUNCZ_FUSION_CHILD ran"),
        "child did not run: {stdout}"
    );
}

#[test]
#[should_panic(expected = "funcz: mul_: unsupported operation")]
fn a_run_on_a_self_overlapping_input_panics_with_the_op() {
    use funcz::rt::{Step, Tracked};
    let caller = Tensor::from_vec(vec![1.0], &[1]).expand([4]);
    let mut x = funcz::rt::input(&caller);
    let mut s = Tracked::input(&x);
    funcz::rt::fused_run(&mut x, &mut s, &mut [Step::mul_(2.0), Step::add_(1.0)]);
}
