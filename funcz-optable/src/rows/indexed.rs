//! Masks, index tensors and the indexed reads and writes (`masked_fill_`, `index_put_`, `scatter_`, ...).

use super::*;

/// The rows of this group.
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
    f("where_self"),
    f("logical_and"),
    f("logical_or"),
    f("logical_xor"),
    f("logical_not"),
    f("any"),
    f("all"),
    f("any_dim"),
    f("all_dim"),
    // indexed reads
    f("index_select"),
    f("gather"),
    f("take"),
    f("nonzero"),
    f("i_copy"),
    // indexed writes: the functional twins
    f("masked_fill"),
    f("masked_scatter"),
    f("index_copy"),
    f("index_add"),
    f("index_fill"),
    f("index_put"),
    f("scatter"),
    f("scatter_add"),
    // ... and the in-place forms
    ip("masked_fill_", "masked_fill"),
    ip("masked_scatter_", "masked_scatter"),
    ip("index_copy_", "index_copy"),
    ip("index_add_", "index_add"),
    ip("index_fill_", "index_fill"),
    ip("index_put_", "index_put"),
    ip("scatter_", "scatter"),
    ip("scatter_add_", "scatter_add"),
    // range indexing: a chain of `select`/`slice` views (see
    // `ViewMeta::I`), written back through the composed scatters.
    v("i", "slice", "i_copy", SliceScatter),
];
