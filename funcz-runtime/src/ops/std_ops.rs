//! `std::ops` operators: `+ - * /` on tensors and scalars, unary `-`, and
//! the op-assign forms `+= -= *= /=` (in place, like PyTorch's `x += y`).
//!
//! Operators taking a tensor by value may reuse its buffer for the result
//! when nothing else can observe it (the handle is the storage's only
//! owner and covers it exactly): `(a * 2.0) + &b` allocates once. The op is
//! still recorded as the functional op (`mul`, `add`) with a fresh result.

use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

use crate::element::Element;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::elementwise::{check_binary, check_int_divisor};
use super::kernel::{binary, binary_into_donated, donatable, result_shape};
use super::operand::OperandRef;

/// `f(a, b)` consuming `a`, reusing its buffer when possible.
#[track_caller]
fn owned_binary<T: Element, F: Fn(T, T) -> T + Copy>(
    op: &'static str,
    a: Tensor<T>,
    b: OperandRef<'_, T>,
    f: F,
) -> Tensor<T> {
    let aid = a.id();
    check_binary(op, &a, &b);
    if op == "div" {
        check_int_divisor(op, a.shape(), &b);
    }
    trace::op(
        op,
        || vec![Arg::Tensor(aid), b.to_arg()],
        move || {
            let shape = result_shape(op, &a, &b);
            if donatable(&a, &shape) {
                return binary_into_donated(a, b, f);
            }
            binary(op, &a, b, f)
        },
    )
}

/// `f(a, b)` consuming both tensors, reusing either buffer when possible.
#[track_caller]
fn owned_pair<T: Element, F: Fn(T, T) -> T + Copy>(
    op: &'static str,
    a: Tensor<T>,
    b: Tensor<T>,
    f: F,
) -> Tensor<T> {
    let (aid, bid) = (a.id(), b.id());
    check_binary(op, &a, &OperandRef::Tensor(&b));
    if op == "div" {
        check_int_divisor(op, a.shape(), &OperandRef::Tensor(&b));
    }
    trace::op(
        op,
        || vec![Arg::Tensor(aid), Arg::Tensor(bid)],
        move || {
            let shape = result_shape(op, &a, &OperandRef::Tensor(&b));
            if donatable(&a, &shape) {
                return binary_into_donated(a, OperandRef::Tensor(&b), f);
            }
            if donatable(&b, &shape) {
                return binary_into_donated(b, OperandRef::Tensor(&a), move |y, x| f(x, y));
            }
            binary(op, &a, OperandRef::Tensor(&b), f)
        },
    )
}

/// `f(a, b)` for a borrowed `a` and an owned `b`.
#[track_caller]
fn ref_owned_binary<T: Element, F: Fn(T, T) -> T + Copy>(
    op: &'static str,
    a: &Tensor<T>,
    b: Tensor<T>,
    f: F,
) -> Tensor<T> {
    let bid = b.id();
    check_binary(op, a, &OperandRef::Tensor(&b));
    if op == "div" {
        check_int_divisor(op, a.shape(), &OperandRef::Tensor(&b));
    }
    trace::op(
        op,
        || vec![a.to_arg(), Arg::Tensor(bid)],
        move || {
            let shape = result_shape(op, a, &OperandRef::Tensor(&b));
            if donatable(&b, &shape) {
                return binary_into_donated(b, OperandRef::Tensor(a), move |y, x| f(x, y));
            }
            binary(op, a, OperandRef::Tensor(&b), f)
        },
    )
}

macro_rules! binop {
    ($Trait:ident, $method:ident, $Assign:ident, $assign:ident, $inplace:ident, $aten:literal, $f:expr) => {
        impl<T: Element> $Trait<&Tensor<T>> for &Tensor<T> {
            type Output = Tensor<T>;
            #[doc = concat!("Same as [`Tensor::", stringify!($method), "`].")]
            #[track_caller]
            fn $method(self, rhs: &Tensor<T>) -> Tensor<T> {
                Tensor::<T>::$method(self, rhs)
            }
        }
        impl<T: Element> $Trait<T> for &Tensor<T> {
            type Output = Tensor<T>;
            #[doc = concat!("Same as [`Tensor::", stringify!($method), "`] with a scalar.")]
            #[track_caller]
            fn $method(self, rhs: T) -> Tensor<T> {
                Tensor::<T>::$method(self, rhs)
            }
        }
        impl<T: Element> $Trait<Tensor<T>> for &Tensor<T> {
            type Output = Tensor<T>;
            #[doc = concat!("Same as [`Tensor::", stringify!($method), "`]; may reuse `rhs`'s buffer.")]
            #[track_caller]
            fn $method(self, rhs: Tensor<T>) -> Tensor<T> {
                ref_owned_binary($aten, self, rhs, $f)
            }
        }
        impl<T: Element> $Trait<&Tensor<T>> for Tensor<T> {
            type Output = Tensor<T>;
            #[doc = concat!("Same as [`Tensor::", stringify!($method), "`]; may reuse `self`'s buffer.")]
            #[track_caller]
            fn $method(self, rhs: &Tensor<T>) -> Tensor<T> {
                owned_binary($aten, self, OperandRef::Tensor(rhs), $f)
            }
        }
        impl<T: Element> $Trait<T> for Tensor<T> {
            type Output = Tensor<T>;
            #[doc = concat!("Same as [`Tensor::", stringify!($method), "`]; may reuse `self`'s buffer.")]
            #[track_caller]
            fn $method(self, rhs: T) -> Tensor<T> {
                owned_binary($aten, self, OperandRef::Scalar(rhs), $f)
            }
        }
        impl<T: Element> $Trait<Tensor<T>> for Tensor<T> {
            type Output = Tensor<T>;
            #[doc = concat!("Same as [`Tensor::", stringify!($method), "`]; may reuse either buffer.")]
            #[track_caller]
            fn $method(self, rhs: Tensor<T>) -> Tensor<T> {
                owned_pair($aten, self, rhs, $f)
            }
        }
        impl<T: Element> $Assign<&Tensor<T>> for Tensor<T> {
            #[doc = concat!("In place, same as [`Tensor::", stringify!($inplace), "`].")]
            #[track_caller]
            fn $assign(&mut self, rhs: &Tensor<T>) {
                self.$inplace(rhs);
            }
        }
        impl<T: Element> $Assign<Tensor<T>> for Tensor<T> {
            #[doc = concat!("In place, same as [`Tensor::", stringify!($inplace), "`].")]
            #[track_caller]
            fn $assign(&mut self, rhs: Tensor<T>) {
                self.$inplace(&rhs);
            }
        }
        impl<T: Element> $Assign<T> for Tensor<T> {
            #[doc = concat!("In place, same as [`Tensor::", stringify!($inplace), "`] with a scalar.")]
            #[track_caller]
            fn $assign(&mut self, rhs: T) {
                self.$inplace(rhs);
            }
        }
    };
}

