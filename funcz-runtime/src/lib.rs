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
//!
//! Where to look:
//!
//! - [`Tensor`]: the tensor handle; its page starts with its methods by
//!   topic (creation, views, in-place ops, reductions, interop, fallible
//!   twins).
//! - [`ops`]: how ops run (broadcasting, aten names, in-place twins) and the
//!   [`Operand`] trait for right-hand sides.
//! - [`view`]: views and their functional companions (`*_copy`, scatters).
//! - [`trace`]: recording what ran as a graph.
//! - [`Error`]: what the `try_*` methods return.
//! - [`ndarray`]: the ndarray version the conversions use, re-exported so
//!   that your `ndarray` types are the same as funcz's.
//!
//! The modules hidden from these docs (`rt`, `args`, `dims`, `storage`,
//! `optable`, ...) are public because the code `#[functionalize]` generates
//! and the other funcz crates call them; they are not a stable API.

#[doc(hidden)]
pub mod args;
#[doc(hidden)]
pub mod dims;
#[doc(hidden)]
pub mod element;
mod fallible;
mod interop;
#[doc(hidden)]
pub mod layout;
pub mod ops;
/// The op table (re-exported from `funcz-optable`).
#[doc(hidden)]
pub use funcz_optable as optable;
// Hidden, so its docs are read in the source (next to expansions), where
// `#[functionalize]` in brackets is not meant as a link.
#[doc(hidden)]
#[allow(rustdoc::broken_intra_doc_links)]
pub mod rt;
#[doc(hidden)]
pub mod storage;
#[doc(hidden)]
pub mod tensor;
pub mod trace;
pub mod view;

/// The ndarray crate funcz converts from and to (see [`Tensor::from_ndarray`]
/// and [`Tensor::to_ndarray`]); use it instead of your own dependency to be
/// sure the versions agree.
pub use ndarray;

pub use args::{AsI64, IntoShape};
pub use dims::{Dims, MAX_DIMS};
pub use element::{Element, FloatElement, Scalar};
pub use fallible::{Error, Result};
pub use layout::Layout;
pub use ops::Operand;
#[doc(hidden)]
pub use storage::Storage;
pub use tensor::{Tensor, TensorId};

/// The crate's README, run as doctests so that its example cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
