//! Contiguous elementwise ops against hand-written slice loops.
//!
//! Prints, for 1M and 16M `f32` elements, `ratio = slice-loop time / funcz
//! time` (1.0 = same speed, higher = funcz faster) for:
//! - `add`:  `a.add(&b)` (fresh output tensor) vs a zip loop collecting a
//!   fresh `Vec`;
//! - `add_`: `a.add_(&b)` vs `for (x, y) in a.iter_mut().zip(b) { *x += y }`;
//! - `mul(s)` / `add_(s)`: the same with a scalar operand.
//!
//! Each side is timed as the minimum over several samples, the two sides
//! interleaved so that machine noise hits both alike.
//!
//! Then a table of single ops (the ops of the root bench's chain, Adam and
//! layer-norm kernels) at 64K, 1M and 16M elements, f32, contiguous, the
//! in-place ones on a tensor passed in: time per call, minimum over 7
//! consecutive samples of each op. With `FUNCZ_TORCH_PYTHON=<python with torch>` the
//! same ops are then timed in PyTorch eager (one thread,
//! `inference_mode`, called from Python) and the table gets the columns
//! `torch` and `funcz/torch`. Run it once more with `FUNCZ_NO_AVX2=1` to
//! time funcz's baseline (SSE2) loops instead of their AVX2 copies.
//!
//! Run: `cargo bench -p funcz-runtime --bench elementwise`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use funcz_runtime::Tensor;

fn time(iters: usize, mut f: impl FnMut()) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed() / iters as u32
}

/// Minimum per-iteration time of `base` and `ours`, interleaved.
fn compare(
    samples: usize,
    iters: usize,
    mut base: impl FnMut(),
    mut ours: impl FnMut(),
) -> (Duration, Duration) {
    // Warm-up (page faults, allocator state, caches).
    base();
    ours();
    let (mut b, mut o) = (Duration::MAX, Duration::MAX);
    for _ in 0..samples {
        b = b.min(time(iters, &mut base));
        o = o.min(time(iters, &mut ours));
    }
    (b, o)
}

fn report(op: &str, n: usize, (base, ours): (Duration, Duration)) {
    println!(
        "{op:<8} {:>4}M   slice loop {:>9.3} ms   funcz {:>9.3} ms   ratio {:.3}",
        n / 1_000_000,
        base.as_secs_f64() * 1e3,
        ours.as_secs_f64() * 1e3,
        base.as_secs_f64() / ours.as_secs_f64()
    );
}

/// The single-op table: `(name, funcz op)`; each op gets the tensors
/// `x` (mutated), `w`, `g`, `d` (`d` > 0) of the size at hand. The values
/// stay finite and normal however often an op runs (scalars of 1.0 and
/// 0.0 where an op would otherwise drift).
type OpFn = fn(&Tensor, &Tensor, &Tensor, &Tensor);

const OPS: &[(&str, OpFn)] = &[
    ("mul_(s)", |x, _, _, _| drop(x.mul_(1.0))),
    ("add_(w)", |x, w, _, _| drop(x.add_(w))),
    ("sub_(s)", |x, _, _, _| drop(x.sub_(0.0))),
    ("relu_", |x, _, _, _| drop(x.relu_())),
    ("div_(s)", |x, _, _, _| drop(x.div_(1.0))),
    ("clamp_", |x, _, _, _| drop(x.clamp_(-1000.0, 1000.0))),
    ("abs_", |x, _, _, _| drop(x.abs_())),
    ("neg_", |x, _, _, _| drop(x.neg_())),
    ("addcmul_", |x, _, g, _| drop(x.addcmul_(g, g, 0.0))),
    ("addcdiv_", |x, _, g, d| drop(x.addcdiv_(g, d, 0.0))),
    ("mul(s)", |x, _, _, _| drop(black_box(x * 1.5))),
    ("div(s)", |x, _, _, _| drop(black_box(x / 1.5))),
    ("sqrt", |_, _, _, d| drop(black_box(d.sqrt()))),
    ("add(w)", |x, w, _, _| drop(black_box(x.add(w)))),
];

/// The same ops in PyTorch, by name; prints `name n microseconds` lines.
const TORCH_SCRIPT: &str = r#"
import sys, time, torch
torch.set_num_threads(1)
sizes = [int(a) for a in sys.argv[1:]]
def bench(f, iters, samples):
    best = float("inf")
    for _ in range(samples):
        t = time.perf_counter_ns()
        for _ in range(iters):
            f()
        best = min(best, (time.perf_counter_ns() - t) / iters)
    return best
