//! The op table of the ONNX exporter: one rule per aten op name, and the
//! lowering context the rules write into.
//!
//! To map a new op, add a row to [`RULES`]: `("op", Rule::Unary("OnnxOp"))`
//! for an elementwise op of one tensor, `Rule::Binary` for one of two
//! operands (tensor or scalar, broadcasting), or `Rule::Custom(f)` with a
//! function that reads the node's arguments through [`Ctx`] and emits ONNX
//! nodes whose final outputs are the node's output names.

use super::proto::{AttributeProto, NodeProto, TensorProto, attribute_type};
use super::{onnx_dtype, onnx_name, tensor_proto};
use crate::tensor::Tensor;
use crate::trace::error::ExportError;
use crate::trace::graph::{Graph, GraphNode, Ref, Value};
use crate::trace::meta::{DType, TensorData, TensorMeta};

/// How one aten op becomes ONNX.
#[derive(Clone, Copy)]
pub(crate) enum Rule {
    /// `Op(x)`.
    Unary(&'static str),
    /// `Op(a, b)`, either operand a tensor or a scalar (made a constant of
    /// the tensor operand's dtype).
    Binary(&'static str),
    /// Anything else.
    Custom(fn(&mut Ctx, &At) -> Result<(), ExportError>),
}

/// The exporter's table, keyed by aten op name.
pub(crate) const RULES: &[(&str, Rule)] = &[
    // elementwise
    ("neg", Rule::Unary("Neg")),
    ("abs", Rule::Unary("Abs")),
    ("exp", Rule::Unary("Exp")),
    ("log", Rule::Unary("Log")),
    ("sqrt", Rule::Unary("Sqrt")),
    ("relu", Rule::Unary("Relu")),
    ("sigmoid", Rule::Unary("Sigmoid")),
    ("tanh", Rule::Unary("Tanh")),
    ("add", Rule::Custom(add_sub)),
    ("sub", Rule::Custom(add_sub)),
    ("mul", Rule::Binary("Mul")),
    ("div", Rule::Binary("Div")),
    ("pow", Rule::Binary("Pow")),
    ("clamp", Rule::Custom(clamp)),
    ("addcmul", Rule::Custom(addcmul)),
    ("addcdiv", Rule::Custom(addcdiv)),
    ("lerp", Rule::Custom(lerp)),
    ("matmul", Rule::Custom(matmul)),
    // reductions
    ("sum", Rule::Custom(sum)),
    ("sum_dim", Rule::Custom(sum)),
    ("mean", Rule::Custom(mean)),
    ("mean_dim", Rule::Custom(mean)),
    // constructors and fills
    ("zeros", Rule::Custom(constructor)),
    ("ones", Rule::Custom(constructor)),
    ("full", Rule::Custom(constructor)),
    ("arange", Rule::Custom(constructor)),
    ("eye", Rule::Custom(constructor)),
    ("rand", Rule::Custom(constructor)),
    ("randn", Rule::Custom(constructor)),
    ("zeros_like", Rule::Custom(fill_like)),
    ("ones_like", Rule::Custom(fill_like)),
    ("fill", Rule::Custom(fill_like)),
    ("zero", Rule::Custom(fill_like)),
    ("copy", Rule::Custom(copy)),
    ("clone", Rule::Custom(identity)),
    ("contiguous", Rule::Custom(identity)),
    ("alias", Rule::Custom(identity)),
    ("alias_copy", Rule::Custom(identity)),
    ("detach", Rule::Custom(identity)),
    ("detach_copy", Rule::Custom(identity)),
    ("resize", Rule::Custom(resize)),
    // views and their copies
    ("view", Rule::Custom(reshape)),
    ("view_copy", Rule::Custom(reshape)),
    ("_unsafe_view", Rule::Custom(reshape)),
    ("reshape", Rule::Custom(reshape)),
    ("flatten", Rule::Custom(reshape)),
    ("squeeze", Rule::Custom(reshape)),
    ("squeeze_copy", Rule::Custom(reshape)),
    ("squeeze_dim_copy", Rule::Custom(reshape)),
    ("unsqueeze", Rule::Custom(reshape)),
    ("unsqueeze_copy", Rule::Custom(reshape)),
    ("t", Rule::Custom(transpose)),
    ("t_copy", Rule::Custom(transpose)),
    ("transpose", Rule::Custom(transpose)),
    ("transpose_copy", Rule::Custom(transpose)),
    ("permute", Rule::Custom(transpose)),
    ("permute_copy", Rule::Custom(transpose)),
    ("expand", Rule::Custom(expand)),
    ("expand_copy", Rule::Custom(expand)),
    ("slice", Rule::Custom(slice)),
    ("slice_copy", Rule::Custom(slice)),
    ("narrow", Rule::Custom(narrow)),
    ("narrow_copy", Rule::Custom(narrow)),
    ("select", Rule::Custom(select)),
    ("select_copy", Rule::Custom(select)),
    ("diagonal", Rule::Custom(gather_view)),
    ("diagonal_copy", Rule::Custom(gather_view)),
    ("unfold", Rule::Custom(gather_view)),
    ("unfold_copy", Rule::Custom(gather_view)),
    ("as_strided", Rule::Custom(gather_view)),
    ("as_strided_copy", Rule::Custom(gather_view)),
    ("split", Rule::Custom(split)),
    ("split_copy", Rule::Custom(split)),
    ("chunk", Rule::Custom(split)),
    ("chunk_copy", Rule::Custom(split)),
    ("unbind", Rule::Custom(unbind)),
    ("unbind_copy", Rule::Custom(unbind)),
    // elementwise (ops issue)
    ("rsqrt", Rule::Custom(rsqrt)),
    ("reciprocal", Rule::Unary("Reciprocal")),
    ("sin", Rule::Unary("Sin")),
    ("cos", Rule::Unary("Cos")),
    ("erf", Rule::Unary("Erf")),
    ("floor", Rule::Unary("Floor")),
    ("ceil", Rule::Unary("Ceil")),
    ("round", Rule::Unary("Round")),
    ("sign", Rule::Unary("Sign")),
    ("gelu", Rule::Custom(gelu)),
    ("silu", Rule::Custom(silu)),
    ("softplus", Rule::Custom(softplus)),
    ("relu6", Rule::Custom(clip_fixed)),
    ("hardtanh", Rule::Custom(clip_fixed)),
    ("clamp_min", Rule::Custom(clip_fixed)),
    ("clamp_max", Rule::Custom(clip_fixed)),
    ("maximum", Rule::Binary("Max")),
    ("minimum", Rule::Binary("Min")),
    ("eq", Rule::Custom(compare)),
    ("ne", Rule::Custom(compare)),
    ("lt", Rule::Custom(compare)),
    ("le", Rule::Custom(compare)),
    ("gt", Rule::Custom(compare)),
    ("ge", Rule::Custom(compare)),
    ("logical_not", Rule::Custom(logical)),
    ("logical_and", Rule::Custom(logical)),
    ("logical_or", Rule::Custom(logical)),
    ("logical_xor", Rule::Custom(logical)),
    ("where", Rule::Custom(where_)),
    ("masked_fill", Rule::Custom(masked_fill)),
    ("masked_scatter", Rule::Custom(masked_scatter)),
    ("to", Rule::Custom(cast)),
    ("_to_copy", Rule::Custom(cast)),
    ("empty", Rule::Custom(constructor)),
    ("empty_like", Rule::Custom(fill_like)),
    // softmax, reductions over dims, scans (ops issue)
    ("softmax", Rule::Custom(softmax)),
    ("_softmax", Rule::Custom(softmax)),
    ("log_softmax", Rule::Custom(softmax)),
    ("_log_softmax", Rule::Custom(softmax)),
    ("amax", Rule::Custom(reduce_attr)),
    ("amin", Rule::Custom(reduce_attr)),
    ("prod", Rule::Custom(reduce_attr)),
    ("max", Rule::Custom(max_min)),
    ("min", Rule::Custom(max_min)),
    ("argmax", Rule::Custom(arg_max_min)),
    ("argmin", Rule::Custom(arg_max_min)),
    ("any", Rule::Custom(any_all)),
    ("all", Rule::Custom(any_all)),
    ("cumsum", Rule::Custom(cumsum)),
    // joins and index maps (ops issue)
    ("cat", Rule::Custom(cat)),
    ("stack", Rule::Custom(cat)),
    ("flip", Rule::Custom(index_map)),
    ("roll", Rule::Custom(index_map)),
    ("repeat", Rule::Custom(index_map)),
    ("tril", Rule::Custom(tri)),
    ("triu", Rule::Custom(tri)),
    // variance, norms, sorting (ops issue, part 3)
    ("var", Rule::Custom(var_std)),
    ("std", Rule::Custom(var_std)),
    ("var_mean", Rule::Custom(var_std)),
    ("linalg_vector_norm", Rule::Custom(vector_norm)),
    ("norm", Rule::Custom(vector_norm)),
    ("sort", Rule::Custom(sort_topk)),
    ("topk", Rule::Custom(sort_topk)),
    // Op-table rows whose Rust method is traced under another aten name
    // (`add_scaled` records `add`, ...): the same rules, so a graph that
    // names them lowers too.
    ("add_scaled", Rule::Custom(add_sub)),
    ("sub_scaled", Rule::Custom(add_sub)),
    ("addcmul1", Rule::Custom(addcmul)),
    ("addcdiv1", Rule::Custom(addcdiv)),
    ("max_dim", Rule::Custom(max_min)),
    ("min_dim", Rule::Custom(max_min)),
    ("sum_dims", Rule::Custom(sum)),
    ("mean_dims", Rule::Custom(mean)),
    ("var_dims", Rule::Custom(var_std)),
    ("std_dims", Rule::Custom(var_std)),
    ("vector_norm", Rule::Custom(vector_norm)),
    ("squeeze_dims_copy", Rule::Custom(reshape)),
    // indexed reads and writes (ops issue)
    ("index_select", Rule::Custom(index_select)),
    ("gather", Rule::Custom(gather)),
    ("scatter", Rule::Custom(scatter_elements)),
    ("scatter_add", Rule::Custom(scatter_elements)),
    ("index_copy", Rule::Custom(index_write)),
    ("index_add", Rule::Custom(index_write)),
    ("index_fill", Rule::Custom(index_write)),
    ("index_put", Rule::Custom(index_put)),
    ("take", Rule::Custom(take)),
    ("nonzero", Rule::Custom(nonzero)),
    // (op-table rows traced under another name: casts as `_to_copy`,
    // `where_self` as `where`)
    ("to_dtype", Rule::Custom(cast)),
    ("float", Rule::Custom(cast)),
    ("double", Rule::Custom(cast)),
    ("long", Rule::Custom(cast)),
    ("int", Rule::Custom(cast)),
    ("bool", Rule::Custom(cast)),
    ("where_self", Rule::Custom(where_)),
    // scatters
    ("slice_scatter", Rule::Custom(scatter)),
    ("select_scatter", Rule::Custom(scatter)),
    ("diagonal_scatter", Rule::Custom(scatter)),
    ("as_strided_scatter", Rule::Custom(scatter)),
];

/// The rule for `op`.
pub(crate) fn rule(op: &str) -> Option<Rule> {
    RULES.iter().find(|(o, _)| *o == op).map(|(_, r)| *r)
}

/// The node being lowered.
pub(crate) struct At<'a> {
    pub node: &'a GraphNode,
    /// The model-side names of its outputs.
    pub outs: Vec<String>,
    /// Their shapes and dtypes.
    pub metas: Vec<TensorMeta>,
}

impl At<'_> {
    fn out(&self) -> &str {
        &self.outs[0]
    }

