//! Out-of-place elementwise ops: binary arithmetic with broadcasting,
//! unary math, `clamp`, `addcmul`/`addcdiv`/`lerp`.
//!
//! Each returns a fresh contiguous tensor of the broadcast shape and is
//! recorded under PyTorch's aten name.

use crate::dims::Dims;
use crate::element::{Element, FloatElement};
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::kernel::{binary, ternary_values, unary, unary_wide, with_reads};
use super::operand::{Operand, OperandRef};
use super::scalar_arg;

// ---- scalar kernels shared with the in-place twins ----

#[inline(always)]
pub(crate) fn relu_k<T: Element>(x: T) -> T {
    if x < T::zero() { T::zero() } else { x }
}

#[inline(always)]
pub(crate) fn sigmoid_k<T: FloatElement>(x: T) -> T {
    T::one() / (T::one() + (-x).exp())
}

/// `clamp` with PyTorch's rules: NaN stays NaN, a NaN bound gives NaN and
/// `min > max` gives `max`.
#[inline(always)]
#[allow(clippy::eq_op)]
pub(crate) fn clamp_k<T: Element>(x: T, min: Option<T>, max: Option<T>) -> T {
    // A NaN bound makes every element NaN, as PyTorch (`lo != lo` is
    // false for integers and loop-invariant for floats).
    let mut y = x;
    if let Some(lo) = min
        && (y < lo || lo != lo)
    {
        y = lo;
    }
    if let Some(hi) = max
        && (y > hi || hi != hi)
    {
        y = hi;
    }
    y
}

/// `clamp_k(x, Some(lo), Some(hi))` for bounds that are not NaN: `lo` if
/// `x < lo`, then `hi` if above `hi`, else `x` (NaN stays NaN).
#[inline(always)]
pub(crate) fn clamp2_k<T: Element>(x: T, lo: T, hi: T) -> T {
    let y = if x < lo { lo } else { x };
    if y > hi { hi } else { y }
}

/// `relu` and `clamp` as one kernel for the wide loops: the bounds for
/// [`clamp2_k`], with a missing bound replaced by the element type's end
/// (`±inf`, or the integer minimum / maximum), which no comparison ever
/// picks, so the values are [`clamp_k`]'s (and [`relu_k`]'s for `(0,
/// None)`) bit for bit. The ends go through `black_box` so that the
/// compiler keeps the second comparison: `*x = if x < lo { lo } else { x }`
/// alone stores `x` itself on one path, which LLVM compiles to a masked
/// store (`vmaskmovps`) with AVX, several times slower than the baseline
/// loop on AMD Zen (see `kernel::wide`). With a NaN bound every element
/// becomes the same value: `Err(that value)`.
pub(crate) fn clamp_bounds<T: Element>(min: Option<T>, max: Option<T>) -> Result<(T, T), T> {
    #[allow(clippy::eq_op)]
    let nan = |v: Option<T>| v.is_some_and(|v| v != v);
    if nan(min) || nan(max) {
        return Err(clamp_k(T::zero(), min, max));
    }
    let (bot, top) =
        std::hint::black_box((T::from_f64(f64::NEG_INFINITY), T::from_f64(f64::INFINITY)));
    Ok((min.unwrap_or(bot), max.unwrap_or(top)))
}

/// [`clamp_bounds`] of `relu` (`min = 0`, no max): [`clamp2_k`] with
/// these is [`relu_k`] bit for bit.
pub(crate) fn relu_bounds<T: Element>() -> (T, T) {
    (T::zero(), std::hint::black_box(T::from_f64(f64::INFINITY)))
}

/// PyTorch's `lerp`: `self + w * (end - self)` for `|w| < 0.5`, else
/// `end - (end - self) * (1 - w)` (exact at both ends).
#[inline(always)]
pub(crate) fn lerp_k<T: FloatElement>(s: T, e: T, w: T) -> T {
    let half = T::from(0.5).unwrap_or_else(T::one);
    if w.abs() < half {
        s + w * (e - s)
    } else {
        e - (e - s) * (T::one() - w)
    }
}

