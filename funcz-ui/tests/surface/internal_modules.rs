// The runtime's implementation modules are not reachable from the facade.
fn main() {
    let _ = funcz::optable::all();
    let _ = funcz::storage::Storage::new(vec![1.0f32]);
    let _: funcz::dims::Dims;
    let _ = funcz::view::shape::t_layout;
    let _ = funcz::trace::record::op;
}