    fn meta(&self) -> &TensorMeta {
        &self.metas[0]
    }

    fn bad(&self, expected: &str) -> ExportError {
        ExportError::BadArgs {
            op: self.node.op.to_string(),
            node: self.node.name.clone(),
            expected: expected.to_string(),
        }
    }

    fn int(&self, i: usize) -> Result<i64, ExportError> {
        match self.node.args.get(i) {
            Some(Value::Int(v)) => Ok(*v),
            _ => Err(self.bad(&format!("an integer argument {i}"))),
        }
    }

    fn ints(&self, i: usize) -> Result<Vec<i64>, ExportError> {
        match self.node.args.get(i) {
            Some(Value::Ints(v)) => Ok(v.clone()),
            Some(Value::Int(v)) => Ok(vec![*v]),
            _ => Err(self.bad(&format!("an integer list argument {i}"))),
        }
    }

    fn tensor(&self, i: usize) -> Result<Ref, ExportError> {
        match self.node.args.get(i) {
            Some(Value::Tensor(r)) => Ok(*r),
            _ => Err(self.bad(&format!("a tensor argument {i}"))),
        }
    }
}

/// The model under construction.
pub(crate) struct Ctx<'g> {
    pub g: &'g Graph,
    pub nodes: Vec<NodeProto>,
    pub inits: Vec<TensorProto>,
    counter: usize,
    node_name: String,
}

fn attr_i(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        r#type: attribute_type::INT,
        ..Default::default()
    }
}

fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        s: s.as_bytes().to_vec(),
        r#type: attribute_type::STRING,
        ..Default::default()
    }
}

fn attr_ints(name: &str, ints: Vec<i64>) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints,
        r#type: attribute_type::INTS,
        ..Default::default()
    }
}

fn norm_dim(d: i64, rank: usize) -> i64 {
    if d < 0 { d + rank.max(1) as i64 } else { d }
}

impl<'g> Ctx<'g> {
    pub fn new(g: &'g Graph) -> Self {
        Ctx {
            g,
            nodes: Vec::new(),
            inits: Vec::new(),
            counter: 0,
            node_name: String::new(),
        }
    }

    pub fn meta(&self, r: &Ref) -> Result<TensorMeta, ExportError> {
        self.g.meta(r).cloned().ok_or_else(|| ExportError::Missing {
            value: self.g.ref_name(r),
            what: "shape and dtype",
        })
    }

    /// A fresh value name, derived from the node being lowered.
    fn tmp(&mut self) -> String {
        self.counter += 1;
        format!("{}.t{}", self.node_name, self.counter)
    }

    pub fn node(
        &mut self,
        op_type: &str,
        input: Vec<String>,
        output: Vec<String>,
        attribute: Vec<AttributeProto>,
    ) {
        self.counter += 1;
        self.nodes.push(NodeProto {
            input,
            output,
            name: format!("{}.{}{}", self.node_name, op_type, self.counter),
            op_type: op_type.into(),
            attribute,
            ..Default::default()
        });
    }

    /// `op_type(inputs)` into a fresh value; returns its name.
    fn tmp_node(
        &mut self,
        op_type: &str,
        input: Vec<String>,
        attrs: Vec<AttributeProto>,
    ) -> String {
        let out = self.tmp();
        self.node(op_type, input, vec![out.clone()], attrs);
        out
    }

    /// A constant tensor; returns its name.
    fn constant(&mut self, dims: &[usize], dtype: DType, data: TensorData) -> String {
        let name = self.tmp();
        self.inits.push(tensor_proto(&name, dims, dtype, &data));
        name
    }

    fn const_i64(&mut self, v: Vec<i64>) -> String {
        let n = v.len();
        self.constant(&[n], DType::Int64, TensorData::Int64(v))
    }

    fn scalar_i64(&mut self, v: i64) -> String {
        self.constant(&[], DType::Int64, TensorData::Int64(vec![v]))
    }

    /// A rank-0 constant `v` in `dtype`.
    fn scalar(&mut self, v: f64, dtype: DType) -> String {
        let data = match dtype {
            DType::Float32 => TensorData::Float32(vec![v as f32]),
            DType::Float64 => TensorData::Float64(vec![v]),
            DType::Bool => TensorData::Bool(vec![v != 0.0]),
            _ => TensorData::Int64(vec![v as i64]),
        };
        self.constant(&[], dtype, data)
    }

    /// The model-side name of argument `i`: a tensor's name, or a scalar as
    /// a constant of `dtype`.
    fn operand(&mut self, at: &At, i: usize, dtype: DType) -> Result<String, ExportError> {
        match at.node.args.get(i) {
            Some(Value::Tensor(r)) => Ok(onnx_name(self.g, r)),
            Some(Value::Float(x)) => Ok(self.scalar(*x, dtype)),
            Some(Value::Int(x)) => Ok(self.scalar(*x as f64, dtype)),
            Some(Value::Bool(b)) => Ok(self.scalar(*b as i64 as f64, dtype)),
            _ => Err(at.bad(&format!("a tensor or scalar argument {i}"))),
        }
    }

    /// The dtype of the first tensor argument (else the output's).
    fn operand_dtype(&self, at: &At) -> DType {
        at.node
            .input_refs()
            .first()
            .and_then(|r| self.g.meta(r))
            .map(|m| m.dtype)
            .unwrap_or(at.meta().dtype)
    }

    /// Lowers graph node number `ni`.
    pub fn lower_node(&mut self, ni: usize, n: &GraphNode) -> Result<(), ExportError> {
        let rule = rule(n.op).ok_or_else(|| ExportError::UnsupportedOp {
            op: n.op.to_string(),
            node: n.name.clone(),
            reason: "no ONNX mapping for this op".into(),
        })?;
        let outs: Vec<String> = (0..n.outputs.len())
            .map(|i| onnx_name(self.g, &n.output_ref(ni, i)))
            .collect();
        let metas = (0..n.outputs.len())
            .map(|i| self.meta(&n.output_ref(ni, i)))
            .collect::<Result<Vec<_>, _>>()?;
        let at = At {
            node: n,
            outs,
            metas,
        };
        self.node_name = n.name.clone();
        self.counter = 0;
        match rule {
            Rule::Unary(op) => {
                let x = onnx_name(self.g, &at.tensor(0)?);
                self.node(op, vec![x], at.outs.clone(), vec![]);
            }
            Rule::Binary(op) => {
                let dt = self.operand_dtype(&at);
                let a = self.operand(&at, 0, dt)?;
                let b = self.operand(&at, 1, dt)?;
                self.node(op, vec![a, b], at.outs.clone(), vec![]);
            }
            Rule::Custom(f) => f(self, &at)?,
        }
        Ok(())
    }

