//! The traced graph as data: placeholders, named nodes with resolved
//! arguments, constants and returned values, plus the queries used to check
//! what functionalization produced (`has_mutations`, `dead_nodes`, ...).
//!
//! A [`Graph`] is built from pure data — the recorded [`Node`]s and the
//! identities of the inputs and outputs — by [`Graph::from_nodes`], so it can
//! be constructed by hand as well as by [`trace`](super::trace).

use std::collections::{HashMap, HashSet};

use super::meta::{TensorData, TensorMeta};
use super::record::{Arg, ConstantValues, Node};
use crate::optable;
use crate::tensor::TensorId;

/// Where a tensor value in the graph comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Ref {
    /// The graph input number `input`; `index` is the element of a list input.
    Input {
        /// Index into [`Graph::placeholders`].
        input: usize,
        /// The element, for a list input.
        index: Option<usize>,
    },
    /// The output of node number `node`; `index` is the element of a list
    /// output (`split[0]`).
    Node {
        /// Index into [`Graph::nodes`].
        node: usize,
        /// The element, for a list output.
        index: Option<usize>,
    },
    /// The constant number `i` (a tensor not made by any recorded op nor
    /// passed as an input), printed `_tensor_constant{i}`.
    Constant(usize),
}

/// One argument of a graph node, with tensors resolved to [`Ref`]s.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Value {
    /// A tensor.
    Tensor(Ref),
    /// A list of tensors.
    TensorList(Vec<Ref>),
    /// An integer.
    Int(i64),
    /// A float (non-finite values are written as strings in JSON).
    Float(#[cfg_attr(feature = "serde", serde(with = "super::serde_impl::f64_repr"))] f64),
    /// A boolean.
    Bool(bool),
    /// A list of integers (shapes, dims).
    Ints(Vec<i64>),
    /// No value (an omitted optional argument).
    None,
}

impl Value {
    /// The tensors this argument refers to.
    pub fn refs(&self) -> Vec<Ref> {
        match self {
            Value::Tensor(r) => vec![*r],
            Value::TensorList(rs) => rs.clone(),
            _ => Vec::new(),
        }
    }
}

/// A graph input (`a_1`), made from an input named `a` by the caller.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Placeholder {
    /// The printed name: the caller's name with the suffix `_1`
    /// (deduplicated like every other name in the graph).
    pub name: String,
    /// The name the caller gave.
    pub source_name: String,
    /// The identities of the input tensors (one unless `list`).
    pub ids: Vec<TensorId>,
    /// True for a list input: its elements are referenced as `xs_1[i]`.
    pub list: bool,
    /// Shape and dtype of each tensor, as `ids` (empty if unknown).
    #[cfg_attr(feature = "serde", serde(default))]
    pub metas: Vec<TensorMeta>,
}

/// A tensor used by the graph that no recorded op produced and that is not
/// an input (made by a constructor, or captured from outside the trace).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Constant {
    /// `_tensor_constant0`, `_tensor_constant1`, ...
    pub name: String,
    /// The tensor's identity.
    pub id: TensorId,
    /// Index of the first node that uses it (`nodes().len()` if only
    /// returned); it is printed just before that node.
    pub first_use: usize,
    /// Its shape and dtype, if known.
    #[cfg_attr(feature = "serde", serde(default))]
    pub meta: Option<TensorMeta>,
    /// Its values when the trace first read it, if known (see
    /// [`Tracer::capture`](super::Tracer::capture)).
    #[cfg_attr(feature = "serde", serde(default))]
    pub data: Option<TensorData>,
}

/// One node of the graph: an op call with a unique name.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct GraphNode {
    /// The unique name (`add`, `add_1`, `add_`, `add__1`, `view_copy_2`...).
    pub name: String,
    /// PyTorch's op name.
    pub op: &'static str,
    /// The arguments, tensors resolved.
    pub args: Vec<Value>,
    /// Identities of the returned tensors.
    pub outputs: Vec<TensorId>,
    /// True if the op returned a list: outputs are referenced `name[i]`.
    pub list: bool,
    /// Shape and dtype of each output, as `outputs` (empty if unknown).
    #[cfg_attr(feature = "serde", serde(default))]
    pub metas: Vec<TensorMeta>,
}

impl GraphNode {
    /// True if the op mutates its first argument (per
    /// [`optable::aten_is_mutation`], plus `copy_`).
    pub fn is_mutation(&self) -> bool {
        is_mutation_op(self.op)
    }

