//! In-place twins of the elementwise ops (`add_`, `mul_`, `copy_`, ...) and
//! the functional `fill`/`zero`/`copy`.
//!
//! An in-place op writes through the receiver's storage, so every alias
//! sees the result, bumps the storage version once, and returns a handle of
//! the receiver (same trace identity), so calls chain:
//! `x.mul_(2.0).add_(1.0)`. Operands broadcast to the receiver's shape,
//! never the other way round; a receiver whose elements overlap in memory
//! (an `expand`ed tensor) is refused; an operand that shares the receiver's
//! storage is read completely before the first write.

use std::any::Any;

use crate::dims::Dims;
use crate::element::{Element, FloatElement, Scalar};
use crate::layout::broadcast_shapes;
use crate::storage::huge;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::elementwise::{
    check_clamp_bounds, check_int_divisor, clamp_bounds, clamp2_k, lerp_k, opt_scalar,
    pow_scalar_k, relu_bounds, sigmoid_k,
};
use crate::view::gather::scatter_into;

use super::dtype::values_as;
use super::kernel::{
    check_writable, inplace_binary, inplace_ternary, inplace_unary, inplace_unary_wide,
};
use super::operand::{Operand, OperandRef};
use super::overlap::assert_no_partial_overlap;
use super::scalar_arg;

/// The checks of an in-place op writing into `dst` with the operands
/// `srcs` (argument name, operand), at the caller's line: `dst` must not
/// overlap itself, no tensor operand may partially overlap `dst`
/// (PyTorch's `assert_no_partial_overlap`: `x.add_(&x.t())` is refused,
/// `x.add_(&x)` is not), and the operands must broadcast to exactly
/// `dst`'s shape (the kernels check again, but from inside the traced
/// closure).
#[track_caller]
pub(crate) fn check_inplace<T: Element>(
    op: &str,
    dst: &Tensor<T>,
    srcs: &[(&str, OperandRef<'_, T>)],
) {
    check_writable(op, &dst.layout);
    for (arg, src) in srcs {
        if let OperandRef::Tensor(t) = src {
            assert_no_partial_overlap(op, arg, dst, t);
        }
    }
    let shape = dst.shape();
    if srcs.iter().all(|(_, s)| s.shape() == shape) {
        return;
    }
    // As `check_broadcast_to`, without collecting the shapes (no
    // allocation on the path of every in-place op).
    let mut b = Dims::from_slice(shape);
    for (_, s) in srcs {
        b = broadcast_shapes(op, &b, s.shape());
    }
    if &b[..] != shape {
        panic!("funcz: {op}: output with shape {shape:?} doesn't match the broadcast shape {b:?}");
    }
}

/// Panics (at the caller's line) unless the shapes `srcs` broadcast
/// together with `shape` to exactly `shape`.
#[track_caller]
pub(crate) fn check_broadcast_to(op: &str, shape: &[usize], srcs: &[&[usize]]) {
    if srcs.iter().all(|s| *s == shape) {
        return;
    }
    let mut b = Dims::from_slice(shape);
    for s in srcs {
        b = broadcast_shapes(op, &b, s);
    }
    if &b[..] != shape {
        panic!("funcz: {op}: output with shape {shape:?} doesn't match the broadcast shape {b:?}");
    }
}

/// What an in-place op's traced closure returns: the receiver itself, so
/// that the trace records the receiver's identity and metadata as the op's
/// output (as for the handle the public op returns) without making a
/// handle (an `Arc` increment and a layout copy) that the fused runs'
/// op table would only drop.
pub(crate) struct Same<'a, T: Scalar>(pub(crate) &'a Tensor<T>);

impl<T: Scalar> trace::Outputs for Same<'_, T> {
    fn output_ids(&self) -> Vec<crate::tensor::TensorId> {
        trace::Outputs::output_ids(self.0)
    }
    fn output_metas(&self) -> Vec<crate::trace::TensorMeta> {
        trace::Outputs::output_metas(self.0)
    }
}

fn record2<'a, T: Element>(
    a: &'a Tensor<T>,
    b: &'a OperandRef<'_, T>,
) -> impl FnOnce() -> Vec<Arg> + 'a {
    move || vec![a.to_arg(), b.to_arg()]
}

