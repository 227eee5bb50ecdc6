//! Masks: `where_self` (PyTorch's `torch.where(cond, x, y)`), the logical
//! ops, `any`/`all`, and the masked writes `masked_fill(_)` and
//! `masked_scatter(_)`.

use super::overlap::assert_no_partial_overlap;
use crate::element::{Element, Scalar};
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::trace::{self, ToArg};
use crate::view::gather::gather_from;

use super::dtype::{broadcast, check_into, check_writable, values, values_as, wrap_dim};
use super::{Operand, OperandRef};

/// Elementwise `f(a, b)` over the broadcast shape of two tensors of any
/// dtypes, as a mask.
#[track_caller]
fn logical2<A: Scalar, B: Scalar>(
    name: &'static str,
    a: &Tensor<A>,
    b: &Tensor<B>,
    f: impl Fn(bool, bool) -> bool,
) -> Tensor<bool> {
    let shape = broadcast(name, "other", a.shape(), b.shape());
    trace::op(
        name,
        || vec![a.to_arg(), b.to_arg()],
        || {
            let out: Vec<bool> = values_as(a, &shape)
                .into_iter()
                .zip(values_as(b, &shape))
                .map(|(x, y)| f(bool::cast_from(x), bool::cast_from(y)))
                .collect();
            Tensor::from_contiguous(out, &shape)
        },
    )
}

impl<T: Scalar> Tensor<T> {
    /// Elementwise logical and (aten `logical_and`): nonzero is true; any
    /// dtypes, broadcasting; returns a mask.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<bool>::from_vec(vec![true, true, false], &[3]);
    /// let b = Tensor::<f32>::from_vec(vec![1.0, 0.0, 1.0], &[3]);
    /// assert_eq!(a.logical_and(&b).to_vec(), vec![true, false, false]);
    /// ```
    #[track_caller]
    pub fn logical_and<U: Scalar>(&self, other: &Tensor<U>) -> Tensor<bool> {
        logical2("logical_and", self, other, |x, y| x && y)
    }

    /// Elementwise logical or (aten `logical_or`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<bool>::from_vec(vec![true, false, false], &[3]);
    /// let b = Tensor::<bool>::from_vec(vec![false, false, true], &[3]);
    /// assert_eq!(a.logical_or(&b).to_vec(), vec![true, false, true]);
    /// ```
    #[track_caller]
    pub fn logical_or<U: Scalar>(&self, other: &Tensor<U>) -> Tensor<bool> {
        logical2("logical_or", self, other, |x, y| x || y)
    }

