//! The recording core: every public op runs through [`op`], which records one
//! node when a trace is active on this thread and the op was called by user
//! code (not from inside another op).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};

use super::meta::{TensorData, TensorMeta};
use crate::element::Scalar;
use crate::tensor::{Tensor, TensorId};

/// One argument of a recorded op.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor, by identity.
    Tensor(TensorId),
    /// A list of tensors.
    TensorList(Vec<TensorId>),
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A list of integers (shapes, dims).
    Ints(Vec<i64>),
    /// No value (an omitted optional argument).
    None,
}

/// One executed op.
///
/// ```
/// use funcz_runtime::trace::{Arg, Node};
/// let n = Node::new("add", vec![Arg::Tensor(1), Arg::Float(1.0)], 2);
/// assert_eq!((n.op, n.outputs.as_slice(), n.list), ("add", &[2][..], false));
/// assert!(n.metas.is_empty()); // a hand-made node has no shapes
/// ```
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Node {
    /// PyTorch's op name (`add`, `add_`, `view_copy`, `slice_scatter`, ...).
    pub op: &'static str,
    /// Its arguments in PyTorch's order.
    pub args: Vec<Arg>,
    /// Identities of the tensors it returned (the receiver, for in-place ops).
    pub outputs: Vec<TensorId>,
    /// True if the op returned a list (`split`, `unbind`, ...): its outputs
    /// are printed as `name[i]`.
    pub list: bool,
    /// Shape and dtype of each output, as recorded (empty for a node made
    /// by hand, which then has no shapes).
    pub metas: Vec<TensorMeta>,
}

impl Node {
    /// A node with one output and no recorded shapes.
    pub fn new(op: &'static str, args: Vec<Arg>, output: TensorId) -> Self {
        Node {
            op,
            args,
            outputs: vec![output],
            list: false,
            metas: Vec::new(),
        }
    }

    /// The same node with recorded output shapes and dtypes.
    pub fn with_metas(mut self, metas: Vec<TensorMeta>) -> Self {
        self.metas = metas;
        self
    }
}

/// A tensor met by the recorder that no recorded op produced and that is
/// not an input: its shape, dtype and values when first seen.
pub(crate) type ConstantValues = HashMap<TensorId, (TensorMeta, TensorData)>;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static NODES: RefCell<Vec<Node>> = const { RefCell::new(Vec::new()) };
    /// Ids of inputs and of recorded node outputs (values whose producer
    /// the graph knows).
    static KNOWN: RefCell<HashSet<TensorId>> = RefCell::new(HashSet::new());
    /// Snapshots of the other tensors seen as arguments (constants).
    static CONSTS: RefCell<ConstantValues> = RefCell::new(HashMap::new());
    /// Host reads of tensor values made by the traced code.
    static HOST_READS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Notes that the traced code read tensor values on the host (`to_vec`,
/// `item`, `equal`, ...): its control flow may depend on them, so a graph
/// recorded from it holds for the path taken (the exported model says so).
/// Reads made inside ops or `untraced` are not noted.
///
/// ```
/// use funcz_runtime::trace::{Tracer, note_host_read};
/// let (_, g) = Tracer::new("f").run(|| note_host_read("item"));
/// assert_eq!(g.host_reads(), ["item"]);
/// ```
pub fn note_host_read(what: &'static str) {
    if is_recording() && DEPTH.with(|d| d.get()) == 0 {
        HOST_READS.with(|r| r.borrow_mut().push(what));
    }
}

/// The host reads noted since recording started.
pub(crate) fn take_host_reads() -> Vec<&'static str> {
    HOST_READS.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

/// Values that a recorded op can return.
pub trait Outputs {
    /// The identities of the returned tensors.
    fn output_ids(&self) -> Vec<TensorId>;
    /// True if the value is a list of tensors.
    fn is_list(&self) -> bool {
        false
    }
    /// The shapes and dtypes of the returned tensors (empty if unknown).
    fn output_metas(&self) -> Vec<TensorMeta> {
        Vec::new()
    }
}

impl<T: Scalar> Outputs for Tensor<T> {
    fn output_ids(&self) -> Vec<TensorId> {
        vec![self.id]
    }
    fn output_metas(&self) -> Vec<TensorMeta> {
        TensorMeta::of(self).into_iter().collect()
    }
}

impl<T: Scalar> Outputs for Vec<Tensor<T>> {
    fn output_ids(&self) -> Vec<TensorId> {
        self.iter().map(|t| t.id).collect()
    }
    fn is_list(&self) -> bool {
        true
    }
    fn output_metas(&self) -> Vec<TensorMeta> {
        let m: Vec<TensorMeta> = self.iter().filter_map(TensorMeta::of).collect();
        if m.len() == self.len() { m } else { Vec::new() }
    }
}

impl Outputs for () {
    fn output_ids(&self) -> Vec<TensorId> {
        Vec::new()
    }
}

/// True while a trace is being recorded on this thread.
#[inline]
pub fn is_recording() -> bool {
    ACTIVE.with(|a| a.get())
}

struct DepthGuard(u32);

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(self.0));
    }
}

