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

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs us with no
    // such flag: then do a tiny smoke run only.
    let full = std::env::args().any(|a| a == "--bench");
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
}
