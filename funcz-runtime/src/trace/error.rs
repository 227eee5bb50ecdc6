//! Why a graph could not be functionalized or exported.

use std::fmt;

/// Why [`Graph::functionalize`](super::Graph::functionalize) or the ONNX
/// export refused a graph. The message names the op and the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportError {
    /// An op the pass or the exporter has no rule for.
    UnsupportedOp {
        /// The aten op name.
        op: String,
        /// The node's name in the graph.
        node: String,
        /// What is missing.
        reason: String,
    },
    /// A value whose shape or dtype was not recorded (a graph built by hand
    /// without shapes), or a constant whose values were not captured.
    Missing {
        /// The value's name in the graph.
        value: String,
        /// What is missing (`shape`, `values`).
        what: &'static str,
    },
    /// A node whose arguments do not have the form the op records.
    BadArgs {
        /// The aten op name.
        op: String,
        /// The node's name.
        node: String,
        /// What was expected.
        expected: String,
    },
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::UnsupportedOp { op, node, reason } => {
                write!(f, "funcz: export: aten::{op} (node `{node}`): {reason}")
            }
            ExportError::Missing { value, what } => write!(
                f,
                "funcz: export: the {what} of `{value}` were not recorded (trace it with \
                 funcz_runtime::trace, or Tracer::capture a constant)"
            ),
            ExportError::BadArgs { op, node, expected } => {
                write!(
                    f,
                    "funcz: export: aten::{op} (node `{node}`): expected {expected}"
                )
            }
        }
    }
}

impl std::error::Error for ExportError {}
