//! The elementwise in-place ops that a run of in-place ops on one tensor
//! may fuse into one pass over memory.

/// In-place ops that `#[functionalize]` may run as one fused pass when
/// several of them follow each other on one tensor (`funcz::rt::Fusion`
/// has a method of each name, with the op's own arguments). Each is
/// elementwise: element `i` of the result depends only on element `i` of
/// the receiver and of its (broadcast) operands.
///
/// ```
/// use funcz_optable::{FUSIBLE, OpKind, lookup};
/// for op in FUSIBLE {
///     assert!(matches!(lookup(op).unwrap().kind, OpKind::Inplace { .. }));
/// }
/// ```
pub const FUSIBLE: &[&str] = &[
    "add_",
    "sub_",
    "mul_",
    "div_",
    "add_scaled_",
    "sub_scaled_",
    "neg_",
    "abs_",
    "relu_",
    "clamp_",
    "clamp_min_",
    "clamp_max_",
    "sqrt_",
    "exp_",
    "log_",
    "sigmoid_",
    "tanh_",
    "sign_",
    "hardtanh_",
    "addcmul_",
    "addcdiv_",
    "lerp_",
];

/// The fusible ops that take a tensor-or-scalar operand, with its position
/// among the op's arguments. A fused run's step borrows it
/// (`funcz::rt::StepArg`): `#[functionalize]` passes any operand that is
/// not a literal or a reference as `&(operand)`, so that a step owns
/// nothing.
///
/// ```
/// use funcz_optable::{FUSIBLE, STEP_OPERANDS};
/// for (op, _) in STEP_OPERANDS {
///     assert!(FUSIBLE.contains(op));
/// }
/// ```
pub const STEP_OPERANDS: &[(&str, usize)] = &[
    ("add_", 0),
    ("sub_", 0),
    ("mul_", 0),
    ("div_", 0),
    ("add_scaled_", 0),
    ("sub_scaled_", 0),
    ("lerp_", 1),
];

/// The fusible ops whose per-element formula `funcz::rt::k` has, so that
/// `#[functionalize]` can compile a run of them into one function (see
/// `funcz::rt::Fusion::kernel`): the op, its function in `rt::k`, and how
/// many tensor-or-scalar operands it takes (its other arguments are the
/// step's scalar parameters). `lerp_` is not here: its formula depends on
/// whether its weight is a scalar or a tensor, which only the run knows.
///
/// ```
/// use funcz_optable::{FUSIBLE, KERNELS};
/// for (op, _, _) in KERNELS {
///     assert!(FUSIBLE.contains(op));
/// }
/// ```
pub const KERNELS: &[(&str, &str, usize)] = &[
    ("add_", "add", 1),
    ("sub_", "sub", 1),
    ("mul_", "mul", 1),
    ("div_", "div", 1),
    ("add_scaled_", "add_scaled", 1),
    ("sub_scaled_", "sub_scaled", 1),
    ("neg_", "neg", 0),
    ("abs_", "abs", 0),
    ("relu_", "relu", 0),
    ("clamp_", "clamp", 0),
    ("clamp_min_", "clamp_min", 0),
    ("clamp_max_", "clamp_max", 0),
    ("sqrt_", "sqrt", 0),
    ("exp_", "exp", 0),
    ("log_", "log", 0),
    ("sigmoid_", "sigmoid", 0),
    ("tanh_", "tanh", 0),
    ("sign_", "sign", 0),
    ("hardtanh_", "hardtanh", 0),
    ("addcmul_", "addcmul", 2),
    ("addcdiv_", "addcdiv", 2),
];