    /// `Reshape(x, shape)` into `out`.
    fn reshape_to(&mut self, x: String, shape: &[usize], out: String) {
        let s = self.const_i64(shape.iter().map(|&d| d as i64).collect());
        self.node("Reshape", vec![x, s], vec![out], vec![]);
    }

    /// `x` flattened to one dimension.
    fn flat(&mut self, x: String) -> String {
        let s = self.const_i64(vec![-1]);
        self.tmp_node("Reshape", vec![x, s], vec![])
    }
}

fn identity(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    cx.node("Identity", vec![x], at.outs.clone(), vec![]);
    Ok(())
}

fn clamp(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let dt = at.meta().dtype;
    let mut inputs = vec![x];
    for i in 1..3 {
        match at.node.args.get(i) {
            Some(Value::None) | None => inputs.push(String::new()),
            Some(_) => inputs.push(cx.operand(at, i, dt)?),
        }
    }
    while inputs.last().is_some_and(String::is_empty) {
        inputs.pop();
    }
    cx.node("Clip", inputs, at.outs.clone(), vec![]);
    Ok(())
}

/// `self + value * t1 (op) t2`.
fn addc(cx: &mut Ctx, at: &At, op: &str) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let x = cx.operand(at, 0, dt)?;
    let t1 = cx.operand(at, 1, dt)?;
    let t2 = cx.operand(at, 2, dt)?;
    let v = cx.operand(at, 3, dt)?;
    let vt1 = cx.tmp_node("Mul", vec![v, t1], vec![]);
    let q = cx.tmp_node(op, vec![vt1, t2], vec![]);
    cx.node("Add", vec![x, q], at.outs.clone(), vec![]);
    Ok(())
}

fn addcmul(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    addc(cx, at, "Mul")
}

fn addcdiv(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    addc(cx, at, "Div")
}

/// `self + weight * (end - self)`.
fn lerp(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let s = cx.operand(at, 0, dt)?;
    let e = cx.operand(at, 1, dt)?;
    let w = cx.operand(at, 2, dt)?;
    let d = cx.tmp_node("Sub", vec![e, s.clone()], vec![]);
    let wd = cx.tmp_node("Mul", vec![w, d], vec![]);
    cx.node("Add", vec![s, wd], at.outs.clone(), vec![]);
    Ok(())
}

fn matmul(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let a = onnx_name(cx.g, &at.tensor(0)?);
    let b = onnx_name(cx.g, &at.tensor(1)?);
    cx.node("MatMul", vec![a, b], at.outs.clone(), vec![]);
    Ok(())
}

/// The reduced axes and keepdim of `sum`/`mean`: all axes when no dims.
fn reduce_axes(cx: &Ctx, at: &At) -> Result<(Vec<i64>, bool), ExportError> {
    let x = at.tensor(0)?;
    let rank = cx.meta(&x)?.shape.len();
    let dims = match at.node.args.get(1) {
        None | Some(Value::None) => Vec::new(),
        Some(_) => at.ints(1)?,
    };
    let keep = matches!(at.node.args.get(2), Some(Value::Bool(true)));
    let axes = if dims.is_empty() {
        (0..rank as i64).collect()
    } else {
        dims.iter().map(|&d| norm_dim(d, rank)).collect()
    };
    Ok((axes, keep))
}

fn sum(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let (axes, keep) = reduce_axes(cx, at)?;
    if axes.is_empty() {
        // A 0-d tensor: the sum is itself.
        cx.node("Identity", vec![x], at.outs.clone(), vec![]);
        return Ok(());
    }
    let a = cx.const_i64(axes);
    cx.node(
        "ReduceSum",
        vec![x, a],
        at.outs.clone(),
        vec![attr_i("keepdims", keep as i64)],
    );
    Ok(())
}

fn mean(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let (axes, keep) = reduce_axes(cx, at)?;
    if axes.is_empty() {
        cx.node("Identity", vec![x], at.outs.clone(), vec![]);
        return Ok(());
    }
    // Opset 17: ReduceMean takes its axes as an attribute.
    cx.node(
        "ReduceMean",
        vec![x],
        at.outs.clone(),
        vec![attr_ints("axes", axes), attr_i("keepdims", keep as i64)],
    );
    Ok(())
}

macro_rules! by_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Float32 => {
                type $T = f32;
                $body
            }
            DType::Float64 => {
                type $T = f64;
                $body
            }
            DType::Int32 => {
                type $T = i32;
                $body
            }
            _ => {
                type $T = i64;
                $body
            }
        }
    };
}

/// A constructor's values, made by the runtime's own constructor (so
/// `rand`/`randn` give the very numbers the trace saw).
fn constructor(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let meta = at.meta().clone();
    let n = &at.node.args;
    let float = |v: &Value| match v {
        Value::Float(x) => Some(*x),
        Value::Int(x) => Some(*x as f64),
        _ => None,
    };
    let random = |t: (Option<TensorData>, Option<TensorData>)| match meta.dtype {
        DType::Float32 => Ok(t.0),
        DType::Float64 => Ok(t.1),
        _ => Err(at.bad("a float dtype")),
    };
    if let ("rand" | "randn", [_, Value::Int(seed)]) = (at.node.op, n.as_slice()) {
        let seed = *seed as u64;
        let data = crate::trace::untraced(|| {
            if at.node.op == "rand" {
                random((
                    TensorData::of(&Tensor::<f32>::rand(&meta.shape, seed)),
                    TensorData::of(&Tensor::<f64>::rand(&meta.shape, seed)),
                ))
            } else {
                random((
                    TensorData::of(&Tensor::<f32>::randn(&meta.shape, seed)),
                    TensorData::of(&Tensor::<f64>::randn(&meta.shape, seed)),
                ))
            }
        })?
        .ok_or_else(|| at.bad("a float dtype"))?;
        cx.inits
            .push(tensor_proto(at.out(), &meta.shape, meta.dtype, &data));
        return Ok(());
    }
    let data = crate::trace::untraced(|| -> Result<Option<TensorData>, ExportError> {
        Ok(by_dtype!(meta.dtype, T => {
            let t: Tensor<T> = match (at.node.op, n.as_slice()) {
                ("zeros" | "empty", _) => Tensor::zeros(&meta.shape),
                ("ones", _) => Tensor::ones(&meta.shape),
                ("full", [_, v]) => Tensor::full(
                    &meta.shape,
                    <T as crate::element::Element>::from_f64(float(v).ok_or_else(|| at.bad("full(shape, value)"))?),
                ),
                ("arange", [Value::Int(k)]) => Tensor::arange(*k as usize),
                ("arange", [s, e, st]) => {
                    let f = |v| float(v).map(<T as crate::element::Element>::from_f64).ok_or_else(|| at.bad("arange(start, end, step)"));
                    Tensor::arange_step(f(s)?, f(e)?, f(st)?)
                }
                ("eye", [Value::Int(k)]) => Tensor::eye(*k as usize),
                _ => return Err(at.bad("the arguments the runtime records")),
            };
            TensorData::of(&t)
        }))
    })?;
    let data = data.ok_or_else(|| at.bad("a dtype the runtime has"))?;
    if meta.dtype == DType::Bool {
        return Err(at.bad("a numeric dtype"));
    }
    cx.inits
        .push(tensor_proto(at.out(), &meta.shape, meta.dtype, &data));
    Ok(())
}

/// `fill(x, v)`, `zero(x)`, `zeros_like(x)`, `ones_like(x)`: a constant of
/// the output's shape.
fn fill_like(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let meta = at.meta().clone();
    let v = match (at.node.op, at.node.args.get(1)) {
        ("ones_like", _) => 1.0,
        ("empty_like", _) => 0.0,
        ("fill", Some(Value::Float(x))) => *x,
        ("fill", Some(Value::Int(x))) => *x as f64,
        ("fill", Some(Value::Bool(b))) => *b as i64 as f64,
        ("fill", _) => return Err(at.bad("fill(self, value)")),
        _ => 0.0,
    };
    let s = cx.scalar(v, meta.dtype);
    let shape = cx.const_i64(meta.shape.iter().map(|&d| d as i64).collect());
    cx.node("Expand", vec![s, shape], at.outs.clone(), vec![]);
    Ok(())
}

/// `copy(self, src)`: `src` broadcast to `self`'s shape, in `self`'s dtype.
fn copy(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let meta = at.meta().clone();
    let src = at.tensor(1)?;
    let sm = cx.meta(&src)?;
    let mut x = onnx_name(cx.g, &src);
    if sm.dtype != meta.dtype {
        x = cx.tmp_node(
            "Cast",
            vec![x],
            vec![attr_i("to", onnx_dtype(meta.dtype) as i64)],
        );
    }
    let shape = cx.const_i64(meta.shape.iter().map(|&d| d as i64).collect());
    cx.node("Expand", vec![x, shape], at.outs.clone(), vec![]);
    Ok(())
}

/// `resize(self, shape)`: the flat data cut or zero-padded, reshaped.
fn resize(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = at.tensor(0)?;
    let xm = cx.meta(&x)?;
    let meta = at.meta().clone();
    let (old, new) = (xm.numel(), meta.numel());
    let flat = cx.flat(onnx_name(cx.g, &x));
    let v = if new <= old {
        let (s, e, a) = (
            cx.const_i64(vec![0]),
            cx.const_i64(vec![new as i64]),
            cx.const_i64(vec![0]),
        );
        cx.tmp_node("Slice", vec![flat, s, e, a], vec![])
    } else {
        let zeros = cx.constant(
            &[new - old],
            meta.dtype,
            TensorData::Float64(vec![0.0; new - old]),
        );
        cx.tmp_node("Concat", vec![flat, zeros], vec![attr_i("axis", 0)])
    };
    cx.reshape_to(v, &meta.shape, at.out().to_string());
    Ok(())
}

