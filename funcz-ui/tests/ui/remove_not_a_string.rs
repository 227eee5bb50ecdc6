use funcz::{functionalize, Tensor};

#[functionalize(remove = mutations)]
fn f(x: &Tensor) -> Tensor {
    x.add_(1.0)
}

fn main() {}
