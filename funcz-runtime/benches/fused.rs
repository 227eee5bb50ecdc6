//! Fused chains (`rt::fused_root`) against the same ops run one by one as
//! `#[functionalize]` lowers them today, and against a hand-written
//! ndarray `Zip` loop doing the same arithmetic in one pass.
//!
//! Kernels, all `f32`, all updating a mutated input in the caller's buffer
//! (`rt::input` + `Tracked::input`, written back at the end):
//! - the 10-op chain of `benches/functionalize.rs` (`mul_ 1.01, add_ w,
//!   sub_ 0.5, relu_, div_ 1.01, sub_ w, add_ 0.5, clamp_ -1000..1000,
//!   abs_, neg_`) at 1K, 64K, 1M and 16M elements;
//! - a run of selects only, `relu_`, `clamp_max_(6)`, `clamp_min_(0.5)`,
//!   on 1M elements (its result is its own element on some path: the row
//!   shows whether the kernel's AVX2 copy stores it with a slow masked
//!   store);
//! - a layer-norm tail `y.div_(&col).mul_(&w).add_(&b)` on 1024×1024
//!   (`col` is `[1024, 1]`, `w` and `b` are `[1024]`).
//!
//! Each kernel runs four ways: op by op, `fused_root` without a kernel
//! (the blocked per-step pass), `fused_root` with the kernel the macro
//! writes (`kernel`, through `rt::fuse_loop`: its AVX2 copy on a CPU with
//! AVX2, the baseline one with `FUNCZ_NO_AVX2=1`), and ndarray.
//!
//! The three versions are first checked to compute the same bits. Then
//! each is timed as the minimum over rounds, the three interleaved in
//! every round so that machine noise hits them alike. Printed: the times
//! and the ratios fused/nd (goal ≤ 1.3) and fused/op-by-op.
//!
//! Run: `cargo bench -p funcz-runtime --bench fused`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use funcz_runtime::Tensor;
use funcz_runtime::ndarray::{Array1, Array2, ArrayView1, Zip};
use funcz_runtime::rt::{self, Fusion, Tracked, fuse_loop, k};

/// One step as generated code runs it today.
macro_rules! upd {
    ($y:ident, $s:ident, $inp:ident, $fun:ident ( $($a:expr),* )) => {{
        if rt::can_donate_root(&$y, &$s) {
            $y.$inp($($a),*);
            rt::donated_root(stringify!($inp), &mut $y, &mut $s);
        } else {
            let new = $y.$fun($($a),*);
            rt::commit_root(stringify!($inp), &mut $y, &mut $s, new);
        }
    }};
}

// ---- the chain ----

fn chain_op_by_op(x: &Tensor, w: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    upd!(y, s, mul_, mul(1.01));
    upd!(y, s, add_, add(w));
    upd!(y, s, sub_, sub(0.5));
    upd!(y, s, relu_, relu());
    upd!(y, s, div_, div(1.01));
    upd!(y, s, sub_, sub(w));
    upd!(y, s, add_, add(0.5));
    upd!(y, s, clamp_, clamp(-1000.0, 1000.0));
    upd!(y, s, abs_, abs());
    upd!(y, s, neg_, neg());
    rt::write_back(x, &y);
}

fn chain_fused(x: &Tensor, w: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    rt::fused_root(
        &mut y,
        &mut s,
        Fusion::new()
            .mul_(1.01)
            .add_(w)
            .sub_(0.5)
            .relu_()
            .div_(1.01)
            .sub_(w)
            .add_(0.5)
            .clamp_(-1000.0, 1000.0)
            .abs_()
            .neg_(),
    );
    rt::write_back(x, &y);
}

