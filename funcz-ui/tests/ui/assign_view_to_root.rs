// A tensor the function mutates, assigned a view of another: the original
// mutates `y` through `z` afterwards; #[functionalize] refuses it.
use funcz::{Tensor, functionalize};

#[functionalize]
fn f(x: &Tensor, y: &Tensor) -> Tensor {
    let mut z = x.clone();
    z.add_(1.0);
    z = y.narrow(0, 0, 2);
    z.mul_(3.0);
    z
}

fn main() {
    let _ = f(&Tensor::zeros(&[3]), &Tensor::zeros(&[3]));
}
