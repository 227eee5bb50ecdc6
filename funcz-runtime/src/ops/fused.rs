//! Block kernels of fused elementwise chains ([`crate::rt::fused_root`]).
//!
//! A fused chain runs every step of a run of in-place ops on one block of
//! the receiver's buffer before it moves to the next block, so each
//! element is read and written from memory once. Each step is one of the
//! functions below: it updates a block `x` in place, given its operands
//! already cut to the block (a [`View`]: a broadcast scalar or a slice as
//! long as `x`) and its scalar parameters ([`Params`]).
//!
//! The per-element formula of every kernel is the one the in-place op's
//! own kernel computes, expression for expression, so a fused chain gives
//! the same bits as the ops run one by one. Where the op's kernel is a
//! shared scalar function (`relu_k`, `clamp_k`, `lerp_k`, `sign_k`, ...)
//! it is called here too; where it is a closure written inline in the op
//! (`|x, y| x + y` in `Tensor::add_`), the closure is repeated here with
//! the op it must match named beside it, and `tests/fused.rs` checks every
//! kernel against its op bit for bit.

use crate::element::{Element, FloatElement};

use super::elementwise::{clamp_k, lerp_k, pow_scalar_k, relu_k, sigmoid_k};
use super::math::{clamp_max_k, clamp_min_k, erf_k, round_k, sign_k};

/// An operand of a step, cut to one block.
#[derive(Clone, Copy, Debug)]
pub enum View<'a, T> {
    /// No operand (the step has fewer).
    None,
    /// One value broadcast over the block.
    Scalar(T),
    /// One value per element of the block (exactly as long as the block).
    Slice(&'a [T]),
}

/// The scalar arguments of a step (unused ones are left at their default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Params<T> {
    /// The first scalar: `alpha`, `value`, a clamp bound, a fill value, a
    /// scalar exponent or weight.
    pub s0: T,
    /// The second scalar (`hardtanh`'s `max_val`).
    pub s1: T,
    /// `clamp`'s optional bounds.
    pub lo: Option<T>,
    /// See `lo`.
    pub hi: Option<T>,
}

/// A step's kernel on one block: `x` in place, with operands `a` and `b`.
pub(crate) type BlockFn<T> = fn(&mut [T], View<'_, T>, View<'_, T>, &Params<T>);

#[inline(always)]
fn map1<T: Copy>(x: &mut [T], f: impl Fn(T) -> T) {
    for v in x {
        *v = f(*v);
    }
}

#[inline(always)]
fn map2<T: Copy>(x: &mut [T], a: View<'_, T>, f: impl Fn(T, T) -> T) {
    match a {
        View::Scalar(y) => map1(x, |v| f(v, y)),
        View::Slice(s) => {
            let s = &s[..x.len()];
            for (v, &y) in x.iter_mut().zip(s) {
                *v = f(*v, y);
            }
        }
        View::None => unreachable!("funcz: internal: a binary step without its operand"),
    }
}

#[inline(always)]
fn map3<T: Copy>(x: &mut [T], a: View<'_, T>, b: View<'_, T>, f: impl Fn(T, T, T) -> T) {
    match (a, b) {
        (View::Slice(a), View::Slice(b)) => {
            let n = x.len();
            let (a, b) = (&a[..n], &b[..n]);
            for ((v, &y), &z) in x.iter_mut().zip(a).zip(b) {
                *v = f(*v, y, z);
            }
        }
        (a, View::Scalar(z)) => map2(x, a, |v, y| f(v, y, z)),
        (View::Scalar(y), b) => map2(x, b, |v, z| f(v, y, z)),
        _ => unreachable!("funcz: internal: a ternary step without its operands"),
    }
}

// ---- binary arithmetic (Tensor::add_ & co., ops/inplace.rs) ----

/// `add_`: `x + y` (the closure of `Tensor::add_`).
pub(crate) fn add<T: Element>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map2(x, a, |v, y| v + y)
}

/// `sub_`: `x - y` (the closure of `Tensor::sub_`).
pub(crate) fn sub<T: Element>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map2(x, a, |v, y| v - y)
}

/// `mul_`: `x * y` (the closure of `Tensor::mul_`).
pub(crate) fn mul<T: Element>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map2(x, a, |v, y| v * y)
}

