//! The view methods: each builds the result's [`Layout`](crate::Layout)
//! with [`shape`](super::shape) and returns a handle over the same storage.
//! No data is copied (except by `reshape`, `flatten` and `contiguous` when
//! the strides force a copy, exactly as PyTorch).

use crate::args::{AsI64, IntoShape};
use crate::element::Scalar;
use crate::tensor::Tensor;
use crate::trace::{Arg, op};

use super::gather::materialize;
use super::shape;

/// A recorded integer argument.
pub(super) fn int(x: impl AsI64) -> Arg {
    Arg::Int(x.as_i64())
}

/// A recorded tensor argument.
pub(super) fn ten<T: Scalar>(t: &Tensor<T>) -> Arg {
    crate::trace::ToArg::to_arg(t)
}

impl<T: Scalar> Tensor<T> {
    /// A view with a new shape (one entry may be `-1`), sharing storage.
    /// Panics, like PyTorch, when the strides do not allow it (use
    /// [`reshape`](Tensor::reshape) then).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]);
    /// let v = a.view([3, -1]);
    /// assert_eq!(v.shape(), &[3, 2]);
    /// assert!(v.same_storage(&a));
    /// ```
    #[track_caller]
    pub fn view(&self, shape: impl IntoShape) -> Tensor<T> {
        let shape = shape.into_shape();
        let l = shape::view_layout("view", &self.layout, &shape);
        op(
            "view",
            || vec![ten(self), Arg::Ints(shape.clone())],
            || self.with_layout(l),
        )
    }

    /// A view with a new shape when the strides allow it, else a contiguous
    /// copy. Recorded as `view` when it is a view and `reshape` when it
    /// copies.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]);
    /// let r = a.t().reshape([6]); // not viewable: copies
    /// assert_eq!(r.to_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    /// assert!(!r.same_storage(&a));
    /// ```
    #[track_caller]
    pub fn reshape(&self, shape: impl IntoShape) -> Tensor<T> {
        self.reshape_named("reshape", shape.into_shape())
    }

    #[track_caller]
    fn reshape_named(&self, name: &'static str, shape: Vec<i64>) -> Tensor<T> {
        match shape::reshape_layout(name, &self.layout, &shape) {
            Some(l) => op(
                "view",
                || vec![ten(self), Arg::Ints(shape.clone())],
                || self.with_layout(l),
            ),
            None => {
                let dims = shape::infer_size(name, &shape, self.numel());
                crate::storage::check_alloc::<T>(name, &dims);
                op(
                    "reshape",
                    || vec![ten(self), Arg::Ints(shape.clone())],
                    || materialize(self, &self.layout).view_into(&dims),
                )
            }
        }
    }

    /// Re-labels a fresh contiguous tensor with another shape of the same
    /// number of elements.
    fn view_into(self, shape: &[usize]) -> Tensor<T> {
        debug_assert_eq!(self.numel(), shape.iter().product::<usize>());
        self.with_layout(crate::layout::Layout::contiguous(shape))
    }

    /// All elements as one dimension (`reshape(-1)`; a 0-d tensor becomes
    /// shape `[1]`): a view when possible, else a copy. Recorded as
    /// `view(self, [-1])` or `reshape(self, [-1])`.
    #[track_caller]
    pub fn flatten(&self) -> Tensor<T> {
        self.reshape_named("flatten", vec![-1])
    }

    /// `self` (an alias sharing storage) if already contiguous, else a
    /// contiguous copy. Recorded as `contiguous`.
    #[track_caller]
    pub fn contiguous(&self) -> Tensor<T> {
        if !self.layout.is_contiguous() {
            crate::storage::check_alloc::<T>("contiguous", self.shape());
        }
        op(
            "contiguous",
            || vec![ten(self)],
            || {
                if self.layout.is_contiguous() {
                    self.with_layout(self.layout)
                } else {
                    materialize(self, &self.layout)
                }
            },
        )
    }

