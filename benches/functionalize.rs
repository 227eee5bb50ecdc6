//! Functionalized code against the original mutating code.
//!
//! Each kernel is written once and compiled three times: unannotated (the
//! original, mutating program), `#[functionalize]` (`remove = "mutations"`,
//! column `views`) and `#[functionalize(remove = "mutations_and_views")]`
//! (column `copies`). For every kernel and size one run prints
//! - `orig`: time per call of the original,
//! - `views/orig`, `copies/orig`: time per call of each functionalized mode
//!   divided by the original's (1.00 = same speed),
//! - `allocs/call` of each variant (a counting global allocator),
//! - `copy ref`: a memory-bandwidth reference, the time of plain
//!   `copy_from_slice`s of the kernel's main data (`copy ref bytes`: one
//!   copy of the tensor the kernel mutates, or, for the KV loop, one copy
//!   of a row per step).
//!
//! Times are the minimum over samples interleaved across the variants in
//! rotating order, so that machine noise hits all of them alike. Run:
//! `cargo bench --bench functionalize` (under a minute once built; see
//! BENCHMARKS.md). `cargo test --benches` runs a tiny smoke version.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use funcz::Tensor;

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
/// `remove = "mutations_and_views"` (`$c`) versions of one body.
macro_rules! variants {
    ($o:ident, $v:ident, $c:ident; fn ($($args:tt)*) $(-> $ret:ty)? $body:block) => {
        fn $o($($args)*) $(-> $ret)? $body
        #[funcz::functionalize]
        fn $v($($args)*) $(-> $ret)? $body
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

// ---------------------------------------------------------------------------
// measurement

struct Plan {
    samples: usize,
    /// Minimum time per sample (calls are repeated to reach it).
    sample_time: Duration,
}

/// Per-call time (minimum over samples) and allocations per call of each
/// closure; samples are interleaved across closures, in rotating order.
fn measure(plan: &Plan, fs: &mut [&mut dyn FnMut()]) -> Vec<(Duration, f64)> {
    // Warm-up, and the number of calls per sample.
    let iters: Vec<u32> = fs
        .iter_mut()
        .map(|f| {
            f();
            let t = Instant::now();
            f();
            let one = t.elapsed().max(Duration::from_nanos(20));
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
            let t = Instant::now();
            for _ in 0..iters[k] {
                (fs[k])();
            }
            let dt = t.elapsed() / iters[k];
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
        &mut [&mut || {
            for _ in 0..b.reps {
                black_box(&mut *dst).copy_from_slice(black_box(&*src));
            }
        }],
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

struct Table {
    plan: Plan,
}

impl Table {
    fn header(&self) {
        println!(
            "| {:<17} | {:>9} | {:>9} | {:>10} | {:>11} | {:>19} | {:>9} | {:>16} |",
            "kernel",
            "size",
            "orig",
            "views/orig",
            "copies/orig",
            "allocs/call o/v/c",
            "copy ref",
            "copy ref bytes"
        );
        println!(
            "|{:-<19}|{:->11}|{:->11}|{:->12}|{:->13}|{:->21}|{:->11}|{:->18}|",
            "", "", "", "", "", "", "", ""
        );
    }

    /// Measures the three variants and prints one row.
    fn row(
        &self,
        kernel: &str,
        size: &str,
        bytes: Bytes,
        orig: &mut dyn FnMut(),
        views: &mut dyn FnMut(),
        copies: &mut dyn FnMut(),
    ) {
        let r = measure(&self.plan, &mut [orig, views, copies]);
        let copy = copy_time(&self.plan, bytes);
        let secs = |k: usize| r[k].0.as_secs_f64();
        println!(
            "| {:<17} | {:>9} | {:>9} | {:>10.2} | {:>11.2} | {:>19} | {:>9} | {:>16} |",
            kernel,
            size,
            fmt_time(r[0].0),
            secs(1) / secs(0),
            secs(2) / secs(0),
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

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then
    // run a tiny smoke version only.
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full {
        Plan {
            samples: 15,
            sample_time: Duration::from_millis(20),
        }
    } else {
        Plan {
            samples: 1,
            sample_time: Duration::from_micros(1),
        }
    };
    let t = Table { plan };
    println!(
        "funcz: functionalized / original time per call (f32, min of {} interleaved samples; views = \
         #[functionalize], copies = remove = \"mutations_and_views\")\n",
        t.plan.samples
    );
    t.header();

    // 10-op chains.
    let sizes: &[(usize, &str)] = if full {
        &[
            (1 << 10, "1K"),
            (1 << 16, "64K"),
            (1 << 20, "1M"),
            (1 << 24, "16M"),
        ]
    } else {
        &[(1 << 10, "1K")]
    };
    for &(n, name) in sizes {
        let x = Tensor::<f32>::randn(&[n], 1);
        let w = Tensor::<f32>::rand(&[n], 2);
        t.row(
            "chain (local)",
            name,
            once(n * 4),
            &mut || {
                black_box(chain_local(&x, &w));
            },
            &mut || {
                black_box(chain_local_v(&x, &w));
            },
            &mut || {
                black_box(chain_local_c(&x, &w));
            },
        );
    }
    for &(n, name) in sizes {
        let mut xs = [
            Tensor::<f32>::randn(&[n], 1),
            Tensor::<f32>::randn(&[n], 1),
            Tensor::<f32>::randn(&[n], 1),
        ];
        let w = Tensor::<f32>::rand(&[n], 2);
        let [x0, x1, x2] = &mut xs;
        t.row(
            "chain (input)",
            name,
            once(n * 4),
            &mut || chain_input(x0, &w),
            &mut || chain_input_v(x1, &w),
            &mut || chain_input_c(x2, &w),
        );
    }

    // Adam over four parameter tensors.
    let shapes: &[&[usize]] = if full {
        &[&[1024, 1024], &[1024], &[4096, 256], &[256]]
    } else {
        &[&[8, 8], &[8]]
    };
    let numel: usize = shapes.iter().map(|s| s.iter().product::<usize>()).sum();
    let make = |seed: u64| -> Vec<Tensor> {
        shapes
            .iter()
            .enumerate()
            .map(|(k, s)| Tensor::<f32>::randn(s, seed * 10 + k as u64))
            .collect()
    };
    let grads = make(1);
    let mut state: Vec<[Vec<Tensor>; 3]> = (0..3)
        .map(|_| [make(2), make(3).iter().map(|t| t.abs()).collect(), make(4)])
        .collect();
    let [s0, s1, s2] = &mut state[..] else {
        unreachable!()
    };
    let [p0, m0, v0] = s0;
    let [p1, m1, v1] = s1;
    let [p2, m2, v2] = s2;
    let sz = format!("{:.1}M", numel as f64 / (1 << 20) as f64);
    t.row(
        "adam (4 params)",
        &sz,
        once(numel * 4),
        &mut || adam(p0, &grads, m0, v0, 1e-3, 10),
        &mut || adam_v(p1, &grads, m1, v1, 1e-3, 10),
        &mut || adam_c(p2, &grads, m2, v2, 1e-3, 10),
    );

    // KV cache: one row of a 4096 x 4096 cache.
    let (rows, cols) = if full { (4096, 4096) } else { (16, 16) };
    let new = Tensor::<f32>::randn(&[1, cols], 5);
    let mut caches = [
        Tensor::<f32>::zeros(&[rows, cols]),
        Tensor::<f32>::zeros(&[rows, cols]),
        Tensor::<f32>::zeros(&[rows, cols]),
    ];
    let [c0, c1, c2] = &mut caches;
    let size = format!("{rows}x{cols}");
    t.row(
        "kv (input)",
        &size,
        once(cols * 4),
        &mut || kv_input(c0, &new, 7),
        &mut || kv_input_v(c1, &new, 7),
        &mut || kv_input_c(c2, &new, 7),
    );
    drop(caches);
    let steps = if full { 2048 } else { 4 };
    t.row(
        &format!("kv (local) x{steps}"),
        &format!("4096x{cols}"),
        Bytes {
            bytes: cols * 4,
            reps: steps,
        },
        &mut || {
            black_box(kv_local(&new, steps));
        },
        &mut || {
            black_box(kv_local_v(&new, steps));
        },
        &mut || {
            black_box(kv_local_c(&new, steps));
        },
    );

    // Row loops.
    let (rows, cols) = if full { (1024, 1024) } else { (8, 8) };
    let mut bs = [
        Tensor::<f32>::randn(&[rows, cols], 6),
        Tensor::<f32>::randn(&[rows, cols], 6),
        Tensor::<f32>::randn(&[rows, cols], 6),
    ];
    let size = format!("{rows}x{cols}");
    {
        let [b0, b1, b2] = &mut bs;
        t.row(
            "rows (input)",
            &size,
            once(rows * cols * 4),
            &mut || rows_input(b0, rows),
            &mut || rows_input_v(b1, rows),
            &mut || rows_input_c(b2, rows),
        );
    }
    let x = Tensor::<f32>::randn(&[rows, cols], 7);
    t.row(
        "rows (local)",
        &size,
        once(rows * cols * 4),
        &mut || {
            black_box(rows_local(&x, rows));
        },
        &mut || {
            black_box(rows_local_v(&x, rows));
        },
        &mut || {
            black_box(rows_local_c(&x, rows));
        },
    );

    // Layer norm.
    let (rows, cols) = if full { (1024, 1024) } else { (4, 8) };
    let x = Tensor::<f32>::randn(&[rows, cols], 8);
    let w = Tensor::<f32>::rand(&[cols], 9);
    let b = Tensor::<f32>::randn(&[cols], 10);
    t.row(
        "layer_norm",
        &format!("{rows}x{cols}"),
        once(rows * cols * 4),
        &mut || {
            black_box(layer_norm(&x, &w, &b));
        },
        &mut || {
            black_box(layer_norm_v(&x, &w, &b));
        },
        &mut || {
            black_box(layer_norm_c(&x, &w, &b));
        },
    );
}
