use funcz::{functionalize, Tensor};

#[functionalize]
fn f(a: &Tensor, b: &Tensor) -> Tensor {
    let mut v = a.view([-1]);
    v = b.view([-1]);
    v.add_(1.0);
    a.sum()
}

fn main() {}
