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
