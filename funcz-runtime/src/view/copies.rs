//! The `*_copy` ops: the same result as the view, in a fresh contiguous
//! tensor that shares nothing with the input (what `#[functionalize(remove
//! = "mutations_and_views")]` emits instead of views). Recorded under
//! PyTorch's aten names (`narrow_copy` → `slice_copy`, `chunk_copy` →
//! `split_copy`, `squeeze_dim_copy` → `squeeze_copy`).

use crate::args::{AsI64, IntoShape};
use crate::element::Scalar;
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::trace::{Arg, op};

use super::gather::materialize;
use super::shape;
use super::views::{int, ten};

impl<T: Scalar> Tensor<T> {
    fn copies_of(&self, layouts: Vec<Layout>) -> Vec<Tensor<T>> {
        layouts.iter().map(|l| materialize(self, l)).collect()
    }

    /// [`view`](Tensor::view) into a fresh contiguous tensor. Like PyTorch's
    /// `view_copy`, it also accepts shapes that only `reshape` could
    /// produce (the data is copied anyway).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let c = a.view_copy([-1]);
    /// assert_eq!(c.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    /// assert!(!c.same_storage(&a));
    /// ```
    #[track_caller]
    pub fn view_copy(&self, shape: impl IntoShape) -> Tensor<T> {
        let shape = shape.into_shape();
        let dims = shape::infer_size("view_copy", &shape, self.numel());
        op(
            "view_copy",
            || vec![ten(self), Arg::Ints(shape.clone())],
            || {
                let data = materialize(self, &self.layout);
                data.with_layout(Layout::contiguous(&dims))
            },
        )
    }

    /// [`t`](Tensor::t) into a fresh contiguous tensor.
    #[track_caller]
    pub fn t_copy(&self) -> Tensor<T> {
        let l = shape::t_layout("t_copy", &self.layout);
        crate::storage::check_alloc::<T>("t_copy", &l.shape);
        op("t_copy", || vec![ten(self)], || materialize(self, &l))
    }

    /// [`transpose`](Tensor::transpose) into a fresh contiguous tensor.
    #[track_caller]
    pub fn transpose_copy(&self, d0: impl AsI64, d1: impl AsI64) -> Tensor<T> {
        let (d0, d1) = (d0.as_i64(), d1.as_i64());
        let l = shape::transpose_layout("transpose_copy", &self.layout, d0, d1);
        crate::storage::check_alloc::<T>("transpose_copy", &l.shape);
        op(
            "transpose_copy",
            || vec![ten(self), int(d0), int(d1)],
            || materialize(self, &l),
        )
    }

    /// [`permute`](Tensor::permute) into a fresh contiguous tensor.
    #[track_caller]
    pub fn permute_copy(&self, dims: impl IntoShape) -> Tensor<T> {
        let dims = dims.into_shape();
        let l = shape::permute_layout("permute_copy", &self.layout, &dims);
        crate::storage::check_alloc::<T>("permute_copy", &l.shape);
        op(
            "permute_copy",
            || vec![ten(self), Arg::Ints(dims.clone())],
            || materialize(self, &l),
        )
    }

    /// [`narrow`](Tensor::narrow) into a fresh contiguous tensor; recorded
    /// as `slice_copy(self, dim, start, start+length, 1)`.
    #[track_caller]
    pub fn narrow_copy(&self, dim: impl AsI64, start: impl AsI64, length: impl AsI64) -> Tensor<T> {
        let (dim, start, length) = (dim.as_i64(), start.as_i64(), length.as_i64());
        let (d, s, e) = shape::narrow_window("narrow_copy", &self.layout, dim, start, length);
        let l = shape::window_layout("narrow_copy", &self.layout, d, s, e);
        crate::storage::check_alloc::<T>("narrow_copy", &l.shape);
        op(
            "slice_copy",
            || vec![ten(self), int(dim), int(s), int(e), int(1)],
            || materialize(self, &l),
        )
    }

