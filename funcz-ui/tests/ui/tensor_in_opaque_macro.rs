// A macro this crate does not know, whose arguments are not expressions
// (`x => 1.0`), given a tensor that has a view: the macro may write `x`,
// and the view (a copy in this mode) would not see it.
use funcz::{functionalize, Tensor};

macro_rules! bump {
    ($t:ident => $k:expr) => {
        $t.add_($k)
    };
}

#[functionalize(remove = "mutations_and_views")]
fn f(x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 1);
    bump!(x => 1.0);
    &v + 0.0
}

fn main() {}