/// `pow` with a scalar exponent, specialised as PyTorch does for the
/// common exponents (so `x.pow(2.0)` is exactly `x * x`).
pub(crate) fn pow_scalar_k<T: FloatElement>(e: T) -> impl Fn(T) -> T + Copy {
    let two = T::one() + T::one();
    let three = two + T::one();
    let half = T::one() / two;
    move |x: T| {
        if e == two {
            x * x
        } else if e == three {
            x * x * x
        } else if e == half {
            x.sqrt()
        } else if e == -T::one() {
            T::one() / x
        } else if e == T::one() {
            x
        } else if e == T::zero() {
            T::one()
        } else {
            x.powf(e)
        }
    }
}

/// Panics if an integer division would divide by zero.
#[track_caller]
pub(crate) fn check_int_divisor<T: Element>(op: &str, a_shape: &[usize], b: &OperandRef<'_, T>) {
    if T::IS_FLOAT {
        return;
    }
    let has_zero = match b {
        OperandRef::Scalar(s) => *s == T::zero(),
        OperandRef::Tensor(t) => with_reads([*t], |[d]| {
            if t.is_contiguous() {
                let o = t.storage_offset();
                d[o..o + t.numel()].contains(&T::zero())
            } else {
                t.layout.offsets().any(|i| d[i] == T::zero())
            }
        }),
    };
    if has_zero {
        panic!(
            "funcz: {op}: integer division by zero (dividend shape {a_shape:?}, divisor shape {:?})",
            b.shape()
        );
    }
}

/// Panics (at the caller's line) unless `a` and `b` broadcast together.
#[track_caller]
pub(crate) fn check_binary<T: Element>(op: &str, a: &Tensor<T>, b: &OperandRef<'_, T>) {
    if let OperandRef::Tensor(b) = b
        && a.shape() != b.shape()
    {
        let shape = broadcast_shapes(op, a.shape(), b.shape());
        crate::storage::check_alloc::<T>(op, &shape);
    } else if !a.is_contiguous() {
        // An expanded input may have more elements than memory holds.
        crate::storage::check_alloc::<T>(op, a.shape());
    }
}

/// Panics (at the caller's line) unless the three shapes broadcast
/// together; returns their broadcast shape.
#[track_caller]
pub(crate) fn check_ternary(op: &str, a: &[usize], b: &[usize], c: &[usize]) -> Dims {
    if a == b && a == c {
        Dims::from_slice(a)
    } else {
        broadcast_shapes(op, &broadcast_shapes(op, a, b), c)
    }
}

fn record2<'a, T: Element>(
    a: &'a Tensor<T>,
    b: &'a OperandRef<'_, T>,
) -> impl FnOnce() -> Vec<Arg> + 'a {
    move || vec![a.to_arg(), b.to_arg()]
}

impl<T: Element> Tensor<T> {
    /// Elementwise `self + other`, broadcasting (aten `add`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3, 1]);
    /// let y = Tensor::from_vec(vec![10.0, 20.0], &[2]);
    /// assert_eq!(x.add(&y).shape(), &[3, 2]);
    /// assert_eq!(x.add(&y).to_vec(), vec![11.0, 21.0, 12.0, 22.0, 13.0, 23.0]);
    /// ```
    #[track_caller]
    pub fn add(&self, other: impl Operand<T>) -> Tensor<T> {
        let other = other.operand();
        check_binary("add", self, &other);
        trace::op("add", record2(self, &other), || {
            binary("add", self, other, |x, y| x + y)
        })
    }

    /// Elementwise `self - other`, broadcasting (aten `sub`).
    #[track_caller]
    pub fn sub(&self, other: impl Operand<T>) -> Tensor<T> {
        let other = other.operand();
        check_binary("sub", self, &other);
        trace::op("sub", record2(self, &other), || {
            binary("sub", self, other, |x, y| x - y)
        })
    }

