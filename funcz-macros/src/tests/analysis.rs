//! The analysis pass computes exactly the facts code generation acts on:
//! over every `#[functionalize]` function of this workspace's tests and
//! examples (about 750, each in both modes) and the never-panic corpus, the
//! facts code generation records while generating from the analysis' facts
//! are those facts. And when they are not, strict mode says so and the
//! safety net generates the same function as from the right facts.

use quote::ToTokens;
use syn::visit::Visit;
use syn::{ItemFn, Stmt};

use crate::attr::Remove;
use crate::expand::facts_and_output;

/// Sources with annotated functions, relative to this file.
const SOURCES: &[(&str, &str)] = &[
    (
        "tests/never_miscompile.rs",
        include_str!("../../../tests/never_miscompile.rs"),
    ),
    (
        "tests/soundness.rs",
        include_str!("../../../tests/soundness.rs"),
    ),
    (
        "tests/regressions.rs",
        include_str!("../../../tests/regressions.rs"),
    ),
    (
        "tests/functionalize.rs",
        include_str!("../../../tests/functionalize.rs"),
    ),
    (
        "tests/conformance.rs",
        include_str!("../../../tests/conformance.rs"),
    ),
    (
        "tests/patterns.rs",
        include_str!("../../../tests/patterns.rs"),
    ),
    (
        "tests/donation.rs",
        include_str!("../../../tests/donation.rs"),
    ),
    ("tests/fusion.rs", include_str!("../../../tests/fusion.rs")),
    (
        "tests/indexed_ops.rs",
        include_str!("../../../tests/indexed_ops.rs"),
    ),
    (
        "tests/inplace_chains.rs",
        include_str!("../../../tests/inplace_chains.rs"),
    ),
    (
        "tests/math_ops.rs",
        include_str!("../../../tests/math_ops.rs"),
    ),
    (
        "tests/output_layout.rs",
        include_str!("../../../tests/output_layout.rs"),
    ),
    (
        "tests/ported/optim.rs",
        include_str!("../../../tests/ported/optim.rs"),
    ),
    (
        "tests/ported/functional.rs",
        include_str!("../../../tests/ported/functional.rs"),
    ),
    (
        "examples/adam.rs",
        include_str!("../../../examples/adam.rs"),
    ),
    (
        "examples/kv_cache.rs",
        include_str!("../../../examples/kv_cache.rs"),
    ),
    (
        "examples/optimizers.rs",
        include_str!("../../../examples/optimizers.rs"),
    ),
    (
        "examples/seed.rs",
        include_str!("../../../examples/seed.rs"),
    ),
];

/// Every function of `file` (free, in `impl`s, in modules, in bodies).
fn functions(file: &syn::File) -> Vec<ItemFn> {
    struct Collect(Vec<ItemFn>);
    impl<'ast> Visit<'ast> for Collect {
        fn visit_item_fn(&mut self, f: &'ast ItemFn) {
            self.0.push(f.clone());
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            if let Ok(item) = syn::parse2::<ItemFn>(f.to_token_stream()) {
                self.0.push(item);
            }
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    let mut c = Collect(Vec::new());
    c.visit_file(file);
    c.0
}

/// The mode of a `#[functionalize(..)]` attribute, if `f` has one.
fn mode_of(f: &ItemFn) -> Option<Remove> {
    let attr = f.attrs.iter().find(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "functionalize")
    })?;
    let text = attr.to_token_stream().to_string();
    Some(if text.contains("mutations_and_views") {
        Remove::MutationsAndViews
    } else {
        Remove::Mutations
    })
}

/// Checks `f` in `mode`; returns false if it was refused (not compared).
fn check(f: &ItemFn, mode: Remove, origin: &str) -> bool {
    let mut f = f.clone();
    f.attrs.retain(|a| {
        a.path()
            .segments
            .last()
            .is_none_or(|s| s.ident != "functionalize")
    });
    let (analysis, found, _, errors) = facts_and_output(&f, mode, None, true);
    assert!(
        !errors.iter().any(|e| e.contains("internal error")),
        "{origin}: `{}` ({mode:?}): {errors:?}",
        f.sig.ident
    );
    if !errors.is_empty() {
        return false;
    }
    assert!(
        analysis.same_as(&found),
        "{origin}: `{}` ({mode:?}): the analysis found {analysis:?}, code generation {found:?}",
        f.sig.ident
    );
    true
}

