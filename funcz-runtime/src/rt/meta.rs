//! One view application with its captured arguments (PyTorch's `ViewMeta`):
//! how to replay it on a new base, and how to write a mutated view back.

use crate::args::{AsI64, IntoShape};
use crate::element::Scalar;
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::trace::untraced;

use super::Mode;

/// One view op and its arguments, captured once when the view is made.
///
/// ```
/// use funcz_runtime::rt::{Mode, ViewMeta};
/// use funcz_runtime::Tensor;
/// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
/// let row = ViewMeta::select(0, 1).forward(&x, Mode::Copies);
/// assert_eq!(row.to_vec(), vec![3.0, 4.0]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum ViewMeta {
    /// `view(shape)` (also `reshape`/`flatten` when they were views).
    View(Vec<i64>),
    /// `t()`.
    T,
    /// `transpose(d0, d1)`.
    Transpose(i64, i64),
    /// `permute(dims)`.
    Permute(Vec<i64>),
    /// `narrow(dim, start, length)`.
    Narrow(i64, i64, i64),
    /// `slice(dim, start, end, step)`.
    Slice(i64, i64, i64, i64),
    /// `select(dim, index)`.
    Select(i64, i64),
    /// `diagonal(offset, dim1, dim2)`.
    Diagonal(i64, i64, i64),
    /// `squeeze()`.
    Squeeze,
    /// `squeeze_dim(dim)`.
    SqueezeDim(i64),
    /// `squeeze_dims(dims)`.
    SqueezeDims(Vec<i64>),
    /// `unsqueeze(dim)`.
    Unsqueeze(i64),
    /// `expand(shape)`.
    Expand(Vec<i64>),
    /// `unfold(dim, size, step)`.
    Unfold(i64, i64, i64),
    /// `as_strided(size, stride, storage_offset)`.
    AsStrided(Vec<i64>, Vec<i64>, i64),
    /// `alias()`.
    Alias,
    /// `detach()`.
    Detach,
    /// `reshape(shape)`: a view or a copy, decided from the original layout.
    Reshape(Vec<i64>),
    /// `flatten()`: a view or a copy, decided from the original layout.
    Flatten,
    /// `contiguous()`: the tensor itself or a copy.
    Contiguous,
    /// `i(index)`: range indexing, the chain of `select`/`slice` views it
    /// is (written back through the composed scatters).
    I(Vec<crate::view::IndexItem>),
}

/// A multi-output view (`split`, `chunk`, `unbind`); output `k` replays as a
/// single `slice`/`select` (PyTorch's single-output view replay).
#[derive(Clone, Debug, PartialEq)]
pub enum MultiMeta {
    /// `split(split_size, dim)`.
    Split(i64, i64),
    /// `chunk(chunks, dim)`.
    Chunk(i64, i64),
    /// `unbind(dim)`.
    Unbind(i64),
}

