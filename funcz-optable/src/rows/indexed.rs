//! Masks, index tensors and the indexed reads and writes (`masked_fill_`, `index_put_`, `scatter_`, ...).

use super::*;

/// The rows of this group.
///
/// Every functional row must have an ONNX mapping under its traced name
/// (`funcz-runtime/tests/onnx.rs`). The casts (`to_dtype`, `float`,
/// `double`, `long`, `int`, `bool`) are traced as aten `_to_copy` and
/// `where_self` as `where` (see [`TRACED_AS`](crate::TRACED_AS)). The casts
/// are functional: funcz's casts always return a fresh tensor, also to the
/// same dtype (aten `_to_copy`; PyTorch's `x.float()` of a float tensor
/// returns `x` itself, funcz's a copy). `any_dim`/`all_dim` and `i_copy` are
/// not rows yet: the macro treats them as calls it cannot see into
/// (checked at run time).
pub const OPS: &[OpInfo] = &[
    // casts (aten `_to_copy`)
    f("to_dtype"),
    f("float"),
    f("double"),
    f("long"),
    f("int"),
    f("bool"),
    // comparisons and masks
    f("lt"),
    f("le"),
    f("gt"),
    f("ge"),
    f("eq"),
    f("ne"),
    f("logical_and"),
    f("logical_or"),
    f("logical_xor"),
    f("logical_not"),
    f("any"),
    f("all"),
    f("where_self"),
    // indexed reads
    f("index_select"),
    f("gather"),
    f("take"),
    f("nonzero"),
    // indexed writes: the functional twins
    f("masked_fill"),
    f("masked_scatter"),
    f("index_copy"),
    f("index_add"),
    f("index_add_scaled"),
    f("index_fill"),
    f("index_put"),
    f("scatter"),
    f("scatter_add"),
    // ... and the in-place forms
    ip("masked_fill_", "masked_fill"),
    ip("masked_scatter_", "masked_scatter"),
    ip("index_copy_", "index_copy"),
    ip("index_add_", "index_add"),
    ip("index_add_scaled_", "index_add_scaled"),
    ip("index_fill_", "index_fill"),
    ip("index_put_", "index_put"),
    ip("scatter_", "scatter"),
    ip("scatter_add_", "scatter_add"),
    // range indexing: a chain of `select`/`slice` views (see
    // `ViewMeta::I`), written back through the composed scatters.
    v("i", "slice", "slice_copy", SliceScatter),
];
