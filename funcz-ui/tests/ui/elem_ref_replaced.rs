// An element of a collection input replaced through an `iter_mut` loop
// variable: the caller's slot is handed the new tensor by index, which the
// loop does not name; the help indexes the element.
use funcz::{functionalize, Tensor};

#[functionalize]
fn reset(xs: &mut [Tensor], g: &Tensor) {
    xs[0].add_(1.0);
    for x in xs.iter_mut() {
        *x = g.mul(2.0);
    }
}

fn main() {}
