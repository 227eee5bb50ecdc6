// A named view of a slice element, and a mutation of the slice while the
// view is in scope: the element is replaced, the view would go stale.
use funcz::{functionalize, Tensor};

#[functionalize]
fn f(d: &mut [Tensor]) -> Tensor {
    let v = d[0].t();
    d[0].add_(1.0);
    v.sum()
}

fn main() {}
