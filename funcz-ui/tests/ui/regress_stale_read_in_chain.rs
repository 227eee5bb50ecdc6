// Found by funcz-difftest (seed 24301, program 83): the second op of a
// chain read `v2`, a view made stale by the first op; it read the old
// value. Now refused like any stale read in one statement.
use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &mut Tensor) {
    let w = x.select(0, 1);
    let v2 = x.select(0, 1).reshape([1]);
    w.view([1]).add_(1.0).copy_(&v2);
}

fn main() {}
