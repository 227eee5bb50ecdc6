//! Functionalized code against the original mutating code and against a
//! hand-written ndarray loop.
//!
//! Each kernel is written once and compiled three times: unannotated (the
//! original, mutating program), `#[functionalize]` (`remove = "mutations"`,
//! column `views`) and `#[functionalize(remove = "mutations_and_views")]`
//! (column `copies`). It is also written a fourth time by hand on `ndarray`
//! arrays, without the tensor library (column `nd`): the same f32
//! operations in the same order, elementwise chains fused into one `Zip`
//! pass, mutation done in place (`Zip`, `mapv_inplace`, `slice_mut` +
//! `assign`), i.e. what one would write without `funcz`. Before anything is
//! timed (in the smoke version too), every ndarray version runs once on the
//! benchmark's own inputs and is asserted to produce the original's result
//! (element by element, within 1e-5 relative), so the baseline provably
//! does the same work. For every kernel and size one run prints
//! - `orig`: time per call of the original,
//! - `views/orig`, `copies/orig`: time per call of each functionalized mode
//!   divided by the original's (1.00 = same speed),
//! - `nd`: time per call of the hand-written ndarray version,
//! - `views/nd`: time per call of the `#[functionalize]` version divided by
//!   the ndarray version's (1.00 = as fast as the hand-written loop),
//! - `allocs/call` of the original, views and copies variants (a counting
//!   global allocator),
//! - `copy ref`: a memory-bandwidth reference, the time of plain
//!   `copy_from_slice`s of the kernel's main data (`copy ref bytes`: one
//!   copy of the tensor the kernel mutates, or, for the KV loop, one copy
//!   of a row per step).
//!
//! With `FUNCZ_TORCH_PYTHON=/path/to/python` (a Python with torch), the run
//! also times PyTorch eager (1 thread) on the same kernels, written with
//! the same ops in the same order in `scripts/bench_torch.py`, which it
//! drives over a pipe so that torch's samples interleave with the others:
//! columns `torch` (its time per call, measured in the Python process,
//! Python's call overhead included) and `orig/torch` (the original's time
//! divided by torch's: below 1.00 = funcz is faster). Before anything is
//! timed, every torch kernel runs on inputs this bench generates (written
//! to files at the smoke sizes) and is asserted to give the original's
//! results (within 1e-5 relative for elementwise kernels, 1e-4 where a
//! reduction or GEMM may sum in another order). Without the variable the
//! table has no torch columns and nothing needs Python.
//!
//! Times are the minimum over samples interleaved across the versions in
//! rotating order, so that machine noise hits all of them alike. Run:
//! `cargo bench --bench functionalize` (about a minute once built; see
//! BENCHMARKS.md); `FUNCZ_BENCH=matmul cargo bench --bench functionalize`
//! runs only the rows whose kernel name contains `matmul` (a
//! comma-separated list selects the rows matching any part:
//! `FUNCZ_BENCH=softmax,masked,index_put,cat` runs the rows of issue 12's
//! new ops); `FUNCZ_BENCH_SAMPLES=40` takes the minimum over 40 samples
//! instead of 15 (steadier on a loaded machine). `cargo test
//! --benches` runs a tiny smoke version.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::RefCell;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use funcz::Tensor;
use ndarray::{Array, Array1, Array2, ArrayBase, ArrayD, Data, Dimension, Zip, s};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// counting allocator

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------
// the kernels

/// Defines the original (`$o`), `#[functionalize]` (`$v`) and
/// `remove = "mutations_and_views"` (`$c`) versions of one body. None is
/// inlined into its caller, so that all are compiled alike (and each can be
/// found by name in a profile).
macro_rules! variants {
    ($o:ident, $v:ident, $c:ident; fn ($($args:tt)*) $(-> $ret:ty)? $body:block) => {
        #[inline(never)]
        fn $o($($args)*) $(-> $ret)? $body
        #[inline(never)]
        #[funcz::functionalize]
        fn $v($($args)*) $(-> $ret)? $body
        #[inline(never)]
        #[funcz::functionalize(remove = "mutations_and_views")]
        fn $c($($args)*) $(-> $ret)? $body
    };
}