impl<T: Element> Tensor<T> {
    /// In-place `self += other`, `other` broadcast to `self`'s shape
    /// (aten `add_`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2, 2]);
    /// let row = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    /// x.add_(&row).mul_(3.0);
    /// assert_eq!(x.to_vec(), vec![3.0, 6.0, 3.0, 6.0]);
    /// assert_eq!(x.version(), 2);
    /// ```
    #[track_caller]
    pub fn add_(&self, other: impl Operand<T>) -> Tensor<T> {
        self.add_in_place(other);
        self.handle()
    }

    /// [`add_`](Tensor::add_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn add_in_place(&self, other: impl Operand<T>) {
        let other = other.operand();
        check_inplace("add_", self, &[("other", other)]);
        trace::op("add_", record2(self, &other), || {
            inplace_binary("add_", self, other, |x, y| x + y);
            Same(self)
        });
    }

    /// In-place `self -= other` (aten `sub_`). Returns `self`.
    #[track_caller]
    pub fn sub_(&self, other: impl Operand<T>) -> Tensor<T> {
        self.sub_in_place(other);
        self.handle()
    }

    /// [`sub_`](Tensor::sub_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn sub_in_place(&self, other: impl Operand<T>) {
        let other = other.operand();
        check_inplace("sub_", self, &[("other", other)]);
        trace::op("sub_", record2(self, &other), || {
            inplace_binary("sub_", self, other, |x, y| x - y);
            Same(self)
        });
    }

    /// In-place `self *= other` (aten `mul_`). Returns `self`.
    #[track_caller]
    pub fn mul_(&self, other: impl Operand<T>) -> Tensor<T> {
        self.mul_in_place(other);
        self.handle()
    }

    /// [`mul_`](Tensor::mul_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn mul_in_place(&self, other: impl Operand<T>) {
        let other = other.operand();
        check_inplace("mul_", self, &[("other", other)]);
        trace::op("mul_", record2(self, &other), || {
            inplace_binary("mul_", self, other, |x, y| x * y);
            Same(self)
        });
    }

    /// In-place `self /= other` (aten `div_`); integers truncate and panic
    /// on a zero divisor (before anything is written). Returns `self`.
    #[track_caller]
    pub fn div_(&self, other: impl Operand<T>) -> Tensor<T> {
        self.div_in_place(other);
        self.handle()
    }

    /// [`div_`](Tensor::div_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn div_in_place(&self, other: impl Operand<T>) {
        let other = other.operand();
        check_inplace("div_", self, &[("other", other)]);
        check_int_divisor("div_", self.shape(), &other);
        trace::op("div_", record2(self, &other), || {
            inplace_binary("div_", self, other, |x, y| x / y);
            Same(self)
        });
    }

    /// In-place negation (aten `neg_`). Returns `self`.
    #[track_caller]
    pub fn neg_(&self) -> Tensor<T> {
        self.neg_in_place();
        self.handle()
    }

    /// [`neg_`](Tensor::neg_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn neg_in_place(&self) {
        check_inplace("neg_", self, &[]);
        trace::op(
            "neg_",
            || vec![self.to_arg()],
            || {
                inplace_unary_wide("neg_", self, |x| -x);
                Same(self)
            },
        );
    }

    /// In-place absolute value (aten `abs_`). Returns `self`.
    #[track_caller]
    pub fn abs_(&self) -> Tensor<T> {
        self.abs_in_place();
        self.handle()
    }

    /// [`abs_`](Tensor::abs_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn abs_in_place(&self) {
        check_inplace("abs_", self, &[]);
        trace::op(
            "abs_",
            || vec![self.to_arg()],
            || {
                // Integer `abs` keeps `x` itself when it is not negative:
                // baseline loops (see `kernel::wide`).
                if T::IS_FLOAT {
                    inplace_unary_wide("abs_", self, |x| x.abs());
                } else {
                    inplace_unary("abs_", self, |x| x.abs());
                }
                Same(self)
            },
        );
    }

    /// In-place `max(self, 0)` (aten `relu_`). Returns `self`.
    #[track_caller]
    pub fn relu_(&self) -> Tensor<T> {
        self.relu_in_place();
        self.handle()
    }

    /// [`relu_`](Tensor::relu_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn relu_in_place(&self) {
        check_inplace("relu_", self, &[]);
        trace::op(
            "relu_",
            || vec![self.to_arg()],
            || {
                let (lo, hi) = relu_bounds();
                inplace_unary_wide("relu_", self, move |x| clamp2_k(x, lo, hi));
                Same(self)
            },
        );
    }

    /// In-place [`clamp`](Tensor::clamp) (aten `clamp_`). Returns `self`.
    #[track_caller]
    pub fn clamp_(&self, min: impl Into<Option<T>>, max: impl Into<Option<T>>) -> Tensor<T> {
        self.clamp_in_place(min, max);
        self.handle()
    }

    /// [`clamp_`](Tensor::clamp_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn clamp_in_place(&self, min: impl Into<Option<T>>, max: impl Into<Option<T>>) {
        let (min, max) = (min.into(), max.into());
        check_clamp_bounds("clamp_", min, max);
        check_inplace("clamp_", self, &[]);
        trace::op(
            "clamp_",
            || vec![self.to_arg(), opt_scalar(min), opt_scalar(max)],
            || {
                match clamp_bounds(min, max) {
                    Ok((lo, hi)) => {
                        inplace_unary_wide("clamp_", self, move |x| clamp2_k(x, lo, hi))
                    }
                    Err(c) => inplace_unary_wide("clamp_", self, move |_| c),
                }
                Same(self)
            },
        );
    }

    /// In-place `self += value * t1 * t2` (aten `addcmul_`); the broadcast
    /// shape of all three must be `self`'s shape. Returns `self`.
    #[track_caller]
    pub fn addcmul_(&self, t1: &Tensor<T>, t2: &Tensor<T>, value: T) -> Tensor<T> {
        self.addcmul_in_place(t1, t2, value);
        self.handle()
    }

    /// [`addcmul_`](Tensor::addcmul_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn addcmul_in_place(&self, t1: &Tensor<T>, t2: &Tensor<T>, value: T) {
        check_inplace(
            "addcmul_",
            self,
            &[
                ("tensor1", OperandRef::Tensor(t1)),
                ("tensor2", OperandRef::Tensor(t2)),
            ],
        );
        trace::op(
            "addcmul_",
            || vec![self.to_arg(), t1.to_arg(), t2.to_arg(), scalar_arg(value)],
            || {
                inplace_ternary(
                    "addcmul_",
                    self,
                    OperandRef::Tensor(t1),
                    OperandRef::Tensor(t2),
                    move |x, a, b| x + value * a * b,
                );
                Same(self)
            },
        );
    }

    /// Sets every element to `value` (aten `fill_`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i32>::zeros(&[3]);
    /// x.fill_(7);
    /// assert_eq!(x.to_vec(), vec![7, 7, 7]);
    /// ```
    #[track_caller]
    pub fn fill_(&self, value: T) -> Tensor<T> {
        self.fill_in_place(value);
        self.handle()
    }

    /// [`fill_`](Tensor::fill_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn fill_in_place(&self, value: T) {
        check_inplace("fill_", self, &[]);
        trace::op(
            "fill_",
            || vec![self.to_arg(), scalar_arg(value)],
            || {
                inplace_unary_wide("fill_", self, move |_| value);
                Same(self)
            },
        );
    }

    /// Sets every element to zero (aten `zero_`). Returns `self`.
    #[track_caller]
    pub fn zero_(&self) -> Tensor<T> {
        self.zero_in_place();
        self.handle()
    }

    /// [`zero_`](Tensor::zero_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn zero_in_place(&self) {
        check_inplace("zero_", self, &[]);
        trace::op(
            "zero_",
            || vec![self.to_arg()],
            || {
                inplace_unary_wide("zero_", self, |_| T::zero());
                Same(self)
            },
        );
    }

    /// A fresh tensor of `self`'s shape filled with `value` (aten `fill`,
    /// the functional twin of [`fill_`](Tensor::fill_)).
    #[track_caller]
    pub fn fill(&self, value: T) -> Tensor<T> {
        trace::op(
            "fill",
            || vec![self.to_arg(), scalar_arg(value)],
            || Tensor::from_contiguous(huge::filled(value, self.numel()), self.shape()),
        )
    }

    /// A fresh tensor of zeros of `self`'s shape (aten `zero`).
    #[track_caller]
    pub fn zero(&self) -> Tensor<T> {
        trace::op(
            "zero",
            || vec![self.to_arg()],
            || Tensor::from_contiguous(huge::zeroed(T::zero(), self.numel()), self.shape()),
        )
    }
}

