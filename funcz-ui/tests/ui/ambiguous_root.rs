use funcz::{functionalize, Tensor};

#[functionalize]
fn f(a: &Tensor, b: &Tensor, first: bool) -> Tensor {
    let v = if first { a.view([-1]) } else { b.view([-1]) };
    v.add_(1.0);
    a.sum()
}

fn main() {}