// A 10-op in-place chain on a value made in the function: every old value
// is dead.
variants!(chain_local, chain_local_v, chain_local_c; fn (x: &Tensor, w: &Tensor) -> Tensor {
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

// The same chain on a mutated input: the input's own buffer is never
// donated, so the first op allocates and the exit writes the result back.
variants!(chain_input, chain_input_v, chain_input_c; fn (x: &mut Tensor, w: &Tensor) {
    x.mul_(1.01);
    x.add_(w);
    x.sub_(0.5);
    x.relu_();
    x.div_(1.01);
    x.sub_(w);
    x.add_(0.5);
    x.clamp_(-1000.0, 1000.0);
    x.abs_();
    x.neg_();
});

// One Adam step over a list of parameters.
variants!(adam, adam_v, adam_c; fn (params: &mut [Tensor], grads: &[Tensor], m: &mut [Tensor], v: &mut [Tensor], lr: f32, step: i32) {
    let b1 = 0.9f32;
    let b2 = 0.999f32;
    let bc1 = 1.0 - b1.powi(step);
    let bc2 = 1.0 - b2.powi(step);
    for i in 0..params.len() {
        m[i].mul_(b1).add_(&(&grads[i] * (1.0 - b1)));
        v[i].mul_(b2).addcmul_(&grads[i], &grads[i], 1.0 - b2);
        let denom = (&v[i] / bc2).sqrt();
        denom.add_(1e-8);
        params[i].addcdiv_(&m[i], &denom, -lr / bc1);
    }
});

// A one-row KV-cache update of a cache passed in by the caller.
variants!(kv_input, kv_input_v, kv_input_c; fn (cache: &mut Tensor, new: &Tensor, pos: usize) {
    cache.narrow(0, pos, 1).copy_(new);
});

// One-row updates of a cache made (and so uniquely held) in the function:
// `steps` updates cycling over 16 rows of a lazily zeroed 4096-row cache.
variants!(kv_local, kv_local_v, kv_local_c; fn (new: &Tensor, steps: usize) -> Tensor {
    let cache = Tensor::zeros(&[4096, new.size(1)]);
    for s in 0..steps {
        cache.narrow(0, s % 16, 1).copy_(new);
    }
    cache
});

// The row loop on a mutated input.
variants!(rows_input, rows_input_v, rows_input_c; fn (b: &mut Tensor, n: usize) {
    for i in 0..n {
        b.select(0, i).mul_(2.0);
    }
});

// The row loop on a copy made in the function.
variants!(rows_local, rows_local_v, rows_local_c; fn (x: &Tensor, n: usize) -> Tensor {
    let b = x.clone();
    for i in 0..n {
        b.select(0, i).mul_(2.0);
    }
    b
});

// Layer norm over the last dimension, written with in-place ops.
variants!(layer_norm, layer_norm_v, layer_norm_c; fn (x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    let y = x.clone();
    y.sub_(x.mean_dim(-1, true));
    let var = y.mul(&y).mean_dim(-1, true);
    var.add_(1e-5).sqrt_();
    y.div_(&var).mul_(w).add_(b);
    y
});

// One in-place add over a tensor passed in by the caller.
variants!(add_input, add_input_v, add_input_c; fn (x: &mut Tensor, w: &Tensor) {
    x.add_(w);
});

// 1000 in-place adds on a small tensor: the fixed cost of one op.
variants!(small_adds, small_adds_v, small_adds_c; fn (x: &mut Tensor, w: &Tensor) {
    for _ in 0..SMALL_ADDS {
        x.add_(w);
    }
});

// A (batched) matrix product.
variants!(mm, mm_v, mm_c; fn (a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
});

// Softmax over the last dimension (a fresh result).
variants!(softmax, softmax_v, softmax_c; fn (x: &Tensor) -> Tensor {
    x.softmax(-1)
});

// A causal mask written into scores passed in by the caller.
variants!(mask, mask_v, mask_c; fn (x: &mut Tensor, m: &Tensor<bool>) {
    x.masked_fill_(m, f32::NEG_INFINITY);
});

// Whole rows of an input written at the positions of an index tensor
// (`x[rows] = v`, accumulate = false).
variants!(put_rows, put_rows_v, put_rows_c; fn (x: &mut Tensor, rows: &Tensor<i64>, v: &Tensor) {
    x.index_put_(&[rows], v, false);
});

// Concatenation of a list of tensors along the first dimension.
variants!(cat, cat_v, cat_c; fn (xs: &[Tensor]) -> Tensor {
    Tensor::cat(xs, 0)
});

/// In-place adds per call of `small_adds`.
const SMALL_ADDS: usize = 1000;

// ---------------------------------------------------------------------------
// the same kernels, hand-written on ndarray

/// The chain's ten ops on one element, in the kernel's order.
#[inline(always)]
fn chain_elem(x: f32, w: f32) -> f32 {
    let y = (x * 1.01 + w - 0.5).max(0.0);
    let y = (y / 1.01 - w + 0.5).clamp(-1000.0, 1000.0);
    -y.abs()
}

fn chain_local_nd(x: &Array1<f32>, w: &Array1<f32>) -> Array1<f32> {
    Zip::from(x).and(w).map_collect(|&x, &w| chain_elem(x, w))
}

fn chain_input_nd(x: &mut Array1<f32>, w: &Array1<f32>) {
    Zip::from(x).and(w).for_each(|x, &w| *x = chain_elem(*x, w));
}

fn adam_nd(
    params: &mut [ArrayD<f32>],
    grads: &[ArrayD<f32>],
    m: &mut [ArrayD<f32>],
    v: &mut [ArrayD<f32>],
    lr: f32,
    step: i32,
) {
    let b1 = 0.9f32;
    let b2 = 0.999f32;
    let bc1 = 1.0 - b1.powi(step);
    let bc2 = 1.0 - b2.powi(step);
    let step_size = -lr / bc1;
    for (((p, g), m), v) in params.iter_mut().zip(grads).zip(m).zip(v) {
        Zip::from(p).and(g).and(m).and(v).for_each(|p, &g, m, v| {
            *m = *m * b1 + g * (1.0 - b1);
            *v = *v * b2 + (1.0 - b2) * g * g;
            let denom = (*v / bc2).sqrt() + 1e-8;
            *p += step_size * *m / denom;
        });
    }
}

fn kv_input_nd(cache: &mut Array2<f32>, new: &Array2<f32>, pos: usize) {
    cache.slice_mut(s![pos..pos + 1, ..]).assign(new);
}

fn kv_local_nd(new: &Array2<f32>, steps: usize) -> Array2<f32> {
    let mut cache = Array2::zeros((4096, new.ncols()));
    for step in 0..steps {
        let row = step % 16;
        cache.slice_mut(s![row..row + 1, ..]).assign(new);
    }
    cache
}

fn rows_input_nd(b: &mut Array2<f32>, n: usize) {
    b.slice_mut(s![..n, ..]).mapv_inplace(|x| x * 2.0);
}

fn rows_local_nd(x: &Array2<f32>, n: usize) -> Array2<f32> {
    let mut b = x.clone();
    b.slice_mut(s![..n, ..]).mapv_inplace(|x| x * 2.0);
    b
}

fn layer_norm_nd(x: &Array2<f32>, w: &Array1<f32>, b: &Array1<f32>) -> Array2<f32> {
    let n = x.ncols() as f32;
    let mut y = x.clone();
    for mut row in y.rows_mut() {
        let mean = row.sum() / n;
        row.mapv_inplace(|v| v - mean);
        let std = (row.dot(&row) / n + 1e-5).sqrt();
        Zip::from(&mut row)
            .and(w)
            .and(b)
            .for_each(|y, &w, &b| *y = *y / std * w + b);
    }
    y
}

fn add_input_nd(x: &mut Array1<f32>, w: &Array1<f32>) {
    Zip::from(x).and(w).for_each(|x, &w| *x += w);
}

fn small_adds_nd(x: &mut Array1<f32>, w: &Array1<f32>) {
    for _ in 0..SMALL_ADDS {
        Zip::from(&mut *x).and(w).for_each(|x, &w| *x += w);
    }
}

/// `a @ b` for `[n, k] @ [k, m]` or `[batch, n, k] @ [batch, k, m]`: one
/// `general_mat_mul` per batch entry into a zeroed output.
fn mm_nd(a: &ArrayD<f32>, b: &ArrayD<f32>) -> ArrayD<f32> {
    use ndarray::linalg::general_mat_mul;
    use ndarray::{Axis, Ix2, Ix3};
    if a.ndim() == 2 {
        let a = a.view().into_dimensionality::<Ix2>().expect("2-D");
        let b = b.view().into_dimensionality::<Ix2>().expect("2-D");
        return a.dot(&b).into_dyn();
    }
    let a = a.view().into_dimensionality::<Ix3>().expect("3-D");
    let b = b.view().into_dimensionality::<Ix3>().expect("3-D");
    let (batch, n, m) = (a.shape()[0], a.shape()[1], b.shape()[2]);
    let mut out = ndarray::Array3::<f32>::zeros((batch, n, m));
    for i in 0..batch {
        general_mat_mul(
            1.0,
            &a.index_axis(Axis(0), i),
            &b.index_axis(Axis(0), i),
            0.0,
            &mut out.index_axis_mut(Axis(0), i),
        );
    }
    out.into_dyn()
}

/// Softmax of each row: the row's maximum, `exp(x - max)` written to the
/// output, their sum, then each divided by the sum.
fn softmax_nd(x: &Array2<f32>) -> Array2<f32> {
    let mut out = Array2::zeros(x.raw_dim());
    for (mut o, x) in out.rows_mut().into_iter().zip(x.rows()) {
        let m = x.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        Zip::from(&mut o)
            .and(&x)
            .for_each(|o, &x| *o = (x - m).exp());
        let s = o.sum();
        o.mapv_inplace(|v| v / s);
    }
    out
}

/// A select rather than `if m { *x = .. }`: the store is unconditional,
/// so the loop vectorizes (2-3x faster here than the branch).
fn mask_nd(x: &mut Array2<f32>, m: &Array2<bool>) {
    Zip::from(x)
        .and(m)
        .for_each(|x, &m| *x = if m { f32::NEG_INFINITY } else { *x });
}

fn put_rows_nd(x: &mut Array2<f32>, rows: &[usize], v: &Array2<f32>) {
    for (&r, v) in rows.iter().zip(v.rows()) {
        x.row_mut(r).assign(&v);
    }
}

/// One allocation of the total length, each input appended in turn.
fn cat_nd(xs: &[Array1<f32>]) -> Array1<f32> {
    let n = xs.iter().map(|x| x.len()).sum();
    let mut out = Vec::with_capacity(n);
    for x in xs {
        out.extend_from_slice(x.as_slice().expect("contiguous"));
    }
    Array1::from_vec(out)
}

// ---------------------------------------------------------------------------
// inputs, and the check that the ndarray versions do the same work

/// What one run benchmarks (and checks).
struct Sizes {
    /// Chain lengths, with their labels.
    chain: &'static [(usize, &'static str)],
    /// Adam's parameter shapes.
    adam: &'static [&'static [usize]],
    /// KV cache rows and columns (the local cache always has 4096 rows).
    kv: (usize, usize),
    /// Row updates per call of the local KV loop.
    kv_steps: usize,
    /// Rows and columns of the row loops.
    rows: (usize, usize),
    /// Rows and columns of the layer norm.
    layer_norm: (usize, usize),
    /// Elements of the single large `add_`, with its label.
    add: (usize, &'static str),
    /// Elements of the tensor of the 1000 small `add_`s.
    small: usize,
    /// Matmuls: batch (0 = a plain 2-D product) and square matrix size.
    matmul: &'static [(usize, usize)],
    /// Rows and columns of the softmax and of the causal mask.
    softmax: (usize, usize),
    /// Rows and columns of the `index_put_` target, and rows written.
    put: (usize, usize, usize),
    /// Number of tensors concatenated, their length and its label.
    cat: (usize, usize, &'static str),
}

impl Sizes {
    fn new(full: bool) -> Self {
        if full {
            Sizes {
                chain: &[
                    (1 << 10, "1K"),
                    (1 << 16, "64K"),
                    (1 << 20, "1M"),
                    (1 << 24, "16M"),
                ],
                adam: &[&[1024, 1024], &[1024], &[4096, 256], &[256]],
                kv: (4096, 4096),
                kv_steps: 2048,
                rows: (1024, 1024),
                layer_norm: (1024, 1024),
                add: (1 << 24, "16M"),
                small: 16,
                matmul: &[(0, 256), (0, 1024), (32, 128)],
                softmax: (1024, 1024),
                put: (4096, 4096, 2048),
                cat: (8, 1 << 20, "8x1M"),
            }
        } else {
            Sizes {
                chain: &[(1 << 10, "1K")],
                adam: &[&[8, 8], &[8]],
                kv: (16, 16),
                kv_steps: 4,
                rows: (8, 8),
                layer_norm: (4, 8),
                add: (1 << 10, "1K"),
                small: 16,
                matmul: &[(0, 8), (3, 4)],
                softmax: (4, 8),
                put: (16, 8, 8),
                cat: (8, 16, "8x16"),
            }
        }
    }
}

fn chain_x(n: usize) -> Tensor {
    Tensor::randn(&[n], 1)
}

fn chain_w(n: usize) -> Tensor {
    Tensor::rand(&[n], 2)
}

fn adam_tensors(shapes: &[&[usize]], seed: u64) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(k, s)| Tensor::randn(s, seed * 10 + k as u64))
        .collect()
}