    /// The transpose of a tensor of rank ≤ 2 (rank 0 and 1 are unchanged).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let t = a.t();
    /// assert_eq!((t.shape(), t.strides()), (&[3, 2][..], &[1, 3][..]));
    /// assert_eq!(t.to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn t(&self) -> Tensor<T> {
        let l = shape::t_layout("t", &self.layout);
        op("t", || vec![ten(self)], || self.with_layout(l))
    }

    /// Swaps dimensions `d0` and `d1` (negative counts from the end).
    #[track_caller]
    pub fn transpose(&self, d0: impl AsI64, d1: impl AsI64) -> Tensor<T> {
        let (d0, d1) = (d0.as_i64(), d1.as_i64());
        let l = shape::transpose_layout("transpose", &self.layout, d0, d1);
        op(
            "transpose",
            || vec![ten(self), int(d0), int(d1)],
            || self.with_layout(l),
        )
    }

    /// Reorders the dimensions: result dim `i` is input dim `dims[i]`.
    #[track_caller]
    pub fn permute(&self, dims: impl IntoShape) -> Tensor<T> {
        let dims = dims.into_shape();
        let l = shape::permute_layout("permute", &self.layout, &dims);
        op(
            "permute",
            || vec![ten(self), Arg::Ints(dims.clone())],
            || self.with_layout(l),
        )
    }

    /// `length` elements of dimension `dim` from `start` (negative counts
    /// from the end). Recorded as `slice(self, dim, start, start+length, 1)`
    /// with `start` wrapped.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec((0..12).map(|x| x as f32).collect(), &[3, 4]);
    /// let n = a.narrow(1, -3, 2);
    /// assert_eq!(n.shape(), &[3, 2]);
    /// assert_eq!(n.storage_offset(), 1);
    /// assert_eq!(n.to_vec(), vec![1.0, 2.0, 5.0, 6.0, 9.0, 10.0]);
    /// ```
    #[track_caller]
    pub fn narrow(&self, dim: impl AsI64, start: impl AsI64, length: impl AsI64) -> Tensor<T> {
        let (dim, start, length) = (dim.as_i64(), start.as_i64(), length.as_i64());
        let (d, s, e) = shape::narrow_window("narrow", &self.layout, dim, start, length);
        let l = shape::window_layout("narrow", &self.layout, d, s, e);
        op(
            "slice",
            || vec![ten(self), int(dim), int(s), int(e), int(1)],
            || self.with_layout(l),
        )
    }

    /// Python's `self[..., start:end:step, ...]` on dimension `dim`:
    /// negative bounds count from the end, out-of-range bounds are clamped,
    /// `step ≥ 1`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec((0..10).map(|x| x as f32).collect(), &[10]);
    /// assert_eq!(a.slice(0, -8, 100, 3).to_vec(), vec![2.0, 5.0, 8.0]);
    /// ```
    #[track_caller]
    pub fn slice(
        &self,
        dim: impl AsI64,
        start: impl AsI64,
        end: impl AsI64,
        step: impl AsI64,
    ) -> Tensor<T> {
        let (dim, start, end, step) = (dim.as_i64(), start.as_i64(), end.as_i64(), step.as_i64());
        let l = shape::slice_layout("slice", &self.layout, dim, start, end, step);
        op(
            "slice",
            || vec![ten(self), int(dim), int(start), int(end), int(step)],
            || self.with_layout(l),
        )
    }

    /// Index `index` of dimension `dim` (negative counts from the end);
    /// the dimension is removed.
    #[track_caller]
    pub fn select(&self, dim: impl AsI64, index: impl AsI64) -> Tensor<T> {
        let (dim, index) = (dim.as_i64(), index.as_i64());
        let l = shape::select_layout("select", &self.layout, dim, index);
        op(
            "select",
            || vec![ten(self), int(dim), int(index)],
            || self.with_layout(l),
        )
    }

    /// The diagonal of the `(dim1, dim2)` planes, `offset` above (> 0) or
    /// below (< 0) the main one, as a new last dimension. An offset past
    /// the edge gives an empty diagonal.
    #[track_caller]
    pub fn diagonal(&self, offset: impl AsI64, dim1: impl AsI64, dim2: impl AsI64) -> Tensor<T> {
        let (offset, dim1, dim2) = (offset.as_i64(), dim1.as_i64(), dim2.as_i64());
        let l = shape::diagonal_layout("diagonal", &self.layout, offset, dim1, dim2);
        op(
            "diagonal",
            || vec![ten(self), int(offset), int(dim1), int(dim2)],
            || self.with_layout(l),
        )
    }

    /// Removes every dimension of size 1.
    #[track_caller]
    pub fn squeeze(&self) -> Tensor<T> {
        let l = shape::squeeze_layout("squeeze", &self.layout);
        op("squeeze", || vec![ten(self)], || self.with_layout(l))
    }

    /// Removes dimension `dim` if its size is 1 (else a same-shape view).
    /// Recorded as `squeeze(self, dim)`.
    #[track_caller]
    pub fn squeeze_dim(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let l = shape::squeeze_dim_layout("squeeze_dim", &self.layout, dim);
        op(
            "squeeze",
            || vec![ten(self), int(dim)],
            || self.with_layout(l),
        )
    }

    /// Inserts a dimension of size 1 at `dim` (in `-(n+1)..=n`).
    #[track_caller]
    pub fn unsqueeze(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let l = shape::unsqueeze_layout("unsqueeze", &self.layout, dim);
        op(
            "unsqueeze",
            || vec![ten(self), int(dim)],
            || self.with_layout(l),
        )
    }

    /// Broadcasts to `shape` without copying (stride 0 on expanded dims);
    /// `-1` keeps an existing dimension, new dimensions go in front.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3, 1]);
    /// let e = a.expand([2, -1, 4]);
    /// assert_eq!((e.shape(), e.strides()), (&[2, 3, 4][..], &[0, 1, 0][..]));
    /// ```
    #[track_caller]
    pub fn expand(&self, shape: impl IntoShape) -> Tensor<T> {
        let shape = shape.into_shape();
        let l = shape::expand_layout("expand", &self.layout, &shape);
        crate::storage::checked_view_bytes::<T>("expand", &l.shape);
        op(
            "expand",
            || vec![ten(self), Arg::Ints(shape.clone())],
            || self.with_layout(l),
        )
    }

    /// Windows of `size` elements every `step` along `dim`, as a new last
    /// dimension (windows overlap when `step < size`).
    #[track_caller]
    pub fn unfold(&self, dim: impl AsI64, size: impl AsI64, step: impl AsI64) -> Tensor<T> {
        let (dim, size, step) = (dim.as_i64(), size.as_i64(), step.as_i64());
        let l = shape::unfold_layout("unfold", &self.layout, dim, size, step);
        crate::storage::checked_view_bytes::<T>("unfold", &l.shape);
        op(
            "unfold",
            || vec![ten(self), int(dim), int(size), int(step)],
            || self.with_layout(l),
        )
    }

    /// A view with arbitrary sizes, strides and storage offset. The offset
    /// is absolute in the storage (not relative to `self`'s offset), as in
    /// PyTorch; the view must stay inside the storage.
    #[track_caller]
    pub fn as_strided(
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
        let l = shape::as_strided_layout("as_strided", self.storage.len(), &size, &stride, off);
        crate::storage::checked_view_bytes::<T>("as_strided", &l.shape);
        op(
            "as_strided",
            || {
                vec![
                    ten(self),
                    Arg::Ints(size.clone()),
                    Arg::Ints(stride.clone()),
                    int(off),
                ]
            },
            || self.with_layout(l),
        )
    }

    /// Views of consecutive pieces of `split_size` along `dim` (the last
    /// one smaller).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec((0..5).map(|x| x as f32).collect(), &[5]);
    /// let parts = a.split(2, 0);
    /// let shapes: Vec<_> = parts.iter().map(|p| p.shape().to_vec()).collect();
    /// assert_eq!(shapes, vec![vec![2], vec![2], vec![1]]);
    /// ```
    #[track_caller]
    pub fn split(&self, split_size: impl AsI64, dim: impl AsI64) -> Vec<Tensor<T>> {
        let (split_size, dim) = (split_size.as_i64(), dim.as_i64());
        let ls = shape::split_layouts("split", &self.layout, split_size, dim);
        op(
            "split",
            || vec![ten(self), int(split_size), int(dim)],
            || ls.into_iter().map(|l| self.with_layout(l)).collect(),
        )
    }

    /// At most `chunks` views along `dim`: `split(ceil(size / chunks), dim)`,
    /// so fewer pieces may come back, as in PyTorch. Recorded as
    /// `split(self, ceil(size / chunks), dim)`.
    #[track_caller]
    pub fn chunk(&self, chunks: impl AsI64, dim: impl AsI64) -> Vec<Tensor<T>> {
        let (chunks, dim) = (chunks.as_i64(), dim.as_i64());
        let s = shape::chunk_split_size("chunk", &self.layout, chunks, dim);
        let ls = shape::chunk_layouts("chunk", &self.layout, chunks, dim);
        op(
            "split",
            || vec![ten(self), int(s), int(dim)],
            || ls.into_iter().map(|l| self.with_layout(l)).collect(),
        )
    }

    /// Every index of dimension `dim`, as views without that dimension.
    #[track_caller]
    pub fn unbind(&self, dim: impl AsI64) -> Vec<Tensor<T>> {
        let dim = dim.as_i64();
        let ls = shape::unbind_layouts("unbind", &self.layout, dim);
        op(
            "unbind",
            || vec![ten(self), int(dim)],
            || ls.into_iter().map(|l| self.with_layout(l)).collect(),
        )
    }

    /// A new handle sharing storage and layout (a different trace identity).
    #[track_caller]
    pub fn alias(&self) -> Tensor<T> {
        op(
            "alias",
            || vec![ten(self)],
            || self.with_layout(self.layout),
        )
    }

    /// Same as [`alias`](Tensor::alias) (funcz has no autograd graph to
    /// detach from); recorded as `detach`.
    #[track_caller]
    pub fn detach(&self) -> Tensor<T> {
        op(
            "detach",
            || vec![ten(self)],
            || self.with_layout(self.layout),
        )
    }
}