    /// Elementwise `self * other`, broadcasting (aten `mul`).
    #[track_caller]
    pub fn mul(&self, other: impl Operand<T>) -> Tensor<T> {
        let other = other.operand();
        check_binary("mul", self, &other);
        trace::op("mul", record2(self, &other), || {
            binary("mul", self, other, |x, y| x * y)
        })
    }

    /// Elementwise `self / other`, broadcasting (aten `div`). Integer
    /// tensors divide truncating toward zero (`rounding_mode="trunc"`) and
    /// panic on a zero divisor.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![7, -7], &[2]);
    /// assert_eq!(x.div(2).to_vec(), vec![3, -3]);
    /// ```
    #[track_caller]
    pub fn div(&self, other: impl Operand<T>) -> Tensor<T> {
        let other = other.operand();
        check_binary("div", self, &other);
        check_int_divisor("div", self.shape(), &other);
        trace::op("div", record2(self, &other), || {
            binary("div", self, other, |x, y| x / y)
        })
    }

    /// Elementwise `-self` (aten `neg`).
    #[track_caller]
    pub fn neg(&self) -> Tensor<T> {
        trace::op("neg", || vec![self.to_arg()], || unary_wide(self, |x| -x))
    }

    /// Elementwise `|self|` (aten `abs`).
    #[track_caller]
    pub fn abs(&self) -> Tensor<T> {
        trace::op(
            "abs",
            || vec![self.to_arg()],
            || unary_wide(self, |x| x.abs()),
        )
    }

    /// Elementwise `max(self, 0)`; NaN stays NaN (aten `relu`).
    #[track_caller]
    pub fn relu(&self) -> Tensor<T> {
        trace::op(
            "relu",
            || vec![self.to_arg()],
            || {
                let (lo, hi) = relu_bounds();
                unary_wide(self, move |x| clamp2_k(x, lo, hi))
            },
        )
    }

    /// Clamps every element into `[min, max]`; either bound may be `None`
    /// (aten `clamp`). NaN stays NaN; if `min > max` every element becomes
    /// `max`, as in PyTorch.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-2.0, 0.5, 3.0], &[3]);
    /// assert_eq!(x.clamp(0.0, 1.0).to_vec(), vec![0.0, 0.5, 1.0]);
    /// assert_eq!(x.clamp(None, 1.0).to_vec(), vec![-2.0, 0.5, 1.0]);
    /// ```
    #[track_caller]
    pub fn clamp(&self, min: impl Into<Option<T>>, max: impl Into<Option<T>>) -> Tensor<T> {
        let (min, max) = (min.into(), max.into());
        check_clamp_bounds("clamp", min, max);
        trace::op(
            "clamp",
            || vec![self.to_arg(), opt_scalar(min), opt_scalar(max)],
            || match clamp_bounds(min, max) {
                Ok((lo, hi)) => unary_wide(self, move |x| clamp2_k(x, lo, hi)),
                Err(c) => unary_wide(self, move |_| c),
            },
        )
    }

    /// `self + value * t1 * t2`, broadcasting all three (aten `addcmul`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 1.0], &[2]);
    /// let a = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    /// let b = Tensor::from_vec(vec![4.0], &[1]);
    /// assert_eq!(x.addcmul(&a, &b, 0.5).to_vec(), vec![5.0, 7.0]);
    /// ```
    #[track_caller]
    pub fn addcmul(&self, t1: &Tensor<T>, t2: &Tensor<T>, value: T) -> Tensor<T> {
        check_ternary("addcmul", self.shape(), t1.shape(), t2.shape());
        trace::op(
            "addcmul",
            || vec![self.to_arg(), t1.to_arg(), t2.to_arg(), scalar_arg(value)],
            || {
                let (v, s) = ternary_values("addcmul", self, t1, t2, |x, a, b| x + value * a * b);
                Tensor::from_contiguous(v, &s)
            },
        )
    }
}

pub(crate) fn opt_scalar<T: Element>(v: Option<T>) -> Arg {
    v.map_or(Arg::None, scalar_arg)
}

