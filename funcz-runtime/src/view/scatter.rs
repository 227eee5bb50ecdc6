//! The scatter ops: the functional inverses of the narrowing views. Each
//! returns a fresh contiguous copy of `self` in which the elements the view
//! would see are replaced by `src`; neither input is modified.
//!
//! The `*_in_place` forms (crate-internal, used by the functionalization
//! runtime) compute the same value for a base whose buffer nobody else can
//! observe by writing only the window into that buffer: O(size of the
//! view), not O(size of the base). They are recorded as the same
//! functional op with a fresh output.

use std::sync::Arc;

use crate::args::{AsI64, IntoShape};
use crate::element::Scalar;
use crate::layout::Layout;
use crate::tensor::{Tensor, TensorId, fresh_id};
use crate::trace::{Arg, Outputs, op};

use super::gather::{gather_from, scatter_into};
use super::shape;
use super::views::{int, ten};

impl<T: Scalar> Tensor<T> {
    /// The layout of `self`'s row-major copy (the base the copying
    /// scatters compute their window on).
    fn scatter_base(&self) -> Layout {
        Layout::contiguous(&self.layout.shape)
    }

    /// The checks of the copying scatters: `src`'s shape must be the
    /// window's and the window must not overlap itself.
    #[track_caller]
    fn check_scatter(&self, name: &str, src: &Tensor<T>, w: &Layout) {
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
    }

