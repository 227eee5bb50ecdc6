// A mutation through a named view of a slice element cannot be written
// back into the element.
use funcz::{functionalize, Tensor};

#[functionalize]
fn f(d: &[Tensor]) {
    let v = d[0].narrow(0, 0, 1);
    v.add_(1.0);
}

fn main() {}
