use funcz::{functionalize, Tensor};

fn replace_scaled(t: &mut Tensor) {
    *t = t.mul(10.0);
}

#[functionalize]
fn f(xs: &mut [Tensor]) {
    xs[0].add_(1.0);
    for t in xs.iter_mut().filter(|t| t.sum().item() > 0.0) {
        replace_scaled(t);
    }
}

fn main() {}
