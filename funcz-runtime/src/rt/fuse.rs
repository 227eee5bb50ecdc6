//! Fusion: a run of in-place elementwise ops on one functionalized value,
//! executed as one pass over its buffer.
//!
//! In functionalized code each in-place op on a tracked root `y` becomes
//! "update in place if [`can_donate_root`] allows, else compute the
//! functional op and [`commit_root`]" — one pass over memory per op. A
//! [`Fusion`] records a whole run of such ops (`y.mul_(1.01)`,
//! `y.add_(&w)`, `y.relu_()`, ...) with their operands, and
//! [`fused_root`] runs it: when nobody can observe the buffer, no trace is
//! recording and every operand is a scalar or a contiguous tensor that
//! broadcasts to `y` along a simple pattern (same shape, one element, a
//! row, a column, or any contiguous run of `y`'s dimensions), it walks
//! `y`'s buffer in blocks that fit the L1 cache and applies every step to
//! a block before moving on, so each element is read and written once.
//! Otherwise (and whenever a trace records) it runs the steps one by one
//! exactly as the unfused code would. Either way the values (bit for bit),
//! the panics, the trace, the storage versions and the [`Tracked`] state
//! are those of the unfused code.
//!
//! ```
//! use funcz_runtime::{Tensor, rt};
//! use funcz_runtime::rt::{Fusion, Tracked};
//! let w = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
//! let mut y = Tensor::<f32>::from_vec(vec![-1.0, 0.0, 1.0, 2.0, 3.0, 4.0], &[2, 3]);
//! let mut s = Tracked::root(&y);
//! // y.mul_(2.0); y.add_(&w); y.relu_(); as one pass:
//! rt::fused_root(&mut y, &mut s, Fusion::new().mul_(2.0).add_(&w).relu_());
//! assert_eq!(y.to_vec(), vec![0.0, 2.0, 5.0, 5.0, 8.0, 11.0]);
//! assert_eq!(y.version(), 3); // one version bump per op, as unfused
//! ```

use std::cell::Cell;
use std::sync::RwLockReadGuard;

use crate::element::{Element, FloatElement};
use crate::ops::fused::{self, BlockFn, Params, View};
use crate::ops::kernel::check_writable;
use crate::ops::{OperandRef, check_addc, check_inplace, inplace_check};
use crate::tensor::Tensor;

use super::donate::{can_donate, can_donate_root, donated};
use super::fuse_kernel::{Kernel, kernels_run};
use super::tracked::{Tracked, commit_root, donated_root};

/// An operand of a multi-root fused pass (`rt::fused_elems`): a scalar, a
/// borrowed tensor or an owned one (a leaf such as `w.mul(2.0)`, evaluated
/// before the pass).
pub enum FuseArg<'a, T: Element> {
    /// A scalar, broadcast to every element.
    Scalar(T),
    /// A borrowed tensor.
    Ref(&'a Tensor<T>),
    /// An owned tensor.
    Owned(Box<Tensor<T>>),
}

/// What a multi-root fused pass accepts as a leaf where the in-place op
/// takes an [`Operand`](crate::Operand): a scalar `T`, a `&Tensor<T>` or an
/// owned `Tensor<T>` (the same three types, so the same arguments
/// type-check).
///
/// ```
/// use funcz_runtime::Tensor;
/// use funcz_runtime::rt::{FuseArg, IntoFuseArg};
/// let t = Tensor::<f32>::zeros(&[2]);
/// assert!(matches!(2.0f32.into_fuse_arg(), FuseArg::Scalar(2.0)));
/// assert!(matches!((&t).into_fuse_arg(), FuseArg::Ref(_)));
/// assert!(matches!(t.into_fuse_arg(), FuseArg::Owned(_)));
/// ```
pub trait IntoFuseArg<'a, T: Element> {
    /// The operand.
    fn into_fuse_arg(self) -> FuseArg<'a, T>;
}

impl<'a, T: Element> IntoFuseArg<'a, T> for T {
    #[inline]
    fn into_fuse_arg(self) -> FuseArg<'a, T> {
        FuseArg::Scalar(self)
    }
}

impl<'a, T: Element> IntoFuseArg<'a, T> for &'a Tensor<T> {
    #[inline]
    fn into_fuse_arg(self) -> FuseArg<'a, T> {
        FuseArg::Ref(self)
    }
}

/// A reference to a `&Tensor` (a multi-root run reads a tensor name `x`
/// as `&x`, whether `x` holds a `Tensor` or a `&Tensor`).
impl<'a, 'b: 'a, T: Element> IntoFuseArg<'a, T> for &'a &'b Tensor<T> {
    #[inline]
    fn into_fuse_arg(self) -> FuseArg<'a, T> {
        FuseArg::Ref(*self)
    }
}

impl<'a, T: Element> IntoFuseArg<'a, T> for Tensor<T> {
    #[inline]
    fn into_fuse_arg(self) -> FuseArg<'a, T> {
        FuseArg::Owned(Box::new(self))
    }
}

/// An operand of a fused run's [`Step`] (or of a [`Fusion`]), as the step
/// holds it: a scalar or a borrowed tensor.
#[derive(Clone, Copy, Debug)]
pub enum StepOperand<'a, T: Element> {
    /// A scalar, broadcast to every element.
    Scalar(T),
    /// A borrowed tensor.
    Tensor(&'a Tensor<T>),
}

/// What a [`Step`] accepts where the in-place op takes an
/// [`Operand`](crate::Operand): a scalar `T` or a reference to one, a
/// `&Tensor<T>` or a `&&Tensor<T>`.
///
/// A step owns nothing, so an array of steps needs no drop glue (in an
/// unoptimized build, each run of a long function would otherwise carry a
/// drop call and a landing pad per step). Generated code passes an owned
/// operand by reference to a temporary, which lives until the end of the
/// run's statement: `y.add_(g * 0.1)` in a run becomes
/// `rt::Step::add_(&(g * 0.1))`, and a name `w` (a scalar, a `&Tensor` or
/// a `Tensor`) becomes `&(w)`.
///
/// ```
/// use funcz_runtime::Tensor;
/// use funcz_runtime::rt::{StepArg, StepOperand};
/// let t = Tensor::<f32>::zeros(&[2]);
/// assert!(matches!(2.0f32.step_operand(), StepOperand::Scalar(2.0)));
/// assert!(matches!((&2.0f32).step_operand(), StepOperand::Scalar(2.0)));
/// assert!(matches!((&t).step_operand(), StepOperand::Tensor(_)));
/// assert!(matches!((&&t).step_operand(), StepOperand::Tensor(_)));
/// ```
pub trait StepArg<'a, T: Element> {
    /// The operand.
    fn step_operand(self) -> StepOperand<'a, T>;
}

impl<'a, T: Element> StepArg<'a, T> for T {
    #[inline]
    fn step_operand(self) -> StepOperand<'a, T> {
        StepOperand::Scalar(self)
    }
}

impl<'a, T: Element> StepArg<'a, T> for &T {
    #[inline]
    fn step_operand(self) -> StepOperand<'a, T> {
        StepOperand::Scalar(*self)
    }
}

impl<'a, T: Element> StepArg<'a, T> for &'a Tensor<T> {
    #[inline]
    fn step_operand(self) -> StepOperand<'a, T> {
        StepOperand::Tensor(self)
    }
}

impl<'a, 'b: 'a, T: Element> StepArg<'a, T> for &'a &'b Tensor<T> {
    #[inline]
    fn step_operand(self) -> StepOperand<'a, T> {
        StepOperand::Tensor(*self)
    }
}

/// Runs `$body` with `$o` bound to the operand `$arg` (a `&Val`) as the
/// type the tensor method takes: `T` or `&Tensor<T>`.
macro_rules! with_op {
    ($arg:expr, |$o:ident| $body:expr) => {
        match $arg {
            Val::Scalar(v) => {
                let $o = v;
                $body
            }
            Val::Tensor(t) => {
                let $o: &Tensor<_> = t;
                $body
            }
            Val::None => unreachable!("funcz: internal: a fused step without its operand"),
        }
    };
}

/// An operand of a step as the step's op receives it.
#[derive(Clone, Copy)]
enum Val<'x, T: Element> {
    None,
    Scalar(T),
    Tensor(&'x Tensor<T>),
}

/// The arguments of a step's op for one call (operands are resolved only
/// as the op asks).
struct Args<'x, T: Element> {
    step: &'x Step<'x, T>,
}

impl<'x, T: Element> Args<'x, T> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline)]
    fn a(&self) -> Val<'x, T> {
        val(&self.step.a)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline)]
    fn b(&self) -> Val<'x, T> {
        val(&self.step.b)
    }

    /// The step's scalar parameters.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline)]
    fn p(&self) -> &'x Params<T> {
        &self.step.p
    }

    /// The first operand as a tensor (`end`, `tensor1`).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline)]
    fn at(&self) -> &'x Tensor<T> {
        match self.a() {
            Val::Tensor(t) => t,
            _ => unreachable!("funcz: internal: a fused step's tensor operand"),
        }
    }

    /// The second operand as a tensor (`tensor2`).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline)]
    fn bt(&self) -> &'x Tensor<T> {
        match self.b() {
            Val::Tensor(t) => t,
            _ => unreachable!("funcz: internal: a fused step's tensor operand"),
        }
    }
}

