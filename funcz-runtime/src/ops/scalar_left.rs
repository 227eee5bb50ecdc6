//! Scalar-on-the-left `-` and `/` for float tensors: `1.0 - &x`,
//! `2.0 / &x` (PyTorch's `__rsub__` and `__rtruediv__`).
//!
//! `s - x` is recorded as `neg(x)` then `add(neg, s)` (IEEE addition of
//! `-x` is exactly `s - x`); `s / x` is recorded as PyTorch records it,
//! `reciprocal(x)` then `mul(reciprocal, s)` (so the values match
//! PyTorch's bit for bit, `1/x · s`).

use std::ops::{Div, Sub};

use crate::tensor::Tensor;

macro_rules! scalar_left {
    ($($t:ty),*) => {$(
        impl Sub<&Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s - x` elementwise, recorded as `add(neg(x), s)`.
            ///
            /// ```
            /// use funcz_runtime::Tensor;
            #[doc = concat!("let x = Tensor::<", stringify!($t), ">::from_vec(vec![0.25, 3.0], &[2]);")]
            /// assert_eq!((1.0 - &x).to_vec(), vec![0.75, -2.0]);
            /// ```
            #[track_caller]
            fn sub(self, rhs: &Tensor<$t>) -> Tensor<$t> {
                rhs.neg().add(self)
            }
        }
        impl Sub<Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s - x` elementwise, recorded as `add(neg(x), s)`.
            ///
            /// ```
            /// use funcz_runtime::Tensor;
            #[doc = concat!("let x = Tensor::<", stringify!($t), ">::from_vec(vec![0.25, 3.0], &[2]);")]
            /// assert_eq!((1.0 - x).to_vec(), vec![0.75, -2.0]);
            /// ```
            #[track_caller]
            fn sub(self, rhs: Tensor<$t>) -> Tensor<$t> {
                self - &rhs
            }
        }
        impl Div<&Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s / x` elementwise, recorded as `mul(reciprocal(x), s)`
            /// like PyTorch.
            ///
            /// ```
            /// use funcz_runtime::Tensor;
            #[doc = concat!("let x = Tensor::<", stringify!($t), ">::from_vec(vec![4.0, -0.5], &[2]);")]
            /// assert_eq!((2.0 / &x).to_vec(), vec![0.5, -4.0]);
            /// ```
            #[track_caller]
            fn div(self, rhs: &Tensor<$t>) -> Tensor<$t> {
                rhs.reciprocal().mul(self)
            }
        }
        impl Div<Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s / x` elementwise, recorded as `mul(reciprocal(x), s)`.
            ///
            /// ```
            /// use funcz_runtime::Tensor;
            #[doc = concat!("let x = Tensor::<", stringify!($t), ">::from_vec(vec![4.0, -0.5], &[2]);")]
            /// assert_eq!((2.0 / x).to_vec(), vec![0.5, -4.0]);
            /// ```
            #[track_caller]
            fn div(self, rhs: Tensor<$t>) -> Tensor<$t> {
                self / &rhs
            }
        }
    )*};
}
scalar_left!(f32, f64);