impl<T: Scalar> Tensor<T> {
    /// Copies `src`, broadcast to `self`'s shape, into `self` (aten
    /// `copy_`); works for masks too. `src` may alias `self` (it is read
    /// completely first). Returns `self`.
    ///
    /// A source of another dtype is converted first, as PyTorch's `copy_`
    /// converts (float to integer truncates toward zero, `bool` is 0 or 1,
    /// anything to `bool` is `!= 0`): `x.copy_(&y.to_dtype())`, the target
    /// dtype inferred from `x`. (`src` is `&Tensor<T>`, not any dtype, so
    /// that `x.copy_(&Tensor::zeros(..))` keeps inferring its dtype.)
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2, 2]);
    /// x.copy_(&Tensor::from_vec(vec![1.0, 2.0], &[2]));
    /// assert_eq!(x.to_vec(), vec![1.0, 2.0, 1.0, 2.0]);
    /// let i = Tensor::<i64>::zeros(&[2]);
    /// i.copy_(&Tensor::<f32>::from_vec(vec![-1.7, 2.9], &[2]).to_dtype());
    /// assert_eq!(i.to_vec(), vec![-1, 2]);
    /// let m = Tensor::<bool>::from_vec(vec![false; 3], &[3]);
    /// m.copy_(&Tensor::<i64>::from_vec(vec![0, -2, 5], &[3]).to_dtype());
    /// assert_eq!(m.to_vec(), vec![false, true, true]);
    /// ```
    #[track_caller]
    pub fn copy_(&self, src: &Tensor<T>) -> Tensor<T> {
        self.copy_in_place(src);
        self.handle()
    }

    /// [`copy_`](Tensor::copy_) without its returned handle (what the
    /// write-back of a functionalized function's inputs calls: no handle
    /// to make and drop per input).
    #[track_caller]
    #[inline]
    pub(crate) fn copy_in_place(&self, src: &Tensor<T>) {
        check_writable("copy_", &self.layout);
        assert_no_partial_overlap("copy_", "src", self, src);
        check_broadcast_to("copy_", self.shape(), &[src.shape()]);
        trace::op(
            "copy_",
            || vec![self.to_arg(), src.to_arg()],
            || {
                if !copy_numeric(self, src) {
                    // Read everything before the first write: `src` may
                    // share `self`'s storage.
                    let v = values_as(src, self.shape());
                    scatter_into(&mut self.storage.write(), &self.layout, &v);
                }
                Same(self)
            },
        );
    }

    /// A fresh tensor of `self`'s shape holding `src` broadcast to it (aten
    /// `copy`, the functional twin of [`copy_`](Tensor::copy_)).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::zeros(&[2, 2]);
    /// let y = x.copy(&Tensor::from_vec(vec![5.0], &[1]));
    /// assert_eq!(y.to_vec(), vec![5.0; 4]);
    /// assert_eq!(x.to_vec(), vec![0.0; 4]);
    /// let m = Tensor::<bool>::from_vec(vec![true, false], &[2]);
    /// assert_eq!(x.copy(&m.to_dtype()).to_vec(), vec![1.0, 0.0, 1.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn copy(&self, src: &Tensor<T>) -> Tensor<T> {
        check_broadcast_to("copy", self.shape(), &[src.shape()]);
        trace::op(
            "copy",
            || vec![self.to_arg(), src.to_arg()],
            || Tensor::from_contiguous(values_as(src, self.shape()), self.shape()),
        )
    }
}