/// The in-place op of a step, run on a value.
type InplaceFn<T> = fn(&Tensor<T>, &Args<'_, T>);
/// The functional twin of a step, computing a fresh value.
type FunctionalFn<T> = fn(&Tensor<T>, &Args<'_, T>) -> Tensor<T>;

/// A step's operand slot as an argument of its op (a step owns nothing,
/// see [`StepArg`]).
#[inline]
fn val<'x, T: Element>(slot: &Option<StepOperand<'x, T>>) -> Val<'x, T> {
    match *slot {
        None => Val::None,
        Some(StepOperand::Scalar(v)) => Val::Scalar(v),
        Some(StepOperand::Tensor(t)) => Val::Tensor(t),
    }
}

/// The fixed parts of a step: its op's names and functions, one `'static`
/// table per op and element type, so that a step stays small.
struct OpFns<T: Element> {
    /// The in-place method's name (`add_scaled_`), as generated code
    /// passes it to [`donated_root`] and [`commit_root`].
    op: &'static str,
    inplace: InplaceFn<T>,
    functional: FunctionalFn<T>,
    /// The block kernel; `None` if the step never fuses.
    block: Option<BlockFn<T>>,
    /// The op's own shape checks, which [`Step::check`] repeats before it.
    check: Check,
}

/// The shape checks an in-place op runs first, as data: the ops
/// themselves are reached through function pointers, where a panic
/// reports the runtime's line, so a step runs its op's checks itself,
/// from `#[track_caller]` code, when a tensor operand's shape differs
/// from the target's (the only case they can fail for a writable target).
#[derive(Clone, Copy)]
enum Check {
    /// No tensor operand.
    None,
    /// `check_inplace(op, target, [(a, first), (b, second)])` with the
    /// operands' argument names.
    Operands(&'static str, Option<&'static str>),
    /// `inplace_check(name, target, first)` (`add_`/`sub_` with `alpha`).
    Scaled(&'static str),
    /// `check_addc(name, target, first, second)` (`addcmul_`/`addcdiv_`
    /// with the default `value`, which name themselves so).
    Addc(&'static str),
}

/// The [`OpFns`] of every op.
struct Ops<T>(std::marker::PhantomData<T>);

impl<T: Element> Ops<T> {
    const ADD: OpFns<T> = OpFns {
        op: "add_",
        inplace: |t, s| with_op!(s.a(), |o| t.add_in_place(o)),
        functional: |t, s| with_op!(s.a(), |o| t.add(o)),
        block: Some(fused::add::<T>),
        check: Check::Operands("other", None),
    };

    const SUB: OpFns<T> = OpFns {
        op: "sub_",
        inplace: |t, s| with_op!(s.a(), |o| t.sub_in_place(o)),
        functional: |t, s| with_op!(s.a(), |o| t.sub(o)),
        block: Some(fused::sub::<T>),
        check: Check::Operands("other", None),
    };

    const MUL: OpFns<T> = OpFns {
        op: "mul_",
        inplace: |t, s| with_op!(s.a(), |o| t.mul_in_place(o)),
        functional: |t, s| with_op!(s.a(), |o| t.mul(o)),
        block: Some(fused::mul::<T>),
        check: Check::Operands("other", None),
    };

    const DIV: OpFns<T> = OpFns {
        op: "div_",
        inplace: |t, s| with_op!(s.a(), |o| t.div_in_place(o)),
        functional: |t, s| with_op!(s.a(), |o| t.div(o)),
        block: Some(fused::div::<T>),
        check: Check::Operands("other", None),
    };

    const ADD_SCALED: OpFns<T> = OpFns {
        op: "add_scaled_",
        inplace: |t, s| with_op!(s.a(), |o| t.add_scaled_in_place(o, s.p().s0)),
        functional: |t, s| with_op!(s.a(), |o| t.add_scaled(o, s.p().s0)),
        block: Some(fused::add_scaled::<T>),
        check: Check::Scaled("add_"),
    };

    const SUB_SCALED: OpFns<T> = OpFns {
        op: "sub_scaled_",
        inplace: |t, s| with_op!(s.a(), |o| t.sub_scaled_in_place(o, s.p().s0)),
        functional: |t, s| with_op!(s.a(), |o| t.sub_scaled(o, s.p().s0)),
        block: Some(fused::sub_scaled::<T>),
        check: Check::Scaled("sub_"),
    };

    const NEG: OpFns<T> = OpFns {
        op: "neg_",
        inplace: |t, _| t.neg_in_place(),
        functional: |t, _| t.neg(),
        block: Some(fused::neg::<T>),
        check: Check::None,
    };

    const ABS: OpFns<T> = OpFns {
        op: "abs_",
        inplace: |t, _| t.abs_in_place(),
        functional: |t, _| t.abs(),
        block: Some(fused::abs::<T>),
        check: Check::None,
    };

    const RELU: OpFns<T> = OpFns {
        op: "relu_",
        inplace: |t, _| t.relu_in_place(),
        functional: |t, _| t.relu(),
        block: Some(fused::relu::<T>),
        check: Check::None,
    };

    const SIGN: OpFns<T> = OpFns {
        op: "sign_",
        inplace: |t, _| t.sign_in_place(),
        functional: |t, _| t.sign(),
        block: Some(fused::sign::<T>),
        check: Check::None,
    };

    const ZERO: OpFns<T> = OpFns {
        op: "zero_",
        inplace: |t, _| t.zero_in_place(),
        functional: |t, _| t.zero(),
        block: Some(fused::zero::<T>),
        check: Check::None,
    };

    const FILL: OpFns<T> = OpFns {
        op: "fill_",
        inplace: |t, s| t.fill_in_place(s.p().s0),
        functional: |t, s| t.fill(s.p().s0),
        block: Some(fused::fill::<T>),
        check: Check::None,
    };

    const CLAMP: OpFns<T> = OpFns {
        op: "clamp_",
        inplace: |t, s| t.clamp_in_place(s.p().lo, s.p().hi),
        functional: |t, s| t.clamp(s.p().lo, s.p().hi),
        block: Some(fused::clamp::<T>),
        check: Check::None,
    };

    /// `clamp_` without a bound: the op panics, so it never fuses.
    const CLAMP_UNBOUNDED: OpFns<T> = OpFns {
        block: None,
        ..Self::CLAMP
    };

    const CLAMP_MIN: OpFns<T> = OpFns {
        op: "clamp_min_",
        inplace: |t, s| t.clamp_min_in_place(s.p().s0),
        functional: |t, s| t.clamp_min(s.p().s0),
        block: Some(fused::clamp_min::<T>),
        check: Check::None,
    };

    const CLAMP_MAX: OpFns<T> = OpFns {
        op: "clamp_max_",
        inplace: |t, s| t.clamp_max_in_place(s.p().s0),
        functional: |t, s| t.clamp_max(s.p().s0),
        block: Some(fused::clamp_max::<T>),
        check: Check::None,
    };
}

impl<T: FloatElement> Ops<T> {
    const HARDTANH: OpFns<T> = OpFns {
        op: "hardtanh_",
        inplace: |t, s| t.hardtanh_in_place(s.p().s0, s.p().s1),
        functional: |t, s| t.hardtanh(s.p().s0, s.p().s1),
        block: Some(fused::hardtanh::<T>),
        check: Check::None,
    };

    const SQRT: OpFns<T> = OpFns {
        op: "sqrt_",
        inplace: |t, _| t.sqrt_in_place(),
        functional: |t, _| t.sqrt(),
        block: Some(fused::sqrt::<T>),
        check: Check::None,
    };

    const RSQRT: OpFns<T> = OpFns {
        op: "rsqrt_",
        inplace: |t, _| t.rsqrt_in_place(),
        functional: |t, _| t.rsqrt(),
        block: Some(fused::rsqrt::<T>),
        check: Check::None,
    };

    const RECIPROCAL: OpFns<T> = OpFns {
        op: "reciprocal_",
        inplace: |t, _| t.reciprocal_in_place(),
        functional: |t, _| t.reciprocal(),
        block: Some(fused::reciprocal::<T>),
        check: Check::None,
    };

    const EXP: OpFns<T> = OpFns {
        op: "exp_",
        inplace: |t, _| t.exp_in_place(),
        functional: |t, _| t.exp(),
        block: Some(fused::exp::<T>),
        check: Check::None,
    };

    const LOG: OpFns<T> = OpFns {
        op: "log_",
        inplace: |t, _| t.log_in_place(),
        functional: |t, _| t.log(),
        block: Some(fused::log::<T>),
        check: Check::None,
    };

    const SIGMOID: OpFns<T> = OpFns {
        op: "sigmoid_",
        inplace: |t, _| t.sigmoid_in_place(),
        functional: |t, _| t.sigmoid(),
        block: Some(fused::sigmoid::<T>),
        check: Check::None,
    };

    const TANH: OpFns<T> = OpFns {
        op: "tanh_",
        inplace: |t, _| t.tanh_in_place(),
        functional: |t, _| t.tanh(),
        block: Some(fused::tanh::<T>),
        check: Check::None,
    };

    const SIN: OpFns<T> = OpFns {
        op: "sin_",
        inplace: |t, _| t.sin_in_place(),
        functional: |t, _| t.sin(),
        block: Some(fused::sin::<T>),
        check: Check::None,
    };

    const COS: OpFns<T> = OpFns {
        op: "cos_",
        inplace: |t, _| t.cos_in_place(),
        functional: |t, _| t.cos(),
        block: Some(fused::cos::<T>),
        check: Check::None,
    };

    const ERF: OpFns<T> = OpFns {
        op: "erf_",
        inplace: |t, _| t.erf_in_place(),
        functional: |t, _| t.erf(),
        block: Some(fused::erf::<T>),
        check: Check::None,
    };

    const FLOOR: OpFns<T> = OpFns {
        op: "floor_",
        inplace: |t, _| t.floor_in_place(),
        functional: |t, _| t.floor(),
        block: Some(fused::floor::<T>),
        check: Check::None,
    };

    const ROUND: OpFns<T> = OpFns {
        op: "round_",
        inplace: |t, _| t.round_in_place(),
        functional: |t, _| t.round(),
        block: Some(fused::round::<T>),
        check: Check::None,
    };

    const POW: OpFns<T> = OpFns {
        op: "pow_",
        inplace: |t, s| with_op!(s.a(), |o| t.pow_in_place(o)),
        functional: |t, s| with_op!(s.a(), |o| t.pow(o)),
        block: Some(fused::pow::<T>),
        check: Check::Operands("exponent", None),
    };

    /// `pow_` by a scalar exponent (the block kernel reads it from `p`).
    const POW_SCALAR: OpFns<T> = OpFns {
        block: Some(fused::pow_scalar::<T>),
        ..Self::POW
    };

    const ADDCMUL: OpFns<T> = OpFns {
        op: "addcmul_",
        inplace: |t, s| t.addcmul_in_place(s.at(), s.bt(), s.p().s0),
        functional: |t, s| t.addcmul(s.at(), s.bt(), s.p().s0),
        block: Some(fused::addcmul::<T>),
        check: Check::Operands("tensor1", Some("tensor2")),
    };

    const ADDCDIV: OpFns<T> = OpFns {
        op: "addcdiv_",
        inplace: |t, s| t.addcdiv_in_place(s.at(), s.bt(), s.p().s0),
        functional: |t, s| t.addcdiv(s.at(), s.bt(), s.p().s0),
        block: Some(fused::addcdiv::<T>),
        check: Check::Operands("tensor1", Some("tensor2")),
    };

    const ADDCMUL1: OpFns<T> = OpFns {
        op: "addcmul1_",
        inplace: |t, s| t.addcmul1_in_place(s.at(), s.bt()),
        functional: |t, s| t.addcmul1(s.at(), s.bt()),
        block: Some(fused::addcmul1::<T>),
        check: Check::Addc("addcmul_"),
    };

    const ADDCDIV1: OpFns<T> = OpFns {
        op: "addcdiv1_",
        inplace: |t, s| t.addcdiv1_in_place(s.at(), s.bt()),
        functional: |t, s| t.addcdiv1(s.at(), s.bt()),
        block: Some(fused::addcdiv1::<T>),
        check: Check::Addc("addcdiv_"),
    };

    const LERP: OpFns<T> = OpFns {
        op: "lerp_",
        inplace: |t, s| with_op!(s.b(), |w| t.lerp_in_place(s.at(), w)),
        functional: |t, s| with_op!(s.b(), |w| t.lerp(s.at(), w)),
        block: Some(fused::lerp::<T>),
        check: Check::Operands("end", Some("weight")),
    };

    /// `lerp_` by a scalar weight (the block kernel reads it from `p`).
    const LERP_SCALAR: OpFns<T> = OpFns {
        block: Some(fused::lerp_scalar::<T>),
        ..Self::LERP
    };
}

/// A table of every listed op's functions for one element type, and its
/// `NEW` value, from one list of the ops' names.
macro_rules! fuse_table {
    ($(#[$doc:meta])* $name:ident<T: $bound:ident> { $($op:ident),* $(,)? }) => {
        $(#[$doc])*
        #[doc(hidden)]
        #[allow(non_snake_case)]
        pub struct $name<T: $bound> {
            $($op: OpFns<T>,)*
        }

        impl<T: $bound> $name<T> {
            /// The table of `T`.
            pub const NEW: Self = $name {
                $($op: Ops::<T>::$op,)*
            };
        }
    };
}

fuse_table! {
    /// Every op's functions for one element type, as one value: each
    /// [`Element`] type's table is a `static` of funcz-runtime
    /// ([`Element::fuse_table`]), so the ops' generic functions are compiled
    /// there, once, and not again in every crate that builds a [`Fusion`]
    /// (a 1,000-op chain's crate compiled every op's functional, in-place and
    /// block functions for its element type; now it only calls them).
    FuseTable<T: Element> {
        ADD, SUB, MUL, DIV, ADD_SCALED, SUB_SCALED, NEG, ABS, RELU, SIGN, ZERO, FILL, CLAMP,
        CLAMP_UNBOUNDED, CLAMP_MIN, CLAMP_MAX,
    }
}

fuse_table! {
    /// [`FuseTable`] for the ops of floating-point types only
    /// ([`FloatElement::float_fuse_table`]).
    FloatFuseTable<T: FloatElement> {
        HARDTANH, SQRT, RSQRT, RECIPROCAL, EXP, LOG, SIGMOID, TANH, SIN, COS, ERF, FLOOR, ROUND,
        POW, POW_SCALAR, ADDCMUL, ADDCDIV, ADDCMUL1, ADDCDIV1, LERP, LERP_SCALAR,
    }
}

/// One in-place op of a fused run with its operands, as generated code
/// passes a run to [`fused_run`]: `&mut [Step::mul_(2.0), Step::add_(w)]`.
/// Its constructors are named like the in-place ops of [`Tensor`] and take
/// the same arguments (the run is an array in the caller's frame: nothing
/// is allocated to record it).
///
/// ```
/// use funcz_runtime::rt::Step;
/// let s = Step::<f32>::clamp_min_(0.0);
/// assert_eq!(s.op(), "clamp_min_");
/// ```
pub struct Step<'a, T: Element> {
    fns: &'static OpFns<T>,
    a: Option<StepOperand<'a, T>>,
    b: Option<StepOperand<'a, T>>,
    p: Params<T>,
}

impl<T: Element> std::fmt::Debug for Step<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Step").field(&self.fns.op).finish()
    }
}

impl<'a, T: Element> Step<'a, T> {
    /// A step of `fns` with its operands and parameters.
    #[inline]
    fn new(
        fns: &'static OpFns<T>,
        a: Option<StepOperand<'a, T>>,
        b: Option<StepOperand<'a, T>>,
        p: Params<T>,
    ) -> Self {
        Step { fns, a, b, p }
    }

