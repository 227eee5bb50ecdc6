//! The recording core: every public op runs through [`op`], which records one
//! node when a trace is active on this thread and the op was called by user
//! code (not from inside another op).

use std::cell::{Cell, RefCell};

use crate::element::Element;
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
#[derive(Clone, Debug, PartialEq)]
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
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static NODES: RefCell<Vec<Node>> = const { RefCell::new(Vec::new()) };
}

/// Values that a recorded op can return.
pub trait Outputs {
    /// The identities of the returned tensors.
    fn output_ids(&self) -> Vec<TensorId>;
    /// True if the value is a list of tensors.
    fn is_list(&self) -> bool {
        false
    }
}

impl<T: Element> Outputs for Tensor<T> {
    fn output_ids(&self) -> Vec<TensorId> {
        vec![self.id]
    }
}

impl<T: Element> Outputs for Vec<Tensor<T>> {
    fn output_ids(&self) -> Vec<TensorId> {
        self.iter().map(|t| t.id).collect()
    }
    fn is_list(&self) -> bool {
        true
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
    let out = {
        let _g = DepthGuard(depth);
        DEPTH.with(|d| d.set(depth + 1));
        f()
    };
    if depth == 0 {
        let node = Node {
            op: name,
            args: args(),
            outputs: out.output_ids(),
            list: out.is_list(),
        };
        NODES.with(|n| n.borrow_mut().push(node));
    }
    out
}

/// Relabels the node just recorded for an in-place op that ran on a
/// donated buffer (one nobody else can observe) as its functional twin
/// `functional` producing the fresh value `new_out` (see
/// [`crate::rt::donated`]): the graph shows `add(x, y) -> new`, not
/// `add_(x, y)`. Does nothing unless a trace is recording at user level
/// and the last node is the in-place twin of `functional` that returned
/// `inplace_out`.
#[inline]
pub(crate) fn record_as_functional(
    inplace_out: TensorId,
    functional: &'static str,
    new_out: TensorId,
) {
    if is_recording() {
        relabel_last(inplace_out, functional, new_out);
    }
}

fn relabel_last(inplace_out: TensorId, functional: &'static str, new_out: TensorId) {
    if DEPTH.with(|d| d.get()) != 0 {
        return;
    }
    NODES.with(|n| {
        if let Some(node) = n.borrow_mut().last_mut()
            && node.outputs == [inplace_out]
            && matches!(
                crate::optable::lookup(node.op).map(|i| i.kind),
                Some(crate::optable::OpKind::Inplace { functional: f }) if f == functional
            )
        {
            node.op = functional;
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
    DEPTH.with(|d| d.set(0));
    ACTIVE.with(|a| a.set(true));
}

/// Stops recording and returns the nodes recorded since [`start_recording`].
pub fn stop_recording() -> Vec<Node> {
    ACTIVE.with(|a| a.set(false));
    NODES.with(|n| std::mem::take(&mut *n.borrow_mut()))
}

/// Conversion of an op argument into a recorded [`Arg`].
pub trait ToArg {
    /// The recorded form.
    fn to_arg(&self) -> Arg;
}

impl<T: Element> ToArg for Tensor<T> {
    fn to_arg(&self) -> Arg {
        Arg::Tensor(self.id)
    }
}
impl<T: Element> ToArg for &Tensor<T> {
    fn to_arg(&self) -> Arg {
        Arg::Tensor(self.id)
    }
}
impl<T: Element> ToArg for [Tensor<T>] {
    fn to_arg(&self) -> Arg {
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
