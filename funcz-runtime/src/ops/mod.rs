//! Tensor ops: constructors, elementwise arithmetic with broadcasting,
//! in-place twins, reductions, `matmul`, `std::ops` operators, comparison
//! and PyTorch-style printing.
//!
//! Every public op runs through [`crate::trace`] under PyTorch's aten name;
//! in-place ops are recorded under their own name (`add_`, `copy_`, ...)
//! and return a handle of the receiver.
//!
//! ```
//! use funcz_runtime::Tensor;
//! let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
//! let b = Tensor::from_vec(vec![10.0, 20.0], &[2]);
//! let y = x.add(&b).mul(2.0); // [2, 2] + [2] broadcasts over rows
//! assert_eq!(y.to_vec(), vec![22.0, 44.0, 26.0, 48.0]);
//! x.add_(1.0);
//! assert_eq!(x.to_vec(), vec![2.0, 3.0, 4.0, 5.0]);
//! ```

mod cat;
mod clone;
mod compare;
mod create;
mod display;
mod dtype;
mod elementwise;
pub(crate) mod fused;
mod indexed;
mod inplace;
pub(crate) mod kernel;
mod mask;
mod matmul;
mod operand;
pub(crate) mod overlap;
mod reduce;
mod std_ops;

// The ops of issue 12, part 3 (math, softmax, shape ops, sorting).
mod lanes;
mod math;
mod scalar_left;
mod shape_ops;
mod softmax;
mod sortk;
mod stats;

pub use operand::{Operand, OperandRef};

/// The shape checks of the in-place ops a fused run's steps repeat before
/// each op (see `rt::fuse`), where a panic reports the caller's line.
pub(crate) use inplace::check_inplace;
pub(crate) use math::{check_addc, inplace_check};

use crate::element::Element;
use crate::trace::Arg;

/// The recorded form of a scalar argument: `Float` for float element
/// types, `Int` for integer ones.
pub(crate) fn scalar_arg<T: Element>(v: T) -> Arg {
    if T::IS_FLOAT {
        Arg::Float(Element::to_f64(v))
    } else {
        Arg::Int(v.to_i64().unwrap_or(i64::MAX))
    }
}