/// [`chain_fused`] with the kernel `#[functionalize]` writes for the run.
fn chain_kernel(x: &Tensor, w: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    const OPS: &[&str] = &[
        "mul_", "add_", "sub_", "relu_", "div_", "sub_", "add_", "clamp_", "abs_", "neg_",
    ];
    rt::fused_root(
        &mut y,
        &mut s,
        Fusion::new()
            .mul_(1.01)
            .add_(w)
            .sub_(0.5)
            .relu_()
            .div_(1.01)
            .sub_(w)
            .add_(0.5)
            .clamp_(-1000.0, 1000.0)
            .abs_()
            .neg_()
            .kernel(OPS, &|x, o, p| {
                let [p0, p1, p2, p3, p4, p5, p6, p7, p8, p9] =
                    [p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9]];
                fuse_loop::<_, 6>(x, o, |v, [a0, a1, a2, a3, a4, a5]| {
                    let v = k::mul(v, a0, &p0);
                    let v = k::add(v, a1, &p1);
                    let v = k::sub(v, a2, &p2);
                    let v = k::relu(v, &p3);
                    let v = k::div(v, a3, &p4);
                    let v = k::sub(v, a4, &p5);
                    let v = k::add(v, a5, &p6);
                    let v = k::clamp(v, &p7);
                    let v = k::abs(v, &p8);
                    k::neg(v, &p9)
                })
            }),
    );
    rt::write_back(x, &y);
}

/// The chain's ten ops on one element, in the ops' order (and so with the
/// ops' rounding).
#[inline(always)]
fn chain_elem(x: f32, w: f32) -> f32 {
    let mut y = x * 1.01;
    y += w;
    y -= 0.5;
    y = if y < 0.0 { 0.0 } else { y };
    y /= 1.01;
    y -= w;
    y += 0.5;
    y = if y < -1000.0 { -1000.0 } else { y };
    y = if y > 1000.0 { 1000.0 } else { y };
    -y.abs()
}

fn chain_nd(x: &mut Array1<f32>, w: &Array1<f32>) {
    Zip::from(x).and(w).for_each(|x, &w| *x = chain_elem(*x, w));
}

// ---- a run of selects only (relu6 between bounds) ----
//
// Each step may return its element unchanged, so the run's result is the
// element itself on some path: with AVX enabled, LLVM may store such a
// result with a masked store, several times slower than a plain one on
// AMD Zen (BENCHMARKS.md, "Wider kernels"). This row shows whether the
// kernel's AVX2 copy fell into it.

fn relu6_op_by_op(x: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    upd!(y, s, relu_, relu());
    upd!(y, s, clamp_max_, clamp_max(6.0));
    upd!(y, s, clamp_min_, clamp_min(0.5));
    rt::write_back(x, &y);
}

fn relu6_fused(x: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    rt::fused_root(
        &mut y,
        &mut s,
        Fusion::new().relu_().clamp_max_(6.0).clamp_min_(0.5),
    );
    rt::write_back(x, &y);
}

fn relu6_kernel(x: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    let f = Fusion::new()
        .relu_()
        .clamp_max_(6.0)
        .clamp_min_(0.5)
        .kernel(&["relu_", "clamp_max_", "clamp_min_"], &|x, o, p| {
            let [p0, p1, p2] = [p[0], p[1], p[2]];
            fuse_loop::<_, 0>(x, o, |v, []| {
                k::clamp_min(k::clamp_max(k::relu(v, &p0), &p1), &p2)
            })
        });
    rt::fused_root(&mut y, &mut s, f);
    rt::write_back(x, &y);
}

fn relu6_nd(x: &mut Array1<f32>) {
    x.map_inplace(|v| {
        let y = if *v < 0.0 { 0.0 } else { *v };
        let y = if y > 6.0 { 6.0 } else { y };
        *v = if y < 0.5 { 0.5 } else { y };
    });
}

// ---- the layer-norm tail ----

fn ln_op_by_op(x: &Tensor, col: &Tensor, w: &Tensor, b: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    upd!(y, s, div_, div(col));
    upd!(y, s, mul_, mul(w));
    upd!(y, s, add_, add(b));
    rt::write_back(x, &y);
}

