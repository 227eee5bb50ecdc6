//! The seed example of `torch.func.functionalize`, reproduced with funcz:
//! the same function traced as written, with `#[functionalize]`, and with
//! `#[functionalize(remove = "mutations_and_views")]`.
//!
//! Run with `cargo run --example seed`.

use funcz::trace::Tracer;
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

fn main() {
    let inpt = Tensor::<f32>::randn(&[2], 0);
    let out1 = f(&inpt);
    let out2 = f_no_mutations(&inpt);
    println!("{}", out1.allclose(&out2, 1e-5, 1e-8));

    let (_, f_traced) = Tracer::new("forward").input("a", &inpt).run(|| f(&inpt));
    let (_, f_no_mutations_traced) = Tracer::new("forward")
        .input("a", &inpt)
        .run(|| f_no_mutations(&inpt));
    let (_, f_no_mutations_and_views_traced) = Tracer::new("forward")
        .input("a", &inpt)
        .run(|| f_no_mutations_and_views(&inpt));
    println!("\n{f_traced}");
    println!("{f_no_mutations_traced}");
    println!("{f_no_mutations_and_views_traced}");

    // All mutations and views have been removed, but there is an extra
    // copy_ in the graph to apply the mutation to the input after the
    // function has completed.
    let inpt = Tensor::<f32>::randn(&[2], 1);
    let before = inpt.to_vec();
    let (_, g_traced) = Tracer::new("forward")
        .input("a", &inpt)
        .run(|| g_no_mutations_and_views(inpt.shallow_clone()));
    println!("{g_traced}");
    let after = inpt.to_vec();
    assert!(
        before
            .iter()
            .zip(&after)
            .all(|(b, a)| (a - b - 1.0).abs() < 1e-6)
    );
}
