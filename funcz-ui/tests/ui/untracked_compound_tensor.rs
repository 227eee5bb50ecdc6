// A tensor field of a parameter that the body only compound-assigns with
// a number and hands to a function by reference, as a number could be:
// the macro cannot tell it is a tensor, would leave `s.w *= 0.9` out of
// the functional graph, and so refuses it at the assignment
// (`rt::CompoundProbe`). The help (`s.w.mul_(0.9)`) is tested in
// tests/field_lists.rs (`the_help_for_an_untracked_compound_works`).
use funcz::{functionalize, Tensor};

pub struct State {
    pub w: Tensor,
    pub n: f32,
}

fn norm(t: &Tensor) -> Tensor {
    t.mul(t).sum()
}

#[functionalize]
fn decay(s: &mut State) -> Tensor {
    s.n += 1.0;
    s.w *= 0.9;
    norm(&s.w)
}


// The same through a loop variable over a list field (the help:
// `a.mul_(0.9)`).
pub struct Ema {
    pub avg: Vec<Tensor>,
}

#[functionalize]
fn decay_all(e: &mut Ema) {
    for a in e.avg.iter_mut() {
        *a *= 0.9;
    }
}

// The same through a reference to the field (the help: `s.w.mul_(0.9)`,
// tested in tests/field_lists.rs `fields_updated_through_references`).
#[functionalize]
fn decay_through_a_reference(s: &mut State) {
    let v = &mut s.w;
    *v *= 0.9;
}

fn main() {}