/// `dst.copy_(src)` through the elementwise kernel when the dtype is
/// numeric (the common case, and the fastest path); false (nothing done)
/// for masks.
fn copy_numeric<T: Scalar>(dst: &Tensor<T>, src: &Tensor<T>) -> bool {
    macro_rules! numeric {
        ($($t:ty),*) => {$(
            if let (Some(d), Some(s)) = (
                (dst as &dyn Any).downcast_ref::<Tensor<$t>>(),
                (src as &dyn Any).downcast_ref::<Tensor<$t>>(),
            ) {
                inplace_binary("copy_", d, OperandRef::Tensor(s), |_, y| y);
                return true;
            }
        )*};
    }
    numeric!(f32, f64, i32, i64);
    false
}

impl<T: FloatElement> Tensor<T> {
    /// In-place `self ^= exponent` (aten `pow_`). Returns `self`.
    #[track_caller]
    pub fn pow_(&self, exponent: impl Operand<T>) -> Tensor<T> {
        self.pow_in_place(exponent);
        self.handle()
    }

    /// [`pow_`](Tensor::pow_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn pow_in_place(&self, exponent: impl Operand<T>) {
        let e = exponent.operand();
        check_inplace("pow_", self, &[("exponent", e)]);
        trace::op("pow_", record2(self, &e), || {
            match e {
                OperandRef::Scalar(s) => inplace_unary("pow_", self, pow_scalar_k(s)),
                OperandRef::Tensor(_) => inplace_binary("pow_", self, e, |x, y| x.powf(y)),
            }
            Same(self)
        });
    }

    /// In-place `e^self` (aten `exp_`). Returns `self`.
    #[track_caller]
    pub fn exp_(&self) -> Tensor<T> {
        self.exp_in_place();
        self.handle()
    }

    /// [`exp_`](Tensor::exp_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn exp_in_place(&self) {
        check_inplace("exp_", self, &[]);
        trace::op(
            "exp_",
            || vec![self.to_arg()],
            || {
                inplace_unary("exp_", self, |x| x.exp());
                Same(self)
            },
        );
    }

    /// In-place natural logarithm (aten `log_`). Returns `self`.
    #[track_caller]
    pub fn log_(&self) -> Tensor<T> {
        self.log_in_place();
        self.handle()
    }

    /// [`log_`](Tensor::log_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn log_in_place(&self) {
        check_inplace("log_", self, &[]);
        trace::op(
            "log_",
            || vec![self.to_arg()],
            || {
                inplace_unary("log_", self, |x| x.ln());
                Same(self)
            },
        );
    }

    /// In-place square root (aten `sqrt_`). Returns `self`.
    #[track_caller]
    pub fn sqrt_(&self) -> Tensor<T> {
        self.sqrt_in_place();
        self.handle()
    }

    /// [`sqrt_`](Tensor::sqrt_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn sqrt_in_place(&self) {
        check_inplace("sqrt_", self, &[]);
        trace::op(
            "sqrt_",
            || vec![self.to_arg()],
            || {
                inplace_unary_wide("sqrt_", self, |x| x.sqrt());
                Same(self)
            },
        );
    }

    /// In-place sigmoid (aten `sigmoid_`). Returns `self`.
    #[track_caller]
    pub fn sigmoid_(&self) -> Tensor<T> {
        self.sigmoid_in_place();
        self.handle()
    }

    /// [`sigmoid_`](Tensor::sigmoid_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn sigmoid_in_place(&self) {
        check_inplace("sigmoid_", self, &[]);
        trace::op(
            "sigmoid_",
            || vec![self.to_arg()],
            || {
                inplace_unary("sigmoid_", self, sigmoid_k);
                Same(self)
            },
        );
    }

    /// In-place hyperbolic tangent (aten `tanh_`). Returns `self`.
    #[track_caller]
    pub fn tanh_(&self) -> Tensor<T> {
        self.tanh_in_place();
        self.handle()
    }

    /// [`tanh_`](Tensor::tanh_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn tanh_in_place(&self) {
        check_inplace("tanh_", self, &[]);
        trace::op(
            "tanh_",
            || vec![self.to_arg()],
            || {
                inplace_unary("tanh_", self, |x| x.tanh());
                Same(self)
            },
        );
    }

    /// In-place `self += value * t1 / t2` (aten `addcdiv_`). Returns `self`.
    #[track_caller]
    pub fn addcdiv_(&self, t1: &Tensor<T>, t2: &Tensor<T>, value: T) -> Tensor<T> {
        self.addcdiv_in_place(t1, t2, value);
        self.handle()
    }

    /// [`addcdiv_`](Tensor::addcdiv_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn addcdiv_in_place(&self, t1: &Tensor<T>, t2: &Tensor<T>, value: T) {
        check_inplace(
            "addcdiv_",
            self,
            &[
                ("tensor1", OperandRef::Tensor(t1)),
                ("tensor2", OperandRef::Tensor(t2)),
            ],
        );
        trace::op(
            "addcdiv_",
            || vec![self.to_arg(), t1.to_arg(), t2.to_arg(), scalar_arg(value)],
            || {
                inplace_ternary(
                    "addcdiv_",
                    self,
                    OperandRef::Tensor(t1),
                    OperandRef::Tensor(t2),
                    move |x, a, b| x + value * a / b,
                );
                Same(self)
            },
        );
    }

    /// In-place [`lerp`](Tensor::lerp) toward `end` (aten `lerp_`).
    /// Returns `self`.
    #[track_caller]
    pub fn lerp_(&self, end: &Tensor<T>, weight: impl Operand<T>) -> Tensor<T> {
        self.lerp_in_place(end, weight);
        self.handle()
    }

    /// [`lerp_`](Tensor::lerp_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn lerp_in_place(&self, end: &Tensor<T>, weight: impl Operand<T>) {
        let w = weight.operand();
        check_inplace(
            "lerp_",
            self,
            &[("end", OperandRef::Tensor(end)), ("weight", w)],
        );
        trace::op(
            "lerp_",
            || vec![self.to_arg(), end.to_arg(), w.to_arg()],
            || {
                match w {
                    OperandRef::Scalar(w) => {
                        inplace_binary("lerp_", self, OperandRef::Tensor(end), move |s, e| {
                            lerp_k(s, e, w)
                        })
                    }
                    OperandRef::Tensor(_) => {
                        inplace_ternary("lerp_", self, OperandRef::Tensor(end), w, lerp_k)
                    }
                }
                Same(self)
            },
        );
    }
}

