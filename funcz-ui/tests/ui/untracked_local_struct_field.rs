// A field of a struct made in the function is not a place the macro
// tracks: an in-place op on it is refused, with a help that assigns the
// out-of-place op instead.
use funcz::{functionalize, Tensor};

pub struct Pair {
    pub a: Tensor,
    pub n: f32,
}

#[functionalize]
fn scale(x: &Tensor, y: &mut Tensor) {
    let mut s = Pair { a: x.clone(), n: 0.5 };
    s.n += 2.0;
    s.a.mul_(s.n);
    y.add_(&s.a.sum());
}

fn main() {}
