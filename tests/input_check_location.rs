//! The refusal of inputs that share storage (`rt::check_inputs_disjoint`,
//! `rt::check_inputs_disjoint_of`) panics at the functionalized function
//! in the user's file, not inside funcz-runtime: the checks are
//! `#[track_caller]` down to their `panic!`. The messages stay as they were.

#[path = "support/panic_at.rs"]
mod panic_at;

use funcz::Tensor;
use panic_at::panic_of;

/// Asserts that a panic at `file:line` is in this file, between the lines
/// `start` and `end` (the function whose check panicked).
fn assert_in_this_file(file: &str, line: u32, start: u32, end: u32) {
    assert!(
        file.ends_with("input_check_location.rs") && !file.contains("funcz-runtime"),
        "the panic points at {file}:{line}, not at the functionalized function"
    );
    assert!(
        (start..=end).contains(&line),
        "the panic points at line {line}, outside the function (lines {start}-{end})"
    );
}

// Two tensors: the tuple form (`check_inputs_disjoint_of`).
const TWO_START: u32 = line!();
#[funcz::functionalize]
fn two(a: &Tensor, b: &Tensor) -> Tensor {
    a.add_(1.0);
    b.sum()
}
const TWO_END: u32 = line!();

// A collection among the inputs (the check's general path).
const MIXED_START: u32 = line!();
#[funcz::functionalize]
fn mixed(xs: &mut [Tensor], b: &Tensor) {
    for x in xs.iter_mut() {
        x.mul_(b);
    }
}
const MIXED_END: u32 = line!();

// More than 12 inputs: the slice form (`check_inputs_disjoint`).
const MANY_START: u32 = line!();
#[allow(clippy::too_many_arguments)]
#[funcz::functionalize]
fn many(
    a0: &Tensor,
    a1: &Tensor,
    a2: &Tensor,
    a3: &Tensor,
    a4: &Tensor,
    a5: &Tensor,
    a6: &Tensor,
    a7: &Tensor,
    a8: &Tensor,
    a9: &Tensor,
    a10: &Tensor,
    a11: &Tensor,
    a12: &Tensor,
) {
    a0.add_(a1);
    a0.add_(a2.add(a3).add(a4).add(a5).add(a6).add(a7));
    a0.add_(a8.add(a9).add(a10).add(a11).add(a12));
}
const MANY_END: u32 = line!();

#[test]
fn two_aliasing_inputs_panic_at_the_function() {
    let base = Tensor::from_vec(vec![0.0, 1.0, 2.0, 3.0], &[4]);
    let a = base.narrow(0, 0, 2);
    let b = base.narrow(0, 1, 2);
    let (msg, file, line) = panic_of(|| drop(two(&a, &b)));
    assert!(
        msg.contains("funcz: two: inputs `a` and `b` share storage"),
        "{msg}"
    );
    assert_in_this_file(&file, line, TWO_START, TWO_END);
    // The same storage through another handle, too.
    let (msg, file, line) = panic_of(|| drop(two(&a, &a.shallow_clone())));
    assert!(msg.contains("inputs `a` and `b` share storage"), "{msg}");
    assert_in_this_file(&file, line, TWO_START, TWO_END);
    // Disjoint inputs still run.
    let c = Tensor::from_vec(vec![5.0], &[1]);
    assert_eq!(two(&a, &c).item(), 5.0);
}

#[test]
fn a_collection_aliasing_an_input_panics_at_the_function() {
    let b = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    let mut xs = vec![Tensor::from_vec(vec![1.0, 1.0], &[2]), b.shallow_clone()];
    let (msg, file, line) = panic_of(|| mixed(&mut xs, &b));
    assert!(
        msg.contains("funcz: mixed: inputs `xs` and `b` share storage"),
        "{msg}"
    );
    assert_in_this_file(&file, line, MIXED_START, MIXED_END);
    // Two elements of the collection sharing storage.
    let mut ys = vec![b.shallow_clone(), b.narrow(0, 1, 1)];
    let c = Tensor::from_vec(vec![1.0], &[1]);
    let (msg, file, line) = panic_of(|| mixed(&mut ys, &c));
    assert!(
        msg.contains("inputs `xs[0]` and `xs[1]` share storage"),
        "{msg}"
    );
    assert_in_this_file(&file, line, MIXED_START, MIXED_END);
}

#[test]
fn thirteen_inputs_with_two_aliasing_panic_at_the_function() {
    let t: Vec<Tensor> = (0..13)
        .map(|i| Tensor::from_vec(vec![i as f32], &[1]))
        .collect();
    let last = t[3].shallow_clone();
    let (msg, file, line) = panic_of(|| {
        many(
            &t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7], &t[8], &t[9], &t[10], &t[11],
            &last,
        )
    });
    assert!(
        msg.contains("funcz: many: inputs `a3` and `a12` share storage"),
        "{msg}"
    );
    assert_in_this_file(&file, line, MANY_START, MANY_END);
    // Without the alias: the sum of 0..13 into `a0`.
    many(
        &t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7], &t[8], &t[9], &t[10], &t[11],
        &t[12],
    );
    assert_eq!(t[0].item(), 78.0);
}