    /// True if the op returns an alias of its input (per
    /// [`optable::aten_is_view`]).
    pub fn is_view(&self) -> bool {
        optable::aten_is_view(self.op)
    }

    /// The tensors this node reads, in argument order.
    pub fn input_refs(&self) -> Vec<Ref> {
        self.args.iter().flat_map(Value::refs).collect()
    }

    /// The reference to output `i` of this node, given its index `node`.
    pub fn output_ref(&self, node: usize, i: usize) -> Ref {
        let index = if self.list || self.outputs.len() != 1 {
            Some(i)
        } else {
            None
        };
        Ref::Node { node, index }
    }
}

pub(crate) fn is_mutation_op(op: &str) -> bool {
    optable::aten_is_mutation(op) || op == "copy_"
}

/// A graph input before naming: what the caller passed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSpec {
    /// The caller's name for it (`a`; the placeholder is `a_1`).
    pub name: String,
    /// The identities of the tensors (one unless `list`).
    pub ids: Vec<TensorId>,
    /// True for a list of tensors.
    pub list: bool,
    /// Shape and dtype of each tensor (empty if unknown).
    pub metas: Vec<TensorMeta>,
}

impl InputSpec {
    /// A single tensor input.
    pub fn tensor(name: &str, id: TensorId) -> Self {
        InputSpec {
            name: name.to_string(),
            ids: vec![id],
            list: false,
            metas: Vec::new(),
        }
    }

    /// A list-of-tensors input.
    pub fn list(name: &str, ids: Vec<TensorId>) -> Self {
        InputSpec {
            name: name.to_string(),
            ids,
            list: true,
            metas: Vec::new(),
        }
    }

    /// The same input with the shape and dtype of each tensor.
    pub fn with_metas(mut self, metas: Vec<TensorMeta>) -> Self {
        self.metas = metas;
        self
    }
}

/// A traced program: inputs, op nodes in execution order, constants and
/// returned values. Printing it (`Display`) gives the seed docs' style:
///
/// ```
/// use funcz_runtime::trace::{Arg, Graph, InputSpec, Node};
/// let nodes = vec![
///     Node::new("add", vec![Arg::Tensor(1), Arg::Float(1.0)], 2),
///     Node::new("view", vec![Arg::Tensor(2), Arg::Ints(vec![-1])], 3),
///     Node::new("add_", vec![Arg::Tensor(3), Arg::Float(1.0)], 3),
/// ];
/// let g = Graph::from_nodes("forward", &[InputSpec::tensor("a", 1)], nodes, &[2]);
/// assert_eq!(g.to_string(), "\
/// fn forward(a_1) {
///     let add = aten::add(a_1, 1.0);
///     let view = aten::view(add, [-1]);
///     let add_ = aten::add_(view, 1.0);
///     return add;
/// }
/// ");
/// assert!(g.has_mutations() && g.has_views() && !g.is_functional());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Graph {
    name: String,
    placeholders: Vec<Placeholder>,
    nodes: Vec<GraphNode>,
    constants: Vec<Constant>,
    outputs: Vec<Ref>,
    /// Host reads of tensor values the traced code made (see
    /// [`note_host_read`](super::note_host_read)).
    #[cfg_attr(feature = "serde", serde(default))]
    host_reads: Vec<String>,
}

/// FX-style name allocation: `add`, `add_1`, `add_2`; a candidate ending
/// in `_<digits>` counts from that number (`a_1`), names that are Rust
/// keywords or already taken get the next free suffix.
#[derive(Default)]
struct Namespace {
    used: HashSet<String>,
    base_count: HashMap<String, u64>,
}

const RUST_KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen", "_",
];

impl Namespace {
    fn create(&mut self, candidate: &str) -> String {
        let mut cand: String = candidate
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if cand.is_empty() {
            cand = "_unnamed".to_string();
        }
        if cand.starts_with(|c: char| c.is_ascii_digit()) {
            cand.insert(0, '_');
        }
        let (base, num) = split_suffix(&cand);
        let mut num = num.filter(|&n| n != 0);
        let mut name = match num {
            Some(n) => format!("{base}_{n}"),
            None => base.to_string(),
        };
        let mut n = match num.take() {
            Some(n) => n,
            None => self.base_count.get(base).copied().unwrap_or(0),
        };
        while self.used.contains(&name) || RUST_KEYWORDS.contains(&name.as_str()) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.base_count.insert(base.to_string(), n);
        self.used.insert(name.clone());
        name
    }
}

