//! Indexed reads and writes with `i64` index tensors, as PyTorch:
//! `index_select`, `gather`, `take`, `nonzero` (reads), and `index_copy(_)`,
//! `index_add(_)`, `index_fill(_)`, `index_put(_)`, `scatter(_)`,
//! `scatter_add(_)` (writes, each with its functional twin). Index checks
//! happen before anything is written: a bad index panics naming the op,
//! the index, the dimension and its size. Negative indices count from the
//! end where PyTorch allows them (`index_fill`, `index_put`, `take`) and
//! are errors where PyTorch refuses them (`index_select`, `gather`,
//! `scatter`, `index_copy`, `index_add`).
//!
//! ```
//! use funcz_runtime::Tensor;
//! let x = Tensor::<f32>::zeros(&[3, 2]);
//! let rows = Tensor::<i64>::from_vec(vec![0, 2, 0], &[3]);
//! let ones = Tensor::<f32>::ones(&[3, 2]);
//! x.index_add_(0, &rows, &ones); // duplicate indices accumulate
//! assert_eq!(x.to_vec(), vec![2.0, 2.0, 0.0, 0.0, 1.0, 1.0]);
//! ```

use crate::args::IntoIndices;
use crate::element::{Element, Scalar};
use crate::layout::{Layout, broadcast_layout};
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};
use crate::view::gather::{gather_from, materialize};

use super::dtype::{broadcast, check_writable, values, values_as, wrap_dim};
use super::kernel::with_write_read;
use super::mask::fill_value;
use super::overlap::assert_no_overlap;
use super::{Operand, OperandRef};

/// Checks one index against a dimension of size `size` and returns it as
/// a position, wrapping negative ones if `negative` allows them.
#[track_caller]
fn position(op: &str, i: i64, dim: usize, size: usize, negative: bool) -> usize {
    let n = size as i64;
    let ok = if negative {
        i >= -n && i < n
    } else {
        i >= 0 && i < n
    };
    if !ok {
        panic!("funcz: {op}: index {i} is out of bounds for dimension {dim} with size {size}");
    }
    if i < 0 { (i + n) as usize } else { i as usize }
}

/// The values of an index tensor, checked against dimension `dim` of size
/// `size`.
#[track_caller]
fn positions(op: &str, index: &Tensor<i64>, dim: usize, size: usize, negative: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(index.numel());
    for i in values(index) {
        out.push(position(op, i, dim, size, negative));
    }
    out
}

/// A layout's rank-0 case seen as one element of shape `[1]` (the
/// dim-based ops treat a 0-d tensor as a vector of one element, as
/// PyTorch does).
fn at_least_1d(l: &Layout) -> Layout {
    if l.ndim() == 0 {
        Layout::new(&[1], &[1], l.offset)
    } else {
        *l
    }
}

/// The layout of `l` with dimension `d` fixed at position `i`.
fn select_at(l: &Layout, d: usize, i: usize) -> Layout {
    let mut shape = l.shape.to_vec();
    let mut strides = l.strides.to_vec();
    let offset = l.offset + i * strides[d];
    shape.remove(d);
    strides.remove(d);
    Layout::new(&shape, &strides, offset)
}

/// A 1-d (or 0-d) index for the ops along one dimension.
#[track_caller]
fn check_vector_index(op: &str, index: &Tensor<i64>) {
    if index.dim() > 1 {
        panic!(
            "funcz: {op}: index is supposed to be a vector (0-d or 1-d), but got shape {:?}",
            index.shape()
        );
    }
}

/// The shape a source must have for `op` along `d` with `k` indices:
/// `self`'s shape with `d` replaced by `k`.
#[track_caller]
fn check_source_shape(op: &str, self_shape: &[usize], d: usize, k: usize, source: &[usize]) {
    let mut want: Vec<usize> = if self_shape.is_empty() {
        vec![1]
    } else {
        self_shape.to_vec()
    };
    want[d] = k;
    let got: Vec<usize> = if source.is_empty() {
        vec![1]
    } else {
        source.to_vec()
    };
    if got != want {
        panic!(
            "funcz: {op}: source of shape {source:?} must have the shape of self {self_shape:?} \
             with dimension {d} of size {k} (the number of indices), i.e. {want:?}"
        );
    }
}

/// Writes the values of `op` along dimension `d` of `dst`: slice `j` of
/// `src` (row-major, `chunk` values each) into position `pos[j]`;
/// `add` accumulates.
fn write_slices<T: Element>(
    data: &mut [T],
    l: &Layout,
    d: usize,
    pos: &[usize],
    src: Option<&[T]>,
    fill: T,
    add: bool,
) {
    let l = at_least_1d(l);
    // The source is laid out [outer, k, inner]; its slice j is strided.
    let (outer, inner) = (
        l.shape[..d].iter().product::<usize>(),
        l.shape[d + 1..].iter().product::<usize>(),
    );
    let k = pos.len();
    for (j, &p) in pos.iter().enumerate() {
        let w = select_at(&l, d, p);
        for (n, off) in w.offsets().enumerate() {
            let v = match src {
                Some(s) => s[((n / inner.max(1)) * k + j) * inner + n % inner.max(1)],
                None => fill,
            };
            debug_assert!(n < outer * inner);
            if add {
                data[off] += v;
            } else {
                data[off] = v;
            }
        }
    }
}

