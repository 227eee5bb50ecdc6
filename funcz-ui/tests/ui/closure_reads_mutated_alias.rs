// A closure bound in a `let` reads a view of a tensor the function mutates
// before the closure runs: it would read a stale value (issue 11's
// `stale_closure` repro returned 1 instead of 3).
use funcz::{functionalize, Tensor};

#[functionalize]
fn stale_closure(x: &Tensor) -> f32 {
    let v = x.narrow(0, 0, 2);
    let c = || v.sum().item();
    x.add_(1.0);
    c()
}

fn main() {}
