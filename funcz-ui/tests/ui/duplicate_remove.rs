use funcz::{functionalize, Tensor};

#[functionalize(remove = "mutations", remove = "mutations_and_views")]
fn f(x: &Tensor) -> Tensor {
    x.add_(1.0)
}

fn main() {}
