//! Metadata in-place ops: they change the layout of this one handle (never
//! the data, never other aliases) and return a handle of `self`, so the
//! recorded output is the receiver.

use crate::args::{AsI64, IntoShape};
use crate::element::Scalar;
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::trace::{Arg, op};

use super::shape;
use super::views::int;

impl<T: Scalar> Tensor<T> {
    /// Records `name` with `args` and replaces this handle's layout by
    /// `layout` (computed, and checked, by the caller).
    fn relayout_(&mut self, name: &'static str, args: Vec<Arg>, layout: Layout) -> Tensor<T> {
        let id = self.id;
        op(
            name,
            move || {
                let mut all = vec![Arg::Tensor(id)];
                all.extend(args);
                all
            },
            || {
                self.layout = layout;
                self.handle()
            },
        )
    }

    /// Transposes this handle in place (rank ≤ 2).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let mut a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let b = a.alias();
    /// a.t_();
    /// assert_eq!((a.shape(), a.strides()), (&[3, 2][..], &[1, 3][..]));
    /// assert_eq!(b.shape(), &[2, 3]); // other aliases keep their layout
    /// ```
    #[track_caller]
    pub fn t_(&mut self) -> Tensor<T> {
        let l = shape::t_layout("t_", &self.layout);
        self.relayout_("t_", vec![], l)
    }

    /// Swaps dimensions `d0` and `d1` of this handle in place.
    #[track_caller]
    pub fn transpose_(&mut self, d0: impl AsI64, d1: impl AsI64) -> Tensor<T> {
        let (d0, d1) = (d0.as_i64(), d1.as_i64());
        let l = shape::transpose_layout("transpose_", &self.layout, d0, d1);
        self.relayout_("transpose_", vec![int(d0), int(d1)], l)
    }

    /// Removes every size-1 dimension of this handle in place.
    #[track_caller]
    pub fn squeeze_(&mut self) -> Tensor<T> {
        let l = shape::squeeze_layout("squeeze_", &self.layout);
        self.relayout_("squeeze_", vec![], l)
    }

    /// Removes dimension `dim` of this handle in place if its size is 1.
    /// Recorded as `squeeze_(self, dim)`.
    #[track_caller]
    pub fn squeeze_dim_(&mut self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let l = shape::squeeze_dim_layout("squeeze_dim_", &self.layout, dim);
        self.relayout_("squeeze_", vec![int(dim)], l)
    }

    /// Inserts a size-1 dimension at `dim` of this handle in place.
    #[track_caller]
    pub fn unsqueeze_(&mut self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let l = shape::unsqueeze_layout("unsqueeze_", &self.layout, dim);
        self.relayout_("unsqueeze_", vec![int(dim)], l)
    }

    /// Gives this handle an arbitrary layout in its storage (absolute
    /// offset; must stay inside the storage).
    #[track_caller]
    pub fn as_strided_(
        &mut self,
        size: impl IntoShape,
        stride: impl IntoShape,
        storage_offset: impl AsI64,
    ) -> Tensor<T> {
        let (size, stride, off) = (
            size.into_shape(),
            stride.into_shape(),
            storage_offset.as_i64(),
        );
        let args = vec![Arg::Ints(size.clone()), Arg::Ints(stride.clone()), int(off)];
        let l = shape::as_strided_layout("as_strided_", self.storage.len(), &size, &stride, off);
        crate::storage::checked_view_bytes::<T>("as_strided_", &l.shape);
        self.relayout_("as_strided_", args, l)
    }

    /// Resizes this handle to `shape` with contiguous strides at its
    /// current storage offset, as PyTorch's `resize_`. If the storage is
    /// too small it grows (new elements are zero), which every alias of the
    /// storage sees as a longer buffer; existing elements keep their values.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let mut a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// a.resize_([3, 2]);
    /// assert_eq!(a.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn resize_(&mut self, shape: impl IntoShape) -> Tensor<T> {
        let shape = shape.into_shape();
        let l = shape::resize_layout("resize_", &self.layout, &shape);
        // Grows the storage (if needed) before recording, as the op did.
        let needed = if l.numel() == 0 { 0 } else { l.storage_end() };
        if self.storage.len() < needed {
            crate::storage::check_alloc::<T>("resize_", &[needed]);
            let mut data = self.storage.write();
            if data.len() < needed {
                data.resize(needed, T::default());
            }
        }
        self.relayout_("resize_", vec![Arg::Ints(shape.clone())], l)
    }
}
