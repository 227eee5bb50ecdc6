use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    println!("{:?}", x.add_(1.0));
    x.sum()
}

fn main() {}
