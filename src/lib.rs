//! # funcz
//!
//! `torch.func.functionalize` for Rust, done at compile time. See the
//! README for the full story.
//!
//! ```
//! use funcz::Tensor;
//! let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
//! assert_eq!(a.numel(), 2);
//! ```

pub use funcz_macros::functionalize;
pub use funcz_runtime::*;
