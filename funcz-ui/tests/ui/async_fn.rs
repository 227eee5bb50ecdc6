use funcz::{functionalize, Tensor};

#[functionalize]
async fn f(x: &Tensor) -> Tensor {
    x.add_(1.0)
}

fn main() {}