fn reshape(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let shape = at.meta().shape.clone();
    cx.reshape_to(x, &shape, at.out().to_string());
    Ok(())
}

/// `t`, `transpose(d0, d1)`, `permute(dims)`.
fn transpose(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    match at.node.op {
        "t" | "t_copy" => perm.reverse(),
        "transpose" | "transpose_copy" => {
            if rank > 0 {
                let (a, b) = (norm_dim(at.int(1)?, rank), norm_dim(at.int(2)?, rank));
                perm.swap(a as usize, b as usize);
            }
        }
        _ => perm = at.ints(1)?.iter().map(|&d| norm_dim(d, rank)).collect(),
    }
    if rank < 2 {
        cx.node("Identity", vec![x], at.outs.clone(), vec![]);
    } else {
        cx.node(
            "Transpose",
            vec![x],
            at.outs.clone(),
            vec![attr_ints("perm", perm)],
        );
    }
    Ok(())
}

fn expand(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let shape = cx.const_i64(at.meta().shape.iter().map(|&d| d as i64).collect());
    cx.node("Expand", vec![x, shape], at.outs.clone(), vec![]);
    Ok(())
}

/// PyTorch's slice bounds on a dimension of size `n`, clamped.
fn slice_bounds(start: i64, end: i64, n: usize) -> (i64, i64) {
    let n = n as i64;
    let clamp = |v: i64| {
        let v = if v < 0 { v + n } else { v };
        v.clamp(0, n)
    };
    let (s, e) = (clamp(start), clamp(end));
    (s, e.max(s))
}

/// `Slice(x)` of `dim` from `start` to `end` by `step` into `out`.
fn emit_slice(cx: &mut Ctx, x: String, dim: i64, start: i64, end: i64, step: i64, out: String) {
    let s = cx.const_i64(vec![start]);
    let e = cx.const_i64(vec![end]);
    let a = cx.const_i64(vec![dim]);
    let st = cx.const_i64(vec![step]);
    cx.node("Slice", vec![x, s, e, a, st], vec![out], vec![]);
}

fn slice(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let x = onnx_name(cx.g, &xr);
    let dim = norm_dim(at.int(1)?, shape.len());
    let start = match at.node.args.get(2) {
        Some(Value::None) | None => 0,
        _ => at.int(2)?,
    };
    let end = match at.node.args.get(3) {
        Some(Value::None) | None => i64::MAX,
        _ => at.int(3)?,
    };
    let step = match at.node.args.get(4) {
        Some(Value::None) | None => 1,
        _ => at.int(4)?,
    };
    let (s, e) = slice_bounds(start, end, *shape.get(dim as usize).unwrap_or(&1));
    emit_slice(cx, x, dim, s, e, step, at.out().to_string());
    Ok(())
}

fn select(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let x = onnx_name(cx.g, &xr);
    let dim = norm_dim(at.int(1)?, shape.len());
    let mut i = at.int(2)?;
    if i < 0 {
        i += *shape.get(dim as usize).unwrap_or(&0) as i64;
    }
    let idx = cx.scalar_i64(i);
    cx.node(
        "Gather",
        vec![x, idx],
        at.outs.clone(),
        vec![attr_i("axis", dim)],
    );
    Ok(())
}

/// `narrow(self, dim, start, length)`.
fn narrow(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let x = onnx_name(cx.g, &xr);
    let dim = norm_dim(at.int(1)?, shape.len());
    let n = *shape.get(dim as usize).unwrap_or(&1) as i64;
    let start = at.int(2)?;
    let start = if start < 0 { start + n } else { start };
    emit_slice(
        cx,
        x,
        dim,
        start,
        start + at.int(3)?,
        1,
        at.out().to_string(),
    );
    Ok(())
}

/// `split(self, size, dim)` / `chunk(self, chunks, dim)`: consecutive
/// slices along `dim`, each as long as its output.
fn split(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let x = onnx_name(cx.g, &xr);
    let dim = norm_dim(at.int(2)?, shape.len()) as usize;
    let mut start = 0i64;
    for (out, meta) in at.outs.iter().zip(&at.metas) {
        let len = *meta.shape.get(dim).unwrap_or(&0) as i64;
        emit_slice(
            cx,
            x.clone(),
            dim as i64,
            start,
            start + len,
            1,
            out.clone(),
        );
        start += len;
    }
    Ok(())
}

fn unbind(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let dim = norm_dim(at.int(1)?, rank);
    for (i, out) in at.outs.iter().enumerate() {
        let idx = cx.scalar_i64(i as i64);
        cx.node(
            "Gather",
            vec![x.clone(), idx],
            vec![out.clone()],
            vec![attr_i("axis", dim)],
        );
    }
    Ok(())
}

/// The flat indices (into a contiguous tensor of `shape`) of the elements
/// of `view(args)` of it, computed by the runtime's own view on an index
/// tensor.
fn view_indices(
    at: &At,
    view: &str,
    shape: &[usize],
    args: &[Value],
) -> Result<Vec<i64>, ExportError> {
    let n: usize = shape.iter().product();
    let int = |i: usize| match args.get(i) {
        Some(Value::Int(v)) => Ok(*v),
        _ => Err(at.bad(&format!("an integer argument {}", i + 1))),
    };
    let ints = |i: usize| match args.get(i) {
        Some(Value::Ints(v)) => Ok(v.clone()),
        _ => Err(at.bad(&format!("an integer list argument {}", i + 1))),
    };
    let opt = |i: usize, d: i64| match args.get(i) {
        None | Some(Value::None) => Ok(d),
        _ => int(i),
    };
    crate::trace::untraced(|| {
        let base =
            Tensor::<i64>::arange(n).view(shape.iter().map(|&d| d as i64).collect::<Vec<_>>());
        let v = match view {
            "diagonal" => base.diagonal(opt(0, 0)?, opt(1, 0)?, opt(2, 1)?),
            "unfold" => base.unfold(int(0)?, int(1)?, int(2)?),
            "as_strided" => base.as_strided(ints(0)?, ints(1)?, opt(2, 0)?),
            "slice" => base.slice(int(0)?, opt(1, 0)?, opt(2, i64::MAX)?, opt(3, 1)?),
            "select" => base.select(int(0)?, int(1)?),
            _ => return Err(at.bad("a view the exporter knows")),
        };
        Ok(v.to_vec())
    })
}

/// The view a `*_scatter` or gather-mapped view op applies.
fn base_view(op: &str) -> &str {
    op.trim_end_matches("_copy").trim_end_matches("_scatter")
}

/// `diagonal`, `unfold`, `as_strided` (and copies): a Gather of the
/// flattened input at the indices the view reads.
fn gather_view(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let idx = view_indices(at, base_view(at.node.op), &shape, &at.node.args[1..])?;
    let out_shape = at.meta().shape.clone();
    let flat = cx.flat(onnx_name(cx.g, &xr));
    let i = cx.constant(&out_shape, DType::Int64, TensorData::Int64(idx));
    cx.node(
        "Gather",
        vec![flat, i],
        at.outs.clone(),
        vec![attr_i("axis", 0)],
    );
    Ok(())
}

/// `*_scatter(base, src, args)`: ScatterElements into the flattened base
/// at the indices the view reads.
fn scatter(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let br = at.tensor(0)?;
    let sr = at.tensor(1)?;
    let shape = cx.meta(&br)?.shape;
    let idx = view_indices(at, base_view(at.node.op), &shape, &at.node.args[2..])?;
    let n = idx.len();
    let flat = cx.flat(onnx_name(cx.g, &br));
    let src = cx.flat(onnx_name(cx.g, &sr));
    let i = cx.constant(&[n], DType::Int64, TensorData::Int64(idx));
    let s = cx.tmp_node(
        "ScatterElements",
        vec![flat, i, src],
        vec![attr_i("axis", 0)],
    );
    cx.reshape_to(s, &shape, at.out().to_string());
    Ok(())
}

// ------------------------------------------------------------ ops issue

/// An optional argument `i`: `None` when absent or `None`.
fn opt<'v>(at: &'v At, i: usize) -> Option<&'v Value> {
    match at.node.args.get(i) {
        None | Some(Value::None) => None,
        v => v,
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Float(x) => Some(*x),
        Value::Int(x) => Some(*x as f64),
        Value::Bool(b) => Some(*b as i64 as f64),
        _ => None,
    }
}

/// `add(self, other, alpha)` / `sub(...)`: `self ± alpha * other`.
fn add_sub(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = cx.operand_dtype(at);
    let a = cx.operand(at, 0, dt)?;
    let mut b = cx.operand(at, 1, dt)?;
    if let Some(alpha) = opt(at, 2).and_then(num).filter(|&x| x != 1.0) {
        let c = cx.scalar(alpha, dt);
        b = cx.tmp_node("Mul", vec![b, c], vec![]);
    }
    let op = if at.node.op.starts_with("add") {
        "Add"
    } else {
        "Sub"
    };
    cx.node(op, vec![a, b], at.outs.clone(), vec![]);
    Ok(())
}

