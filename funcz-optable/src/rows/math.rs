//! Math, normalization and shape ops real code uses (`softmax`, `cat`, `var`, `topk`, ...).

#[allow(unused_imports)]
use super::*;

/// The rows of this group.
pub const OPS: &[OpInfo] = &[];
