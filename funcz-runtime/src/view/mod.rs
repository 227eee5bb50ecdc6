//! Views and their functional companions, with PyTorch's semantics.
//!
//! - [`shape`]: the pure layout computation of every view op
//!   (`narrow_layout`, `view_layout`, ...), public so that the
//!   functionalization runtime can recompute view chains without data;
//! - the view methods on [`Tensor`](crate::Tensor) (`view`, `reshape`,
//!   `t`, `narrow`, `slice`, `select`, `diagonal`, `expand`, `unfold`,
//!   `as_strided`, `split`, `chunk`, `unbind`, ...), which share storage;
//! - their `*_copy` forms, which return fresh contiguous tensors;
//! - the scatters (`slice_scatter`, `select_scatter`, `diagonal_scatter`,
//!   `as_strided_scatter`), the functional inverses of the narrowing views;
//! - the metadata in-place ops (`t_`, `transpose_`, `squeeze_`,
//!   `squeeze_dim_`, `unsqueeze_`, `as_strided_`, `resize_`).
//!
//! ```
//! use funcz_runtime::Tensor;
//! let a = Tensor::<f32>::from_vec((0..12).map(|x| x as f32).collect(), &[3, 4]);
//! let v = a.t().narrow(0, 1, 2).select(1, -1);
//! assert_eq!((v.shape(), v.strides(), v.storage_offset()), (&[2][..], &[1][..], 9));
//! assert_eq!(v.to_vec(), vec![9.0, 10.0]);
//! assert!(v.same_storage(&a));
//! ```

mod copies;
pub(crate) mod gather;
mod index;
mod meta_inplace;
mod scatter;
pub use index::{IndexItem, IntoIndexItem, TensorIndex};
pub(crate) use index::{Step, index_layout, steps};
pub(crate) use scatter::InPlace;
pub mod shape;
mod views;

#[cfg(test)]
mod tests;
