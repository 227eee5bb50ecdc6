//! Ops along one dimension: `softmax`, `log_softmax` and `cumsum(_)`.

use crate::args::AsI64;
use crate::element::{Element, FloatElement};
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::kernel::{check_writable, write_values};
use super::lanes::{Lanes, norm_dim};

/// Softmax (or log-softmax) of every lane of `t` along `dim`, row-major.
fn softmax_values<T: FloatElement>(t: &Tensor<T>, dim: usize, log: bool) -> Vec<T> {
    let mut l = Lanes::of(t, dim);
    for lane in 0..l.count() {
        let mut m = T::neg_infinity();
        for k in 0..l.len {
            let x = l.data[l.at(lane, k)];
            if x > m || x.is_nan() {
                m = x;
            }
        }
        // A lane of -inf: PyTorch gives NaN (exp(-inf - -inf)); keep that.
        let mut s = 0.0f64;
        for k in 0..l.len {
            let x = l.data[l.at(lane, k)];
            s += Element::to_f64((x - m).exp());
        }
        let s = T::from_f64(s);
        let ls = s.ln();
        for k in 0..l.len {
            let i = l.at(lane, k);
            let x = l.data[i];
            l.data[i] = if log { x - m - ls } else { (x - m).exp() / s };
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
