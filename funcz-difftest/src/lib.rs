//! Differential testing of funcz at scale.
//!
//! `build.rs` uses [`generator`] to write random, well-formed tensor programs,
//! each three times: unannotated, `#[funcz::functionalize]`, and
//! `#[funcz::functionalize(remove = "mutations_and_views")]`. The tests in
//! `tests/shard*.rs` run every program's three variants on the same random
//! inputs with [`check_all`], which compares outputs and the final value and
//! layout of every input, and checks the functionalized traces for purity.
//!
//! Run any number of programs with any seed:
//!
//! ```text
//! FUNCZ_SEED=42 FUNCZ_PROGRAMS=5000 cargo test -p funcz-difftest --release
//! ```
//!
//! `FUNCZ_ONLY=17` (read at run time) checks program 17 alone.

pub mod generator;
pub mod helpers;

use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz::Tensor;
use funcz::trace::{Graph, Tracer};

/// One generated program, as the generated test file describes it.
pub struct Program {
    /// Its index in the run.
    pub index: usize,
    /// The run's seed (`FUNCZ_SEED`).
    pub seed: u64,
    /// The unannotated source.
    pub source: &'static str,
    /// Shapes of the tensor inputs, in order (slice elements flattened).
    pub inputs: &'static [&'static [usize]],
    /// Compare values with a tolerance (the program sums over views whose
    /// layout can differ between variants, so summation order can too).
    pub tolerant: bool,
    /// Calls helpers the macro cannot see into.
    pub opaque: bool,
    /// `(n, flag)` arguments to run it with.
    pub scalars: &'static [(usize, bool)],
    /// Runs variant `v` (0 original, 1 `mutations`, 2 `mutations_and_views`).
    pub run: fn(usize, &mut [Tensor], usize, bool) -> Vec<Tensor>,
}

const VARIANTS: [&str; 3] = [
    "original",
    "#[functionalize]",
    "#[functionalize(remove = \"mutations_and_views\")]",
];

/// The inputs of `p`: `Tensor::randn` with seeds derived from the run, the
/// program and the input's position.
pub fn inputs(p: &Program) -> Vec<Tensor> {
    p.inputs
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let seed = generator::program_seed(p.seed, p.index) ^ (k as u64 + 1).wrapping_mul(0x9E37);
            Tensor::randn(shape, seed)
        })
        .collect()
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = e.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "(non-string panic payload)".into()
    }
}

/// Exact equality, NaN equal to NaN; with `tolerant`, also values within
/// `1e-4` relative (`1e-5` absolute).
pub fn same_values(a: &Tensor, b: &Tensor, tolerant: bool) -> bool {
    if a.shape() != b.shape() {
        return false;
    }
    a.to_vec().iter().zip(b.to_vec()).all(|(&x, y)| {
        x == y
            || (x.is_nan() && y.is_nan())
            || (tolerant && (x - y).abs() <= 1e-5 + 1e-4 * x.abs().max(y.abs()))
    })
}

/// Checks one program under one `(n, flag)`; `Err` describes the first
/// divergence.
pub fn check_once(p: &Program, n: usize, flag: bool) -> Result<(), String> {
    let inputs = inputs(p);
    let mut ins0: Vec<Tensor> = inputs.iter().map(Tensor::clone).collect();
    let out0 = catch_unwind(AssertUnwindSafe(|| (p.run)(0, &mut ins0, n, flag)))
        .map_err(|e| format!("the original panicked (a generator bug): {}", panic_message(&*e)))?;
    for v in 1..=2 {
        let mut ins: Vec<Tensor> = inputs.iter().map(Tensor::clone).collect();
        let mut tracer = Tracer::new(&format!("p{}", p.index));
        for (k, t) in ins.iter().enumerate() {
            tracer = tracer.input(&format!("x{k}"), t);
        }
        let run = catch_unwind(AssertUnwindSafe(|| {
            tracer.run(|| (p.run)(v, &mut ins, n, flag))
        }));
        let (out, graph): (Vec<Tensor>, Graph) = run.map_err(|e| {
            format!("{}: panicked: {}", VARIANTS[v], panic_message(&*e))
        })?;
        let fail = |what: String| format!("{}: {what}\ngraph:\n{graph}", VARIANTS[v]);
        if out.len() != out0.len() {
            return Err(fail(format!("{} outputs, original {}", out.len(), out0.len())));
        }
        for (k, (a, b)) in out0.iter().zip(&out).enumerate() {
            if !same_values(a, b, p.tolerant) {
                return Err(fail(format!(
                    "output {k} differs\noriginal: {a:?}\nfunctionalized: {b:?}"
                )));
            }
        }
        for (k, (a, b)) in ins0.iter().zip(&ins).enumerate() {
            if !same_values(a, b, p.tolerant) {
                return Err(fail(format!(
                    "input {k} differs after the call\noriginal: {a:?}\nfunctionalized: {b:?}"
                )));
            }
            if a.strides() != b.strides() || a.storage_offset() != b.storage_offset() {
                return Err(fail(format!(
                    "input {k} layout differs after the call: original strides {:?} offset {}, \
                     functionalized strides {:?} offset {}",
                    a.strides(),
                    a.storage_offset(),
                    b.strides(),
                    b.storage_offset()
                )));
            }
        }
        let bad: Vec<&str> = graph
            .mutations_except_input_writeback()
            .iter()
            .map(|n| n.op)
            .collect();
        if !bad.is_empty() {
            return Err(fail(format!("in-place ops remain in the trace: {bad:?}")));
        }
        if v == 2 && graph.has_views() {
            return Err(fail("view ops remain in mutations_and_views mode".into()));
        }
    }
    Ok(())
}

/// Checks one program under each of its `(n, flag)` arguments.
pub fn check(p: &Program) -> Result<(), String> {
    for &(n, flag) in p.scalars {
        check_once(p, n, flag).map_err(|e| {
            format!(
                "program {} of seed {} (n = {n}, flag = {flag}) diverges.\n\
                 reproduce: FUNCZ_SEED={} FUNCZ_PROGRAMS={} FUNCZ_ONLY={} cargo test -p funcz-difftest\n\
                 {e}\nsource:\n{}",
                p.index,
                p.seed,
                p.seed,
                p.index + 1,
                p.index,
                p.source
            )
        })?;
    }
    Ok(())
}

/// Checks every program (or only `FUNCZ_ONLY`); panics listing every
/// divergent program, with the full report of the first few.
pub fn check_all(programs: &[Program]) {
    let only: Option<usize> = std::env::var("FUNCZ_ONLY").ok().and_then(|s| s.trim().parse().ok());
    // Divergences that panic are caught and reported; keep stderr quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    let mut checked = 0;
    for p in programs {
        if only.is_some_and(|i| i != p.index) {
            continue;
        }
        checked += 1;
        if let Err(e) = check(p) {
            failures.push((p.index, e));
        }
    }
    std::panic::set_hook(hook);
    if let Some(i) = only {
        assert!(checked > 0 || programs.iter().all(|p| p.index != i), "FUNCZ_ONLY={i} was not checked");
    }
    if !failures.is_empty() {
        let mut msg = String::new();
        for (_, e) in failures.iter().take(3) {
            msg.push_str(e);
            msg.push_str("\n----------------------------------------\n");
        }
        let all: Vec<usize> = failures.iter().map(|(i, _)| *i).collect();
        panic!(
            "{msg}{} of {checked} programs diverge: {all:?}",
            failures.len()
        );
    }
}
