//! Masks, index tensors and the indexed reads and writes (`masked_fill_`, `index_put_`, `scatter_`, ...).

#[allow(unused_imports)]
use super::*;

/// The rows of this group.
pub const OPS: &[OpInfo] = &[];
