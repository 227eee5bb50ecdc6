// An element of a `Vec<Tensor>` field of a struct made in the function
// (not reached from a parameter or `self`) updated in place: the field is
// not a place #[functionalize] tracks; the help moves the update into a
// function given the collection as a slice.
use funcz::{functionalize, Tensor};

pub struct Momentum {
    pub m: Vec<Tensor>,
}

#[functionalize]
fn step(p: &mut [Tensor], g: &[Tensor]) {
    let opt = Momentum {
        m: p.iter().map(|t| t.zeros_like()).collect(),
    };
    for i in 0..p.len() {
        opt.m[i].mul_(0.9).add_(&g[i]);
        p[i].sub_(&opt.m[i]);
    }
}

fn main() {}
