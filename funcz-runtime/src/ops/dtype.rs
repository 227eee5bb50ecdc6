//! Casts between dtypes (`to_dtype`, `float`, `double`, `long`, `int`,
//! `bool`), recorded as aten `_to_copy`, and the helpers the mask and
//! indexed ops share: reading a tensor's values broadcast to a shape,
//! checked dims and broadcasting that report at the caller's line.

use crate::element::Scalar;
use crate::layout::broadcast_layout;
use crate::tensor::Tensor;
use crate::trace::{self, ToArg};
use crate::view::gather::gather_from;

/// The values of `t` broadcast to `shape`, row-major (the shape must have
/// been checked).
pub(crate) fn values_as<T: Scalar>(t: &Tensor<T>, shape: &[usize]) -> Vec<T> {
    let l = broadcast_layout(&t.layout, shape).expect("funcz: internal: checked broadcast");
    if l.numel() == 0 {
        return Vec::new();
    }
    let guard = t.storage.read();
    gather_from(&guard, &l)
}

/// The values of `t`, row-major.
pub(crate) fn values<T: Scalar>(t: &Tensor<T>) -> Vec<T> {
    values_as(t, t.shape())
}

/// A dimension `dim` of a tensor of rank `ndim` (negative counts from the
/// end; a 0-d tensor accepts 0 and -1), as PyTorch wraps it.
#[track_caller]
pub(crate) fn wrap_dim(op: &str, dim: i64, ndim: usize) -> usize {
    let n = ndim as i64;
    let (lo, hi) = if n == 0 { (-1, 0) } else { (-n, n - 1) };
    if dim < lo || dim > hi {
        panic!(
            "funcz: {op}: dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        );
    }
    if dim < 0 {
        (dim + n.max(1)) as usize
    } else {
        dim as usize
    }
}

/// The broadcast shape of `a` and `b` (PyTorch's rules), naming `op`,
/// the shapes and the argument on error.
#[track_caller]
pub(crate) fn broadcast(op: &str, what: &str, a: &[usize], b: &[usize]) -> Vec<usize> {
    match crate::layout::try_broadcast_shapes(a, b) {
        Ok(shape) => shape.to_vec(),
        Err((i, da, db)) => panic!(
            "funcz: {op}: the shape of {what} {b:?} cannot be broadcast with {a:?} \
             (size {db} vs {da} at dimension {i})"
        ),
    }
}

/// Panics unless `src` (argument `what`) broadcasts to exactly `dst` (the
/// rule for the operands of in-place ops).
#[track_caller]
pub(crate) fn check_into(op: &str, what: &str, dst: &[usize], src: &[usize]) {
    if dst != src && broadcast(op, what, dst, src) != dst {
        panic!(
            "funcz: {op}: {what} of shape {src:?} cannot be broadcast to the written-to shape \
             {dst:?}"
        );
    }
}

pub(crate) use super::kernel::check_writable;

impl<T: Scalar> Tensor<T> {
    /// A copy converted to dtype `U`, as `torch.Tensor.to(dtype)` (always a
    /// fresh tensor, recorded as aten `_to_copy`): float to integer
    /// truncates toward zero, anything to `bool` is `!= 0` (NaN is `true`),
    /// `bool` becomes 0 or 1.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-1.7, 0.0, 2.5], &[3]);
    /// assert_eq!(x.to_dtype::<i64>().to_vec(), vec![-1, 0, 2]);
    /// assert_eq!(x.to_dtype::<bool>().to_vec(), vec![true, false, true]);
    /// ```
    pub fn to_dtype<U: Scalar>(&self) -> Tensor<U> {
        trace::op(
            "_to_copy",
            || vec![self.to_arg()],
            || {
                let v: Vec<U> = values(self).into_iter().map(U::cast_from).collect();
                Tensor::from_contiguous(v, self.shape())
            },
        )
    }

    /// `to_dtype::<f32>()` (PyTorch's `float()`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let m = Tensor::<bool>::from_vec(vec![true, false], &[2]);
    /// assert_eq!(m.float().to_vec(), vec![1.0f32, 0.0]);
    /// ```
    pub fn float(&self) -> Tensor<f32> {
        self.to_dtype()
    }

    /// `to_dtype::<f64>()` (PyTorch's `double()`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let i = Tensor::<i64>::from_vec(vec![3, -4], &[2]);
    /// assert_eq!(i.double().to_vec(), vec![3.0f64, -4.0]);
    /// ```
    pub fn double(&self) -> Tensor<f64> {
        self.to_dtype()
    }

    /// `to_dtype::<i64>()` (PyTorch's `long()`): index tensors are `i64`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![2.9, -2.9], &[2]);
    /// assert_eq!(x.long().to_vec(), vec![2i64, -2]);
    /// ```
    pub fn long(&self) -> Tensor<i64> {
        self.to_dtype()
    }

    /// `to_dtype::<i32>()` (PyTorch's `int()`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![7, -1], &[2]);
    /// assert_eq!(x.int().to_vec(), vec![7i32, -1]);
    /// ```
    pub fn int(&self) -> Tensor<i32> {
        self.to_dtype()
    }

    /// `to_dtype::<bool>()` (PyTorch's `bool()`): `!= 0`, NaN is `true`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![0.0, f64::NAN, -0.5], &[3]);
    /// assert_eq!(x.bool().to_vec(), vec![false, true, true]);
    /// ```
    pub fn bool(&self) -> Tensor<bool> {
        self.to_dtype()
    }
}