    /// A step with no operand and no parameter.
    #[inline]
    fn unary(fns: &'static OpFns<T>) -> Self {
        Step {
            fns,
            a: None,
            b: None,
            p: Params::default(),
        }
    }

    /// The in-place op's method name (`add_`).
    ///
    /// ```
    /// use funcz_runtime::rt::Step;
    /// assert_eq!(Step::<f64>::sqrt_().op(), "sqrt_");
    /// ```
    pub fn op(&self) -> &'static str {
        self.fns.op
    }

    /// The step's arguments.
    #[inline]
    fn args(&self) -> Args<'_, T> {
        Args { step: self }
    }

    /// The in-place op's own shape checks ([`Check`]), run before it from
    /// `#[track_caller]` code (the op, reached through a function pointer,
    /// would report the runtime's line), when they can fail: a tensor
    /// operand whose shape is not the target's (a scalar always
    /// broadcasts). The same panic, at the same point of the run. (The
    /// functional twin, run where the target is shared, panics as the
    /// generated op-by-op code does, and its commit refuses a result of
    /// another shape, see [`kept_shape`](super::kept_shape).)
    #[inline(always)]
    #[track_caller]
    fn check(&self, t: &Tensor<T>) {
        // (`Dims`' comparison: a loop, not a `memcmp` call.)
        let differs = |slot: &Option<StepOperand<'_, T>>| match slot {
            Some(StepOperand::Tensor(o)) => o.layout.shape != t.layout.shape,
            _ => false,
        };
        if differs(&self.a) || differs(&self.b) {
            self.check_shapes(t);
        }
    }

    /// [`Self::check`] for operands of other shapes (broadcast, or wrong).
    #[inline(never)]
    #[track_caller]
    fn check_shapes(&self, t: &Tensor<T>) {
        let op = self.fns.op;
        let arg = |slot: &Option<StepOperand<'a, T>>| match *slot {
            Some(StepOperand::Scalar(v)) => OperandRef::Scalar(v),
            Some(StepOperand::Tensor(o)) => OperandRef::Tensor(o),
            None => unreachable!("funcz: internal: a checked step without its operand"),
        };
        match self.fns.check {
            Check::None => {}
            Check::Operands(a, None) => check_inplace(op, t, &[(a, arg(&self.a))]),
            Check::Operands(a, Some(b)) => {
                check_inplace(op, t, &[(a, arg(&self.a)), (b, arg(&self.b))])
            }
            Check::Scaled(name) => inplace_check(name, t, &arg(&self.a)),
            Check::Addc(name) => {
                if let (Some(StepOperand::Tensor(x)), Some(StepOperand::Tensor(y))) =
                    (&self.a, &self.b)
                {
                    check_addc(name, t, x, y)
                }
            }
        }
    }

    /// Runs the step on the tracked root, as generated code runs one op.
    #[inline]
    #[track_caller]
    fn run_root(&mut self, root: &mut Tensor<T>, state: &mut Tracked) {
        if can_donate_root(root, state) {
            self.check(root);
            (self.fns.inplace)(root, &self.args());
            donated_root(self.fns.op, root, state);
        } else {
            let new = (self.fns.functional)(root, &self.args());
            commit_root(self.fns.op, root, state, new);
        }
    }

    /// Runs the step on a fresh value, as generated code runs one op.
    #[inline]
    #[track_caller]
    fn run_value(&mut self, t: &mut Tensor<T>) {
        if can_donate(t) {
            self.check(t);
            (self.fns.inplace)(t, &self.args());
            donated(t);
        } else {
            let new = (self.fns.functional)(t, &self.args());
            super::kept_shape(self.fns.op, t, &new);
            *t = new;
        }
    }
}

