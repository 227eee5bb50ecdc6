//! Shape ops real code uses: `cat`, `stack`, `roll`, `flip`, `repeat`,
//! `tril(_)`, `triu(_)`, `squeeze` over a list of dims, `empty`,
//! `empty_like`. All but the `squeeze_dims` view return fresh contiguous
//! tensors.

use std::borrow::Borrow;

use crate::args::{AsI64, IntoShape};
use crate::element::Element;
use crate::layout::Layout;
use crate::storage::huge;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::cat::concat;
use super::kernel::{check_writable, write_values};
use super::lanes::{norm_dim, norm_dims};

/// The recorded form of a list of tensors.
fn list_arg<T: Element, B: Borrow<Tensor<T>>>(ts: &[B]) -> Arg {
    Arg::TensorList(
        ts.iter()
            .map(|t| {
                let t = t.borrow();
                let _ = t.to_arg(); // snapshots constants
                t.id()
            })
            .collect(),
    )
}

/// Calls `f(out_index, in_flat)` for every row-major output index of
/// `out_shape`, where `src(out_index)` computes the input's row-major flat
/// index; returns the gathered values of `t`.
fn gather_map<T: Element>(
    t: &Tensor<T>,
    out_shape: &[usize],
    src: impl Fn(&[usize]) -> usize,
) -> Vec<T> {
    let data = t.to_vec();
    let n: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; out_shape.len()];
    for _ in 0..n {
        out.push(data[src(&idx)]);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// `tril`/`triu` values of `t` (rank ≥ 2): elements with `j - i > k`
/// (`tril`) or `j - i < k` (`triu`) are zeroed.
fn tri_values<T: Element>(t: &Tensor<T>, k: i64, lower: bool) -> Vec<T> {
    let shape = t.shape();
    let (r, c) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    let mut v = t.to_vec();
    for (f, x) in v.iter_mut().enumerate() {
        let rc = r * c;
        let within = f % rc.max(1);
        let (i, j) = ((within / c.max(1)) as i64, (within % c.max(1)) as i64);
        let keep = if lower { j - i <= k } else { j - i >= k };
        if !keep {
            *x = T::zero();
        }
    }
    v
}

#[track_caller]
fn check_tri<T: Element>(op: &str, t: &Tensor<T>) {
    if t.dim() < 2 {
        panic!(
            "funcz: {op}: input tensor must have at least 2 dimensions (input shape {:?})",
            t.shape()
        );
    }
}

impl<T: Element> Tensor<T> {
    /// Concatenates `tensors` along `dim` (aten `cat(tensors, dim)`,
    /// PyTorch's `torch.cat`). All must have the same rank and the same
    /// sizes except along `dim`; 1-d empty tensors are skipped, as
    /// PyTorch does. Accepts `&[&Tensor]` or `&[Tensor]`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![5.0, 6.0], &[2, 1]);
    /// let c = Tensor::cat(&[&a, &b], -1);
    /// assert_eq!(c.shape(), &[2, 3]);
    /// assert_eq!(c.to_vec(), vec![1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
    /// let v = vec![a.clone(), a.clone()];
    /// assert_eq!(Tensor::cat(&v, 0).shape(), &[4, 2]);
    /// ```
    #[track_caller]
    pub fn cat<B: Borrow<Tensor<T>>>(tensors: &[B], dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        if tensors.is_empty() {
            panic!("funcz: cat: expected a non-empty list of Tensors (argument 'tensors')");
        }
        let ts: Vec<&Tensor<T>> = tensors.iter().map(|t| t.borrow()).collect();
        for (i, t) in ts.iter().enumerate() {
            if t.dim() == 0 {
                panic!(
                    "funcz: cat: zero-dimensional tensor (at position {i}) cannot be \
                     concatenated (argument 'tensors')"
                );
            }
        }
        let legacy_empty = |t: &Tensor<T>| t.shape() == [0];
        let reference = ts.iter().find(|t| !legacy_empty(t)).copied();
        let out_shape: Vec<usize> = match reference {
            None => vec![0],
            Some(r) => {
                let d = norm_dim("cat", "dim", dim, r.shape());
                let mut shape = r.shape().to_vec();
                shape[d] = 0;
                for (i, t) in ts.iter().enumerate() {
                    if legacy_empty(t) {
                        continue;
                    }
                    if t.dim() != r.dim() {
                        panic!(
                            "funcz: cat: Tensors must have same number of dimensions: got {} \
                             and {} (shapes {:?} and {:?}, tensor number {i} in the list)",
                            r.dim(),
                            t.dim(),
                            r.shape(),
                            t.shape()
                        );
                    }
                    for k in 0..t.dim() {
                        if k != d && t.shape()[k] != r.shape()[k] {
                            panic!(
                                "funcz: cat: Sizes of tensors must match except in dimension \
                                 {d}. Expected size {} but got size {} for tensor number {i} \
                                 in the list (shapes {:?} and {:?})",
                                r.shape()[k],
                                t.shape()[k],
                                r.shape(),
                                t.shape()
                            );
                        }
                    }
                    shape[d] = shape[d].checked_add(t.shape()[d]).unwrap_or_else(|| {
                        panic!("funcz: cat: the size of dimension {d} overflows usize")
                    });
                }
                crate::storage::check_alloc::<T>("cat", &shape);
                shape
            }
        };
        trace::op(
            "cat",
            || vec![list_arg(tensors), Arg::Int(dim)],
            || {
                let Some(r) = reference else {
                    return Tensor::from_contiguous(Vec::new(), &out_shape);
                };
                let d = norm_dim("cat", "dim", dim, r.shape());
                let outer: usize = out_shape[..d].iter().product();
                let parts: Vec<&Tensor<T>> =
                    ts.iter().filter(|t| !legacy_empty(t)).copied().collect();
                let chunks: Vec<usize> = parts
                    .iter()
                    .map(|t| t.shape()[d..].iter().product())
                    .collect();
                Tensor::from_contiguous(concat(&parts, outer, &chunks), &out_shape)
            },
        )
    }

    /// Stacks same-shape `tensors` along a new dimension `dim` (aten
    /// `stack(tensors, dim)`; `dim` in `-(n+1)..=n`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<i64>::from_vec(vec![1, 2], &[2]);
    /// let b = Tensor::from_vec(vec![3, 4], &[2]);
    /// assert_eq!(Tensor::stack(&[&a, &b], 0).to_vec(), vec![1, 2, 3, 4]);
    /// let s = Tensor::stack(&[&a, &b], -1);
    /// assert_eq!(s.shape(), &[2, 2]);
    /// assert_eq!(s.to_vec(), vec![1, 3, 2, 4]);
    /// ```
    #[track_caller]
    pub fn stack<B: Borrow<Tensor<T>>>(tensors: &[B], dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        if tensors.is_empty() {
            panic!("funcz: stack: expects a non-empty TensorList (argument 'tensors')");
        }
        let ts: Vec<&Tensor<T>> = tensors.iter().map(|t| t.borrow()).collect();
        let first = ts[0].shape();
        for (i, t) in ts.iter().enumerate() {
            if t.shape() != first {
                panic!(
                    "funcz: stack: stack expects each tensor to be equal size, but got {first:?} \
                     at entry 0 and {:?} at entry {i}",
                    t.shape()
                );
            }
        }
        let mut with_new = first.to_vec();
        with_new.push(1);
        let d = norm_dim("stack", "dim", dim, &with_new);
        let mut out_shape = first.to_vec();
        out_shape.insert(d, ts.len());
        crate::storage::check_alloc::<T>("stack", &out_shape);
        trace::op(
            "stack",
            || vec![list_arg(tensors), Arg::Int(dim)],
            || {
                let outer: usize = first[..d].iter().product();
                let chunk: usize = first[d..].iter().product();
                let chunks = vec![chunk; ts.len()];
                Tensor::from_contiguous(concat(&ts, outer, &chunks), &out_shape)
            },
        )
    }

    /// Rolls the elements by `shifts[i]` along `dims[i]` (aten
    /// `roll(self, shifts, dims)`); with empty `dims` the tensor is rolled
    /// as if flattened (one shift).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
    /// assert_eq!(x.roll([1], [1]).to_vec(), vec![3, 1, 2, 6, 4, 5]);
    /// assert_eq!(x.roll([-1], [0]).to_vec(), vec![4, 5, 6, 1, 2, 3]);
    /// assert_eq!(x.roll([2], [0i64; 0]).to_vec(), vec![5, 6, 1, 2, 3, 4]);
    /// ```
    #[track_caller]
    pub fn roll(&self, shifts: impl IntoShape, dims: impl IntoShape) -> Tensor<T> {
        let (shifts, dims) = (shifts.into_shape(), dims.into_shape());
        if dims.is_empty() && shifts.len() != 1 {
            panic!(
                "funcz: roll: shifts and dimensions must align when dims is empty: expected one \
                 shift, got {shifts:?} (input shape {:?})",
                self.shape()
            );
        }
        if !dims.is_empty() && shifts.len() != dims.len() {
            panic!(
                "funcz: roll: shifts and dimensions must align. shifts: {}, dims: {} (input \
                 shape {:?})",
                shifts.len(),
                dims.len(),
                self.shape()
            );
        }
        // As PyTorch: one shift of an empty tensor is a copy, its dim
        // unchecked.
        if self.numel() == 0 && dims.len() == 1 && shifts.len() == 1 {
            return trace::op(
                "roll",
                || {
                    vec![
                        self.to_arg(),
                        Arg::Ints(shifts.clone()),
                        Arg::Ints(dims.clone()),
                    ]
                },
                || Tensor::from_contiguous(Vec::new(), self.shape()),
            );
        }
        if self.dim() == 0
            && let Some(d) = dims.first()
        {
            panic!(
                "funcz: roll: Dimension specified as {d} but tensor has no dimensions (input \
                 shape [], shifts {shifts:?})"
            );
        }
        let nd: Vec<usize> = dims
            .iter()
            .map(|&d| norm_dim("roll", "dims", d, self.shape()))
            .collect();
        trace::op(
            "roll",
            || {
                vec![
                    self.to_arg(),
                    Arg::Ints(shifts.clone()),
                    Arg::Ints(dims.clone()),
                ]
            },
            || {
                let shape = self.shape().to_vec();
                // A shift is taken modulo the size first, so that shifts
                // near i64::MIN and i64::MAX do not overflow.
                if nd.is_empty() {
                    let n = self.numel() as i64;
                    let v = self.to_vec();
                    let s = shifts[0].rem_euclid(n.max(1));
                    let out = (0..n)
                        .map(|i| v[(i - s).rem_euclid(n.max(1)) as usize])
                        .collect();
                    return Tensor::from_contiguous(out, &shape);
                }
                let st = row_major_strides(&shape);
                let out = gather_map(self, &shape, |o| {
                    let mut p = o.to_vec();
                    for (&s, &d) in shifts.iter().zip(&nd) {
                        let len = (shape[d] as i64).max(1);
                        p[d] = (p[d] as i64 - s.rem_euclid(len)).rem_euclid(len) as usize;
                    }
                    p.iter().zip(&st).map(|(a, b)| a * b).sum()
                });
                Tensor::from_contiguous(out, &shape)
            },
        )
    }

    /// Reverses the order of elements along each of `dims` (aten
    /// `flip(self, dims)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(x.flip([0]).to_vec(), vec![3.0, 4.0, 1.0, 2.0]);
    /// assert_eq!(x.flip([-1, 0]).to_vec(), vec![4.0, 3.0, 2.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn flip(&self, dims: impl IntoShape) -> Tensor<T> {
        let dims = dims.into_shape();
        let mut nd = norm_dims("flip", "dims", &dims, self.shape());
        if self.dim() == 0 {
            // A 0-d tensor's one (virtual) dim has one element.
            nd.clear();
        }
        trace::op(
            "flip",
            || vec![self.to_arg(), Arg::Ints(dims.clone())],
            || {
                let shape = self.shape().to_vec();
                let st = row_major_strides(&shape);
                let out = gather_map(self, &shape, |o| {
                    let mut p = o.to_vec();
                    for &d in &nd {
                        p[d] = shape[d] - 1 - o[d];
                    }
                    p.iter().zip(&st).map(|(a, b)| a * b).sum()
                });
                Tensor::from_contiguous(out, &shape)
            },
        )
    }

    /// Tiles the tensor `repeats[i]` times along each dimension (aten
    /// `repeat(self, repeats)`); extra leading `repeats` add dimensions.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2], &[2]);
    /// let r = x.repeat([2, 2]);
    /// assert_eq!(r.shape(), &[2, 4]);
    /// assert_eq!(r.to_vec(), vec![1, 2, 1, 2, 1, 2, 1, 2]);
    /// ```
    #[track_caller]
    pub fn repeat(&self, repeats: impl IntoShape) -> Tensor<T> {
        let repeats = repeats.into_shape();
        let rank = self.dim();
        if repeats.len() < rank {
            panic!(
                "funcz: repeat: Number of dimensions of repeat dims can not be smaller than \
                 number of dimensions of tensor (repeats {repeats:?}, input shape {:?})",
                self.shape()
            );
        }
        if let Some(r) = repeats.iter().find(|&&r| r < 0) {
            panic!(
                "funcz: repeat: Trying to create tensor with negative dimension {r}: argument \
                 'repeats' = {repeats:?} (input shape {:?})",
                self.shape()
            );
        }
        let pad = repeats.len() - rank;
        let in_shape: Vec<usize> = std::iter::repeat_n(1, pad)
            .chain(self.shape().iter().copied())
            .collect();
        let out_shape: Vec<usize> = in_shape
            .iter()
            .zip(&repeats)
            .map(|(&n, &r)| {
                n.checked_mul(r as usize)
                    .unwrap_or_else(|| panic!("funcz: repeat: size {n} x {r} overflows usize"))
            })
            .collect();
        crate::storage::check_alloc::<T>("repeat", &out_shape);
        trace::op(
            "repeat",
            || vec![self.to_arg(), Arg::Ints(repeats.clone())],
            || {
                let st = row_major_strides(&in_shape);
                let out = gather_map(self, &out_shape, |o| {
                    o.iter()
                        .zip(&in_shape)
                        .zip(&st)
                        .map(|((&i, &n), &s)| (i % n.max(1)) * s)
                        .sum()
                });
                Tensor::from_contiguous(out, &out_shape)
            },
        )
    }

    /// The lower triangle of the last two dims (aten `tril(self,
    /// diagonal)`): elements above diagonal `diagonal` are zeroed
    /// (`0` is the main diagonal, positive is above it).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec((1..=9).collect(), &[3, 3]);
    /// assert_eq!(x.tril(0).to_vec(), vec![1, 0, 0, 4, 5, 0, 7, 8, 9]);
    /// assert_eq!(x.tril(-1).to_vec(), vec![0, 0, 0, 4, 0, 0, 7, 8, 0]);
    /// ```
    #[track_caller]
    pub fn tril(&self, diagonal: impl AsI64) -> Tensor<T> {
        self.tri("tril", diagonal.as_i64(), true)
    }

    /// The upper triangle of the last two dims (aten `triu(self,
    /// diagonal)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec((1..=4).collect(), &[2, 2]);
    /// assert_eq!(x.triu(0).to_vec(), vec![1, 2, 0, 4]);
    /// assert_eq!(x.triu(1).to_vec(), vec![0, 2, 0, 0]);
    /// ```
    #[track_caller]
    pub fn triu(&self, diagonal: impl AsI64) -> Tensor<T> {
        self.tri("triu", diagonal.as_i64(), false)
    }

    #[track_caller]
    fn tri(&self, op: &'static str, k: i64, lower: bool) -> Tensor<T> {
        check_tri(op, self);
        trace::op(
            op,
            || vec![self.to_arg(), Arg::Int(k)],
            || Tensor::from_contiguous(tri_values(self, k, lower), self.shape()),
        )
    }

    /// In-place [`tril`](Tensor::tril) (aten `tril_(self, diagonal)`).
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<f32>::ones(&[2, 2]);
    /// m.tril_(0);
    /// assert_eq!(m.to_vec(), vec![1.0, 0.0, 1.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn tril_(&self, diagonal: impl AsI64) -> Tensor<T> {
        self.tri_("tril_", diagonal.as_i64(), true)
    }

    /// In-place [`triu`](Tensor::triu) (aten `triu_(self, diagonal)`).
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<f32>::ones(&[2, 2]);
    /// m.triu_(1);
    /// assert_eq!(m.to_vec(), vec![0.0, 1.0, 0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn triu_(&self, diagonal: impl AsI64) -> Tensor<T> {
        self.tri_("triu_", diagonal.as_i64(), false)
    }

    #[track_caller]
    fn tri_(&self, op: &'static str, k: i64, lower: bool) -> Tensor<T> {
        check_tri(op, self);
        check_writable(op, &self.layout);
        trace::op(
            op,
            || vec![self.to_arg(), Arg::Int(k)],
            || {
                let v = tri_values(self, k, lower);
                write_values(op, self, &v, self.shape());
                self.handle()
            },
        )
    }

    /// Removes each of `dims` whose size is 1 (others are kept), sharing
    /// storage (aten `squeeze(self, dims)`, PyTorch's `x.squeeze((0, 2))`).
    ///
    /// Note: `#[functionalize]` does not yet know this view (its op table
    /// has no row for it), so mutate through it only outside annotated
    /// functions; [`squeeze_dims_copy`](Tensor::squeeze_dims_copy) is the
    /// non-aliasing form.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[1, 3, 1, 2]);
    /// let v = x.squeeze_dims([0, -2, 1]);
    /// assert_eq!(v.shape(), &[3, 2]);
    /// assert!(v.same_storage(&x));
    /// ```
    #[track_caller]
    pub fn squeeze_dims(&self, dims: impl IntoShape) -> Tensor<T> {
        let dims = dims.into_shape();
        let layout = squeeze_dims_layout(
            &self.layout,
            &norm_dims("squeeze", "dim", &dims, self.shape()),
        );
        trace::op(
            "squeeze",
            || vec![self.to_arg(), Arg::Ints(dims.clone())],
            || self.with_layout(layout),
        )
    }

    /// [`squeeze_dims`](Tensor::squeeze_dims) into a fresh contiguous
    /// tensor (aten `squeeze_copy(self, dims)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[1, 3, 1]);
    /// let c = x.squeeze_dims_copy([0, 2]);
    /// assert_eq!(c.shape(), &[3]);
    /// assert!(!c.same_storage(&x));
    /// ```
    #[track_caller]
    pub fn squeeze_dims_copy(&self, dims: impl IntoShape) -> Tensor<T> {
        let dims = dims.into_shape();
        let layout = squeeze_dims_layout(
            &self.layout,
            &norm_dims("squeeze_copy", "dim", &dims, self.shape()),
        );
        trace::op(
            "squeeze_copy",
            || vec![self.to_arg(), Arg::Ints(dims.clone())],
            || Tensor::from_contiguous(self.with_layout(layout).to_vec(), &layout.shape),
        )
    }

    /// An uninitialised tensor in PyTorch (aten `empty(shape)`); here it
    /// is zero-filled, so reading it before writing is deterministic.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let e = Tensor::<f32>::empty(&[2, 3]);
    /// assert_eq!(e.shape(), &[2, 3]);
    /// assert_eq!(e.to_vec(), vec![0.0; 6]);
    /// ```
    #[track_caller]
    pub fn empty(shape: &[usize]) -> Tensor<T> {
        crate::dims::check_rank("empty", shape);
        let n = crate::storage::check_alloc::<T>("empty", shape);
        trace::op(
            "empty",
            || vec![shape.to_arg()],
            || Tensor::from_contiguous(huge::zeroed(T::zero(), n), shape),
        )
    }

    /// A tensor of `self`'s shape (aten `empty_like(self)`), zero-filled
    /// and contiguous.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::ones(&[2, 2]);
    /// assert_eq!(x.empty_like().to_vec(), vec![0; 4]);
    /// ```
    #[track_caller]
    pub fn empty_like(&self) -> Tensor<T> {
        crate::storage::check_alloc::<T>("empty_like", self.shape());
        trace::op(
            "empty_like",
            || vec![self.to_arg()],
            || Tensor::from_contiguous(huge::zeroed(T::zero(), self.numel()), self.shape()),
        )
    }
}

/// `l` without the listed (normalized) dims that have size 1.
fn squeeze_dims_layout(l: &Layout, dims: &[usize]) -> Layout {
    let mut shape = Vec::new();
    let mut strides = Vec::new();
    for d in 0..l.shape.len() {
        if dims.contains(&d) && l.shape[d] == 1 {
            continue;
        }
        shape.push(l.shape[d]);
        strides.push(l.strides[d]);
    }
    Layout::new(&shape, &strides, l.offset)
}