fn rsqrt(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let s = cx.tmp_node("Sqrt", vec![x], vec![]);
    cx.node("Reciprocal", vec![s], at.outs.clone(), vec![]);
    Ok(())
}

/// `gelu(x)` (exact form): `0.5 x (1 + erf(x / sqrt 2))`; `gelu(x, 1)`
/// (the runtime's record of `approximate="tanh"`):
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
fn gelu(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let x = onnx_name(cx.g, &at.tensor(0)?);
    if opt(at, 1).and_then(num) == Some(1.0) {
        let c = cx.scalar(0.044715, dt);
        let x2 = cx.tmp_node("Mul", vec![x.clone(), x.clone()], vec![]);
        let x3 = cx.tmp_node("Mul", vec![x2, x.clone()], vec![]);
        let cx3 = cx.tmp_node("Mul", vec![x3, c], vec![]);
        let inner = cx.tmp_node("Add", vec![x.clone(), cx3], vec![]);
        let k = cx.scalar((2.0 / std::f64::consts::PI).sqrt(), dt);
        let kin = cx.tmp_node("Mul", vec![inner, k], vec![]);
        let t = cx.tmp_node("Tanh", vec![kin], vec![]);
        let one = cx.scalar(1.0, dt);
        let t1 = cx.tmp_node("Add", vec![t, one], vec![]);
        let half = cx.scalar(0.5, dt);
        let hx = cx.tmp_node("Mul", vec![x, half], vec![]);
        cx.node("Mul", vec![hx, t1], at.outs.clone(), vec![]);
        return Ok(());
    }
    let r = cx.scalar(std::f64::consts::FRAC_1_SQRT_2, dt);
    let xs = cx.tmp_node("Mul", vec![x.clone(), r], vec![]);
    let e = cx.tmp_node("Erf", vec![xs], vec![]);
    let one = cx.scalar(1.0, dt);
    let e1 = cx.tmp_node("Add", vec![e, one], vec![]);
    let half = cx.scalar(0.5, dt);
    let hx = cx.tmp_node("Mul", vec![x, half], vec![]);
    cx.node("Mul", vec![hx, e1], at.outs.clone(), vec![]);
    Ok(())
}

fn silu(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let s = cx.tmp_node("Sigmoid", vec![x.clone()], vec![]);
    cx.node("Mul", vec![x, s], at.outs.clone(), vec![]);
    Ok(())
}

/// `softplus(x, beta=1, threshold=20)`: `x` where `beta x > threshold`,
/// else `log(1 + exp(beta x)) / beta`.
fn softplus(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let beta = opt(at, 1).and_then(num).unwrap_or(1.0);
    let thr = opt(at, 2).and_then(num).unwrap_or(20.0);
    let b = cx.scalar(beta, dt);
    let bx = cx.tmp_node("Mul", vec![x.clone(), b.clone()], vec![]);
    let e = cx.tmp_node("Exp", vec![bx.clone()], vec![]);
    let one = cx.scalar(1.0, dt);
    let e1 = cx.tmp_node("Add", vec![e, one], vec![]);
    let l = cx.tmp_node("Log", vec![e1], vec![]);
    let soft = cx.tmp_node("Div", vec![l, b], vec![]);
    let t = cx.scalar(thr, dt);
    let big = cx.tmp_node("Greater", vec![bx, t], vec![]);
    cx.node("Where", vec![big, x, soft], at.outs.clone(), vec![]);
    Ok(())
}

/// `relu6`, `hardtanh(min, max)`, `clamp_min(min)`, `clamp_max(max)`.
fn clip_fixed(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let a1 = opt(at, 1).and_then(num);
    let (lo, hi) = match at.node.op {
        "relu6" => (Some(0.0), Some(6.0)),
        "hardtanh" => (
            Some(a1.unwrap_or(-1.0)),
            Some(opt(at, 2).and_then(num).unwrap_or(1.0)),
        ),
        "clamp_min" => (
            Some(a1.ok_or_else(|| at.bad("clamp_min(self, min)"))?),
            None,
        ),
        _ => (
            None,
            Some(a1.ok_or_else(|| at.bad("clamp_max(self, max)"))?),
        ),
    };
    let lo = lo.map(|v| cx.scalar(v, dt)).unwrap_or_default();
    let mut inputs = vec![x, lo];
    if let Some(h) = hi {
        inputs.push(cx.scalar(h, dt));
    }
    cx.node("Clip", inputs, at.outs.clone(), vec![]);
    Ok(())
}

/// `x` cast to `to` unless it already has that dtype.
fn cast_to(cx: &mut Ctx, x: String, from: DType, to: DType) -> String {
    if from == to {
        x
    } else {
        cx.tmp_node("Cast", vec![x], vec![attr_i("to", onnx_dtype(to) as i64)])
    }
}

/// Argument `i` as a model value of dtype `to` (tensors cast, scalars made
/// constants).
fn operand_as(cx: &mut Ctx, at: &At, i: usize, to: DType) -> Result<String, ExportError> {
    match at.node.args.get(i) {
        Some(Value::Tensor(r)) => {
            let from = cx.meta(r)?.dtype;
            let x = onnx_name(cx.g, r);
            Ok(cast_to(cx, x, from, to))
        }
        _ => cx.operand(at, i, to),
    }
}

/// The dtype both operands of a binary op are computed in: the tensor
/// operands' (floats win over integers, as PyTorch's promotion).
fn common_dtype(cx: &Ctx, at: &At, args: std::ops::Range<usize>) -> DType {
    let mut dts: Vec<DType> = Vec::new();
    for i in args {
        if let Some(Value::Tensor(r)) = at.node.args.get(i)
            && let Some(m) = cx.g.meta(r)
        {
            dts.push(m.dtype);
        }
    }
    dts.iter()
        .copied()
        .find(|d| *d == DType::Float64)
        .or_else(|| dts.iter().copied().find(|d| d.is_float()))
        .or_else(|| dts.first().copied())
        .unwrap_or(at.meta().dtype)
}

/// `eq`, `ne`, `lt`, `le`, `gt`, `ge` against a tensor or a scalar.
fn compare(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = common_dtype(cx, at, 0..2);
    let a = operand_as(cx, at, 0, dt)?;
    let b = operand_as(cx, at, 1, dt)?;
    let (op, not) = match at.node.op {
        "eq" => ("Equal", false),
        "ne" => ("Equal", true),
        "lt" => ("Less", false),
        "le" => ("LessOrEqual", false),
        "gt" => ("Greater", false),
        _ => ("GreaterOrEqual", false),
    };
    if not {
        let e = cx.tmp_node(op, vec![a, b], vec![]);
        cx.node("Not", vec![e], at.outs.clone(), vec![]);
    } else {
        cx.node(op, vec![a, b], at.outs.clone(), vec![]);
    }
    Ok(())
}

fn logical(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let a = operand_as(cx, at, 0, DType::Bool)?;
    let (op, n) = match at.node.op {
        "logical_not" => ("Not", 1),
        "logical_and" => ("And", 2),
        "logical_or" => ("Or", 2),
        _ => ("Xor", 2),
    };
    let mut inputs = vec![a];
    if n == 2 {
        inputs.push(operand_as(cx, at, 1, DType::Bool)?);
    }
    let dt = at.meta().dtype;
    if dt == DType::Bool {
        cx.node(op, inputs, at.outs.clone(), vec![]);
    } else {
        let r = cx.tmp_node(op, inputs, vec![]);
        cx.node(
            "Cast",
            vec![r],
            at.outs.clone(),
            vec![attr_i("to", onnx_dtype(dt) as i64)],
        );
    }
    Ok(())
}

/// `where(condition, self, other)`.
fn where_(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let c = operand_as(cx, at, 0, DType::Bool)?;
    let a = operand_as(cx, at, 1, dt)?;
    let b = operand_as(cx, at, 2, dt)?;
    cx.node("Where", vec![c, a, b], at.outs.clone(), vec![]);
    Ok(())
}

/// `masked_fill(self, mask, value)`.
fn masked_fill(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let x = operand_as(cx, at, 0, dt)?;
    let m = operand_as(cx, at, 1, DType::Bool)?;
    let v = operand_as(cx, at, 2, dt)?;
    cx.node("Where", vec![m, v, x], at.outs.clone(), vec![]);
    Ok(())
}

