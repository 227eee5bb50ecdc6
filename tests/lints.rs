//! The rewritten function carries no blanket `#[allow]`: code that is
//! warning-free without the attribute stays warning-free with it (this file
//! denies the lints the expansion could trip), and a user's own warnings
//! stay visible (funcz-ui/tests/ui/user_lints_stay_on.rs).
#![deny(
    unused_mut,
    unused_variables,
    unused_braces,
    unused_parens,
    unreachable_code,
    unused_assignments
)]

use funcz::{Tensor, functionalize};

#[functionalize]
fn bound_but_never_mutated(x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[3]);
    let y = x + &tmp;
    y.add_(1.0);
    y
}

/// Operands the lowering rewrites get parentheses spanned as the user's
/// (see tests/op_panic_location.rs): no `unused_parens` warning.
#[functionalize]
fn operands_of_operators(x: &mut Tensor, w: &Tensor) -> Tensor {
    x.add_(1.0);
    let b = x.mul(2.0);
    b.sub_(1.0);
    let y = &b + &*x;
    let z = &*x * w + &b - (&b);
    let s = (&b * 2.0).sum();
    y + z + s.item()
}

#[functionalize(remove = "mutations_and_views")]
fn view_then_meta(x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2);
    v.mul_(2.0);
    let w = x.clone();
    w.unsqueeze_(0);
    w
}

#[functionalize]
fn diverges_after_mutation(x: &Tensor, fail: bool) -> f32 {
    x.add_(1.0);
    if fail {
        panic!("asked to fail");
    }
    x.sum().item()
}

#[functionalize]
fn early_return(x: &Tensor, n: usize) -> f32 {
    x.add_(1.0);
    if n == 0 {
        return 0.0;
    }
    for _ in 0..n {
        x.mul_(2.0);
    }
    x.sum().item()
}

#[test]
fn expansions_compile_without_warnings_and_agree() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    assert_eq!(bound_but_never_mutated(&x).to_vec(), vec![3.0, 4.0, 5.0]);
    let v = view_then_meta(&x);
    assert_eq!(v.shape(), &[1, 3]);
    assert_eq!(x.to_vec(), vec![2.0, 4.0, 3.0]);
    assert_eq!(early_return(&x, 1), 2.0 * (3.0 + 5.0 + 4.0));
    assert_eq!(diverges_after_mutation(&x, false), 6.0 + 10.0 + 8.0 + 3.0);
    let r = std::panic::catch_unwind(|| diverges_after_mutation(&x, true));
    assert!(r.is_err());
    let mut x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]);
    let out = operands_of_operators(&mut x, &Tensor::ones(&[3]));
    assert_eq!(out.to_vec(), vec![37.0, 41.0, 45.0]);
    assert_eq!(x.to_vec(), vec![2.0, 3.0, 4.0]);
}

#[functionalize]
fn tail_diverges(x: &Tensor) -> f32 {
    x.add_(1.0);
    panic!("sum is {}", x.sum().item())
}

#[test]
fn a_diverging_tail_still_writes_back_before_it_panics() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]);
    let msg = std::panic::catch_unwind(|| tail_diverges(&x))
        .expect_err("panics")
        .downcast::<String>()
        .expect("a formatted message");
    assert_eq!(*msg, "sum is 5");
}

#[functionalize]
fn last_statement_loops(x: &Tensor, n: usize) {
    x.add_(1.0);
    let mut i = 0;
    loop {
        if i == n {
            return;
        }
        x.mul_(2.0);
        i += 1;
    }
}

#[test]
fn a_loop_as_last_statement_writes_back_at_its_return() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]);
    last_statement_loops(&x, 2);
    assert_eq!(x.to_vec(), vec![8.0, 12.0]);
}