/// `div_`: `x / y` (the closure of `Tensor::div_`; float only here).
pub(crate) fn div<T: Element>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map2(x, a, |v, y| v / y)
}

/// `add_scaled_`: `x + alpha * y` (the closure of `Tensor::add_scaled_`,
/// ops/math.rs).
pub(crate) fn add_scaled<T: Element>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    let alpha = p.s0;
    map2(x, a, |v, y| v + alpha * y)
}

/// `sub_scaled_`: `x - alpha * y` (the closure of `Tensor::sub_scaled_`).
pub(crate) fn sub_scaled<T: Element>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    let alpha = p.s0;
    map2(x, a, |v, y| v - alpha * y)
}

// ---- unary ops of any element type ----

/// `neg_`: `-x` (the closure of `Tensor::neg_`).
pub(crate) fn neg<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| -v)
}

/// `abs_`: `x.abs()` (the closure of `Tensor::abs_`).
pub(crate) fn abs<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.abs())
}

/// `relu_`: `relu_k`.
pub(crate) fn relu<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, relu_k)
}

/// `clamp_(lo, hi)`: `clamp_k` (at least one bound is set: a step
/// without one is never fused).
pub(crate) fn clamp<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    let (lo, hi) = (p.lo, p.hi);
    match (lo, hi) {
        // The same function, with the bounds' presence known to the loop.
        (Some(_), Some(_)) => map1(x, |v| clamp_k(v, lo, hi)),
        (Some(_), None) => map1(x, |v| clamp_k(v, lo, None)),
        (None, _) => map1(x, |v| clamp_k(v, None, hi)),
    }
}

/// `clamp_min_`: `clamp_min_k`.
pub(crate) fn clamp_min<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    let lo = p.s0;
    map1(x, |v| clamp_min_k(v, lo))
}

/// `clamp_max_`: `clamp_max_k`.
pub(crate) fn clamp_max<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    let hi = p.s0;
    map1(x, |v| clamp_max_k(v, hi))
}

/// `hardtanh_(lo, hi)`: `clamp_max_k(clamp_min_k(x, lo), hi)` (the closure
/// of `Tensor::hardtanh_`).
pub(crate) fn hardtanh<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    let (lo, hi) = (p.s0, p.s1);
    map1(x, |v| clamp_max_k(clamp_min_k(v, lo), hi))
}

/// `sign_`: `sign_k`.
pub(crate) fn sign<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, sign_k)
}

/// `fill_(value)`.
pub(crate) fn fill<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, p: &Params<T>) {
    x.fill(p.s0)
}

/// `zero_`.
pub(crate) fn zero<T: Element>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    x.fill(T::zero())
}

// ---- float unary ops (ops/inplace.rs, ops/math.rs) ----

/// `sqrt_`: `x.sqrt()`.
pub(crate) fn sqrt<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.sqrt())
}

/// `rsqrt_`: `1 / x.sqrt()` (the kernel of `float_unary!`'s `rsqrt`).
pub(crate) fn rsqrt<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| T::one() / v.sqrt())
}

/// `reciprocal_`: `1 / x`.
pub(crate) fn reciprocal<T: FloatElement>(
    x: &mut [T],
    _: View<'_, T>,
    _: View<'_, T>,
    _: &Params<T>,
) {
    map1(x, |v| T::one() / v)
}

/// `exp_`: `x.exp()`.
pub(crate) fn exp<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.exp())
}

/// `log_`: `x.ln()`.
pub(crate) fn log<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.ln())
}

/// `sigmoid_`: `sigmoid_k`.
pub(crate) fn sigmoid<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, sigmoid_k)
}

/// `tanh_`: `x.tanh()`.
pub(crate) fn tanh<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.tanh())
}

/// `sin_`: `x.sin()`.
pub(crate) fn sin<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.sin())
}

/// `cos_`: `x.cos()`.
pub(crate) fn cos<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.cos())
}

/// `erf_`: `erf_k`.
pub(crate) fn erf<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, erf_k)
}

/// `floor_`: `x.floor()`.
pub(crate) fn floor<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, |v| v.floor())
}