/// `masked_scatter(self, mask, source)`: the k-th true position (row-major)
/// takes `source.flatten()[k]`: a running count of the mask picks the
/// source element, `Where` keeps `self` elsewhere.
fn masked_scatter(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let meta = at.meta().clone();
    let dt = meta.dtype;
    let x = operand_as(cx, at, 0, dt)?;
    let dims = cx.const_i64(meta.shape.iter().map(|&d| d as i64).collect());
    let x = cx.tmp_node("Expand", vec![x, dims.clone()], vec![]);
    let m = operand_as(cx, at, 1, DType::Bool)?;
    let m = cx.tmp_node("Expand", vec![m, dims.clone()], vec![]);
    // The count runs in float64 (exact to 2^53): tract folds an int64
    // CumSum of constants as symbolic dims and fails.
    let mf = cast_to(cx, m.clone(), DType::Bool, DType::Float64);
    let flat = cx.flat(mf);
    let axis = cx.scalar_i64(0);
    let count = cx.tmp_node("CumSum", vec![flat, axis], vec![]);
    let count = cast_to(cx, count, DType::Float64, DType::Int64);
    let one = cx.scalar_i64(1);
    let zero = cx.scalar_i64(0);
    let k = cx.tmp_node("Sub", vec![count, one], vec![]);
    let k = cx.tmp_node("Max", vec![k, zero], vec![]);
    let src = operand_as(cx, at, 2, dt)?;
    let src = cx.flat(src);
    let g = cx.tmp_node("Gather", vec![src, k], vec![attr_i("axis", 0)]);
    let g = cx.tmp_node("Reshape", vec![g, dims], vec![]);
    cx.node("Where", vec![m, g, x], at.outs.clone(), vec![]);
    Ok(())
}

/// `to(dtype)`, `_to_copy`: a cast to the output's dtype.
fn cast(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let to = onnx_dtype(at.meta().dtype) as i64;
    cx.node("Cast", vec![x], at.outs.clone(), vec![attr_i("to", to)]);
    Ok(())
}

/// `softmax(self, dim)`, `log_softmax(self, dim)` (and the `_` forms).
fn softmax(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let axis = norm_dim(at.int(1)?, rank);
    let op = if at.node.op.contains("log") {
        "LogSoftmax"
    } else {
        "Softmax"
    };
    if rank == 0 {
        // Softmax of a scalar: 1 (log: 0).
        let v = cx.scalar(if op == "Softmax" { 1.0 } else { 0.0 }, at.meta().dtype);
        cx.node("Identity", vec![v], at.outs.clone(), vec![]);
        return Ok(());
    }
    cx.node(op, vec![x], at.outs.clone(), vec![attr_i("axis", axis)]);
    Ok(())
}

/// Axes and keepdim of a reduction `op(self[, dims][, keepdim])`.
fn dims_keep(cx: &Ctx, at: &At) -> Result<(Vec<i64>, bool, usize), ExportError> {
    let rank = cx.meta(&at.tensor(0)?)?.shape.len();
    let dims = match opt(at, 1) {
        None => Vec::new(),
        Some(_) => at.ints(1)?,
    };
    let keep = matches!(at.node.args.get(2), Some(Value::Bool(true)));
    let axes = if dims.is_empty() {
        (0..rank as i64).collect()
    } else {
        dims.iter().map(|&d| norm_dim(d, rank)).collect()
    };
    Ok((axes, keep, rank))
}

/// `amax`, `amin`, `prod` (opset 17: axes as an attribute).
fn reduce_attr(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let (axes, keep, rank) = dims_keep(cx, at)?;
    let op = match at.node.op {
        "amax" => "ReduceMax",
        "amin" => "ReduceMin",
        _ => "ReduceProd",
    };
    if rank == 0 {
        cx.node("Identity", vec![x], at.outs.clone(), vec![]);
        return Ok(());
    }
    cx.node(
        op,
        vec![x],
        at.outs.clone(),
        vec![attr_ints("axes", axes), attr_i("keepdims", keep as i64)],
    );
    Ok(())
}

/// `max`/`min`: of all elements, elementwise with a tensor, or along a dim
/// (two outputs: values and indices).
fn max_min(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let is_max = at.node.op.starts_with("max");
    if let Some(Value::Tensor(_)) = at.node.args.get(1) {
        let dt = common_dtype(cx, at, 0..2);
        let a = operand_as(cx, at, 0, dt)?;
        let b = operand_as(cx, at, 1, dt)?;
        cx.node(
            if is_max { "Max" } else { "Min" },
            vec![a, b],
            at.outs.clone(),
            vec![],
        );
        return Ok(());
    }
    let xr = at.tensor(0)?;
    let x = onnx_name(cx.g, &xr);
    let (axes, keep, rank) = dims_keep(cx, at)?;
    let red = if is_max { "ReduceMax" } else { "ReduceMin" };
    if at.outs.len() == 2 {
        let axis = *axes
            .first()
            .ok_or_else(|| at.bad("max(self, dim, keepdim)"))?;
        let attrs = vec![
            attr_ints("axes", vec![axis]),
            attr_i("keepdims", keep as i64),
        ];
        cx.node(red, vec![x.clone()], vec![at.outs[0].clone()], attrs);
        let arg = if is_max { "ArgMax" } else { "ArgMin" };
        let attrs = vec![attr_i("axis", axis), attr_i("keepdims", keep as i64)];
        cx.node(arg, vec![x], vec![at.outs[1].clone()], attrs);
        return Ok(());
    }
    if rank == 0 {
        cx.node("Identity", vec![x], at.outs.clone(), vec![]);
        return Ok(());
    }
    let attrs = vec![attr_ints("axes", axes), attr_i("keepdims", keep as i64)];
    cx.node(red, vec![x], at.outs.clone(), attrs);
    Ok(())
}

/// `argmax(self, dim=None, keepdim=False)`: over the flattened tensor when
/// `dim` is `None`.
fn arg_max_min(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let mut x = onnx_name(cx.g, &xr);
    let keep = matches!(at.node.args.get(2), Some(Value::Bool(true)));
    let op = if at.node.op == "argmax" {
        "ArgMax"
    } else {
        "ArgMin"
    };
    let axis = match opt(at, 1) {
        Some(_) => norm_dim(at.int(1)?, rank),
        None => {
            x = cx.flat(x);
            0
        }
    };
    let out_shape = at.meta().shape.clone();
    let r = cx.tmp_node(
        op,
        vec![x],
        vec![attr_i("axis", axis), attr_i("keepdims", keep as i64)],
    );
    cx.reshape_to(r, &out_shape, at.out().to_string());
    Ok(())
}

/// `any`/`all(self[, dim, keepdim])`: a max/min over the values as 0/1.
fn any_all(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let from = cx.meta(&xr)?.dtype;
    let x = onnx_name(cx.g, &xr);
    let b = cast_to(cx, x, from, DType::Bool);
    let i = cx.tmp_node(
        "Cast",
        vec![b],
        vec![attr_i("to", onnx_dtype(DType::Int64) as i64)],
    );
    let (axes, keep, rank) = dims_keep(cx, at)?;
    let r = if rank == 0 {
        i
    } else {
        let op = if at.node.op == "any" {
            "ReduceMax"
        } else {
            "ReduceMin"
        };
        cx.tmp_node(
            op,
            vec![i],
            vec![attr_ints("axes", axes), attr_i("keepdims", keep as i64)],
        )
    };
    let to = onnx_dtype(at.meta().dtype) as i64;
    cx.node("Cast", vec![r], at.outs.clone(), vec![attr_i("to", to)]);
    Ok(())
}

fn cumsum(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let axis = cx.scalar_i64(norm_dim(at.int(1)?, rank));
    cx.node("CumSum", vec![x, axis], at.outs.clone(), vec![]);
    Ok(())
}

/// `cat(tensors, dim)`, `stack(tensors, dim)`.
fn cat(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let refs = match at.node.args.first() {
        Some(Value::TensorList(rs)) => rs.clone(),
        _ => return Err(at.bad("a tensor list argument 0")),
    };
    let dim = match opt(at, 1) {
        Some(_) => at.int(1)?,
        None => 0,
    };
    let out_rank = at.meta().shape.len();
    let axis = norm_dim(dim, out_rank);
    let mut inputs = Vec::new();
    for r in &refs {
        let m = cx.meta(r)?;
        let x = onnx_name(cx.g, r);
        if at.node.op == "stack" {
            let a = cx.const_i64(vec![axis]);
            inputs.push(cx.tmp_node("Unsqueeze", vec![x, a], vec![]));
        } else if m.numel() == 0 && m.shape.len() == 1 && out_rank != 1 {
            // PyTorch's cat skips 1-d empty tensors.
            continue;
        } else {
            inputs.push(x);
        }
    }
    cx.node(
        "Concat",
        inputs,
        at.outs.clone(),
        vec![attr_i("axis", axis)],
    );
    Ok(())
}

/// Row-major strides of `shape`.
fn strides_of(shape: &[usize]) -> Vec<usize> {
    crate::trace::functionalize::contiguous_strides(shape)
}

