// A `&mut` borrow of a tensor bound to a second name: a helper given that
// name writes the tensor, and the view `d` (a copy in this mode) would not
// see it.
use funcz::{functionalize, Tensor};

fn bump_mut(t: &mut Tensor) {
    t.add_(1.0);
}

#[functionalize(remove = "mutations_and_views")]
fn f(x: &Tensor) -> Tensor {
    let mut c = x.add(0.0);
    let d = c.narrow(0, 1, 2);
    let e = &mut c;
    bump_mut(e);
    &d + 0.0
}

fn main() {}
