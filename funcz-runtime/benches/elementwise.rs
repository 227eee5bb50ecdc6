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