    /// [`slice`](Tensor::slice) into a fresh contiguous tensor.
    #[track_caller]
    pub fn slice_copy(
        &self,
        dim: impl AsI64,
        start: impl AsI64,
        end: impl AsI64,
        step: impl AsI64,
    ) -> Tensor<T> {
        let (dim, start, end, step) = (dim.as_i64(), start.as_i64(), end.as_i64(), step.as_i64());
        let l = shape::slice_layout("slice_copy", &self.layout, dim, start, end, step);
        crate::storage::check_alloc::<T>("slice_copy", &l.shape);
        op(
            "slice_copy",
            || vec![ten(self), int(dim), int(start), int(end), int(step)],
            || materialize(self, &l),
        )
    }

    /// [`select`](Tensor::select) into a fresh contiguous tensor.
    #[track_caller]
    pub fn select_copy(&self, dim: impl AsI64, index: impl AsI64) -> Tensor<T> {
        let (dim, index) = (dim.as_i64(), index.as_i64());
        let l = shape::select_layout("select_copy", &self.layout, dim, index);
        crate::storage::check_alloc::<T>("select_copy", &l.shape);
        op(
            "select_copy",
            || vec![ten(self), int(dim), int(index)],
            || materialize(self, &l),
        )
    }

    /// [`diagonal`](Tensor::diagonal) into a fresh contiguous tensor.
    #[track_caller]
    pub fn diagonal_copy(
        &self,
        offset: impl AsI64,
        dim1: impl AsI64,
        dim2: impl AsI64,
    ) -> Tensor<T> {
        let (offset, dim1, dim2) = (offset.as_i64(), dim1.as_i64(), dim2.as_i64());
        let l = shape::diagonal_layout("diagonal_copy", &self.layout, offset, dim1, dim2);
        crate::storage::check_alloc::<T>("diagonal_copy", &l.shape);
        op(
            "diagonal_copy",
            || vec![ten(self), int(offset), int(dim1), int(dim2)],
            || materialize(self, &l),
        )
    }

    /// [`squeeze`](Tensor::squeeze) into a fresh contiguous tensor.
    #[track_caller]
    pub fn squeeze_copy(&self) -> Tensor<T> {
        let l = shape::squeeze_layout("squeeze_copy", &self.layout);
        crate::storage::check_alloc::<T>("squeeze_copy", &l.shape);
        op("squeeze_copy", || vec![ten(self)], || materialize(self, &l))
    }

    /// [`squeeze_dim`](Tensor::squeeze_dim) into a fresh contiguous tensor;
    /// recorded as `squeeze_copy(self, dim)`.
    #[track_caller]
    pub fn squeeze_dim_copy(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let l = shape::squeeze_dim_layout("squeeze_dim_copy", &self.layout, dim);
        crate::storage::check_alloc::<T>("squeeze_dim_copy", &l.shape);
        op(
            "squeeze_copy",
            || vec![ten(self), int(dim)],
            || materialize(self, &l),
        )
    }

    /// [`unsqueeze`](Tensor::unsqueeze) into a fresh contiguous tensor.
    #[track_caller]
    pub fn unsqueeze_copy(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let l = shape::unsqueeze_layout("unsqueeze_copy", &self.layout, dim);
        crate::storage::check_alloc::<T>("unsqueeze_copy", &l.shape);
        op(
            "unsqueeze_copy",
            || vec![ten(self), int(dim)],
            || materialize(self, &l),
        )
    }

    /// [`expand`](Tensor::expand) into a fresh contiguous tensor (every
    /// repeated element is stored).
    #[track_caller]
    pub fn expand_copy(&self, shape: impl IntoShape) -> Tensor<T> {
        let shape = shape.into_shape();
        let l = shape::expand_layout("expand_copy", &self.layout, &shape);
        crate::storage::check_alloc::<T>("expand_copy", &l.shape);
        op(
            "expand_copy",
            || vec![ten(self), Arg::Ints(shape.clone())],
            || materialize(self, &l),
        )
    }

