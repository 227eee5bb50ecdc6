//! Comparisons: the elementwise `lt`, `le`, `gt`, `ge`, `eq`, `ne` (against
//! a tensor or a scalar, broadcasting) that return a `Tensor<bool>` mask,
//! and the whole-tensor `allclose` and `equal`.

use ndarray::Zip;

use crate::element::{Element, Scalar};
use crate::layout::{broadcast_layout, broadcast_shapes};
use crate::tensor::{Tensor, array_view};
use crate::trace::{self, ToArg};

use super::dtype::{broadcast, values, values_as};
use super::kernel::with_reads;
use super::{Operand, OperandRef};

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
    #[track_caller]
    pub fn allclose(&self, other: &Tensor<T>, rtol: f64, atol: f64) -> bool {
        let shape = broadcast_shapes("allclose", self.shape(), other.shape());
        all_pairs(self, other, &shape, |x, y| {
            let (x, y) = (Element::to_f64(x), Element::to_f64(y));
            let err = (x - y).abs();
            x == y || (err.is_finite() && err <= atol + rtol * y.abs())
        })
    }
}

impl<T: Scalar> Tensor<T> {
    /// True if both tensors have the same shape and the same elements, as
    /// `torch.equal`: elements compare with `==`, so a tensor holding NaN
    /// equals nothing, not even itself.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
    /// assert!(a.equal(&a.clone()));
    /// assert!(!a.equal(&Tensor::from_vec(vec![1.0, 2.0], &[1, 2])));
    /// let n = Tensor::<f64>::from_vec(vec![1.0, f64::NAN], &[2]);
    /// assert!(!n.equal(&n));
    /// let m = Tensor::<bool>::from_vec(vec![true, true], &[2]);
    /// assert!(m.equal(&a.lt(3.0)));
    /// ```
    pub fn equal(&self, other: &Tensor<T>) -> bool {
        if self.shape() != other.shape() {
            return false;
        }
        let same = |x: T, y: T| x == y;
        values(self)
            .into_iter()
            .zip(values(other))
            .all(|(x, y)| same(x, y))
    }
}

/// Elementwise `f(self, other)` over the broadcast shape, as a mask.
#[track_caller]
fn compare<T: Element>(
    name: &'static str,
    a: &Tensor<T>,
    b: OperandRef<'_, T>,
    f: impl Fn(T, T) -> bool,
) -> Tensor<bool> {
    let shape = broadcast(name, "other", a.shape(), b.shape());
    trace::op(
        name,
        || vec![a.to_arg(), b.to_arg()],
        || {
            let xs = values_as(a, &shape);
            let out: Vec<bool> = match b {
                OperandRef::Scalar(s) => xs.into_iter().map(|x| f(x, s)).collect(),
                OperandRef::Tensor(t) => xs
                    .into_iter()
                    .zip(values_as(t, &shape))
                    .map(|(x, y)| f(x, y))
                    .collect(),
            };
            Tensor::from_contiguous(out, &shape)
        },
    )
}

impl<T: Element> Tensor<T> {
    /// `self < other` elementwise (aten `lt`), broadcasting; `other` is a
    /// tensor or a scalar. NaN compares false.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// assert_eq!(x.lt(2.5).to_vec(), vec![true, true, false, false]);
    /// let col = Tensor::from_vec(vec![1.5, 3.5], &[2, 1]);
    /// assert_eq!(x.lt(&col).to_vec(), vec![true, false, true, false]);
    /// ```
    #[track_caller]
    pub fn lt(&self, other: impl Operand<T>) -> Tensor<bool> {
        compare("lt", self, other.operand(), |x, y| x < y)
    }

    /// `self <= other` elementwise (aten `le`), broadcasting.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2, 3], &[3]);
    /// assert_eq!(x.le(2).to_vec(), vec![true, true, false]);
    /// ```
    #[track_caller]
    pub fn le(&self, other: impl Operand<T>) -> Tensor<bool> {
        compare("le", self, other.operand(), |x, y| x <= y)
    }

    /// `self > other` elementwise (aten `gt`), broadcasting.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![-1.0, 0.0, f64::NAN], &[3]);
    /// assert_eq!(x.gt(-0.5).to_vec(), vec![false, true, false]);
    /// ```
    #[track_caller]
    pub fn gt(&self, other: impl Operand<T>) -> Tensor<bool> {
        compare("gt", self, other.operand(), |x, y| x > y)
    }

    /// `self >= other` elementwise (aten `ge`), broadcasting.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let y = Tensor::from_vec(vec![2.0, 2.0], &[2]);
    /// assert_eq!(x.ge(&y).to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn ge(&self, other: impl Operand<T>) -> Tensor<bool> {
        compare("ge", self, other.operand(), |x, y| x >= y)
    }

    /// `self == other` elementwise (aten `eq`), broadcasting. NaN is not
    /// equal to itself (unlike [`equal`](Tensor::equal), which compares
    /// whole tensors).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![0, 1, 2, 1], &[4]);
    /// assert_eq!(x.eq(1).to_vec(), vec![false, true, false, true]);
    /// ```
    #[track_caller]
    pub fn eq(&self, other: impl Operand<T>) -> Tensor<bool> {
        compare("eq", self, other.operand(), |x, y| x == y)
    }

    /// `self != other` elementwise (aten `ne`), broadcasting; NaN is not
    /// equal to anything.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![0.0, f32::NAN], &[2]);
    /// assert_eq!(x.ne(0.0).to_vec(), vec![false, true]);
    /// ```
    #[track_caller]
    pub fn ne(&self, other: impl Operand<T>) -> Tensor<bool> {
        compare("ne", self, other.operand(), |x, y| x != y)
    }
}