/// `round_`: `round_k`.
pub(crate) fn round<T: FloatElement>(x: &mut [T], _: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map1(x, round_k)
}

/// `pow_` with a scalar exponent: `pow_scalar_k(e)`.
pub(crate) fn pow_scalar<T: FloatElement>(
    x: &mut [T],
    _: View<'_, T>,
    _: View<'_, T>,
    p: &Params<T>,
) {
    map1(x, pow_scalar_k(p.s0))
}

/// `pow_` with a tensor exponent: `x.powf(y)` (the closure of
/// `Tensor::pow_`).
pub(crate) fn pow<T: FloatElement>(x: &mut [T], a: View<'_, T>, _: View<'_, T>, _: &Params<T>) {
    map2(x, a, |v, y| v.powf(y))
}

// ---- ternary float ops ----

/// `addcmul_(t1, t2, value)`: `x + value * a * b` (the closure of
/// `Tensor::addcmul_`).
pub(crate) fn addcmul<T: FloatElement>(x: &mut [T], a: View<'_, T>, b: View<'_, T>, p: &Params<T>) {
    let value = p.s0;
    map3(x, a, b, |v, y, z| v + value * y * z)
}

/// `addcdiv_(t1, t2, value)`: `x + value * a / b` (the closure of
/// `Tensor::addcdiv_`).
pub(crate) fn addcdiv<T: FloatElement>(x: &mut [T], a: View<'_, T>, b: View<'_, T>, p: &Params<T>) {
    let value = p.s0;
    map3(x, a, b, |v, y, z| v + value * y / z)
}

/// `addcmul1_(t1, t2)`: `x + a * b` (the closure of `Tensor::addcmul1_`,
/// ops/math.rs).
pub(crate) fn addcmul1<T: FloatElement>(
    x: &mut [T],
    a: View<'_, T>,
    b: View<'_, T>,
    _: &Params<T>,
) {
    map3(x, a, b, |v, y, z| v + y * z)
}

/// `addcdiv1_(t1, t2)`: `x + a / b` (the closure of `Tensor::addcdiv1_`).
pub(crate) fn addcdiv1<T: FloatElement>(
    x: &mut [T],
    a: View<'_, T>,
    b: View<'_, T>,
    _: &Params<T>,
) {
    map3(x, a, b, |v, y, z| v + y / z)
}

/// `lerp_(end, w)` with a scalar weight: `lerp_k(x, end, w)`.
pub(crate) fn lerp_scalar<T: FloatElement>(
    x: &mut [T],
    a: View<'_, T>,
    _: View<'_, T>,
    p: &Params<T>,
) {
    let w = p.s0;
    map2(x, a, |v, e| lerp_k(v, e, w))
}

/// `lerp_(end, weight)` with a tensor weight: `lerp_k(x, end, weight)`.
pub(crate) fn lerp<T: FloatElement>(x: &mut [T], a: View<'_, T>, b: View<'_, T>, _: &Params<T>) {
    map3(x, a, b, lerp_k)
}

/// The per-element formulas of the fusible in-place ops, as their own
/// kernels compute them (each takes the element, its operands, and the
/// step's scalar parameters).
///
/// ```
/// use funcz_runtime::rt::{FusedParams, k};
/// let p = FusedParams { s0: 2.0f32, ..Default::default() };
/// assert_eq!(k::add_scaled(1.0, 3.0, &p), 7.0);
/// assert_eq!(k::relu(-1.0f32, &p), 0.0);
/// ```
pub mod k {
    use super::super::elementwise::{relu_k, sigmoid_k};
    use super::super::math::{clamp_max_k, clamp_min_k, sign_k};
    use super::Params as P;
    use crate::element::{Element, FloatElement};

