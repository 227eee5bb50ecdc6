//! `sort` and `topk`: values with their `i64` indices.
//!
//! Both are stable: equal values keep their original order (the first
//! occurrence comes first, in both directions), which is what PyTorch's
//! `sort(stable=True)` guarantees and what its CPU `sort` and `topk` do.
//! NaN sorts above every number, as in PyTorch.

use std::cmp::Ordering;

use crate::args::AsI64;
use crate::element::Element;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::lanes::{Lanes, Pair, norm_dim};

/// Total order with NaN largest.
fn cmp_nan_last<T: Element>(a: T, b: T) -> Ordering {
    #[allow(clippy::eq_op)]
    match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// For every lane of `t` along `dim`: the first `k` elements in sorted
/// order (descending if `desc`) and their indices; output shape is `t`'s
/// with `dim` of size `k`.
fn sorted_lanes<T: Element>(t: &Tensor<T>, dim: usize, k: usize, desc: bool) -> Pair<T, i64> {
    let l = Lanes::of(t, dim);
    let mut shape = t.shape().to_vec();
    if !shape.is_empty() {
        shape[dim] = k;
    }
    let n: usize = shape.iter().product();
    let mut vals = vec![T::zero(); n];
    let mut idx = vec![0i64; n];
    let inner = l.inner.max(1);
    let out_at = |lane: usize, j: usize| (lane / inner) * k * inner + j * inner + lane % inner;
    let mut order: Vec<usize> = Vec::with_capacity(l.len);
    for lane in 0..l.count() {
        order.clear();
        order.extend(0..l.len);
        order.sort_by(|&a, &b| {
            let (x, y) = (l.data[l.at(lane, a)], l.data[l.at(lane, b)]);
            if desc {
                cmp_nan_last(y, x)
            } else {
                cmp_nan_last(x, y)
            }
        });
        for (j, &src) in order.iter().take(k).enumerate() {
            let o = out_at(lane, j);
            vals[o] = l.data[l.at(lane, src)];
            idx[o] = src as i64;
        }
    }
    Pair(
        Tensor::from_contiguous(vals, &shape),
        Tensor::from_contiguous(idx, &shape),
    )
}

impl<T: Element> Tensor<T> {
    /// Sorts along `dim` (aten `sort(self, dim, descending)`): returns
    /// `(values, indices)` with `indices` the positions of the values in
    /// the input. Stable: equal values keep their order. NaN is largest.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![3.0, 1.0, 2.0, 1.0], &[4]);
    /// let (v, i) = x.sort(0, false);
    /// assert_eq!(v.to_vec(), vec![1.0, 1.0, 2.0, 3.0]);
    /// assert_eq!(i.to_vec(), vec![1, 3, 2, 0]);
    /// let (v, i) = x.sort(-1, true);
    /// assert_eq!(v.to_vec(), vec![3.0, 2.0, 1.0, 1.0]);
    /// assert_eq!(i.to_vec(), vec![0, 2, 1, 3]);
    /// ```
    #[track_caller]
    pub fn sort(&self, dim: impl AsI64, descending: bool) -> (Tensor<T>, Tensor<i64>) {
        let dim = dim.as_i64();
        let d = norm_dim("sort", "dim", dim, self.shape());
        let len = if self.dim() == 0 { 1 } else { self.shape()[d] };
        let Pair(v, i) = trace::op(
            "sort",
            || vec![self.to_arg(), Arg::Int(dim), Arg::Bool(descending)],
            || sorted_lanes(self, d, len, descending),
        );
        (v, i)
    }

    /// The `k` largest (or, with `largest = false`, smallest) elements
    /// along `dim` and their indices (aten `topk(self, k, dim, largest,
    /// sorted)`), always in sorted order (PyTorch leaves the order
    /// unspecified when `sorted` is false). Among equal values the first
    /// occurrence wins.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 5, 3, 5, 0, 2], &[2, 3]);
    /// let (v, i) = x.topk(2, -1, true, true);
    /// assert_eq!(v.to_vec(), vec![5, 3, 5, 2]);
    /// assert_eq!(i.to_vec(), vec![1, 2, 0, 2]);
    /// let (v, _) = x.topk(1, 0, false, true);
    /// assert_eq!(v.to_vec(), vec![1, 0, 2]);
    /// ```
    #[track_caller]
    pub fn topk(
        &self,
        k: impl AsI64,
        dim: impl AsI64,
        largest: bool,
        sorted: bool,
    ) -> (Tensor<T>, Tensor<i64>) {
        let (k, dim) = (k.as_i64(), dim.as_i64());
        let d = norm_dim("topk", "dim", dim, self.shape());
        let len = if self.dim() == 0 { 1 } else { self.shape()[d] };
        if k < 0 || k as u64 > len as u64 {
            panic!(
                "funcz: topk: selected index k out of range: k = {k} for dimension {d} of size \
                 {len} (input shape {:?}, argument 'k')",
                self.shape()
            );
        }
        let Pair(v, i) = trace::op(
            "topk",
            || {
                vec![
                    self.to_arg(),
                    Arg::Int(k),
                    Arg::Int(dim),
                    Arg::Bool(largest),
                    Arg::Bool(sorted),
                ]
            },
            || sorted_lanes(self, d, k as usize, largest),
        );
        (v, i)
    }
}
