// A macro this crate does not know, whose format string captures an input
// the function mutates: the capture would read the input as it was at
// entry.
use funcz::{functionalize, Tensor};

macro_rules! note {
    ($fmt:literal) => {
        format!($fmt)
    };
}

#[functionalize]
fn f(x: &Tensor) -> String {
    let v = x.narrow(0, 0, 1);
    v.add_(1.0);
    note!("{x:?}")
}

fn main() {}