fn adam_grads(shapes: &[&[usize]]) -> Vec<Tensor> {
    adam_tensors(shapes, 1)
}

/// Parameters, first moments and second moments.
/// Parameters, first moments and second moments (non-negative, as Adam
/// keeps them: a negative one would make `sqrt` NaN).
fn adam_state(shapes: &[&[usize]]) -> [Vec<Tensor>; 3] {
    [
        adam_tensors(shapes, 2),
        adam_tensors(shapes, 3),
        adam_tensors(shapes, 4).iter().map(|t| t.abs()).collect(),
    ]
}

fn kv_row(cols: usize) -> Tensor {
    Tensor::randn(&[1, cols], 5)
}

fn rows_b(rows: usize, cols: usize) -> Tensor {
    Tensor::randn(&[rows, cols], 6)
}

fn rows_x(rows: usize, cols: usize) -> Tensor {
    Tensor::randn(&[rows, cols], 7)
}

/// `x`, `w` and `b`.
fn layer_norm_inputs(rows: usize, cols: usize) -> [Tensor; 3] {
    [
        Tensor::randn(&[rows, cols], 8),
        Tensor::rand(&[cols], 9),
        Tensor::randn(&[cols], 10),
    ]
}

/// The operands of a matmul of `n x n` matrices (`batch` of them, or one
/// 2-D product if `batch` is 0).
fn mm_inputs(batch: usize, n: usize) -> [Tensor; 2] {
    let shape: Vec<usize> = if batch == 0 {
        vec![n, n]
    } else {
        vec![batch, n, n]
    };
    [Tensor::randn(&shape, 11), Tensor::randn(&shape, 12)]
}

fn mm_label(batch: usize, n: usize) -> String {
    if batch == 0 {
        format!("{n}x{n}")
    } else {
        format!("{batch}x{n}x{n}")
    }
}

fn softmax_x(rows: usize, cols: usize) -> Tensor {
    Tensor::randn(&[rows, cols], 14)
}

/// Scores and a causal mask (true above the diagonal).
fn mask_inputs(n: usize) -> (Tensor, Tensor<bool>) {
    let r = Tensor::<i64>::arange(n).view([n as i64, 1]);
    let c = Tensor::<i64>::arange(n).view([1, n as i64]);
    (Tensor::randn(&[n, n], 15), c.gt(&r))
}

/// The `index_put_` target, the rows written (`k` distinct rows in a
/// scattered order: `j * 1537 mod rows`, a bijection for a power-of-two
/// `rows`) and the values.
fn put_inputs(rows: usize, cols: usize, k: usize) -> (Tensor, Tensor<i64>, Tensor) {
    let idx: Vec<i64> = (0..k).map(|j| ((j * 1537) % rows) as i64).collect();
    (
        Tensor::randn(&[rows, cols], 16),
        Tensor::from_vec(idx, &[k]),
        Tensor::randn(&[k, cols], 17),
    )
}

fn cat_inputs(k: usize, n: usize) -> Vec<Tensor> {
    (0..k).map(|i| Tensor::randn(&[n], 18 + i as u64)).collect()
}

/// A copy of `t` as an ndarray array of dimension `D`.
fn nd<D: Dimension>(t: &Tensor) -> Array<f32, D> {
    t.to_ndarray()
        .into_dimensionality()
        .expect("tensor rank matches the ndarray version's")
}

fn nds(ts: &[Tensor]) -> Vec<ArrayD<f32>> {
    ts.iter().map(Tensor::to_ndarray).collect()
}

/// Asserts that `nd` (the ndarray version's result) has `orig`'s (the
/// original's) shape and values, each within 1e-5 relative (NaN matches
/// NaN).
fn assert_same<S: Data<Elem = f32>, D: Dimension>(
    kernel: &str,
    orig: &Tensor,
    nd: &ArrayBase<S, D>,
) {
    assert_close(kernel, orig, nd, 1e-5);
}

/// [`assert_same`] within `tol` relative.
fn assert_close<S: Data<Elem = f32>, D: Dimension>(
    kernel: &str,
    orig: &Tensor,
    nd: &ArrayBase<S, D>,
    tol: f32,
) {
    assert_eq!(orig.shape(), nd.shape(), "{kernel}: shape");
    for (i, (&x, &y)) in orig.to_vec().iter().zip(nd.iter()).enumerate() {
        assert!(
            x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * x.abs().max(y.abs()),
            "{kernel}: element {i}: original {x}, ndarray {y}"
        );
    }
}

