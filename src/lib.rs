#![doc = include_str!("../README.md")]
//!
//! # API at a glance
//!
//! - [`functionalize`]: the attribute, its two modes and an example.
//! - [`Tensor`]: strided tensors with PyTorch's eager aliasing semantics;
//!   its page starts with its methods by topic (creation, views, in-place
//!   ops, reductions, ndarray interop, fallible `try_*` twins).
//! - [`trace`]: record what ran as a graph ([`trace::Tracer`]), print it,
//!   export it as JSON or Graphviz.
//! - [`Element`] and [`FloatElement`]: the dtypes (`f32`, `f64`, `i32`,
//!   `i64`).
//! - [`Error`]: what the `try_*` methods return.
//! - [`ndarray`]: the ndarray crate funcz converts from and to.

pub use funcz_macros::functionalize;
pub use funcz_runtime::{
    AsI64, Element, Error, FloatElement, IntoShape, Layout, Operand, Result, Tensor, TensorId,
};

/// The ndarray crate funcz converts from and to, re-exported so that your
/// arrays and funcz's are the same type whatever version you depend on.
///
/// ```
/// use funcz::Tensor;
/// use funcz::ndarray::{Array2, array};
///
/// let t = Tensor::from(array![[1.0f32, 2.0], [3.0, 4.0]]);
/// let back = Array2::try_from(&t.t()).unwrap();
/// assert_eq!(back, array![[1.0, 3.0], [2.0, 4.0]]);
/// ```
pub use funcz_runtime::ndarray;

/// Op tracing: run code with recording on and get the ops it ran as a
/// [`Graph`](trace::Graph) (the `make_fx` of funcz).
///
/// ```
/// use funcz::Tensor;
/// use funcz::trace::Tracer;
///
/// let a = Tensor::<f32>::ones(&[2]);
/// let (out, graph) = Tracer::new("forward").input("a", &a).run(|| &a * 2.0);
/// assert_eq!(out.to_vec(), vec![2.0, 2.0]);
/// assert_eq!(graph.ops(), vec!["mul"]);
/// assert_eq!(
///     graph.to_string(),
///     "fn forward(a_1) {\n    let mul = aten::mul(a_1, 2.0);\n    return mul;\n}\n"
/// );
/// ```
///
/// - [`Tracer`](trace::Tracer) (or the [`trace()`](trace::trace) function)
///   runs a closure and builds the graph;
/// - a [`Graph`](trace::Graph) prints one op per line (`Display`), exports
///   itself (`to_json` with the `serde` feature, `to_onnx` with `onnx`,
///   [`to_dot`](trace::Graph::to_dot)) and answers questions
///   ([`ops`](trace::Graph::ops), [`has_mutations`](trace::Graph::has_mutations),
///   [`has_views`](trace::Graph::has_views));
/// - [`untraced`](trace::untraced) runs code without recording.
pub mod trace {
    /// JSON (de)serialization errors of `Graph::from_json` (feature `serde`).
    #[cfg(feature = "serde")]
    pub use funcz_runtime::trace::JsonError;
    pub use funcz_runtime::trace::{
        Arg, Constant, DType, ExampleValue, ExportError, Graph, GraphNode, InputSpec, Node,
        Placeholder, Probe, Ref, Remove, TensorData, TensorMeta, TraceInput, TraceOutput,
        TracedRun, Tracer, Value, is_recording, note_host_read, trace, untraced,
    };
    /// ONNX export (feature `onnx`): `Graph::to_onnx` and its model.
    #[cfg(feature = "onnx")]
    pub use funcz_runtime::trace::{InputUpdate, OnnxModel, OnnxValue, has_onnx_mapping, onnx_ops};

    // The recording primitives ops are built from: public for the other
    // funcz crates, not part of the facade's API.
    #[doc(hidden)]
    pub use funcz_runtime::trace::{Outputs, ToArg, start_recording, stop_recording};
}

/// What the code `#[functionalize]` generates calls: not a stable API.
/// Expansions name it as `::funcz::rt::...`.
#[doc(hidden)]
pub use funcz_runtime::rt;

/// Everything generated code and the other funcz crates may need, in one
/// place (serde's and thiserror's `__private` convention): not a stable
/// API, hidden from the docs.
#[doc(hidden)]
pub mod __private {
    pub use funcz_runtime::*;
}

/// The examples of `#[functionalize]`'s own documentation, run here as
/// doctests (the macro crate cannot depend on funcz to run them itself).
#[cfg(doctest)]
#[doc = include_str!("../funcz-macros/src/functionalize.md")]
pub struct FunctionalizeDocExamples;