    /// [`unfold`](Tensor::unfold) into a fresh contiguous tensor.
    #[track_caller]
    pub fn unfold_copy(&self, dim: impl AsI64, size: impl AsI64, step: impl AsI64) -> Tensor<T> {
        let (dim, size, step) = (dim.as_i64(), size.as_i64(), step.as_i64());
        let l = shape::unfold_layout("unfold_copy", &self.layout, dim, size, step);
        crate::storage::check_alloc::<T>("unfold_copy", &l.shape);
        op(
            "unfold_copy",
            || vec![ten(self), int(dim), int(size), int(step)],
            || materialize(self, &l),
        )
    }

    /// [`as_strided`](Tensor::as_strided) into a fresh contiguous tensor
    /// (the offset is absolute in `self`'s storage).
    #[track_caller]
    pub fn as_strided_copy(
        &self,
        size: impl IntoShape,
        stride: impl IntoShape,
        storage_offset: impl AsI64,
    ) -> Tensor<T> {
        let (size, stride, off) = (
            size.into_shape(),
            stride.into_shape(),
            storage_offset.as_i64(),
        );
        let l =
            shape::as_strided_layout("as_strided_copy", self.storage.len(), &size, &stride, off);
        crate::storage::check_alloc::<T>("as_strided_copy", &l.shape);
        op(
            "as_strided_copy",
            || {
                vec![
                    ten(self),
                    Arg::Ints(size.clone()),
                    Arg::Ints(stride.clone()),
                    int(off),
                ]
            },
            || materialize(self, &l),
        )
    }

    /// [`alias`](Tensor::alias) into a fresh contiguous tensor.
    #[track_caller]
    pub fn alias_copy(&self) -> Tensor<T> {
        op(
            "alias_copy",
            || vec![ten(self)],
            || materialize(self, &self.layout),
        )
    }

    /// [`detach`](Tensor::detach) into a fresh contiguous tensor.
    #[track_caller]
    pub fn detach_copy(&self) -> Tensor<T> {
        op(
            "detach_copy",
            || vec![ten(self)],
            || materialize(self, &self.layout),
        )
    }

    /// [`split`](Tensor::split) into fresh contiguous tensors.
    #[track_caller]
    pub fn split_copy(&self, split_size: impl AsI64, dim: impl AsI64) -> Vec<Tensor<T>> {
        let (split_size, dim) = (split_size.as_i64(), dim.as_i64());
        let ls = shape::split_layouts("split_copy", &self.layout, split_size, dim);
        op(
            "split_copy",
            || vec![ten(self), int(split_size), int(dim)],
            || self.copies_of(ls),
        )
    }

    /// [`chunk`](Tensor::chunk) into fresh contiguous tensors; recorded as
    /// `split_copy(self, ceil(size / chunks), dim)`.
    #[track_caller]
    pub fn chunk_copy(&self, chunks: impl AsI64, dim: impl AsI64) -> Vec<Tensor<T>> {
        let (chunks, dim) = (chunks.as_i64(), dim.as_i64());
        let s = shape::chunk_split_size("chunk_copy", &self.layout, chunks, dim);
        let ls = shape::chunk_layouts("chunk_copy", &self.layout, chunks, dim);
        op(
            "split_copy",
            || vec![ten(self), int(s), int(dim)],
            || self.copies_of(ls),
        )
    }

    /// [`unbind`](Tensor::unbind) into fresh contiguous tensors.
    #[track_caller]
    pub fn unbind_copy(&self, dim: impl AsI64) -> Vec<Tensor<T>> {
        let dim = dim.as_i64();
        let ls = shape::unbind_layouts("unbind_copy", &self.layout, dim);
        op(
            "unbind_copy",
            || vec![ten(self), int(dim)],
            || self.copies_of(ls),
        )
    }
}