/// Runs every ndarray version once, next to the original on the same
/// inputs the benchmark uses, and asserts that both compute the same
/// values (for mutating kernels: leave the same mutated state).
fn check_nd(sz: &Sizes) {
    for &(n, _) in sz.chain {
        let (mut x, w) = (chain_x(n), chain_w(n));
        let (mut xa, wa) = (nd(&x), nd(&w));
        assert_same(
            "chain (local)",
            &chain_local(&x, &w),
            &chain_local_nd(&xa, &wa),
        );
        chain_input(&mut x, &w);
        chain_input_nd(&mut xa, &wa);
        assert_same("chain (input)", &x, &xa);
    }

    let grads = adam_grads(sz.adam);
    let [mut p, mut m, mut v] = adam_state(sz.adam);
    let [mut pa, mut ma, mut va] = [&p, &m, &v].map(|ts| nds(ts));
    adam(&mut p, &grads, &mut m, &mut v, 1e-3, 10);
    adam_nd(&mut pa, &nds(&grads), &mut ma, &mut va, 1e-3, 10);
    for (name, ts, arrays) in [("params", &p, &pa), ("m", &m, &ma), ("v", &v, &va)] {
        for (t, a) in ts.iter().zip(arrays) {
            assert_same(&format!("adam ({name})"), t, a);
        }
    }

    let (rows, cols) = sz.kv;
    let new = kv_row(cols);
    let new_a = nd(&new);
    let mut cache = Tensor::zeros(&[rows, cols]);
    let mut cache_a = Array2::zeros((rows, cols));
    kv_input(&mut cache, &new, 7);
    kv_input_nd(&mut cache_a, &new_a, 7);
    assert_same("kv (input)", &cache, &cache_a);
    drop((cache, cache_a));
    assert_same(
        "kv (local)",
        &kv_local(&new, sz.kv_steps),
        &kv_local_nd(&new_a, sz.kv_steps),
    );

    let (rows, cols) = sz.rows;
    let mut b = rows_b(rows, cols);
    let mut ba = nd(&b);
    rows_input(&mut b, rows);
    rows_input_nd(&mut ba, rows);
    assert_same("rows (input)", &b, &ba);
    let x = rows_x(rows, cols);
    assert_same(
        "rows (local)",
        &rows_local(&x, rows),
        &rows_local_nd(&nd(&x), rows),
    );

    let (rows, cols) = sz.layer_norm;
    let [x, w, b] = layer_norm_inputs(rows, cols);
    assert_same(
        "layer_norm",
        &layer_norm(&x, &w, &b),
        &layer_norm_nd(&nd(&x), &nd(&w), &nd(&b)),
    );

    for n in [sz.add.0, sz.small] {
        let (mut x, w) = (chain_x(n), chain_w(n));
        let (mut xa, wa) = (nd(&x), nd(&w));
        add_input(&mut x, &w);
        add_input_nd(&mut xa, &wa);
        assert_same("add_", &x, &xa);
        small_adds(&mut x, &w);
        small_adds_nd(&mut xa, &wa);
        assert_same("small add_", &x, &xa);
    }

    for &(batch, n) in sz.matmul {
        let [a, b] = mm_inputs(batch, n);
        let got = mm(&a, &b);
        let want = mm_nd(&a.to_ndarray(), &b.to_ndarray());
        // Summation orders may differ between GEMM kernels: compare within
        // a tolerance scaled by the size of the dot products.
        assert_eq!(got.shape(), want.shape(), "matmul: shape");
        for (i, (&x, &y)) in got.to_vec().iter().zip(want.iter()).enumerate() {
            assert!(
                (x - y).abs() <= 1e-4 * (n as f32).sqrt() * x.abs().max(1.0),
                "matmul {batch}x{n}: element {i}: original {x}, ndarray {y}"
            );
        }
    }
}

/// The new ops' part of [`check_nd`]: also checks that each original does
/// what it should (the softmax rows sum to 1, the mask wrote -inf exactly
/// above the diagonal, the rows were written, the cat is the inputs in
/// order), so that a wrong kernel cannot pass by matching a wrong
/// baseline.
fn check_nd_new_ops(sz: &Sizes) {
    let (rows, cols) = sz.softmax;
    let x = softmax_x(rows, cols);
    let y = softmax(&x);
    // The sum of a row may be rounded in another order (funcz sums in
    // f64, the ndarray version in f32).
    assert_close("softmax", &y, &softmax_nd(&nd(&x)), 1e-5);
    for r in 0..rows {
        let s: f32 = y.select(0, r).to_vec().iter().sum();
        assert!((s - 1.0).abs() < 1e-4, "softmax: row {r} sums to {s}");
    }

    let (mut x, m) = mask_inputs(rows);
    let mut xa: Array2<f32> = nd(&x);
    let ma = Array2::from_shape_vec((rows, rows), m.to_vec()).expect("square mask");
    let before = x.to_vec();
    mask(&mut x, &m);
    mask_nd(&mut xa, &ma);
    assert_same("mask", &x, &xa);
    for (k, (&a, &b)) in x.to_vec().iter().zip(&before).enumerate() {
        let want = if k % rows > k / rows {
            f32::NEG_INFINITY
        } else {
            b
        };
        assert_eq!(a, want, "mask: element {k}");
    }

    let (rows, cols, k) = sz.put;
    let (mut x, idx, v) = put_inputs(rows, cols, k);
    let mut xa: Array2<f32> = nd(&x);
    let idx_a: Vec<usize> = idx.to_vec().iter().map(|&i| i as usize).collect();
    let va: Array2<f32> = nd(&v);
    put_rows(&mut x, &idx, &v);
    put_rows_nd(&mut xa, &idx_a, &va);
    assert_same("index_put_", &x, &xa);
    for (j, &r) in idx_a.iter().enumerate() {
        assert_eq!(
            x.select(0, r).to_vec(),
            v.select(0, j).to_vec(),
            "index_put_: row {r}"
        );
    }

    let (k, n, _) = sz.cat;
    let xs = cat_inputs(k, n);
    let xas: Vec<Array1<f32>> = xs.iter().map(nd).collect();
    let c = cat(&xs);
    assert_same("cat", &c, &cat_nd(&xas));
    let want: Vec<f32> = xs.iter().flat_map(|t| t.to_vec()).collect();
    assert_eq!(c.to_vec(), want, "cat: the inputs in order");
}

// ---------------------------------------------------------------------------
// the check that the PyTorch versions do the same work

/// One case of the PyTorch check: a kernel of `scripts/bench_torch.py`, its
/// inputs (written to files), its other arguments, and what the original
/// computed from them (the returned tensor, or the mutated inputs).
struct TorchCase {
    kernel: &'static str,
    inputs: Vec<Tensor>,
    args: Value,
    expected: Vec<Tensor>,
    /// Relative tolerance: 1e-5 for elementwise kernels; reductions and
    /// GEMMs may sum in another order.
    tol: f32,
}