    /// `add_`: `v + a`.
    #[inline(always)]
    pub fn add<T: Element>(v: T, a: T, _: &P<T>) -> T {
        v + a
    }
    /// `sub_`: `v - a`.
    #[inline(always)]
    pub fn sub<T: Element>(v: T, a: T, _: &P<T>) -> T {
        v - a
    }
    /// `mul_`: `v * a`.
    #[inline(always)]
    pub fn mul<T: Element>(v: T, a: T, _: &P<T>) -> T {
        v * a
    }
    /// `div_`: `v / a`.
    #[inline(always)]
    pub fn div<T: Element>(v: T, a: T, _: &P<T>) -> T {
        v / a
    }
    /// `add_scaled_`: `v + alpha * a`.
    #[inline(always)]
    pub fn add_scaled<T: Element>(v: T, a: T, p: &P<T>) -> T {
        v + p.s0 * a
    }
    /// `sub_scaled_`: `v - alpha * a`.
    #[inline(always)]
    pub fn sub_scaled<T: Element>(v: T, a: T, p: &P<T>) -> T {
        v - p.s0 * a
    }
    /// `neg_`.
    #[inline(always)]
    pub fn neg<T: Element>(v: T, _: &P<T>) -> T {
        -v
    }
    /// `abs_`.
    #[inline(always)]
    pub fn abs<T: Element>(v: T, _: &P<T>) -> T {
        v.abs()
    }
    /// `relu_`.
    #[inline(always)]
    pub fn relu<T: Element>(v: T, _: &P<T>) -> T {
        relu_k(v)
    }
    /// `sign_`.
    #[inline(always)]
    pub fn sign<T: Element>(v: T, _: &P<T>) -> T {
        sign_k(v)
    }
    /// `clamp_(lo, hi)`: the bits of the op's kernel (`clamp_k`: NaN stays
    /// NaN, a NaN bound gives that bound, `min > max` gives `max`), written
    /// as two selects on loop-invariant bounds so that a fused loop
    /// vectorizes it (testing the `Option`s per element made the bench's
    /// 10-op chain kernel 1.5x slower): a missing bound is the type's end
    /// (`±inf`, or the integer minimum / maximum), which no comparison picks.
    #[inline(always)]
    #[allow(clippy::eq_op)]
    pub fn clamp<T: Element>(v: T, p: &P<T>) -> T {
        let lo = p.lo.unwrap_or(T::from_f64(f64::NEG_INFINITY));
        let hi = p.hi.unwrap_or(T::from_f64(f64::INFINITY));
        let v = if v < lo || lo != lo { lo } else { v };
        if v > hi || hi != hi { hi } else { v }
    }
    /// `clamp_min_(lo)`.
    #[inline(always)]
    pub fn clamp_min<T: Element>(v: T, p: &P<T>) -> T {
        clamp_min_k(v, p.s0)
    }
    /// `clamp_max_(hi)`.
    #[inline(always)]
    pub fn clamp_max<T: Element>(v: T, p: &P<T>) -> T {
        clamp_max_k(v, p.s0)
    }
    /// `hardtanh_(lo, hi)`.
    #[inline(always)]
    pub fn hardtanh<T: Element>(v: T, p: &P<T>) -> T {
        clamp_max_k(clamp_min_k(v, p.s0), p.s1)
    }
    /// `sqrt_`.
    #[inline(always)]
    pub fn sqrt<T: FloatElement>(v: T, _: &P<T>) -> T {
        v.sqrt()
    }
    /// `exp_`.
    #[inline(always)]
    pub fn exp<T: FloatElement>(v: T, _: &P<T>) -> T {
        v.exp()
    }
    /// `log_`.
    #[inline(always)]
    pub fn log<T: FloatElement>(v: T, _: &P<T>) -> T {
        v.ln()
    }
    /// `sigmoid_`.
    #[inline(always)]
    pub fn sigmoid<T: FloatElement>(v: T, _: &P<T>) -> T {
        sigmoid_k(v)
    }
    /// `tanh_`.
    #[inline(always)]
    pub fn tanh<T: FloatElement>(v: T, _: &P<T>) -> T {
        v.tanh()
    }
    /// `addcmul_(t1, t2, value)`: `v + value * a * b`.
    #[inline(always)]
    pub fn addcmul<T: FloatElement>(v: T, a: T, b: T, p: &P<T>) -> T {
        v + p.s0 * a * b
    }
    /// `addcdiv_(t1, t2, value)`: `v + value * a / b`.
    #[inline(always)]
    pub fn addcdiv<T: FloatElement>(v: T, a: T, b: T, p: &P<T>) -> T {
        v + p.s0 * a / b
    }
}