impl<T: Scalar> Tensor<T> {
    /// The entries at positions `index` along `dim` (aten
    /// `index_select(self, dim, index)`): a fresh tensor with `dim` of
    /// size `index.numel()`. `index` is 0-d or 1-d; negative indices are
    /// errors, as in PyTorch.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    /// let i = Tensor::<i64>::from_vec(vec![2, 0], &[2]);
    /// assert_eq!(x.index_select(0, &i).to_vec(), vec![5.0, 6.0, 1.0, 2.0]);
    /// assert_eq!(x.index_select(-1, &i.narrow(0, 1, 1)).shape(), &[3, 1]);
    /// ```
    #[track_caller]
    pub fn index_select(&self, dim: i64, index: &Tensor<i64>) -> Tensor<T> {
        let op = "index_select";
        let d = wrap_dim(op, dim, self.dim());
        check_vector_index(op, index);
        let l = at_least_1d(&self.layout);
        let pos = positions(op, index, d, l.shape[d], false);
        if self.dim() == 0 && pos.len() != 1 {
            panic!(
                "funcz: index_select(): Index to scalar can have only 1 value, got {} value(s)",
                pos.len()
            );
        }
        trace::op(
            op,
            || vec![self.to_arg(), Arg::Int(dim), index.to_arg()],
            || {
                let g = self.storage.read();
                let mut out = Vec::with_capacity(self.numel() / l.shape[d].max(1) * pos.len());
                let outer: usize = l.shape[..d].iter().product();
                let ol = Layout::new(&l.shape[..d], &l.strides[..d], l.offset);
                let mut heads = ol.offsets();
                for _ in 0..outer.max(usize::from(d == 0)) {
                    let head = if d == 0 {
                        l.offset
                    } else {
                        heads.next().unwrap_or(0)
                    };
                    for &p in &pos {
                        let w = Layout::new(
                            &l.shape[d + 1..],
                            &l.strides[d + 1..],
                            head + p * l.strides[d],
                        );
                        out.extend(gather_from(&g, &w));
                    }
                }
                // A 0-d tensor stays 0-d (its one index selects it), as
                // in PyTorch.
                let mut shape = self.shape().to_vec();
                if !shape.is_empty() {
                    shape[d] = pos.len();
                }
                Tensor::from_contiguous(out, &shape)
            },
        )
    }

    /// The elements of the flattened tensor at `index` (aten
    /// `take(self, index)`), in `index`'s shape; negative indices count
    /// from the end.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![10, 20, 30, 40], &[2, 2]);
    /// let i = Tensor::<i64>::from_vec(vec![3, -4, 1], &[3, 1]);
    /// let t = x.take(&i);
    /// assert_eq!((t.shape(), t.to_vec()), (&[3, 1][..], vec![40, 10, 20]));
    /// ```
    #[track_caller]
    pub fn take(&self, index: &Tensor<i64>) -> Tensor<T> {
        let pos = positions("take", index, 0, self.numel(), true);
        trace::op(
            "take",
            || vec![self.to_arg(), index.to_arg()],
            || {
                let v = values(self);
                let out: Vec<T> = pos.iter().map(|&p| v[p]).collect();
                Tensor::from_contiguous(out, index.shape())
            },
        )
    }

    /// The indices of the nonzero (true) elements (aten `nonzero`): an
    /// `i64` tensor of shape `[n, self.dim()]`, one row per element, in
    /// row-major order.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<bool>::from_vec(vec![false, true, true, false], &[2, 2]);
    /// let nz = m.nonzero();
    /// assert_eq!((nz.shape(), nz.to_vec()), (&[2, 2][..], vec![0, 1, 1, 0]));
    /// ```
    #[track_caller]
    pub fn nonzero(&self) -> Tensor<i64> {
        trace::op(
            "nonzero",
            || vec![self.to_arg()],
            || {
                let shape = self.shape();
                let mut out = Vec::new();
                let mut n = 0;
                for (flat, v) in values(self).into_iter().enumerate() {
                    if bool::cast_from(v) {
                        n += 1;
                        let mut rest = flat;
                        let mut idx = vec![0i64; shape.len()];
                        for d in (0..shape.len()).rev() {
                            idx[d] = (rest % shape[d]) as i64;
                            rest /= shape[d];
                        }
                        out.extend(idx);
                    }
                }
                Tensor::from_contiguous(out, &[n, shape.len()])
            },
        )
    }

    /// Values along `dim` picked by `index` (aten `gather(self, dim,
    /// index)`): `out[i][j] = self[index[i][j]][j]` for `dim = 0`. `index`
    /// has `self`'s rank, its sizes are at most `self`'s outside `dim`;
    /// the result has `index`'s shape. Negative indices are errors.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let i = Tensor::<i64>::from_vec(vec![1, 1, 0, 1], &[2, 2]);
    /// assert_eq!(x.gather(1, &i).to_vec(), vec![2.0, 2.0, 3.0, 4.0]);
    /// ```
    #[track_caller]
    pub fn gather(&self, dim: i64, index: &Tensor<i64>) -> Tensor<T> {
        let op = "gather";
        let d = wrap_dim(op, dim, self.dim());
        let (targets, _) = element_targets::<T>(op, &self.layout, d, index, None);
        trace::op(
            op,
            || vec![self.to_arg(), Arg::Int(dim), index.to_arg()],
            || {
                let g = self.storage.read();
                let out: Vec<T> = targets.iter().map(|&o| g[o]).collect();
                Tensor::from_contiguous(out, index.shape())
            },
        )
    }

