//! The contiguous loops of the elementwise kernels, compiled twice on
//! x86-64: for the baseline target (SSE2, what the crate is built for) and
//! with AVX2 enabled, the AVX2 copy chosen at run time when the CPU has it.
//!
//! The two copies run the same scalar formula per element: enabling AVX2
//! only lets LLVM use 256-bit registers for the loop (8 `f32` lanes instead
//! of 4). FMA is not enabled, and Rust never contracts `a * b + c` nor
//! reassociates float arithmetic, so results are bit-identical on both
//! paths (`tests/wide_kernels.rs` and the unit tests below compare bits).
//!
//! Setting the environment variable `FUNCZ_NO_AVX2` (to anything) before
//! the first op forces the baseline loops (for testing and measuring).
//!
//! **Kernels that may return their own element unchanged** (`relu`:
//! `if x < 0 { 0 } else { x }`, one-sided clamps, integer `abs`) must not
//! use the in-place loops here with `W = true`: LLVM turns
//! `*x = select(c, v, *x)` into a masked store (`vmaskmovps`) when AVX is
//! enabled, which is 6-8x slower than the baseline loop on AMD Zen
//! (measured, BENCHMARKS.md "Wider kernels"). Their callers pass
//! `W = false`: the baseline loop only. Out-of-place loops (a fresh
//! output) have no such hazard.

#[cfg(target_arch = "x86_64")]
use std::sync::atomic::{AtomicU8, Ordering};

/// Whether the AVX2 loops are used: 0 = not yet decided, 1 = no, 2 = yes.
#[cfg(target_arch = "x86_64")]
static AVX2: AtomicU8 = AtomicU8::new(0);

/// True if this CPU has AVX2 and `FUNCZ_NO_AVX2` is unset (decided once).
#[inline]
pub(crate) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match AVX2.load(Ordering::Relaxed) {
            2 => true,
            1 => false,
            _ => detect(),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[cold]
fn detect() -> bool {
    let on = std::is_x86_feature_detected!("avx2") && std::env::var_os("FUNCZ_NO_AVX2").is_none();
    AVX2.store(if on { 2 } else { 1 }, Ordering::Relaxed);
    on
}

/// In-place loops over at least this many bytes of destination run the
/// baseline (128-bit) copy even on a CPU with AVX2. Measured on this
/// project's AMD Zen 4 machine (BENCHMARKS.md, "Kernels and fused chains
/// (h-kern2)"), one thread, data far larger than the 32 MiB L3: `x += w`
/// on 16M `f32` (three streams from and to DRAM) takes 4-11% less time with
/// 128-bit loads and stores than with 256-bit ones (hand-written loops with
/// 1-8 vectors per iteration alike; AVX-512 is slower still, and
/// non-temporal stores or software prefetching slower again), `x *= s`
/// 4-6% less; at 8M elements (32 MiB) and below the 256-bit loops are about as
/// fast or faster (`x *= s` at 4M: 0.6x the time). The four-stream
/// `addcmul_` stays faster with 256 bits at every size, so
/// [`zip3_mut`] has no such cut-off.
#[cfg(target_arch = "x86_64")]
const WIDE_MAX_BYTES: usize = 48 << 20;

/// True if an in-place loop over `len` elements of `T` runs the AVX2 copy.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn wide_in_place<T>(len: usize) -> bool {
    len.saturating_mul(std::mem::size_of::<T>()) < WIDE_MAX_BYTES && avx2()
}

// ---- the loop bodies (inlined into both copies) ----

#[inline(always)]
fn map_mut_body<T: Copy, F: Fn(T) -> T>(d: &mut [T], f: &F) {
    for x in d {
        *x = f(*x);
    }
}

#[inline(always)]
fn zip_mut_body<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], s: &[T], f: &F) {
    let s = &s[..d.len()];
    for (x, &y) in d.iter_mut().zip(s) {
        *x = f(*x, y);
    }
}

#[inline(always)]
fn zip3_mut_body<T: Copy, F: Fn(T, T, T) -> T>(d: &mut [T], a: &[T], b: &[T], f: &F) {
    let (a, b) = (&a[..d.len()], &b[..d.len()]);
    for ((x, &y), &z) in d.iter_mut().zip(a).zip(b) {
        *x = f(*x, y, z);
    }
}

