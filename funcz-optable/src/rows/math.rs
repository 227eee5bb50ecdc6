//! Math, normalization and shape ops real code uses (`softmax`, `cat`,
//! `var`, `topk`, ...).
//!
//! Rows are keyed by the Rust method name; where it differs from the aten
//! name the op is traced as, the method's docs say so: `add_scaled(_)` and
//! `sub_scaled(_)` are `add(_)`/`sub(_)` with `alpha`, `addcmul1(_)` and
//! `addcdiv1(_)` are `addcmul(_)`/`addcdiv(_)` with `value = 1`,
//! `max_dim`/`min_dim` are `max`/`min` along a dim, `sum_dims`/`mean_dims`
//! are `sum`/`mean` over a dim list, `var_dims`/`std_dims` are
//! `var`/`std` with dims, `vector_norm` is `linalg_vector_norm`,
//! `squeeze_dims(_copy)` is `squeeze(_copy)` with a dim list (the table's
//! `TRACED_AS` lists them all).

use super::*;

/// The rows of this group.
pub const OPS: &[OpInfo] = &[
    // views
    v("squeeze_dims", "squeeze", "squeeze_dims_copy", Reshape),
    // elementwise
    f("rsqrt"),
    f("reciprocal"),
    f("sin"),
    f("cos"),
    f("erf"),
    f("floor"),
    f("round"),
    f("gelu"),
    f("silu"),
    f("softplus"),
    f("relu6"),
    f("hardtanh"),
    f("clamp_min"),
    f("clamp_max"),
    f("sign"),
    f("maximum"),
    f("minimum"),
    f("add_scaled"),
    f("sub_scaled"),
    f("addcmul1"),
    f("addcdiv1"),
    // reductions and scans
    f("max"),
    f("min"),
    f("max_dim"),
    f("min_dim"),
    f("argmax"),
    f("argmin"),
    f("amax"),
    f("amin"),
    f("sum_dims"),
    f("mean_dims"),
    f("var"),
    f("var_dims"),
    f("std"),
    f("std_dims"),
    f("var_mean"),
    f("vector_norm"),
    f("norm"),
    f("cumsum"),
    f("softmax"),
    f("log_softmax"),
    // shape ops, sorting, constructors
    f("cat"),
    f("stack"),
    f("roll"),
    f("flip"),
    f("repeat"),
    f("tril"),
    f("triu"),
    f("squeeze_dims_copy"),
    f("sort"),
    f("topk"),
    f("empty"),
    f("empty_like"),
    // in-place data mutation
    ip("rsqrt_", "rsqrt"),
    ip("reciprocal_", "reciprocal"),
    ip("sin_", "sin"),
    ip("cos_", "cos"),
    ip("erf_", "erf"),
    ip("floor_", "floor"),
    ip("round_", "round"),
    ip("hardtanh_", "hardtanh"),
    ip("clamp_min_", "clamp_min"),
    ip("clamp_max_", "clamp_max"),
    ip("sign_", "sign"),
    ip("add_scaled_", "add_scaled"),
    ip("sub_scaled_", "sub_scaled"),
    ip("addcmul1_", "addcmul1"),
    ip("addcdiv1_", "addcdiv1"),
    ip("cumsum_", "cumsum"),
    ip("tril_", "tril"),
    ip("triu_", "triu"),
];
