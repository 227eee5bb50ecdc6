// A tuple pattern binding a view of an input, then mutated: the original
// writes into `x` through `a`; #[functionalize] tracks each name of a tuple
// pattern as a tensor of its own, so it refuses and says how to bind it.
use funcz::{Tensor, functionalize};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let (a, b) = (x.narrow(0, 0, 1), x.sum());
    a.add_(&b);
    b
}

fn main() {
    let _ = f(&Tensor::zeros(&[3]));
}