with torch.inference_mode():
    for n in sizes:
        i = torch.arange(n)
        x = ((i % 1000).float() * 0.5 - 100.0)
        w = (i % 7).float() * 1e-3
        g = (i % 13).float() * 1e-2 - 0.06
        d = (i % 5).float() + 1.0
        ops = [
            ("mul_(s)", lambda: x.mul_(1.0)), ("add_(w)", lambda: x.add_(w)),
            ("sub_(s)", lambda: x.sub_(0.0)), ("relu_", lambda: x.relu_()),
            ("div_(s)", lambda: x.div_(1.0)), ("clamp_", lambda: x.clamp_(-1000.0, 1000.0)),
            ("abs_", lambda: x.abs_()), ("neg_", lambda: x.neg_()),
            ("addcmul_", lambda: x.addcmul_(g, g, value=0.0)),
            ("addcdiv_", lambda: x.addcdiv_(g, d, value=0.0)),
            ("mul(s)", lambda: x * 1.5), ("div(s)", lambda: x / 1.5),
            ("sqrt", lambda: d.sqrt()), ("add(w)", lambda: x.add(w)),
        ]
        iters = max(1, (1 << 22) // n)
        for name, f in ops:
            f()
            print(name, n, bench(f, iters, 7) / 1e3, flush=True)
"#;

fn single_ops(sizes: &[usize]) {
    let mode = if std::env::var_os("FUNCZ_NO_AVX2").is_some() {
        "baseline loops (FUNCZ_NO_AVX2)"
    } else {
        "AVX2 loops if the CPU has AVX2"
    };
    println!("\nsingle ops, f32, time per call, min over 7 samples; funcz: {mode}");
    let mut rows: Vec<(&str, usize, f64)> = Vec::new();
    for &n in sizes {
        let t = |f: fn(usize) -> f32| Tensor::from_vec((0..n).map(f).collect(), &[n]);
        let x = t(|i| (i % 1000) as f32 * 0.5 - 100.0);
        let w = t(|i| (i % 7) as f32 * 1e-3);
        let g = t(|i| (i % 13) as f32 * 1e-2 - 0.06);
        let d = t(|i| (i % 5) as f32 + 1.0);
        let iters = ((1usize << 22) / n).max(1);
        // One op after the other, as the torch script times them (a
        // warm-up call, then 7 samples), so that both see the same cache
        // state.
        for (name, op) in OPS {
            op(&x, &w, &g, &d);
            let best = (0..7)
                .map(|_| time(iters, || op(black_box(&x), &w, &g, &d)).as_secs_f64() * 1e6)
                .fold(f64::MAX, f64::min);
            rows.push((name, n, best));
        }
    }
    let torch = std::env::var("FUNCZ_TORCH_PYTHON").ok().map(|py| {
        let out = std::process::Command::new(py)
            .arg("-c")
            .arg(TORCH_SCRIPT)
            .args(sizes.iter().map(|n| n.to_string()))
            .output()
            .expect("FUNCZ_TORCH_PYTHON runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("utf-8");
        text.lines()
            .map(|l| {
                let v: Vec<&str> = l.split_whitespace().collect();
                (
                    v[0].to_string(),
                    v[1].parse::<usize>().unwrap(),
                    v[2].parse::<f64>().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    });
    println!("| op | n | funcz (us) | torch (us) | funcz/torch |");
    println!("|---|---|---|---|---|");
    for (name, n, us) in rows {
        let t = torch
            .as_ref()
            .and_then(|t| t.iter().find(|(o, m, _)| o == name && *m == n))
            .map(|r| r.2);
        match t {
            Some(t) => println!("| {name} | {n} | {us:.1} | {t:.1} | {:.2} |", us / t),
            None => println!("| {name} | {n} | {us:.1} | | |"),
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us with no
    // such flag: then do a tiny smoke run only.
    let full = std::env::args().any(|a| a == "--bench");
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if let Some(v) = std::env::var_os("FUNCZ_ADD_STUDY") {
        study::run(v.to_str().unwrap_or(""));
        return;
    }
    let sizes: &[(usize, usize, usize)] = if full {
        &[(1_000_000, 25, 20), (16_000_000, 9, 2)]
    } else {
        &[(1_000, 1, 1)]
    };
    println!("ratio = slice-loop time / funcz time (>= 1.0: funcz at least as fast)");
    for &(n, samples, iters) in sizes {
        let av: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
        let bv: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 1e-3).collect();
        let a = Tensor::from_vec(av.clone(), &[n]);
        let b = Tensor::from_vec(bv.clone(), &[n]);

        let r = compare(
            samples,
            iters,
            || {
                let out: Vec<f32> = black_box(&av)
                    .iter()
                    .zip(black_box(&bv))
                    .map(|(x, y)| x + y)
                    .collect();
                black_box(out);
            },
            || {
                black_box(black_box(&a).add(black_box(&b)));
            },
        );
        report("add", n, r);

        let mut dst = av.clone();
        let r = compare(
            samples,
            iters,
            || {
                for (x, y) in black_box(&mut dst).iter_mut().zip(black_box(&bv)) {
                    *x += *y;
                }
            },
            || {
                black_box(black_box(&a).add_(black_box(&b)));
            },
        );
        report("add_", n, r);

        let r = compare(
            samples,
            iters,
            || {
                let s = black_box(1.5f32);
                let out: Vec<f32> = black_box(&av).iter().map(|x| x * s).collect();
                black_box(out);
            },
            || {
                black_box(black_box(&a).mul(black_box(1.5f32)));
            },
        );
        report("mul(s)", n, r);

        let r = compare(
            samples,
            iters,
            || {
                let s = black_box(1e-3f32);
                for x in black_box(&mut dst).iter_mut() {
                    *x += s;
                }
            },
            || {
                black_box(black_box(&a).add_(black_box(1e-3f32)));
            },
        );
        report("add_(s)", n, r);
    }
    if full {
        single_ops(&[1 << 16, 1 << 20, 1 << 24]);
    } else {
        single_ops(&[1 << 10]);
    }
}

/// The study behind the in-place loops' 256-bit cut-off
/// (`kernel::wide::WIDE_MAX_BYTES`, BENCHMARKS.md "Kernels and fused
/// chains (h-kern2)"): `x += w` and friends at one size, as plain slice
/// loops compiled for SSE2, AVX2 and AVX-512, hand-written with 128- and
/// 256-bit intrinsics, with prefetching, non-temporal stores, other
/// alignments and transparent huge pages, all on the same buffers and
/// interleaved. `FUNCZ_ADD_STUDY=<what>[:<elements>]` with `what` one of
/// `loops`, `offsets`, `prefetch`, `shapes`, `streams`, `huge`, e.g.
/// `FUNCZ_ADD_STUDY=shapes:16777216 cargo bench -p funcz-runtime --bench
/// elementwise`. Needs a CPU with AVX2.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod study {
    use super::{Duration, Tensor, black_box, time};

    pub(super) fn run(arg: &str) {
        assert!(
            std::is_x86_feature_detected!("avx2"),
            "the loop study needs AVX2"
        );
        let (what, n) = arg.split_once(':').unwrap_or((arg, ""));
        let n = n.parse().unwrap_or(1 << 24);
        match what {
            "loops" => add_loops(n),
            "offsets" => add_offsets(n),
            "prefetch" => add_prefetches(n),
            "shapes" => add_shapes(n),
            "streams" => stream_counts(n),
            "huge" => add_huge(n),
            _ => panic!("FUNCZ_ADD_STUDY: loops, offsets, prefetch, shapes, streams or huge"),
        }
    }

    #[inline(always)]
    fn add_body(x: &mut [f32], w: &[f32]) {
        let w = &w[..x.len()];
        for (a, b) in x.iter_mut().zip(w) {
            *a += *b;
        }
    }

    #[target_feature(enable = "avx2")]
    fn add_avx2(x: &mut [f32], w: &[f32]) {
        add_body(x, w)
    }

    #[target_feature(enable = "avx2")]
    fn add_avx2_peel(x: &mut [f32], w: &[f32]) {
        let h = ((32 - x.as_ptr() as usize % 32) % 32 / 4).min(x.len());
        let (x0, x1) = x.split_at_mut(h);
        add_body(x0, w);
        add_body(x1, &w[h..])
    }

    #[target_feature(enable = "avx512f")]
    fn add_avx512(x: &mut [f32], w: &[f32]) {
        add_body(x, w)
    }

    #[target_feature(enable = "avx512f")]
    fn add_avx512_peel(x: &mut [f32], w: &[f32]) {
        let h = ((64 - x.as_ptr() as usize % 64) % 64 / 4).min(x.len());
        let (x0, x1) = x.split_at_mut(h);
        add_body(x0, w);
        add_body(x1, &w[h..])
    }

    /// Blocks of 4 KiB of `x`: a page at a time, the three streams advanced
    /// together (prefetchers see three short regular streams).
    #[target_feature(enable = "avx2")]
    fn add_avx2_blocked(x: &mut [f32], w: &[f32]) {
        for (xc, wc) in x.chunks_mut(1024).zip(w.chunks(1024)) {
            add_body(xc, wc);
        }
    }

    fn add_loops(n: usize) {
        let x = Tensor::from_vec((0..n).map(|i| (i % 1000) as f32 * 0.5).collect(), &[n]);
        let wt = Tensor::from_vec((0..n).map(|i| (i % 7) as f32 * 1e-3).collect(), &[n]);
        let mut xv: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
        let wv: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 1e-3).collect();
        let mut dst = vec![0.0f32; n];
        println!(
            "x at {:#x} (mod 4096: {}), w at {:#x} (mod 4096: {})",
            xv.as_ptr() as usize,
            xv.as_ptr() as usize % 4096,
            wv.as_ptr() as usize,
            wv.as_ptr() as usize % 4096
        );
        let avx512 = std::is_x86_feature_detected!("avx512f");
        let names = [
            "funcz x.add_(&w)",
            "memcpy 64 MiB",
            "sse2 zip",
            "avx2 zip",
            "avx2 peel",
            "avx2 4K blocks",
            "avx512 zip",
            "avx512 peel",
        ];
        let count = if avx512 { 8 } else { 6 };
        let mut run = |k: usize| match k {
            0 => drop(black_box(&x).add_(black_box(&wt))),
            1 => black_box(&mut dst).copy_from_slice(black_box(&wv)),
            2 => add_body(black_box(&mut xv), black_box(&wv)),
            // SAFETY (bench only): `run` checked the CPU has AVX2.
            3 => unsafe { add_avx2(black_box(&mut xv), black_box(&wv)) },
            // SAFETY (bench only): as above.
            4 => unsafe { add_avx2_peel(black_box(&mut xv), black_box(&wv)) },
            // SAFETY (bench only): as above.
            5 => unsafe { add_avx2_blocked(black_box(&mut xv), black_box(&wv)) },
            // SAFETY (bench only): `count` is 8 only if the CPU has AVX-512F.
            6 => unsafe { add_avx512(black_box(&mut xv), black_box(&wv)) },
            // SAFETY (bench only): as above.
            _ => unsafe { add_avx512_peel(black_box(&mut xv), black_box(&wv)) },
        };
        let mut best = vec![Duration::MAX; count];
        for k in 0..count {
            run(k);
        }
        let iters = ((1usize << 24) / n).max(1);
        for _ in 0..15 {
            for (k, b) in best.iter_mut().enumerate() {
                *b = (*b).min(time(iters, || run(k)));
            }
        }
        let loops: Vec<(&str, ())> = names[..count].iter().map(|n| (*n, ())).collect();
        let m = best[1].as_secs_f64();
        for ((name, _), b) in loops.iter().zip(&best) {
            println!(
                "n={n:<9} {name:<18} {:>9.1} us  /memcpy {:.3}",
                b.as_secs_f64() * 1e6,
                b.as_secs_f64() / m
            );
        }
    }

    /// The AVX2 and SSE2 add loops with `w` shifted by `d` bytes against `x`.
    fn add_offsets(n: usize) {
        let mut xv: Vec<f32> = (0..n + 4096).map(|i| (i % 1000) as f32 * 0.5).collect();
        let wv: Vec<f32> = (0..n + 4096).map(|i| (i % 7) as f32 * 1e-3).collect();
        let xo = (4096 - xv.as_ptr() as usize % 4096) % 4096 / 4;
        let wo = (4096 - wv.as_ptr() as usize % 4096) % 4096 / 4;
        let iters = ((1usize << 24) / n).max(1);
        for dx in [0usize, 48, 16, 4048] {
            for dw in [0usize, 48, 16, 4048] {
                let x = &mut xv[xo + dx / 4..xo + dx / 4 + n];
                let w = &wv[wo + dw / 4..wo + dw / 4 + n];
                let (mut s, mut a) = (Duration::MAX, Duration::MAX);
                for _ in 0..9 {
                    s = s.min(time(iters, || add_body(black_box(&mut *x), black_box(w))));
                    // SAFETY (bench only): `run` checked the CPU has AVX2.
                    a = a.min(time(iters, || unsafe {
                        add_avx2(black_box(&mut *x), black_box(w))
                    }));
                }
                println!(
                    "n={n} x+{dx:<5} w+{dw:<5} sse2 {:>8.1} us  avx2 {:>8.1} us",
                    s.as_secs_f64() * 1e6,
                    a.as_secs_f64() * 1e6
                );
            }
        }
    }

    /// `add_body` in blocks of 16 elements (one cache line), prefetching `x`
    /// and `w` `D` bytes ahead.
    #[inline(always)]
    fn add_prefetch<const D: usize>(x: &mut [f32], w: &[f32]) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let w = &w[..x.len()];
        let mut xc = x.chunks_exact_mut(16);
        let mut wc = w.chunks_exact(16);
        for (a, b) in (&mut xc).zip(&mut wc) {
            // SAFETY (bench only): a prefetch never faults, whatever the address.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(a.as_ptr().wrapping_byte_add(D) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().wrapping_byte_add(D) as *const i8);
            }
            for (p, q) in a.iter_mut().zip(b) {
                *p += *q;
            }
        }
        for (p, q) in xc.into_remainder().iter_mut().zip(wc.remainder()) {
            *p += *q;
        }
    }

    #[target_feature(enable = "avx2")]
    fn add_avx2_pf<const D: usize>(x: &mut [f32], w: &[f32]) {
        add_prefetch::<D>(x, w)
    }

    /// The prefetch variants against the plain loops at `n` elements.
    fn add_prefetches(n: usize) {
        let mut x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
        let w: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 1e-3).collect();
        let iters = ((1usize << 24) / n).max(1);
        let names = [
            "sse2",
            "avx2",
            "sse2 pf512",
            "sse2 pf2K",
            "avx2 pf256",
            "avx2 pf512",
            "avx2 pf1K",
            "avx2 pf2K",
            "avx2 pf4K",
        ];
        let mut best = [Duration::MAX; 9];
        for _ in 0..11 {
            for (k, b) in best.iter_mut().enumerate() {
                let (x, w) = (black_box(&mut x[..]), black_box(&w[..]));
                // SAFETY (bench only): `run` checked the CPU has AVX2.
                *b = (*b).min(time(iters, || unsafe {
                    match k {
                        0 => add_body(x, w),
                        1 => add_avx2(x, w),
                        2 => add_prefetch::<512>(x, w),
                        3 => add_prefetch::<2048>(x, w),
                        4 => add_avx2_pf::<256>(x, w),
                        5 => add_avx2_pf::<512>(x, w),
                        6 => add_avx2_pf::<1024>(x, w),
                        7 => add_avx2_pf::<2048>(x, w),
                        _ => add_avx2_pf::<4096>(x, w),
                    }
                }));
            }
        }
        for (name, b) in names.iter().zip(best) {
            println!("n={n} {name:<12} {:>8.1} us", b.as_secs_f64() * 1e6);
        }
    }

    /// Hand-written loops: `L` vectors of `x += w` per iteration, 256-bit.
    #[target_feature(enable = "avx2")]
    fn add_ymm<const L: usize>(x: &mut [f32], w: &[f32]) {
        use std::arch::x86_64::*;
        let n = x.len();
        let w = &w[..n];
        let step = 8 * L;
        let mut i = 0;
        while i + step <= n {
            // SAFETY (bench only): `i + step <= n` for both slices.
            unsafe {
                let px = x.as_mut_ptr().add(i);
                let pw = w.as_ptr().add(i);
                let mut v = [_mm256_setzero_ps(); L];
                for (k, v) in v.iter_mut().enumerate() {
                    *v = _mm256_add_ps(
                        _mm256_loadu_ps(px.add(8 * k)),
                        _mm256_loadu_ps(pw.add(8 * k)),
                    );
                }
                for (k, v) in v.iter().enumerate() {
                    _mm256_storeu_ps(px.add(8 * k), *v);
                }
            }
            i += step;
        }
        add_body(&mut x[i..], &w[i..]);
    }

    /// The same with 128-bit vectors (VEX-encoded).
    #[target_feature(enable = "avx2")]
    fn add_xmm<const L: usize>(x: &mut [f32], w: &[f32]) {
        use std::arch::x86_64::*;
        let n = x.len();
        let w = &w[..n];
        let step = 4 * L;
        let mut i = 0;
        while i + step <= n {
            // SAFETY (bench only): `i + step <= n` for both slices.
            unsafe {
                let px = x.as_mut_ptr().add(i);
                let pw = w.as_ptr().add(i);
                let mut v = [_mm_setzero_ps(); L];
                for (k, v) in v.iter_mut().enumerate() {
                    *v = _mm_add_ps(_mm_loadu_ps(px.add(4 * k)), _mm_loadu_ps(pw.add(4 * k)));
                }
                for (k, v) in v.iter().enumerate() {
                    _mm_storeu_ps(px.add(4 * k), *v);
                }
            }
            i += step;
        }
        add_body(&mut x[i..], &w[i..]);
    }

    fn add_shapes(n: usize) {
        let mut x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
        let w: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 1e-3).collect();
        let iters = ((1usize << 24) / n).max(1);
        let names = [
            "sse2 (llvm)",
            "avx2 (llvm)",
            "ymm x1",
            "ymm x2",
            "ymm x4",
            "ymm x8",
            "xmm x2",
            "xmm x4",
            "xmm x8",
            "xmm x4 nt",
            "ymm x2 nt",
        ];
        let mut best = [Duration::MAX; 11];
        for _ in 0..11 {
            for (k, b) in best.iter_mut().enumerate() {
                let (x, w) = (black_box(&mut x[..]), black_box(&w[..]));
                // SAFETY (bench only): `run` checked the CPU has AVX2.
                *b = (*b).min(time(iters, || unsafe {
                    match k {
                        0 => add_body(x, w),
                        1 => add_avx2(x, w),
                        2 => add_ymm::<1>(x, w),
                        3 => add_ymm::<2>(x, w),
                        4 => add_ymm::<4>(x, w),
                        5 => add_ymm::<8>(x, w),
                        6 => add_xmm::<2>(x, w),
                        7 => add_xmm::<4>(x, w),
                        8 => add_xmm::<8>(x, w),
                        9 => add_nt::<4, false>(x, w),
                        _ => add_nt::<2, true>(x, w),
                    }
                }));
            }
        }
        for (name, b) in names.iter().zip(best) {
            println!("n={n} {name:<12} {:>8.1} us", b.as_secs_f64() * 1e6);
        }
    }

    #[inline(always)]
    fn mul_body(x: &mut [f32], s: f32) {
        for a in x.iter_mut() {
            *a *= s;
        }
    }

    #[target_feature(enable = "avx2")]
    fn mul_avx2(x: &mut [f32], s: f32) {
        mul_body(x, s)
    }

    #[inline(always)]
    fn addc_body(x: &mut [f32], a: &[f32], b: &[f32]) {
        let (a, b) = (&a[..x.len()], &b[..x.len()]);
        for ((p, q), r) in x.iter_mut().zip(a).zip(b) {
            *p += 0.5 * *q * *r;
        }
    }

    #[target_feature(enable = "avx2")]
    fn addc_avx2(x: &mut [f32], a: &[f32], b: &[f32]) {
        addc_body(x, a, b)
    }

    /// `x *= s` (two streams) and `x += 0.5 * a * b` (four), SSE2 and AVX2.
    fn stream_counts(n: usize) {
        let mut x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
        let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 1e-3).collect();
        let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 1e-3).collect();
        let iters = ((1usize << 24) / n).max(1);
        let names = ["mul_ sse2", "mul_ avx2", "addcmul_ sse2", "addcmul_ avx2"];
        let mut best = [Duration::MAX; 4];
        for _ in 0..11 {
            for (k, t) in best.iter_mut().enumerate() {
                let (x, a, b) = (black_box(&mut x[..]), black_box(&a[..]), black_box(&b[..]));
                // SAFETY (bench only): `run` checked the CPU has AVX2.
                *t = (*t).min(time(iters, || unsafe {
                    match k {
                        0 => mul_body(x, black_box(1.0)),
                        1 => mul_avx2(x, black_box(1.0)),
                        2 => addc_body(x, a, b),
                        _ => addc_avx2(x, a, b),
                    }
                }));
            }
        }
        for (name, t) in names.iter().zip(best) {
            println!("n={n} {name:<14} {:>8.1} us", t.as_secs_f64() * 1e6);
        }
    }

    /// `x += w` with non-temporal stores of `x` (after a peel to the store
    /// width's alignment), `L` vectors per iteration; `Y`: 256-bit.
    #[target_feature(enable = "avx2")]
    fn add_nt<const L: usize, const Y: bool>(x: &mut [f32], w: &[f32]) {
        use std::arch::x86_64::*;
        let width = if Y { 8 } else { 4 };
        let n = x.len();
        let w = &w[..n];
        let h = ((width * 4 - x.as_ptr() as usize % (width * 4)) % (width * 4) / 4).min(n);
        add_body(&mut x[..h], &w[..h]);
        let step = width * L;
        let mut i = h;
        while i + step <= n {
            // SAFETY (bench only): `i + step <= n`; `x[i]` is aligned to the
            // store width (peeled above).
            unsafe {
                let px = x.as_mut_ptr().add(i);
                let pw = w.as_ptr().add(i);
                for k in 0..L {
                    if Y {
                        let v = _mm256_add_ps(
                            _mm256_load_ps(px.add(8 * k)),
                            _mm256_loadu_ps(pw.add(8 * k)),
                        );
                        _mm256_stream_ps(px.add(8 * k), v);
                    } else {
                        let v = _mm_add_ps(_mm_load_ps(px.add(4 * k)), _mm_loadu_ps(pw.add(4 * k)));
                        _mm_stream_ps(px.add(4 * k), v);
                    }
                }
            }
            i += step;
        }
        _mm_sfence();
        add_body(&mut x[i..], &w[i..]);
    }

    unsafe extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }

    /// `n` elements of a fresh buffer starting on a 2 MiB boundary, with
    /// transparent huge pages requested (`MADV_HUGEPAGE`) if `huge`.
    fn buffer_2m(n: usize, huge: bool, v: f32) -> (Vec<f32>, usize) {
        let extra = (2 << 20) / 4;
        let mut b: Vec<f32> = Vec::with_capacity(n + extra);
        let skip = ((2 << 20) - b.as_ptr() as usize % (2 << 20)) % (2 << 20) / 4;
        if huge {
            // SAFETY (bench only): the range lies inside `b`'s allocation and
            // starts on a page boundary; `madvise` only changes paging advice.
            let r = unsafe { madvise(b.as_mut_ptr().add(skip) as *mut _, n * 4, 14) };
            assert_eq!(r, 0, "madvise");
        }
        b.resize(n + extra, v);
        (b, skip)
    }

    fn add_huge(n: usize) {
        let (mut x4, sx4) = buffer_2m(n, false, 1.0);
        let (w4, sw4) = buffer_2m(n, false, 1e-3);
        let (mut xh, sxh) = buffer_2m(n, true, 1.0);
        let (wh, swh) = buffer_2m(n, true, 1e-3);
        let iters = ((1usize << 24) / n).max(1);
        let mut best = [Duration::MAX; 4];
        for _ in 0..11 {
            for (k, t) in best.iter_mut().enumerate() {
                let (x, w) = if k < 2 {
                    (&mut x4[sx4..sx4 + n], &w4[sw4..sw4 + n])
                } else {
                    (&mut xh[sxh..sxh + n], &wh[swh..swh + n])
                };
                // SAFETY (bench only): `run` checked the CPU has AVX2.
                *t = (*t).min(time(iters, || unsafe {
                    if k % 2 == 0 {
                        add_body(black_box(&mut *x), black_box(w))
                    } else {
                        add_avx2(black_box(&mut *x), black_box(w))
                    }
                }));
            }
        }
        let names = [
            "4K pages sse2",
            "4K pages avx2",
            "huge pages sse2",
            "huge pages avx2",
        ];
        for (name, t) in names.iter().zip(best) {
            println!("n={n} {name:<16} {:>8.1} us", t.as_secs_f64() * 1e6);
        }
    }
}