#[track_caller]
pub(crate) fn check_clamp_bounds<T: Element>(op: &str, min: Option<T>, max: Option<T>) {
    if min.is_none() && max.is_none() {
        panic!("funcz: {op}: at least one of 'min' or 'max' must not be None");
    }
}

impl<T: FloatElement> Tensor<T> {
    /// Elementwise `self ^ exponent`, broadcasting (aten `pow`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![2.0, 3.0], &[2]);
    /// assert_eq!(x.pow(2.0).to_vec(), vec![4.0, 9.0]);
    /// assert_eq!(x.pow(&x).to_vec(), vec![4.0, 27.0]);
    /// ```
    #[track_caller]
    pub fn pow(&self, exponent: impl Operand<T>) -> Tensor<T> {
        let e = exponent.operand();
        check_binary("pow", self, &e);
        trace::op("pow", record2(self, &e), || match e {
            OperandRef::Scalar(s) => unary(self, pow_scalar_k(s)),
            OperandRef::Tensor(_) => binary("pow", self, e, |x, y| x.powf(y)),
        })
    }

    /// Elementwise `e^self` (aten `exp`).
    #[track_caller]
    pub fn exp(&self) -> Tensor<T> {
        trace::op("exp", || vec![self.to_arg()], || unary(self, |x| x.exp()))
    }

    /// Elementwise natural logarithm (aten `log`).
    #[track_caller]
    pub fn log(&self) -> Tensor<T> {
        trace::op("log", || vec![self.to_arg()], || unary(self, |x| x.ln()))
    }

    /// Elementwise square root (aten `sqrt`).
    #[track_caller]
    pub fn sqrt(&self) -> Tensor<T> {
        trace::op(
            "sqrt",
            || vec![self.to_arg()],
            || unary_wide(self, |x| x.sqrt()),
        )
    }

    /// Elementwise `1 / (1 + e^-self)` (aten `sigmoid`).
    #[track_caller]
    pub fn sigmoid(&self) -> Tensor<T> {
        trace::op("sigmoid", || vec![self.to_arg()], || unary(self, sigmoid_k))
    }

    /// Elementwise hyperbolic tangent (aten `tanh`).
    #[track_caller]
    pub fn tanh(&self) -> Tensor<T> {
        trace::op("tanh", || vec![self.to_arg()], || unary(self, |x| x.tanh()))
    }

    /// `self + value * t1 / t2`, broadcasting all three (aten `addcdiv`).
    #[track_caller]
    pub fn addcdiv(&self, t1: &Tensor<T>, t2: &Tensor<T>, value: T) -> Tensor<T> {
        check_ternary("addcdiv", self.shape(), t1.shape(), t2.shape());
        trace::op(
            "addcdiv",
            || vec![self.to_arg(), t1.to_arg(), t2.to_arg(), scalar_arg(value)],
            || {
                let (v, s) = ternary_values("addcdiv", self, t1, t2, |x, a, b| x + value * a / b);
                Tensor::from_contiguous(v, &s)
            },
        )
    }

    /// Linear interpolation `self + weight * (end - self)`, broadcasting
    /// (aten `lerp`); `weight` is a scalar or a tensor.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![0.0, 10.0], &[2]);
    /// let b = Tensor::from_vec(vec![10.0, 20.0], &[2]);
    /// assert_eq!(a.lerp(&b, 0.25).to_vec(), vec![2.5, 12.5]);
    /// ```
    #[track_caller]
    pub fn lerp(&self, end: &Tensor<T>, weight: impl Operand<T>) -> Tensor<T> {
        let w = weight.operand();
        check_ternary("lerp", self.shape(), end.shape(), w.shape());
        trace::op(
            "lerp",
            || vec![self.to_arg(), end.to_arg(), w.to_arg()],
            || match w {
                OperandRef::Scalar(w) => binary("lerp", self, OperandRef::Tensor(end), |s, e| {
                    lerp_k(s, e, w)
                }),
                OperandRef::Tensor(wt) => {
                    let (v, s) = ternary_values("lerp", self, end, wt, lerp_k);
                    Tensor::from_contiguous(v, &s)
                }
            },
        )
    }
}
