//! The second argument of binary ops: a scalar or a tensor.

use crate::element::Element;
use crate::tensor::Tensor;
use crate::trace::{Arg, ToArg};

use super::scalar_arg;

/// Something that can be the right-hand side of an elementwise op: a
/// scalar `T`, a `&Tensor<T>` or an owned `Tensor<T>`. Tensors broadcast
/// against the receiver under PyTorch's rules.
///
/// ```
/// use funcz_runtime::Tensor;
/// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
/// assert_eq!(x.add(1.0).to_vec(), vec![2.0, 3.0]);
/// assert_eq!(x.add(&x).to_vec(), vec![2.0, 4.0]);
/// assert_eq!(x.add(x.mul(10.0)).to_vec(), vec![11.0, 22.0]);
/// ```
pub trait Operand<T: Element> {
    /// A borrowed view of the operand.
    fn operand(&self) -> OperandRef<'_, T>;
}

/// A resolved [`Operand`]: either a scalar or a borrowed tensor.
#[derive(Clone, Copy, Debug)]
pub enum OperandRef<'a, T: Element> {
    /// A scalar, used as a 0-d tensor that broadcasts to any shape.
    Scalar(T),
    /// A tensor.
    Tensor(&'a Tensor<T>),
}

impl<T: Element> Operand<T> for T {
    #[inline]
    fn operand(&self) -> OperandRef<'_, T> {
        OperandRef::Scalar(*self)
    }
}

impl<T: Element> Operand<T> for &Tensor<T> {
    #[inline]
    fn operand(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

impl<T: Element> Operand<T> for Tensor<T> {
    #[inline]
    fn operand(&self) -> OperandRef<'_, T> {
        OperandRef::Tensor(self)
    }
}

impl<T: Element> OperandRef<'_, T> {
    /// The operand's shape (`[]` for a scalar).
    pub fn shape(&self) -> &[usize] {
        match self {
            OperandRef::Scalar(_) => &[],
            OperandRef::Tensor(t) => t.shape(),
        }
    }
}

impl<T: Element> ToArg for OperandRef<'_, T> {
    fn to_arg(&self) -> Arg {
        match self {
            OperandRef::Scalar(v) => scalar_arg(*v),
            OperandRef::Tensor(t) => t.to_arg(),
        }
    }
}
