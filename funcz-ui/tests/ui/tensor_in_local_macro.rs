// A `macro_rules!` defined in the body that mutates a tensor of the
// function: its body is expanded where it is invoked, as written, so the
// mutation would be lost for `v` (a copy in this mode).
use funcz::{functionalize, Tensor};

#[functionalize(remove = "mutations_and_views")]
fn f(x: &Tensor) -> f32 {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 1);
    macro_rules! bump {
        () => {
            b.add_(1.0)
        };
    }
    bump!();
    v.sum().item()
}

fn main() {}