impl ViewMeta {
    /// Captures `view(shape)`.
    pub fn view(shape: impl IntoShape) -> Self {
        ViewMeta::View(shape.into_shape())
    }
    /// Captures `reshape(shape)`.
    pub fn reshape(shape: impl IntoShape) -> Self {
        ViewMeta::Reshape(shape.into_shape())
    }
    /// Captures `flatten()`.
    pub fn flatten() -> Self {
        ViewMeta::Flatten
    }
    /// Captures `contiguous()`.
    pub fn contiguous() -> Self {
        ViewMeta::Contiguous
    }
    /// Captures `t()`.
    pub fn t() -> Self {
        ViewMeta::T
    }
    /// Captures `transpose(d0, d1)`.
    pub fn transpose(d0: impl AsI64, d1: impl AsI64) -> Self {
        ViewMeta::Transpose(d0.as_i64(), d1.as_i64())
    }
    /// Captures `permute(dims)`.
    pub fn permute(dims: impl IntoShape) -> Self {
        ViewMeta::Permute(dims.into_shape())
    }
    /// Captures `narrow(dim, start, length)`.
    pub fn narrow(dim: impl AsI64, start: impl AsI64, length: impl AsI64) -> Self {
        ViewMeta::Narrow(dim.as_i64(), start.as_i64(), length.as_i64())
    }
    /// Captures `slice(dim, start, end, step)`.
    pub fn slice(dim: impl AsI64, start: impl AsI64, end: impl AsI64, step: impl AsI64) -> Self {
        ViewMeta::Slice(dim.as_i64(), start.as_i64(), end.as_i64(), step.as_i64())
    }
    /// Captures `select(dim, index)`.
    pub fn select(dim: impl AsI64, index: impl AsI64) -> Self {
        ViewMeta::Select(dim.as_i64(), index.as_i64())
    }
    /// Captures `diagonal(offset, dim1, dim2)`.
    pub fn diagonal(offset: impl AsI64, dim1: impl AsI64, dim2: impl AsI64) -> Self {
        ViewMeta::Diagonal(offset.as_i64(), dim1.as_i64(), dim2.as_i64())
    }
    /// Captures `squeeze()`.
    pub fn squeeze() -> Self {
        ViewMeta::Squeeze
    }
    /// Captures `squeeze_dim(dim)`.
    pub fn squeeze_dim(dim: impl AsI64) -> Self {
        ViewMeta::SqueezeDim(dim.as_i64())
    }
    /// Captures `squeeze_dims(dims)`.
    pub fn squeeze_dims(dims: impl IntoShape) -> Self {
        ViewMeta::SqueezeDims(dims.into_shape())
    }
    /// Captures `unsqueeze(dim)`.
    pub fn unsqueeze(dim: impl AsI64) -> Self {
        ViewMeta::Unsqueeze(dim.as_i64())
    }
    /// Captures `expand(shape)`.
    pub fn expand(shape: impl IntoShape) -> Self {
        ViewMeta::Expand(shape.into_shape())
    }
    /// Captures `unfold(dim, size, step)`.
    pub fn unfold(dim: impl AsI64, size: impl AsI64, step: impl AsI64) -> Self {
        ViewMeta::Unfold(dim.as_i64(), size.as_i64(), step.as_i64())
    }
    /// Captures `as_strided(size, stride, storage_offset)`.
    pub fn as_strided(
        size: impl IntoShape,
        stride: impl IntoShape,
        storage_offset: impl AsI64,
    ) -> Self {
        ViewMeta::AsStrided(
            size.into_shape(),
            stride.into_shape(),
            storage_offset.as_i64(),
        )
    }
    /// Captures `shallow_clone()` (an alias of the same tensor).
    pub fn shallow_clone() -> Self {
        ViewMeta::Alias
    }
    /// Captures `alias()`.
    pub fn alias() -> Self {
        ViewMeta::Alias
    }
    /// Captures `detach()`.
    pub fn detach() -> Self {
        ViewMeta::Detach
    }
    /// Captures `i(index)` (see [`Tensor::i`]).
    ///
    /// ```
    /// use funcz_runtime::rt::{Mode, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let m = ViewMeta::i((.., 1));
    /// let col = m.forward(&x, Mode::Copies);
    /// assert_eq!(col.to_vec(), vec![2.0, 4.0]);
    /// let back = m.reverse(&x, col.mul(10.0), Mode::Copies);
    /// assert_eq!(back.to_vec(), vec![1.0, 20.0, 3.0, 40.0]);
    /// ```
    pub fn i(index: impl crate::view::TensorIndex) -> Self {
        ViewMeta::I(index.items())
    }

    /// True if this view can make a layout whose elements do not overlap
    /// into one that does (`expand`, `as_strided`, `unfold`); every other
    /// view keeps non-overlapping layouts non-overlapping.
    pub fn may_create_overlap(&self) -> bool {
        matches!(
            self,
            ViewMeta::Expand(_) | ViewMeta::AsStrided(..) | ViewMeta::Unfold(..)
        )
    }

    /// True for the views whose inverse is a scatter into a window of the
    /// base and that keep a non-overlapping base non-overlapping (`narrow`,
    /// `slice`, `select`, `diagonal`).
    pub fn is_window(&self) -> bool {
        matches!(
            self,
            ViewMeta::Narrow(..)
                | ViewMeta::Slice(..)
                | ViewMeta::Select(..)
                | ViewMeta::Diagonal(..)
        )
    }