binop!(
    Add,
    add,
    AddAssign,
    add_assign,
    add_,
    "add",
    |x: T, y: T| x + y
);
binop!(
    Sub,
    sub,
    SubAssign,
    sub_assign,
    sub_,
    "sub",
    |x: T, y: T| x - y
);
binop!(
    Mul,
    mul,
    MulAssign,
    mul_assign,
    mul_,
    "mul",
    |x: T, y: T| x * y
);
binop!(
    Div,
    div,
    DivAssign,
    div_assign,
    div_,
    "div",
    |x: T, y: T| x / y
);

impl<T: Element> Neg for &Tensor<T> {
    type Output = Tensor<T>;
    /// Same as [`Tensor::neg`].
    #[track_caller]
    fn neg(self) -> Tensor<T> {
        Tensor::<T>::neg(self)
    }
}

impl<T: Element> Neg for Tensor<T> {
    type Output = Tensor<T>;
    /// Same as [`Tensor::neg`]; may reuse `self`'s buffer.
    #[track_caller]
    fn neg(self) -> Tensor<T> {
        let id = self.id();
        trace::op(
            "neg",
            || vec![Arg::Tensor(id)],
            move || {
                let shape = self.layout.shape;
                if donatable(&self, &shape) {
                    binary_into_donated(self, OperandRef::Scalar(T::zero()), |x, _| -x)
                } else {
                    super::kernel::unary(&self, |x| -x)
                }
            },
        )
    }
}

macro_rules! scalar_lhs {
    ($($t:ty),*) => {$(
        impl Add<&Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s + x`, recorded as `add(x, s)` (addition commutes).
            #[track_caller]
            fn add(self, rhs: &Tensor<$t>) -> Tensor<$t> {
                rhs.add(self)
            }
        }
        impl Add<Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s + x`, recorded as `add(x, s)`; may reuse `x`'s buffer.
            #[track_caller]
            fn add(self, rhs: Tensor<$t>) -> Tensor<$t> {
                rhs + self
            }
        }
        impl Mul<&Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s * x`, recorded as `mul(x, s)` (multiplication commutes).
            #[track_caller]
            fn mul(self, rhs: &Tensor<$t>) -> Tensor<$t> {
                rhs.mul(self)
            }
        }
        impl Mul<Tensor<$t>> for $t {
            type Output = Tensor<$t>;
            /// `s * x`, recorded as `mul(x, s)`; may reuse `x`'s buffer.
            #[track_caller]
            fn mul(self, rhs: Tensor<$t>) -> Tensor<$t> {
                rhs * self
            }
        }
    )*};
}
scalar_lhs!(f32, f64, i32, i64);

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::tensor::Tensor;

    fn buf<T: crate::Element>(t: &Tensor<T>) -> *const () {
        Arc::as_ptr(&t.storage) as *const ()
    }

    #[test]
    fn owned_operands_donate_their_buffer() {
        let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let (p, id) = (buf(&a), a.id());
        let b = a * 3.0 + 1.0;
        assert_eq!(buf(&b), p);
        assert_ne!(b.id(), id);
        assert_eq!(b.to_vec(), vec![4.0, 7.0]);
        assert_eq!(b.version(), 0);

        // The right operand is donated when the left one cannot be.
        let x = Tensor::<f32>::from_vec(vec![10.0, 20.0], &[2]);
        let y = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let py = buf(&y);
        let z = &x - y;
        assert_eq!(buf(&z), py);
        assert_eq!(z.to_vec(), vec![9.0, 18.0]);

        // Broadcast result larger than the owned operand: fresh buffer.
        let row = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let pr = buf(&row);
        let m = row + &Tensor::zeros(&[2, 2]);
        assert_ne!(buf(&m), pr);
        assert_eq!(m.to_vec(), vec![1.0, 2.0, 1.0, 2.0]);
    }

    #[test]
    fn shared_buffers_are_never_donated() {
        let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let alias = a.handle();
        let b = a + 1.0;
        assert!(!b.same_storage(&alias));
        assert_eq!(alias.to_vec(), vec![1.0, 2.0]);
        assert_eq!(b.to_vec(), vec![2.0, 3.0]);
        let n = -alias.handle();
        assert_eq!(n.to_vec(), vec![-1.0, -2.0]);
        assert_eq!(alias.to_vec(), vec![1.0, 2.0]);
    }
}
