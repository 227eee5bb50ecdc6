//! PyTorch's functionalization algorithm run on a recorded graph
//! ([`Graph::functionalize`]): every in-place op becomes its functional
//! twin, every mutation through a view is written back into the view's base
//! with a scatter (`slice_scatter`, `select_scatter`, ...), every alias read
//! after a mutation of its base is regenerated from the base's new value,
//! and mutated inputs get a `copy_` epilogue; ops whose results are never
//! used are dropped.
//!
//! Each value of the input graph is an *alias*: a storage (an input, a
//! constant or the result of a functional op) and the chain of view steps
//! from the storage's value to it. A storage's value is replaced (not
//! mutated) when an in-place op writes into any of its aliases, and an
//! alias's value is recomputed by replaying its chain on the storage's
//! current value whenever it is read after a write (the
//! `regenerate_from_base` of the reference, see
//! `shared/reference/pytorch-functionalization.md`).
//!
//! ```
//! use funcz_runtime::{Tensor, trace::{Remove, Tracer}};
//! let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
//! // The seed example, unannotated: a view mutated in place.
//! let (_, g) = Tracer::new("forward").input("a", &a).run(|| {
//!     let b = a.add(1.0);
//!     let c = b.view([-1]);
//!     c.add_(1.0);
//!     b
//! });
//! assert!(!g.is_functional());
//! let f = g.functionalize(Remove::MutationsAndViews).unwrap();
//! assert_eq!(f.to_string(), "\
//! fn forward(a_1) {
//!     let add = aten::add(a_1, 1.0);
//!     let view_copy = aten::view_copy(add, [-1]);
//!     let add_1 = aten::add(view_copy, 1.0);
//!     let view_copy_1 = aten::view_copy(add_1, [2]);
//!     return view_copy_1;
//! }
//! ");
//! assert!(f.is_functional() && f.is_view_free() && f.dead_nodes().is_empty());
//! ```

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::error::ExportError;
use super::graph::{Graph, GraphNode, InputSpec, Ref, Value, is_mutation_op};
use super::meta::TensorMeta;
use super::record::{Arg, ConstantValues, Node};
use crate::optable::{self, OpKind};
use crate::tensor::TensorId;

/// What [`Graph::functionalize`] removes, as the `remove` argument of
/// `torch.func.functionalize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remove {
    /// In-place ops are removed; aliases are regenerated as views
    /// (`view`, `slice`, ...) of functional values.
    Mutations,
    /// In-place ops and views are removed: views become their `*_copy`
    /// ops (`view_copy`, `slice_copy`, ...). The graph is then free of
    /// both mutation and aliasing, as a backend needs.
    MutationsAndViews,
}

/// One view step of an alias chain: `op(parent, args...)` giving `meta`.
#[derive(Clone, Debug, PartialEq)]
struct Step {
    /// The aten view op (`view`, `slice`, `select`, `t`, ...).
    op: &'static str,
    /// Its non-tensor arguments.
    args: Vec<Value>,
    /// The shape and dtype it produces.
    meta: TensorMeta,
    /// Unique per step made: a step is appended to one chain only, so its
    /// id names the whole chain prefix ending with it.
    id: usize,
}

/// One link of a view chain, sharing its prefix with the chains it was
/// extended from (a persistent list: extending is O(1)).
#[derive(Debug)]
struct Link {
    step: Step,
    parent: Option<Rc<Link>>,
}

/// A value: a storage and the view steps from the storage's value to it.
#[derive(Clone, Debug)]
struct Alias {
    storage: usize,
    chain: Option<Rc<Link>>,
}

impl Alias {
    /// The chain's links, outermost (applied first) first.
    fn links(&self) -> Vec<Rc<Link>> {
        let mut out = Vec::new();
        let mut cur = self.chain.clone();
        while let Some(l) = cur {
            cur = l.parent.clone();
            out.push(l);
        }
        out.reverse();
        out
    }

    fn push(&mut self, step: Step) {
        let parent = self.chain.take();
        self.chain = Some(Rc::new(Link { step, parent }));
    }
}

/// A storage: its current functional value.
#[derive(Clone, Debug)]
struct Storage {
    value: TensorId,
    meta: TensorMeta,
    version: u64,
    /// The input element it holds (`placeholder`, element), if any.
    input: Option<(usize, usize)>,
}