    /// True for `reshape`/`flatten`/`contiguous`, which alias only when the
    /// strides allow it.
    pub fn is_maybe_view(&self) -> bool {
        matches!(
            self,
            ViewMeta::Reshape(_) | ViewMeta::Flatten | ViewMeta::Contiguous
        )
    }

    /// The layout this view has when applied to a tensor laid out as `l`
    /// (no data is touched; panics exactly where the view op would).
    pub fn apply_layout(&self, l: &Layout) -> Layout {
        use crate::view::shape as sh;
        use ViewMeta::*;
        match self {
            View(s) | Reshape(s) => sh::view_layout("view", l, s),
            Flatten => sh::view_layout("flatten", l, &[-1]),
            T => sh::t_layout("t", l),
            Transpose(a, b) => sh::transpose_layout("transpose", l, *a, *b),
            Permute(d) => sh::permute_layout("permute", l, d),
            Narrow(d, st, n) => sh::narrow_layout("narrow", l, *d, *st, *n),
            Slice(d, a, b, st) => sh::slice_layout("slice", l, *d, *a, *b, *st),
            Select(d, i) => sh::select_layout("select", l, *d, *i),
            Diagonal(o, a, b) => sh::diagonal_layout("diagonal", l, *o, *a, *b),
            Squeeze => sh::squeeze_layout("squeeze", l),
            SqueezeDim(d) => sh::squeeze_dim_layout("squeeze", l, *d),
            SqueezeDims(ds) => {
                // One dim at a time, the highest first (the others keep
                // their positions).
                let mut l = *l;
                for d in descending_dims(ds, l.ndim()) {
                    l = sh::squeeze_dim_layout("squeeze", &l, d as i64);
                }
                l
            }
            Unsqueeze(d) => sh::unsqueeze_layout("unsqueeze", l, *d),
            Expand(s) => sh::expand_layout("expand", l, s),
            Unfold(d, sz, st) => sh::unfold_layout("unfold", l, *d, *sz, *st),
            AsStrided(sz, st, o) => {
                sh::as_strided_layout("as_strided", l.storage_end(), sz, st, *o)
            }
            I(items) => crate::view::index_layout(items, l),
            Alias | Detach | Contiguous => *l,
        }
    }

    /// The layout this view has in the original program when its base is
    /// laid out there as `l`, if it is a view there (`None` for a
    /// `view`/`reshape` that would copy). It depends on `l`'s shape only,
    /// as it did on the base the view was made of, so it cannot panic
    /// (`as_strided` is not checked against the extent of `l`'s buffer: it
    /// was against the base's).
    pub(crate) fn place_layout(&self, l: &Layout) -> Option<Layout> {
        use crate::view::shape as sh;
        match self {
            ViewMeta::View(s) | ViewMeta::Reshape(s) => sh::reshape_layout("view", l, s),
            ViewMeta::Flatten => sh::flatten_layout("flatten", l),
            ViewMeta::Contiguous if !l.is_contiguous() => None,
            ViewMeta::AsStrided(sz, st, o) => {
                Some(sh::as_strided_layout("as_strided", usize::MAX, sz, st, *o))
            }
            m => Some(m.apply_layout(l)),
        }
    }

    /// True if this maybe-view (`reshape`, `flatten`, `contiguous`) is a
    /// view of a tensor laid out as `l`, as PyTorch decides.
    pub fn is_view_of(&self, l: &Layout) -> bool {
        use crate::view::shape as sh;
        match self {
            ViewMeta::Reshape(s) => sh::reshape_layout("reshape", l, s).is_some(),
            ViewMeta::Flatten => sh::flatten_layout("flatten", l).is_some(),
            ViewMeta::Contiguous => l.is_contiguous(),
            _ => true,
        }
    }

    /// Applies the view as a real view (shares storage), untraced.
    pub(crate) fn forward_view<T: Scalar>(&self, t: &Tensor<T>) -> Tensor<T> {
        untraced(|| self.forward(t, Mode::Views))
    }