/// `flip(dims)`, `roll(shifts, dims)`, `repeat(repeats)`: a Gather of the
/// flattened input at indices computed at export time.
fn index_map(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let in_shape = cx.meta(&xr)?.shape;
    let out_shape = at.meta().shape.clone();
    let rank = in_shape.len();
    let n: usize = out_shape.iter().product();
    let in_strides = strides_of(&in_shape);
    let out_strides = strides_of(&out_shape);
    let mut idx = Vec::with_capacity(n);
    let op = at.node.op;
    let a1 = if op == "flip" || op == "repeat" {
        at.ints(1)?
    } else {
        Vec::new()
    };
    let (shifts, rdims) = if op == "roll" {
        let dims = match opt(at, 2) {
            Some(_) => at.ints(2)?,
            None => Vec::new(),
        };
        (at.ints(1)?, dims)
    } else {
        (Vec::new(), Vec::new())
    };
    let total_in: usize = in_shape.iter().product();
    for flat in 0..n {
        let mut rem = flat;
        let o: Vec<usize> = out_strides
            .iter()
            .map(|&s| {
                let q = rem / s.max(1);
                rem %= s.max(1);
                q
            })
            .collect();
        let src = match op {
            "flip" => {
                let mut p = o.clone();
                for &d in &a1 {
                    let d = norm_dim(d, rank) as usize;
                    p[d] = in_shape[d] - 1 - o[d];
                }
                p.iter().zip(&in_strides).map(|(a, b)| a * b).sum()
            }
            "roll" if rdims.is_empty() => {
                let s = shifts.first().copied().unwrap_or(0);
                let t = total_in as i64;
                ((flat as i64 - s).rem_euclid(t.max(1))) as usize
            }
            "roll" => {
                let mut p = o.clone();
                for (&s, &d) in shifts.iter().zip(&rdims) {
                    let d = norm_dim(d, rank) as usize;
                    let len = in_shape[d] as i64;
                    p[d] = ((p[d] as i64 - s).rem_euclid(len.max(1))) as usize;
                }
                p.iter().zip(&in_strides).map(|(a, b)| a * b).sum()
            }
            _ => {
                // repeat: the input is padded with leading 1s to the
                // output's rank; each output index wraps around the input.
                let pad = out_shape.len() - rank;
                (0..rank)
                    .map(|d| (o[d + pad] % in_shape[d].max(1)) * in_strides[d])
                    .sum()
            }
        };
        idx.push(src as i64);
    }
    let flat = cx.flat(onnx_name(cx.g, &xr));
    let i = cx.constant(&out_shape, DType::Int64, TensorData::Int64(idx));
    cx.node(
        "Gather",
        vec![flat, i],
        at.outs.clone(),
        vec![attr_i("axis", 0)],
    );
    Ok(())
}

/// `tril(self, diagonal=0)`, `triu(...)`: a select against a constant mask
/// of the last two dims.
fn tri(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let meta = at.meta().clone();
    let rank = meta.shape.len();
    if rank < 2 {
        return Err(at.bad("a tensor of rank 2 or more"));
    }
    let k = opt(at, 1).and_then(num).unwrap_or(0.0) as i64;
    let (r, c) = (meta.shape[rank - 2], meta.shape[rank - 1]);
    let lower = at.node.op == "tril";
    let mask: Vec<bool> = (0..r * c)
        .map(|f| {
            let (i, j) = ((f / c.max(1)) as i64, (f % c.max(1)) as i64);
            if lower { j - i <= k } else { j - i >= k }
        })
        .collect();
    let m = cx.constant(&[r, c], DType::Bool, TensorData::Bool(mask));
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let z = cx.scalar(0.0, meta.dtype);
    cx.node("Where", vec![m, x, z], at.outs.clone(), vec![]);
    Ok(())
}

fn index_select(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let axis = norm_dim(at.int(1)?, rank);
    let i = onnx_name(cx.g, &at.tensor(2)?);
    cx.node(
        "Gather",
        vec![x, i],
        at.outs.clone(),
        vec![attr_i("axis", axis)],
    );
    Ok(())
}

fn gather(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let axis = norm_dim(at.int(1)?, rank);
    let i = onnx_name(cx.g, &at.tensor(2)?);
    cx.node(
        "GatherElements",
        vec![x, i],
        at.outs.clone(),
        vec![attr_i("axis", axis)],
    );
    Ok(())
}

/// `take(self, index)`: `Gather` on the flattened input (the result has
/// the index's shape; negative indices count from the end in both).
fn take(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let x = onnx_name(cx.g, &at.tensor(0)?);
    let x = cx.flat(x);
    let i = onnx_name(cx.g, &at.tensor(1)?);
    cx.node(
        "Gather",
        vec![x, i],
        at.outs.clone(),
        vec![attr_i("axis", 0)],
    );
    Ok(())
}

/// `nonzero(self)`: ONNX `NonZero` gives `[rank, n]` (row-major order, as
/// aten), transposed to aten's `[n, rank]`. A 0-d input is seen as `[1]`
/// and its single column dropped: `[n, 0]`.
fn nonzero(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    if rank > 0 {
        let nz = cx.tmp_node("NonZero", vec![x], vec![]);
        cx.node(
            "Transpose",
            vec![nz],
            at.outs.clone(),
            vec![attr_ints("perm", vec![1, 0])],
        );
        return Ok(());
    }
    let one = cx.const_i64(vec![1]);
    let x = cx.tmp_node("Reshape", vec![x, one], vec![]);
    let nz = cx.tmp_node("NonZero", vec![x], vec![]);
    let nz = cx.tmp_node("Transpose", vec![nz], vec![attr_ints("perm", vec![1, 0])]);
    // No column: gather none along axis 1 (tract mis-optimizes an empty
    // `Slice` here).
    let none = cx.const_i64(vec![]);
    cx.node(
        "Gather",
        vec![nz, none],
        at.outs.clone(),
        vec![attr_i("axis", 1)],
    );
    Ok(())
}

/// `scatter(self, dim, index, src|value)`, `scatter_add(self, dim, index,
/// src)`.
fn scatter_elements(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let x = onnx_name(cx.g, &xr);
    let axis = norm_dim(at.int(1)?, rank);
    let ir = at.tensor(2)?;
    let ishape = cx.meta(&ir)?.shape;
    let i = onnx_name(cx.g, &ir);
    let src = match at.node.args.get(3) {
        Some(Value::Tensor(sr)) => {
            // PyTorch reads only the index-shaped corner of a larger src;
            // ScatterElements wants updates of exactly the index's shape.
            let sshape = cx.meta(sr)?.shape;
            let s = operand_as(cx, at, 3, dt)?;
            if sshape == ishape || ishape.is_empty() {
                s
            } else {
                let starts = cx.const_i64(vec![0; ishape.len()]);
                let ends = cx.const_i64(ishape.iter().map(|&d| d as i64).collect());
                let axes = cx.const_i64((0..ishape.len() as i64).collect());
                cx.tmp_node("Slice", vec![s, starts, ends, axes], vec![])
            }
        }
        _ => {
            let v = cx.operand(at, 3, dt)?;
            let s = cx.const_i64(ishape.iter().map(|&d| d as i64).collect());
            cx.tmp_node("Expand", vec![v, s], vec![])
        }
    };
    let mut attrs = vec![attr_i("axis", axis)];
    if at.node.op == "scatter_add" {
        attrs.push(attr_s("reduction", "add"));
    }
    cx.node("ScatterElements", vec![x, i, src], at.outs.clone(), attrs);
    Ok(())
}

/// `index_copy(self, dim, index, source)`, `index_add(self, dim, index,
/// source, alpha)`, `index_fill(self, dim, index, value)`: a ScatterElements
/// along `dim` with the index broadcast over the source's shape.
fn index_write(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let dt = at.meta().dtype;
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let rank = shape.len();
    let x = onnx_name(cx.g, &xr);
    let d = norm_dim(at.int(1)?, rank) as usize;
    let ir = at.tensor(2)?;
    let k = cx.meta(&ir)?.numel();
    let mut src_shape = shape.clone();
    if rank > 0 {
        src_shape[d] = k;
    }
    let mut ishape = vec![1usize; rank.max(1)];
    ishape[if rank > 0 { d } else { 0 }] = k;
    let i = onnx_name(cx.g, &ir);
    let i = {
        let s = cx.const_i64(ishape.iter().map(|&v| v as i64).collect());
        let r = cx.tmp_node("Reshape", vec![i, s], vec![]);
        let s = cx.const_i64(src_shape.iter().map(|&v| v as i64).collect());
        cx.tmp_node("Expand", vec![r, s], vec![])
    };
    let src_dims = cx.const_i64(src_shape.iter().map(|&v| v as i64).collect());
    let mut src = match at.node.op {
        "index_fill" => {
            let v = cx.operand(at, 3, dt)?;
            cx.tmp_node("Expand", vec![v, src_dims], vec![])
        }
        _ => operand_as(cx, at, 3, dt)?,
    };
    let mut attrs = vec![attr_i("axis", d as i64)];
    if at.node.op == "index_add" {
        if let Some(alpha) = opt(at, 4).and_then(num).filter(|&a| a != 1.0) {
            let c = cx.scalar(alpha, dt);
            src = cx.tmp_node("Mul", vec![src, c], vec![]);
        }
        attrs.push(attr_s("reduction", "add"));
    }
    cx.node("ScatterElements", vec![x, i, src], at.outs.clone(), attrs);
    Ok(())
}

/// Broadcast shape of `shapes` (numpy rules).
fn broadcast(shapes: &[Vec<usize>]) -> Vec<usize> {
    let rank = shapes.iter().map(Vec::len).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            shapes
                .iter()
                .filter_map(|s| {
                    let off = rank - s.len();
                    (i >= off).then(|| s[i - off])
                })
                .filter(|&d| d != 1)
                .max()
                .unwrap_or(1)
        })
        .collect()
}

