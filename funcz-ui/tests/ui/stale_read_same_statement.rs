use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let b = x.clone();
    let v = b.view([-1]);
    let w = b.t();
    v.add_(1.0).sum().add(&w.sum())
}

fn main() {}