    /// Replays the view on `t`: the view op itself in [`Mode::Views`], its
    /// `*_copy` form in [`Mode::Copies`]. Recorded in the trace. A copy
    /// remembers where the view's elements are (for the overlap checks of
    /// in-place ops: see [`crate::ops::overlap`]).
    #[track_caller]
    pub fn forward<T: Scalar>(&self, t: &Tensor<T>, mode: Mode) -> Tensor<T> {
        let mut out = self.forward_as(t, mode);
        if mode == Mode::Copies {
            let (base, layout) = crate::ops::overlap::place_of(t);
            if let Some(l) = self.place_layout(&layout) {
                crate::ops::overlap::set_place(&mut out, Some(base), l);
            }
        }
        out
    }

    #[track_caller]
    #[inline(always)]
    fn forward_as<T: Scalar>(&self, t: &Tensor<T>, mode: Mode) -> Tensor<T> {
        use ViewMeta::*;
        let copies = mode == Mode::Copies;
        match self {
            // The functional value's strides can differ from the original's
            // (a write-back through `t()` leaves a transposed base): where
            // they do not allow a view, `reshape` copies. Nothing writes in
            // place, so the lost aliasing is unobservable.
            View(s) | Reshape(s) => {
                if copies {
                    t.view_copy(s.as_slice())
                } else if crate::view::shape::reshape_layout("view", &t.layout, s).is_some() {
                    t.view(s.as_slice())
                } else {
                    t.reshape(s.as_slice())
                }
            }
            Flatten => View(vec![-1]).forward_as(t, mode),
            T => {
                if copies {
                    t.t_copy()
                } else {
                    t.t()
                }
            }
            Transpose(a, b) => {
                if copies {
                    t.transpose_copy(*a, *b)
                } else {
                    t.transpose(*a, *b)
                }
            }
            Permute(d) => {
                if copies {
                    t.permute_copy(d.as_slice())
                } else {
                    t.permute(d.as_slice())
                }
            }
            Narrow(d, s, n) => {
                if copies {
                    t.narrow_copy(*d, *s, *n)
                } else {
                    t.narrow(*d, *s, *n)
                }
            }
            Slice(d, s, e, st) => {
                if copies {
                    t.slice_copy(*d, *s, *e, *st)
                } else {
                    t.slice(*d, *s, *e, *st)
                }
            }
            Select(d, i) => {
                if copies {
                    t.select_copy(*d, *i)
                } else {
                    t.select(*d, *i)
                }
            }
            Diagonal(o, a, b) => {
                if copies {
                    t.diagonal_copy(*o, *a, *b)
                } else {
                    t.diagonal(*o, *a, *b)
                }
            }
            Squeeze => {
                if copies {
                    t.squeeze_copy()
                } else {
                    t.squeeze()
                }
            }
            SqueezeDim(d) => {
                if copies {
                    t.squeeze_dim_copy(*d)
                } else {
                    t.squeeze_dim(*d)
                }
            }
            SqueezeDims(ds) => {
                // Replayed as one `squeeze` per dim, the highest first.
                let mut out = t.shallow_clone();
                for d in descending_dims(ds, t.dim()) {
                    out = if copies {
                        out.squeeze_dim_copy(d as i64)
                    } else {
                        out.squeeze_dim(d as i64)
                    };
                }
                out
            }
            Unsqueeze(d) => {
                if copies {
                    t.unsqueeze_copy(*d)
                } else {
                    t.unsqueeze(*d)
                }
            }
            Expand(s) => {
                if copies {
                    t.expand_copy(s.as_slice())
                } else {
                    t.expand(s.as_slice())
                }
            }
            Unfold(d, s, st) => {
                if copies {
                    t.unfold_copy(*d, *s, *st)
                } else {
                    t.unfold(*d, *s, *st)
                }
            }
            // `as_strided` addresses the storage, which the original program
            // laid out row-major from offset 0 (the only case allowed): lay
            // the functional value out the same way first.
            AsStrided(s, st, o) => {
                let row_major = t.is_contiguous() && t.storage_offset() == 0;
                let cloned;
                let t = if row_major {
                    t
                } else {
                    cloned = t.clone();
                    &cloned
                };
                if copies {
                    t.as_strided_copy(s.as_slice(), st.as_slice(), *o)
                } else {
                    t.as_strided(s.as_slice(), st.as_slice(), *o)
                }
            }
            Alias | Contiguous => {
                if copies {
                    t.alias_copy()
                } else {
                    t.alias()
                }
            }
            Detach => {
                if copies {
                    t.detach_copy()
                } else {
                    t.detach()
                }
            }
            I(items) => {
                if copies {
                    t.i_copy(items.as_slice())
                } else {
                    t.i(items.as_slice())
                }
            }
        }
    }

