// The result of an in-place op is its receiver: storing it (or a view of
// it) in an array, then mutating the receiver, would leave the stored value
// stale in the functionalized function (it used to, silently).
use funcz::{Tensor, functionalize};

#[functionalize]
fn f(x: &Tensor, g: &Tensor) -> Tensor {
    let rows = [x.mul_(0.5).unsqueeze(0), g.abs().unsqueeze(0)];
    x.add_(1.0);
    rows[0].add(&rows[1])
}

fn main() {
    let _ = f(&Tensor::zeros(&[3]), &Tensor::zeros(&[3]));
}
