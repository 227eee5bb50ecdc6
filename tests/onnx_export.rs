//! Every traced program of the test suite and the examples, exported to
//! ONNX and run in tract (a real ONNX engine), must give the values funcz
//! computed eagerly: the returned values and the new values of mutated
//! inputs (`{input}_updated` outputs).
//!
//! The conformance cases (`tests/conformance.rs`, compiled into this binary
//! too) and the example binaries are run in a child process with
//! `FUNCZ_TRACE_DUMP` set, so every trace they make is written as a
//! `TracedRun` (graph + example values); this test then exports each one
//! and checks it in tract.

#[path = "../funcz-runtime/tests/support/onnx_check.rs"]
mod onnx_check;

/// `tests/common`'s `variants!` (exported at this crate's root), in
/// textual scope for the included conformance cases.
macro_rules! variants {
    ($($t:tt)*) => { crate::variants! { $($t)* } };
}

#[path = "conformance.rs"]
mod conformance;

use std::path::{Path, PathBuf};
use std::process::Command;

use funcz::trace::{Remove, Tracer};
use funcz::{Tensor, functionalize};
use funcz_runtime::trace::TracedRun;
use onnx_check::{Check, check_run};

/// A fresh, empty directory under the system temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("funcz-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The traced runs dumped into `dir`, sorted by file name.
fn load_runs(dir: &Path) -> Vec<(String, TracedRun)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let run =
                TracedRun::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), run)
        })
        .collect()
}

/// Traces whose graph cannot reproduce the eager run, and why: the check
/// must fail for them (so this list cannot go stale).
const NOT_REPRODUCIBLE: &[(&str, &str)] = &[(
    "nested",
    "the helper mutates `y` inside funcz::trace::untraced: the mutation is not in the \
     graph, so no backend running the graph can see it",
)];

/// Exports and checks every run; returns how many were checked and agreed.
fn check_all(runs: &[(String, TracedRun)]) -> usize {
    let mut agreed = 0;
    for (file, run) in runs {
        let checked = std::panic::catch_unwind(|| check_run(run));
        let excluded = NOT_REPRODUCIBLE
            .iter()
            .find(|(n, _)| *n == run.graph.name());
        match (checked, excluded) {
            (Ok(_), None) => agreed += 1,
            (Err(e), None) => panic!("{file}: {}", panic_text(&e)),
            (Ok(_), Some((n, why))) => {
                panic!("{file}: `{n}` now agrees in tract; remove it from NOT_REPRODUCIBLE ({why})")
            }
            (Err(_), Some(_)) => {}
        }
    }
    agreed
}

fn panic_text(e: &Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn in_child() -> bool {
    std::env::var_os("FUNCZ_TRACE_DUMP").is_some()
}

#[test]
fn every_conformance_case_runs_in_tract() {
    if in_child() {
        return;
    }
    let dir = temp_dir("conformance");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["conformance::", "--test-threads=2", "-q"])
        .env("FUNCZ_TRACE_DUMP", &dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the conformance cases failed in the child run:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let runs = load_runs(&dir);
    let n = check_all(&runs);
    // Two functionalized variants per case; the suite has ~40 cases.
    assert!(n >= 60, "only {n} conformance traces were dumped");
    eprintln!("checked {n} conformance traces in tract");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The example binaries (built by `cargo test`, or built here).
fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "funcz", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(status.success(), "cannot build the example {name}");
    }
    bin
}

#[test]
fn the_examples_run_in_tract() {
    if in_child() {
        return;
    }
    let mut total = 0;
    for name in ["seed", "kv_cache", "adam"] {
        let dir = temp_dir(&format!("example-{name}"));
        let out = Command::new(example_binary(name))
            .env("FUNCZ_TRACE_DUMP", &dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "example {name} failed");
        let runs = load_runs(&dir);
        assert!(!runs.is_empty(), "example {name} traced nothing");
        total += check_all(&runs);
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(total >= 8, "{total}");
}

// ----------------------------------------------------------------- seeds

/// The seed example of `torch.func.functionalize`: mutation and view of an
/// intermediate.
fn seed_f(a: &Tensor) -> Tensor {
    let b = a + 1.0;
    let c = b.view([-1]);
    c.add_(1.0);
    b
}

#[functionalize(remove = "mutations_and_views")]
fn seed_f_fv(a: &Tensor) -> Tensor {
    let b = a + 1.0;
    let c = b.view([-1]);
    c.add_(1.0);
    b
}

/// The seed's input-mutating example.
fn seed_g(a: &Tensor) -> Tensor {
    let a_view = a.view([-1]);
    a_view.add_(1.0);
    a.clone()
}

#[functionalize(remove = "mutations_and_views")]
fn seed_g_fv(a: &Tensor) -> Tensor {
    let a_view = a.view([-1]);
    a_view.add_(1.0);
    a.clone()
}

#[test]
fn seed_examples_as_written_and_functionalized_agree_in_tract() {
    for (name, f) in [
        ("f", seed_f as fn(&Tensor) -> Tensor),
        ("f_fv", seed_f_fv),
        ("g", seed_g),
        ("g_fv", seed_g_fv),
    ] {
        let a = Tensor::from_vec(vec![0.5, -1.5], &[2]);
        let c = Check::new(name).input("a", &a).run(|| f(&a));
        let mutates = name.starts_with('g');
        assert_eq!(c.model.input_updates.len(), mutates as usize, "{name}");
        let g = &c.model.graph;
        assert!(g.is_functional() && g.is_view_free(), "{g}");
    }
}

/// The second oracle: the graph the macro produced and the graph the
/// graph-level pass produces from the unannotated code give the same
/// values in tract.
#[test]
fn macro_graph_and_graph_pass_agree_in_tract() {
    let a = Tensor::from_vec(vec![0.5, -1.5, 2.0, 4.0], &[2, 2]);
    let (_, raw) = Tracer::new("g")
        .with_examples()
        .input("a", &a)
        .run_example(|| seed_g(&a));
    let b = Tensor::from_vec(vec![0.5, -1.5, 2.0, 4.0], &[2, 2]);
    let (_, mac) = Tracer::new("g")
        .with_examples()
        .input("a", &b)
        .run_example(|| seed_g_fv(&b));
    assert!(!raw.graph.is_functional());
    let pass = raw.graph.functionalize(Remove::MutationsAndViews).unwrap();
    assert_eq!(pass.to_string(), mac.graph.to_string());
    let (c1, c2) = (check_run(&raw), check_run(&mac));
    assert_eq!(c1.model.output_names(), c2.model.output_names());
}