    /// True if writing back through this view needs the base's data (a
    /// scatter), not just its shape.
    pub fn inverse_needs_data(&self) -> bool {
        use ViewMeta::*;
        matches!(
            self,
            Narrow(..) | Slice(..) | Select(..) | Diagonal(..) | AsStrided(..) | Unfold(..)
        ) || matches!(self, I(items) if !crate::view::steps(items, usize::MAX).is_empty())
    }

    /// Writes `mutated` (the new value of this view of `base`) back: returns
    /// the new value of `base`. Recorded in the trace.
    pub fn reverse<T: Scalar>(
        &self,
        base: &Tensor<T>,
        mutated: Tensor<T>,
        mode: Mode,
    ) -> Tensor<T> {
        use ViewMeta::*;
        let copies = mode == Mode::Copies;
        let shape: Vec<i64> = base.shape().iter().map(|&n| n as i64).collect();
        match self {
            View(_) | Reshape(_) | Flatten | Expand(_) => reshape_to(&mutated, &shape, copies),
            T => {
                if copies {
                    mutated.t_copy()
                } else {
                    mutated.t()
                }
            }
            Transpose(a, b) => {
                if copies {
                    mutated.transpose_copy(*a, *b)
                } else {
                    mutated.transpose(*a, *b)
                }
            }
            Permute(d) => {
                let n = d.len() as i64;
                let mut inv = vec![0i64; d.len()];
                for (i, &p) in d.iter().enumerate() {
                    let p = if p < 0 { p + n } else { p };
                    inv[p as usize] = i as i64;
                }
                if copies {
                    mutated.permute_copy(inv.as_slice())
                } else {
                    mutated.permute(inv.as_slice())
                }
            }
            Narrow(d, s, n) => {
                let start = narrow_start(base, *d, *s);
                base.slice_scatter(&mutated, *d, start, start + n, 1)
            }
            Slice(d, s, e, st) => base.slice_scatter(&mutated, *d, *s, *e, *st),
            Select(d, i) => base.select_scatter(&mutated, *d, *i),
            Diagonal(o, a, b) => base.diagonal_scatter(&mutated, *o, *a, *b),
            AsStrided(s, st, o) => {
                base.as_strided_scatter(&mutated, s.as_slice(), st.as_slice(), *o)
            }
            Unfold(..) => {
                // Non-overlapping windows (overlap was refused before): the
                // unfold is an as_strided of a contiguous base, so write back
                // with as_strided_scatter and keep uncovered elements (PyTorch's
                // unfold_backward zeroes them, pytorch#198102).
                let (size, stride, offset) = self.unfold_window(base);
                base.as_strided_scatter(&mutated, size.as_slice(), stride.as_slice(), offset)
            }
            Squeeze => {
                let mut t = mutated;
                for (d, &n) in base.shape().iter().enumerate() {
                    if n == 1 {
                        t = if copies {
                            t.unsqueeze_copy(d as i64)
                        } else {
                            t.unsqueeze(d as i64)
                        };
                    }
                }
                t
            }
            SqueezeDim(d) => {
                let dim = crate::layout::normalize_dim("squeeze", *d, base.dim());
                if base.dim() > 0 && base.shape()[dim] == 1 {
                    if copies {
                        mutated.unsqueeze_copy(dim as i64)
                    } else {
                        mutated.unsqueeze(dim as i64)
                    }
                } else {
                    mutated
                }
            }
            SqueezeDims(ds) => {
                // Put back, in increasing order, the listed dims of size 1.
                let mut t = mutated;
                for d in descending_dims(ds, base.dim()).into_iter().rev() {
                    if base.shape()[d] == 1 {
                        t = if copies {
                            t.unsqueeze_copy(d as i64)
                        } else {
                            t.unsqueeze(d as i64)
                        };
                    }
                }
                t
            }
            Unsqueeze(d) => {
                let dim = crate::layout::normalize_dim("unsqueeze", *d, base.dim() + 1);
                if copies {
                    mutated.squeeze_dim_copy(dim as i64)
                } else {
                    mutated.squeeze_dim(dim as i64)
                }
            }
            I(items) => {
                // The intermediate bases of the chain, then the scatters
                // from the innermost up.
                let steps = crate::view::steps(items, base.dim());
                if steps.is_empty() {
                    return mutated;
                }
                let mut bases = vec![base.shallow_clone()];
                for s in &steps[..steps.len() - 1] {
                    let b = bases.last().expect("non-empty");
                    bases.push(step_meta(s).forward(b, mode));
                }
                let mut m = mutated;
                for (s, b) in steps.iter().zip(&bases).rev() {
                    m = step_meta(s).reverse(b, m, mode);
                }
                m
            }
            Alias | Detach | Contiguous => mutated,
        }
    }
}

