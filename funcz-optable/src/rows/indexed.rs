//! Masks, index tensors and the indexed reads and writes (`masked_fill_`, `index_put_`, `scatter_`, ...).

use super::*;

/// The rows of this group.
///
/// Every functional row must have an ONNX mapping under its own name
/// (`funcz-runtime/tests/onnx.rs`), so the methods recorded under another
/// aten name (`to_dtype`, `float`, `long`, ... as `_to_copy`; `where_self`
/// as `where`; `any_dim`/`all_dim` as `any`/`all`; `i_copy` as its
/// `select_copy`/`slice_copy` chain) and those the exporter does not map
/// (`take`, `nonzero`) are not rows yet: the macro
/// treats them as calls it cannot see into (checked at run time).
pub const OPS: &[OpInfo] = &[
    // casts (aten `_to_copy`)
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
    // indexed reads
    f("index_select"),
    f("gather"),
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
