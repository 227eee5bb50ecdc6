//! Calls the methods of the `indexed` rows of the op table (see `optable.rs`).

use super::Out;
use funcz_runtime::Tensor;

/// Calls the method `name` on `x` (a 2×2 f32 tensor) with valid arguments,
/// or `None` when `name` is not a row of this group.
pub fn call(name: &str, x: &mut Tensor) -> Option<Out> {
    let _ = x;
    #[allow(clippy::match_single_binding)]
    match name {
        _ => None::<Out>,
    }
}