/// Splits `base_123` into (`base`, 123); other names into (name, None).
fn split_suffix(s: &str) -> (&str, Option<u64>) {
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits == s.len() {
        return (s, None);
    }
    let cut = s.len() - digits;
    if s.as_bytes()[cut - 1] != b'_' {
        return (s, None);
    }
    match s[cut..].parse::<u64>() {
        Ok(n) => (&s[..cut - 1], Some(n)),
        Err(_) => (s, None),
    }
}

/// Maps tensor ids to their current producer while a graph is built.
struct Resolver<'a> {
    env: HashMap<TensorId, Ref>,
    constants: Vec<Constant>,
    values: &'a ConstantValues,
}

impl Resolver<'_> {
    fn resolve(&mut self, id: TensorId, at: usize, ns: &mut Namespace) -> Ref {
        if let Some(r) = self.env.get(&id) {
            return *r;
        }
        let i = self.constants.len();
        let name = ns.create(&format!("_tensor_constant{i}"));
        let (meta, data) = match self.values.get(&id) {
            Some((m, d)) => (Some(m.clone()), Some(d.clone())),
            None => (None, None),
        };
        self.constants.push(Constant {
            name,
            id,
            first_use: at,
            meta,
            data,
        });
        let r = Ref::Constant(i);
        self.env.insert(id, r);
        r
    }

    fn value(&mut self, arg: &Arg, at: usize, ns: &mut Namespace) -> Value {
        match arg {
            Arg::Tensor(id) => Value::Tensor(self.resolve(*id, at, ns)),
            Arg::TensorList(ids) => {
                Value::TensorList(ids.iter().map(|&id| self.resolve(id, at, ns)).collect())
            }
            Arg::Int(v) => Value::Int(*v),
            Arg::Float(v) => Value::Float(*v),
            Arg::Bool(v) => Value::Bool(*v),
            Arg::Ints(v) => Value::Ints(v.clone()),
            Arg::None => Value::None,
        }
    }
}

/// A `*_scatter` recorded without its output's shape (the in-place form
/// returns a renamed base) has the shape and dtype of its base.
fn fill_scatter_meta(
    placeholders: &[Placeholder],
    nodes: &mut [GraphNode],
    constants: &[Constant],
) {
    let Some((last, before)) = nodes.split_last_mut() else {
        return;
    };
    if !last.metas.is_empty() || !last.op.ends_with("_scatter") || last.outputs.len() != 1 {
        return;
    }
    let meta = match last.args.first() {
        Some(Value::Tensor(Ref::Input { input, index })) => placeholders
            .get(*input)
            .and_then(|p| p.metas.get(index.unwrap_or(0))),
        Some(Value::Tensor(Ref::Node { node, index })) => before
            .get(*node)
            .and_then(|n| n.metas.get(index.unwrap_or(0))),
        Some(Value::Tensor(Ref::Constant(i))) => constants.get(*i).and_then(|c| c.meta.as_ref()),
        _ => None,
    };
    if let Some(m) = meta {
        last.metas = vec![m.clone()];
    }
}

impl Graph {
    /// Builds a graph from recorded nodes (pure data).
    ///
    /// Inputs become placeholders named `{name}_1` (a list input `xs` is one
    /// placeholder `xs_1` whose elements are `xs_1[0]`, `xs_1[1]`, ...). Each
    /// node gets a unique name from its op (`add`, `add_1`, ...; `add_`,
    /// `add__1` for in-place ops, as in FX). A tensor id resolves to the node
    /// that most recently returned it — so an in-place node re-maps its
    /// receiver, as `make_fx` does — or to the placeholder that holds it (the
    /// first one, if two inputs share an id); any other id becomes a constant
    /// `_tensor_constant{i}`. `outputs` are the ids of the returned tensors.
    pub fn from_nodes(
        name: &str,
        inputs: &[InputSpec],
        nodes: Vec<Node>,
        outputs: &[TensorId],
    ) -> Graph {
        Graph::from_recording(name, inputs, nodes, outputs, &ConstantValues::new())
    }