/// The steps of a [`Fusion`]: built by its methods, or the caller's array
/// (see [`fused_run`]).
enum Steps<'a, T: Element> {
    Built(Vec<Step<'a, T>>),
    Run(&'a mut [Step<'a, T>]),
}

impl<'a, T: Element> Steps<'a, T> {
    #[inline]
    fn get(&self) -> &[Step<'a, T>] {
        match self {
            Steps::Built(v) => v,
            Steps::Run(s) => s,
        }
    }

    #[inline]
    fn get_mut(&mut self) -> &mut [Step<'a, T>] {
        match self {
            Steps::Built(v) => v,
            Steps::Run(s) => s,
        }
    }
}

/// A run of in-place elementwise ops on one value, recorded to be run by
/// [`fused_root`] (or [`fused_value`]) as one pass over the value's buffer.
///
/// Its methods are named like the in-place ops of [`Tensor`] and take the
/// same arguments, so `y.mul_(1.01).add_(&w).relu_()` is recorded as
/// `Fusion::new().mul_(1.01).add_(&w).relu_()`. Operands are evaluated
/// when the fusion is built (before the first step runs); a borrowed
/// operand must not be the value being updated (the borrow checker sees to
/// that: the call also takes the value by `&mut`). Generated code passes
/// its runs as an array of [`Step`]s instead ([`fused_run`]), which
/// allocates nothing.
///
/// `Fusion::new()` takes its element type from the call it is passed to,
/// so it can be built inside the call; [`Fusion::of`] names it from a
/// tensor, for a fusion bound to a variable first (a call that takes `y`
/// by `&mut` cannot also borrow `y` for `Fusion::of(&y)` in its argument
/// list).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{Fusion, Tracked};
/// let col = Tensor::<f64>::from_vec(vec![2.0, 4.0], &[2, 1]);
/// let row_w = Tensor::from_vec(vec![1.0, 10.0], &[2]);
/// let row_b = Tensor::from_vec(vec![0.5, 0.5], &[2]);
/// let mut y = Tensor::<f64>::from_vec(vec![2.0, 4.0, 8.0, 16.0], &[2, 2]);
/// let mut s = Tracked::root(&y);
/// let f = Fusion::of(&y).div_(&col).mul_(&row_w).add_(&row_b);
/// assert_eq!(f.ops(), vec!["div_", "mul_", "add_"]);
/// rt::fused_root(&mut y, &mut s, f);
/// assert_eq!(y.to_vec(), vec![1.5, 20.5, 2.5, 40.5]);
/// ```
pub struct Fusion<'a, T: Element> {
    steps: Steps<'a, T>,
    /// The run compiled as one per-element function, and the ops it was
    /// compiled for (see [`Fusion::kernel`]; `None`: generated code's
    /// kernel for its own steps, [`fused_run_kernel`]).
    kernel: Option<(Option<&'a [&'a str]>, Kernel<'a, T>)>,
}

impl<T: Element> std::fmt::Debug for Fusion<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fusion").field("ops", &self.ops()).finish()
    }
}

impl<T: Element> Default for Fusion<'_, T> {
    fn default() -> Self {
        Fusion::new()
    }
}

impl<'a, T: Element> Fusion<'a, T> {
    /// An empty fusion; its element type is inferred from its use.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// use funcz_runtime::rt::{self, Fusion};
    /// let mut y = Tensor::<f32>::from_vec(vec![1.0, -2.0], &[2]);
    /// rt::fused_value(&mut y, Fusion::new().abs_().sqrt_());
    /// assert_eq!(y.to_vec(), vec![1.0, 2.0f32.sqrt()]);
    /// ```
    #[inline]
    pub fn new() -> Self {
        Fusion {
            steps: Steps::Built(Vec::new()),
            kernel: None,
        }
    }

    /// The fusion of the caller's steps.
    #[inline]
    fn run(steps: &'a mut [Step<'a, T>]) -> Self {
        Fusion {
            steps: Steps::Run(steps),
            kernel: None,
        }
    }

    /// The recorded steps, in order.
    #[inline]
    fn steps(&self) -> std::slice::Iter<'_, Step<'a, T>> {
        self.steps.get().iter()
    }

    /// Appends a step.
    #[inline]
    fn push(mut self, step: Step<'a, T>) -> Self {
        match &mut self.steps {
            Steps::Built(v) => v.push(step),
            Steps::Run(_) => unreachable!("funcz: internal: a step added to a caller's run"),
        }
        self
    }

    /// An empty fusion for values like `like` (only its element type is
    /// taken: the fusion does not borrow `like`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// use funcz_runtime::rt::Fusion;
    /// let y = Tensor::<f64>::zeros(&[3]);
    /// let f = Fusion::of(&y).add_(1.0).neg_();
    /// drop(y); // not borrowed
    /// assert_eq!(f.len(), 2);
    /// ```
    #[inline]
    pub fn of(like: &Tensor<T>) -> Self {
        let _ = like;
        Fusion::new()
    }

    /// The number of recorded steps.
    ///
    /// ```
    /// use funcz_runtime::rt::Fusion;
    /// assert_eq!(Fusion::<f32>::new().relu_().len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.steps.get().len()
    }

    /// True if no step is recorded.
    ///
    /// ```
    /// use funcz_runtime::rt::Fusion;
    /// assert!(Fusion::<f32>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.steps.get().is_empty()
    }

    /// The in-place ops recorded, in order (method names).
    ///
    /// ```
    /// use funcz_runtime::rt::Fusion;
    /// let f = Fusion::<f32>::new().add_scaled_(1.0, 2.0).clamp_min_(0.0);
    /// assert_eq!(f.ops(), vec!["add_scaled_", "clamp_min_"]);
    /// ```
    pub fn ops(&self) -> Vec<&'static str> {
        self.steps().map(|s| s.fns.op).collect()
    }

    /// Attaches `kernel`, the run compiled as one function (generated
    /// code writes it from the steps it records; see
    /// [`fuse_loop`](super::fuse_loop)): the one-pass path then runs it
    /// instead of one loop per step, keeping each element in a register
    /// through the run. `ops` names the steps it was written for; if they
    /// are not the recorded ones, the kernel is not used.
    ///
    /// ```
    /// use funcz_runtime::{Tensor, rt};
    /// use funcz_runtime::rt::{Fusion, Tracked, fuse_loop, k};
    /// rt::set_min_fused(0);
    /// let w = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let mut y = Tensor::<f32>::from_vec(vec![-3.0, 1.0], &[2]);
    /// let mut s = Tracked::root(&y);
    /// let f = Fusion::of(&y).add_(&w).relu_().kernel(&["add_", "relu_"], &|x, o, p| {
    ///     fuse_loop::<_, 1>(x, o, |v, [a0]| k::relu(k::add(v, a0, &p[0]), &p[1]))
    /// });
    /// rt::fused_root(&mut y, &mut s, f);
    /// assert_eq!(y.to_vec(), vec![0.0, 3.0]);
    /// ```
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline)]
    pub fn kernel(mut self, ops: &'a [&'a str], kernel: Kernel<'a, T>) -> Self {
        self.kernel = Some((Some(ops), kernel));
        self
    }

    /// The kernel, if it was written for exactly the recorded steps and
    /// kernels run on this CPU ([`kernels_run`]).
    fn checked_kernel(&self) -> Option<Kernel<'a, T>> {
        let (ops, k) = self.kernel?;
        let same = |ops: &[&str]| {
            ops.len() == self.len() && ops.iter().zip(self.steps()).all(|(o, s)| *o == s.fns.op)
        };
        (kernels_run() && ops.is_none_or(same)).then_some(k)
    }

    /// [`Tensor::add_`]: `self += other`.
    #[inline]
    pub fn add_(self, other: impl StepArg<'a, T>) -> Self {
        self.push(Step::add_(other))
    }

    /// [`Tensor::sub_`]: `self -= other`.
    #[inline]
    pub fn sub_(self, other: impl StepArg<'a, T>) -> Self {
        self.push(Step::sub_(other))
    }

    /// [`Tensor::mul_`]: `self *= other`.
    #[inline]
    pub fn mul_(self, other: impl StepArg<'a, T>) -> Self {
        self.push(Step::mul_(other))
    }

    /// [`Tensor::div_`]: `self /= other` (integer divisions never fuse:
    /// they check their divisor first).
    #[inline]
    pub fn div_(self, other: impl StepArg<'a, T>) -> Self {
        self.push(Step::div_(other))
    }

    /// [`Tensor::add_scaled_`]: `self += alpha * other`.
    #[inline]
    pub fn add_scaled_(self, other: impl StepArg<'a, T>, alpha: T) -> Self {
        self.push(Step::add_scaled_(other, alpha))
    }

    /// [`Tensor::sub_scaled_`]: `self -= alpha * other`.
    #[inline]
    pub fn sub_scaled_(self, other: impl StepArg<'a, T>, alpha: T) -> Self {
        self.push(Step::sub_scaled_(other, alpha))
    }

    /// [`Tensor::neg_`].
    #[inline]
    pub fn neg_(self) -> Self {
        self.push(Step::neg_())
    }

    /// [`Tensor::abs_`].
    #[inline]
    pub fn abs_(self) -> Self {
        self.push(Step::abs_())
    }

    /// [`Tensor::relu_`].
    #[inline]
    pub fn relu_(self) -> Self {
        self.push(Step::relu_())
    }

    /// [`Tensor::sign_`].
    #[inline]
    pub fn sign_(self) -> Self {
        self.push(Step::sign_())
    }

    /// [`Tensor::zero_`].
    #[inline]
    pub fn zero_(self) -> Self {
        self.push(Step::zero_())
    }

    /// [`Tensor::fill_`].
    #[inline]
    pub fn fill_(self, value: T) -> Self {
        self.push(Step::fill_(value))
    }

    /// [`Tensor::clamp_`]: either bound may be `None` (both `None` panics
    /// as the op does, when the step runs).
    #[inline]
    pub fn clamp_(self, min: impl Into<Option<T>>, max: impl Into<Option<T>>) -> Self {
        self.push(Step::clamp_(min, max))
    }

    /// [`Tensor::clamp_min_`].
    #[inline]
    pub fn clamp_min_(self, min: T) -> Self {
        self.push(Step::clamp_min_(min))
    }

    /// [`Tensor::clamp_max_`].
    #[inline]
    pub fn clamp_max_(self, max: T) -> Self {
        self.push(Step::clamp_max_(max))
    }
}

