// An element of a `Vec<Tensor>` field (an optimizer's state) updated in
// place: the field is not a tensor place; the help moves the update into a
// function given the collection as a slice.
use funcz::{functionalize, Tensor};

pub struct Momentum {
    pub m: Vec<Tensor>,
}

#[functionalize]
fn step(opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    for i in 0..p.len() {
        opt.m[i].mul_(0.9).add_(&g[i]);
        p[i].sub_(&opt.m[i]);
    }
}

fn main() {}