#[test]
fn analysis_agrees_with_code_generation_on_every_annotated_function() {
    let mut checked = 0;
    for (origin, src) in SOURCES {
        let file = syn::parse_file(src).unwrap_or_else(|e| panic!("{origin} parses: {e}"));
        for f in functions(&file) {
            let Some(mode) = mode_of(&f) else { continue };
            // In the mode it is written for, and in the other one.
            for m in [mode, other(mode)] {
                checked += usize::from(check(&f, m, origin));
            }
        }
    }
    assert!(checked > 1_400, "only {checked} functions were compared");
}

#[test]
fn analysis_agrees_with_code_generation_on_the_corpus() {
    let mut checked = 0;
    for src in super::corpus::CORPUS {
        let Ok(f) = syn::parse_str::<ItemFn>(src) else {
            continue;
        };
        for m in [Remove::Mutations, Remove::MutationsAndViews] {
            checked += usize::from(check(&f, m, "corpus"));
        }
    }
    assert!(
        checked > 50,
        "only {checked} corpus functions were compared"
    );
}

fn other(m: Remove) -> Remove {
    match m {
        Remove::Mutations => Remove::MutationsAndViews,
        Remove::MutationsAndViews => Remove::Mutations,
    }
}

const MUTATES: &str = "fn f(x: &Tensor, w: &Tensor) -> Tensor { let v = x.narrow(0, 0, 1); v.add_(w); x.t_(); x.sum() }";

#[test]
fn analysis_finds_mutations_through_views_and_layout_changes() {
    let f: ItemFn = syn::parse_str(MUTATES).expect("parses");
    let (analysis, found, _, errors) = facts_and_output(&f, Remove::Mutations, None, true);
    assert!(errors.is_empty(), "{errors:?}");
    // `x` is binding 0: mutated through `v` once, re-laid-out by `t_`.
    assert!(analysis.mutated.contains(&0), "{analysis:?}");
    assert!(analysis.meta.contains(&0), "{analysis:?}");
    assert_eq!(analysis.mutations.get(&0), Some(&1), "{analysis:?}");
    assert!(analysis.same_as(&found));
}

#[test]
fn strict_mode_reports_facts_the_analysis_missed() {
    let f: ItemFn = syn::parse_str(MUTATES).expect("parses");
    let wrong = crate::scope::Facts::default();
    let (_, _, _, errors) = facts_and_output(&f, Remove::Mutations, Some(wrong), true);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("internal error of #[functionalize]"),
        "{errors:?}"
    );
}

#[test]
fn without_strict_mode_missed_facts_generate_the_same_function() {
    let f: ItemFn = syn::parse_str(MUTATES).expect("parses");
    let wrong = crate::scope::Facts::default();
    let (_, _, right, errors) = facts_and_output(&f, Remove::Mutations, None, false);
    assert!(errors.is_empty(), "{errors:?}");
    let (_, _, recovered, errors) = facts_and_output(&f, Remove::Mutations, Some(wrong), false);
    assert!(errors.is_empty(), "{errors:?}");
    let text = |f: &ItemFn| {
        f.block
            .stmts
            .iter()
            .map(|s: &Stmt| s.to_token_stream().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(text(&right), text(&recovered));
}

/// Ordinary Rust of other crates: every function of every `.rs` file under
/// `$FUNCZ_SWEEP_DIR` (for example a crate in `~/.cargo/registry/src`),
/// expanded in both modes: the macro does not panic, and where it accepts
/// the function the analysis agrees with code generation. Not run by
/// default (the directory is the caller's):
/// `FUNCZ_SWEEP_DIR=~/.cargo/registry/src/*/ndarray-0.17.1 cargo test -p
/// funcz-macros sweep -- --ignored --nocapture`.
#[test]
#[ignore]
fn sweep_other_crates() {
    let Some(dir) = std::env::var_os("FUNCZ_SWEEP_DIR") else {
        return;
    };
    let mut dirs = vec![std::path::PathBuf::from(dir)];
    let (mut files, mut fns, mut checked) = (0, 0, 0);
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let Ok(src) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(file) = syn::parse_file(&src) else {
                continue;
            };
            files += 1;
            let origin = path.display().to_string();
            for f in functions(&file) {
                fns += 1;
                for m in [Remove::Mutations, Remove::MutationsAndViews] {
                    checked += usize::from(check(&f, m, &origin));
                }
            }
        }
    }
    println!("{files} files, {fns} functions, {checked} expansions compared");
}