impl<'a, T: FloatElement> Fusion<'a, T> {
    /// [`Tensor::hardtanh_`].
    #[inline]
    pub fn hardtanh_(self, min_val: T, max_val: T) -> Self {
        self.push(Step::hardtanh_(min_val, max_val))
    }

    /// [`Tensor::sqrt_`].
    #[inline]
    pub fn sqrt_(self) -> Self {
        self.push(Step::sqrt_())
    }

    /// [`Tensor::rsqrt_`].
    #[inline]
    pub fn rsqrt_(self) -> Self {
        self.push(Step::rsqrt_())
    }

    /// [`Tensor::reciprocal_`].
    #[inline]
    pub fn reciprocal_(self) -> Self {
        self.push(Step::reciprocal_())
    }

    /// [`Tensor::exp_`].
    #[inline]
    pub fn exp_(self) -> Self {
        self.push(Step::exp_())
    }

    /// [`Tensor::log_`].
    #[inline]
    pub fn log_(self) -> Self {
        self.push(Step::log_())
    }

    /// [`Tensor::sigmoid_`].
    #[inline]
    pub fn sigmoid_(self) -> Self {
        self.push(Step::sigmoid_())
    }

    /// [`Tensor::tanh_`].
    #[inline]
    pub fn tanh_(self) -> Self {
        self.push(Step::tanh_())
    }

    /// [`Tensor::sin_`].
    #[inline]
    pub fn sin_(self) -> Self {
        self.push(Step::sin_())
    }

    /// [`Tensor::cos_`].
    #[inline]
    pub fn cos_(self) -> Self {
        self.push(Step::cos_())
    }

    /// [`Tensor::erf_`].
    #[inline]
    pub fn erf_(self) -> Self {
        self.push(Step::erf_())
    }

    /// [`Tensor::floor_`].
    #[inline]
    pub fn floor_(self) -> Self {
        self.push(Step::floor_())
    }

    /// [`Tensor::round_`].
    #[inline]
    pub fn round_(self) -> Self {
        self.push(Step::round_())
    }

    /// [`Tensor::pow_`]: a scalar or a tensor exponent.
    #[inline]
    pub fn pow_(self, exponent: impl StepArg<'a, T>) -> Self {
        self.push(Step::pow_(exponent))
    }

    /// [`Tensor::addcmul_`]: `self += value * tensor1 * tensor2`.
    #[inline]
    pub fn addcmul_(self, tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>, value: T) -> Self {
        self.push(Step::addcmul_(tensor1, tensor2, value))
    }

    /// [`Tensor::addcdiv_`]: `self += value * tensor1 / tensor2`.
    #[inline]
    pub fn addcdiv_(self, tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>, value: T) -> Self {
        self.push(Step::addcdiv_(tensor1, tensor2, value))
    }

    /// [`Tensor::addcmul1_`]: `self += tensor1 * tensor2`.
    #[inline]
    pub fn addcmul1_(self, tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>) -> Self {
        self.push(Step::addcmul1_(tensor1, tensor2))
    }

    /// [`Tensor::addcdiv1_`]: `self += tensor1 / tensor2`.
    #[inline]
    pub fn addcdiv1_(self, tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>) -> Self {
        self.push(Step::addcdiv1_(tensor1, tensor2))
    }

    /// [`Tensor::lerp_`]: toward `end` by a scalar or tensor `weight`.
    #[inline]
    pub fn lerp_(self, end: &'a Tensor<T>, weight: impl StepArg<'a, T>) -> Self {
        self.push(Step::lerp_(end, weight))
    }
}

impl<'a, T: Element> Step<'a, T> {
    /// [`Tensor::add_`]: `self += other`.
    #[inline]
    pub fn add_(other: impl StepArg<'a, T>) -> Self {
        Step::new(
            &T::fuse_table().ADD,
            Some(other.step_operand()),
            None,
            Params::default(),
        )
    }

    /// [`Tensor::sub_`]: `self -= other`.
    #[inline]
    pub fn sub_(other: impl StepArg<'a, T>) -> Self {
        Step::new(
            &T::fuse_table().SUB,
            Some(other.step_operand()),
            None,
            Params::default(),
        )
    }

    /// [`Tensor::mul_`]: `self *= other`.
    #[inline]
    pub fn mul_(other: impl StepArg<'a, T>) -> Self {
        Step::new(
            &T::fuse_table().MUL,
            Some(other.step_operand()),
            None,
            Params::default(),
        )
    }

    /// [`Tensor::div_`]: `self /= other` (integer divisions never fuse:
    /// they check their divisor first).
    #[inline]
    pub fn div_(other: impl StepArg<'a, T>) -> Self {
        Step::new(
            &T::fuse_table().DIV,
            Some(other.step_operand()),
            None,
            Params::default(),
        )
    }