/// The check cases, on the smoke sizes (the kernels' code does not depend
/// on the size; the inputs are the bench's own generators').
fn torch_cases() -> Vec<TorchCase> {
    let sz = Sizes::new(false);
    let mut cases = Vec::new();
    let elementwise = 1e-5;
    let (n, _) = sz.chain[0];
    let (x, w) = (chain_x(n), chain_w(n));
    cases.push(TorchCase {
        kernel: "chain_local",
        inputs: vec![x.clone(), w.clone()],
        args: json!({}),
        expected: vec![chain_local(&x, &w)],
        tol: elementwise,
    });
    let mut xi = x.clone();
    chain_input(&mut xi, &w);
    cases.push(TorchCase {
        kernel: "chain_input",
        inputs: vec![x, w],
        args: json!({}),
        expected: vec![xi],
        tol: elementwise,
    });

    let grads = adam_grads(sz.adam);
    let [p, m, v] = adam_state(sz.adam);
    let inputs: Vec<Tensor> = [&p, &grads, &m, &v]
        .into_iter()
        .flat_map(|ts| ts.iter().map(Tensor::clone))
        .collect();
    let [mut p2, mut m2, mut v2] =
        [&p, &m, &v].map(|ts| ts.iter().map(Tensor::clone).collect::<Vec<_>>());
    adam(&mut p2, &grads, &mut m2, &mut v2, 1e-3, 10);
    cases.push(TorchCase {
        kernel: "adam",
        inputs,
        args: json!({"params": p.len(), "lr": 1e-3f32, "step": 10}),
        expected: [p2, m2, v2].concat(),
        tol: 1e-5,
    });

    let (rows, cols) = sz.kv;
    let new = kv_row(cols);
    let cache = Tensor::randn(&[rows, cols], 13);
    let mut c2 = cache.clone();
    kv_input(&mut c2, &new, 7);
    cases.push(TorchCase {
        kernel: "kv_input",
        inputs: vec![cache, new.clone()],
        args: json!({"pos": 7}),
        expected: vec![c2],
        tol: elementwise,
    });
    cases.push(TorchCase {
        kernel: "kv_local",
        inputs: vec![new.clone()],
        args: json!({"steps": sz.kv_steps}),
        expected: vec![kv_local(&new, sz.kv_steps)],
        tol: elementwise,
    });

    let (rows, cols) = sz.rows;
    let b = rows_b(rows, cols);
    let mut b2 = b.clone();
    rows_input(&mut b2, rows);
    cases.push(TorchCase {
        kernel: "rows_input",
        inputs: vec![b],
        args: json!({"n": rows}),
        expected: vec![b2],
        tol: elementwise,
    });
    let x = rows_x(rows, cols);
    cases.push(TorchCase {
        kernel: "rows_local",
        inputs: vec![x.clone()],
        args: json!({"n": rows}),
        expected: vec![rows_local(&x, rows)],
        tol: elementwise,
    });

    let (rows, cols) = sz.layer_norm;
    let [x, w, b] = layer_norm_inputs(rows, cols);
    cases.push(TorchCase {
        kernel: "layer_norm",
        expected: vec![layer_norm(&x, &w, &b)],
        inputs: vec![x, w, b],
        args: json!({}),
        tol: 1e-4,
    });

    for n in [sz.add.0, sz.small] {
        let (x, w) = (chain_x(n), chain_w(n));
        let mut x2 = x.clone();
        add_input(&mut x2, &w);
        cases.push(TorchCase {
            kernel: "add_input",
            inputs: vec![x.clone(), w.clone()],
            args: json!({}),
            expected: vec![x2],
            tol: elementwise,
        });
        let mut x2 = x.clone();
        small_adds(&mut x2, &w);
        cases.push(TorchCase {
            kernel: "small_adds",
            inputs: vec![x, w],
            args: json!({}),
            expected: vec![x2],
            tol: elementwise,
        });
    }

    // The new ops. Inputs travel as f32 files: the script turns the mask
    // back into bool and the row indices into int64.
    let (rows, cols) = sz.softmax;
    let x = softmax_x(rows, cols);
    cases.push(TorchCase {
        kernel: "softmax",
        expected: vec![softmax(&x)],
        inputs: vec![x],
        args: json!({}),
        tol: 1e-4,
    });
    let (x, m) = mask_inputs(rows);
    let mut x2 = x.clone();
    mask(&mut x2, &m);
    cases.push(TorchCase {
        kernel: "mask",
        inputs: vec![x, m.float()],
        args: json!({}),
        expected: vec![x2],
        tol: elementwise,
    });
    let (rows, cols, k) = sz.put;
    let (x, idx, v) = put_inputs(rows, cols, k);
    let mut x2 = x.clone();
    put_rows(&mut x2, &idx, &v);
    cases.push(TorchCase {
        kernel: "put_rows",
        inputs: vec![x, idx.float(), v],
        args: json!({}),
        expected: vec![x2],
        tol: elementwise,
    });
    let (k, n, _) = sz.cat;
    let xs = cat_inputs(k, n);
    cases.push(TorchCase {
        kernel: "cat",
        expected: vec![cat(&xs)],
        inputs: xs,
        args: json!({}),
        tol: elementwise,
    });

    for &(batch, n) in sz.matmul {
        let [a, b] = mm_inputs(batch, n);
        cases.push(TorchCase {
            kernel: "mm",
            expected: vec![mm(&a, &b)],
            inputs: vec![a, b],
            args: json!({}),
            tol: 1e-4,
        });
    }
    cases
}

fn write_f32(path: &Path, t: &Tensor) {
    let bytes: Vec<u8> = t.to_vec().iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("bench: writing {path:?}: {e}"));
}

fn read_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("bench: reading {path:?}: {e}"));
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Writes the inputs of every [`torch_cases`] case to a scratch directory,
/// has `bench_torch.py` run its version of each kernel on them, and asserts
/// that PyTorch's outputs are the original's (element by element, within
/// the case's relative tolerance; NaN matches NaN).
fn check_torch(torch: &mut Torch) {
    let dir = std::env::temp_dir().join(format!("funcz-bench-torch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench: scratch directory");
    let cases = torch_cases();
    let mut manifest = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        let inputs: Vec<Value> = case
            .inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let file = format!("{c}.in{i}.f32");
                write_f32(&dir.join(&file), t);
                json!({"file": file, "shape": t.shape()})
            })
            .collect();
        let outputs: Vec<String> = (0..case.expected.len())
            .map(|i| format!("{c}.out{i}.f32"))
            .collect();
        manifest.push(
            json!({"kernel": case.kernel, "inputs": inputs, "args": case.args, "outputs": outputs}),
        );
    }
    std::fs::write(dir.join("manifest.json"), Value::from(manifest).to_string())
        .expect("bench: writing the manifest");
    let r = torch.request(&json!({"cmd": "check", "dir": dir}));
    assert_eq!(
        r["cases"].as_u64(),
        Some(cases.len() as u64),
        "bench: torch check: {r}"
    );
    for (c, case) in cases.iter().enumerate() {
        for (i, want) in case.expected.iter().enumerate() {
            let got = read_f32(&dir.join(format!("{c}.out{i}.f32")));
            let want = want.to_vec();
            assert_eq!(
                got.len(),
                want.len(),
                "torch {}: output {i}: length",
                case.kernel
            );
            for (j, (&x, &y)) in want.iter().zip(&got).enumerate() {
                assert!(
                    x == y
                        || (x.is_nan() && y.is_nan())
                        || (x - y).abs() <= case.tol * x.abs().max(y.abs()).max(1.0),
                    "torch {}: output {i} element {j}: original {x}, torch {y}",
                    case.kernel
                );
            }
        }
    }
    std::fs::remove_dir_all(&dir).expect("bench: removing the scratch directory");
    println!(
        "PyTorch eager: {} cases checked to compute the original's results\n",
        cases.len()
    );
}

