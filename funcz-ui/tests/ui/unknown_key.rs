use funcz::{functionalize, Tensor};

#[functionalize(mode = "mutations")]
fn f(x: &Tensor) -> Tensor {
    x.add_(1.0)
}

fn main() {}
