//! Ops along one dimension: `softmax`, `log_softmax` and `cumsum(_)`.

use crate::args::AsI64;
use crate::element::{Element, FloatElement};
use crate::storage::huge;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::kernel::{check_writable, write_values};
use super::lanes::{Lanes, norm_dim};

/// Accumulators of the lane reductions: independent partial results,
/// combined at the end, so that the loops do not wait on one running value
/// (and vectorize).
const PARTS: usize = 8;

/// The largest element of `xs`, NaN if any is NaN, `-inf` if `xs` is
/// empty (the order of the comparisons does not change the result).
#[inline]
fn lane_max<T: FloatElement>(xs: &[T]) -> T {
    let pick = |m: T, x: T| if x > m || x.is_nan() { x } else { m };
    let mut acc = [T::neg_infinity(); PARTS];
    let mut chunks = xs.chunks_exact(PARTS);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = pick(*a, x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a = pick(*a, x);
    }
    acc.into_iter().fold(T::neg_infinity(), pick)
}

/// The f64 sum of `xs`.
#[inline]
fn lane_sum_f64<T: FloatElement>(xs: &[T]) -> f64 {
    let mut acc = [0.0f64; PARTS];
    let mut chunks = xs.chunks_exact(PARTS);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += Element::to_f64(x);
        }
    }
    for (a, &x) in acc.iter_mut().zip(chunks.remainder()) {
        *a += Element::to_f64(x);
    }
    acc.iter().sum()
}

/// Softmax (or log-softmax) of one contiguous lane `x`, written to `out`
/// (same length): `m = max(x)`, `out = exp(x - m)`, `s = Σ out` (summed
/// in f64), then `out / s` (or `x - m - ln s`). A lane of -inf gives NaN,
/// as PyTorch (`exp(-inf - -inf)`).
#[inline]
fn softmax_lane<T: FloatElement>(x: &[T], out: &mut [T], log: bool) {
    let m = lane_max(x);
    for (o, &x) in out.iter_mut().zip(x) {
        *o = (x - m).exp();
    }
    let s = T::from_f64(lane_sum_f64(out));
    if log {
        let ls = s.ln();
        for (o, &x) in out.iter_mut().zip(x) {
            *o = x - m - ls;
        }
    } else {
        for o in out.iter_mut() {
            *o /= s;
        }
    }
}

/// Softmax (or log-softmax) of every lane of `t` along `dim`, row-major.
fn softmax_values<T: FloatElement>(t: &Tensor<T>, dim: usize, log: bool) -> Vec<T> {
    let n = t.numel();
    let len = if t.dim() == 0 { 1 } else { t.shape()[dim] };
    if n == 0 || len == 0 {
        return Vec::new();
    }
    let inner: usize = t.shape().get(dim + 1..).map_or(1, |s| s.iter().product());
    if inner == 1 {
        // Contiguous lanes (the last dim, the common case): read the input
        // in place if it is row-major, one pass per lane into the output.
        let mut out = huge::zeroed(T::zero(), n);
        if t.layout.is_contiguous() {
            let g = t.storage.read();
            let src = &g[t.layout.offset..t.layout.offset + n];
            for (x, o) in src.chunks_exact(len).zip(out.chunks_exact_mut(len)) {
                softmax_lane(x, o, log);
            }
        } else {
            let src = t.to_vec();
            for (x, o) in src.chunks_exact(len).zip(out.chunks_exact_mut(len)) {
                softmax_lane(x, o, log);
            }
        }
        return out;
    }
    // Strided lanes: each lane is gathered into a scratch row, computed
    // there and scattered back.
    let mut l = Lanes::of(t, dim);
    let mut row = vec![T::zero(); len];
    let mut res = vec![T::zero(); len];
    for lane in 0..l.count() {
        let start = l.at(lane, 0);
        for (k, r) in row.iter_mut().enumerate() {
            *r = l.data[start + k * inner];
        }
        softmax_lane(&row, &mut res, log);
        for (k, &r) in res.iter().enumerate() {
            l.data[start + k * inner] = r;
        }
    }
    l.data
}

/// Running sums of every lane of `t` along `dim`, row-major.
fn cumsum_values<T: Element>(t: &Tensor<T>, dim: usize) -> Vec<T> {
    let mut l = Lanes::of(t, dim);
    for lane in 0..l.count() {
        let mut acc = T::zero();
        for k in 0..l.len {
            let i = l.at(lane, k);
            acc += l.data[i];
            l.data[i] = acc;
        }
    }
    l.data
}

impl<T: FloatElement> Tensor<T> {
    /// `exp(x) / Σ exp(x)` along `dim` (aten `softmax(self, dim)`,
    /// computed stably by subtracting each lane's maximum). PyTorch has no
    /// in-place form.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 1.0, 0.0, 1000.0], &[2, 2]);
    /// assert_eq!(x.softmax(-1).to_vec(), vec![0.5, 0.5, 0.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn softmax(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let d = norm_dim("softmax", "dim", dim, self.shape());
        trace::op(
            "softmax",
            || vec![self.to_arg(), Arg::Int(dim)],
            || Tensor::from_contiguous(softmax_values(self, d, false), self.shape()),
        )
    }

    /// `x - log Σ exp(x)` along `dim` (aten `log_softmax(self, dim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![0.0, 0.0], &[2]);
    /// let y = x.log_softmax(0).to_vec();
    /// assert!((y[0] + 2f64.ln()).abs() < 1e-15);
    /// ```
    #[track_caller]
    pub fn log_softmax(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let d = norm_dim("log_softmax", "dim", dim, self.shape());
        trace::op(
            "log_softmax",
            || vec![self.to_arg(), Arg::Int(dim)],
            || Tensor::from_contiguous(softmax_values(self, d, true), self.shape()),
        )
    }
}

impl<T: Element> Tensor<T> {
    /// Running sums along `dim` (aten `cumsum(self, dim)`). The dtype is
    /// kept (PyTorch promotes `int32` input to `int64`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2, 3, 4], &[2, 2]);
    /// assert_eq!(x.cumsum(0).to_vec(), vec![1, 2, 4, 6]);
    /// assert_eq!(x.cumsum(-1).to_vec(), vec![1, 3, 3, 7]);
    /// ```
    #[track_caller]
    pub fn cumsum(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let d = norm_dim("cumsum", "dim", dim, self.shape());
        trace::op(
            "cumsum",
            || vec![self.to_arg(), Arg::Int(dim)],
            || Tensor::from_contiguous(cumsum_values(self, d), self.shape()),
        )
    }

    /// In-place [`cumsum`](Tensor::cumsum) (aten `cumsum_(self, dim)`).
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// x.cumsum_(0);
    /// assert_eq!(x.to_vec(), vec![1.0, 3.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn cumsum_(&self, dim: impl AsI64) -> Tensor<T> {
        let dim = dim.as_i64();
        let d = norm_dim("cumsum_", "dim", dim, self.shape());
        check_writable("cumsum_", &self.layout);
        trace::op(
            "cumsum_",
            || vec![self.to_arg(), Arg::Int(dim)],
            || {
                let v = cumsum_values(self, d);
                write_values("cumsum_", self, &v, self.shape());
                self.handle()
            },
        )
    }
}