    /// [`Tensor::add_scaled_`]: `self += alpha * other`.
    #[inline]
    pub fn add_scaled_(other: impl StepArg<'a, T>, alpha: T) -> Self {
        Step::new(
            &T::fuse_table().ADD_SCALED,
            Some(other.step_operand()),
            None,
            Params {
                s0: alpha,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::sub_scaled_`]: `self -= alpha * other`.
    #[inline]
    pub fn sub_scaled_(other: impl StepArg<'a, T>, alpha: T) -> Self {
        Step::new(
            &T::fuse_table().SUB_SCALED,
            Some(other.step_operand()),
            None,
            Params {
                s0: alpha,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::neg_`].
    #[inline]
    pub fn neg_() -> Self {
        Step::unary(&T::fuse_table().NEG)
    }

    /// [`Tensor::abs_`].
    #[inline]
    pub fn abs_() -> Self {
        Step::unary(&T::fuse_table().ABS)
    }

    /// [`Tensor::relu_`].
    #[inline]
    pub fn relu_() -> Self {
        Step::unary(&T::fuse_table().RELU)
    }

    /// [`Tensor::sign_`].
    #[inline]
    pub fn sign_() -> Self {
        Step::unary(&T::fuse_table().SIGN)
    }

    /// [`Tensor::zero_`].
    #[inline]
    pub fn zero_() -> Self {
        Step::unary(&T::fuse_table().ZERO)
    }

    /// [`Tensor::fill_`].
    #[inline]
    pub fn fill_(value: T) -> Self {
        Step::new(
            &T::fuse_table().FILL,
            None,
            None,
            Params {
                s0: value,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::clamp_`]: either bound may be `None` (both `None` panics
    /// as the op does, when the step runs).
    #[inline]
    pub fn clamp_(min: impl Into<Option<T>>, max: impl Into<Option<T>>) -> Self {
        let (lo, hi) = (min.into(), max.into());
        Step::new(
            if lo.is_some() || hi.is_some() {
                &T::fuse_table().CLAMP
            } else {
                &T::fuse_table().CLAMP_UNBOUNDED
            },
            None,
            None,
            Params {
                lo,
                hi,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::clamp_min_`].
    #[inline]
    pub fn clamp_min_(min: T) -> Self {
        Step::new(
            &T::fuse_table().CLAMP_MIN,
            None,
            None,
            Params {
                s0: min,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::clamp_max_`].
    #[inline]
    pub fn clamp_max_(max: T) -> Self {
        Step::new(
            &T::fuse_table().CLAMP_MAX,
            None,
            None,
            Params {
                s0: max,
                ..Params::default()
            },
        )
    }
}

impl<'a, T: FloatElement> Step<'a, T> {
    /// [`Tensor::hardtanh_`].
    #[inline]
    pub fn hardtanh_(min_val: T, max_val: T) -> Self {
        Step::new(
            &T::float_fuse_table().HARDTANH,
            None,
            None,
            Params {
                s0: min_val,
                s1: max_val,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::sqrt_`].
    #[inline]
    pub fn sqrt_() -> Self {
        Step::unary(&T::float_fuse_table().SQRT)
    }

    /// [`Tensor::rsqrt_`].
    #[inline]
    pub fn rsqrt_() -> Self {
        Step::unary(&T::float_fuse_table().RSQRT)
    }

    /// [`Tensor::reciprocal_`].
    #[inline]
    pub fn reciprocal_() -> Self {
        Step::unary(&T::float_fuse_table().RECIPROCAL)
    }

    /// [`Tensor::exp_`].
    #[inline]
    pub fn exp_() -> Self {
        Step::unary(&T::float_fuse_table().EXP)
    }

    /// [`Tensor::log_`].
    #[inline]
    pub fn log_() -> Self {
        Step::unary(&T::float_fuse_table().LOG)
    }

    /// [`Tensor::sigmoid_`].
    #[inline]
    pub fn sigmoid_() -> Self {
        Step::unary(&T::float_fuse_table().SIGMOID)
    }

    /// [`Tensor::tanh_`].
    #[inline]
    pub fn tanh_() -> Self {
        Step::unary(&T::float_fuse_table().TANH)
    }

    /// [`Tensor::sin_`].
    #[inline]
    pub fn sin_() -> Self {
        Step::unary(&T::float_fuse_table().SIN)
    }

    /// [`Tensor::cos_`].
    #[inline]
    pub fn cos_() -> Self {
        Step::unary(&T::float_fuse_table().COS)
    }

    /// [`Tensor::erf_`].
    #[inline]
    pub fn erf_() -> Self {
        Step::unary(&T::float_fuse_table().ERF)
    }

    /// [`Tensor::floor_`].
    #[inline]
    pub fn floor_() -> Self {
        Step::unary(&T::float_fuse_table().FLOOR)
    }

    /// [`Tensor::round_`].
    #[inline]
    pub fn round_() -> Self {
        Step::unary(&T::float_fuse_table().ROUND)
    }

    /// [`Tensor::pow_`]: a scalar or a tensor exponent.
    #[inline]
    pub fn pow_(exponent: impl StepArg<'a, T>) -> Self {
        let e = exponent.step_operand();
        let (p, fns) = match e {
            StepOperand::Scalar(v) => (
                Params {
                    s0: v,
                    ..Params::default()
                },
                &T::float_fuse_table().POW_SCALAR,
            ),
            _ => (Params::default(), &T::float_fuse_table().POW),
        };
        Step::new(fns, Some(e), None, p)
    }

    /// [`Tensor::addcmul_`]: `self += value * tensor1 * tensor2`.
    #[inline]
    pub fn addcmul_(tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>, value: T) -> Self {
        Step::new(
            &T::float_fuse_table().ADDCMUL,
            Some(StepOperand::Tensor(tensor1)),
            Some(StepOperand::Tensor(tensor2)),
            Params {
                s0: value,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::addcdiv_`]: `self += value * tensor1 / tensor2`.
    #[inline]
    pub fn addcdiv_(tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>, value: T) -> Self {
        Step::new(
            &T::float_fuse_table().ADDCDIV,
            Some(StepOperand::Tensor(tensor1)),
            Some(StepOperand::Tensor(tensor2)),
            Params {
                s0: value,
                ..Params::default()
            },
        )
    }

    /// [`Tensor::addcmul1_`]: `self += tensor1 * tensor2`.
    #[inline]
    pub fn addcmul1_(tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>) -> Self {
        Step::new(
            &T::float_fuse_table().ADDCMUL1,
            Some(StepOperand::Tensor(tensor1)),
            Some(StepOperand::Tensor(tensor2)),
            Params::default(),
        )
    }

    /// [`Tensor::addcdiv1_`]: `self += tensor1 / tensor2`.
    #[inline]
    pub fn addcdiv1_(tensor1: &'a Tensor<T>, tensor2: &'a Tensor<T>) -> Self {
        Step::new(
            &T::float_fuse_table().ADDCDIV1,
            Some(StepOperand::Tensor(tensor1)),
            Some(StepOperand::Tensor(tensor2)),
            Params::default(),
        )
    }

    /// [`Tensor::lerp_`]: toward `end` by a scalar or tensor `weight`.
    #[inline]
    pub fn lerp_(end: &'a Tensor<T>, weight: impl StepArg<'a, T>) -> Self {
        let w = weight.step_operand();
        let (p, b, fns) = match w {
            StepOperand::Scalar(v) => (
                Params {
                    s0: v,
                    ..Params::default()
                },
                // The weight stays the step's second operand for the
                // unfused ops; the block kernel reads it from `p`.
                Some(StepOperand::Scalar(v)),
                &T::float_fuse_table().LERP_SCALAR,
            ),
            w => (Params::default(), Some(w), &T::float_fuse_table().LERP),
        };
        Step::new(fns, Some(StepOperand::Tensor(end)), b, p)
    }
}

// ---------------------------------------------------------------------------
// running a fusion

/// Updates the tracked root `root` (state `state`) by the steps of `f`,
/// as generated code would run them one by one:
///
/// ```text
/// if can_donate_root(&y, &s) { y.OP_(args); donated_root("OP_", "OP", &mut y, &mut s); }
/// else { let new = y.OP(args); commit_root("OP_", &mut y, &mut s, new); }
/// ```
///
/// and with the same observable result: values bit for bit, panics (after
/// the steps before the failing one have run), storage versions, trace
/// and `state`. When no trace is recording, `root` may be updated in its
/// own buffer, the element type is a float, and every tensor operand is
/// contiguous, in another storage and broadcasts to `root` by a simple
/// pattern, all steps run in one blocked pass over the buffer.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{Fusion, Tracked};
/// let caller = Tensor::<f32>::from_vec(vec![1.0, -4.0, 9.0], &[3]);
/// let w = Tensor::from_vec(vec![1.0, 1.0, 1.0], &[3]);
/// // A mutated input updated in the caller's buffer, written back at exit.
/// let mut x = rt::input(&caller);
/// let mut s = Tracked::input(&x);
/// rt::fused_root(&mut x, &mut s, Fusion::new().sub_(&w).abs_().sqrt_());
/// rt::write_back(&caller, &x);
/// assert_eq!(caller.to_vec(), vec![0.0, 5.0f32.sqrt(), 8.0f32.sqrt()]);
/// assert_eq!(rt::version(&caller), 3);
/// ```
#[track_caller]
pub fn fused_root<T: Element>(root: &mut Tensor<T>, state: &mut Tracked, f: Fusion<'_, T>) {
    // Compiled once per element type, in funcz-runtime (see `FuseTable`).
    T::fused_root_impl(root, state, f)
}

/// The body of [`fused_root`].
#[doc(hidden)]
#[track_caller]
pub fn fused_root_any<T: Element>(root: &mut Tensor<T>, state: &mut Tracked, mut f: Fusion<'_, T>) {
    if f.is_empty() {
        return;
    }
    let overlaps = state.original_overlaps();
    if !overlaps && fusable(&f, root) && can_donate_root(root, state) && fused_pass(root, &f) {
        for _ in f.steps() {
            donated(root);
            state.bump();
        }
        return;
    }
    let steps = f.steps.get_mut();
    if overlaps {
        // Each step panics as the unfused code does (after the first ran).
        for s in steps {
            check_writable(s.fns.op, &root.layout);
            s.run_root(root, state);
        }
        return;
    }
    // One by one, as generated code runs each op: `donated_root` is
    // `check_overlap` (nothing to check here), `donated` and one
    // generation bump (no fusible op is `resize_`).
    if can_donate_root(root, state) {
        // The root's own buffer, for every step: an in-place elementwise op
        // leaves its receiver's storage (and its handles) and layout as
        // they were, and no operand holds the root's storage (it would
        // count as a handle), so the test holds for each step.
        let tracing = crate::trace::is_recording();
        for s in steps {
            s.check(root);
            (s.fns.inplace)(root, &s.args());
            if tracing {
                donated(root);
            }
            state.bump();
        }
        // (Without a trace, the root keeps its identity, as a window's
        // does (see `window_end`): an identity only tells handles apart,
        // and `root` is still the same handle, its buffer changed in place
        // as the original's tensor is, so the exit's write-back sees at
        // once that there is nothing to copy.)
        return;
    }
    for s in steps {
        if can_donate_root(root, state) {
            s.check(root);
            (s.fns.inplace)(root, &s.args());
            donated(root);
            state.bump();
        } else {
            let new = (s.fns.functional)(root, &s.args());
            commit_root(s.fns.op, root, state, new);
        }
    }
}

/// [`fused_root`] for a run given as the caller's array of steps (what
/// generated code passes: nothing is allocated to record the run).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{Step, Tracked};
/// let w = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
/// let mut y = Tensor::<f32>::from_vec(vec![-1.0, 0.0, 1.0], &[3]);
/// let mut s = Tracked::root(&y);
/// // y.mul_(2.0); y.add_(&w); y.relu_(); as one call:
/// rt::fused_run(&mut y, &mut s, &mut [Step::mul_(2.0), Step::add_(&w), Step::relu_()]);
/// assert_eq!(y.to_vec(), vec![0.0, 2.0, 5.0]);
/// assert_eq!(y.version(), 3);
/// ```
#[track_caller]
#[inline]
pub fn fused_run<'a, T: Element>(
    root: &mut Tensor<T>,
    state: &mut Tracked,
    steps: &'a mut [Step<'a, T>],
) {
    T::fused_root_impl(root, state, Fusion::run(steps))
}

/// [`fused_run`] with `kernel`, the run compiled as one function (the
/// per-element formulas of `steps`, in order, through
/// [`fuse_loop_wide`](super::fuse_loop_wide), which `#[functionalize]`
/// writes for a run of three or more ops in optimized builds): the
/// one-pass path runs it instead of one loop per step. It must compute
/// exactly `steps` (its operands are the steps' in order, one parameter
/// record per step), which is not checked.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{Step, Tracked, fuse_loop_wide, k};
/// rt::set_min_fused(0);
/// let w = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
/// let mut y = Tensor::<f32>::from_vec(vec![-3.0, 1.0], &[2]);
/// let mut s = Tracked::root(&y);
/// rt::fused_run_kernel(&mut y, &mut s, &mut [Step::add_(&w), Step::relu_()], &|x, o, p| {
///     fuse_loop_wide::<_, 1>(x, o, |v, [a0]| k::relu(k::add(v, a0, &p[0]), &p[1]))
/// });
/// assert_eq!(y.to_vec(), vec![0.0, 3.0]);
/// ```
#[track_caller]
#[inline]
pub fn fused_run_kernel<'a, T: Element>(
    root: &mut Tensor<T>,
    state: &mut Tracked,
    steps: &'a mut [Step<'a, T>],
    kernel: Kernel<'a, T>,
) {
    let mut f = Fusion::run(steps);
    f.kernel = Some((None, kernel));
    T::fused_root_impl(root, state, f)
}

/// [`fused_root`] for a fresh value with no tracked state (a temporary
/// generated code updates in place when [`can_donate`] allows, and
/// replaces by the functional op's result otherwise):
///
/// ```text
/// if can_donate(&t) { t.OP_(args); donated("OP", &mut t); } else { t = t.OP(args); }
/// ```
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::Fusion;
/// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
/// let mut t = x.mul(3.0); // fresh: updated in its own buffer
/// rt::fused_value(&mut t, Fusion::new().add_(1.0).div_(2.0));
/// assert_eq!(t.to_vec(), vec![2.0, 3.5]);
/// let mut v = x.shallow_clone(); // shared: replaced, `x` unchanged
/// rt::fused_value(&mut v, Fusion::new().neg_());
/// assert_eq!((v.to_vec(), x.to_vec()), (vec![-1.0, -2.0], vec![1.0, 2.0]));
/// ```
#[track_caller]
pub fn fused_value<T: Element>(t: &mut Tensor<T>, f: Fusion<'_, T>) {
    T::fused_value_impl(t, f)
}

/// The body of [`fused_value`].
#[doc(hidden)]
#[track_caller]
pub fn fused_value_any<T: Element>(t: &mut Tensor<T>, mut f: Fusion<'_, T>) {
    if f.is_empty() {
        return;
    }
    if fusable(&f, t) && can_donate(t) && fused_pass(t, &f) {
        for _ in f.steps() {
            donated(t);
        }
        return;
    }
    for s in f.steps.get_mut() {
        s.run_value(t);
    }
}

thread_local! {
    /// Fused passes run on this thread (see [`fused_passes`]).
    static PASSES: Cell<u64> = const { Cell::new(0) };
    /// Blocks a compiled kernel ran on this thread (see [`kernel_blocks`]).
    static KERNEL_BLOCKS: Cell<u64> = const { Cell::new(0) };
}

/// How many blocks a compiled kernel ([`Fusion::kernel`]) ran on this
/// thread (for tests that check the kernel, not the per-step loops, ran).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{Fusion, fuse_loop, k};
/// rt::set_min_fused(0);
/// let before = rt::kernel_blocks();
/// let mut t = Tensor::<f32>::zeros(&[4]);
/// rt::fused_value(&mut t, Fusion::new().add_(1.0).neg_().kernel(&["add_", "neg_"], &|x, o, p| {
///     fuse_loop::<_, 1>(x, o, |v, [a]| k::neg(k::add(v, a, &p[0]), &p[1]))
/// }));
/// assert_eq!(t.to_vec(), vec![-1.0; 4]);
/// assert_eq!(rt::kernel_blocks(), before + 1);
/// ```
#[doc(hidden)]
pub fn kernel_blocks() -> u64 {
    KERNEL_BLOCKS.with(Cell::get)
}

/// How many times [`fused_root`] or [`fused_value`] took the one-pass
/// path on this thread (for tests that check a chain was fused, not only
/// that its result is right).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::Fusion;
/// rt::set_min_fused(0); // fuse even this small value
/// let before = rt::fused_passes();
/// let mut t = Tensor::<f32>::zeros(&[4]);
/// rt::fused_value(&mut t, Fusion::new().add_(1.0).exp_());
/// assert_eq!(rt::fused_passes(), before + 1);
/// let odd = Tensor::<f32>::zeros(&[2, 2]).t(); // a strided operand:
/// let mut u = Tensor::<f32>::zeros(&[2, 2]);
/// rt::fused_value(&mut u, Fusion::new().add_(&odd)); // op by op
/// assert_eq!(rt::fused_passes(), before + 1);
/// ```
#[doc(hidden)]
pub fn fused_passes() -> u64 {
    PASSES.with(Cell::get)
}

/// The cheap checks of the fast path: a float value of at least
/// [`min_fused`] elements, no trace recording, every step with a block
/// kernel. The first two come first: small values (which run op by op)
/// pay for nothing else.
#[inline]
fn fusable<T: Element>(f: &Fusion<'_, T>, root: &Tensor<T>) -> bool {
    let n = root.numel();
    T::IS_FLOAT
        && n != 0
        && n >= min_fused(f)
        && !crate::trace::is_recording()
        && f.steps().all(|s| s.fns.block.is_some())
}

/// The [`set_min_fused`] setting that means "the defaults".
const AUTO: usize = usize::MAX - 1;

thread_local! {
    /// The thread's [`set_min_fused`] setting ([`AUTO`] unless set).
    static MIN_FUSED: Cell<usize> = Cell::new(default_min_fused());
}

/// Runs with a compiled kernel ([`Fusion::kernel`]) fuse from this many
/// elements when the kernel's AVX2 copy runs (`rt::fuse_loop`): then one
/// pass is faster than one (AVX2) pass per op from L2-sized values up.
/// Measured (BENCHMARKS.md, "Kernels and fused chains (h-kern2)"): the
/// root bench's 10-op chains at 64K and 1M elements went from 0.99-1.02x
/// the original to 0.69-0.84x, layer norm 1024² from 0.98x to 0.90-0.92x;
/// values under 2048 elements stay op by op (allocation-free).
const KERNEL_MIN_FUSED: usize = 2048;

/// Other runs (no kernel, or the kernel's baseline copy) fuse from this
/// many elements (16 MiB of `f32`): up to about the size of the
/// last-level cache one (vectorized) pass per op costs no more than one
/// blocked or baseline-compiled fused pass, and the op-by-op path
/// allocates nothing (BENCHMARKS.md, "Fusion threshold": fusing the 10-op
/// chain from 2048 elements made 64K and 1M values 1.2-1.55x slower than
/// the original; from 4M elements they are at 1.00-1.02x, and 16M values
/// still fuse, 0.39-0.72x the original).
const BLOCKED_MIN_FUSED: usize = 1 << 22;

/// The fewest elements `f` fuses at: the thread's [`set_min_fused`]
/// setting, or by default [`KERNEL_MIN_FUSED`] for a run with a compiled
/// kernel whose AVX2 copy runs and [`BLOCKED_MIN_FUSED`] otherwise.
#[inline]
fn min_fused<T: Element>(f: &Fusion<'_, T>) -> usize {
    match MIN_FUSED.with(Cell::get) {
        AUTO if f.kernel.is_some() && kernels_run() => KERNEL_MIN_FUSED,
        AUTO => BLOCKED_MIN_FUSED,
        m => m,
    }
}

/// The fewest elements a run with a compiled kernel fuses at (the
/// thread's [`set_min_fused`] setting, or the default of [`min_fused`] for
/// such a run): for the multi-root runs of `fuse_multi`, which always have
/// one.
#[inline]
pub(super) fn min_fused_kernel() -> usize {
    match MIN_FUSED.with(Cell::get) {
        AUTO if crate::ops::kernel::wide::avx2() => KERNEL_MIN_FUSED,
        AUTO => BLOCKED_MIN_FUSED,
        m => m,
    }
}

/// The thread's initial [`set_min_fused`] setting: the value of the
/// environment variable `FUNCZ_MIN_FUSED` (read when a thread first fuses;
/// for measuring where one pass starts to pay on a machine), or the
/// defaults.
fn default_min_fused() -> usize {
    std::env::var("FUNCZ_MIN_FUSED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(AUTO)
}

/// Sets the smallest number of elements this thread fuses and returns the
/// previous setting (pass it back to restore it): tests fuse small values
/// with 0 and never fuse with `usize::MAX`. By default runs with a
/// compiled kernel fuse from 2048 elements when its AVX2 copy runs, and
/// other runs from 4M elements.
#[doc(hidden)]
pub fn set_min_fused(n: usize) -> usize {
    MIN_FUSED.with(|m| m.replace(n))
}

/// Elements per block: about 8 KiB of each stream, so that the root's
/// block and a few operands' stay in L1 while every step runs over them.
const BLOCK_BYTES: usize = 8 << 10;

/// Operands that repeat with a shorter period than this (a short row, a
/// column against few columns) are gathered into a block-long buffer
/// instead of cutting blocks at their period.
const MIN_RUN: usize = 256;

/// The most steps a compiled kernel runs (the macro's longest run).
const KERNEL_MAX_STEPS: usize = 32;

/// How a tensor operand maps onto the root's elements (row-major index
/// `i`): element `(i / inner) % period` of its contiguous buffer.
#[derive(Clone, Copy)]
struct Pattern {
    inner: usize,
    period: usize,
}

/// How `op` broadcasts to `shape` for the fused pass: `Some(None)` for one
/// element (a scalar), `Some(Some(pattern))` for a contiguous operand whose
/// non-broadcast dimensions are one contiguous run of `shape`'s, `None`
/// otherwise (including operands that do not broadcast to `shape` at all:
/// the unfused ops then panic as they should).
fn pattern<T: Element>(op: &Tensor<T>, shape: &[usize]) -> Option<Option<Pattern>> {
    let os = op.shape();
    let (n, k) = (shape.len(), os.len());
    if k > n {
        return None;
    }
    let aligned = |d: usize| if d >= n - k { os[d - (n - k)] } else { 1 };
    for (d, &s) in shape.iter().enumerate() {
        let o = aligned(d);
        if o != s && o != 1 {
            return None;
        }
    }
    let numel = op.numel();
    if numel == 1 {
        return Some(None);
    }
    if numel == 0 || !op.is_contiguous() {
        return None;
    }
    // The dimensions the operand does not broadcast along (size > 1 in
    // both) must be one run, with nothing broadcast inside it.
    let real = |d: usize| aligned(d) != 1;
    let first = (0..n).find(|&d| real(d))?;
    let last = (0..n).rev().find(|&d| real(d))?;
    if (first..=last).any(|d| !real(d) && shape[d] != 1) {
        return None;
    }
    Some(Some(Pattern {
        inner: shape[last + 1..].iter().product(),
        period: numel,
    }))
}

/// An operand resolved for the pass.
enum Src<'g, T> {
    None,
    Scalar(T),
    /// The operand's elements, its pattern, and the scratch buffer it is
    /// gathered into per block (if its pattern repeats within a block).
    Seg(&'g [T], Pattern, Option<usize>),
}

impl<'g, T: Element> Src<'g, T> {
    /// The operand over the block `[s, s + len)`.
    #[inline]
    fn view<'v>(&'v self, s: usize, len: usize, scratch: &'v [Vec<T>]) -> View<'v, T> {
        match *self {
            Src::None => View::None,
            Src::Scalar(v) => View::Scalar(v),
            Src::Seg(_, _, Some(i)) => View::Slice(&scratch[i][..len]),
            Src::Seg(d, Pattern { inner: 1, period }, None) => {
                let o = s % period;
                View::Slice(&d[o..o + len])
            }
            Src::Seg(d, Pattern { inner, period }, None) => View::Scalar(d[(s / inner) % period]),
        }
    }

    /// Fills its scratch buffer for the block `[s, s + len)`.
    fn gather(&self, s: usize, len: usize, scratch: &mut [Vec<T>]) {
        let Src::Seg(d, Pattern { inner, period }, Some(i)) = *self else {
            return;
        };
        let out = &mut scratch[i][..len];
        let mut j = 0;
        if inner == 1 {
            let mut o = s % period;
            while j < len {
                let m = (period - o).min(len - j);
                out[j..j + m].copy_from_slice(&d[o..o + m]);
                j += m;
                o = 0;
            }
        } else {
            let mut k = (s / inner) % period;
            let mut r = inner - s % inner;
            while j < len {
                let m = r.min(len - j);
                out[j..j + m].fill(d[k]);
                j += m;
                k = if k + 1 == period { 0 } else { k + 1 };
                r = inner;
            }
        }
    }
}

/// Runs `steps` on `root` in one blocked pass if every operand allows it;
/// returns false (having done nothing) otherwise. `root` must be
/// contiguous from offset 0 and held by nobody who could observe it. Bumps
/// `root`'s version once per step, as the unfused ops do.
fn fused_pass<T: Element>(root: &Tensor<T>, f: &Fusion<'_, T>) -> bool {
    let shape = root.shape();
    let n = root.numel();
    if n == 0 || n < min_fused(f) || !root.is_contiguous() || root.layout.offset != 0 {
        return false;
    }
    let steps = f.steps();
    let nsteps = f.len();
    // Classify every tensor operand first.
    let mut pats: Vec<[Option<Option<Pattern>>; 2]> = Vec::with_capacity(nsteps);
    let mut tensors: Vec<&Tensor<T>> = Vec::new();
    for s in steps.clone() {
        let mut pp = [None, None];
        for (slot, arg) in [&s.a, &s.b].into_iter().enumerate() {
            if let Val::Tensor(t) = val(arg) {
                if t.same_storage(root) {
                    return false;
                }
                let Some(p) = pattern(t, shape) else {
                    return false;
                };
                pp[slot] = Some(p);
                tensors.push(t);
            }
        }
        pats.push(pp);
    }
    // Read-lock each operand storage once, in address order (the order
    // every kernel locks in); nobody else can lock `root`'s.
    tensors.sort_unstable_by_key(|t| t.storage_key());
    tensors.dedup_by_key(|t| t.storage_key());
    let guards: Vec<(usize, RwLockReadGuard<'_, Vec<T>>)> = tensors
        .iter()
        .map(|t| (t.storage_key(), t.storage.read()))
        .collect();
    let data_of = |t: &Tensor<T>| -> &[T] {
        let key = t.storage_key();
        let g = &guards
            .iter()
            .find(|(k, _)| *k == key)
            .expect("funcz: internal: every operand storage is locked")
            .1;
        &g[t.layout.offset..t.layout.offset + t.numel()]
    };
    // Blocks never cross a multiple of the shortest long period: operands
    // with a longer one are then a slice or a scalar in every block.
    let block = (BLOCK_BYTES / std::mem::size_of::<T>()).max(MIN_RUN);
    let granule = |p: &Pattern| if p.inner == 1 { p.period } else { p.inner };
    let seg = pats
        .iter()
        .flatten()
        .flatten()
        .flatten()
        .map(granule)
        .filter(|&g| g >= MIN_RUN)
        .min()
        .unwrap_or(n);
    let mut nscratch = 0;
    let mut srcs: Vec<[Src<'_, T>; 2]> = Vec::with_capacity(nsteps);
    for (s, pp) in steps.clone().zip(&pats) {
        let mut out = [Src::None, Src::None];
        for (slot, arg) in [&s.a, &s.b].into_iter().enumerate() {
            out[slot] = match (val(arg), pp[slot]) {
                (Val::None, _) => Src::None,
                (Val::Scalar(v), _) => Src::Scalar(v),
                (Val::Tensor(t), Some(None)) => Src::Scalar(data_of(t)[0]),
                (Val::Tensor(t), Some(Some(p))) => {
                    let g = granule(&p);
                    let gather = (g < MIN_RUN && g < n).then(|| {
                        nscratch += 1;
                        nscratch - 1
                    });
                    Src::Seg(data_of(t), p, gather)
                }
                (Val::Tensor(_), None) => {
                    unreachable!("funcz: internal: tensor operands are classified")
                }
            };
        }
        srcs.push(out);
    }
    let mut scratch: Vec<Vec<T>> = vec![vec![T::zero(); block.min(n)]; nscratch];
    let kernel = f.checked_kernel().filter(|_| nsteps <= KERNEL_MAX_STEPS);
    let mut params = [Params::default(); KERNEL_MAX_STEPS];
    if kernel.is_some() {
        for (p, s) in params.iter_mut().zip(steps.clone()) {
            *p = s.p;
        }
    }
    let params = &params[..nsteps.min(KERNEL_MAX_STEPS)];
    // One version bump per step, as the unfused ops.
    for _ in 1..nsteps {
        drop(root.storage.write());
    }
    let mut w = root.storage.write();
    let data = &mut w[..n];
    let mut start = 0;
    while start < n {
        let seg_end = (start + seg).min(n);
        let mut s = start;
        while s < seg_end {
            let e = (s + block).min(seg_end);
            let len = e - s;
            for src in srcs.iter().flatten() {
                src.gather(s, len, &mut scratch);
            }
            let x = &mut data[s..e];
            if let Some(kernel) = kernel {
                // Every step's operands, in order, cut to the block.
                let mut views = [View::None; 2 * KERNEL_MAX_STEPS];
                let mut nv = 0;
                for src in srcs.iter().flatten() {
                    if !matches!(src, Src::None) {
                        views[nv] = src.view(s, len, &scratch);
                        nv += 1;
                    }
                }
                kernel(x, &views[..nv], params);
                KERNEL_BLOCKS.with(|p| p.set(p.get() + 1));
                s = e;
                continue;
            }
            for (step, [a, b]) in steps.clone().zip(&srcs) {
                let k = step
                    .fns
                    .block
                    .expect("funcz: internal: a fused step has a kernel");
                k(
                    x,
                    a.view(s, len, &scratch),
                    b.view(s, len, &scratch),
                    &step.p,
                );
            }
            s = e;
        }
        start = seg_end;
    }
    PASSES.with(|p| p.set(p.get() + 1));
    true
}
