//! Whole-tensor comparisons: `allclose` and `equal`.

use ndarray::Zip;

use crate::element::Element;
use crate::layout::{broadcast_layout, broadcast_shapes};
use crate::tensor::{Tensor, array_view};

use super::kernel::with_reads;

/// True if `pred` holds for every pair of elements of `a` and `b`
/// broadcast to `shape`.
fn all_pairs<T: Element>(
    a: &Tensor<T>,
    b: &Tensor<T>,
    shape: &[usize],
    pred: impl Fn(T, T) -> bool,
) -> bool {
    let la = broadcast_layout(&a.layout, shape).expect("funcz: internal: checked shape");
    let lb = broadcast_layout(&b.layout, shape).expect("funcz: internal: checked shape");
    if la.numel() == 0 {
        return true;
    }
    with_reads([a, b], |[da, db]| {
        Zip::from(array_view(da, &la))
            .and(array_view(db, &lb))
            .all(|&x, &y| pred(x, y))
    })
}

impl<T: Element> Tensor<T> {
    /// True if every pair of elements (broadcast together) satisfies
    /// `|self - other| <= atol + rtol * |other|`, as `torch.allclose`: equal
    /// infinities are close, NaN is never close to anything.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let b = Tensor::from_vec(vec![1.0, 2.000001], &[2]);
    /// assert!(a.allclose(&b, 1e-5, 1e-8));
    /// assert!(!a.allclose(&Tensor::from_vec(vec![1.0, 2.1], &[2]), 1e-5, 1e-8));
    /// ```
    pub fn allclose(&self, other: &Tensor<T>, rtol: f64, atol: f64) -> bool {
        let shape = broadcast_shapes("allclose", self.shape(), other.shape());
        all_pairs(self, other, &shape, |x, y| {
            let (x, y) = (Element::to_f64(x), Element::to_f64(y));
            let err = (x - y).abs();
            x == y || (err.is_finite() && err <= atol + rtol * y.abs())
        })
    }

    /// True if both tensors have the same shape and exactly the same
    /// elements (as `torch.equal`, except that NaN equals NaN here, so a
    /// tensor always equals its clone).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f64>::from_vec(vec![1.0, f64::NAN], &[2]);
    /// assert!(a.equal(&a.clone()));
    /// assert!(!a.equal(&Tensor::from_vec(vec![1.0, f64::NAN], &[1, 2])));
    /// ```
    pub fn equal(&self, other: &Tensor<T>) -> bool {
        if self.shape() != other.shape() {
            return false;
        }
        #[allow(clippy::eq_op)]
        let same = |x: T, y: T| x == y || (x != x && y != y);
        all_pairs(self, other, &self.layout.shape, same)
    }
}