/// The view ops the pass knows, with their `*_copy` names.
const VIEW_COPIES: &[(&str, &str)] = &[
    ("view", "view_copy"),
    ("_unsafe_view", "view_copy"),
    ("t", "t_copy"),
    ("transpose", "transpose_copy"),
    ("permute", "permute_copy"),
    ("slice", "slice_copy"),
    ("select", "select_copy"),
    ("diagonal", "diagonal_copy"),
    ("squeeze", "squeeze_copy"),
    ("unsqueeze", "unsqueeze_copy"),
    ("expand", "expand_copy"),
    ("unfold", "unfold_copy"),
    ("as_strided", "as_strided_copy"),
    ("alias", "alias_copy"),
    ("detach", "detach_copy"),
];

fn copy_name(view: &str) -> Option<&'static str> {
    VIEW_COPIES
        .iter()
        .find(|(v, _)| *v == view)
        .map(|(_, c)| *c)
}

/// The view op an in-place view op (`t_`, `transpose_`, ...) applies.
fn inplace_view_op(op: &str) -> Option<&'static str> {
    match optable::lookup(op)?.kind {
        OpKind::InplaceView { view } => match optable::lookup(view)?.kind {
            OpKind::View { aten, .. } => Some(aten),
            _ => None,
        },
        _ => None,
    }
}

struct Pass<'g> {
    g: &'g Graph,
    remove: Remove,
    nodes: Vec<Node>,
    next_id: TensorId,
    stores: Vec<Storage>,
    alias: HashMap<Ref, Alias>,
    /// Materialized chain prefixes: (storage, version, id of the prefix's
    /// last step).
    cache: HashMap<(usize, u64, usize), TensorId>,
    next_step: usize,
}

