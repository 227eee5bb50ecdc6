// A user's own warnings are not silenced by the attribute: this `mut` is
// unused in the original, and still reported.
#![deny(unused_mut)]
use funcz::{Tensor, functionalize};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let mut n = 3;
    x.add_(n as f32);
    x.clone()
}

fn main() {
    let _ = f(&Tensor::zeros(&[2]));
}
