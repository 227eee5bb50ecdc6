//! ONNX export (feature `onnx`): [`Graph::to_onnx`] functionalizes the
//! graph ([`Graph::functionalize`] with [`Remove::MutationsAndViews`]) and
//! writes it as an ONNX `ModelProto` (opset [`OPSET`]), so the model is free
//! of mutation and aliasing whatever the traced code did.
//!
//! Mutated inputs follow `torch.export`'s convention: the model returns the
//! new value of each mutated input as an extra output named
//! `{input}_updated`, placed before the user outputs (`output_0`,
//! `output_1`, ...); [`OnnxModel::input_updates`] and the model's
//! `metadata_props` (`funcz.input_update.{output}` = input) say which
//! output updates which input.
//!
//! Every op maps through one table keyed by aten name ([`onnx_ops`]); an
//! op with no entry is an [`ExportError::UnsupportedOp`] naming it.
//!
//! ```
//! use funcz_runtime::{Tensor, trace::Tracer};
//! let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
//! let (_, g) = Tracer::new("f").input("a", &a).run(|| {
//!     a.t().add_(1.0); // mutates the input through a view
//!     a.sum()
//! });
//! let m = g.export_onnx().unwrap();
//! assert_eq!(m.output_names(), vec!["a_1_updated", "output_0"]);
//! assert_eq!(m.input_updates[0].input, "a_1");
//! assert!(!m.bytes.is_empty() && m.bytes == g.to_onnx().unwrap());
//! ```

mod lower;
pub mod proto;

use std::collections::HashSet;

use prost::Message;

use super::error::ExportError;
use super::functionalize::Remove;
use super::graph::{Graph, Ref, Value};
use super::meta::{DType, TensorData, TensorMeta};
use proto::*;

/// The ONNX opset the exporter targets.
pub const OPSET: i64 = 17;
/// The ONNX IR version written (the one of opset 17).
pub const IR_VERSION: i64 = 8;

/// One input or output of an exported model.
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxValue {
    /// Its name in the model.
    pub name: String,
    /// Its shape and dtype.
    pub meta: TensorMeta,
}

/// An output of the model that holds the new value of a mutated input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputUpdate {
    /// The output's name (`{input}_updated`).
    pub output: String,
    /// The input it updates.
    pub input: String,
}

/// An exported model and its signature.
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxModel {
    /// The serialized `ModelProto`.
    pub bytes: Vec<u8>,
    /// The model's inputs, in order (a list input contributes one input per
    /// element, named `xs_1.0`, `xs_1.1`, ...).
    pub inputs: Vec<OnnxValue>,
    /// The model's outputs, in order: the input updates first, then the
    /// graph's returned values.
    pub outputs: Vec<OnnxValue>,
    /// Which outputs update which inputs.
    pub input_updates: Vec<InputUpdate>,
    /// The functional graph that was exported.
    pub graph: Graph,
    /// The model's doc string (what was traced, host reads, input updates).
    pub doc_string: String,
}

impl OnnxModel {
    /// The output names, in order.
    pub fn output_names(&self) -> Vec<&str> {
        self.outputs.iter().map(|o| o.name.as_str()).collect()
    }

    /// The index of the output that updates input `input`, if any.
    pub fn update_of(&self, input: &str) -> Option<usize> {
        let u = self.input_updates.iter().find(|u| u.input == input)?;
        self.outputs.iter().position(|o| o.name == u.output)
    }
}

/// The aten ops the exporter maps to ONNX (every op the runtime records,
/// in-place ops through their functional twins).
pub fn onnx_ops() -> impl Iterator<Item = &'static str> {
    lower::RULES.iter().map(|(op, _)| *op)
}

/// True if the exporter maps `op` (directly, or for an in-place op or view
/// through the functional op that [`Graph::functionalize`] turns it into).
pub fn has_onnx_mapping(op: &str) -> bool {
    if lower::rule(op).is_some() {
        return true;
    }
    use crate::optable::{OpKind, lookup};
    match lookup(op).map(|i| i.kind) {
        Some(OpKind::Inplace { functional }) => lower::rule(functional).is_some(),
        Some(OpKind::InplaceView { .. }) => true,
        _ => matches!(op, "copy_" | "resize_"),
    }
}

