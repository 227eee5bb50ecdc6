// A struct whose tensor field is tracked cannot be passed on as a whole:
// the callee could read or change the field behind the tracked value.
use funcz::{functionalize, Tensor};

pub struct Cache {
    pub cache: Tensor,
}

fn peek(_c: &Cache) {}

#[functionalize]
fn append(c: &mut Cache, k: &Tensor) {
    c.cache.narrow(0, 0, 1).copy_(k);
    peek(c);
}

fn main() {}
