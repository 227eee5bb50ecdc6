//! Elementwise math real code uses: `rsqrt`, `reciprocal`, `sin`, `cos`,
//! `erf`, `gelu`, `silu`, `softplus`, `relu6`, `hardtanh`, `clamp_min`,
//! `clamp_max`, `sign`, `floor`, `round`, `maximum`, `minimum`; `add`/`sub`
//! with `alpha` ([`add_scaled`](Tensor::add_scaled),
//! [`sub_scaled`](Tensor::sub_scaled)) and `addcmul`/`addcdiv` with the
//! default `value = 1` ([`addcmul1`](Tensor::addcmul1),
//! [`addcdiv1`](Tensor::addcdiv1)), each with its in-place form where
//! PyTorch has one. Every op is recorded under its aten name with
//! PyTorch's argument order.

use super::overlap::assert_no_partial_overlap;
use crate::element::{Element, FloatElement};
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::inplace::Same;
use super::kernel::{
    binary, check_broadcast_into, check_writable, inplace_binary, inplace_unary, ternary_values,
    unary, write_values,
};
use super::operand::{Operand, OperandRef};
use super::scalar_arg;

// ---- scalar kernels ----

/// The error function in `f64`, accurate to a few ulps: the everywhere
/// convergent series `erf(x) = 2/√π · e^(-x²) · Σ 2ⁿ x^(2n+1) / (1·3···(2n+1))`
/// (all terms positive, so no cancellation), `±1` beyond `|x| = 6`.
pub(crate) fn erf_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a >= 6.0 {
        return x.signum();
    }
    if a == 0.0 {
        return x; // keeps the sign of zero
    }
    let x2 = a * a;
    let mut term = a;
    let mut sum = a;
    let mut n = 0.0;
    loop {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    let r = std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() * sum;
    r.min(1.0).copysign(x)
}

#[inline]
fn f<T: FloatElement>(v: f64) -> T {
    T::from_f64(v)
}

#[inline]
pub(crate) fn erf_k<T: FloatElement>(x: T) -> T {
    f(erf_f64(x.to_f64()))
}

/// `gelu` with `approximate = "none"` (`exact`) or `"tanh"`.
#[inline]
pub(crate) fn gelu_k<T: FloatElement>(x: T, tanh: bool) -> T {
    let half: T = f(0.5);
    if tanh {
        let k: T = f((2.0 / std::f64::consts::PI).sqrt());
        let c: T = f(0.044715);
        half * x * (T::one() + (k * (x + c * x * x * x)).tanh())
    } else {
        half * x * (T::one() + erf_k(x * f(std::f64::consts::FRAC_1_SQRT_2)))
    }
}

#[inline]
pub(crate) fn silu_k<T: FloatElement>(x: T) -> T {
    x / (T::one() + (-x).exp())
}

#[inline]
pub(crate) fn softplus_k<T: FloatElement>(x: T, beta: T, threshold: T) -> T {
    if x * beta > threshold {
        x
    } else {
        (x * beta).exp().ln_1p() / beta
    }
}

/// `max(x, lo)` with NaN propagation from either side (PyTorch's
/// `clamp_min`).
#[inline]
pub(crate) fn clamp_min_k<T: Element>(x: T, lo: T) -> T {
    #[allow(clippy::eq_op)]
    if lo != lo || x < lo { lo } else { x }
}

/// `min(x, hi)` with NaN propagation from either side.
#[inline]
pub(crate) fn clamp_max_k<T: Element>(x: T, hi: T) -> T {
    #[allow(clippy::eq_op)]
    if hi != hi || x > hi { hi } else { x }
}

/// `-1`, `0` or `1`; `sign(NaN)` and `sign(-0.0)` are `0.0`, as PyTorch's
/// `(0 < x) - (x < 0)`.
#[inline]
pub(crate) fn sign_k<T: Element>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else {
        T::zero()
    }
}

