use funcz::functionalize;

#[functionalize]
struct Model {
    scale: f32,
}

fn main() {
    let _ = Model { scale: 1.0 }.scale;
}
