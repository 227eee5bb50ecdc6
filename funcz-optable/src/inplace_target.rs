//! The in-place ops the runtime runs in one call on a tracked tensor.

/// In-place ops that `funcz::rt::InPlace` has a method for, with exactly
/// the parameters of the tensor method of the same name: `#[functionalize]`
/// lowers `x.op_(args);` on a tracked tensor to
/// `rt::inplace_var(&mut x).op_(args);` (the tensor made private if
/// shared, then the op and its commit) for these, and to three statements
/// (`rt::own_var`, the user's own call, `rt::donated_var`) for the others.
/// A test of funcz-runtime checks that its methods are exactly these.
///
/// ```
/// assert!(funcz_optable::INPLACE_TARGET_OPS.contains(&"add_"));
/// assert!(!funcz_optable::INPLACE_TARGET_OPS.contains(&"index_put_"));
/// ```
pub const INPLACE_TARGET_OPS: &[&str] = &[
    "add_",
    "sub_",
    "mul_",
    "div_",
    "neg_",
    "abs_",
    "relu_",
    "clamp_",
    "addcmul_",
    "fill_",
    "zero_",
    "copy_",
    "add_scaled_",
    "sub_scaled_",
    "clamp_min_",
    "clamp_max_",
    "sign_",
    "pow_",
    "exp_",
    "log_",
    "sqrt_",
    "sigmoid_",
    "tanh_",
    "addcdiv_",
    "lerp_",
    "hardtanh_",
    "addcmul1_",
    "addcdiv1_",
];

/// In-place ops whose kernel refuses a tensor argument that overlaps the
/// tensor it writes (PyTorch's `assert_no_partial_overlap` for the
/// elementwise ops, `assert_no_overlap` for the indexed ones): where the
/// functional twin stands in for one, generated code first runs the same
/// check (`funcz::rt::check_args_overlap`), so that it panics as the op
/// would. (`masked_scatter_` checks nothing, as in PyTorch.) A test of
/// funcz-runtime checks that the check's message is each op's own.
///
/// ```
/// assert!(funcz_optable::OVERLAP_CHECKED_OPS.contains(&"add_"));
/// assert!(funcz_optable::OVERLAP_CHECKED_OPS.contains(&"index_copy_"));
/// assert!(!funcz_optable::OVERLAP_CHECKED_OPS.contains(&"masked_scatter_"));
/// ```
pub const OVERLAP_CHECKED_OPS: &[&str] = &[
    "add_",
    "sub_",
    "mul_",
    "div_",
    "addcmul_",
    "copy_",
    "add_scaled_",
    "sub_scaled_",
    "pow_",
    "addcdiv_",
    "lerp_",
    "addcmul1_",
    "addcdiv1_",
    "index_copy_",
    "index_add_",
    "index_add_scaled_",
    "scatter_",
    "scatter_add_",
    "index_put_",
];