/// Round half to even (PyTorch's `round`, C's `nearbyint`).
#[inline]
pub(crate) fn round_k<T: FloatElement>(x: T) -> T {
    let r = x.round();
    let two = T::one() + T::one();
    if (r - x).abs() == f(0.5) {
        two * (x / two).round()
    } else {
        r
    }
}

/// NaN-propagating elementwise maximum.
#[inline]
pub(crate) fn maximum_k<T: Element>(x: T, y: T) -> T {
    #[allow(clippy::eq_op)]
    if x != x || x > y { x } else { y }
}

/// NaN-propagating elementwise minimum.
#[inline]
pub(crate) fn minimum_k<T: Element>(x: T, y: T) -> T {
    #[allow(clippy::eq_op)]
    if x != x || x < y { x } else { y }
}

fn one_arg<T: Element>(t: &Tensor<T>) -> impl FnOnce() -> Vec<Arg> + '_ {
    move || vec![t.to_arg()]
}

/// Defines `name(&self)`, `name_(&self)` and the crate-private
/// `name_in_place(&self)` (what `name_` runs, without its returned handle:
/// what a fused run's op table calls) for a float unary kernel.
macro_rules! float_unary {
    ($(($name:ident, $name_:ident, $name_in:ident, $k:expr, $doc:literal, $ex_in:expr, $ex_out:expr)),* $(,)?) => {
        impl<T: FloatElement> Tensor<T> {
            $(
                #[doc = concat!("Elementwise ", $doc, " (aten `", stringify!($name), "`).")]
                ///
                /// ```
                /// use funcz_runtime::Tensor;
                #[doc = concat!("let x = Tensor::<f64>::from_vec(vec!", stringify!($ex_in), ", &[2]);")]
                #[doc = concat!("let y = x.", stringify!($name), "();")]
                #[doc = concat!("let want: [f64; 2] = ", stringify!($ex_out), ";")]
                /// for (a, b) in y.to_vec().iter().zip(want) {
                ///     assert!((a - b).abs() < 1e-12, "{a} vs {b}");
                /// }
                /// ```
                #[track_caller]
                pub fn $name(&self) -> Tensor<T> {
                    trace::op(stringify!($name), one_arg(self), || unary(self, $k))
                }

                #[doc = concat!("In-place [`", stringify!($name), "`](Tensor::", stringify!($name),
                    ") (aten `", stringify!($name_), "`). Returns `self`.")]
                ///
                /// ```
                /// use funcz_runtime::Tensor;
                #[doc = concat!("let x = Tensor::<f32>::from_vec(vec!", stringify!($ex_in), ", &[2]);")]
                #[doc = concat!("let want = x.", stringify!($name), "().to_vec();")]
                #[doc = concat!("x.", stringify!($name_), "();")]
                /// assert_eq!(x.to_vec(), want);
                /// assert_eq!(x.version(), 1);
                /// ```
                #[track_caller]
                pub fn $name_(&self) -> Tensor<T> {
                    self.$name_in();
                    self.handle()
                }

                #[doc = concat!("[`", stringify!($name_), "`](Tensor::", stringify!($name_),
                    ") without its returned handle (what a fused run's op table calls: \
                    no handle to make and drop per step).")]
                #[track_caller]
                #[inline]
                pub(crate) fn $name_in(&self) {
                    check_writable(stringify!($name_), &self.layout);
                    trace::op(stringify!($name_), one_arg(self), || {
                        inplace_unary(stringify!($name_), self, $k);
                        Same(self)
                    });
                }
            )*
        }
    };
}