/// `index_put(self, indices, values, accumulate)`: the index tensors
/// (integer, one per leading dim) broadcast together and stacked into
/// ScatterND's index; negative indices wrap.
fn index_put(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    if at.node.args.len() > 4 {
        // `x[:, i] = v`: recorded with the indexed dimensions as a fifth
        // argument (see `Tensor::index_put_`).
        return Err(ExportError::UnsupportedOp {
            op: at.node.op.to_string(),
            node: at.node.name.clone(),
            reason: "index_put with `None` entries (indices that skip a dimension) is not \
                     exported yet"
                .into(),
        });
    }
    let dt = at.meta().dtype;
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let x = onnx_name(cx.g, &xr);
    let refs = match at.node.args.get(1) {
        Some(Value::TensorList(rs)) => rs.clone(),
        _ => return Err(at.bad("a list of index tensors as argument 1")),
    };
    let mut metas = Vec::new();
    for r in &refs {
        let m = cx.meta(r)?;
        if m.dtype == DType::Bool || m.dtype.is_float() {
            return Err(ExportError::UnsupportedOp {
                op: at.node.op.to_string(),
                node: at.node.name.clone(),
                reason: "only integer index tensors are exported (a mask index has a \
                         data-dependent shape)"
                    .into(),
            });
        }
        metas.push(m);
    }
    let b = broadcast(&metas.iter().map(|m| m.shape.clone()).collect::<Vec<_>>());
    let bdims = cx.const_i64(b.iter().map(|&v| v as i64).collect());
    let last = cx.const_i64(vec![-1]);
    let mut cols = Vec::new();
    for (k, (r, m)) in refs.iter().zip(&metas).enumerate() {
        let i = onnx_name(cx.g, r);
        let i = cast_to(cx, i, m.dtype, DType::Int64);
        let e = cx.tmp_node("Expand", vec![i, bdims.clone()], vec![]);
        // Negative indices count from the end of their dimension.
        let size = cx.scalar_i64(shape[k] as i64);
        let zero = cx.scalar_i64(0);
        let neg = cx.tmp_node("Less", vec![e.clone(), zero], vec![]);
        let wrapped = cx.tmp_node("Add", vec![e.clone(), size], vec![]);
        let w = cx.tmp_node("Where", vec![neg, wrapped, e], vec![]);
        cols.push(cx.tmp_node("Unsqueeze", vec![w, last.clone()], vec![]));
    }
    let idx = cx.tmp_node("Concat", cols, vec![attr_i("axis", -1)]);
    let mut vshape = b.clone();
    vshape.extend_from_slice(&shape[refs.len().min(shape.len())..]);
    let v = operand_as(cx, at, 2, dt)?;
    let vdims = cx.const_i64(vshape.iter().map(|&d| d as i64).collect());
    let v = cx.tmp_node("Expand", vec![v, vdims], vec![]);
    let accumulate = matches!(at.node.args.get(3), Some(Value::Bool(true)));
    let attrs = if accumulate {
        vec![attr_s("reduction", "add")]
    } else {
        vec![]
    };
    cx.node("ScatterND", vec![x, idx, v], at.outs.clone(), attrs);
    Ok(())
}

// ------------------------------------------------ variance, norms, sorting

/// `var(self, dims, correction, keepdim)`, `std(...)`, `var_mean(...)`:
/// `Σ (x - mean)² / max(0, n - correction)` over the axes (all when `dims`
/// is `None` or empty); `std` takes the square root; `var_mean` has the
/// mean as its second output.
fn var_std(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let x = onnx_name(cx.g, &xr);
    // (self, dims, correction, keepdim): keepdim is argument 3.
    let (axes, _, rank) = dims_keep(cx, at)?;
    let keep = matches!(at.node.args.get(3), Some(Value::Bool(true)));
    let correction = opt(at, 2).and_then(num).unwrap_or(1.0);
    let dt = at.meta().dtype;
    let n: usize = axes.iter().map(|&a| shape[a as usize]).product();
    if rank == 0 {
        return Err(at.bad("a tensor of rank 1 or more"));
    }
    let mean_k = cx.tmp_node(
        "ReduceMean",
        vec![x.clone()],
        vec![attr_ints("axes", axes.clone()), attr_i("keepdims", 1)],
    );
    let d = cx.tmp_node("Sub", vec![x, mean_k.clone()], vec![]);
    let d2 = cx.tmp_node("Mul", vec![d.clone(), d], vec![]);
    let a = cx.const_i64(axes.clone());
    let ss = cx.tmp_node(
        "ReduceSum",
        vec![d2, a],
        vec![attr_i("keepdims", keep as i64)],
    );
    let denom = cx.scalar((n as f64 - correction).max(0.0), dt);
    let op = at.node.op;
    if op.starts_with("std") {
        let v = cx.tmp_node("Div", vec![ss, denom], vec![]);
        cx.node("Sqrt", vec![v], at.outs.clone(), vec![]);
        return Ok(());
    }
    cx.node("Div", vec![ss, denom], vec![at.outs[0].clone()], vec![]);
    if op == "var_mean" {
        let out_shape = at.metas[1].shape.clone();
        cx.reshape_to(mean_k, &out_shape, at.outs[1].clone());
    }
    Ok(())
}

/// `linalg_vector_norm(self, ord, dims, keepdim)` and `norm(self, p)` (all
/// elements): `ReduceL1`/`ReduceL2`, max/min of `|x|` for `±inf`, the
/// number of non-zeros for `0`, else `(Σ |x|^p)^(1/p)`.
fn vector_norm(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let rank = cx.meta(&xr)?.shape.len();
    let dt = at.meta().dtype;
    let x = onnx_name(cx.g, &xr);
    let ord = opt(at, 1).and_then(num).unwrap_or(2.0);
    let (dims, keep) = if at.node.op == "norm" {
        (Vec::new(), false)
    } else {
        let dims = match opt(at, 2) {
            None => Vec::new(),
            Some(_) => at.ints(2)?,
        };
        (dims, matches!(at.node.args.get(3), Some(Value::Bool(true))))
    };
    let axes: Vec<i64> = if dims.is_empty() {
        (0..rank as i64).collect()
    } else {
        dims.iter().map(|&d| norm_dim(d, rank)).collect()
    };
    let out_shape = at.meta().shape.clone();
    let attrs = |k: bool| {
        vec![
            attr_ints("axes", axes.clone()),
            attr_i("keepdims", k as i64),
        ]
    };
    let abs = cx.tmp_node("Abs", vec![x], vec![]);
    let r = if rank == 0 {
        abs
    } else if ord == 2.0 {
        cx.tmp_node("ReduceL2", vec![abs], attrs(keep))
    } else if ord == 1.0 {
        cx.tmp_node("ReduceL1", vec![abs], attrs(keep))
    } else if ord == f64::INFINITY {
        cx.tmp_node("ReduceMax", vec![abs], attrs(keep))
    } else if ord == f64::NEG_INFINITY {
        cx.tmp_node("ReduceMin", vec![abs], attrs(keep))
    } else if ord == 0.0 {
        let z = cx.scalar(0.0, dt);
        let eq = cx.tmp_node("Equal", vec![abs, z], vec![]);
        let ne = cx.tmp_node("Not", vec![eq], vec![]);
        let f = cast_to(cx, ne, DType::Bool, dt);
        let a = cx.const_i64(axes.clone());
        cx.tmp_node(
            "ReduceSum",
            vec![f, a],
            vec![attr_i("keepdims", keep as i64)],
        )
    } else {
        let p = cx.scalar(ord, dt);
        let xp = cx.tmp_node("Pow", vec![abs, p], vec![]);
        let a = cx.const_i64(axes.clone());
        let s = cx.tmp_node(
            "ReduceSum",
            vec![xp, a],
            vec![attr_i("keepdims", keep as i64)],
        );
        let ip = cx.scalar(1.0 / ord, dt);
        cx.tmp_node("Pow", vec![s, ip], vec![])
    };
    cx.reshape_to(r, &out_shape, at.out().to_string());
    Ok(())
}

/// `sort(self, dim, descending)`, `topk(self, k, dim, largest, sorted)`:
/// ONNX `TopK` (values and `int64` indices).
fn sort_topk(cx: &mut Ctx, at: &At) -> Result<(), ExportError> {
    let xr = at.tensor(0)?;
    let shape = cx.meta(&xr)?.shape;
    let rank = shape.len();
    let x = onnx_name(cx.g, &xr);
    let (k, dim, largest) = if at.node.op == "sort" {
        let dim = norm_dim(at.int(1)?, rank);
        let desc = matches!(at.node.args.get(2), Some(Value::Bool(true)));
        let len = if rank == 0 { 1 } else { shape[dim as usize] };
        (len as i64, dim, desc)
    } else {
        let dim = norm_dim(at.int(2)?, rank);
        let largest = !matches!(at.node.args.get(3), Some(Value::Bool(false)));
        (at.int(1)?, dim, largest)
    };
    if rank == 0 {
        cx.node("Identity", vec![x], vec![at.outs[0].clone()], vec![]);
        let z = cx.constant(&[], DType::Int64, TensorData::Int64(vec![0]));
        cx.node("Identity", vec![z], vec![at.outs[1].clone()], vec![]);
        return Ok(());
    }
    let kk = cx.const_i64(vec![k]);
    cx.node(
        "TopK",
        vec![x, kk],
        at.outs.clone(),
        vec![
            attr_i("axis", dim),
            attr_i("largest", largest as i64),
            attr_i("sorted", 1),
        ],
    );
    Ok(())
}