// ---------------------------------------------------------------------------
// measurement

struct Plan {
    samples: usize,
    /// Minimum time per sample (calls are repeated to reach it).
    sample_time: Duration,
}

/// One version of a kernel to time.
enum Runner<'a> {
    /// A closure run (and timed) here, once per call.
    Local(&'a mut dyn FnMut()),
    /// Something that times `n` calls itself and returns their total time
    /// (PyTorch, in its own process).
    Remote(&'a mut dyn FnMut(u32) -> Duration),
}

impl Runner<'_> {
    /// The time of `n` calls.
    fn time(&mut self, n: u32) -> Duration {
        match self {
            Runner::Local(f) => {
                let t = Instant::now();
                for _ in 0..n {
                    f();
                }
                t.elapsed()
            }
            Runner::Remote(f) => f(n),
        }
    }
}

/// Per-call time (minimum over samples) and allocations per call of each
/// runner (counted in this process: meaningless for a remote one); samples
/// are interleaved across runners, in rotating order.
fn measure(plan: &Plan, fs: &mut [Runner<'_>]) -> Vec<(Duration, f64)> {
    // Warm-up, and the number of calls per sample.
    let iters: Vec<u32> = fs
        .iter_mut()
        .map(|f| {
            f.time(1);
            let one = f.time(1).max(Duration::from_nanos(20));
            (plan.sample_time.as_nanos() / one.as_nanos()).clamp(1, 1_000_000) as u32
        })
        .collect();
    let n = fs.len();
    let mut best = vec![Duration::MAX; n];
    let mut allocs = vec![0.0; n];
    for s in 0..plan.samples {
        for j in 0..n {
            let k = (j + s) % n;
            let a0 = ALLOCS.load(Ordering::Relaxed);
            let dt = fs[k].time(iters[k]) / iters[k];
            let a = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / iters[k] as f64;
            best[k] = best[k].min(dt);
            if s == 0 {
                allocs[k] = a;
            }
        }
    }
    best.into_iter().zip(allocs).collect()
}

/// What the memory-bandwidth reference copies: `reps` plain
/// `copy_from_slice`s of `bytes` bytes.
#[derive(Clone, Copy)]
struct Bytes {
    bytes: usize,
    reps: usize,
}

fn once(bytes: usize) -> Bytes {
    Bytes { bytes, reps: 1 }
}

/// `n` elements of `v` starting `offset` bytes past a 4 KiB boundary.
fn at_page_offset(v: &mut [f32], n: usize, offset: usize) -> &mut [f32] {
    let misalign = v.as_ptr() as usize % 4096;
    let skip = ((4096 - misalign) % 4096 + offset) / 4;
    &mut v[skip..skip + n]
}

/// Time of the memory-bandwidth reference. The source starts on a page
/// boundary and the destination half a page later: glibc's `memcpy` on this
/// machine's AMD EPYC is up to 30 times slower for 4-64 KiB copies whose
/// destination is a few bytes past the source modulo 4 KiB, and the
/// reference should measure the memory system, not that.
fn copy_time(plan: &Plan, b: Bytes) -> Duration {
    let n = b.bytes / 4;
    let mut src_buf: Vec<f32> = (0..n + 2048).map(|i| i as f32).collect();
    let mut dst_buf = vec![0.0f32; n + 2048];
    let src = at_page_offset(&mut src_buf, n, 0);
    let dst = at_page_offset(&mut dst_buf, n, 2048);
    let r = measure(
        plan,
        &mut [Runner::Local(&mut || {
            for _ in 0..b.reps {
                black_box(&mut *dst).copy_from_slice(black_box(&*src));
            }
        })],
    );
    r[0].0
}

fn fmt_time(d: Duration) -> String {
    let ns = d.as_secs_f64() * 1e9;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} us", ns / 1e3)
    } else {
        format!("{:.2} ms", ns / 1e6)
    }
}

fn fmt_bytes(b: Bytes) -> String {
    let one = if b.bytes >= 1 << 20 {
        format!("{} MiB", b.bytes >> 20)
    } else if b.bytes >= 1 << 10 {
        format!("{} KiB", b.bytes >> 10)
    } else {
        format!("{} B", b.bytes)
    };
    if b.reps == 1 {
        one
    } else {
        format!("{} x {one}", b.reps)
    }
}

fn fmt_allocs(a: f64) -> String {
    if a == a.round() {
        format!("{a:.0}")
    } else {
        format!("{a:.1}")
    }
}

// ---------------------------------------------------------------------------
// PyTorch eager, in its own process

/// `scripts/bench_torch.py --serve`, run by the Python that
/// `FUNCZ_TORCH_PYTHON` names: one JSON request per line on its stdin, one
/// JSON reply per line on its stdout (see the script).
struct Torch {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Torch {
    /// Starts the script if `FUNCZ_TORCH_PYTHON` is set.
    fn start() -> Option<Torch> {
        let python = std::env::var_os("FUNCZ_TORCH_PYTHON")?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bench_torch.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("bench: cannot run {python:?} {script:?}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Some(Torch {
            child,
            stdin,
            stdout,
            next_id: 0,
        })
    }

    /// Sends one request and returns the reply.
    fn request(&mut self, req: &Value) -> Value {
        writeln!(self.stdin, "{req}")
            .and_then(|()| self.stdin.flush())
            .expect("bench: writing to bench_torch.py");
        let mut line = String::new();
        let n = self
            .stdout
            .read_line(&mut line)
            .expect("bench: reading from bench_torch.py");
        assert!(n > 0, "bench: bench_torch.py exited (request {req})");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bench: bad reply {line:?}: {e}"))
    }

    /// Makes the inputs of `tk` in the script; returns their id.
    fn setup(&mut self, tk: &Tk) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.request(&json!({"cmd": "setup", "id": id, "kernel": tk.kernel, "params": tk.params}));
        id
    }

    /// The time of `n` calls of the kernel `id`, measured by the script.
    fn run(&mut self, id: u64, n: u32) -> Duration {
        let r = self.request(&json!({"cmd": "run", "id": id, "iters": n}));
        Duration::from_nanos(r["ns"].as_u64().expect("bench: a time in ns"))
    }

    fn drop_kernel(&mut self, id: u64) {
        self.request(&json!({"cmd": "drop", "id": id}));
    }
}

impl Drop for Torch {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"cmd": "quit"}));
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}

/// A kernel of `scripts/bench_torch.py` and its parameters (sizes).
struct Tk {
    kernel: &'static str,
    params: Value,
}

fn tk(kernel: &'static str, params: Value) -> Tk {
    Tk { kernel, params }
}

// ---------------------------------------------------------------------------
// the table

struct Table {
    plan: Plan,
    /// Only rows whose kernel name contains this, or one of its
    /// comma-separated parts (`FUNCZ_BENCH=matmul`,
    /// `FUNCZ_BENCH=softmax,masked,index_put,cat`).
    filter: Option<String>,
    /// PyTorch eager, if `FUNCZ_TORCH_PYTHON` is set.
    torch: Option<RefCell<Torch>>,
}