    /// Copies the slices of `source` along `dim` into the positions
    /// `index` of `self` (aten `index_copy_(self, dim, index, source)`):
    /// `self.select(dim, index[j]) = source.select(dim, j)`. Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[3, 2]);
    /// let i = Tensor::<i64>::from_vec(vec![2, 0], &[2]);
    /// x.index_copy_(0, &i, &Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]));
    /// assert_eq!(x.to_vec(), vec![3.0, 4.0, 0.0, 0.0, 1.0, 2.0]);
    /// ```
    #[track_caller]
    pub fn index_copy_(&self, dim: i64, index: &Tensor<i64>, source: &Tensor<T>) -> Tensor<T> {
        let (d, pos) = along("index_copy_", self, dim, index, Some(source), false);
        check_writable("index_copy_", &self.layout);
        assert_no_overlap("index_copy_", "index", self, index);
        assert_no_overlap("index_copy_", "source", self, source);
        trace::op(
            "index_copy_",
            || {
                vec![
                    self.to_arg(),
                    Arg::Int(dim),
                    index.to_arg(),
                    source.to_arg(),
                ]
            },
            || {
                let src = values(source);
                let mut g = self.storage.write();
                copy_slices(&mut g, &self.layout, d, &pos, &src);
                drop(g);
                self.handle()
            },
        )
    }

    /// The functional [`index_copy_`](Tensor::index_copy_) (aten
    /// `index_copy`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::zeros(&[2, 3]);
    /// let i = Tensor::<i64>::from_vec(vec![1], &[1]);
    /// let y = x.index_copy(1, &i, &Tensor::from_vec(vec![5, 6], &[2, 1]));
    /// assert_eq!(y.to_vec(), vec![0, 5, 0, 0, 6, 0]);
    /// ```
    #[track_caller]
    pub fn index_copy(&self, dim: i64, index: &Tensor<i64>, source: &Tensor<T>) -> Tensor<T> {
        let (d, pos) = along("index_copy", self, dim, index, Some(source), false);
        trace::op(
            "index_copy",
            || {
                vec![
                    self.to_arg(),
                    Arg::Int(dim),
                    index.to_arg(),
                    source.to_arg(),
                ]
            },
            || {
                let src = values(source);
                let out = materialize(self, &self.layout);
                copy_slices(
                    &mut out.storage.write_unversioned(),
                    &out.layout,
                    d,
                    &pos,
                    &src,
                );
                out
            },
        )
    }
}

/// Copies slice `j` of `src` (`[outer, k, inner]` row-major) to position
/// `pos[j]` along `d` of the layout `l` in `data`.
fn copy_slices<T: Scalar>(data: &mut [T], l: &Layout, d: usize, pos: &[usize], src: &[T]) {
    let l = at_least_1d(l);
    let inner: usize = l.shape[d + 1..].iter().product::<usize>().max(1);
    let k = pos.len();
    for (j, &p) in pos.iter().enumerate() {
        for (n, off) in select_at(&l, d, p).offsets().enumerate() {
            data[off] = src[((n / inner) * k + j) * inner + n % inner];
        }
    }
}

/// The checks of the ops along one dimension: the dim, a vector index,
/// the source's shape; returns the dim and the checked positions.
#[track_caller]
fn along<T: Scalar>(
    op: &str,
    x: &Tensor<T>,
    dim: i64,
    index: &Tensor<i64>,
    source: Option<&Tensor<T>>,
    negative: bool,
) -> (usize, Vec<usize>) {
    let d = wrap_dim(op, dim, x.dim());
    check_vector_index(op, index);
    let size = if x.dim() == 0 { 1 } else { x.shape()[d] };
    if let Some(s) = source {
        check_source_shape(op, x.shape(), d, index.numel(), s.shape());
    }
    (d, positions(op, index, d, size, negative))
}

/// For `gather`/`scatter` along `d` of a tensor laid out as `l`: the
/// storage offset of every target element (row-major over `index`), and,
/// if `src` is given, `src`'s values at the same positions. Checks ranks,
/// sizes and indices.
#[track_caller]
fn element_targets<T: Scalar>(
    op: &str,
    l: &Layout,
    d: usize,
    index: &Tensor<i64>,
    src: Option<&Tensor<T>>,
) -> (Vec<usize>, Vec<T>) {
    let rank = l.ndim();
    if index.dim() != rank && !(rank == 0 && index.dim() <= 1) {
        panic!(
            "funcz: {op}: index tensor must have the same number of dimensions as self tensor \
             (index shape {:?}, self shape {:?})",
            index.shape(),
            &l.shape[..]
        );
    }
    let l1 = at_least_1d(l);
    let ishape: Vec<usize> = if index.dim() == 0 {
        vec![1]
    } else {
        index.shape().to_vec()
    };
    for (k, (&i, &s)) in ishape.iter().zip(l1.shape.iter()).enumerate() {
        if k != d && i > s {
            panic!(
                "funcz: {op}: size does not match at dimension {k}: expected index {:?} to be \
                 no larger than self {:?} apart from dimension {d}",
                index.shape(),
                &l.shape[..]
            );
        }
    }
    let src_vals = match src {
        Some(s) => {
            if s.dim() != index.dim() && !(s.dim() <= 1 && index.dim() <= 1) {
                panic!(
                    "funcz: {op}: index tensor must have the same number of dimensions as src \
                     tensor (index shape {:?}, src shape {:?})",
                    index.shape(),
                    s.shape()
                );
            }
            let sl = at_least_1d(&s.layout);
            for (k, (&i, &n)) in ishape.iter().zip(sl.shape.iter()).enumerate() {
                if i > n {
                    panic!(
                        "funcz: {op}: size does not match at dimension {k}: expected index {:?} \
                         to be no larger than src {:?}",
                        index.shape(),
                        s.shape()
                    );
                }
            }
            let w = Layout::new(&ishape, &sl.strides, sl.offset);
            let g = s.storage.read();
            gather_from(&g, &w)
        }
        None => Vec::new(),
    };
    let mut strides = l1.strides.to_vec();
    let sd = strides[d];
    strides[d] = 0;
    let base = Layout::new(&ishape, &strides, l1.offset);
    let mut targets = Vec::with_capacity(base.numel());
    for (o, i) in base.offsets().zip(values(index)) {
        targets.push(o + position(op, i, d, l1.shape[d], false) * sd);
    }
    (targets, src_vals)
}