pub(crate) fn onnx_dtype(d: DType) -> i32 {
    match d {
        DType::Float32 => data_type::FLOAT,
        DType::Float64 => data_type::DOUBLE,
        DType::Int8 => data_type::INT8,
        DType::Int16 => data_type::INT16,
        DType::Int32 => data_type::INT32,
        DType::Int64 => data_type::INT64,
        DType::UInt8 => data_type::UINT8,
        DType::Bool => data_type::BOOL,
    }
}

/// A `TensorProto` of `data` (row-major) with `dims`, in `dtype`.
pub(crate) fn tensor_proto(
    name: &str,
    dims: &[usize],
    dtype: DType,
    data: &TensorData,
) -> TensorProto {
    let mut raw = Vec::new();
    match (dtype, data) {
        (DType::Float32, TensorData::Float32(v)) => v
            .iter()
            .for_each(|x| raw.extend_from_slice(&x.to_le_bytes())),
        (DType::Float32, d) => d
            .to_f64()
            .iter()
            .for_each(|&x| raw.extend_from_slice(&(x as f32).to_le_bytes())),
        (DType::Float64, d) => d
            .to_f64()
            .iter()
            .for_each(|x| raw.extend_from_slice(&x.to_le_bytes())),
        (DType::Bool, d) => d.to_f64().iter().for_each(|&x| raw.push((x != 0.0) as u8)),
        (int, d) => {
            let ints: Vec<i64> = match d {
                TensorData::Int64(v) => v.clone(),
                other => other.to_f64().iter().map(|&x| x as i64).collect(),
            };
            for x in ints {
                match int {
                    DType::Int8 => raw.extend_from_slice(&(x as i8).to_le_bytes()),
                    DType::UInt8 => raw.extend_from_slice(&(x as u8).to_le_bytes()),
                    DType::Int16 => raw.extend_from_slice(&(x as i16).to_le_bytes()),
                    DType::Int32 => raw.extend_from_slice(&(x as i32).to_le_bytes()),
                    _ => raw.extend_from_slice(&x.to_le_bytes()),
                }
            }
        }
    }
    TensorProto {
        dims: dims.iter().map(|&d| d as i64).collect(),
        data_type: onnx_dtype(dtype),
        name: name.to_string(),
        raw_data: raw,
        ..Default::default()
    }
}

fn value_info(name: &str, meta: &TensorMeta) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: onnx_dtype(meta.dtype),
                shape: Some(TensorShapeProto {
                    dim: meta
                        .shape
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d as i64),
                            denotation: String::new(),
                        })
                        .collect(),
                }),
            }),
            denotation: String::new(),
        }),
        doc_string: String::new(),
    }
}

/// The model-side name of a graph value: its printed name, with a list
/// element `split[1]` written `split.1`.
pub(crate) fn onnx_name(g: &Graph, r: &Ref) -> String {
    let n = g.ref_name(r);
    match n.strip_suffix(']').and_then(|s| s.split_once('[')) {
        Some((base, i)) => format!("{base}.{i}"),
        None => n,
    }
}

impl Graph {
    /// The graph as an ONNX model (feature `onnx`): the bytes of a
    /// `ModelProto`, opset [`OPSET`]. See [`export_onnx`](Self::export_onnx)
    /// for the signature.
    pub fn to_onnx(&self) -> Result<Vec<u8>, ExportError> {
        Ok(self.export_onnx()?.bytes)
    }