float_unary!(
    (
        rsqrt,
        rsqrt_,
        rsqrt_in_place,
        |x: T| T::one() / x.sqrt(),
        "`1 / sqrt(x)`",
        [4.0, 0.25],
        [0.5, 2.0]
    ),
    (
        reciprocal,
        reciprocal_,
        reciprocal_in_place,
        |x: T| T::one() / x,
        "`1 / x`",
        [4.0, -0.5],
        [0.25, -2.0]
    ),
    (
        sin,
        sin_,
        sin_in_place,
        |x: T| x.sin(),
        "sine",
        [0.0, 1.0],
        [0.0, 0.8414709848078965]
    ),
    (
        cos,
        cos_,
        cos_in_place,
        |x: T| x.cos(),
        "cosine",
        [0.0, 1.0],
        [1.0, 0.5403023058681398]
    ),
    (
        erf,
        erf_,
        erf_in_place,
        erf_k,
        "error function",
        [0.0, 1.0],
        [0.0, 0.8427007929497149]
    ),
    (
        floor,
        floor_,
        floor_in_place,
        |x: T| x.floor(),
        "floor",
        [1.5, -1.5],
        [1.0, -2.0]
    ),
    (
        round,
        round_,
        round_in_place,
        round_k,
        "rounding, half to even as PyTorch (`2.5` → `2`)",
        [2.5, -1.5],
        [2.0, -2.0]
    ),
);

impl<T: FloatElement> Tensor<T> {
    /// The Gaussian error linear unit (aten `gelu(self, approximate)`):
    /// `approximate` is `"none"` (`x/2 · (1 + erf(x/√2))`) or `"tanh"`
    /// (`x/2 · (1 + tanh(√(2/π) (x + 0.044715 x³)))`), as PyTorch. Recorded
    /// as `gelu(self)` for `"none"` and `gelu(self, "tanh")` otherwise
    /// (the string argument is recorded as the integer `1`). PyTorch has
    /// no `gelu_`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![0.0, 1.0], &[2]);
    /// let y = x.gelu("none").to_vec();
    /// assert!((y[1] - 0.8413447460685429).abs() < 1e-12);
    /// let t = x.gelu("tanh").to_vec();
    /// assert!((t[1] - 0.8411919906082768).abs() < 1e-12);
    /// ```
    #[track_caller]
    pub fn gelu(&self, approximate: &str) -> Tensor<T> {
        let tanh = match approximate {
            "none" => false,
            "tanh" => true,
            other => panic!(
                "funcz: gelu: approximate argument must be either none or tanh, got '{other}' \
                 (input shape {:?})",
                self.shape()
            ),
        };
        trace::op(
            "gelu",
            || {
                let mut a = vec![self.to_arg()];
                if tanh {
                    a.push(Arg::Int(1));
                }
                a
            },
            || unary(self, |x| gelu_k(x, tanh)),
        )
    }

    /// `x · sigmoid(x)` (aten `silu`). PyTorch's in-place form is only
    /// reachable through `F.silu(inplace=True)`; use `copy_` of this.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![0.0, 2.0], &[2]);
    /// let y = x.silu().to_vec();
    /// assert_eq!(y[0], 0.0);
    /// assert!((y[1] - 2.0 / (1.0 + (-2.0f64).exp())).abs() < 1e-15);
    /// ```
    #[track_caller]
    pub fn silu(&self) -> Tensor<T> {
        trace::op("silu", one_arg(self), || unary(self, silu_k))
    }

    /// `log(1 + e^(βx)) / β`, or `x` where `βx > threshold` (aten
    /// `softplus(self, beta, threshold)`; PyTorch's defaults are `1.0`
    /// and `20.0`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![0.0, 30.0], &[2]);
    /// let y = x.softplus(1.0, 20.0).to_vec();
    /// assert!((y[0] - 2f64.ln()).abs() < 1e-15);
    /// assert_eq!(y[1], 30.0);
    /// ```
    #[track_caller]
    pub fn softplus(&self, beta: T, threshold: T) -> Tensor<T> {
        trace::op(
            "softplus",
            || vec![self.to_arg(), scalar_arg(beta), scalar_arg(threshold)],
            || unary(self, |x| softplus_k(x, beta, threshold)),
        )
    }