    /// [`from_nodes`](Self::from_nodes), with the values of the constants
    /// the recorder saw.
    pub(crate) fn from_recording(
        name: &str,
        inputs: &[InputSpec],
        nodes: Vec<Node>,
        outputs: &[TensorId],
        values: &ConstantValues,
    ) -> Graph {
        let mut ns = Namespace::default();
        let mut res = Resolver {
            env: HashMap::new(),
            constants: Vec::new(),
            values,
        };
        let mut placeholders = Vec::with_capacity(inputs.len());
        for (input, spec) in inputs.iter().enumerate() {
            let pname = ns.create(&format!("{}_1", spec.name));
            for (i, &id) in spec.ids.iter().enumerate() {
                let index = spec.list.then_some(i);
                res.env.entry(id).or_insert(Ref::Input { input, index });
            }
            placeholders.push(Placeholder {
                name: pname,
                source_name: spec.name.clone(),
                ids: spec.ids.clone(),
                list: spec.list,
                metas: spec.metas.clone(),
            });
        }
        let mut gnodes: Vec<GraphNode> = Vec::with_capacity(nodes.len());
        for (at, node) in nodes.into_iter().enumerate() {
            let args = node
                .args
                .iter()
                .map(|a| res.value(a, at, &mut ns))
                .collect();
            let gnode = GraphNode {
                name: ns.create(node.op),
                op: node.op,
                args,
                outputs: node.outputs,
                list: node.list,
                metas: node.metas,
            };
            for (i, &id) in gnode.outputs.iter().enumerate() {
                res.env.insert(id, gnode.output_ref(at, i));
            }
            gnodes.push(gnode);
            fill_scatter_meta(&placeholders, &mut gnodes, &res.constants);
        }
        let end = gnodes.len();
        let outputs = outputs
            .iter()
            .map(|&id| res.resolve(id, end, &mut ns))
            .collect();
        Graph {
            name: name.to_string(),
            placeholders,
            nodes: gnodes,
            constants: res.constants,
            outputs,
            host_reads: Vec::new(),
        }
    }

    /// The host reads of tensor values the traced code made (`to_vec`,
    /// `item`, ...), in order: if not empty, the program's control flow
    /// may depend on tensor values, and the graph holds for the path the
    /// trace took.
    pub fn host_reads(&self) -> &[String] {
        &self.host_reads
    }

    pub(crate) fn set_host_reads(&mut self, reads: Vec<String>) {
        self.host_reads = reads;
    }

    /// Gives the constants of this graph the shapes `other`'s constants with
    /// the same ids have, where this graph has none.
    pub(crate) fn copy_constant_metas_from(&mut self, other: &Graph) {
        for c in &mut self.constants {
            if c.meta.is_none()
                && let Some(o) = other.constants.iter().find(|o| o.id == c.id)
            {
                c.meta = o.meta.clone();
                c.data = c.data.take().or_else(|| o.data.clone());
            }
        }
    }

    /// The graph's name (printed as `fn NAME(...)`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The inputs, in order.
    pub fn placeholders(&self) -> &[Placeholder] {
        &self.placeholders
    }

    /// The op nodes, in execution order.
    pub fn nodes(&self) -> &[GraphNode] {
        &self.nodes
    }

    /// The node with this name.
    pub fn node(&self, name: &str) -> Option<&GraphNode> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The constants, in order of first use.
    pub fn constants(&self) -> &[Constant] {
        &self.constants
    }

    /// The returned values.
    pub fn outputs(&self) -> &[Ref] {
        &self.outputs
    }

    /// The names of the returned values.
    pub fn output_names(&self) -> Vec<String> {
        self.outputs.iter().map(|r| self.ref_name(r)).collect()
    }