    /// Elementwise logical exclusive or (aten `logical_xor`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<bool>::from_vec(vec![true, true], &[2]);
    /// let b = Tensor::<bool>::from_vec(vec![true, false], &[2]);
    /// assert_eq!(a.logical_xor(&b).to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn logical_xor<U: Scalar>(&self, other: &Tensor<U>) -> Tensor<bool> {
        logical2("logical_xor", self, other, |x, y| x != y)
    }

    /// Elementwise logical not (aten `logical_not`): true where `self` is
    /// zero (or `false`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![0, 3], &[2]);
    /// assert_eq!(x.logical_not().to_vec(), vec![true, false]);
    /// ```
    #[track_caller]
    pub fn logical_not(&self) -> Tensor<bool> {
        trace::op(
            "logical_not",
            || vec![self.to_arg()],
            || {
                let out: Vec<bool> = values(self)
                    .into_iter()
                    .map(|x| !bool::cast_from(x))
                    .collect();
                Tensor::from_contiguous(out, self.shape())
            },
        )
    }

    /// True (a 0-d mask) if any element is nonzero (aten `any`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<bool>::from_vec(vec![false, true], &[2]);
    /// assert!(m.any().item());
    /// assert!(!Tensor::<f32>::zeros(&[3]).any().item());
    /// ```
    #[track_caller]
    pub fn any(&self) -> Tensor<bool> {
        trace::op(
            "any",
            || vec![self.to_arg()],
            || Tensor::scalar(values(self).into_iter().any(bool::cast_from)),
        )
    }

    /// True (a 0-d mask) if every element is nonzero (aten `all`); true
    /// for an empty tensor.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<bool>::from_vec(vec![false, true], &[2]);
    /// assert!(!m.all().item());
    /// assert!(m.select(0, 1).all().item());
    /// ```
    #[track_caller]
    pub fn all(&self) -> Tensor<bool> {
        trace::op(
            "all",
            || vec![self.to_arg()],
            || Tensor::scalar(values(self).into_iter().all(bool::cast_from)),
        )
    }

    /// [`any`](Tensor::any) over dimension `dim` (aten `any(self, dim,
    /// keepdim)`), negative dims counted from the end.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<bool>::from_vec(vec![false, true, false, false], &[2, 2]);
    /// assert_eq!(m.any_dim(1, false).to_vec(), vec![true, false]);
    /// assert_eq!(m.any_dim(-2, true).shape(), &[1, 2]);
    /// ```
    #[track_caller]
    pub fn any_dim(&self, dim: i64, keepdim: bool) -> Tensor<bool> {
        self.reduce_bool("any", dim, keepdim, false, |acc, x| acc || x)
    }

    /// [`all`](Tensor::all) over dimension `dim` (aten `all(self, dim,
    /// keepdim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 0.0, 3.0], &[2, 2]);
    /// assert_eq!(x.all_dim(0, false).to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn all_dim(&self, dim: i64, keepdim: bool) -> Tensor<bool> {
        self.reduce_bool("all", dim, keepdim, true, |acc, x| acc && x)
    }

    #[track_caller]
    fn reduce_bool(
        &self,
        name: &'static str,
        dim: i64,
        keepdim: bool,
        init: bool,
        f: impl Fn(bool, bool) -> bool,
    ) -> Tensor<bool> {
        let d = wrap_dim(name, dim, self.dim());
        trace::op(
            name,
            || vec![self.to_arg(), dim.to_arg(), keepdim.to_arg()],
            || {
                let shape = self.shape();
                if shape.is_empty() {
                    return Tensor::scalar(bool::cast_from(self.item()));
                }
                let (outer, n, inner) = split_at_dim(shape, d);
                let v = values(self);
                let mut out = vec![init; outer * inner];
                for o in 0..outer {
                    for k in 0..n {
                        for i in 0..inner {
                            let x = bool::cast_from(v[(o * n + k) * inner + i]);
                            out[o * inner + i] = f(out[o * inner + i], x);
                        }
                    }
                }
                let mut oshape = shape.to_vec();
                if keepdim {
                    oshape[d] = 1;
                } else {
                    oshape.remove(d);
                }
                Tensor::from_contiguous(out, &oshape)
            },
        )
    }
}

/// The sizes before `d`, at `d` and after `d` of `shape`, multiplied out.
pub(crate) fn split_at_dim(shape: &[usize], d: usize) -> (usize, usize, usize) {
    let outer = shape[..d].iter().product();
    let inner = shape[d + 1..].iter().product();
    (outer, shape[d], inner)
}

impl<T: Element> Tensor<T> {
    /// Elementwise `if cond { self } else { other }` (aten `where(condition,
    /// self, other)`, PyTorch's `torch.where(cond, x, y)` and
    /// `x.where(cond, y)`; `where` is a Rust keyword). All three broadcast;
    /// `other` is a tensor or a scalar. To put the scalar first, negate
    /// the mask: `y.where_self(&cond.logical_not(), 1.0)`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, -2.0, 3.0], &[3]);
    /// let relu = x.where_self(&x.gt(0.0), 0.0);
    /// assert_eq!(relu.to_vec(), vec![1.0, 0.0, 3.0]);
    /// let y = Tensor::from_vec(vec![10.0, 20.0, 30.0], &[3]);
    /// assert_eq!(x.where_self(&x.lt(0.0), &y).to_vec(), vec![10.0, -2.0, 30.0]);
    /// ```
    #[track_caller]
    pub fn where_self(&self, condition: &Tensor<bool>, other: impl Operand<T>) -> Tensor<T> {
        let other = other.operand();
        let s = broadcast("where", "condition", self.shape(), condition.shape());
        let shape = broadcast("where", "other", &s, other.shape());
        trace::op(
            "where",
            || vec![condition.to_arg(), self.to_arg(), other.to_arg()],
            || {
                let c = values_as(condition, &shape);
                let a = values_as(self, &shape);
                let out: Vec<T> = match other {
                    OperandRef::Scalar(y) => c
                        .into_iter()
                        .zip(a)
                        .map(|(c, x)| if c { x } else { y })
                        .collect(),
                    OperandRef::Tensor(t) => c
                        .into_iter()
                        .zip(a)
                        .zip(values_as(t, &shape))
                        .map(|((c, x), y)| if c { x } else { y })
                        .collect(),
                };
                Tensor::from_contiguous(out, &shape)
            },
        )
    }

