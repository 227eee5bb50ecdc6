//! Element types a [`Tensor`](crate::Tensor) can hold.

use std::fmt::{Debug, Display};

/// A scalar type that can live in a tensor: `f32`, `f64`, `i32`, `i64`.
///
/// ```
/// use funcz_runtime::Element;
/// assert_eq!(<f32 as Element>::DTYPE, "float32");
/// assert_eq!(<i64 as Element>::from_f64(3.0), 3);
/// ```
pub trait Element:
    Copy
    + Send
    + Sync
    + PartialEq
    + PartialOrd
    + Debug
    + Display
    + Default
    + num_traits::Num
    + num_traits::Signed
    + num_traits::NumCast
    + std::ops::AddAssign
    + std::ops::SubAssign
    + std::ops::MulAssign
    + std::ops::DivAssign
    + std::iter::Sum
    + 'static
{
    /// PyTorch's name for the dtype (`float32`, `int64`, ...).
    const DTYPE: &'static str;
    /// Whether the type is a floating-point type.
    const IS_FLOAT: bool;
    /// Lossy conversion to `f64` (used by printing, tracing and `allclose`).
    fn to_f64(self) -> f64;
    /// Lossy conversion from `f64` (truncates toward zero for integers).
    fn from_f64(v: f64) -> Self;
}

/// A floating-point element type: `f32` or `f64`.
///
/// ```
/// use funcz_runtime::FloatElement;
/// fn half<T: FloatElement>(x: T) -> T { x / (T::one() + T::one()) }
/// assert_eq!(half(3.0f64), 1.5);
/// ```
pub trait FloatElement: Element + num_traits::Float {}

macro_rules! float_element {
    ($t:ty, $name:literal) => {
        impl Element for $t {
            const DTYPE: &'static str = $name;
            const IS_FLOAT: bool = true;
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
        impl FloatElement for $t {}
    };
}

macro_rules! int_element {
    ($t:ty, $name:literal) => {
        impl Element for $t {
            const DTYPE: &'static str = $name;
            const IS_FLOAT: bool = false;
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
        }
    };
}

float_element!(f32, "float32");
float_element!(f64, "float64");
int_element!(i32, "int32");
int_element!(i64, "int64");