    /// `min(max(x, 0), 6)` (aten `relu6`); NaN stays NaN.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-1.0, 3.0, 7.0], &[3]);
    /// assert_eq!(x.relu6().to_vec(), vec![0.0, 3.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn relu6(&self) -> Tensor<T> {
        trace::op("relu6", one_arg(self), || {
            unary(self, |x| clamp_max_k(clamp_min_k(x, T::zero()), f(6.0)))
        })
    }

    /// Clamps into `[min_val, max_val]` (aten `hardtanh(self, min_val,
    /// max_val)`; PyTorch's defaults are `-1.0` and `1.0`); NaN stays NaN.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-3.0, 0.5, 2.0], &[3]);
    /// assert_eq!(x.hardtanh(-1.0, 1.0).to_vec(), vec![-1.0, 0.5, 1.0]);
    /// ```
    #[track_caller]
    pub fn hardtanh(&self, min_val: T, max_val: T) -> Tensor<T> {
        trace::op(
            "hardtanh",
            || vec![self.to_arg(), scalar_arg(min_val), scalar_arg(max_val)],
            || unary(self, |x| clamp_max_k(clamp_min_k(x, min_val), max_val)),
        )
    }

    /// In-place [`hardtanh`](Tensor::hardtanh) (aten `hardtanh_`, what
    /// `F.hardtanh(inplace=True)` and `F.relu6(inplace=True)` run).
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-3.0, 7.0], &[2]);
    /// x.hardtanh_(0.0, 6.0);
    /// assert_eq!(x.to_vec(), vec![0.0, 6.0]);
    /// ```
    #[track_caller]
    pub fn hardtanh_(&self, min_val: T, max_val: T) -> Tensor<T> {
        self.hardtanh_in_place(min_val, max_val);
        self.handle()
    }

    /// [`hardtanh_`](Tensor::hardtanh_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn hardtanh_in_place(&self, min_val: T, max_val: T) {
        check_writable("hardtanh_", &self.layout);
        trace::op(
            "hardtanh_",
            || vec![self.to_arg(), scalar_arg(min_val), scalar_arg(max_val)],
            || {
                inplace_unary("hardtanh_", self, |x| {
                    clamp_max_k(clamp_min_k(x, min_val), max_val)
                });
                Same(self)
            },
        );
    }

    /// `self + t1 * t2` (aten `addcmul` with PyTorch's default
    /// `value = 1`, recorded as `addcmul(self, t1, t2, 1.0)`); the
    /// three-argument [`addcmul`](Tensor::addcmul) takes `value`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 1.0], &[2]);
    /// let a = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    /// assert_eq!(x.addcmul1(&a, &a).to_vec(), vec![5.0, 10.0]);
    /// ```
    #[track_caller]
    pub fn addcmul1(&self, t1: &Tensor<T>, t2: &Tensor<T>) -> Tensor<T> {
        addc(self, t1, t2, "addcmul", |x, a, b| x + a * b)
    }

    /// In-place [`addcmul1`](Tensor::addcmul1) (aten `addcmul_` with
    /// `value = 1`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 1.0], &[2]);
    /// let a = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    /// x.addcmul1_(&a, &a);
    /// assert_eq!(x.to_vec(), vec![5.0, 10.0]);
    /// ```
    #[track_caller]
    pub fn addcmul1_(&self, t1: &Tensor<T>, t2: &Tensor<T>) -> Tensor<T> {
        self.addcmul1_in_place(t1, t2);
        self.handle()
    }

    /// [`addcmul1_`](Tensor::addcmul1_) without its returned handle (what a
    /// fused run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn addcmul1_in_place(&self, t1: &Tensor<T>, t2: &Tensor<T>) {
        addc_in_place(self, t1, t2, "addcmul_", |x, a, b| x + a * b);
    }

    /// `self + t1 / t2` (aten `addcdiv` with PyTorch's default
    /// `value = 1`, recorded as `addcdiv(self, t1, t2, 1.0)`); the
    /// three-argument [`addcdiv`](Tensor::addcdiv) takes `value`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 1.0], &[2]);
    /// let a = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    /// let b = Tensor::from_vec(vec![4.0], &[1]);
    /// assert_eq!(x.addcdiv1(&a, &b).to_vec(), vec![1.5, 1.75]);
    /// ```
    #[track_caller]
    pub fn addcdiv1(&self, t1: &Tensor<T>, t2: &Tensor<T>) -> Tensor<T> {
        addc(self, t1, t2, "addcdiv", |x, a, b| x + a / b)
    }

    /// In-place [`addcdiv1`](Tensor::addcdiv1) (aten `addcdiv_` with
    /// `value = 1`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 1.0], &[2]);
    /// let a = Tensor::from_vec(vec![2.0, 3.0], &[2]);
    /// let b = Tensor::from_vec(vec![4.0], &[1]);
    /// x.addcdiv1_(&a, &b);
    /// assert_eq!(x.to_vec(), vec![1.5, 1.75]);
    /// ```
    #[track_caller]
    pub fn addcdiv1_(&self, t1: &Tensor<T>, t2: &Tensor<T>) -> Tensor<T> {
        self.addcdiv1_in_place(t1, t2);
        self.handle()
    }

    /// [`addcdiv1_`](Tensor::addcdiv1_) without its returned handle (what a
    /// fused run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn addcdiv1_in_place(&self, t1: &Tensor<T>, t2: &Tensor<T>) {
        addc_in_place(self, t1, t2, "addcdiv_", |x, a, b| x + a / b);
    }
}

