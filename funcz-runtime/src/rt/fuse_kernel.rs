//! Compiled kernels of fused runs: the whole run as one per-element
//! function, so each element stays in a register through every step.
//!
//! [`fused_root`](super::fused_root)'s blocked pass runs each step over a
//! block of the value (every step loads and stores the block from L1). The
//! macro also knows the steps when it writes the run, so it passes a
//! kernel ([`Fusion::kernel`](super::Fusion::kernel)): a closure that runs
//! the steps' per-element formulas ([`k`]) one after the other on each
//! element, through [`fuse_loop`], which the compiler inlines and
//! vectorizes in the caller's crate. The formulas are the ones the ops'
//! kernels compute, expression for expression, so the bits are the same.
//!
//! Input (from the macro): `y.mul_(2.0); y.add_(&w); y.relu_();`
//! Output: `Fusion::of(&y).mul_(2.0).add_(&w).relu_().kernel(&["mul_", "add_", "relu_"],
//! &|x, o, p| { let (p0, p1, p2) = (p[0], p[1], p[2]); fuse_loop::<_, 2>(x, o, |v, [a0, a1]| {
//! let v = k::mul(v, a0, &p0); let v = k::add(v, a1, &p1); k::relu(v, &p2) }) })`

use crate::element::Element;

pub use crate::ops::fused::{Params as FusedParams, View as FusedOperand, k};

