//! The scatter ops: the functional inverses of the narrowing views. Each
//! returns a fresh contiguous copy of `self` in which the elements the view
//! would see are replaced by `src`; neither input is modified.

use crate::args::{AsI64, IntoShape};
use crate::element::Element;
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::trace::{Arg, op};

use super::gather::{gather_from, scatter_into};
use super::shape;
use super::views::{int, ten};

impl<T: Element> Tensor<T> {
    /// The shared body: copy `self` contiguously, compute the view's window
    /// on that copy with `window`, check `src`'s shape and write it in.
    fn scatter_with(
        &self,
        name: &str,
        src: &Tensor<T>,
        window: impl FnOnce(&Layout) -> Layout,
    ) -> Tensor<T> {
        let base = Layout::contiguous(&self.layout.shape);
        let w = window(&base);
        if src.shape() != &w.shape[..] {
            panic!(
                "funcz: {name}: expected src to have a size equal to the slice of self: src \
                 shape {:?}, slice shape {:?} (self shape {:?})",
                src.shape(),
                &w.shape[..],
                self.shape()
            );
        }
        if w.has_internal_overlap() {
            panic!(
                "funcz: {name}: unsupported operation: more than one element of the written-to \
                 tensor refers to a single memory location (shape {:?}, strides {:?}). Please \
                 clone() the tensor before performing the operation.",
                &w.shape[..],
                &w.strides[..]
            );
        }
        // Read each input under its own short-lived guard (they may share
        // storage), then fill the fresh buffer nobody else can see.
        let mut out = {
            let guard = self.storage.read();
            gather_from(&guard, &self.layout)
        };
        let values = {
            let guard = src.storage.read();
            gather_from(&guard, &src.layout)
        };
        scatter_into(&mut out, &w, &values);
        Tensor::from_contiguous(out, &self.layout.shape)
    }

    /// A copy of `self` with `slice(dim, start, end, step)` replaced by
    /// `src` (whose shape must be the slice's).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![0.0; 6], &[6]);
    /// let s = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// let out = a.slice_scatter(&s, 0, 1, 6, 2);
    /// assert_eq!(out.to_vec(), vec![0.0, 1.0, 0.0, 2.0, 0.0, 3.0]);
    /// assert_eq!(a.to_vec(), vec![0.0; 6]);
    /// ```
    pub fn slice_scatter(
        &self,
        src: &Tensor<T>,
        dim: impl AsI64,
        start: impl AsI64,
        end: impl AsI64,
        step: impl AsI64,
    ) -> Tensor<T> {
        let (dim, start, end, step) = (dim.as_i64(), start.as_i64(), end.as_i64(), step.as_i64());
        op(
            "slice_scatter",
            || {
                vec![
                    ten(self),
                    ten(src),
                    int(dim),
                    int(start),
                    int(end),
                    int(step),
                ]
            },
            || {
                self.scatter_with("slice_scatter", src, |l| {
                    shape::slice_layout("slice_scatter", l, dim, start, end, step)
                })
            },
        )
    }

    /// A copy of `self` with `select(dim, index)` replaced by `src`.
    pub fn select_scatter(&self, src: &Tensor<T>, dim: impl AsI64, index: impl AsI64) -> Tensor<T> {
        let (dim, index) = (dim.as_i64(), index.as_i64());
        op(
            "select_scatter",
            || vec![ten(self), ten(src), int(dim), int(index)],
            || {
                self.scatter_with("select_scatter", src, |l| {
                    shape::select_layout("select_scatter", l, dim, index)
                })
            },
        )
    }

    /// A copy of `self` with `diagonal(offset, dim1, dim2)` replaced by
    /// `src`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![0.0; 4], &[2, 2]);
    /// let d = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// assert_eq!(a.diagonal_scatter(&d, 0, 0, 1).to_vec(), vec![1.0, 0.0, 0.0, 2.0]);
    /// ```
    pub fn diagonal_scatter(
        &self,
        src: &Tensor<T>,
        offset: impl AsI64,
        dim1: impl AsI64,
        dim2: impl AsI64,
    ) -> Tensor<T> {
        let (offset, dim1, dim2) = (offset.as_i64(), dim1.as_i64(), dim2.as_i64());
        op(
            "diagonal_scatter",
            || vec![ten(self), ten(src), int(offset), int(dim1), int(dim2)],
            || {
                self.scatter_with("diagonal_scatter", src, |l| {
                    shape::diagonal_layout("diagonal_scatter", l, offset, dim1, dim2)
                })
            },
        )
    }

    /// A copy of `self` with `as_strided(size, stride, storage_offset)`
    /// replaced by `src`. The offsets index the row-major copy of `self`
    /// (storage offset 0, `self.numel()` elements), as PyTorch does with
    /// its clone of a contiguous `self`. An overlapping window is refused.
    pub fn as_strided_scatter(
        &self,
        src: &Tensor<T>,
        size: impl IntoShape,
        stride: impl IntoShape,
        storage_offset: impl AsI64,
    ) -> Tensor<T> {
        let (size, stride, off) = (
            size.into_shape(),
            stride.into_shape(),
            storage_offset.as_i64(),
        );
        op(
            "as_strided_scatter",
            || {
                vec![
                    ten(self),
                    ten(src),
                    Arg::Ints(size.clone()),
                    Arg::Ints(stride.clone()),
                    int(off),
                ]
            },
            || {
                let len = self.numel();
                self.scatter_with("as_strided_scatter", src, |_| {
                    shape::as_strided_layout("as_strided_scatter", len, &size, &stride, off)
                })
            },
        )
    }
}
