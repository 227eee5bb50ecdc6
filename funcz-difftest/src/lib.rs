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
    /// Run the untraced functionalized variants with
    /// `funcz::rt::set_min_fused(0)`, so that runs of in-place ops on
    /// small values take the fused one-pass path too (the other programs
    /// run with a threshold of 2048 elements).
    pub fuse_small: bool,
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
            let seed =
                generator::program_seed(p.seed, p.index) ^ (k as u64 + 1).wrapping_mul(0x9E37);
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

/// Compares a functionalized run's outputs and final inputs with the
/// original's; `Err` describes the first difference.
fn compare(
    p: &Program,
    out0: &[Tensor],
    ins0: &[Tensor],
    out: &[Tensor],
    ins: &[Tensor],
) -> Result<(), String> {
    if out.len() != out0.len() {
        return Err(format!("{} outputs, original {}", out.len(), out0.len()));
    }
    for (k, (a, b)) in out0.iter().zip(out).enumerate() {
        if !same_values(a, b, p.tolerant) {
            return Err(format!(
                "output {k} differs\noriginal: {a:?}\nfunctionalized: {b:?}"
            ));
        }
    }
    for (k, (a, b)) in ins0.iter().zip(ins).enumerate() {
        if !same_values(a, b, p.tolerant) {
            return Err(format!(
                "input {k} differs after the call\noriginal: {a:?}\nfunctionalized: {b:?}"
            ));
        }
        if a.strides() != b.strides() || a.storage_offset() != b.storage_offset() {
            return Err(format!(
                "input {k} layout differs after the call: original strides {:?} offset {}, \
                 functionalized strides {:?} offset {}",
                a.strides(),
                a.storage_offset(),
                b.strides(),
                b.storage_offset()
            ));
        }
    }
    Ok(())
}

/// Sets the thread's fusion threshold for its lifetime (restored on drop,
/// also when the run panics).
struct MinFused(usize);

impl MinFused {
    fn set(n: usize) -> MinFused {
        MinFused(funcz::rt::set_min_fused(n))
    }
}

impl Drop for MinFused {
    fn drop(&mut self) {
        funcz::rt::set_min_fused(self.0);
    }
}

/// The message of the runtime's (and PyTorch's) memory-overlap error.
const OVERLAP_ERROR: &str = "refer to a single memory location";

/// How many originals raised [`OVERLAP_ERROR`] (the generator makes a few
/// on purpose: [`check_all`] asserts that some did).
static OVERLAP_PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The message of an in-place op whose operands broadcast its target to a
/// bigger shape (the generator makes a few on purpose).
const BIGGER_ERROR: &str = "doesn't match the broadcast shape";