    /// Number of op nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if no op was recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The op names, in execution order.
    pub fn ops(&self) -> Vec<&'static str> {
        self.nodes.iter().map(|n| n.op).collect()
    }

    /// How many nodes call `op`.
    pub fn count(&self, op: &str) -> usize {
        self.nodes.iter().filter(|n| n.op == op).count()
    }

    /// The shape and dtype of a value, if recorded.
    ///
    /// ```
    /// use funcz_runtime::{Tensor, trace::{DType, TensorMeta, Tracer}};
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let (_, g) = Tracer::new("f").input("a", &a).run(|| a.sum_dim(0, false));
    /// assert_eq!(g.meta(&g.outputs()[0]), Some(&TensorMeta::new(&[2], DType::Float32)));
    /// ```
    pub fn meta(&self, r: &Ref) -> Option<&TensorMeta> {
        match *r {
            Ref::Input { input, index } => self.placeholders[input].metas.get(index.unwrap_or(0)),
            Ref::Node { node, index } => self.nodes[node].metas.get(index.unwrap_or(0)),
            Ref::Constant(i) => self.constants[i].meta.as_ref(),
        }
    }

    /// The printed name of a value: `a_1`, `xs_1[0]`, `add`, `split[1]`,
    /// `_tensor_constant0`.
    pub fn ref_name(&self, r: &Ref) -> String {
        let (base, index) = match *r {
            Ref::Input { input, index } => (&self.placeholders[input].name, index),
            Ref::Node { node, index } => (&self.nodes[node].name, index),
            Ref::Constant(i) => (&self.constants[i].name, None),
        };
        match index {
            Some(i) => format!("{base}[{i}]"),
            None => base.clone(),
        }
    }

    /// True if any node mutates a tensor (in-place data ops, `copy_`,
    /// metadata in-place ops, `resize_`).
    pub fn has_mutations(&self) -> bool {
        self.nodes.iter().any(GraphNode::is_mutation)
    }

    /// True if any node returns an alias (`view`, `slice`, `split`, ...).
    pub fn has_views(&self) -> bool {
        self.nodes.iter().any(GraphNode::is_view)
    }

    /// True if no node returns an alias.
    pub fn is_view_free(&self) -> bool {
        !self.has_views()
    }

    /// The input that `r` ultimately designates, following in-place nodes
    /// back to their receiver (`copy_(add_(a_1, ..), ..)` writes into `a_1`).
    pub fn mutated_input(&self, r: &Ref) -> Option<usize> {
        let mut r = *r;
        loop {
            match r {
                Ref::Input { input, .. } => return Some(input),
                Ref::Node { node, index: None } => {
                    let n = &self.nodes[node];
                    if !n.is_mutation() {
                        return None;
                    }
                    // Arguments always refer to earlier nodes: this ends.
                    match n.args.first() {
                        Some(Value::Tensor(recv)) => r = *recv,
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// True if `node` is the write-back of a mutated input at exit: a
    /// `copy_` or `as_strided_` whose destination is a placeholder (directly
    /// or through earlier in-place nodes on it).
    pub fn is_input_writeback(&self, node: &GraphNode) -> bool {
        matches!(node.op, "copy_" | "as_strided_")
            && matches!(node.args.first(), Some(Value::Tensor(r)) if self.mutated_input(r).is_some())
    }

    /// The mutating nodes other than input write-backs (see
    /// [`is_input_writeback`](Self::is_input_writeback)).
    pub fn mutations_except_input_writeback(&self) -> Vec<&GraphNode> {
        self.nodes
            .iter()
            .filter(|n| n.is_mutation() && !self.is_input_writeback(n))
            .collect()
    }

    /// True if the only mutations are input write-backs.
    pub fn is_functional(&self) -> bool {
        self.mutations_except_input_writeback().is_empty()
    }

    /// For each node, whether one of its outputs is read by a later node or
    /// returned.
    fn used(&self) -> Vec<bool> {
        let mut used = vec![false; self.nodes.len()];
        let refs = self
            .nodes
            .iter()
            .flat_map(GraphNode::input_refs)
            .chain(self.outputs.iter().copied());
        for r in refs {
            if let Ref::Node { node, .. } = r {
                used[node] = true;
            }
        }
        used
    }

    /// Nodes whose outputs are never read by another node nor returned
    /// (mutations, and nodes with no outputs, are never dead).
    pub fn dead_nodes(&self) -> Vec<&GraphNode> {
        let used = self.used();
        self.nodes
            .iter()
            .zip(used)
            .filter(|(n, u)| !u && !n.is_mutation() && !n.outputs.is_empty())
            .map(|(n, _)| n)
            .collect()
    }

    /// The printed code (same as `to_string()`).
    pub fn code(&self) -> String {
        self.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_follows_fx() {
        let mut ns = Namespace::default();
        assert_eq!(ns.create("a_1"), "a_1");
        assert_eq!(ns.create("a_1"), "a_2");
        assert_eq!(ns.create("add"), "add");
        assert_eq!(ns.create("add"), "add_1");
        assert_eq!(ns.create("add_"), "add_");
        assert_eq!(ns.create("add_"), "add__1");
        assert_eq!(ns.create("add"), "add_2");
        assert_eq!(ns.create("where"), "where_1");
        assert_eq!(ns.create("x-y"), "x_y");
        assert_eq!(ns.create("1x"), "_1x");
        assert_eq!(ns.create(""), "_unnamed");
        assert_eq!(ns.create("_tensor_constant0"), "_tensor_constant0");
    }

    #[test]
    fn split_suffix_cases() {
        assert_eq!(split_suffix("a_1"), ("a", Some(1)));
        assert_eq!(split_suffix("a_1_12"), ("a_1", Some(12)));
        assert_eq!(split_suffix("conv2d"), ("conv2d", None));
        assert_eq!(split_suffix("add_"), ("add_", None));
        assert_eq!(split_suffix("123"), ("123", None));
    }
}
