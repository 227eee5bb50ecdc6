// `shallow_clone` of a slice element is an alias of the element: a
// mutation through it cannot be written back (issue 11's `elem` repro used
// to lose the write silently).
use funcz::{functionalize, Tensor};

#[functionalize]
fn elem(xs: &mut [Tensor]) {
    let y: Tensor = xs[0].shallow_clone();
    y.add_(1.0);
}

fn main() {}