/// Runs the op body `f`; if a trace is active and this is the outermost op,
/// records a node named `name` with the arguments `args()`.
#[inline]
pub(crate) fn op<R: Outputs>(
    name: &'static str,
    args: impl FnOnce() -> Vec<Arg>,
    f: impl FnOnce() -> R,
) -> R {
    if !is_recording() {
        return f();
    }
    let depth = DEPTH.with(|d| d.get());
    // The arguments are taken before the op runs, so a constant is
    // snapshotted with the value the op read (not the one it wrote).
    let args = (depth == 0).then(args);
    let out = {
        let _g = DepthGuard(depth);
        DEPTH.with(|d| d.set(depth + 1));
        f()
    };
    if let Some(args) = args {
        let node = Node {
            op: name,
            args,
            outputs: out.output_ids(),
            list: out.is_list(),
            metas: out.output_metas(),
        };
        KNOWN.with(|k| k.borrow_mut().extend(node.outputs.iter().copied()));
        NODES.with(|n| n.borrow_mut().push(node));
    }
    out
}

/// Marks `ids` as graph inputs of the current recording (their values are
/// not constants).
pub(crate) fn mark_known(ids: impl IntoIterator<Item = TensorId>) {
    KNOWN.with(|k| k.borrow_mut().extend(ids));
}

/// Snapshots `t` as a constant if a trace is recording at user level and
/// no input or recorded op made it.
pub(crate) fn observe<T: Scalar>(t: &Tensor<T>) {
    if !is_recording() || DEPTH.with(|d| d.get()) != 0 {
        return;
    }
    if KNOWN.with(|k| k.borrow().contains(&t.id)) || CONSTS.with(|c| c.borrow().contains_key(&t.id))
    {
        return;
    }
    // Reading the constant's values is the recorder's, not the program's.
    if let (Some(m), Some(d)) = (TensorMeta::of(t), untraced(|| TensorData::of(t))) {
        CONSTS.with(|c| c.borrow_mut().insert(t.id, (m, d)));
    }
}

/// Relabels the node just recorded for an in-place op that ran on a
/// donated buffer (one nobody else can observe) as its functional twin
/// `functional` producing the fresh value `new_out` (see
/// [`crate::rt::donated`]): the graph shows `add(x, y) -> new`, not
/// `add_(x, y)`. Does nothing unless a trace is recording at user level
/// and the last node is the in-place twin of `functional` that returned
/// `inplace_out`.
#[inline]
pub(crate) fn record_as_functional(inplace_out: TensorId, new_out: TensorId) {
    if is_recording() {
        relabel_last(inplace_out, new_out);
    }
}