impl Pass<'_> {
    fn step_id(&mut self) -> usize {
        self.next_step += 1;
        self.next_step
    }

    fn fresh(&mut self) -> TensorId {
        self.next_id += 1;
        self.next_id
    }

    fn meta_of(&self, r: &Ref) -> Result<TensorMeta, ExportError> {
        self.g.meta(r).cloned().ok_or_else(|| ExportError::Missing {
            value: self.g.ref_name(r),
            what: "shape and dtype",
        })
    }

    fn emit(
        &mut self,
        op: &'static str,
        args: Vec<Arg>,
        metas: Vec<TensorMeta>,
        list: bool,
    ) -> Vec<TensorId> {
        let outputs: Vec<TensorId> = (0..metas.len()).map(|_| self.fresh()).collect();
        self.nodes.push(Node {
            op,
            args,
            outputs: outputs.clone(),
            list,
            metas,
        });
        outputs
    }

    fn emit1(&mut self, op: &'static str, args: Vec<Arg>, meta: TensorMeta) -> TensorId {
        self.emit(op, args, vec![meta], false)[0]
    }

    fn new_storage(&mut self, value: TensorId, meta: TensorMeta) -> Alias {
        self.stores.push(Storage {
            value,
            meta,
            version: 0,
            input: None,
        });
        Alias {
            storage: self.stores.len() - 1,
            chain: None,
        }
    }

    /// Applies one view step to `input`, as a view or its `*_copy`.
    fn emit_view(&mut self, step: &Step, input: TensorId) -> TensorId {
        let op = match self.remove {
            Remove::Mutations => step.op,
            Remove::MutationsAndViews => copy_name(step.op).unwrap_or(step.op),
        };
        let mut args = vec![Arg::Tensor(input)];
        args.extend(step.args.iter().map(plain_arg));
        self.emit1(op, args, step.meta.clone())
    }

    /// The value of the chain prefix `chain[..len]` of storage `s`.
    fn prefix_value(&mut self, s: usize, chain: &[Rc<Link>], len: usize) -> TensorId {
        let version = self.stores[s].version;
        // Resume from the longest prefix already materialized.
        let mut start = len;
        let mut cur = self.stores[s].value;
        while start > 0 {
            if let Some(&id) = self.cache.get(&(s, version, chain[start - 1].step.id)) {
                cur = id;
                break;
            }
            start -= 1;
        }
        for link in &chain[start..len] {
            let id = self.emit_view(&link.step, cur);
            self.cache.insert((s, version, link.step.id), id);
            cur = id;
        }
        cur
    }

    /// The current value of `r` (its alias regenerated from its base).
    fn read(&mut self, r: &Ref) -> TensorId {
        let a = self.alias[r].clone();
        let Some(last) = &a.chain else {
            return self.stores[a.storage].value;
        };
        let version = self.stores[a.storage].version;
        if let Some(&id) = self.cache.get(&(a.storage, version, last.step.id)) {
            return id;
        }
        let links = a.links();
        self.prefix_value(a.storage, &links, links.len())
    }

    fn arg(&mut self, v: &Value) -> Arg {
        match v {
            Value::Tensor(r) => Arg::Tensor(self.read(r)),
            Value::TensorList(rs) => Arg::TensorList(rs.iter().map(|r| self.read(r)).collect()),
            other => plain_arg(other),
        }
    }

    /// Writes `new` (the new value of alias `r`) into its storage: scatters
    /// it back through the view chain, innermost first.
    fn write(&mut self, n: &GraphNode, r: &Ref, new: TensorId) -> Result<(), ExportError> {
        let a = self.alias[r].clone();
        let s = a.storage;
        let links = a.links();
        let k = links.len();
        // The parent of the innermost step; the outer parents come from
        // the cache filled on the way.
        let mut parents = Vec::with_capacity(k);
        if k > 0 {
            self.prefix_value(s, &links, k - 1);
        }
        for i in 0..k {
            parents.push(self.prefix_value(s, &links, i));
        }
        let mut cur = new;
        for i in (0..k).rev() {
            let parent_meta = if i == 0 {
                self.stores[s].meta.clone()
            } else {
                links[i - 1].step.meta.clone()
            };
            cur = self.scatter(n, &links[i].step, parents[i], parent_meta, cur)?;
        }
        let st = &mut self.stores[s];
        st.value = cur;
        st.version += 1;
        Ok(())
    }

    /// The value of `parent` with the view `step` of it replaced by `src`.
    fn scatter(
        &mut self,
        n: &GraphNode,
        step: &Step,
        parent: TensorId,
        pm: TensorMeta,
        src: TensorId,
    ) -> Result<TensorId, ExportError> {
        let ints = |v: &[usize]| Arg::Ints(v.iter().map(|&x| x as i64).collect());
        let mut rest: Vec<Arg> = step.args.iter().map(plain_arg).collect();
        let view_like = |this: &mut Self, op: &'static str, args: Vec<Arg>| {
            let mut all = vec![Arg::Tensor(src)];
            all.extend(args);
            let op = match this.remove {
                Remove::Mutations => op,
                Remove::MutationsAndViews => copy_name(op).unwrap_or(op),
            };
            this.emit1(op, all, pm.clone())
        };
        let scatter = |this: &mut Self, op: &'static str, rest: Vec<Arg>| {
            let mut all = vec![Arg::Tensor(parent), Arg::Tensor(src)];
            all.extend(rest);
            this.emit1(op, all, pm.clone())
        };
        Ok(match step.op {
            "view" | "_unsafe_view" | "squeeze" | "unsqueeze" => {
                view_like(self, "view", vec![ints(&pm.shape)])
            }
            "alias" | "detach" => src,
            "t" => {
                if pm.shape.len() < 2 {
                    src
                } else {
                    view_like(self, "t", vec![])
                }
            }
            "transpose" => view_like(self, "transpose", rest),
            "permute" => {
                let rank = pm.shape.len() as i64;
                let perm = match step.args.first() {
                    Some(Value::Ints(p)) => p.clone(),
                    _ => return Err(bad(n, "permute(self, dims)")),
                };
                let mut inv = vec![0i64; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    let p = if p < 0 { p + rank } else { p };
                    inv[p as usize] = i as i64;
                }
                view_like(self, "permute", vec![Arg::Ints(inv)])
            }
            "slice" => scatter(self, "slice_scatter", rest),
            "select" => scatter(self, "select_scatter", rest),
            "diagonal" => {
                // diagonal's arguments default to (0, 0, 1).
                let defaults = [Arg::Int(0), Arg::Int(0), Arg::Int(1)];
                while rest.len() < 3 {
                    rest.push(defaults[rest.len()].clone());
                }
                scatter(self, "diagonal_scatter", rest)
            }
            "as_strided" => scatter(self, "as_strided_scatter", rest),
            "unfold" => {
                // Windows of a contiguous parent, written back by strides.
                let (dim, size, stp) = match step.args.as_slice() {
                    [Value::Int(d), Value::Int(s), Value::Int(t)] => (*d, *s, *t),
                    _ => return Err(bad(n, "unfold(self, dim, size, step)")),
                };
                let rank = pm.shape.len().max(1) as i64;
                let d = if dim < 0 { dim + rank } else { dim } as usize;
                let strides = contiguous_strides(&pm.shape);
                let mut size_v: Vec<i64> = step.meta.shape.iter().map(|&x| x as i64).collect();
                let mut stride_v: Vec<i64> = strides.iter().map(|&x| x as i64).collect();
                if pm.shape.is_empty() {
                    stride_v = vec![1];
                    size_v = vec![1];
                    size_v[0] = size;
                } else {
                    stride_v[d] *= stp;
                    stride_v.push(strides[d] as i64);
                }
                scatter(
                    self,
                    "as_strided_scatter",
                    vec![Arg::Ints(size_v), Arg::Ints(stride_v), Arg::Int(0)],
                )
            }
            "expand" => {
                return Err(ExportError::UnsupportedOp {
                    op: n.op.to_string(),
                    node: n.name.clone(),
                    reason: "an in-place op writes through an `expand` view (PyTorch refuses \
                             this too: several elements share one memory location)"
                        .into(),
                });
            }
            other => {
                return Err(ExportError::UnsupportedOp {
                    op: n.op.to_string(),
                    node: n.name.clone(),
                    reason: format!("no inverse known for the view `{other}` it writes through"),
                });
            }
        })
    }

    fn run(mut self) -> Result<Graph, ExportError> {
        let g = self.g;
        // Storages for inputs and constants.
        for (pi, p) in g.placeholders().iter().enumerate() {
            for (e, &id) in p.ids.iter().enumerate() {
                let r = Ref::Input {
                    input: pi,
                    index: p.list.then_some(e),
                };
                let meta = self.meta_of(&r)?;
                let a = self.new_storage(id, meta);
                self.stores[a.storage].input = Some((pi, e));
                self.alias.insert(r, a);
            }
        }
        for (i, c) in g.constants().iter().enumerate() {
            let r = Ref::Constant(i);
            let meta = self.meta_of(&r)?;
            let a = self.new_storage(c.id, meta);
            self.alias.insert(r, a);
        }
        for (ni, n) in g.nodes().iter().enumerate() {
            self.node(ni, n)?;
        }
        let outputs: Vec<TensorId> = g.outputs().iter().map(|r| self.read(r)).collect();
        // Epilogue: write the new value of every mutated input back.
        let mut keep: Vec<usize> = Vec::new();
        for s in 0..self.stores.len() {
            let st = self.stores[s].clone();
            if let (Some((pi, e)), true) = (st.input, st.version > 0) {
                let input_id = g.placeholders()[pi].ids[e];
                if st.value == input_id {
                    continue;
                }
                self.nodes.push(Node {
                    op: "copy_",
                    args: vec![Arg::Tensor(input_id), Arg::Tensor(st.value)],
                    outputs: vec![input_id],
                    list: false,
                    metas: vec![st.meta.clone()],
                });
                keep.push(self.nodes.len() - 1);
            }
        }
        let nodes = dead_code_elimination(self.nodes, &outputs, &keep);
        let inputs: Vec<InputSpec> = g
            .placeholders()
            .iter()
            .map(|p| InputSpec {
                name: p.source_name.clone(),
                ids: p.ids.clone(),
                list: p.list,
                metas: p.metas.clone(),
            })
            .collect();
        let mut values = ConstantValues::new();
        for c in g.constants() {
            if let (Some(m), Some(d)) = (&c.meta, &c.data) {
                values.insert(c.id, (m.clone(), d.clone()));
            }
        }
        let mut out = Graph::from_recording(g.name(), &inputs, nodes, &outputs, &values);
        out.copy_constant_metas_from(g);
        out.set_host_reads(g.host_reads().to_vec());
        Ok(out)
    }

    fn node(&mut self, ni: usize, n: &GraphNode) -> Result<(), ExportError> {
        let out_ref = |i: usize| n.output_ref(ni, i);
        let recv = match n.args.first() {
            Some(Value::Tensor(r)) => Some(*r),
            _ => None,
        };
        let kind = optable::lookup(n.op).map(|i| i.kind);
        // Metadata in-place ops: the receiver handle gets one more view step.
        if let Some(view) = inplace_view_op(n.op) {
            let recv = recv.ok_or_else(|| bad(n, "a tensor receiver"))?;
            let meta = self.node_meta(n, 0)?;
            let step = Step {
                op: view,
                args: n.args[1..].to_vec(),
                meta,
                id: self.step_id(),
            };
            let mut a = self.alias[&recv].clone();
            if view == "as_strided" {
                a.chain = None;
            }
            a.push(step);
            self.alias.insert(out_ref(0), a);
            return Ok(());
        }
        if n.op == "resize_" {
            let recv = recv.ok_or_else(|| bad(n, "a tensor receiver"))?;
            let a = self.alias[&recv].clone();
            if a.chain.is_some() {
                return Err(ExportError::UnsupportedOp {
                    op: n.op.to_string(),
                    node: n.name.clone(),
                    reason: "resize_ of a view".into(),
                });
            }
            let meta = self.node_meta(n, 0)?;
            let mut args = vec![Arg::Tensor(self.read(&recv))];
            args.extend(n.args[1..].iter().map(plain_arg));
            let v = self.emit1("resize", args, meta.clone());
            let st = &mut self.stores[a.storage];
            st.value = v;
            st.meta = meta;
            st.version += 1;
            self.alias.insert(out_ref(0), a);
            return Ok(());
        }
        if is_mutation_op(n.op) {
            let functional = match kind {
                Some(OpKind::Inplace { functional }) => functional,
                _ if n.op == "copy_" => "copy",
                _ => {
                    return Err(ExportError::UnsupportedOp {
                        op: n.op.to_string(),
                        node: n.name.clone(),
                        reason: "an in-place op with no functional twin in the op table".into(),
                    });
                }
            };
            let recv = recv.ok_or_else(|| bad(n, "a tensor receiver"))?;
            let meta = self.meta_of(&recv)?;
            let new = match n.args.get(1) {
                // copy_ of a value of the same shape and dtype: the new
                // value is the source itself.
                Some(Value::Tensor(src)) if n.op == "copy_" && self.g.meta(src) == Some(&meta) => {
                    self.read(src)
                }
                _ => {
                    let args: Vec<Arg> = n.args.iter().map(|v| self.arg(v)).collect();
                    self.emit1(functional, args, meta)
                }
            };
            self.write(n, &recv, new)?;
            let a = self.alias[&recv].clone();
            self.alias.insert(out_ref(0), a);
            return Ok(());
        }
        if let Some(a) = self.view_alias(ni, n, recv)? {
            for (i, a) in a.into_iter().enumerate() {
                self.alias.insert(out_ref(i), a);
            }
            return Ok(());
        }
        // A functional op: fresh storages for its outputs.
        let args: Vec<Arg> = n.args.iter().map(|v| self.arg(v)).collect();
        let metas = (0..n.outputs.len())
            .map(|i| self.node_meta(n, i))
            .collect::<Result<Vec<_>, _>>()?;
        let ids = self.emit(n.op, args, metas.clone(), n.list);
        for (i, (id, m)) in ids.into_iter().zip(metas).enumerate() {
            let a = self.new_storage(id, m);
            self.alias.insert(out_ref(i), a);
        }
        Ok(())
    }

    fn node_meta(&self, n: &GraphNode, i: usize) -> Result<TensorMeta, ExportError> {
        n.metas.get(i).cloned().ok_or_else(|| ExportError::Missing {
            value: n.name.clone(),
            what: "shape and dtype",
        })
    }

    /// The aliases a view node returns (`None` if it is not a view).
    fn view_alias(
        &mut self,
        ni: usize,
        n: &GraphNode,
        recv: Option<Ref>,
    ) -> Result<Option<Vec<Alias>>, ExportError> {
        let Some(recv) = recv else { return Ok(None) };
        let base = self.alias[&recv].clone();
        let extend = |step: Step| {
            let mut a = base.clone();
            if step.op == "as_strided" {
                a.chain = None;
            }
            a.push(step);
            a
        };
        let rest = n.args[1..].to_vec();
        let view_op: Option<&'static str> =
            VIEW_COPIES.iter().map(|(v, _)| *v).find(|v| *v == n.op);
        if let Some(op) = view_op {
            let meta = self.node_meta(n, 0)?;
            return Ok(Some(vec![extend(Step {
                op,
                args: rest,
                meta,
                id: self.step_id(),
            })]));
        }
        match n.op {
            "contiguous" => {
                // An alias when its input is already contiguous, else a copy.
                let contiguous = base.links().iter().all(|l| {
                    matches!(
                        l.step.op,
                        "view" | "_unsafe_view" | "squeeze" | "unsqueeze" | "alias" | "detach"
                    )
                });
                if contiguous {
                    let meta = self.node_meta(n, 0)?;
                    return Ok(Some(vec![extend(Step {
                        op: "alias",
                        args: vec![],
                        meta,
                        id: self.step_id(),
                    })]));
                }
                Ok(None)
            }
            "split" | "unbind" => {
                let in_meta = self.meta_of(&recv)?;
                let rank = in_meta.shape.len() as i64;
                let norm = |d: i64| if d < 0 { d + rank } else { d };
                let mut out = Vec::new();
                match (n.op, rest.as_slice()) {
                    ("split", [Value::Int(size), Value::Int(dim)]) => {
                        let d = norm(*dim);
                        let len = in_meta.shape[d as usize] as i64;
                        for i in 0..n.outputs.len() {
                            let start = i as i64 * size;
                            let end = (start + size).min(len);
                            out.push(extend(Step {
                                op: "slice",
                                args: vec![
                                    Value::Int(d),
                                    Value::Int(start),
                                    Value::Int(end),
                                    Value::Int(1),
                                ],
                                meta: self.node_meta(n, i)?,
                                id: self.step_id(),
                            }));
                        }
                    }
                    ("unbind", [Value::Int(dim)]) => {
                        for i in 0..n.outputs.len() {
                            out.push(extend(Step {
                                op: "select",
                                args: vec![Value::Int(norm(*dim)), Value::Int(i as i64)],
                                meta: self.node_meta(n, i)?,
                                id: self.step_id(),
                            }));
                        }
                    }
                    _ => return Err(bad(n, "split(self, size, dim) or unbind(self, dim)")),
                }
                let _ = ni;
                Ok(Some(out))
            }
            _ => Ok(None),
        }
    }
}

