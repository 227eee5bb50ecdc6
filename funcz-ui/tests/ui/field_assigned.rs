// A tracked tensor field cannot be assigned a new tensor in the body.
use funcz::{functionalize, Tensor};

pub struct State {
    pub w: Tensor,
}

#[functionalize]
fn reset(s: &mut State, g: &Tensor) {
    s.w.sub_(g);
    s.w = Tensor::zeros(&[2]);
}

fn main() {}