fn relabel_last(inplace_out: TensorId, new_out: TensorId) {
    if DEPTH.with(|d| d.get()) != 0 {
        return;
    }
    NODES.with(|n| {
        // The node is the in-place op just run on the donated buffer. Its
        // functional twin is the table's, by the node's own (aten) name (a
        // method traced under another name, `add_scaled_`, is `add_` with
        // `alpha`, so its node becomes `add`).
        if let Some(node) = n.borrow_mut().last_mut()
            && node.outputs == [inplace_out]
            && let Some(crate::optable::OpKind::Inplace { functional: f }) =
                crate::optable::lookup(node.op).map(|i| i.kind)
        {
            node.op = f;
            node.outputs = vec![new_out];
        }
    });
}

/// Runs `f` without recording any op it executes.
pub fn untraced<R>(f: impl FnOnce() -> R) -> R {
    let depth = DEPTH.with(|d| d.get());
    let _g = DepthGuard(depth);
    DEPTH.with(|d| d.set(depth + 1));
    f()
}

/// Starts recording on this thread, discarding anything recorded before.
/// Panics if a recording is already active (traces do not nest).
pub fn start_recording() {
    assert!(
        !is_recording(),
        "funcz: trace: a trace is already being recorded on this thread"
    );
    NODES.with(|n| n.borrow_mut().clear());
    KNOWN.with(|k| k.borrow_mut().clear());
    CONSTS.with(|c| c.borrow_mut().clear());
    HOST_READS.with(|r| r.borrow_mut().clear());
    DEPTH.with(|d| d.set(0));
    ACTIVE.with(|a| a.set(true));
}

/// Stops recording and returns the nodes recorded since [`start_recording`].
pub fn stop_recording() -> Vec<Node> {
    stop_recording_with_constants().0
}

/// Stops recording; returns the nodes and the values of the constants seen.
pub(crate) fn stop_recording_with_constants() -> (Vec<Node>, ConstantValues) {
    ACTIVE.with(|a| a.set(false));
    KNOWN.with(|k| k.borrow_mut().clear());
    (
        NODES.with(|n| std::mem::take(&mut *n.borrow_mut())),
        CONSTS.with(|c| std::mem::take(&mut *c.borrow_mut())),
    )
}

/// Conversion of an op argument into a recorded [`Arg`].
pub trait ToArg {
    /// The recorded form.
    fn to_arg(&self) -> Arg;
}

impl<T: Scalar> ToArg for Tensor<T> {
    fn to_arg(&self) -> Arg {
        observe(self);
        Arg::Tensor(self.id)
    }
}
impl<T: Scalar> ToArg for &Tensor<T> {
    fn to_arg(&self) -> Arg {
        observe(*self);
        Arg::Tensor(self.id)
    }
}
impl<T: Scalar> ToArg for [Tensor<T>] {
    fn to_arg(&self) -> Arg {
        self.iter().for_each(observe);
        Arg::TensorList(self.iter().map(|t| t.id).collect())
    }
}
impl ToArg for f32 {
    fn to_arg(&self) -> Arg {
        Arg::Float(*self as f64)
    }
}
impl ToArg for f64 {
    fn to_arg(&self) -> Arg {
        Arg::Float(*self)
    }
}
impl ToArg for i32 {
    fn to_arg(&self) -> Arg {
        Arg::Int(*self as i64)
    }
}
impl ToArg for i64 {
    fn to_arg(&self) -> Arg {
        Arg::Int(*self)
    }
}
impl ToArg for usize {
    fn to_arg(&self) -> Arg {
        Arg::Int(*self as i64)
    }
}
impl ToArg for bool {
    fn to_arg(&self) -> Arg {
        Arg::Bool(*self)
    }
}
impl ToArg for [i64] {
    fn to_arg(&self) -> Arg {
        Arg::Ints(self.to_vec())
    }
}
impl ToArg for [usize] {
    fn to_arg(&self) -> Arg {
        Arg::Ints(self.iter().map(|&x| x as i64).collect())
    }
}
impl<A: ToArg> ToArg for Option<A> {
    fn to_arg(&self) -> Arg {
        match self {
            Some(a) => a.to_arg(),
            None => Arg::None,
        }
    }
}