fn bad(n: &GraphNode, expected: &str) -> ExportError {
    ExportError::BadArgs {
        op: n.op.to_string(),
        node: n.name.clone(),
        expected: expected.to_string(),
    }
}

pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// A non-tensor argument as a recorded [`Arg`].
fn plain_arg(v: &Value) -> Arg {
    match v {
        Value::Int(i) => Arg::Int(*i),
        Value::Float(x) => Arg::Float(*x),
        Value::Bool(b) => Arg::Bool(*b),
        Value::Ints(is) => Arg::Ints(is.clone()),
        Value::None => Arg::None,
        Value::Tensor(_) | Value::TensorList(_) => {
            unreachable!("funcz: functionalize: tensor arguments are resolved by Pass::arg")
        }
    }
}

/// Drops the nodes none of whose outputs reach `outputs` or a node in
/// `keep`.
fn dead_code_elimination(nodes: Vec<Node>, outputs: &[TensorId], keep: &[usize]) -> Vec<Node> {
    let mut live: HashSet<TensorId> = outputs.iter().copied().collect();
    let mut alive = vec![false; nodes.len()];
    for i in (0..nodes.len()).rev() {
        let n = &nodes[i];
        if keep.contains(&i) || n.outputs.iter().any(|o| live.contains(o)) {
            alive[i] = true;
            for a in &n.args {
                match a {
                    Arg::Tensor(id) => {
                        live.insert(*id);
                    }
                    Arg::TensorList(ids) => live.extend(ids.iter().copied()),
                    _ => {}
                }
            }
        }
    }
    nodes
        .into_iter()
        .zip(alive)
        .filter(|(_, a)| *a)
        .map(|(n, _)| n)
        .collect()
}

