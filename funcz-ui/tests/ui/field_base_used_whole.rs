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

// A block may bind the name again (there it is a local); after the block
// it is the parameter, and a whole use is refused as before.
#[functionalize]
fn append_after_a_shadowing_block(c: &mut Cache, k: &Tensor) {
    c.cache.narrow(0, 0, 1).copy_(k);
    {
        let c = Cache { cache: k.clone() };
        let c = c;
        peek(&c);
    }
    peek(c);
}

fn main() {}