impl Table {
    fn header(&self) {
        let torch = self.torch.is_some();
        println!(
            "| {:<17} | {:>9} | {:>9} | {:>10} | {:>11} | {:>9} | {:>10} |{} {:>19} | {:>9} | {:>16} |",
            "kernel",
            "size",
            "orig",
            "views/orig",
            "copies/orig",
            "nd",
            "views/nd",
            if torch {
                format!(" {:>9} | {:>10} |", "torch", "orig/torch")
            } else {
                String::new()
            },
            "allocs/call o/v/c",
            "copy ref",
            "copy ref bytes"
        );
        println!(
            "|{:-<19}|{:->11}|{:->11}|{:->12}|{:->13}|{:->11}|{:->12}|{}{:->21}|{:->11}|{:->18}|",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            if torch {
                format!("{:->11}|{:->12}|", "", "")
            } else {
                String::new()
            },
            "",
            "",
            ""
        );
    }

    /// Measures the original, views, copies and ndarray versions (in that
    /// order in `fs`), and PyTorch's `tk` if there is a torch column,
    /// interleaved, and prints one row.
    fn row(&self, kernel: &str, size: &str, bytes: Bytes, tk: Tk, mut fs: [&mut dyn FnMut(); 4]) {
        if let Some(f) = &self.filter
            && !f.split(',').any(|f| kernel.contains(f))
        {
            return;
        }
        let torch_id = self.torch.as_ref().map(|t| t.borrow_mut().setup(&tk));
        let mut remote = move |n: u32| {
            let (t, id) = (self.torch.as_ref(), torch_id);
            t.expect("a torch column")
                .borrow_mut()
                .run(id.expect("set up"), n)
        };
        let mut runners: Vec<Runner<'_>> = fs
            .iter_mut()
            .map(|f| Runner::Local(&mut **f as &mut dyn FnMut()))
            .collect();
        if torch_id.is_some() {
            runners.push(Runner::Remote(&mut remote));
        }
        let r = measure(&self.plan, &mut runners);
        drop(runners);
        if let (Some(t), Some(id)) = (&self.torch, torch_id) {
            t.borrow_mut().drop_kernel(id);
        }
        let copy = copy_time(&self.plan, bytes);
        let secs = |k: usize| r[k].0.as_secs_f64();
        println!(
            "| {:<17} | {:>9} | {:>9} | {:>10.2} | {:>11.2} | {:>9} | {:>10.2} |{} {:>19} | {:>9} | {:>16} |",
            kernel,
            size,
            fmt_time(r[0].0),
            secs(1) / secs(0),
            secs(2) / secs(0),
            fmt_time(r[3].0),
            secs(1) / secs(3),
            if torch_id.is_some() {
                format!(" {:>9} | {:>10.2} |", fmt_time(r[4].0), secs(0) / secs(4))
            } else {
                String::new()
            },
            format!(
                "{} / {} / {}",
                fmt_allocs(r[0].1),
                fmt_allocs(r[1].1),
                fmt_allocs(r[2].1)
            ),
            fmt_time(copy),
            fmt_bytes(bytes),
        );
    }
}

