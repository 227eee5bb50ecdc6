// Arguments that are not a comma-separated list of `key = value`.
use funcz::{functionalize, Tensor};

#[functionalize(remove "mutations_and_views")]
fn f(x: &Tensor) -> Tensor {
    x.add_(1.0);
    x.sum()
}

fn main() {}
