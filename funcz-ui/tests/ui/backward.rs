use funcz::{functionalize, Tensor};

trait Autograd {
    fn backward(&self);
}
impl Autograd for Tensor {
    fn backward(&self) {}
}

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let loss = x.mul(2.0).sum();
    loss.backward();
    loss
}

fn main() {}