    /// The shared body: copy `self` contiguously and write `src` into the
    /// (checked) window `w` of the copy.
    fn scatter_with(&self, src: &Tensor<T>, w: Layout) -> Tensor<T> {
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

    /// The in-place form of [`scatter_with`](Self::scatter_with): if nobody
    /// but `self` (and `src`, when `src` already is exactly the window of
    /// `self`'s buffer) holds `self`'s storage, and `self` is row-major from
    /// offset 0 (so its window is the one the copying form computes on its
    /// row-major copy), writes `src` into the window of the
    /// buffer, records `name` with a fresh output identity and makes `self`
    /// that output. Returns false (touching nothing) otherwise, or when the
    /// arguments are bad (the copying form then reports the error).
    ///
    /// `is_window(base, src)`, if given, must say exactly whether `src`
    /// reaches the elements of `window(base)` in order (a cheaper test than
    /// building the window, for the common views).
    ///
    /// `how` says which other handles cannot observe the buffer and whether
    /// `src` is known to be the window (see [`InPlace`]).
    fn scatter_in_place(
        &mut self,
        name: &'static str,
        args: impl FnOnce() -> Vec<Arg>,
        src: &Tensor<T>,
        window: impl FnOnce(&Layout) -> Layout,
        is_window: Option<&WindowTest<'_>>,
        how: InPlace,
    ) -> bool {
        // (Weak handles never read the elements: see `crate::ops::overlap`.)
        if !self.layout.is_contiguous() || self.layout.offset != 0 {
            return false;
        }
        let in_window = match Arc::strong_count(&self.storage) - how.caller {
            1 => false,
            2 if src.same_storage(self) => true,
            _ => return false,
        };
        let w = if in_window {
            // `src` already is the window: nothing moves (and `src` was
            // written in place, so the window does not overlap itself).
            let check = || match is_window {
                Some(f) => f(&self.layout, &src.layout),
                None => src.layout.same_elements(&window(&self.layout)),
            };
            let ok = if how.known_window {
                debug_assert!(check(), "{name}: the known window is not the view's");
                true
            } else {
                check()
            };
            if !ok {
                return false;
            }
            None
        } else {
            let w = window(&self.layout);
            if !src.shape().iter().eq(w.shape.iter()) || w.has_internal_overlap() {
                return false;
            }
            Some(w)
        };
        let Renamed(id) = op(name, args, || {
            if let Some(w) = w.filter(|w| w.numel() > 0) {
                // Nobody else can observe the storage; a caller's handle
                // is borrowed by the running function.
                let mut d = self.storage.write_unversioned();
                let s = src.storage.read();
                if src.layout.is_contiguous() {
                    let o = src.layout.offset;
                    scatter_into(&mut d, &w, &s[o..o + w.numel()]);
                } else {
                    scatter_into(&mut d, &w, &gather_from(&s, &src.layout));
                }
            }
            // Same buffer, fresh identity: the result is a new value.
            Renamed(fresh_id())
        });
        self.id = id;
        true
    }

    /// [`slice_scatter`](Self::slice_scatter) written into `self`'s own
    /// buffer when nobody else can observe it (see `scatter_in_place`).
    pub(crate) fn slice_scatter_in_place(
        &mut self,
        src: &Tensor<T>,
        dim: i64,
        start: i64,
        end: i64,
        step: i64,
        how: InPlace,
    ) -> bool {
        let id = self.id;
        self.scatter_in_place(
            "slice_scatter",
            || {
                vec![
                    Arg::Tensor(id),
                    ten(src),
                    int(dim),
                    int(start),
                    int(end),
                    int(step),
                ]
            },
            src,
            |l| shape::slice_layout("slice_scatter", l, dim, start, end, step),
            Some(&|b: &Layout, p: &Layout| {
                let d = shape::wrap_dim("slice_scatter", dim, b.ndim(), &b.shape);
                let (s, e) = shape::slice_bounds("slice_scatter", b.shape[d], start, end, step);
                let n = (e - s).div_ceil(step as usize);
                window_is(
                    b,
                    p,
                    d,
                    Some(n),
                    b.strides[d].saturating_mul(step as usize),
                    s,
                )
            }),
            how,
        )
    }

    /// [`select_scatter`](Self::select_scatter) in place (see
    /// `scatter_in_place`).
    pub(crate) fn select_scatter_in_place(
        &mut self,
        src: &Tensor<T>,
        dim: i64,
        index: i64,
        how: InPlace,
    ) -> bool {
        let id = self.id;
        self.scatter_in_place(
            "select_scatter",
            || vec![Arg::Tensor(id), ten(src), int(dim), int(index)],
            src,
            |l| shape::select_layout("select_scatter", l, dim, index),
            Some(&|b: &Layout, p: &Layout| {
                let (d, i) = shape::select_index("select_scatter", b, dim, index);
                window_is(b, p, d, None, 0, i)
            }),
            how,
        )
    }

    /// [`diagonal_scatter`](Self::diagonal_scatter) in place (see
    /// `scatter_in_place`).
    pub(crate) fn diagonal_scatter_in_place(
        &mut self,
        src: &Tensor<T>,
        offset: i64,
        dim1: i64,
        dim2: i64,
        how: InPlace,
    ) -> bool {
        let id = self.id;
        self.scatter_in_place(
            "diagonal_scatter",
            || vec![Arg::Tensor(id), ten(src), int(offset), int(dim1), int(dim2)],
            src,
            |l| shape::diagonal_layout("diagonal_scatter", l, offset, dim1, dim2),
            None,
            how,
        )
    }

    /// [`as_strided_scatter`](Self::as_strided_scatter) in place (see
    /// `scatter_in_place`).
    pub(crate) fn as_strided_scatter_in_place(
        &mut self,
        src: &Tensor<T>,
        size: &[i64],
        stride: &[i64],
        storage_offset: i64,
        how: InPlace,
    ) -> bool {
        let id = self.id;
        let len = self.numel();
        self.scatter_in_place(
            "as_strided_scatter",
            || {
                vec![
                    Arg::Tensor(id),
                    ten(src),
                    Arg::Ints(size.to_vec()),
                    Arg::Ints(stride.to_vec()),
                    int(storage_offset),
                ]
            },
            src,
            |_| shape::as_strided_layout("as_strided_scatter", len, size, stride, storage_offset),
            None,
            how,
        )
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
    #[track_caller]
    pub fn slice_scatter(
        &self,
        src: &Tensor<T>,
        dim: impl AsI64,
        start: impl AsI64,
        end: impl AsI64,
        step: impl AsI64,
    ) -> Tensor<T> {
        let (dim, start, end, step) = (dim.as_i64(), start.as_i64(), end.as_i64(), step.as_i64());
        let w = shape::slice_layout("slice_scatter", &self.scatter_base(), dim, start, end, step);
        self.check_scatter("slice_scatter", src, &w);
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
            || self.scatter_with(src, w),
        )
    }

    /// A copy of `self` with `select(dim, index)` replaced by `src`.
    #[track_caller]
    pub fn select_scatter(&self, src: &Tensor<T>, dim: impl AsI64, index: impl AsI64) -> Tensor<T> {
        let (dim, index) = (dim.as_i64(), index.as_i64());
        let w = shape::select_layout("select_scatter", &self.scatter_base(), dim, index);
        self.check_scatter("select_scatter", src, &w);
        op(
            "select_scatter",
            || vec![ten(self), ten(src), int(dim), int(index)],
            || self.scatter_with(src, w),
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
    #[track_caller]
    pub fn diagonal_scatter(
        &self,
        src: &Tensor<T>,
        offset: impl AsI64,
        dim1: impl AsI64,
        dim2: impl AsI64,
    ) -> Tensor<T> {
        let (offset, dim1, dim2) = (offset.as_i64(), dim1.as_i64(), dim2.as_i64());
        let w =
            shape::diagonal_layout("diagonal_scatter", &self.scatter_base(), offset, dim1, dim2);
        self.check_scatter("diagonal_scatter", src, &w);
        op(
            "diagonal_scatter",
            || vec![ten(self), ten(src), int(offset), int(dim1), int(dim2)],
            || self.scatter_with(src, w),
        )
    }

    /// A copy of `self` with `as_strided(size, stride, storage_offset)`
    /// replaced by `src`. The offsets index the row-major copy of `self`
    /// (storage offset 0, `self.numel()` elements), as PyTorch does with
    /// its clone of a contiguous `self`. An overlapping window is refused.
    #[track_caller]
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
        let w = shape::as_strided_layout("as_strided_scatter", self.numel(), &size, &stride, off);
        self.check_scatter("as_strided_scatter", src, &w);
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
            || self.scatter_with(src, w),
        )
    }
}

/// What an in-place scatter may assume (see `scatter_in_place`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InPlace {
    /// 0 or 1: a further handle to the base's buffer that cannot observe it
    /// until the functionalized function returns (the caller's tensor, when
    /// the base is the value of a mutated input that still holds the
    /// caller's buffer; see `rt::Tracked::input`).
    pub(crate) caller: usize,
    /// A `src` that shares the base's buffer is known to be exactly the
    /// scatter's window (the view this scatter inverts, made from the base
    /// as it is now), so the check is skipped (kept as a debug assertion).
    pub(crate) known_window: bool,
}