/// A compiled kernel of a fused run: updates a block of the value in
/// place, given every step's operands cut to the block (in step order,
/// the steps' first then second operand) and every step's scalar
/// parameters (one per step).
pub type Kernel<'k, T> = &'k dyn Fn(&mut [T], &[FusedOperand<'_, T>], &[FusedParams<T>]);

/// Elements per inner loop: a chunk of the value and of each operand is a
/// fixed-size array, so the loop has no bounds checks and vectorizes.
const CHUNK: usize = 64;

/// Runs `f` on every element of `x` with the matching element of each of
/// the `N` operands `o` (a broadcast scalar or a slice as long as `x`):
/// `x[i] = f(x[i], [o[0][i], ..., o[N-1][i]])`.
///
/// ```
/// use funcz_runtime::rt::{FusedOperand, fuse_loop};
/// let mut x = vec![1.0f32, 2.0, 3.0];
/// let w = [10.0f32, 20.0, 30.0];
/// fuse_loop::<f32, 2>(&mut x, &[FusedOperand::Slice(&w), FusedOperand::Scalar(0.5)], |v, [a, b]| (v + a) * b);
/// assert_eq!(x, vec![5.5, 11.0, 16.5]);
/// ```
#[inline(always)]
pub fn fuse_loop<T: Element, const N: usize>(
    x: &mut [T],
    o: &[FusedOperand<'_, T>],
    f: impl Fn(T, [T; N]) -> T,
) {
    check_kernel_args::<T, N>(o, x.len());
    #[cfg(target_arch = "x86_64")]
    if crate::ops::kernel::wide::avx2() {
        // SAFETY: `avx2()` is true only if the running CPU supports AVX2
        // (`is_x86_feature_detected!`), the one requirement of the call.
        return unsafe { chunks_avx2(x, o, &f) };
    }
    chunks(x, o, &f)
}

/// [`fuse_loop`] as the kernels `#[functionalize]` writes use it: one copy
/// of the loop, compiled with AVX2 on x86-64 (a fused pass runs a kernel
/// only on a CPU with AVX2: see [`kernels_run`]; elsewhere the pass runs
/// its steps' block loops), the baseline loop on other targets. Each
/// kernel is code its user's crate compiles, once per fused run: one copy
/// instead of [`fuse_loop`]'s two halves that cost (the 1,000-op chain's
/// release build).
///
/// ```
/// use funcz_runtime::rt::{FusedOperand, fuse_loop_wide, kernels_run};
/// let mut x = vec![1.0f32, 2.0, 3.0];
/// let w = [10.0f32, 20.0, 30.0];
/// if kernels_run() {
///     fuse_loop_wide::<f32, 1>(&mut x, &[FusedOperand::Slice(&w)], |v, [a]| v + a);
///     assert_eq!(x, vec![11.0, 22.0, 33.0]);
/// }
/// ```
#[inline(always)]
#[track_caller]
pub fn fuse_loop_wide<T: Element, const N: usize>(
    x: &mut [T],
    o: &[FusedOperand<'_, T>],
    f: impl Fn(T, [T; N]) -> T,
) {
    check_kernel_args::<T, N>(o, x.len());
    #[cfg(target_arch = "x86_64")]
    {
        assert!(
            kernels_run(),
            "funcz: internal: a compiled fusion kernel run without AVX2"
        );
        // SAFETY: `kernels_run()` is true on x86-64 only if the running CPU
        // supports AVX2 (`is_x86_feature_detected!`), the one requirement
        // of the call.
        unsafe { chunks_avx2(x, o, &f) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    chunks(x, o, &f)
}

/// A kernel's operands: `N` of them, each a scalar or a slice of `len`.
#[inline(always)]
#[track_caller]
fn check_kernel_args<T: Element, const N: usize>(o: &[FusedOperand<'_, T>], len: usize) {
    assert_eq!(
        o.len(),
        N,
        "funcz: internal: a fused kernel of {N} operands was given {}",
        o.len()
    );
    check_operands(o, len);
}

/// Whether fused passes run compiled kernels ([`fuse_loop_wide`]): on
/// x86-64 when the CPU has AVX2 (and `FUNCZ_NO_AVX2` is unset), always on
/// other targets.
///
/// ```
/// let _ = funcz_runtime::rt::kernels_run();
/// ```
#[inline]
pub fn kernels_run() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        crate::ops::kernel::wide::avx2()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}

/// Panics unless every operand of a fused loop over `n` elements is a
/// scalar or a slice of at least `n` (the loops slice them by chunk).
pub(super) fn check_operands<T: Element>(o: &[FusedOperand<'_, T>], n: usize) {
    for op in o {
        match *op {
            FusedOperand::Scalar(_) => {}
            FusedOperand::Slice(s) => assert!(
                s.len() >= n,
                "funcz: internal: a fused operand of {} elements for a block of {n}",
                s.len()
            ),
            FusedOperand::None => panic!("funcz: internal: a fused kernel given no operand"),
        }
    }
}

/// [`chunks`] compiled with AVX2 enabled (8 `f32` lanes). It is
/// monomorphized in the crate of the kernel's closure, which the compiler
/// inlines into it (a function without target features may be inlined into
/// one with more). No FMA: the bits are those of the baseline copy.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn chunks_avx2<T: Element, const N: usize>(
    x: &mut [T],
    o: &[FusedOperand<'_, T>],
    f: &impl Fn(T, [T; N]) -> T,
) {
    chunks(x, o, f)
}

/// The loop of [`fuse_loop`] (operands checked): chunks of [`CHUNK`]
/// elements, then the rest one by one. (Running the elements before the
/// first 32-byte boundary separately, as the single ops' AVX2 loops do,
/// made the bench's chain 5-10% slower here.)
///
/// Each chunk stores `f`'s result in place. A kernel whose result is its
/// own element on some path (a run of `relu_`/`clamp_*` steps only) could
/// in principle be compiled to a masked store with AVX, 6-8x slower on AMD
/// Zen (see `ops::kernel::wide`); the `relu6 run` row of `benches/fused.rs`
/// checks it is not (computing into a local chunk and copying it back
/// avoids the hazard for sure but cost the chain about 35%).
#[inline(always)]
fn chunks<T: Element, const N: usize>(
    x: &mut [T],
    o: &[FusedOperand<'_, T>],
    f: &impl Fn(T, [T; N]) -> T,
) {
    let n = x.len();
    let at = |i: usize| -> [T; N] {
        std::array::from_fn(|k| match o[k] {
            FusedOperand::Slice(d) => d[i],
            FusedOperand::Scalar(v) => v,
            FusedOperand::None => T::zero(),
        })
    };
    let mut fill = [[T::zero(); CHUNK]; N];
    for (k, op) in o.iter().enumerate() {
        if let FusedOperand::Scalar(v) = *op {
            fill[k] = [v; CHUNK];
        }
    }
    let fill = &fill;
    let mut s = 0;
    while s + CHUNK <= n {
        let ops: [&[T; CHUNK]; N] = std::array::from_fn(|k| match o[k] {
            FusedOperand::Slice(d) => chunk(&d[s..s + CHUNK]),
            _ => &fill[k],
        });
        let xs: &mut [T; CHUNK] = (&mut x[s..s + CHUNK])
            .try_into()
            .expect("funcz: internal: a chunk of CHUNK elements");
        for i in 0..CHUNK {
            let mut a = [T::zero(); N];
            for k in 0..N {
                a[k] = ops[k][i];
            }
            xs[i] = f(xs[i], a);
        }
        s += CHUNK;
    }
    for (i, v) in x.iter_mut().enumerate().skip(s) {
        *v = f(*v, at(i));
    }
}

#[inline(always)]
fn chunk<T>(s: &[T]) -> &[T; CHUNK] {
    s.try_into()
        .expect("funcz: internal: a chunk of CHUNK elements")
}