fn ln_fused(x: &Tensor, col: &Tensor, w: &Tensor, b: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    rt::fused_root(&mut y, &mut s, Fusion::new().div_(col).mul_(w).add_(b));
    rt::write_back(x, &y);
}

fn ln_kernel(x: &Tensor, col: &Tensor, w: &Tensor, b: &Tensor) {
    let mut y = rt::input(x);
    let mut s = Tracked::input(&y);
    let f =
        Fusion::new()
            .div_(col)
            .mul_(w)
            .add_(b)
            .kernel(&["div_", "mul_", "add_"], &|x, o, p| {
                fuse_loop::<_, 3>(x, o, |v, [a0, a1, a2]| {
                    k::add(k::mul(k::div(v, a0, &p[0]), a1, &p[1]), a2, &p[2])
                })
            });
    rt::fused_root(&mut y, &mut s, f);
    rt::write_back(x, &y);
}

fn ln_nd(x: &mut Array2<f32>, col: ArrayView1<'_, f32>, w: &Array1<f32>, b: &Array1<f32>) {
    for (mut row, &c) in x.rows_mut().into_iter().zip(col) {
        Zip::from(&mut row)
            .and(w)
            .and(b)
            .for_each(|y, &w, &b| *y = *y / c * w + b);
    }
}

// ---- timing ----

fn time(iters: usize, mut f: impl FnMut()) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed() / iters as u32
}

/// Minimum per-iteration times of the three versions, interleaved.
fn compare3(rounds: usize, iters: usize, fs: &mut [&mut dyn FnMut(); 4]) -> [Duration; 4] {
    for f in fs.iter_mut() {
        f();
    }
    let mut best = [Duration::MAX; 4];
    for _ in 0..rounds {
        for (b, f) in best.iter_mut().zip(fs.iter_mut()) {
            *b = (*b).min(time(iters, &mut **f));
        }
    }
    best
}