#[track_caller]
fn check_bcast3<T: Element>(op: &str, s: &Tensor<T>, a: &Tensor<T>, b: &Tensor<T>) -> Vec<usize> {
    let ab = broadcast_or_panic(op, "tensor1", s.shape(), a.shape());
    broadcast_or_panic(op, "tensor2", &ab, b.shape())
}

/// The broadcast shape of `a` and `b`, or a panic at the caller naming the
/// op, both shapes and the argument.
#[track_caller]
pub(crate) fn broadcast_or_panic(op: &str, arg: &str, a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let y = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => panic!(
                "funcz: {op}: the size of tensor a ({x}) must match the size of tensor b ({y}) \
                 at non-singleton dimension {i} (shapes {a:?} and {b:?}, argument '{arg}')"
            ),
        };
    }
    out
}

#[track_caller]
fn addc<T: FloatElement>(
    s: &Tensor<T>,
    t1: &Tensor<T>,
    t2: &Tensor<T>,
    op: &'static str,
    k: impl Fn(T, T, T) -> T,
) -> Tensor<T> {
    check_bcast3(op, s, t1, t2);
    trace::op(
        op,
        || vec![s.to_arg(), t1.to_arg(), t2.to_arg(), Arg::Float(1.0)],
        || {
            let (v, shape) = ternary_values(op, s, t1, t2, k);
            Tensor::from_contiguous(v, &shape)
        },
    )
}

/// The checks of [`addc_in_place`] (also run by a fused run's step before
/// the op, where a panic reports the caller's line).
#[track_caller]
pub(crate) fn check_addc<T: Element>(op: &str, s: &Tensor<T>, t1: &Tensor<T>, t2: &Tensor<T>) {
    check_writable(op, &s.layout);
    assert_no_partial_overlap(op, "tensor1", s, t1);
    assert_no_partial_overlap(op, "tensor2", s, t2);
    let shape = check_bcast3(op, s, t1, t2);
    if shape != s.shape() {
        panic!(
            "funcz: {op}: output with shape {:?} doesn't match the broadcast shape {shape:?} \
             (self shape {:?}, tensor1 shape {:?}, tensor2 shape {:?})",
            s.shape(),
            s.shape(),
            t1.shape(),
            t2.shape()
        );
    }
}