#[inline(always)]
fn map_push_body<T: Copy, F: Fn(T) -> T>(out: &mut Vec<T>, a: &[T], f: &F) {
    out.extend(a.iter().map(|&x| f(x)));
}

#[inline(always)]
fn zip_push_body<T: Copy, F: Fn(T, T) -> T>(out: &mut Vec<T>, a: &[T], b: &[T], f: &F) {
    let b = &b[..a.len()];
    out.extend(a.iter().zip(b).map(|(&x, &y)| f(x, y)));
}

#[inline(always)]
fn zip3_push_body<T: Copy, F: Fn(T, T, T) -> T>(
    out: &mut Vec<T>,
    a: &[T],
    b: &[T],
    c: &[T],
    f: &F,
) {
    let (b, c) = (&b[..a.len()], &c[..a.len()]);
    out.extend(a.iter().zip(b).zip(c).map(|((&x, &y), &z)| f(x, y, z)));
}

// ---- the AVX2 copies ----

/// How many of the `n` elements starting at `p` come before the first
/// 32-byte boundary (0 if `T`'s size does not divide 32). The AVX2 loops
/// run these first, so that the main loop's 32-byte stores do not straddle
/// cache lines: large buffers from `malloc` start 16 bytes after a page
/// boundary, and a straddling store costs about a third more time per
/// element when the data is in L2 or L3 (measured, BENCHMARKS.md "Wider
/// kernels").
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn head<T>(p: *const T, n: usize) -> usize {
    let size = std::mem::size_of::<T>();
    let addr = p as usize;
    if size == 0 || !32usize.is_multiple_of(size) || !addr.is_multiple_of(size) {
        return 0;
    }
    (((32 - addr % 32) % 32) / size).min(n)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    // Each function is the loop body compiled with AVX2 enabled, run on
    // the elements before the destination's first 32-byte boundary and
    // then on the rest. They are safe functions; calling one is `unsafe`
    // only because the CPU must support AVX2 (`super::avx2()` checks it).

    use super::head;

    #[target_feature(enable = "avx2")]
    pub(super) fn map_mut<T: Copy, F: Fn(T) -> T>(d: &mut [T], f: &F) {
        let (d0, d1) = d.split_at_mut(head(d.as_ptr(), d.len()));
        super::map_mut_body(d0, f);
        super::map_mut_body(d1, f)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn zip_mut<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], s: &[T], f: &F) {
        let h = head(d.as_ptr(), d.len());
        let (d0, d1) = d.split_at_mut(h);
        super::zip_mut_body(d0, s, f);
        super::zip_mut_body(d1, &s[h..], f)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn zip3_mut<T: Copy, F: Fn(T, T, T) -> T>(d: &mut [T], a: &[T], b: &[T], f: &F) {
        let h = head(d.as_ptr(), d.len());
        let (d0, d1) = d.split_at_mut(h);
        super::zip3_mut_body(d0, a, b, f);
        super::zip3_mut_body(d1, &a[h..], &b[h..], f)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn map_push<T: Copy, F: Fn(T) -> T>(out: &mut Vec<T>, a: &[T], f: &F) {
        out.reserve(a.len());
        let h = head(out.spare_capacity_mut().as_ptr(), a.len());
        super::map_push_body(out, &a[..h], f);
        super::map_push_body(out, &a[h..], f)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn zip_push<T: Copy, F: Fn(T, T) -> T>(out: &mut Vec<T>, a: &[T], b: &[T], f: &F) {
        out.reserve(a.len());
        let h = head(out.spare_capacity_mut().as_ptr(), a.len());
        super::zip_push_body(out, &a[..h], b, f);
        super::zip_push_body(out, &a[h..], &b[h..], f)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn zip3_push<T: Copy, F: Fn(T, T, T) -> T>(
        out: &mut Vec<T>,
        a: &[T],
        b: &[T],
        c: &[T],
        f: &F,
    ) {
        out.reserve(a.len());
        let h = head(out.spare_capacity_mut().as_ptr(), a.len());
        super::zip3_push_body(out, &a[..h], b, c, f);
        super::zip3_push_body(out, &a[h..], &b[h..], &c[h..], f)
    }
}

// ---- dispatch: `W = false` is the baseline loop only ----

/// `x = f(x)` for every element of `d` (the AVX2 copy below
/// [`WIDE_MAX_BYTES`] of `d`).
#[inline(always)]
pub(crate) fn map_mut<T: Copy, F: Fn(T) -> T, const W: bool>(d: &mut [T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if W && wide_in_place::<T>(d.len()) {
        // SAFETY: `avx2()` is true only if the running CPU supports AVX2
        // (`is_x86_feature_detected!`), the one requirement of the call.
        return unsafe { avx2::map_mut(d, f) };
    }
    map_mut_body(d, f)
}

/// `x = f(x, y)` for `x` in `d` and `y` the element of `s` at the same
/// index (`s` at least as long as `d`; the AVX2 copy below
/// [`WIDE_MAX_BYTES`] of `d`).
#[inline(always)]
pub(crate) fn zip_mut<T: Copy, F: Fn(T, T) -> T, const W: bool>(d: &mut [T], s: &[T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if W && wide_in_place::<T>(d.len()) {
        // SAFETY: as in `map_mut`: the CPU supports AVX2.
        return unsafe { avx2::zip_mut(d, s, f) };
    }
    zip_mut_body(d, s, f)
}

/// `x = f(x, y, z)` for `x` in `d`, `y`, `z` the elements of `a`, `b` at
/// the same index (both at least as long as `d`).
#[inline(always)]
pub(crate) fn zip3_mut<T: Copy, F: Fn(T, T, T) -> T, const W: bool>(
    d: &mut [T],
    a: &[T],
    b: &[T],
    f: &F,
) {
    #[cfg(target_arch = "x86_64")]
    if W && avx2() {
        // SAFETY: as in `map_mut`: the CPU supports AVX2.
        return unsafe { avx2::zip3_mut(d, a, b, f) };
    }
    zip3_mut_body(d, a, b, f)
}

/// Appends `f(x)` for every `x` of `a` to `out`.
#[inline(always)]
pub(crate) fn map_push<T: Copy, F: Fn(T) -> T, const W: bool>(out: &mut Vec<T>, a: &[T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    if W && avx2() {
        // SAFETY: as in `map_mut`: the CPU supports AVX2.
        return unsafe { avx2::map_push(out, a, f) };
    }
    map_push_body(out, a, f)
}

/// Appends `f(x, y)` for the elements of `a` and `b` (at least as long as
/// `a`) at each index to `out`.
#[inline(always)]
pub(crate) fn zip_push<T: Copy, F: Fn(T, T) -> T, const W: bool>(
    out: &mut Vec<T>,
    a: &[T],
    b: &[T],
    f: &F,
) {
    #[cfg(target_arch = "x86_64")]
    if W && avx2() {
        // SAFETY: as in `map_mut`: the CPU supports AVX2.
        return unsafe { avx2::zip_push(out, a, b, f) };
    }
    zip_push_body(out, a, b, f)
}

/// Appends `f(x, y, z)` for the elements of `a`, `b` and `c` (at least as
/// long as `a`) at each index to `out`.
#[inline(always)]
pub(crate) fn zip3_push<T: Copy, F: Fn(T, T, T) -> T, const W: bool>(
    out: &mut Vec<T>,
    a: &[T],
    b: &[T],
    c: &[T],
    f: &F,
) {
    #[cfg(target_arch = "x86_64")]
    if W && avx2() {
        // SAFETY: as in `map_mut`: the CPU supports AVX2.
        return unsafe { avx2::zip3_push(out, a, b, c, f) };
    }
    zip3_push_body(out, a, b, c, f)
}

// Values with every float corner, shared with the integration tests
// (`tests/wide_kernels.rs`, `tests/fuse_loop.rs`).
#[cfg(test)]
#[path = "float_corners.rs"]
mod float_corners;

#[cfg(test)]
mod tests {
    use super::*;

    use super::float_corners::{bits, values};

    /// Lengths around the vector widths (4, 8) and unroll factors.
    const LENS: [usize; 11] = [0, 1, 3, 7, 8, 9, 31, 63, 64, 65, 257];

    /// The kernels of the ops that use these loops, and `relu`'s select
    /// (not used in place with `W = true`, but it must agree anyway).
    type Unary = Box<dyn Fn(f32) -> f32>;
    type Binary = fn(f32, f32) -> f32;
    type Ternary = fn(f32, f32, f32) -> f32;

    fn unaries() -> Vec<(&'static str, Unary)> {
        vec![
            ("neg", Box::new(|x: f32| -x)),
            ("abs", Box::new(|x: f32| x.abs())),
            ("sqrt", Box::new(|x: f32| x.sqrt())),
            ("mul", Box::new(|x: f32| x * 1.01)),
            ("div", Box::new(|x: f32| x / 1.01)),
            ("sub", Box::new(|x: f32| x - 0.5)),
            ("relu", Box::new(|x: f32| if x < 0.0 { 0.0 } else { x })),
        ]
    }

    /// Runs `check(a, b)` for every length and every start offset 0..4 of
    /// three slices cut from longer buffers (so that most starts are not
    /// 32-byte aligned).
    fn each_case(mut check: impl FnMut(usize, &[f32], &[f32], &[f32])) {
        for n in LENS {
            for off in 0..4 {
                let a = values(n + 4, 1);
                let b = values(n + 4, 2);
                let c: Vec<f32> = values(n + 4, 3).iter().map(|x| x.abs() + 0.5).collect();
                check(
                    n,
                    &a[off..off + n],
                    &b[off + 1..off + 1 + n],
                    &c[3 - off..3 - off + n],
                );
                check(n, &a[off..off + n], &b[off..off + n], &c[off..off + n]);
            }
        }
    }

    #[test]
    fn both_copies_give_the_same_bits() {
        each_case(|n, a, b, c| {
            for (name, f) in unaries() {
                let mut base = a.to_vec();
                map_mut::<f32, _, false>(&mut base, &f);
                let want: Vec<f32> = a.iter().map(|&x| f(x)).collect();
                assert_eq!(bits(&base), bits(&want), "{name} n={n}");
                let mut wide = a.to_vec();
                map_mut::<f32, _, true>(&mut wide, &f);
                assert_eq!(bits(&wide), bits(&want), "{name} n={n} (wide)");
                let mut out = vec![7.0];
                map_push::<f32, _, true>(&mut out, a, &f);
                assert_eq!(bits(&out[1..]), bits(&want), "{name} n={n} (push)");
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    // The AVX2 copy itself, whatever `FUNCZ_NO_AVX2` says.
                    let mut v = a.to_vec();
                    // SAFETY: the CPU has AVX2 (checked just above).
                    unsafe { avx2::map_mut(&mut v, &f) };
                    assert_eq!(bits(&v), bits(&want), "{name} n={n} (avx2)");
                    let mut out = Vec::new();
                    // SAFETY: as above.
                    unsafe { avx2::map_push(&mut out, a, &f) };
                    assert_eq!(bits(&out), bits(&want), "{name} n={n} (avx2 push)");
                }
            }
            let binaries: [(&str, Binary); 4] = [
                ("add", |x, y| x + y),
                ("sub", |x, y| x - y),
                ("mul", |x, y| x * y),
                ("div", |x, y| x / y),
            ];
            for (name, f) in binaries {
                let want: Vec<f32> = a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect();
                for w in [false, true] {
                    let mut d = a.to_vec();
                    if w {
                        zip_mut::<f32, _, true>(&mut d, b, &f);
                    } else {
                        zip_mut::<f32, _, false>(&mut d, b, &f);
                    }
                    assert_eq!(bits(&d), bits(&want), "{name} n={n} wide={w}");
                }
                let mut out = Vec::new();
                zip_push::<f32, _, true>(&mut out, a, b, &f);
                assert_eq!(bits(&out), bits(&want), "{name} n={n} (push)");
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    let mut d = a.to_vec();
                    // SAFETY: the CPU has AVX2 (checked just above).
                    unsafe { avx2::zip_mut(&mut d, b, &f) };
                    assert_eq!(bits(&d), bits(&want), "{name} n={n} (avx2)");
                    let mut out = Vec::new();
                    // SAFETY: as above.
                    unsafe { avx2::zip_push(&mut out, a, b, &f) };
                    assert_eq!(bits(&out), bits(&want), "{name} n={n} (avx2 push)");
                }
            }
            // addcmul / addcdiv with a value that makes every rounding count.
            let ternaries: [(&str, Ternary); 2] = [
                ("addcmul", |x, y, z| x + 0.3 * y * z),
                ("addcdiv", |x, y, z| x + -0.001 * y / z),
            ];
            for (name, f) in ternaries {
                let want: Vec<f32> = (0..n).map(|i| f(a[i], b[i], c[i])).collect();
                let mut d = a.to_vec();
                zip3_mut::<f32, _, true>(&mut d, b, c, &f);
                assert_eq!(bits(&d), bits(&want), "{name} n={n}");
                let mut d = a.to_vec();
                zip3_mut::<f32, _, false>(&mut d, b, c, &f);
                assert_eq!(bits(&d), bits(&want), "{name} n={n} (base)");
                let mut out = Vec::new();
                zip3_push::<f32, _, true>(&mut out, a, b, c, &f);
                assert_eq!(bits(&out), bits(&want), "{name} n={n} (push)");
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    let mut d = a.to_vec();
                    // SAFETY: the CPU has AVX2 (checked just above).
                    unsafe { avx2::zip3_mut(&mut d, b, c, &f) };
                    assert_eq!(bits(&d), bits(&want), "{name} n={n} (avx2)");
                    let mut out = Vec::new();
                    // SAFETY: as above.
                    unsafe { avx2::zip3_push(&mut out, a, b, c, &f) };
                    assert_eq!(bits(&out), bits(&want), "{name} n={n} (avx2 push)");
                }
            }
        });
    }

    #[test]
    fn integer_kernels_agree() {
        for n in LENS {
            let a: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1001 - 500).collect();
            let b: Vec<i64> = (0..n as i64).map(|i| (i * 31) % 17 - 8).collect();
            let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| x * y - x).collect();
            let mut d = a.clone();
            zip_mut::<i64, _, true>(&mut d, &b, &|x, y| x * y - x);
            assert_eq!(d, want, "n={n}");
            let want: Vec<i64> = a.iter().map(|x| x.wrapping_abs()).collect();
            let mut out = Vec::new();
            map_push::<i64, _, true>(&mut out, &a, &|x: i64| x.wrapping_abs());
            assert_eq!(out, want, "n={n}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn large_in_place_loops_run_the_baseline_copy() {
        let mb = 1 << 20;
        assert!(!wide_in_place::<f32>(48 * mb / 4));
        assert!(!wide_in_place::<f64>(6 * mb));
        assert!(!wide_in_place::<u8>(usize::MAX));
        assert_eq!(wide_in_place::<f32>(48 * mb / 4 - 1), avx2());
        assert_eq!(wide_in_place::<f32>(0), avx2());
        // Same bits either way, on a destination just above the cut-off.
        let n = 48 * mb / 4 + 9;
        let a: Vec<f32> = (0..n).map(|i| (i % 1013) as f32 * 0.37 - 100.0).collect();
        let b: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 1e-3).collect();
        let mut d = a.clone();
        zip_mut::<f32, _, true>(&mut d, &b, &|x, y| x / 1.01 + y);
        assert!(
            d.iter()
                .zip(&a)
                .zip(&b)
                .all(|((d, &x), &y)| d.to_bits() == (x / 1.01 + y).to_bits())
        );
        let mut d = a.clone();
        map_mut::<f32, _, true>(&mut d, &|x| x * 1.01);
        assert!(
            d.iter()
                .zip(&a)
                .all(|(d, &x)| d.to_bits() == (x * 1.01).to_bits())
        );
    }

    /// Run by `no_avx2_env_forces_the_baseline_loops` in a child process.
    #[test]
    fn child_sees_the_forced_baseline() {
        if std::env::var_os("FUNCZ_WIDE_CHILD").is_some() {
            assert!(!avx2(), "FUNCZ_NO_AVX2 is set: the baseline loops must run");
            println!("FUNCZ_WIDE_CHILD ran");
        }
    }

    #[test]
    fn no_avx2_env_forces_the_baseline_loops() {
        let exe = std::env::current_exe().expect("test binary path");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "ops::kernel::wide::tests::child_sees_the_forced_baseline",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("FUNCZ_NO_AVX2", "1")
            .env("FUNCZ_WIDE_CHILD", "1")
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child failed: {stdout}");
        assert!(
            stdout.contains("FUNCZ_WIDE_CHILD ran"),
            "child did not run: {stdout}"
        );
        // And in this process (no such variable set by the test harness),
        // the wide path is on exactly when the CPU has AVX2.
        #[cfg(target_arch = "x86_64")]
        if std::env::var_os("FUNCZ_NO_AVX2").is_none() {
            assert_eq!(avx2(), std::is_x86_feature_detected!("avx2"));
        }
    }
}