fn report(name: &str, [op, fused, kernel, nd]: [Duration; 4]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let r = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "{name:<18} op-by-op {:>9.1} us  fused {:>9.1} us  kernel {:>9.1} us  nd {:>9.1} us  \
         fused/nd {:>5.2}  kernel/nd {:>5.2}  kernel/op-by-op {:>5.2}",
        us(op),
        us(fused),
        us(kernel),
        us(nd),
        r(fused, nd),
        r(kernel, nd),
        r(kernel, op),
    );
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us with no
    // such flag: then do a tiny smoke run only.
    let full = std::env::args().any(|a| a == "--bench");
    let chains: &[(usize, &str, usize, usize)] = if full {
        &[
            (1 << 10, "1K", 30, 2000),
            (1 << 16, "64K", 30, 50),
            (1 << 20, "1M", 20, 4),
            (1 << 24, "16M", 7, 1),
        ]
    } else {
        &[(1 << 10, "1K", 1, 1)]
    };
    // The one-pass path at every size (by default values under 2048
    // elements run op by op, where one pass gains nothing).
    rt::set_min_fused(0);
    println!("f32, 1 thread; min over interleaved rounds; in place on a mutated input");
    for &(n, name, rounds, iters) in chains {
        let x0 = Tensor::randn(&[n], 1);
        let w = Tensor::rand(&[n], 2);
        let (xa, xb, xk) = (x0.clone(), x0.clone(), x0.clone());
        let mut xn = Array1::from(x0.to_vec());
        let wn = Array1::from(w.to_vec());
        // Same bits first.
        chain_op_by_op(&xa, &w);
        let before = rt::fused_passes();
        chain_fused(&xb, &w);
        chain_kernel(&xk, &w);
        assert_eq!(rt::fused_passes(), before + 2, "chain {name}: one pass");
        chain_nd(&mut xn, &wn);
        assert_eq!(bits(&xa.to_vec()), bits(&xb.to_vec()), "chain {name}");
        assert_eq!(bits(&xa.to_vec()), bits(&xk.to_vec()), "chain {name}");
        assert_eq!(
            bits(&xb.to_vec()),
            bits(xn.as_slice().unwrap()),
            "chain {name}"
        );
        let r = compare3(
            rounds,
            iters,
            &mut [
                &mut || chain_op_by_op(black_box(&xa), black_box(&w)),
                &mut || chain_fused(black_box(&xb), black_box(&w)),
                &mut || chain_kernel(black_box(&xk), black_box(&w)),
                &mut || chain_nd(black_box(&mut xn), black_box(&wn)),
            ],
        );
        report(&format!("chain {name}"), r);
    }

    let (n, rounds, iters) = if full { (1 << 20, 20, 4) } else { (1000, 1, 1) };
    let x0 = Tensor::randn(&[n], 7).mul(4.0);
    let (xa, xb, xk) = (x0.clone(), x0.clone(), x0.clone());
    let mut xn = Array1::from(x0.to_vec());
    relu6_op_by_op(&xa);
    let before = rt::fused_passes();
    relu6_fused(&xb);
    relu6_kernel(&xk);
    assert_eq!(rt::fused_passes(), before + 2, "relu6: one pass");
    relu6_nd(&mut xn);
    assert_eq!(bits(&xa.to_vec()), bits(&xb.to_vec()), "relu6");
    assert_eq!(bits(&xa.to_vec()), bits(&xk.to_vec()), "relu6");
    assert_eq!(bits(&xa.to_vec()), bits(xn.as_slice().unwrap()), "relu6");
    let r = compare3(
        rounds,
        iters,
        &mut [
            &mut || relu6_op_by_op(black_box(&xa)),
            &mut || relu6_fused(black_box(&xb)),
            &mut || relu6_kernel(black_box(&xk)),
            &mut || relu6_nd(black_box(&mut xn)),
        ],
    );
    report("relu6 run 1M", r);

    let (rows, cols, rounds, iters) = if full {
        (1024, 1024, 20, 4)
    } else {
        (4, 8, 1, 1)
    };
    let x0 = Tensor::randn(&[rows, cols], 3);
    let col = Tensor::rand(&[rows, 1], 4).add(0.5);
    let w = Tensor::rand(&[cols], 5);
    let b = Tensor::randn(&[cols], 6);
    let (xa, xb, xk) = (x0.clone(), x0.clone(), x0.clone());
    let mut xn = Array2::from_shape_vec((rows, cols), x0.to_vec()).expect("shape");
    let coln = Array1::from(col.to_vec());
    let (wn, bn) = (Array1::from(w.to_vec()), Array1::from(b.to_vec()));
    ln_op_by_op(&xa, &col, &w, &b);
    let before = rt::fused_passes();
    ln_fused(&xb, &col, &w, &b);
    ln_kernel(&xk, &col, &w, &b);
    assert_eq!(rt::fused_passes(), before + 2, "layer norm: one pass");
    ln_nd(&mut xn, coln.view(), &wn, &bn);
    assert_eq!(bits(&xa.to_vec()), bits(&xb.to_vec()), "layer norm");
    assert_eq!(bits(&xa.to_vec()), bits(&xk.to_vec()), "layer norm");
    assert_eq!(
        bits(&xb.to_vec()),
        bits(xn.as_slice().unwrap()),
        "layer norm"
    );
    let r = compare3(
        rounds,
        iters,
        &mut [
            &mut || {
                ln_op_by_op(
                    black_box(&xa),
                    black_box(&col),
                    black_box(&w),
                    black_box(&b),
                )
            },
            &mut || {
                ln_fused(
                    black_box(&xb),
                    black_box(&col),
                    black_box(&w),
                    black_box(&b),
                )
            },
            &mut || {
                ln_kernel(
                    black_box(&xk),
                    black_box(&col),
                    black_box(&w),
                    black_box(&b),
                )
            },
            &mut || {
                ln_nd(
                    black_box(&mut xn),
                    black_box(coln.view()),
                    black_box(&wn),
                    black_box(&bn),
                )
            },
        ],
    );
    report(&format!("layer norm {rows}x{cols}"), r);
}
