//! The seed example of `torch.func.functionalize`, reproduced with funcz:
//! the same function traced as written, with `#[functionalize]`, and with
//! `#[functionalize(remove = "mutations_and_views")]`, then a function that
//! mutates its input.
//!
//! Run with `cargo run --example seed`. Every `check:` line is also an
//! assertion: the example panics instead of printing a false claim.

use std::fmt::Write;

use funcz::trace::{Graph, Tracer};
use funcz::{Tensor, functionalize};

/// A function that uses mutations and views, but only on intermediates.
fn f(a: &Tensor) -> Tensor {
    let b = a + 1.0;
    let c = b.view([-1]);
    c.add_(1.0);
    b
}

#[functionalize]
fn f_no_mutations(a: &Tensor) -> Tensor {
    let b = a + 1.0;
    let c = b.view([-1]);
    c.add_(1.0);
    b
}

#[functionalize(remove = "mutations_and_views")]
fn f_no_mutations_and_views(a: &Tensor) -> Tensor {
    let b = a + 1.0;
    let c = b.view([-1]);
    c.add_(1.0);
    b
}

/// A function that mutates its input through a view.
#[functionalize(remove = "mutations_and_views")]
fn g_no_mutations_and_views(a: Tensor) -> Tensor {
    let b = a.view([-1]);
    b.add_(1.0);
    a
}

/// Writes `check: {what}`, and panics if it does not hold.
fn check(out: &mut String, what: &str, holds: bool) {
    assert!(holds, "check failed: {what}");
    writeln!(out, "check: {what}").unwrap();
}

/// Writes a graph under a `// label` line.
fn show(out: &mut String, label: &str, graph: &Graph) {
    writeln!(out, "// {label}\n{graph}").unwrap();
}

fn main() {
    print!("{}", report());
}

/// Everything the example prints (a function, so that a test can check
/// that the README shows exactly this).
pub fn report() -> String {
    let mut out = String::new();
    let inpt = Tensor::<f32>::randn(&[2], 0);
    let (out1, f_traced) = Tracer::new("forward").input("a", &inpt).run(|| f(&inpt));
    let (out2, f_no_mutations_traced) = Tracer::new("forward")
        .input("a", &inpt)
        .run(|| f_no_mutations(&inpt));
    let (out3, f_no_mutations_and_views_traced) = Tracer::new("forward")
        .input("a", &inpt)
        .run(|| f_no_mutations_and_views(&inpt));

    show(&mut out, "f as written", &f_traced);
    show(&mut out, "#[functionalize]", &f_no_mutations_traced);
    show(
        &mut out,
        "#[functionalize(remove = \"mutations_and_views\")]",
        &f_no_mutations_and_views_traced,
    );

    // All mutations and views have been removed, but there is an extra
    // copy_ in the graph to apply the mutation to the input after the
    // function has completed.
    let inpt = Tensor::<f32>::randn(&[2], 1);
    let before = inpt.to_vec();
    let (_, g_traced) = Tracer::new("forward")
        .input("a", &inpt)
        .run(|| g_no_mutations_and_views(inpt.shallow_clone()));
    show(
        &mut out,
        "g: b = a.view(-1); b.add_(1); return a, with remove = \"mutations_and_views\"",
        &g_traced,
    );
    let after = inpt.to_vec();

    check(
        &mut out,
        "the three versions of f return the same values (allclose)",
        out1.allclose(&out2, 1e-5, 1e-8) && out1.allclose(&out3, 1e-5, 1e-8),
    );
    check(
        &mut out,
        "#[functionalize] ran no in-place op (add_ became add); views stay",
        !f_no_mutations_traced.has_mutations() && f_no_mutations_traced.has_views(),
    );
    check(
        &mut out,
        "remove = \"mutations_and_views\" ran no in-place op and no view",
        !f_no_mutations_and_views_traced.has_mutations()
            && !f_no_mutations_and_views_traced.has_views(),
    );
    check(
        &mut out,
        "g's only mutation is the final copy_ into its input",
        g_traced.is_functional() && g_traced.count("copy_") == 1,
    );
    check(
        &mut out,
        "that copy_ updated the caller's tensor: every element went up by 1",
        before
            .iter()
            .zip(&after)
            .all(|(b, a)| (a - b - 1.0).abs() < 1e-6),
    );
    writeln!(
        out,
        "\nShown: functionalizing f kept its outputs equal while removing its mutation \
         (and, with remove = \"mutations_and_views\", its views); g's input was still \
         updated, through a single copy_ at the end."
    )
    .unwrap();
    out
}