impl<T: Element> Tensor<T> {
    /// Adds the slices of `source` along `dim` into the positions `index`
    /// of `self` (aten `index_add_(self, dim, index, source)`); duplicate
    /// indices accumulate. Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::ones(&[2, 3]);
    /// let i = Tensor::<i64>::from_vec(vec![0, 2, 0], &[3]);
    /// x.index_add_(1, &i, &Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]));
    /// assert_eq!(x.to_vec(), vec![5.0, 1.0, 3.0, 11.0, 1.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn index_add_(&self, dim: i64, index: &Tensor<i64>, source: &Tensor<T>) -> Tensor<T> {
        let (d, pos) = along("index_add_", self, dim, index, Some(source), false);
        check_writable("index_add_", &self.layout);
        assert_no_overlap("index_add_", "index", self, index);
        assert_no_overlap("index_add_", "source", self, source);
        trace::op(
            "index_add_",
            || {
                vec![
                    self.to_arg(),
                    Arg::Int(dim),
                    index.to_arg(),
                    source.to_arg(),
                ]
            },
            || {
                let src = values(source);
                let mut g = self.storage.write();
                write_slices(&mut g, &self.layout, d, &pos, Some(&src), T::zero(), true);
                drop(g);
                self.handle()
            },
        )
    }

    /// The functional [`index_add_`](Tensor::index_add_) (aten
    /// `index_add`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::zeros(&[3]);
    /// let i = Tensor::<i64>::from_vec(vec![1, 1], &[2]);
    /// assert_eq!(x.index_add(0, &i, &Tensor::from_vec(vec![2, 3], &[2])).to_vec(), vec![0, 5, 0]);
    /// ```
    #[track_caller]
    pub fn index_add(&self, dim: i64, index: &Tensor<i64>, source: &Tensor<T>) -> Tensor<T> {
        let (d, pos) = along("index_add", self, dim, index, Some(source), false);
        trace::op(
            "index_add",
            || {
                vec![
                    self.to_arg(),
                    Arg::Int(dim),
                    index.to_arg(),
                    source.to_arg(),
                ]
            },
            || {
                let src = values(source);
                let out = materialize(self, &self.layout);
                write_slices(
                    &mut out.storage.write_unversioned(),
                    &out.layout,
                    d,
                    &pos,
                    Some(&src),
                    T::zero(),
                    true,
                );
                out
            },
        )
    }

    /// [`index_add_`](Tensor::index_add_) of `alpha * source` (aten
    /// `index_add_(self, dim, index, source, alpha)`: PyTorch's
    /// `x.index_add_(dim, index, source, alpha=a)` ports as
    /// `x.index_add_scaled_(dim, &index, &source, a)`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::ones(&[3]);
    /// let i = Tensor::<i64>::from_vec(vec![2, 0, 2], &[3]);
    /// x.index_add_scaled_(0, &i, &Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]), -0.5);
    /// assert_eq!(x.to_vec(), vec![0.0, 1.0, -1.0]);
    /// ```
    #[track_caller]
    pub fn index_add_scaled_(
        &self,
        dim: i64,
        index: &Tensor<i64>,
        source: &Tensor<T>,
        alpha: T,
    ) -> Tensor<T> {
        let (d, pos) = along("index_add_", self, dim, index, Some(source), false);
        check_writable("index_add_", &self.layout);
        assert_no_overlap("index_add_", "index", self, index);
        assert_no_overlap("index_add_", "source", self, source);
        trace::op(
            "index_add_",
            || index_add_args(self, dim, index, source, alpha),
            || {
                let src: Vec<T> = values(source).into_iter().map(|v| alpha * v).collect();
                let mut g = self.storage.write();
                write_slices(&mut g, &self.layout, d, &pos, Some(&src), T::zero(), true);
                drop(g);
                self.handle()
            },
        )
    }

    /// The functional [`index_add_scaled_`](Tensor::index_add_scaled_)
    /// (aten `index_add(self, dim, index, source, alpha)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::zeros(&[2, 2]);
    /// let i = Tensor::<i64>::from_vec(vec![1], &[1]);
    /// let y = x.index_add_scaled(1, &i, &Tensor::from_vec(vec![3, 4], &[2, 1]), 2);
    /// assert_eq!(y.to_vec(), vec![0, 6, 0, 8]);
    /// ```
    #[track_caller]
    pub fn index_add_scaled(
        &self,
        dim: i64,
        index: &Tensor<i64>,
        source: &Tensor<T>,
        alpha: T,
    ) -> Tensor<T> {
        let (d, pos) = along("index_add", self, dim, index, Some(source), false);
        trace::op(
            "index_add",
            || index_add_args(self, dim, index, source, alpha),
            || {
                let src: Vec<T> = values(source).into_iter().map(|v| alpha * v).collect();
                let out = materialize(self, &self.layout);
                write_slices(
                    &mut out.storage.write_unversioned(),
                    &out.layout,
                    d,
                    &pos,
                    Some(&src),
                    T::zero(),
                    true,
                );
                out
            },
        )
    }

    /// Fills the positions `index` along `dim` with `value` (aten
    /// `index_fill_(self, dim, index, value)`); negative indices count
    /// from the end. `value` is a scalar or a 0-d tensor. Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2, 3]);
    /// x.index_fill_(1, &Tensor::from_vec(vec![-1], &[1]), 7.0);
    /// assert_eq!(x.to_vec(), vec![0.0, 0.0, 7.0, 0.0, 0.0, 7.0]);
    /// ```
    #[track_caller]
    pub fn index_fill_(&self, dim: i64, index: &Tensor<i64>, value: impl Operand<T>) -> Tensor<T> {
        let value = value.operand();
        let v = fill_value("index_fill_", &value);
        let (d, pos) = along("index_fill_", self, dim, index, None, true);
        check_writable("index_fill_", &self.layout);
        assert_no_overlap("index_fill_", "index", self, index);
        trace::op(
            "index_fill_",
            || vec![self.to_arg(), Arg::Int(dim), index.to_arg(), value.to_arg()],
            || {
                let mut g = self.storage.write();
                write_slices(&mut g, &self.layout, d, &pos, None, v, false);
                drop(g);
                self.handle()
            },
        )
    }

    /// The functional [`index_fill_`](Tensor::index_fill_) (aten
    /// `index_fill`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[3]);
    /// let y = x.index_fill(0, &Tensor::from_vec(vec![0, 2], &[2]), 1.0);
    /// assert_eq!(y.to_vec(), vec![1.0, 0.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn index_fill(&self, dim: i64, index: &Tensor<i64>, value: impl Operand<T>) -> Tensor<T> {
        let value = value.operand();
        let v = fill_value("index_fill", &value);
        let (d, pos) = along("index_fill", self, dim, index, None, true);
        trace::op(
            "index_fill",
            || vec![self.to_arg(), Arg::Int(dim), index.to_arg(), value.to_arg()],
            || {
                let out = materialize(self, &self.layout);
                write_slices(
                    &mut out.storage.write_unversioned(),
                    &out.layout,
                    d,
                    &pos,
                    None,
                    v,
                    false,
                );
                out
            },
        )
    }

    /// Writes `src` (a tensor, or a scalar `value`) at the positions
    /// `index` picks along `dim` (aten `scatter_(self, dim, index,
    /// src|value)`): `self[index[i][j]][j] = src[i][j]` for `dim = 0`.
    /// `index` has `self`'s rank; its sizes are at most `src`'s, and at
    /// most `self`'s outside `dim`. With duplicate indices the last write
    /// wins. Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2, 3]);
    /// let i = Tensor::<i64>::from_vec(vec![2, 0], &[2, 1]);
    /// x.scatter_(1, &i, &Tensor::from_vec(vec![5.0, 6.0], &[2, 1]));
    /// assert_eq!(x.to_vec(), vec![0.0, 0.0, 5.0, 6.0, 0.0, 0.0]);
    /// x.scatter_(1, &i, -1.0);
    /// assert_eq!(x.to_vec(), vec![0.0, 0.0, -1.0, -1.0, 0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn scatter_(&self, dim: i64, index: &Tensor<i64>, src: impl Operand<T>) -> Tensor<T> {
        self.scatter_impl("scatter_", dim, index, src.operand(), false, true)
    }

    /// The functional [`scatter_`](Tensor::scatter_) (aten `scatter`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::zeros(&[3]);
    /// let y = x.scatter(0, &Tensor::from_vec(vec![2], &[1]), 9);
    /// assert_eq!((x.to_vec(), y.to_vec()), (vec![0, 0, 0], vec![0, 0, 9]));
    /// ```
    #[track_caller]
    pub fn scatter(&self, dim: i64, index: &Tensor<i64>, src: impl Operand<T>) -> Tensor<T> {
        self.scatter_impl("scatter", dim, index, src.operand(), false, false)
    }

    /// Adds `src` at the positions `index` picks along `dim` (aten
    /// `scatter_add_(self, dim, index, src)`); duplicate indices
    /// accumulate. Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let counts = Tensor::<f32>::zeros(&[3]);
    /// let labels = Tensor::<i64>::from_vec(vec![0, 2, 2, 2], &[4]);
    /// counts.scatter_add_(0, &labels, &Tensor::ones(&[4]));
    /// assert_eq!(counts.to_vec(), vec![1.0, 0.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn scatter_add_(&self, dim: i64, index: &Tensor<i64>, src: &Tensor<T>) -> Tensor<T> {
        self.scatter_impl(
            "scatter_add_",
            dim,
            index,
            OperandRef::Tensor(src),
            true,
            true,
        )
    }

    /// The functional [`scatter_add_`](Tensor::scatter_add_) (aten
    /// `scatter_add`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2]);
    /// let y = x.scatter_add(0, &Tensor::from_vec(vec![1, 1], &[2]), &Tensor::ones(&[2]));
    /// assert_eq!(y.to_vec(), vec![0.0, 2.0]);
    /// ```
    #[track_caller]
    pub fn scatter_add(&self, dim: i64, index: &Tensor<i64>, src: &Tensor<T>) -> Tensor<T> {
        self.scatter_impl(
            "scatter_add",
            dim,
            index,
            OperandRef::Tensor(src),
            true,
            false,
        )
    }

    #[track_caller]
    fn scatter_impl(
        &self,
        op: &'static str,
        dim: i64,
        index: &Tensor<i64>,
        src: OperandRef<'_, T>,
        add: bool,
        inplace: bool,
    ) -> Tensor<T> {
        let d = wrap_dim(op, dim, self.dim());
        let (targets, vals) = match src {
            OperandRef::Tensor(s) => element_targets(op, &self.layout, d, index, Some(s)),
            OperandRef::Scalar(v) => {
                let (t, _) = element_targets::<T>(op, &self.layout, d, index, None);
                let n = t.len();
                (t, vec![v; n])
            }
        };
        if inplace {
            check_writable(op, &self.layout);
            assert_no_overlap(op, "index", self, index);
            if let OperandRef::Tensor(s) = src {
                assert_no_overlap(op, "src", self, s);
            }
        }
        let apply = |data: &mut [T]| {
            for (&o, &v) in targets.iter().zip(&vals) {
                if add {
                    data[o] += v;
                } else {
                    data[o] = v;
                }
            }
        };
        trace::op(
            op,
            || vec![self.to_arg(), Arg::Int(dim), index.to_arg(), src.to_arg()],
            || {
                if inplace {
                    apply(&mut self.storage.write());
                    self.handle()
                } else {
                    // The targets are offsets in `self`'s storage: apply
                    // them to a copy of that storage, then read the layout.
                    let mut data = self.storage.read().clone();
                    apply(&mut data);
                    let out = gather_from(&data, &self.layout);
                    Tensor::from_contiguous(out, self.shape())
                }
            },
        )
    }

    /// Writes `values` at the elements the index tensors pick (aten
    /// `index_put_(self, indices, values, accumulate)`, PyTorch's
    /// `x[i, j] = v` and, with `accumulate`, `x.index_put_((i, j), v,
    /// accumulate=True)`). `indices` index the leading dimensions, one
    /// `i64` tensor each; they broadcast together to a shape `B`, and
    /// `values` (a tensor or a scalar) broadcasts to `B` followed by the
    /// remaining dimensions of `self`. Negative indices count from the
    /// end. With `accumulate`, duplicate indices add up; without it, the
    /// last write wins. Returns `self`.
    ///
    /// `indices` may also hold `None` entries for dimensions taken whole
    /// (see [`IntoIndices`]): PyTorch's `x[:, i] = v` is
    /// `x.index_put_(&[None, Some(&i)], &v, false)`. The values then
    /// broadcast to the shape of `x[:, i]` as PyTorch lays it out (the
    /// broadcast index shape in place of the indexed dimensions if they are
    /// adjacent, else in front); the op runs as `index_put_` on a
    /// `permute`d view of `self` (and is recorded so).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[3, 2]);
    /// let rows = Tensor::<i64>::from_vec(vec![0, -1, 0], &[3]);
    /// let cols = Tensor::<i64>::from_vec(vec![1, 0, 1], &[3]);
    /// x.index_put_(&[&rows, &cols], &Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]), true);
    /// assert_eq!(x.to_vec(), vec![0.0, 4.0, 0.0, 0.0, 2.0, 0.0]);
    /// x.index_put_(&[&rows], 9.0, false); // whole rows
    /// assert_eq!(x.to_vec(), vec![9.0, 9.0, 0.0, 0.0, 9.0, 9.0]);
    /// ```
    #[track_caller]
    pub fn index_put_<'a>(
        &self,
        indices: impl IntoIndices<'a>,
        values: impl Operand<T>,
        accumulate: bool,
    ) -> Tensor<T> {
        let values = values.operand();
        let idx = indices.into_indices();
        for (k, i) in idx.iter().enumerate() {
            if let Some(i) = i.filter(|i| i.storage_key() == self.storage_key()) {
                assert_no_overlap("index_put_", &format!("indices[{k}]"), self, i);
            }
        }
        if let OperandRef::Tensor(v) = values {
            assert_no_overlap("index_put_", "values", self, v);
        }
        let Some(indices) = leading(&idx) else {
            return self.put_with_none("index_put_", &idx, values, accumulate, true);
        };
        let indices = &indices[..];
        let plan = put_plan("index_put_", self, indices, &values);
        check_writable("index_put_", &self.layout);
        trace::op(
            "index_put_",
            || put_args(self, indices, &values, accumulate),
            || {
                match values {
                    OperandRef::Tensor(v) if !v.same_storage(self) => {
                        // Read in place (locks in address order).
                        let vl = plan.values_layout(v);
                        with_write_read(self, v, |d, s| {
                            plan.apply(d, &self.layout, s, &vl, accumulate);
                        });
                    }
                    _ => {
                        // A scalar, or values in `self`'s own storage (not
                        // overlapping the written elements, checked above):
                        // read before the write lock is taken.
                        let (src, vl) = plan.values_copy(&values);
                        let mut d = self.storage.write();
                        plan.apply(&mut d, &self.layout, &src, &vl, accumulate);
                    }
                }
                self.handle()
            },
        )
    }

    /// The functional [`index_put_`](Tensor::index_put_) (aten
    /// `index_put`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::zeros(&[3]);
    /// let i = Tensor::<i64>::from_vec(vec![2, 2], &[2]);
    /// assert_eq!(x.index_put(&[&i], 5, true).to_vec(), vec![0, 0, 10]);
    /// assert_eq!(x.to_vec(), vec![0, 0, 0]);
    /// ```
    #[track_caller]
    pub fn index_put<'a>(
        &self,
        indices: impl IntoIndices<'a>,
        values: impl Operand<T>,
        accumulate: bool,
    ) -> Tensor<T> {
        let values = values.operand();
        let idx = indices.into_indices();
        let Some(indices) = leading(&idx) else {
            return self.put_with_none("index_put", &idx, values, accumulate, false);
        };
        let indices = &indices[..];
        let plan = put_plan("index_put", self, indices, &values);
        trace::op(
            "index_put",
            || put_args(self, indices, &values, accumulate),
            || {
                let out = materialize(self, &self.layout);
                // `out` is fresh: no other handle can hold its lock.
                let mut d = out.storage.write_unversioned();
                match values {
                    OperandRef::Tensor(v) => {
                        let vl = plan.values_layout(v);
                        plan.apply(&mut d, &out.layout, &v.storage.read(), &vl, accumulate);
                    }
                    OperandRef::Scalar(_) => {
                        let (src, vl) = plan.values_copy(&values);
                        plan.apply(&mut d, &out.layout, &src, &vl, accumulate);
                    }
                }
                drop(d);
                out
            },
        )
    }
}