impl Graph {
    /// PyTorch's functionalization on this recorded graph: the result has
    /// no in-place ops except the `copy_` epilogue that writes each mutated
    /// input's new value back, and with [`Remove::MutationsAndViews`] no
    /// views (their `*_copy` ops instead); mutations through views become
    /// scatters into the view's base, aliases read after a mutation are
    /// regenerated from the base, and ops whose results are unused are
    /// dropped. Works on any traced graph, including one from code the
    /// macro never saw (see the module docs for an example).
    ///
    /// Needs the shapes of the values (a traced graph has them). Errors name
    /// the op and node it cannot handle (a write through an `expand` view,
    /// an in-place op with no functional twin).
    pub fn functionalize(&self, remove: Remove) -> Result<Graph, ExportError> {
        let mut max_id = 0;
        for p in self.placeholders() {
            max_id = max_id.max(p.ids.iter().copied().max().unwrap_or(0));
        }
        for n in self.nodes() {
            max_id = max_id.max(n.outputs.iter().copied().max().unwrap_or(0));
        }
        for c in self.constants() {
            max_id = max_id.max(c.id);
        }
        Pass {
            g: self,
            remove,
            nodes: Vec::new(),
            next_id: max_id,
            stores: Vec::new(),
            alias: HashMap::new(),
            cache: HashMap::new(),
            next_step: 0,
        }
        .run()
    }
}
