use funcz::{functionalize, Tensor};

#[functionalize]
fn f(x: &Tensor) -> Tensor {
    let loss = x.sum();
    println!("{:?}", x.mul_(2.0));
    (0..2).for_each(|_| {
        x.sub_(1.0);
    });
    loss
}

fn main() {}
