//! Reductions: `sum`, `sum_dim`, `mean`, `mean_dim`.

use ndarray::{ArrayView1, Axis};

use crate::args::AsI64;
use crate::element::{Element, FloatElement};
use crate::layout::normalize_dim;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

/// Sum of all elements (8 interleaved accumulators on contiguous data,
/// which is both fast and more accurate than one running sum).
fn total<T: Element>(t: &Tensor<T>) -> T {
    if t.numel() == 0 {
        return T::zero();
    }
    t.with_contiguous(|s| ArrayView1::from(s).sum())
        .unwrap_or_else(|| t.with_array(|a| a.sum()))
}

/// Sums over `dim` (already normalized), returning values and shape.
fn sum_over<T: Element>(t: &Tensor<T>, dim: usize, keepdim: bool) -> (Vec<T>, Vec<usize>) {
    if t.dim() == 0 {
        return (t.to_vec(), Vec::new());
    }
    let mut shape = t.shape().to_vec();
    if keepdim {
        shape[dim] = 1;
    } else {
        shape.remove(dim);
    }
    if t.numel() == 0 {
        return (vec![T::zero(); shape.iter().product()], shape);
    }
    let vals = t.with_array(|a| a.sum_axis(Axis(dim)).iter().copied().collect::<Vec<T>>());
    (vals, shape)
}

fn dim_args<T: Element>(t: &Tensor<T>, dim: i64, keepdim: bool) -> Vec<Arg> {
    vec![t.to_arg(), Arg::Ints(vec![dim]), Arg::Bool(keepdim)]
}

impl<T: Element> Tensor<T> {
    /// Sum of all elements as a 0-d tensor (aten `sum`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2, 3, 4], &[2, 2]);
    /// assert_eq!(x.sum().shape(), &[] as &[usize]);
    /// assert_eq!(x.sum().item(), 10);
    /// ```
    #[track_caller]
    pub fn sum(&self) -> Tensor<T> {
        trace::op(
            "sum",
            || vec![self.to_arg()],
            || Tensor::from_contiguous(vec![total(self)], &[]),
        )
    }

    /// Sum over dimension `dim` (negative counts from the end); with
    /// `keepdim` the reduced dimension stays with size 1 (aten `sum` with a
    /// dim list, recorded as `sum(self, [dim], keepdim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// assert_eq!(x.sum_dim(0, false).to_vec(), vec![5.0, 7.0, 9.0]);
    /// assert_eq!(x.sum_dim(-1, true).shape(), &[2, 1]);
    /// assert_eq!(x.sum_dim(-1, true).to_vec(), vec![6.0, 15.0]);
    /// ```
    #[track_caller]
    pub fn sum_dim(&self, dim: impl AsI64, keepdim: bool) -> Tensor<T> {
        let dim = dim.as_i64();
        let d = normalize_dim("sum", dim, self.dim());
        trace::op(
            "sum",
            || dim_args(self, dim, keepdim),
            || {
                let (v, s) = sum_over(self, d, keepdim);
                Tensor::from_contiguous(v, &s)
            },
        )
    }
}

impl<T: FloatElement> Tensor<T> {
    /// Mean of all elements as a 0-d tensor (aten `mean`); NaN when empty.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 6.0], &[4]);
    /// assert_eq!(x.mean().item(), 3.0);
    /// ```
    #[track_caller]
    pub fn mean(&self) -> Tensor<T> {
        trace::op(
            "mean",
            || vec![self.to_arg()],
            || {
                let n = T::from_f64(self.numel() as f64);
                Tensor::from_contiguous(vec![total(self) / n], &[])
            },
        )
    }

    /// Mean over dimension `dim` (aten `mean` with a dim list).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 5.0], &[2, 2]);
    /// assert_eq!(x.mean_dim(1, false).to_vec(), vec![1.5, 4.0]);
    /// ```
    #[track_caller]
    pub fn mean_dim(&self, dim: impl AsI64, keepdim: bool) -> Tensor<T> {
        let dim = dim.as_i64();
        let d = normalize_dim("mean", dim, self.dim());
        trace::op(
            "mean",
            || dim_args(self, dim, keepdim),
            || {
                let count = if self.dim() == 0 { 1 } else { self.shape()[d] };
                let n = T::from_f64(count as f64);
                let (mut v, s) = sum_over(self, d, keepdim);
                for x in &mut v {
                    *x /= n;
                }
                Tensor::from_contiguous(v, &s)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::Layout;
    use crate::tensor::Tensor;

    #[test]
    fn reductions_of_a_strided_alias() {
        // x = [[1,2,3],[4,5,6]]; xt = x.t() = [[1,4],[2,5],[3,6]]
        let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let xt = x.with_layout(Layout::new(&[3, 2], &[1, 3], 0));
        assert_eq!(xt.sum().item(), 21.0);
        assert_eq!(xt.sum_dim(0, false).to_vec(), vec![6.0, 15.0]);
        assert_eq!(xt.sum_dim(1, false).to_vec(), vec![5.0, 7.0, 9.0]);
        assert_eq!(xt.mean_dim(1, true).to_vec(), vec![2.5, 3.5, 4.5]);
        assert_eq!(xt.mean_dim(1, true).shape(), &[3, 1]);
    }
}
