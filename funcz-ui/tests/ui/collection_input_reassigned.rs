use funcz::{functionalize, Tensor};

#[functionalize]
fn f<'a>(mut params: &'a mut [Tensor], other: &'a mut [Tensor]) {
    params[0].add_(1.0);
    params = other;
    params[0].add_(1.0);
}

fn main() {}