/// The index tensors if `idx` is a run of tensors from the first
/// dimension (trailing `None`s dropped): the plain `index_put` path.
fn leading<'a>(idx: &[Option<&'a Tensor<i64>>]) -> Option<Vec<&'a Tensor<i64>>> {
    let n = idx.iter().rposition(Option::is_some).map_or(0, |k| k + 1);
    idx[..n].iter().copied().collect::<Option<Vec<_>>>()
}

impl<T: Element> Tensor<T> {
    /// `index_put(_)` with `None` entries: the indexed dimensions are
    /// permuted to the front of a view of `self`, the values (broadcast to
    /// PyTorch's shape of `self[indices]`) likewise, and the plain op runs
    /// on the view.
    #[track_caller]
    fn put_with_none(
        &self,
        op: &'static str,
        idx: &[Option<&Tensor<i64>>],
        vals: OperandRef<'_, T>,
        accumulate: bool,
        inplace: bool,
    ) -> Tensor<T> {
        let (nd, shape) = (self.dim(), self.shape());
        if idx.len() > nd {
            panic!(
                "funcz: {op}: too many indices for tensor of shape {shape:?} (got {})",
                idx.len()
            );
        }
        let dims: Vec<usize> = (0..idx.len()).filter(|&k| idx[k].is_some()).collect();
        if dims.is_empty() {
            panic!(
                "funcz: {op}: at least one of the indices must be a tensor (self of shape \
                 {shape:?})"
            );
        }
        let ts: Vec<&Tensor<i64>> = idx.iter().flatten().copied().collect();
        let mut b: Vec<usize> = Vec::new();
        for (k, t) in ts.iter().enumerate() {
            b = broadcast(op, &format!("indices[{}]", dims[k]), &b, t.shape());
        }
        // Bounds, named by the dimension of `self` (not of the view).
        for (k, t) in ts.iter().enumerate() {
            for v in values(t) {
                position(op, v, dims[k], shape[dims[k]], true);
            }
        }
        let rest: Vec<usize> = (0..nd).filter(|d| !dims.contains(d)).collect();
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let (first, last) = (dims[0], dims[dims.len() - 1]);
        let target: Vec<usize> = if adjacent {
            let mut t = shape[..first].to_vec();
            t.extend(&b);
            t.extend(&shape[last + 1..]);
            t
        } else {
            let mut t = b.clone();
            t.extend(rest.iter().map(|&d| shape[d]));
            t
        };
        let perm: Vec<i64> = dims.iter().chain(&rest).map(|&d| d as i64).collect();
        if inplace {
            check_writable(op, &self.layout);
        }
        // Checked here, at the caller's line (not in the closure below).
        if let OperandRef::Tensor(v) = vals {
            let got = broadcast(op, "values", &target, v.shape());
            if got != target {
                panic!(
                    "funcz: {op}: shape mismatch: value tensor of shape {:?} cannot be \
                     broadcast to indexing result of shape {target:?}",
                    v.shape()
                );
            }
        }
        // One op in the trace (the permutes inside are how it is computed,
        // not ops of the program): the present index tensors, then the
        // dimensions they index as a fifth argument.
        let args = || {
            let mut a = put_args(self, &ts, &vals, accumulate);
            a.push(Arg::Ints(dims.iter().map(|&d| d as i64).collect()));
            a
        };
        trace::op(op, args, || {
            self.put_permuted(
                &perm,
                &ts,
                vals,
                accumulate,
                inplace,
                (adjacent, first),
                &b,
                &target,
            )
        })
    }