    /// Functionalizes the graph and exports it as ONNX, with the model's
    /// signature (inputs, outputs, which outputs update which inputs).
    /// Fails, naming the op and node, on an op with no ONNX mapping, and on
    /// a value whose shape (or a constant whose values) was not recorded.
    pub fn export_onnx(&self) -> Result<OnnxModel, ExportError> {
        let g = self.functionalize(Remove::MutationsAndViews)?;
        let mut cx = lower::Ctx::new(&g);
        let mut inputs = Vec::new();
        for (pi, p) in g.placeholders().iter().enumerate() {
            for e in 0..p.ids.len() {
                let r = Ref::Input {
                    input: pi,
                    index: p.list.then_some(e),
                };
                let meta = cx.meta(&r)?;
                inputs.push(OnnxValue {
                    name: onnx_name(&g, &r),
                    meta,
                });
            }
        }
        for (i, c) in g.constants().iter().enumerate() {
            let r = Ref::Constant(i);
            let meta = cx.meta(&r)?;
            let data = c.data.as_ref().ok_or_else(|| ExportError::Missing {
                value: c.name.clone(),
                what: "values",
            })?;
            cx.inits.push(tensor_proto(
                &onnx_name(&g, &r),
                &meta.shape,
                meta.dtype,
                data,
            ));
        }
        let mut updates: Vec<(String, Ref, usize)> = Vec::new();
        for (ni, n) in g.nodes().iter().enumerate() {
            if g.is_input_writeback(n) {
                let (Some(input), Some(Value::Tensor(src))) = (
                    g.mutated_input(&Ref::Node {
                        node: ni,
                        index: None,
                    }),
                    n.args.get(1),
                ) else {
                    continue;
                };
                let Some(Value::Tensor(Ref::Input { index, .. })) = n.args.first() else {
                    continue;
                };
                let r = Ref::Input {
                    input,
                    index: *index,
                };
                updates.push((onnx_name(&g, &r), *src, ni));
                continue;
            }
            cx.lower_node(ni, n)?;
        }
        let mut outputs = Vec::new();
        let mut input_updates = Vec::new();
        for (input, src, _) in &updates {
            let name = format!("{input}_updated");
            let meta = cx.meta(src)?;
            let from = onnx_name(&g, src);
            cx.node("Identity", vec![from], vec![name.clone()], vec![]);
            input_updates.push(InputUpdate {
                output: name.clone(),
                input: input.clone(),
            });
            outputs.push(OnnxValue { name, meta });
        }
        for (i, r) in g.outputs().iter().enumerate() {
            let name = format!("output_{i}");
            let meta = cx.meta(r)?;
            cx.node(
                "Identity",
                vec![onnx_name(&g, r)],
                vec![name.clone()],
                vec![],
            );
            outputs.push(OnnxValue { name, meta });
        }
        // Every value name must be defined once.
        let mut defined: HashSet<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        for t in &cx.inits {
            if !defined.insert(t.name.as_str()) {
                return Err(ExportError::BadArgs {
                    op: "export".into(),
                    node: t.name.clone(),
                    expected: "a unique value name".into(),
                });
            }
        }
        for n in &cx.nodes {
            for o in &n.output {
                if !defined.insert(o.as_str()) {
                    return Err(ExportError::BadArgs {
                        op: n.op_type.clone(),
                        node: o.clone(),
                        expected: "a unique value name".into(),
                    });
                }
            }
        }
        let mut metadata_props = vec![StringStringEntryProto {
            key: "funcz.graph".into(),
            value: g.to_string(),
        }];
        if !g.host_reads().is_empty() {
            metadata_props.push(StringStringEntryProto {
                key: "funcz.host_reads".into(),
                value: g.host_reads().join(", "),
            });
        }
        for u in &input_updates {
            metadata_props.push(StringStringEntryProto {
                key: format!("funcz.input_update.{}", u.output),
                value: u.input.clone(),
            });
        }
        let reads = if g.host_reads().is_empty() {
            "The traced code read no tensor value on the host.".to_string()
        } else {
            format!(
                "WARNING: the traced code read tensor values on the host ({}): its control \
                 flow may depend on them, and this model is valid only for inputs that take \
                 the same path.",
                g.host_reads().join(", ")
            )
        };
        let doc = format!(
            "Exported by funcz from the traced function `{}`. The trace recorded one path \
             through the program's control flow (as make_fx does): branches and loop counts \
             that depend on tensor values are fixed to the ones taken while tracing. {reads} \
             Mutated inputs are returned as extra outputs (torch.export's convention): {}.",
            g.name(),
            if input_updates.is_empty() {
                "none".to_string()
            } else {
                input_updates
                    .iter()
                    .map(|u| format!("{} updates {}", u.output, u.input))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        let model = ModelProto {
            ir_version: IR_VERSION,
            producer_name: "funcz".into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            domain: String::new(),
            model_version: 1,
            doc_string: doc,
            graph: Some(GraphProto {
                node: std::mem::take(&mut cx.nodes),
                name: g.name().to_string(),
                initializer: std::mem::take(&mut cx.inits),
                doc_string: String::new(),
                input: inputs
                    .iter()
                    .map(|v| value_info(&v.name, &v.meta))
                    .collect(),
                output: outputs
                    .iter()
                    .map(|v| value_info(&v.name, &v.meta))
                    .collect(),
                value_info: Vec::new(),
            }),
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: OPSET,
            }],
            metadata_props,
        };
        let doc_string = model.doc_string.clone();
        Ok(OnnxModel {
            doc_string,
            bytes: model.encode_to_vec(),
            inputs,
            outputs,
            input_updates,
            graph: g,
        })
    }
}
