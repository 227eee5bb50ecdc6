//! Element types a [`Tensor`](crate::Tensor) can hold.
//!
//! Two levels: [`Scalar`] is what a tensor can *store* (`f32`, `f64`,
//! `i32`, `i64` and `bool`): enough for views, copies, scatters, printing,
//! comparisons, masks and casts. [`Element`] is a numeric scalar (every
//! `Scalar` but `bool`): what arithmetic needs. Every `Element` is a
//! `Scalar` (a blanket impl), so a `Tensor<bool>` mask supports the
//! storage-level ops and the mask ops, and not `add`.
//!
//! ```
//! use funcz_runtime::{Scalar, Tensor};
//! let x = Tensor::<f32>::from_vec(vec![1.0, -2.0, 3.0], &[3]);
//! let mask: Tensor<bool> = x.gt(0.0);
//! assert_eq!(mask.to_vec(), vec![true, false, true]);
//! assert_eq!(<bool as Scalar>::DTYPE, "bool");
//! ```

use std::fmt::{Debug, Display};

/// A value of any dtype, as a cast reads it (see [`Scalar::to_raw`]).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Raw {
    /// A floating-point value.
    F(f64),
    /// An integer value.
    I(i64),
    /// A boolean.
    B(bool),
}

/// A type a [`Tensor`](crate::Tensor) can store: every [`Element`]
/// (`f32`, `f64`, `i32`, `i64`) and `bool`. Views, copies, scatters,
/// `clone`, printing, `equal`, casts and the indexed ops work on any
/// `Scalar`; arithmetic needs an [`Element`].
///
/// ```
/// use funcz_runtime::{Scalar, Tensor};
/// let m = Tensor::<bool>::from_vec(vec![true, false, false, true], &[2, 2]);
/// assert_eq!(m.t().to_vec(), vec![true, false, false, true]);
/// assert_eq!(m.select(0, 1).to_vec(), vec![false, true]);
/// assert_eq!(<bool as Scalar>::DTYPE, "bool");
/// assert_eq!(<i64 as Scalar>::cast_from(2.9f32), 2);
/// assert!(<bool as Scalar>::cast_from(-0.5f64));
/// ```
pub trait Scalar: Copy + Send + Sync + PartialEq + Debug + Display + Default + 'static {
    /// PyTorch's name for the dtype (`float32`, `int64`, `bool`, ...).
    const DTYPE: &'static str;
    /// Whether the type is a floating-point type.
    const IS_FLOAT: bool;
    /// Whether the type is `bool`.
    const IS_BOOL: bool;
    /// The value as a cast reads it.
    #[doc(hidden)]
    fn to_raw(self) -> Raw;
    /// The value a cast from `r` makes, as PyTorch casts: float to integer
    /// truncates toward zero (saturating where C++ would be undefined),
    /// integer to narrower integer wraps, anything to `bool` is `!= 0`
    /// (NaN is `true`), `bool` is 0 or 1.
    #[doc(hidden)]
    fn from_raw(r: Raw) -> Self;
    /// `v` converted to this type, as `torch.Tensor.to(dtype)` converts.
    fn cast_from<U: Scalar>(v: U) -> Self {
        Self::from_raw(v.to_raw())
    }
    /// The value widened to `f64` (`bool` is 0 or 1; integers beyond 2^53
    /// round).
    fn as_f64(self) -> f64 {
        match self.to_raw() {
            Raw::F(x) => x,
            Raw::I(i) => i as f64,
            Raw::B(b) => b as u8 as f64,
        }
    }
}

impl Scalar for bool {
    const DTYPE: &'static str = "bool";
    const IS_FLOAT: bool = false;
    const IS_BOOL: bool = true;
    #[inline]
    fn to_raw(self) -> Raw {
        Raw::B(self)
    }
    #[inline]
    fn from_raw(r: Raw) -> Self {
        match r {
            Raw::F(x) => x != 0.0,
            Raw::I(i) => i != 0,
            Raw::B(b) => b,
        }
    }
}

/// The numeric scalars: how each reads and makes a [`Raw`].
#[doc(hidden)]
pub trait NumRaw: Sized {
    fn num_to_raw(self) -> Raw;
    fn num_from_raw(r: Raw) -> Self;
}