    /// [`Tensor::put_with_none`]'s computation, on `self` permuted by `perm`
    /// (the indexed dimensions first).
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    fn put_permuted(
        &self,
        perm: &[i64],
        ts: &[&Tensor<i64>],
        vals: OperandRef<'_, T>,
        accumulate: bool,
        inplace: bool,
        (adjacent, first): (bool, usize),
        b: &[usize],
        target: &[usize],
    ) -> Tensor<T> {
        let nd = self.dim();
        let xp = self.permute(perm);
        let put = |v: OperandRef<'_, T>| -> Tensor<T> {
            match (inplace, v) {
                (true, OperandRef::Scalar(s)) => xp.index_put_(ts, s, accumulate),
                (true, OperandRef::Tensor(t)) => xp.index_put_(ts, t, accumulate),
                (false, OperandRef::Scalar(s)) => xp.index_put(ts, s, accumulate),
                (false, OperandRef::Tensor(t)) => xp.index_put(ts, t, accumulate),
            }
        };
        let out = match vals {
            OperandRef::Scalar(_) => put(vals),
            OperandRef::Tensor(v) => {
                let ve = v.expand(target);
                let ve = if adjacent && first > 0 {
                    // The broadcast index dims to the front, as in `xp`.
                    let nb = b.len();
                    let order: Vec<i64> = (first..first + nb)
                        .chain(0..first)
                        .chain(first + nb..target.len())
                        .map(|d| d as i64)
                        .collect();
                    ve.permute(&order)
                } else {
                    ve
                };
                put(OperandRef::Tensor(&ve))
            }
        };
        if inplace {
            return self.handle();
        }
        let mut inv = vec![0i64; nd];
        for (k, &d) in perm.iter().enumerate() {
            inv[d as usize] = k as i64;
        }
        out.permute(&inv).contiguous()
    }
}

