// A reference to a tensor the function mutates, read after a later `let`
// shadows the tensor's name: the macro reads `r` as `&x` and cannot name
// the shadowed `x`.
use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> f32 {
    let r = &x;
    x.add_(1.0);
    let x: Tensor = Tensor::zeros(&[2]);
    r.sum().item() + x.sum().item()
}

fn main() {}
