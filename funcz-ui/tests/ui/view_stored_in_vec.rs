// A view of a tensor the function mutates, stored in a `Vec` that is read
// after the mutation, would be stale (issue 11: original 6, functionalized 3).
use funcz::{functionalize, Tensor};

#[functionalize]
fn vec_reader(x: &Tensor, y: &Tensor) -> f32 {
    let both = vec![x.shallow_clone(), y.shallow_clone()];
    x.add_(1.0);
    both[0].sum().item()
}

fn main() {}