/// The single view an `i` step is.
fn step_meta(s: &crate::view::Step) -> ViewMeta {
    match *s {
        crate::view::Step::Select(d, i) => ViewMeta::Select(d, i),
        crate::view::Step::Slice(d, a, b) => ViewMeta::Slice(d, a, b, 1),
    }
}

impl ViewMeta {
    /// Writes `mutated` (the new value of this view of `base`) back by
    /// scattering it into `base`'s own buffer, when this view's inverse is a
    /// scatter and nobody else can observe that buffer (see the scatters'
    /// `*_in_place` forms): O(size of the view). `base` becomes the new
    /// value (fresh identity; recorded as the same scatter op as
    /// [`reverse`](Self::reverse)). Returns false, touching nothing, when
    /// that is not possible.
    pub(crate) fn reverse_in_place<T: Scalar>(
        &self,
        base: &mut Tensor<T>,
        mutated: &Tensor<T>,
        how: crate::view::InPlace,
    ) -> bool {
        use ViewMeta::*;
        match self {
            Narrow(d, s, n) => {
                let start = narrow_start(base, *d, *s);
                base.slice_scatter_in_place(mutated, *d, start, start + n, 1, how)
            }
            Slice(d, s, e, st) => base.slice_scatter_in_place(mutated, *d, *s, *e, *st, how),
            Select(d, i) => base.select_scatter_in_place(mutated, *d, *i, how),
            Diagonal(o, a, b) => base.diagonal_scatter_in_place(mutated, *o, *a, *b, how),
            AsStrided(s, st, o) => base.as_strided_scatter_in_place(mutated, s, st, *o, how),
            Unfold(..) => {
                // As in `reverse`.
                let (size, stride, offset) = self.unfold_window(base);
                base.as_strided_scatter_in_place(mutated, &size, &stride, offset, how)
            }
            _ => false,
        }
    }
}

impl ViewMeta {
    /// For an `unfold` of `base`: the `as_strided` size, stride and offset
    /// of its windows in a contiguous base of `base`'s shape.
    fn unfold_window<T: Scalar>(&self, base: &Tensor<T>) -> (Vec<i64>, Vec<i64>, i64) {
        let l = self.apply_layout(&Layout::contiguous(base.shape()));
        let size = l.shape.iter().map(|&x| x as i64).collect();
        let stride = l.strides.iter().map(|&x| x as i64).collect();
        (size, stride, l.offset as i64)
    }
}