impl<T: Element + NumRaw> Scalar for T {
    const DTYPE: &'static str = <T as Element>::DTYPE;
    const IS_FLOAT: bool = <T as Element>::IS_FLOAT;
    const IS_BOOL: bool = false;
    #[inline]
    fn to_raw(self) -> Raw {
        self.num_to_raw()
    }
    #[inline]
    fn from_raw(r: Raw) -> Self {
        T::num_from_raw(r)
    }
}

/// A numeric scalar type: `f32`, `f64`, `i32`, `i64` (every [`Scalar`]
/// but `bool`); arithmetic, reductions and `matmul` need one.
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
    + NumRaw
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
    /// The fused ops' functions of this type (see `rt::Fusion`), compiled
    /// in funcz-runtime.
    #[doc(hidden)]
    fn fuse_table() -> &'static crate::rt::FuseTable<Self>;
    /// `rt::fused_root` for this type, compiled in funcz-runtime.
    #[doc(hidden)]
    fn fused_root_impl(
        root: &mut crate::Tensor<Self>,
        state: &mut crate::rt::Tracked,
        f: crate::rt::Fusion<'_, Self>,
    );
    /// `rt::fused_value` for this type, compiled in funcz-runtime.
    #[doc(hidden)]
    fn fused_value_impl(t: &mut crate::Tensor<Self>, f: crate::rt::Fusion<'_, Self>);
}

/// The fusion entry points of [`Element`] for `$t`: not generic, so each
/// is compiled here, once (see `rt::FuseTable`).
macro_rules! fuse_impls {
    ($t:ty) => {
        fn fuse_table() -> &'static crate::rt::FuseTable<$t> {
            static TABLE: crate::rt::FuseTable<$t> = crate::rt::FuseTable::NEW;
            &TABLE
        }
        #[track_caller]
        fn fused_root_impl(
            root: &mut crate::Tensor<$t>,
            state: &mut crate::rt::Tracked,
            f: crate::rt::Fusion<'_, $t>,
        ) {
            crate::rt::fused_root_any(root, state, f)
        }
        #[track_caller]
        fn fused_value_impl(t: &mut crate::Tensor<$t>, f: crate::rt::Fusion<'_, $t>) {
            crate::rt::fused_value_any(t, f)
        }
    };
}

/// A floating-point element type: `f32` or `f64`.
///
/// ```
/// use funcz_runtime::FloatElement;
/// fn half<T: FloatElement>(x: T) -> T { x / (T::one() + T::one()) }
/// assert_eq!(half(3.0f64), 1.5);
/// ```
pub trait FloatElement: Element + num_traits::Float {
    /// The fused floating-point ops' functions of this type (see
    /// `rt::Fusion`), compiled in funcz-runtime.
    #[doc(hidden)]
    fn float_fuse_table() -> &'static crate::rt::FloatFuseTable<Self>;
}

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
            fuse_impls!($t);
        }
        impl FloatElement for $t {
            fn float_fuse_table() -> &'static crate::rt::FloatFuseTable<$t> {
                static TABLE: crate::rt::FloatFuseTable<$t> = crate::rt::FloatFuseTable::NEW;
                &TABLE
            }
        }
        impl NumRaw for $t {
            #[inline]
            fn num_to_raw(self) -> Raw {
                Raw::F(self as f64)
            }
            #[inline]
            fn num_from_raw(r: Raw) -> Self {
                match r {
                    Raw::F(x) => x as $t,
                    Raw::I(i) => i as $t,
                    Raw::B(b) => b as u8 as $t,
                }
            }
        }
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
            fuse_impls!($t);
        }
        impl NumRaw for $t {
            #[inline]
            fn num_to_raw(self) -> Raw {
                Raw::I(self as i64)
            }
            #[inline]
            fn num_from_raw(r: Raw) -> Self {
                match r {
                    // Through i64 (saturating), then wrapping to the width,
                    // as PyTorch's float -> int8/int16/int32 conversions do
                    // on x86 for in-range values.
                    Raw::F(x) => (x as i64) as $t,
                    Raw::I(i) => i as $t,
                    Raw::B(b) => b as $t,
                }
            }
        }
    };
}

float_element!(f32, "float32");
float_element!(f64, "float64");
int_element!(i32, "int32");
int_element!(i64, "int64");