/// A closure that calls `f` and keeps its result from being optimized away.
fn sink<R>(f: impl Fn() -> R) -> impl FnMut() {
    move || {
        black_box(f());
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then
    // run a tiny smoke version only.
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full {
        Plan {
            samples: std::env::var("FUNCZ_BENCH_SAMPLES")
                .ok()
                .map(|s| s.parse().expect("FUNCZ_BENCH_SAMPLES: a number of samples"))
                .unwrap_or(15),
            sample_time: Duration::from_millis(20),
        }
    } else {
        Plan {
            samples: 1,
            sample_time: Duration::from_micros(1),
        }
    };
    let sz = Sizes::new(full);
    check_nd(&sz);
    check_nd_new_ops(&sz);
    let torch = Torch::start().map(|mut t| {
        check_torch(&mut t);
        RefCell::new(t)
    });
    let t = Table {
        plan,
        filter: std::env::var("FUNCZ_BENCH").ok(),
        torch,
    };
    println!(
        "funcz: functionalized / original time per call (f32, min of {} interleaved samples; views = \
         #[functionalize], copies = remove = \"mutations_and_views\", nd = the kernel hand-written \
         on ndarray, checked to give the original's result)\n",
        t.plan.samples
    );
    t.header();

    // 10-op chains.
    for &(n, name) in sz.chain {
        let (x, w) = (chain_x(n), chain_w(n));
        let (xa, wa) = (nd(&x), nd(&w));
        t.row(
            "chain (local)",
            name,
            once(n * 4),
            tk("chain_local", json!({"n": n})),
            [
                &mut sink(|| chain_local(&x, &w)),
                &mut sink(|| chain_local_v(&x, &w)),
                &mut sink(|| chain_local_c(&x, &w)),
                &mut sink(|| chain_local_nd(&xa, &wa)),
            ],
        );
    }
    for &(n, name) in sz.chain {
        let mut xs = [chain_x(n), chain_x(n), chain_x(n)];
        let w = chain_w(n);
        let mut xa = nd(&xs[0]);
        let wa = nd(&w);
        let [x0, x1, x2] = &mut xs;
        t.row(
            "chain (input)",
            name,
            once(n * 4),
            tk("chain_input", json!({"n": n})),
            [
                &mut || chain_input(x0, &w),
                &mut || chain_input_v(x1, &w),
                &mut || chain_input_c(x2, &w),
                &mut || chain_input_nd(&mut xa, &wa),
            ],
        );
    }

    // Adam over four parameter tensors.
    let numel: usize = sz.adam.iter().map(|s| s.iter().product::<usize>()).sum();
    let grads = adam_grads(sz.adam);
    let mut state: Vec<[Vec<Tensor>; 3]> = (0..3).map(|_| adam_state(sz.adam)).collect();
    let [s0, s1, s2] = &mut state[..] else {
        unreachable!()
    };
    let [p0, m0, v0] = s0;
    let [p1, m1, v1] = s1;
    let [p2, m2, v2] = s2;
    let grads_a = nds(&grads);
    let [mut pa, mut ma, mut va] = adam_state(sz.adam).map(|ts| nds(&ts));
    let size = format!("{:.1}M", numel as f64 / (1 << 20) as f64);
    t.row(
        "adam (4 params)",
        &size,
        once(numel * 4),
        tk(
            "adam",
            json!({"shapes": sz.adam, "lr": 1e-3f32, "step": 10}),
        ),
        [
            &mut || adam(p0, &grads, m0, v0, 1e-3, 10),
            &mut || adam_v(p1, &grads, m1, v1, 1e-3, 10),
            &mut || adam_c(p2, &grads, m2, v2, 1e-3, 10),
            &mut || adam_nd(&mut pa, &grads_a, &mut ma, &mut va, 1e-3, 10),
        ],
    );
    drop((state, pa, ma, va));

    // KV cache: one row of a 4096 x 4096 cache.
    let (rows, cols) = sz.kv;
    let new = kv_row(cols);
    let new_a = nd(&new);
    let mut caches = [
        Tensor::<f32>::zeros(&[rows, cols]),
        Tensor::<f32>::zeros(&[rows, cols]),
        Tensor::<f32>::zeros(&[rows, cols]),
    ];
    let mut cache_a = Array2::zeros((rows, cols));
    let [c0, c1, c2] = &mut caches;
    let size = format!("{rows}x{cols}");
    t.row(
        "kv (input)",
        &size,
        once(cols * 4),
        tk("kv_input", json!({"rows": rows, "cols": cols, "pos": 7})),
        [
            &mut || kv_input(c0, &new, 7),
            &mut || kv_input_v(c1, &new, 7),
            &mut || kv_input_c(c2, &new, 7),
            &mut || kv_input_nd(&mut cache_a, &new_a, 7),
        ],
    );
    drop((caches, cache_a));
    let steps = sz.kv_steps;
    t.row(
        &format!("kv (local) x{steps}"),
        &format!("4096x{cols}"),
        Bytes {
            bytes: cols * 4,
            reps: steps,
        },
        tk("kv_local", json!({"cols": cols, "steps": steps})),
        [
            &mut sink(|| kv_local(&new, steps)),
            &mut sink(|| kv_local_v(&new, steps)),
            &mut sink(|| kv_local_c(&new, steps)),
            &mut sink(|| kv_local_nd(&new_a, steps)),
        ],
    );

    // Row loops.
    let (rows, cols) = sz.rows;
    let mut bs = [rows_b(rows, cols), rows_b(rows, cols), rows_b(rows, cols)];
    let mut ba = nd(&bs[0]);
    let size = format!("{rows}x{cols}");
    {
        let [b0, b1, b2] = &mut bs;
        t.row(
            "rows (input)",
            &size,
            once(rows * cols * 4),
            tk("rows_input", json!({"rows": rows, "cols": cols})),
            [
                &mut || rows_input(b0, rows),
                &mut || rows_input_v(b1, rows),
                &mut || rows_input_c(b2, rows),
                &mut || rows_input_nd(&mut ba, rows),
            ],
        );
    }
    let x = rows_x(rows, cols);
    let xa = nd(&x);
    t.row(
        "rows (local)",
        &size,
        once(rows * cols * 4),
        tk("rows_local", json!({"rows": rows, "cols": cols})),
        [
            &mut sink(|| rows_local(&x, rows)),
            &mut sink(|| rows_local_v(&x, rows)),
            &mut sink(|| rows_local_c(&x, rows)),
            &mut sink(|| rows_local_nd(&xa, rows)),
        ],
    );

    // Layer norm.
    let (rows, cols) = sz.layer_norm;
    let [x, w, b] = layer_norm_inputs(rows, cols);
    let (xa, wa, ba) = (nd(&x), nd(&w), nd(&b));
    t.row(
        "layer_norm",
        &format!("{rows}x{cols}"),
        once(rows * cols * 4),
        tk("layer_norm", json!({"rows": rows, "cols": cols})),
        [
            &mut sink(|| layer_norm(&x, &w, &b)),
            &mut sink(|| layer_norm_v(&x, &w, &b)),
            &mut sink(|| layer_norm_c(&x, &w, &b)),
            &mut sink(|| layer_norm_nd(&xa, &wa, &ba)),
        ],
    );

    // One add_ over a large tensor, and 1000 add_ on 16 elements.
    let (n, name) = sz.add;
    let mut xs = [chain_x(n), chain_x(n), chain_x(n)];
    let w = chain_w(n);
    let (mut xa, wa) = (nd(&xs[0]), nd(&w));
    {
        let [x0, x1, x2] = &mut xs;
        t.row(
            "add_ (input)",
            name,
            once(n * 4),
            tk("add_input", json!({"n": n})),
            [
                &mut || add_input(x0, &w),
                &mut || add_input_v(x1, &w),
                &mut || add_input_c(x2, &w),
                &mut || add_input_nd(&mut xa, &wa),
            ],
        );
    }
    drop((xs, w, xa, wa));
    let n = sz.small;
    let mut xs = [chain_x(n), chain_x(n), chain_x(n)];
    let w = chain_w(n);
    let (mut xa, wa) = (nd(&xs[0]), nd(&w));
    {
        let [x0, x1, x2] = &mut xs;
        t.row(
            &format!("add_ x{SMALL_ADDS}"),
            &n.to_string(),
            Bytes {
                bytes: n * 4,
                reps: SMALL_ADDS,
            },
            tk("small_adds", json!({"n": n})),
            [
                &mut || small_adds(x0, &w),
                &mut || small_adds_v(x1, &w),
                &mut || small_adds_c(x2, &w),
                &mut || small_adds_nd(&mut xa, &wa),
            ],
        );
    }

    // Matrix products.
    for &(batch, n) in sz.matmul {
        let [a, b] = mm_inputs(batch, n);
        let (aa, ba) = (a.to_ndarray(), b.to_ndarray());
        t.row(
            "matmul",
            &mm_label(batch, n),
            once(batch.max(1) * n * n * 4),
            tk("mm", json!({"batch": batch, "n": n})),
            [
                &mut sink(|| mm(&a, &b)),
                &mut sink(|| mm_v(&a, &b)),
                &mut sink(|| mm_c(&a, &b)),
                &mut sink(|| mm_nd(&aa, &ba)),
            ],
        );
    }

    // The new ops of issue 12: softmax, a causal mask, index_put_ of rows,
    // cat.
    let (rows, cols) = sz.softmax;
    let x = softmax_x(rows, cols);
    let xa = nd(&x);
    t.row(
        "softmax(-1)",
        &format!("{rows}x{cols}"),
        once(rows * cols * 4),
        tk("softmax", json!({"rows": rows, "cols": cols})),
        [
            &mut sink(|| softmax(&x)),
            &mut sink(|| softmax_v(&x)),
            &mut sink(|| softmax_c(&x)),
            &mut sink(|| softmax_nd(&xa)),
        ],
    );
    let (x, m) = mask_inputs(rows);
    let mut xs = [x.clone(), x.clone(), x.clone()];
    let mut xa: Array2<f32> = nd(&x);
    let ma = Array2::from_shape_vec((rows, rows), m.to_vec()).expect("square mask");
    {
        let [x0, x1, x2] = &mut xs;
        t.row(
            "masked_fill_",
            &format!("{rows}x{rows}"),
            once(rows * rows * 4),
            tk("mask", json!({"n": rows})),
            [
                &mut || mask(x0, &m),
                &mut || mask_v(x1, &m),
                &mut || mask_c(x2, &m),
                &mut || mask_nd(&mut xa, &ma),
            ],
        );
    }
    drop((xs, xa));
    let (rows, cols, k) = sz.put;
    let (x, idx, v) = put_inputs(rows, cols, k);
    let mut xs = [x.clone(), x.clone(), x.clone()];
    drop(x);
    let mut xa: Array2<f32> = nd(&xs[0]);
    let idx_a: Vec<usize> = idx.to_vec().iter().map(|&i| i as usize).collect();
    let va: Array2<f32> = nd(&v);
    {
        let [x0, x1, x2] = &mut xs;
        t.row(
            &format!("index_put_ x{k}"),
            &format!("{rows}x{cols}"),
            once(k * cols * 4),
            tk("put_rows", json!({"rows": rows, "cols": cols, "k": k})),
            [
                &mut || put_rows(x0, &idx, &v),
                &mut || put_rows_v(x1, &idx, &v),
                &mut || put_rows_c(x2, &idx, &v),
                &mut || put_rows_nd(&mut xa, &idx_a, &va),
            ],
        );
    }
    drop((xs, xa, v, va));
    let (k, n, name) = sz.cat;
    let xs = cat_inputs(k, n);
    let xas: Vec<Array1<f32>> = xs.iter().map(nd).collect();
    t.row(
        "cat",
        name,
        once(k * n * 4),
        tk("cat", json!({"k": k, "n": n})),
        [
            &mut sink(|| cat(&xs)),
            &mut sink(|| cat_v(&xs)),
            &mut sink(|| cat_c(&xs)),
            &mut sink(|| cat_nd(&xas)),
        ],
    );
}