fn index_add_args<T: Element>(
    x: &Tensor<T>,
    dim: i64,
    index: &Tensor<i64>,
    source: &Tensor<T>,
    alpha: T,
) -> Vec<Arg> {
    vec![
        x.to_arg(),
        Arg::Int(dim),
        index.to_arg(),
        source.to_arg(),
        super::scalar_arg(alpha),
    ]
}

fn put_args<T: Element>(
    x: &Tensor<T>,
    indices: &[&Tensor<i64>],
    values: &OperandRef<'_, T>,
    accumulate: bool,
) -> Vec<Arg> {
    let ids: Vec<Tensor<i64>> = indices.iter().map(|t| t.shallow_clone()).collect();
    vec![
        x.to_arg(),
        ids.to_arg(),
        values.to_arg(),
        Arg::Bool(accumulate),
    ]
}

/// A checked `index_put`: for each position of the broadcast index shape,
/// the positions in the indexed leading dimensions.
struct PutPlan {
    /// `m` positions (one per index tensor) for each of the `B.numel()`
    /// entries of the broadcast index shape `B`, row-major.
    pos: Vec<usize>,
    /// The number of index tensors.
    m: usize,
    /// The shape the values broadcast to: `B` followed by `self`'s
    /// remaining dimensions.
    vshape: Vec<usize>,
}