/// The in-place `self += t1 ∘ t2` of `addcmul1_` and `addcdiv1_` (`k` is
/// `x + a * b` or `x + a / b`), recorded as `op(self, t1, t2, 1.0)`.
#[track_caller]
fn addc_in_place<T: FloatElement>(
    s: &Tensor<T>,
    t1: &Tensor<T>,
    t2: &Tensor<T>,
    op: &'static str,
    k: impl Fn(T, T, T) -> T,
) {
    check_addc(op, s, t1, t2);
    trace::op(
        op,
        || vec![s.to_arg(), t1.to_arg(), t2.to_arg(), Arg::Float(1.0)],
        || {
            let (v, shape) = ternary_values(op, s, t1, t2, k);
            write_values(op, s, &v, &shape);
            Same(s)
        },
    );
}

impl<T: Element> Tensor<T> {
    /// `self + alpha * other`, broadcasting (aten `add(self, other,
    /// alpha)`: PyTorch's `x.add(y, alpha=a)` ports as
    /// `x.add_scaled(&y, a)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let y = Tensor::from_vec(vec![10.0], &[1]);
    /// assert_eq!(x.add_scaled(&y, 0.5).to_vec(), vec![6.0, 7.0]);
    /// ```
    #[track_caller]
    pub fn add_scaled(&self, other: impl Operand<T>, alpha: T) -> Tensor<T> {
        let other = other.operand();
        bcast_check("add", self, &other);
        trace::op(
            "add",
            || vec![self.to_arg(), other.to_arg(), scalar_arg(alpha)],
            || binary("add", self, other, |x, y| x + alpha * y),
        )
    }

