// A tensor the function mutates, read in a macro whose arguments are not
// expressions (`x => 2.0`): the macro cannot see into them, so `x` there
// would be the value at entry.
use funcz::{functionalize, Tensor};

macro_rules! scaled_total {
    ($t:ident => $k:expr) => {
        $t.sum().item() * $k
    };
}

#[functionalize]
fn f(x: &Tensor) -> f32 {
    let w = x.narrow(0, 0, 1);
    w.add_(1.0);
    scaled_total!(x => 2.0)
}

fn main() {}
