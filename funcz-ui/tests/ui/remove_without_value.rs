// `remove` without a value.
use funcz::{functionalize, Tensor};

#[functionalize(remove)]
fn f(x: &Tensor) -> Tensor {
    x.add_(1.0);
    x.sum()
}

fn main() {}