#[track_caller]
fn put_plan<T: Element>(
    op: &str,
    x: &Tensor<T>,
    indices: &[&Tensor<i64>],
    values: &OperandRef<'_, T>,
) -> PutPlan {
    let m = indices.len();
    if m == 0 || m > x.dim() {
        panic!(
            "funcz: {op}: expected 1 to {} index tensors for self of shape {:?}, got {m}",
            x.dim(),
            x.shape()
        );
    }
    let mut b: Vec<usize> = Vec::new();
    for (k, i) in indices.iter().enumerate() {
        b = broadcast(op, &format!("indices[{k}]"), &b, i.shape());
    }
    let n: usize = b.iter().product();
    let mut pos = vec![0usize; n * m];
    for (k, i) in indices.iter().enumerate() {
        for (p, v) in values_as(i, &b).into_iter().enumerate() {
            pos[p * m + k] = position(op, v, k, x.shape()[k], true);
        }
    }
    let mut vshape = b;
    vshape.extend_from_slice(&x.shape()[m..]);
    let got = broadcast(op, "values", &vshape, values.shape());
    if got != vshape {
        panic!(
            "funcz: {op}: shape mismatch: value tensor of shape {:?} cannot be broadcast to \
             indexing result of shape {vshape:?}",
            values.shape()
        );
    }
    PutPlan { pos, m, vshape }
}

impl PutPlan {
    /// The layout of the values tensor `v` broadcast to the values shape,
    /// inside `v`'s storage.
    fn values_layout<T: Element>(&self, v: &Tensor<T>) -> Layout {
        broadcast_layout(&v.layout, &self.vshape).expect("funcz: internal: checked broadcast")
    }

    /// The values as a buffer of their own and its layout: a scalar as one
    /// element broadcast everywhere, a tensor gathered row-major.
    fn values_copy<T: Element>(&self, values: &OperandRef<'_, T>) -> (Vec<T>, Layout) {
        match values {
            OperandRef::Scalar(v) => {
                let zeros = vec![0; self.vshape.len()];
                (vec![*v], Layout::new(&self.vshape, &zeros, 0))
            }
            OperandRef::Tensor(t) => (values_as(t, &self.vshape), Layout::contiguous(&self.vshape)),
        }
    }

    /// Writes (or, with `accumulate`, adds) the values into `data`, laid
    /// out by `l`: the values are the elements of `vl` (of the values
    /// shape) inside `src`. Entry `p` of the plan receives the `p`-th
    /// block of the values (the trailing dimensions), in order, so the
    /// last of duplicate positions wins. Blocks that are row-major on both
    /// sides are one slice copy (or add); a value broadcast over the whole
    /// block is a fill.
    fn apply<T: Element>(
        &self,
        data: &mut [T],
        l: &Layout,
        src: &[T],
        vl: &Layout,
        accumulate: bool,
    ) {
        let m = self.m;
        let nb = vl.ndim() - (l.ndim() - m);
        let rest = Layout::new(&l.shape[m..], &l.strides[m..], 0);
        let vrest = Layout::new(&vl.shape[nb..], &vl.strides[nb..], 0);
        let chunk = rest.numel();
        if chunk == 0 {
            return;
        }
        let heads = Layout::new(&vl.shape[..nb], &vl.strides[..nb], vl.offset);
        let dense = rest.is_contiguous();
        let same = dense && vrest.is_contiguous();
        let splat = dense && vrest.strides.iter().all(|&s| s == 0);
        for (idx, vh) in self.pos.chunks_exact(m).zip(heads.offsets()) {
            let head = l.offset
                + idx
                    .iter()
                    .zip(l.strides.iter())
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            if same {
                let (d, s) = (&mut data[head..head + chunk], &src[vh..vh + chunk]);
                if accumulate {
                    for (d, &s) in d.iter_mut().zip(s) {
                        *d += s;
                    }
                } else {
                    d.copy_from_slice(s);
                }
            } else if splat {
                let (d, s) = (&mut data[head..head + chunk], src[vh]);
                if accumulate {
                    for d in d {
                        *d += s;
                    }
                } else {
                    d.fill(s);
                }
            } else {
                for (o, vo) in rest.offsets().zip(vrest.offsets()) {
                    let x = src[vh + vo];
                    if accumulate {
                        data[head + o] += x;
                    } else {
                        data[head + o] = x;
                    }
                }
            }
        }
    }
}