/// Checks one program under one `(n, flag)`; `Err` describes the first
/// divergence.
///
/// Each functionalized variant runs twice: traced (its trace is checked
/// for purity; the fused one-pass path never runs while tracing) and
/// untraced (where runs of in-place ops may fuse, on small values too
/// with [`Program::fuse_small`]).
pub fn check_once(p: &Program, n: usize, flag: bool) -> Result<(), String> {
    let inputs = inputs(p);
    let mut ins0: Vec<Tensor> = inputs.iter().map(Tensor::clone).collect();
    let out0 = match catch_unwind(AssertUnwindSafe(|| (p.run)(0, &mut ins0, n, flag))) {
        Ok(out) => out,
        // An in-place op made to broadcast its target bigger, or whose
        // operand partially overlaps the written tensor (`x.t().mul_(&x)`:
        // PyTorch and the runtime raise): the generator makes a few of
        // each on purpose, and every variant must panic with the same
        // message.
        Err(e)
            if [BIGGER_ERROR, OVERLAP_ERROR]
                .iter()
                .any(|m| panic_message(&*e).contains(m)) =>
        {
            if panic_message(&*e).contains(OVERLAP_ERROR) {
                OVERLAP_PANICS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            return all_panic_alike(p, &inputs, n, flag, &panic_message(&*e));
        }
        Err(e) => {
            return Err(format!(
                "the original panicked (a generator bug): {}",
                panic_message(&*e)
            ));
        }
    };
    for (v, variant) in VARIANTS.iter().enumerate().skip(1) {
        let mut ins: Vec<Tensor> = inputs.iter().map(Tensor::clone).collect();
        let mut tracer = Tracer::new(&format!("p{}", p.index));
        for (k, t) in ins.iter().enumerate() {
            tracer = tracer.input(&format!("x{k}"), t);
        }
        let run = catch_unwind(AssertUnwindSafe(|| {
            tracer.run(|| (p.run)(v, &mut ins, n, flag))
        }));
        let (out, graph): (Vec<Tensor>, Graph) =
            run.map_err(|e| format!("{}: panicked: {}", variant, panic_message(&*e)))?;
        let fail = |what: String| format!("{}: {what}\ngraph:\n{graph}", variant);
        compare(p, &out0, &ins0, &out, &ins).map_err(fail)?;
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
        // Untraced: the fused path may run.
        let mut ins: Vec<Tensor> = inputs.iter().map(Tensor::clone).collect();
        let run = catch_unwind(AssertUnwindSafe(|| {
            // (2048 otherwise: the generator makes values of that size so
            // that the fused pass runs in the other programs too.)
            let _fuse = MinFused::set(if p.fuse_small { 0 } else { 2048 });
            (p.run)(v, &mut ins, n, flag)
        }));
        let untraced = |what: String| {
            let fused = if p.fuse_small { ", min_fused 0" } else { "" };
            format!("{variant} (untraced{fused}): {what}")
        };
        let out = run.map_err(|e| untraced(format!("panicked: {}", panic_message(&*e))))?;
        compare(p, &out0, &ins0, &out, &ins).map_err(untraced)?;
    }
    Ok(())
}

/// Where the original panicked with `expected`: each functionalized
/// variant, traced and untraced, panics with the same message (its value,
/// had it gone on, would have been one the original never computes).
fn all_panic_alike(
    p: &Program,
    inputs: &[Tensor],
    n: usize,
    flag: bool,
    expected: &str,
) -> Result<(), String> {
    for (v, variant) in VARIANTS.iter().enumerate().skip(1) {
        for traced in [true, false] {
            let mut ins: Vec<Tensor> = inputs.iter().map(Tensor::clone).collect();
            let run = catch_unwind(AssertUnwindSafe(|| {
                if traced {
                    let tracer = Tracer::new(&format!("p{}", p.index));
                    drop(tracer.run(|| (p.run)(v, &mut ins, n, flag)));
                } else {
                    let _fuse = MinFused::set(if p.fuse_small { 0 } else { 2048 });
                    drop((p.run)(v, &mut ins, n, flag));
                }
            }));
            let how = if traced { "traced" } else { "untraced" };
            match run {
                Ok(()) => {
                    return Err(format!(
                        "{variant} ({how}) ran to its end where the original panicked: {expected}"
                    ));
                }
                Err(e) if !same_panic(&panic_message(&*e), expected) => {
                    return Err(format!(
                        "{variant} ({how}) panicked with {:?} where the original panicked with {expected:?}",
                        panic_message(&*e)
                    ));
                }
                Err(_) => {}
            }
        }
    }
    Ok(())
}

/// Whether two panic messages say the same: equal, or both the overlap
/// error of the same op and argument (the layouts it names can differ in
/// strides that decide nothing here: a view functionalized code made from a
/// value it laid out anew, `[3, 1, 1]` for the original's `[9, 1, 3]`).
fn same_panic(got: &str, expected: &str) -> bool {
    if got == expected {
        return true;
    }
    let head = |m: &str| -> Option<(String, String)> {
        let (before, rest) = m.split_once(" (written-to:")?;
        let arg = rest.split("argument '").nth(1)?.split('\'').next()?;
        before
            .contains(OVERLAP_ERROR)
            .then(|| (before.to_string(), arg.to_string()))
    };
    head(got).is_some() && head(got) == head(expected)
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
    let only: Option<usize> = std::env::var("FUNCZ_ONLY")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    // Divergences that panic are caught and reported; keep stderr quiet.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    let mut checked = 0;
    let fused_before = funcz::rt::fused_passes();
    let overlaps_before = OVERLAP_PANICS.load(std::sync::atomic::Ordering::Relaxed);
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
    // The untraced runs exercise the fused pass (the generator's fusion
    // runs are meant to reach it; a change that stops them would
    // otherwise go unnoticed).
    let fused = funcz::rt::fused_passes() - fused_before;
    assert!(
        only.is_some() || checked < 100 || fused > 0,
        "no fused pass ran in {checked} programs"
    );
    if let Some(i) = only {
        assert!(
            checked > 0 || programs.iter().all(|p| p.index != i),
            "FUNCZ_ONLY={i} was not checked"
        );
    }
    if !failures.is_empty() {
        let mut msg = String::new();
        for (_, e) in failures.iter().take(3) {
            msg.push_str(e);
            msg.push_str("\n----------------------------------------\n");
        }
        // One line each: the program and what diverged first.
        for (i, e) in &failures {
            let what = e.lines().nth(2).unwrap_or("");
            let what: String = what.chars().take(200).collect();
            msg.push_str(&format!("program {i}: {what}\n"));
        }
        let all: Vec<usize> = failures.iter().map(|(i, _)| *i).collect();
        panic!(
            "{msg}{} of {checked} programs diverge: {all:?}",
            failures.len()
        );
    }
    // Nor did the operands made to overlap their target on purpose stop
    // reaching an op.
    let overlaps = OVERLAP_PANICS.load(std::sync::atomic::Ordering::Relaxed) - overlaps_before;
    if std::env::var_os("FUNCZ_COUNT").is_some() {
        eprintln!("{checked} programs, {overlaps} originals raised the overlap error");
    }
    assert!(
        only.is_some() || checked < 400 || overlaps > 0,
        "no original raised the overlap error in {checked} programs"
    );
}

#[cfg(test)]
mod tests {
    use super::generator::{self, Lay, View};
    use super::*;

    fn apply(t: &Tensor, v: &View) -> Tensor {
        match v {
            View::View(s) => t.view(s.as_slice()),
            View::Reshape(s) => t.reshape(s.as_slice()),
            View::Flatten => t.flatten(),
            View::Contiguous => t.contiguous(),
            View::T => t.t(),
            View::Transpose(a, b) => t.transpose(*a, *b),
            View::Permute(p) => t.permute(p.as_slice()),
            View::Narrow(d, s, n) => t.narrow(*d, s.value, *n),
            View::Slice(d, a, b, st) => t.slice(*d, *a, *b, *st),
            View::Select(d, i) => t.select(*d, i.value),
            View::Diagonal(o, a, b) => t.diagonal(*o, *a, *b),
            View::Squeeze => t.squeeze(),
            View::SqueezeDim(d) => t.squeeze_dim(*d),
            View::Unsqueeze(d) => t.unsqueeze(*d),
            View::Expand(s) => t.expand(s.as_slice()),
            View::Unfold(d, s, st) => t.unfold(*d, *s, *st),
            View::AsStrided(s, st, o) => t.as_strided(s.as_slice(), st.as_slice(), *o as i64),
            View::Alias => t.alias(),
            View::Detach => t.detach(),
            View::ShallowClone => t.shallow_clone(),
        }
    }

    #[test]
    fn the_generators_layouts_are_the_runtimes() {
        let mut copies = 0;
        for (start, views) in generator::random_chains(7, 4000) {
            let mut t = Tensor::zeros(&start.shape);
            let mut l = start.clone();
            for v in &views {
                let (model, copied) = v.apply(&l);
                let next = apply(&t, v);
                let got = Lay {
                    shape: next.shape().to_vec(),
                    strides: next.strides().to_vec(),
                    offset: next.storage_offset(),
                };
                assert_eq!(got, model, "{}{} from {l:?}", "x", v.render());
                assert_eq!(!next.same_storage(&t), copied, "copy of {}", v.render());
                assert_eq!(
                    got.overlaps(),
                    next.layout().has_internal_overlap(),
                    "overlap of {got:?}"
                );
                copies += usize::from(copied);
                t = next;
                l = model;
            }
        }
        assert!(
            copies > 50,
            "the chains exercise copying reshapes ({copies})"
        );
    }

    fn broadcasts(from: &[usize], to: &[usize]) -> bool {
        from.len() <= to.len()
            && from
                .iter()
                .rev()
                .zip(to.iter().rev())
                .all(|(&f, &t)| f == t || f == 1)
    }

    /// Chains of views, each with its modelled final layout.
    type Chains = Vec<(Vec<View>, Lay)>;

    /// The generator's random chains of views that never copy, grouped by
    /// the shape they start from.
    fn chains_by_start() -> Vec<(Vec<usize>, Chains)> {
        let mut groups: std::collections::BTreeMap<Vec<usize>, Chains> = Default::default();
        for (start, views) in generator::random_chains(11, 6000) {
            let mut l = start.clone();
            let mut copied = false;
            for v in &views {
                let (next, c) = v.apply(&l);
                copied |= c;
                l = next;
            }
            if !copied && !views.is_empty() {
                groups.entry(start.shape).or_default().push((views, l));
            }
        }
        groups.into_iter().collect()
    }

    #[test]
    fn the_generators_overlap_model_is_the_runtimes() {
        use generator::{Overlap, overlap};
        let (mut partial, mut full, mut checked) = (0, 0, 0);
        for (shape, chains) in chains_by_start() {
            // Every chain applied to one tensor: views of one storage.
            let base = Tensor::zeros(&shape);
            let made: Vec<(Tensor, Lay)> = chains
                .iter()
                .map(|(views, l)| {
                    (
                        views.iter().fold(base.alias(), |t, v| apply(&t, v)),
                        l.clone(),
                    )
                })
                .collect();
            for (i, (dst, ld)) in made.iter().enumerate().take(12) {
                if ld.overlaps() || ld.numel() == 0 {
                    continue;
                }
                for (src, ls) in made.iter().skip(i + 1).take(12) {
                    let model = overlap(ld, ls);
                    // Elementwise ops refuse a partial overlap.
                    if broadcasts(&ls.shape, &ld.shape) {
                        let got = catch_unwind(AssertUnwindSafe(|| {
                            dst.add_(src);
                        }))
                        .is_err();
                        assert_eq!(got, model == Overlap::Partial, "{ld:?} += {ls:?}");
                        checked += 1;
                        partial += usize::from(got);
                    }
                    // Indexed ops refuse any overlap.
                    if ls.shape == ld.shape && !ld.shape.is_empty() {
                        let idx = Tensor::<i64>::zeros(&ls.shape);
                        let got = catch_unwind(AssertUnwindSafe(|| {
                            dst.scatter_(0, &idx, src);
                        }))
                        .is_err();
                        assert_eq!(
                            got,
                            matches!(model, Overlap::Partial | Overlap::Full),
                            "{ld:?}.scatter_({ls:?})"
                        );
                        checked += 1;
                        full += usize::from(model == Overlap::Full);
                    }
                }
            }
        }
        assert!(
            checked > 500 && partial > 20 && full > 20,
            "the pairs exercise the model ({checked} checked, {partial} partial, {full} full)"
        );
    }

    #[test]
    fn programs_depend_only_on_seed_and_index() {
        let a = generator::render_shard(3, 12, 4, 1);
        let b = generator::render_shard(3, 40, 4, 1);
        let first = |s: &str| s.split("fn run_").nth(1).map(str::to_string);
        assert_eq!(first(&a), first(&b));
        assert_eq!(
            generator::generate(3, 9).body,
            generator::generate(3, 9).body
        );
        assert_ne!(
            generator::generate(3, 9).body,
            generator::generate(4, 9).body
        );
        let p = generator::generate(3, 9);
        assert!(a.contains(&format!("fn p9_f({})", p.signature())));
        assert!(a.contains("#[funcz::functionalize(remove = \"mutations_and_views\")]\nfn p9_fv("));
    }

    fn lossy(v: usize, ins: &mut [Tensor], _n: usize, _flag: bool) -> Vec<Tensor> {
        // Variant 2 forgets to write its input back.
        if v != 2 {
            ins[0].add_(1.0);
        }
        vec![ins[0].sum()]
    }

    #[test]
    fn a_divergence_is_reported_with_its_reproduction() {
        let p = Program {
            index: 5,
            seed: 99,
            source: "fn p5(x0: &Tensor) { .. }",
            inputs: &[&[2]],
            tolerant: false,
            opaque: false,
            scalars: &[(1, true)],
            fuse_small: false,
            run: lossy,
        };
        let err = check(&p).expect_err("variant 2 diverges");
        assert!(
            err.contains("FUNCZ_SEED=99 FUNCZ_PROGRAMS=6 FUNCZ_ONLY=5"),
            "{err}"
        );
        assert!(err.contains("fn p5(x0: &Tensor)"), "{err}");
        // Variant 1 ran an in-place op: not a functional trace either.
        let p = Program {
            run: |v, ins, n, f| lossy(v.min(1), ins, n, f),
            ..p
        };
        let err = check(&p).expect_err("in-place op in the trace");
        assert!(err.contains("in-place ops remain in the trace"), "{err}");
    }

    #[test]
    fn nan_equals_nan_and_tolerance_is_opt_in() {
        let a = Tensor::from_vec(vec![f32::NAN, 1.0], &[2]);
        let b = Tensor::from_vec(vec![f32::NAN, 1.00001], &[2]);
        assert!(same_values(&a, &a.clone(), false));
        assert!(!same_values(&a, &b, false));
        assert!(same_values(&a, &b, true));
        assert!(!same_values(
            &a,
            &Tensor::from_vec(vec![f32::NAN, 1.0], &[1, 2]),
            true
        ));
    }
}
