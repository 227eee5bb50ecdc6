use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let mut v = x.narrow(0, 0, 2);
    v.resize_([5, 5]);
    x.sum()
}

fn main() {}