    /// Writes `value` where `mask` is true (aten `masked_fill_`); the mask
    /// broadcasts to `self`'s shape; `value` is a scalar or a 0-d tensor.
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let scores = Tensor::<f32>::zeros(&[2, 2]);
    /// let causal = Tensor::<bool>::from_vec(vec![false, true, false, false], &[2, 2]);
    /// scores.masked_fill_(&causal, f32::NEG_INFINITY);
    /// assert_eq!(scores.to_vec(), vec![0.0, f32::NEG_INFINITY, 0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn masked_fill_(&self, mask: &Tensor<bool>, value: impl Operand<T>) -> Tensor<T> {
        let value = value.operand();
        let v = fill_value("masked_fill_", &value);
        check_into("masked_fill_", "mask", self.shape(), mask.shape());
        check_writable("masked_fill_", &self.layout);
        assert_no_partial_overlap("masked_fill_", "mask", self, mask);
        trace::op(
            "masked_fill_",
            || vec![self.to_arg(), mask.to_arg(), value.to_arg()],
            || {
                if !masked_fill_rows(self, mask, v) {
                    let m = values_as(mask, self.shape());
                    if m.iter().any(|&b| b) {
                        let mut d = self.storage.write();
                        for (off, b) in self.layout.offsets().zip(m) {
                            if b {
                                d[off] = v;
                            }
                        }
                    }
                }
                self.handle()
            },
        )
    }

    /// The functional [`masked_fill_`](Tensor::masked_fill_) (aten
    /// `masked_fill`): a fresh tensor of the broadcast shape of `self` and
    /// `mask`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let cols = Tensor::<bool>::from_vec(vec![true, false], &[2]);
    /// assert_eq!(x.masked_fill(&cols, 0.0).to_vec(), vec![0.0, 2.0, 0.0, 4.0]);
    /// assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    /// ```
    #[track_caller]
    pub fn masked_fill(&self, mask: &Tensor<bool>, value: impl Operand<T>) -> Tensor<T> {
        let value = value.operand();
        let v = fill_value("masked_fill", &value);
        let shape = broadcast("masked_fill", "mask", self.shape(), mask.shape());
        trace::op(
            "masked_fill",
            || vec![self.to_arg(), mask.to_arg(), value.to_arg()],
            || {
                let out: Vec<T> = values_as(self, &shape)
                    .into_iter()
                    .zip(values_as(mask, &shape))
                    .map(|(x, b)| if b { v } else { x })
                    .collect();
                Tensor::from_contiguous(out, &shape)
            },
        )
    }
}

/// `masked_fill_` row by row, without gathering the mask: when `dst`'s
/// last dimension has stride 1 and the mask, broadcast to `dst`'s shape,
/// has stride 1 or 0 there (both wholly row-major: one row). Each row is a
/// branch-free select over plain slices. As in the general path, nothing
/// is locked for writing when no mask element is true (the mask is
/// scanned under its own lock first). Returns false
/// (nothing done) when the layouts do not fit. `dst` and `mask` never
/// share a storage (a mask is `bool`, which is not an [`Element`]).
fn masked_fill_rows<T: Element>(dst: &Tensor<T>, mask: &Tensor<bool>, v: T) -> bool {
    let dl = &dst.layout;
    let Some(ml) = crate::layout::broadcast_layout(&mask.layout, &dl.shape) else {
        return false;
    };
    let n = dl.numel();
    if n == 0 {
        return true;
    }
    // Rows: `len` elements each, starting at the offsets of `rows_d` and
    // `rows_m`; `ms` is the mask's stride along a row (1 or 0).
    let nd = dl.ndim();
    let (rows_d, rows_m, len, ms) = if dl.is_contiguous() && ml.is_contiguous() {
        let one = |off| Layout::new(&[], &[], off);
        (one(dl.offset), one(ml.offset), n, 1)
    } else {
        let (len, ds, ms) = (dl.shape[nd - 1], dl.strides[nd - 1], ml.strides[nd - 1]);
        if (ds != 1 && len > 1) || ms > 1 {
            return false;
        }
        let rows = |l: &Layout| Layout::new(&l.shape[..nd - 1], &l.strides[..nd - 1], l.offset);
        (rows(dl), rows(&ml), len, ms)
    };
    let row_len = if ms == 1 { len } else { 1 };
    let any = {
        let m = mask.storage.read();
        rows_m
            .offsets()
            .any(|off| m[off..off + row_len].contains(&true))
    };
    if !any {
        return true;
    }
    // Both locks, in address order (the crate's rule for holding two).
    let (m, mut d) = if mask.storage_key() < dst.storage_key() {
        let m = mask.storage.read();
        (m, dst.storage.write())
    } else {
        let d = dst.storage.write();
        (mask.storage.read(), d)
    };
    for (od, om) in rows_d.offsets().zip(rows_m.offsets()) {
        let row = &mut d[od..od + len];
        match &m[om..om + row_len] {
            [b] if ms == 0 => {
                if *b {
                    row.fill(v);
                }
            }
            mrow => {
                for (x, &b) in row.iter_mut().zip(mrow) {
                    *x = if b { v } else { *x };
                }
            }
        }
    }
    true
}

