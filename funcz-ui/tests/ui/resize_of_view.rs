// `resize_` on a view that is not a variable of its own: functionalization
// cannot grow a tensor that shares its storage.
use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    x.narrow(0, 0, 2).resize_([4]);
    x.sum()
}

fn main() {}
