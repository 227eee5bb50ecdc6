//! Op tracing: record every op executed while a trace is active and turn it
//! into a graph (the `make_fx` of funcz).
//!
//! ```
//! use funcz_runtime::{Tensor, trace::trace};
//! let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
//! // No op runs here, so the graph just returns its input.
//! let (_, g) = trace("forward", &[("a", &a)], || &a);
//! assert_eq!(g.to_string(), "fn forward(a_1) {\n    return a_1;\n}\n");
//! assert!(g.is_functional() && g.is_view_free());
//! ```
//!
//! - [`trace`] / [`Tracer`] run a closure with recording on and build a
//!   [`Graph`].
//! - [`Graph::from_nodes`] builds a graph from recorded [`Node`]s (pure
//!   data), e.g. by hand.
//! - `Display` prints it in the seed docs' style, one op per line, each
//!   containing `aten::NAME(`; `Graph::to_json` (feature `serde`) and
//!   [`Graph::to_dot`] export it.
//! - Every value carries its shape and dtype ([`TensorMeta`], see
//!   [`Graph::meta`]); constants carry their values ([`TensorData`]).

mod api;
mod error;
mod export;
mod functionalize;
mod graph;
mod meta;
#[cfg(feature = "onnx")]
pub mod onnx;
mod print;
mod record;
#[cfg(feature = "serde")]
mod serde_impl;

pub use api::{ExampleValue, Probe, TraceInput, TraceOutput, TracedRun, Tracer, trace};
pub use error::ExportError;
#[cfg(feature = "serde")]
pub use export::JsonError;
pub use functionalize::Remove;
pub use graph::{Constant, Graph, GraphNode, InputSpec, Placeholder, Ref, Value};
pub use meta::{DType, TensorData, TensorMeta};
#[cfg(feature = "onnx")]
pub use onnx::{InputUpdate, OnnxModel, OnnxValue, has_onnx_mapping, onnx_ops};
pub use record::{
    Arg, Node, Outputs, ToArg, is_recording, note_host_read, start_recording, stop_recording,
    untraced,
};
pub(crate) use record::{op, record_as_functional};