/// The value of a fill: a scalar or the element of a 0-d tensor.
#[track_caller]
pub(crate) fn fill_value<T: Element>(op: &str, value: &OperandRef<'_, T>) -> T {
    match value {
        OperandRef::Scalar(v) => *v,
        OperandRef::Tensor(t) => {
            if t.dim() != 0 {
                panic!(
                    "funcz: {op}: only supports a 0-dimensional value tensor, but got tensor \
                     with {} dimension(s) (shape {:?})",
                    t.dim(),
                    t.shape()
                );
            }
            t.item()
        }
    }
}

impl<T: Scalar> Tensor<T> {
    /// Copies consecutive elements of `source` (row-major) into the
    /// positions where `mask` is true, in row-major order (aten
    /// `masked_scatter_`); the mask broadcasts to `self`'s shape and
    /// `source` needs at least as many elements as the mask has true
    /// entries. Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2, 2]);
    /// let m = Tensor::<bool>::from_vec(vec![true, false, true, true], &[2, 2]);
    /// x.masked_scatter_(&m, &Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]));
    /// assert_eq!(x.to_vec(), vec![1.0, 0.0, 2.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn masked_scatter_(&self, mask: &Tensor<bool>, source: &Tensor<T>) -> Tensor<T> {
        check_into("masked_scatter_", "mask", self.shape(), mask.shape());
        check_writable("masked_scatter_", &self.layout);
        let m = values_as(mask, self.shape());
        check_source_len("masked_scatter_", &m, source);
        trace::op(
            "masked_scatter_",
            || vec![self.to_arg(), mask.to_arg(), source.to_arg()],
            || {
                let src = values(source);
                let mut d = self.storage.write();
                let mut k = 0;
                for (off, b) in self.layout.offsets().zip(m) {
                    if b {
                        d[off] = src[k];
                        k += 1;
                    }
                }
                drop(d);
                self.handle()
            },
        )
    }

    /// The functional [`masked_scatter_`](Tensor::masked_scatter_) (aten
    /// `masked_scatter`): a fresh tensor of the broadcast shape of `self`
    /// and `mask`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2, 3], &[3]);
    /// let m = Tensor::<bool>::from_vec(vec![false, true, true], &[3]);
    /// let y = x.masked_scatter(&m, &Tensor::from_vec(vec![7, 8, 9], &[3]));
    /// assert_eq!(y.to_vec(), vec![1, 7, 8]);
    /// ```
    #[track_caller]
    pub fn masked_scatter(&self, mask: &Tensor<bool>, source: &Tensor<T>) -> Tensor<T> {
        let shape = broadcast("masked_scatter", "mask", self.shape(), mask.shape());
        let m = values_as(mask, &shape);
        check_source_len("masked_scatter", &m, source);
        trace::op(
            "masked_scatter",
            || vec![self.to_arg(), mask.to_arg(), source.to_arg()],
            || {
                let src = {
                    let g = source.storage.read();
                    gather_from(&g, &source.layout)
                };
                let mut k = 0;
                let out: Vec<T> = values_as(self, &shape)
                    .into_iter()
                    .zip(m)
                    .map(|(x, b)| {
                        if b {
                            k += 1;
                            src[k - 1]
                        } else {
                            x
                        }
                    })
                    .collect();
                Tensor::from_contiguous(out, &shape)
            },
        )
    }
}

#[track_caller]
fn check_source_len<T: Scalar>(op: &str, mask: &[bool], source: &Tensor<T>) {
    let n = mask.iter().filter(|&&b| b).count();
    if source.numel() < n {
        panic!(
            "funcz: {op}: Number of elements of source < number of ones in mask ({} < {n}; \
             source shape {:?})",
            source.numel(),
            source.shape()
        );
    }
}
