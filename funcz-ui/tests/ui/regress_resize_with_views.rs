// `resize_` of a tensor that has views: the views address the storage as
// laid out before, which replaying them on the resized tensor would not.
use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let mut b = x.clone();
    let v = b.select(0, 1);
    b.resize_([3, 3]);
    b.fill_(1.0);
    v.sum()
}

fn main() {}
