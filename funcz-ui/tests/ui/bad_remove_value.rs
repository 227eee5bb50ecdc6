use funcz::{functionalize, Tensor};

#[functionalize(remove = "views")]
fn f(x: &Tensor) -> Tensor {
    x.add_(1.0)
}

fn main() {}
