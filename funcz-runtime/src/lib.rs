//! # funcz-runtime
//!
//! Strided tensors over shared storage with exactly PyTorch's eager aliasing
//! semantics, op tracing, and the runtime half of `#[functionalize]`.
//!
//! ```
//! use funcz_runtime::Tensor;
//! let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
//! assert_eq!(a.shape(), &[2, 2]);
//! ```

pub mod args;
pub mod dims;
pub mod element;
pub mod layout;
pub mod ops;
/// The op table (re-exported from `funcz-optable`).
pub use funcz_optable as optable;
pub mod rt;
pub mod storage;
pub mod tensor;
pub mod trace;
pub mod view;

pub use dims::{Dims, MAX_DIMS};
pub use element::{Element, FloatElement};
pub use layout::Layout;
pub use storage::Storage;
pub use tensor::{Tensor, TensorId};