/// `is_window(base, src)`: whether `src` is exactly a scatter's window of
/// `base` (see `scatter_in_place`).
type WindowTest<'a> = dyn Fn(&Layout, &Layout) -> bool + 'a;

/// The fresh identity an in-place scatter gives its base (the op's output).
struct Renamed(TensorId);

impl Outputs for Renamed {
    fn output_ids(&self) -> Vec<TensorId> {
        vec![self.0]
    }
}

/// True if `p` reaches the elements of the window of `b` that keeps
/// dimension `d` with `len` entries of stride `stride` from index `start`
/// (a slice), or drops it at index `start` (a select, `len` is `None`):
/// the same test as [`Layout::same_elements`] against that window, without building
/// it.
fn window_is(
    b: &Layout,
    p: &Layout,
    d: usize,
    len: Option<usize>,
    stride: usize,
    start: usize,
) -> bool {
    let mut k = 0;
    let mut numel = 1;
    for i in 0..b.ndim() {
        let (n, s) = if i == d {
            match len {
                Some(n) => (n, stride),
                None => continue,
            }
        } else {
            (b.shape[i], b.strides[i])
        };
        if k >= p.ndim() || p.shape[k] != n || (n > 1 && p.strides[k] != s) {
            return false;
        }
        numel *= n;
        k += 1;
    }
    k == p.ndim() && (numel == 0 || p.offset == b.offset + start * b.strides[d])
}