    /// In-place [`add_scaled`](Tensor::add_scaled) (aten `add_(self,
    /// other, alpha)`, PyTorch's `x.add_(y, alpha=a)`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let p = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let g = Tensor::from_vec(vec![10.0, 20.0], &[2]);
    /// p.add_scaled_(&g, -0.1);
    /// assert_eq!(p.to_vec(), vec![0.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn add_scaled_(&self, other: impl Operand<T>, alpha: T) -> Tensor<T> {
        self.add_scaled_in_place(other, alpha);
        self.handle()
    }

    /// [`add_scaled_`](Tensor::add_scaled_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn add_scaled_in_place(&self, other: impl Operand<T>, alpha: T) {
        let other = other.operand();
        inplace_check("add_", self, &other);
        trace::op(
            "add_",
            || vec![self.to_arg(), other.to_arg(), scalar_arg(alpha)],
            || {
                inplace_binary("add_", self, other, |x, y| x + alpha * y);
                Same(self)
            },
        );
    }

    /// `self - alpha * other`, broadcasting (aten `sub(self, other,
    /// alpha)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![10, 20], &[2]);
    /// assert_eq!(x.sub_scaled(3, 2).to_vec(), vec![4, 14]);
    /// ```
    #[track_caller]
    pub fn sub_scaled(&self, other: impl Operand<T>, alpha: T) -> Tensor<T> {
        let other = other.operand();
        bcast_check("sub", self, &other);
        trace::op(
            "sub",
            || vec![self.to_arg(), other.to_arg(), scalar_arg(alpha)],
            || binary("sub", self, other, |x, y| x - alpha * y),
        )
    }

    /// In-place [`sub_scaled`](Tensor::sub_scaled) (aten `sub_(self,
    /// other, alpha)`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
    /// x.sub_scaled_(&x.clone(), 2.0);
    /// assert_eq!(x.to_vec(), vec![-1.0, -2.0]);
    /// ```
    #[track_caller]
    pub fn sub_scaled_(&self, other: impl Operand<T>, alpha: T) -> Tensor<T> {
        self.sub_scaled_in_place(other, alpha);
        self.handle()
    }

    /// [`sub_scaled_`](Tensor::sub_scaled_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn sub_scaled_in_place(&self, other: impl Operand<T>, alpha: T) {
        let other = other.operand();
        inplace_check("sub_", self, &other);
        trace::op(
            "sub_",
            || vec![self.to_arg(), other.to_arg(), scalar_arg(alpha)],
            || {
                inplace_binary("sub_", self, other, |x, y| x - alpha * y);
                Same(self)
            },
        );
    }

    /// `max(x, min)` elementwise (aten `clamp_min`); a NaN element or
    /// bound gives NaN, as PyTorch.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![-2, 5], &[2]);
    /// assert_eq!(x.clamp_min(0).to_vec(), vec![0, 5]);
    /// ```
    #[track_caller]
    pub fn clamp_min(&self, min: T) -> Tensor<T> {
        trace::op(
            "clamp_min",
            || vec![self.to_arg(), scalar_arg(min)],
            || unary(self, |x| clamp_min_k(x, min)),
        )
    }

    /// In-place [`clamp_min`](Tensor::clamp_min) (aten `clamp_min_`).
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-2.0, 5.0], &[2]);
    /// x.clamp_min_(1e-8);
    /// assert_eq!(x.to_vec(), vec![1e-8, 5.0]);
    /// ```
    #[track_caller]
    pub fn clamp_min_(&self, min: T) -> Tensor<T> {
        self.clamp_min_in_place(min);
        self.handle()
    }

    /// [`clamp_min_`](Tensor::clamp_min_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn clamp_min_in_place(&self, min: T) {
        check_writable("clamp_min_", &self.layout);
        trace::op(
            "clamp_min_",
            || vec![self.to_arg(), scalar_arg(min)],
            || {
                inplace_unary("clamp_min_", self, |x| clamp_min_k(x, min));
                Same(self)
            },
        );
    }

    /// `min(x, max)` elementwise (aten `clamp_max`); NaN propagates.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-2.0, 5.0], &[2]);
    /// assert_eq!(x.clamp_max(1.0).to_vec(), vec![-2.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn clamp_max(&self, max: T) -> Tensor<T> {
        trace::op(
            "clamp_max",
            || vec![self.to_arg(), scalar_arg(max)],
            || unary(self, |x| clamp_max_k(x, max)),
        )
    }

    /// In-place [`clamp_max`](Tensor::clamp_max) (aten `clamp_max_`).
    /// Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![-2, 5], &[2]);
    /// x.clamp_max_(1);
    /// assert_eq!(x.to_vec(), vec![-2, 1]);
    /// ```
    #[track_caller]
    pub fn clamp_max_(&self, max: T) -> Tensor<T> {
        self.clamp_max_in_place(max);
        self.handle()
    }

    /// [`clamp_max_`](Tensor::clamp_max_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn clamp_max_in_place(&self, max: T) {
        check_writable("clamp_max_", &self.layout);
        trace::op(
            "clamp_max_",
            || vec![self.to_arg(), scalar_arg(max)],
            || {
                inplace_unary("clamp_max_", self, |x| clamp_max_k(x, max));
                Same(self)
            },
        );
    }

    /// `-1`, `0` or `1` by the sign of each element (aten `sign`); NaN
    /// gives `0`, as in PyTorch.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![-2.5, 0.0, 3.0], &[3]);
    /// assert_eq!(x.sign().to_vec(), vec![-1.0, 0.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn sign(&self) -> Tensor<T> {
        trace::op("sign", one_arg(self), || unary(self, sign_k))
    }

    /// In-place [`sign`](Tensor::sign) (aten `sign_`). Returns `self`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![-7, 0, 9], &[3]);
    /// x.sign_();
    /// assert_eq!(x.to_vec(), vec![-1, 0, 1]);
    /// ```
    #[track_caller]
    pub fn sign_(&self) -> Tensor<T> {
        self.sign_in_place();
        self.handle()
    }

    /// [`sign_`](Tensor::sign_) without its returned handle (what a fused
    /// run's op table calls: no handle to make and drop per step).
    #[track_caller]
    #[inline]
    pub(crate) fn sign_in_place(&self) {
        check_writable("sign_", &self.layout);
        trace::op("sign_", one_arg(self), || {
            inplace_unary("sign_", self, sign_k);
            Same(self)
        });
    }

    /// Elementwise maximum of two tensors, broadcasting (aten `maximum`);
    /// NaN propagates.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 5.0], &[2]);
    /// let b = Tensor::from_vec(vec![3.0], &[1]);
    /// assert_eq!(a.maximum(&b).to_vec(), vec![3.0, 5.0]);
    /// ```
    #[track_caller]
    pub fn maximum(&self, other: &Tensor<T>) -> Tensor<T> {
        broadcast_or_panic("maximum", "other", self.shape(), other.shape());
        trace::op(
            "maximum",
            || vec![self.to_arg(), other.to_arg()],
            || binary("maximum", self, OperandRef::Tensor(other), maximum_k),
        )
    }

    /// Elementwise minimum of two tensors, broadcasting (aten `minimum`);
    /// NaN propagates.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<i64>::from_vec(vec![1, 5], &[2]);
    /// let b = Tensor::from_vec(vec![3], &[1]);
    /// assert_eq!(a.minimum(&b).to_vec(), vec![1, 3]);
    /// ```
    #[track_caller]
    pub fn minimum(&self, other: &Tensor<T>) -> Tensor<T> {
        broadcast_or_panic("minimum", "other", self.shape(), other.shape());
        trace::op(
            "minimum",
            || vec![self.to_arg(), other.to_arg()],
            || binary("minimum", self, OperandRef::Tensor(other), minimum_k),
        )
    }
}

