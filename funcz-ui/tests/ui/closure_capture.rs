use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    (0..3).for_each(|_| {
        x.add_(1.0);
    });
    x.sum()
}

fn main() {}