#[cfg(test)]
mod tests {
    //! Tests that need aliases built from raw layouts (the view ops live
    //! elsewhere).

    use std::panic::{AssertUnwindSafe, catch_unwind};

    use crate::layout::Layout;
    use crate::tensor::Tensor;

    fn square() -> Tensor<f32> {
        Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2])
    }

    /// `x.t()` as a raw alias.
    fn transposed(x: &Tensor<f32>) -> Tensor<f32> {
        x.with_layout(Layout::new(&[2, 2], &[1, 2], 0))
    }

    /// The message of a refused op, which must have written nothing.
    fn refused(f: impl FnOnce()) -> String {
        let err = catch_unwind(AssertUnwindSafe(f)).expect_err("must panic");
        err.downcast_ref::<String>().unwrap().clone()
    }

    #[test]
    fn add_of_own_transpose_is_refused_as_in_pytorch() {
        // PyTorch: x = [[1,2],[3,4]]; x.add_(x.t()) raises "unsupported
        // operation: some elements of the input tensor and the written-to
        // tensor refer to a single memory location".
        let x = square();
        let msg = refused(|| drop(x.add_(transposed(&x))));
        assert!(
            msg.starts_with("funcz: add_: unsupported operation: some elements of the input"),
            "{msg}"
        );
        assert!(
            msg.contains("argument 'other': shape [2, 2], strides [1, 2]"),
            "{msg}"
        );
        // Writing through the transpose, reading the base.
        let xt = transposed(&x);
        refused(|| drop(xt.add_(&x)));
        assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(x.version(), 0);
        // The workaround PyTorch names: x.add_(x.t().clone()).
        x.add_(transposed(&x).clone());
        assert_eq!(x.to_vec(), vec![2.0, 5.0, 5.0, 8.0]);
    }

    #[test]
    fn copy_between_shifted_windows_of_one_storage_is_refused() {
        // x = [1,2,3,4,5]; x[0:4].copy_(x[1:5]) raises in PyTorch.
        let x = Tensor::<i64>::from_vec(vec![1, 2, 3, 4, 5], &[5]);
        let lo = x.with_layout(Layout::new(&[4], &[1], 0));
        let hi = x.with_layout(Layout::new(&[4], &[1], 1));
        let msg = refused(|| drop(lo.copy_(&hi)));
        assert!(
            msg.starts_with("funcz: copy_: unsupported operation"),
            "{msg}"
        );
        refused(|| drop(hi.copy_(&lo)));
        assert_eq!(x.to_vec(), vec![1, 2, 3, 4, 5]);
        assert_eq!(x.version(), 0);
        // Disjoint windows of one storage: x[0:2].copy_(x[3:5]).
        let a = x.with_layout(Layout::new(&[2], &[1], 0));
        let b = x.with_layout(Layout::new(&[2], &[1], 3));
        a.copy_(&b);
        assert_eq!(x.to_vec(), vec![4, 5, 3, 4, 5]);
        assert_eq!(x.version(), 1);
    }

    #[test]
    fn expanded_operand_of_own_storage_is_read_first() {
        // x = [[0,1],[2,3]]; x.add_(x[0].expand(2, 2)): the operand is not
        // dense, PyTorch does not check (and its loop reads the updated
        // row 0, giving [[0,2],[2,5]]); funcz reads the operand before the
        // first write, as x.add_(x[0].expand(2, 2).clone()) does.
        let x = Tensor::<f32>::from_vec(vec![0.0, 1.0, 2.0, 3.0], &[2, 2]);
        let row0 = x.with_layout(Layout::new(&[2, 2], &[0, 1], 0));
        x.add_(&row0);
        assert_eq!(x.to_vec(), vec![0.0, 2.0, 2.0, 4.0]);
    }

    #[test]
    fn operand_with_identical_layout_is_used_elementwise() {
        let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
        let alias = x.with_layout(*x.layout());
        x.mul_(&alias);
        assert_eq!(x.to_vec(), vec![1.0, 4.0, 9.0]);
        assert_eq!(alias.version(), 1);
    }

    #[test]
    fn out_of_place_op_on_aliases_leaves_them_untouched() {
        let x = square();
        let y = x.add(transposed(&x));
        assert_eq!(y.to_vec(), vec![2.0, 5.0, 5.0, 8.0]);
        assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(x.version(), 0);
        assert!(y.is_contiguous());
    }

    #[test]
    #[should_panic(
        expected = "funcz: add_: unsupported operation: more than one element of the \
                               written-to tensor refers to a single memory location (shape [2, 3], \
                               strides [0, 1]). Please clone() the tensor before performing the \
                               operation."
    )]
    fn inplace_into_expanded_tensor_is_refused() {
        let base = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
        let expanded = base.with_layout(Layout::new(&[2, 3], &[0, 1], 0));
        expanded.add_(1.0);
    }

    #[test]
    fn refused_inplace_op_writes_nothing_and_keeps_the_version() {
        let base = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]);
        // Overlapping as_strided: [[x0, x1], [x1, x2]].
        let windows = base.with_layout(Layout::new(&[2, 2], &[1, 1], 0));
        for (name, f) in [
            (
                "mul_",
                Box::new(|| drop(windows.mul_(2.0))) as Box<dyn Fn()>,
            ),
            ("exp_", Box::new(|| drop(windows.exp_()))),
            ("fill_", Box::new(|| drop(windows.fill_(0.0)))),
            (
                "copy_",
                Box::new(|| drop(windows.copy_(&Tensor::zeros(&[2, 2])))),
            ),
            (
                "addcmul_",
                Box::new(|| drop(windows.addcmul_(&base, &base, 1.0))),
            ),
        ] {
            let err = catch_unwind(AssertUnwindSafe(f)).expect_err(name);
            let msg = err.downcast_ref::<String>().unwrap();
            assert!(
                msg.starts_with(&format!("funcz: {name}: unsupported operation")),
                "{msg}"
            );
            assert!(msg.contains("(shape [2, 2], strides [1, 1])"), "{msg}");
        }
        assert_eq!(base.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(base.version(), 0);
    }

    #[test]
    fn expanded_tensor_can_be_read() {
        let base = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
        let expanded = base.with_layout(Layout::new(&[2, 3], &[0, 1], 0));
        assert_eq!(
            expanded.add(1.0).to_vec(),
            vec![2.0, 3.0, 4.0, 2.0, 3.0, 4.0]
        );
        let acc = Tensor::<f32>::zeros(&[2, 3]);
        acc.add_(&expanded).add_(&expanded);
        assert_eq!(acc.to_vec(), vec![2.0, 4.0, 6.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn write_through_an_alias_is_seen_by_the_base() {
        let base = square();
        let row1 = base.with_layout(Layout::new(&[2], &[1], 2));
        row1.mul_(10.0);
        assert_eq!(base.to_vec(), vec![1.0, 2.0, 30.0, 40.0]);
        assert_eq!(base.version(), 1);
        let col0 = base.with_layout(Layout::new(&[2], &[2], 0));
        col0.neg_();
        assert_eq!(base.to_vec(), vec![-1.0, 2.0, -30.0, 40.0]);
        assert_eq!(base.version(), 2);
    }

    #[test]
    fn strided_destination_with_broadcast_operand() {
        // Storage [0..6] seen as the transpose of a 3x2 matrix: [2, 3]
        // with strides [1, 2]; adding a row [100, 200, 300] hits storage
        // column by column.
        let x = Tensor::<i32>::from_vec((0..6).collect(), &[3, 2]);
        let xt = x.with_layout(Layout::new(&[2, 3], &[1, 2], 0));
        xt.add_(Tensor::from_vec(vec![100, 200, 300], &[3]));
        assert_eq!(x.to_vec(), vec![100, 101, 202, 203, 304, 305]);
        // A strided unary op goes through the ndarray path.
        xt.neg_();
        assert_eq!(x.to_vec(), vec![-100, -101, -202, -203, -304, -305]);
        // A strided copy_ from a contiguous source.
        xt.copy_(&Tensor::from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]));
        // xt[i][j] = storage[2j + i] = 3i + j + 1
        assert_eq!(x.to_vec(), vec![1, 4, 2, 5, 3, 6]);
    }

    #[test]
    fn ternary_inplace_ops_with_aliased_operands() {
        // x = [[1,2],[3,4]]; x.addcmul_(x.t(), x, 1) = x + x.t() * x
        //   = [[1+1*1, 2+3*2], [3+2*3, 4+4*4]] = [[2, 8], [9, 20]]
        // (The transpose is refused as an operand, as in PyTorch; x itself,
        // a full overlap, is not.)
        let x = square();
        let xt = transposed(&x);
        refused(|| drop(x.addcmul_(&xt, &x, 1.0)));
        refused(|| drop(x.addcdiv_(&x, &xt, 1.0)));
        refused(|| drop(x.lerp_(&xt, 0.5)));
        assert_eq!(x.version(), 0);
        x.addcmul_(&xt.clone(), &x, 1.0);
        assert_eq!(x.to_vec(), vec![2.0, 8.0, 9.0, 20.0]);
        assert_eq!(x.version(), 1);
        // lerp_ toward own transpose with weight 0.5: (x + x.t()) / 2.
        let x = square();
        x.lerp_(&transposed(&x).clone(), 0.5);
        assert_eq!(x.to_vec(), vec![1.0, 2.5, 2.5, 4.0]);
        // x.lerp_(x, w) is a full overlap: allowed.
        let w = Tensor::from_vec(vec![0.5, 0.5, 0.5, 0.5], &[2, 2]);
        x.lerp_(&x, &w);
        assert_eq!(x.to_vec(), vec![1.0, 2.5, 2.5, 4.0]);
    }

    #[test]
    fn version_is_shared_by_aliases_and_bumped_once_per_op() {
        let base = square();
        let alias = transposed(&base);
        assert_eq!(base.version(), 0);
        alias.add_(base.clone()).mul_(2.0).clamp_(0.0, 9.0);
        assert_eq!(base.version(), 3);
        assert_eq!(alias.version(), 3);
        // [[2,5],[5,8]] * 2 = [[4,10],[10,16]] clamped to 9.
        assert_eq!(base.to_vec(), vec![4.0, 9.0, 9.0, 9.0]);
    }
}