#[track_caller]
fn bcast_check<T: Element>(op: &str, s: &Tensor<T>, other: &OperandRef<'_, T>) {
    if let OperandRef::Tensor(o) = other {
        broadcast_or_panic(op, "other", s.shape(), o.shape());
    }
}

/// The checks of `add_` and `sub_` with `alpha` (also run by a fused run's
/// step before the op).
#[track_caller]
pub(crate) fn inplace_check<T: Element>(op: &str, s: &Tensor<T>, other: &OperandRef<'_, T>) {
    check_writable(op, &s.layout);
    if let OperandRef::Tensor(o) = other {
        assert_no_partial_overlap(op, "other", s, o);
        let b = broadcast_or_panic(op, "other", s.shape(), o.shape());
        if b != s.shape() {
            panic!(
                "funcz: {op}: output with shape {:?} doesn't match the broadcast shape {b:?} \
                 (other shape {:?})",
                s.shape(),
                o.shape()
            );
        }
        check_broadcast_into(op, s.shape(), o.shape());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // Values from Abramowitz & Stegun table 7.1 / high-precision references.
        let cases = [
            (0.1, 0.1124629160182849),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (2.0, 0.9953222650189527),
            (3.0, 0.9999779095030014),
            (-1.5, -0.9661051464753108),
        ];
        for (x, want) in cases {
            let got = erf_f64(x);
            assert!((got - want).abs() < 4e-16, "erf({x}) = {got}, want {want}");
        }
        assert_eq!(erf_f64(10.0), 1.0);
        assert!(erf_f64(f64::NAN).is_nan());
        assert!(erf_f64(-0.0).is_sign_negative());
    }

    #[test]
    fn round_is_half_to_even() {
        let r: Vec<f64> = [0.5, 1.5, 2.5, -0.5, -2.5, 2.4, 2.6]
            .iter()
            .map(|&x| round_k(x))
            .collect();
        assert_eq!(r, vec![0.0, 2.0, 2.0, -0.0, -2.0, 2.0, 3.0]);
    }
}
