use funcz::{functionalize, Tensor};

struct Model {
    weight: Tensor,
}

impl Model {
    #[functionalize]
    fn step(&self, grad: &Tensor) -> Tensor {
        self.weight.sub_(grad);
        grad.sum()
    }
}

fn main() {}