/// The start of `narrow(dim, start, _)` on `base`, negative starts counted
/// from the end.
fn narrow_start<T: Scalar>(base: &Tensor<T>, dim: i64, start: i64) -> i64 {
    let d = crate::layout::normalize_dim("narrow", dim, base.dim());
    if start < 0 {
        start + base.shape()[d] as i64
    } else {
        start
    }
}

/// `view` back to `shape`; in view mode falls back to `reshape` when the
/// mutated value's strides do not allow a view.
fn reshape_to<T: Scalar>(t: &Tensor<T>, shape: &[i64], copies: bool) -> Tensor<T> {
    if copies {
        if t.is_contiguous() {
            t.view_copy(shape)
        } else {
            t.clone().view_copy(shape)
        }
    } else if t.is_contiguous() {
        t.view(shape)
    } else {
        t.reshape(shape)
    }
}

impl MultiMeta {
    /// Captures `split(split_size, dim)`.
    pub fn split(split_size: impl AsI64, dim: impl AsI64) -> Self {
        MultiMeta::Split(split_size.as_i64(), dim.as_i64())
    }
    /// Captures `chunk(chunks, dim)`.
    pub fn chunk(chunks: impl AsI64, dim: impl AsI64) -> Self {
        MultiMeta::Chunk(chunks.as_i64(), dim.as_i64())
    }
    /// Captures `unbind(dim)`.
    pub fn unbind(dim: impl AsI64) -> Self {
        MultiMeta::Unbind(dim.as_i64())
    }

    /// All outputs: the multi-output view op or its `*_copy`. Recorded.
    /// Copies remember where their elements are in the original (see
    /// [`ViewMeta::forward`]).
    #[track_caller]
    pub fn forward<T: Scalar>(&self, t: &Tensor<T>, mode: Mode) -> Vec<Tensor<T>> {
        let mut outs = self.forward_as(t, mode);
        if mode == Mode::Copies {
            let (base, layout) = crate::ops::overlap::place_of(t);
            for (k, out) in outs.iter_mut().enumerate() {
                if let Some(l) = self.output(t.shape(), k).place_layout(&layout) {
                    crate::ops::overlap::set_place(out, Some(base.clone()), l);
                }
            }
        }
        outs
    }

    #[track_caller]
    #[inline(always)]
    fn forward_as<T: Scalar>(&self, t: &Tensor<T>, mode: Mode) -> Vec<Tensor<T>> {
        let copies = mode == Mode::Copies;
        match *self {
            MultiMeta::Split(s, d) => {
                if copies {
                    t.split_copy(s, d)
                } else {
                    t.split(s, d)
                }
            }
            MultiMeta::Chunk(c, d) => {
                if copies {
                    t.chunk_copy(c, d)
                } else {
                    t.chunk(c, d)
                }
            }
            MultiMeta::Unbind(d) => {
                if copies {
                    t.unbind_copy(d)
                } else {
                    t.unbind(d)
                }
            }
        }
    }

    /// The single-output view that output `k` of `shape` is.
    pub fn output(&self, shape: &[usize], k: usize) -> ViewMeta {
        match *self {
            MultiMeta::Split(s, d) => {
                let dim = crate::layout::normalize_dim("split", d, shape.len());
                let n = shape[dim] as i64;
                let start = (k as i64) * s;
                ViewMeta::Slice(dim as i64, start, (start + s).min(n), 1)
            }
            MultiMeta::Chunk(c, d) => {
                let dim = crate::layout::normalize_dim("chunk", d, shape.len());
                let n = shape[dim] as i64;
                let s = ((n + c - 1) / c.max(1)).max(1);
                let start = (k as i64) * s;
                ViewMeta::Slice(dim as i64, start, (start + s).min(n), 1)
            }
            MultiMeta::Unbind(d) => ViewMeta::Select(d, k as i64),
        }
    }
}

/// `dims` normalized against a rank-`ndim` tensor, highest first.
fn descending_dims(dims: &[i64], ndim: usize) -> Vec<usize> {
    let mut out: Vec<usize> = dims
        .iter()
        .map(|&d| crate::layout::normalize_dim("squeeze", d, ndim))
        .collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    out
}
