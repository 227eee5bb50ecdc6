//! The tracing entry points: [`trace`] and the [`Tracer`] builder.
//!
//! Inputs are named PyTorch-style: an input `a` becomes the placeholder
//! `a_1`; a list input `xs` (a slice, `Vec` or array of tensors) is one
//! placeholder `xs_1` whose elements print as `xs_1[0]`, `xs_1[1]`, ...
//! Inputs may have different element types.

use std::rc::Rc;

use super::graph::{Graph, InputSpec};
use super::meta::{TensorData, TensorMeta};
use super::record::{
    ConstantValues, is_recording, mark_known, observe, start_recording,
    stop_recording_with_constants,
};
use crate::element::Scalar;
use crate::tensor::{Tensor, TensorId};

/// A value that can be a graph input: a tensor, or a list of tensors.
pub trait TraceInput {
    /// The identities of the tensors (one for a tensor).
    fn input_ids(&self) -> Vec<TensorId>;
    /// True for a list of tensors (its placeholder is indexed `xs_1[i]`).
    fn is_list(&self) -> bool {
        false
    }
    /// The shape and dtype of each tensor, as `input_ids` (empty if
    /// unknown).
    fn input_metas(&self) -> Vec<TensorMeta> {
        Vec::new()
    }
    /// A reader of the tensors' current values through second handles of
    /// them (used by [`Tracer::run_example`] to read the inputs after the
    /// call).
    fn probe(&self) -> Probe {
        Rc::new(Vec::new)
    }
}

/// Reads the current values of some tensors (see [`TraceInput::probe`]).
pub type Probe = Rc<dyn Fn() -> Vec<ExampleValue>>;

/// The value of one tensor in a [`TracedRun`].
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ExampleValue {
    /// Shape and dtype.
    pub meta: TensorMeta,
    /// Values, row-major.
    pub data: TensorData,
}

impl ExampleValue {
    /// The value of `t` (`None` if its dtype has no [`DType`](super::DType)).
    pub fn of<T: Scalar>(t: &Tensor<T>) -> Option<Self> {
        Some(ExampleValue {
            meta: TensorMeta::of(t)?,
            data: TensorData::of(t)?,
        })
    }
}

/// One traced call with its example values, as `torch.export` keeps example
/// inputs with a program: the graph, the inputs' values before and after
/// the call (one per tensor, list inputs flattened, in placeholder order)
/// and the returned values (in the graph's output order).
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TracedRun {
    /// The recorded graph.
    pub graph: Graph,
    /// The inputs before the call.
    pub inputs: Vec<ExampleValue>,
    /// The inputs after the call (a mutated input shows its new values).
    pub inputs_after: Vec<ExampleValue>,
    /// The returned values.
    pub outputs: Vec<ExampleValue>,
}

#[cfg(feature = "serde")]
impl TracedRun {
    /// The run as JSON (feature `serde`; what `FUNCZ_TRACE_DUMP` writes).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("funcz: a traced run always serializes")
    }

    /// Reads a run written by [`to_json`](Self::to_json), checking its
    /// graph's references.
    pub fn from_json(json: &str) -> Result<TracedRun, super::JsonError> {
        let run: TracedRun = serde_json::from_str(json).map_err(super::JsonError::Syntax)?;
        run.graph.check_refs().map_err(super::JsonError::Invalid)?;
        Ok(run)
    }
}

impl<T: Scalar> TraceInput for Tensor<T> {
    fn input_ids(&self) -> Vec<TensorId> {
        vec![self.id()]
    }
    fn input_metas(&self) -> Vec<TensorMeta> {
        TensorMeta::of(self).into_iter().collect()
    }
    fn probe(&self) -> Probe {
        let h = self.shallow_clone();
        Rc::new(move || ExampleValue::of(&h).into_iter().collect())
    }
}

impl<T: Scalar> TraceInput for [Tensor<T>] {
    fn input_ids(&self) -> Vec<TensorId> {
        self.iter().map(Tensor::id).collect()
    }
    fn is_list(&self) -> bool {
        true
    }
    fn input_metas(&self) -> Vec<TensorMeta> {
        let m: Vec<TensorMeta> = self.iter().filter_map(TensorMeta::of).collect();
        if m.len() == self.len() { m } else { Vec::new() }
    }
    fn probe(&self) -> Probe {
        let hs: Vec<Tensor<T>> = self.iter().map(Tensor::shallow_clone).collect();
        Rc::new(move || hs.iter().filter_map(ExampleValue::of).collect())
    }
}

impl<T: Scalar> TraceInput for Vec<Tensor<T>> {
    fn input_ids(&self) -> Vec<TensorId> {
        self.as_slice().input_ids()
    }
    fn is_list(&self) -> bool {
        true
    }
    fn input_metas(&self) -> Vec<TensorMeta> {
        self.as_slice().input_metas()
    }
    fn probe(&self) -> Probe {
        self.as_slice().probe()
    }
}

impl<T: Scalar, const N: usize> TraceInput for [Tensor<T>; N] {
    fn input_ids(&self) -> Vec<TensorId> {
        self.as_slice().input_ids()
    }
    fn is_list(&self) -> bool {
        true
    }
    fn input_metas(&self) -> Vec<TensorMeta> {
        self.as_slice().input_metas()
    }
    fn probe(&self) -> Probe {
        self.as_slice().probe()
    }
}

impl<U: TraceInput + ?Sized> TraceInput for &U {
    fn input_ids(&self) -> Vec<TensorId> {
        (**self).input_ids()
    }
    fn is_list(&self) -> bool {
        (**self).is_list()
    }
    fn input_metas(&self) -> Vec<TensorMeta> {
        (**self).input_metas()
    }
    fn probe(&self) -> Probe {
        (**self).probe()
    }
}

/// A value a traced function can return; its tensors become the graph's
/// returned values, in order (tuples, `Vec`s, arrays and `Option`s are
/// flattened; scalars, `bool` and `()` contribute nothing).
pub trait TraceOutput {
    /// Appends the identities of the returned tensors to `out`.
    fn collect_ids(&self, out: &mut Vec<TensorId>);
    /// Appends the values of the returned tensors to `out`, in the order
    /// of `collect_ids`.
    fn collect_values(&self, _out: &mut Vec<ExampleValue>) {}
}

impl<T: Scalar> TraceOutput for Tensor<T> {
    fn collect_ids(&self, out: &mut Vec<TensorId>) {
        // A returned tensor no op made is a constant: keep its values.
        observe(self);
        out.push(self.id());
    }
    fn collect_values(&self, out: &mut Vec<ExampleValue>) {
        out.extend(ExampleValue::of(self));
    }
}

impl<U: TraceOutput + ?Sized> TraceOutput for &U {
    fn collect_ids(&self, out: &mut Vec<TensorId>) {
        (**self).collect_ids(out)
    }
    fn collect_values(&self, out: &mut Vec<ExampleValue>) {
        (**self).collect_values(out)
    }
}

impl<U: TraceOutput> TraceOutput for [U] {
    fn collect_ids(&self, out: &mut Vec<TensorId>) {
        for x in self {
            x.collect_ids(out);
        }
    }
    fn collect_values(&self, out: &mut Vec<ExampleValue>) {
        for x in self {
            x.collect_values(out);
        }
    }
}

impl<U: TraceOutput> TraceOutput for Vec<U> {
    fn collect_ids(&self, out: &mut Vec<TensorId>) {
        self.as_slice().collect_ids(out)
    }
    fn collect_values(&self, out: &mut Vec<ExampleValue>) {
        self.as_slice().collect_values(out)
    }
}

impl<U: TraceOutput, const N: usize> TraceOutput for [U; N] {
    fn collect_ids(&self, out: &mut Vec<TensorId>) {
        self.as_slice().collect_ids(out)
    }
    fn collect_values(&self, out: &mut Vec<ExampleValue>) {
        self.as_slice().collect_values(out)
    }
}

impl<U: TraceOutput> TraceOutput for Option<U> {
    fn collect_ids(&self, out: &mut Vec<TensorId>) {
        if let Some(x) = self {
            x.collect_ids(out)
        }
    }
    fn collect_values(&self, out: &mut Vec<ExampleValue>) {
        if let Some(x) = self {
            x.collect_values(out)
        }
    }
}

macro_rules! no_tensors {
    ($($t:ty),*) => {$(
        impl TraceOutput for $t {
            fn collect_ids(&self, _out: &mut Vec<TensorId>) {}
        }
    )*};
}
no_tensors!(
    (),
    bool,
    char,
    str,
    String,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize
);

macro_rules! tuple_output {
    ($($name:ident),+) => {
        impl<$($name: TraceOutput),+> TraceOutput for ($($name,)+) {
            #[allow(non_snake_case)]
            fn collect_ids(&self, out: &mut Vec<TensorId>) {
                let ($($name,)+) = self;
                $($name.collect_ids(out);)+
            }
            #[allow(non_snake_case)]
            fn collect_values(&self, out: &mut Vec<ExampleValue>) {
                let ($($name,)+) = self;
                $($name.collect_values(out);)+
            }
        }
    };
}
tuple_output!(A);
tuple_output!(A, B);
tuple_output!(A, B, C);
tuple_output!(A, B, C, D);
tuple_output!(A, B, C, D, E);
tuple_output!(A, B, C, D, E, G);

/// Stops the recording if the traced closure unwinds.
struct RecordingGuard;

impl Drop for RecordingGuard {
    fn drop(&mut self) {
        if is_recording() {
            drop(stop_recording_with_constants());
        }
    }
}

/// A trace under construction: a name and named inputs. Collecting the
/// inputs first means the traced closure may borrow them mutably (for
/// metadata in-place ops like `t_`).
///
/// ```
/// use funcz_runtime::{Tensor, trace::Tracer};
/// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
/// let xs = vec![Tensor::<i64>::from_vec(vec![1, 2], &[2])];
/// let ((n, _), g) = Tracer::new("forward")
///     .input("a", &a)
///     .input("xs", &xs)
///     .run(|| (xs.len(), (&xs[0], &a)));
/// assert_eq!(n, 1);
/// assert_eq!(g.to_string(), "fn forward(a_1, xs_1) {\n    return (xs_1[0], a_1);\n}\n");
/// ```
#[derive(Clone)]
pub struct Tracer {
    name: String,
    inputs: Vec<InputSpec>,
    constants: ConstantValues,
    /// Second handles of the inputs, if examples are kept.
    probes: Option<Vec<Probe>>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .finish_non_exhaustive()
    }
}

impl Tracer {
    /// A trace of a function called `name` (printed `fn name(...)`).
    pub fn new(name: &str) -> Self {
        Tracer {
            name: name.to_string(),
            inputs: Vec::new(),
            constants: ConstantValues::new(),
            probes: dump_requested().then(Vec::new),
        }
    }

    /// Keeps a second handle of each input added after this call, so
    /// [`run_example`](Self::run_example) can read the inputs' values after
    /// the call. While the trace runs, those inputs are then shared, so the
    /// runtime does not reuse their buffers for results (values are the
    /// same; see `rt::donated`).
    pub fn with_examples(mut self) -> Self {
        self.probes.get_or_insert_with(Vec::new);
        self
    }

    /// Records the current values of `t`, a tensor made outside the trace
    /// that the traced code reads (a weight, a table): if it becomes a
    /// constant of the graph, the graph carries these values, so the graph
    /// can be exported (tensors passed to ops by reference are captured
    /// automatically when first read; this is for the others).
    pub fn capture<T: Scalar>(mut self, t: &Tensor<T>) -> Self {
        if let (Some(m), Some(d)) = (TensorMeta::of(t), super::meta::TensorData::of(t)) {
            self.constants.insert(t.id(), (m, d));
        }
        self
    }

    /// Adds an input named `name` (placeholder `name_1`).
    pub fn input(mut self, name: &str, value: &(impl TraceInput + ?Sized)) -> Self {
        let ids = value.input_ids();
        let spec = if value.is_list() {
            InputSpec::list(name, ids)
        } else {
            InputSpec {
                name: name.to_string(),
                ids,
                list: false,
                metas: Vec::new(),
            }
        };
        self.inputs.push(spec.with_metas(value.input_metas()));
        if let Some(p) = &mut self.probes {
            p.push(value.probe());
        }
        self
    }

    /// Records every op `f` executes on this thread and builds the graph;
    /// returns `f`'s result with it. Panics if a trace is already being
    /// recorded on this thread. If `f` panics, recording is stopped before
    /// the panic propagates.
    ///
    /// If the environment variable `FUNCZ_TRACE_DUMP` names a directory
    /// (and the `serde` feature is on), every traced call is also written
    /// there as a [`TracedRun`] in JSON (`{name}-{pid}-{n}.json`), so the
    /// traces a program or test suite makes can be exported and checked
    /// offline (the tracer then keeps examples, see
    /// [`with_examples`](Self::with_examples)).
    pub fn run<R: TraceOutput>(self, f: impl FnOnce() -> R) -> (R, Graph) {
        #[cfg(feature = "serde")]
        if let Some(dir) = dump_dir() {
            let (r, run) = self.run_example(f);
            dump(&dir, &run);
            return (r, run.graph);
        }
        self.run_graph(f)
    }

    /// [`run`](Self::run), also returning the example values of the call:
    /// the inputs before and after it and the returned values. Needs
    /// [`with_examples`](Self::with_examples) before the inputs (panics
    /// otherwise).
    ///
    /// ```
    /// use funcz_runtime::{Tensor, trace::{TensorData, Tracer}};
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let (_, run) = Tracer::new("f").with_examples().input("a", &a).run_example(|| {
    ///     a.add_(1.0);
    ///     a.mul(2.0)
    /// });
    /// assert_eq!(run.inputs[0].data, TensorData::Float32(vec![1.0, 2.0]));
    /// assert_eq!(run.inputs_after[0].data, TensorData::Float32(vec![2.0, 3.0]));
    /// assert_eq!(run.outputs[0].data, TensorData::Float32(vec![4.0, 6.0]));
    /// assert_eq!(run.graph.ops(), vec!["add_", "mul"]);
    /// ```
    pub fn run_example<R: TraceOutput>(self, f: impl FnOnce() -> R) -> (R, TracedRun) {
        let probes = self.probes.clone().unwrap_or_else(|| {
            panic!(
                "funcz: Tracer::run_example (trace `{}`): call with_examples() before adding \
                 the inputs",
                self.name
            )
        });
        let inputs: Vec<ExampleValue> = probes.iter().flat_map(|p| p()).collect();
        let (r, graph) = self.run_graph(f);
        let inputs_after = probes.iter().flat_map(|p| p()).collect();
        let mut outputs = Vec::new();
        r.collect_values(&mut outputs);
        let run = TracedRun {
            graph,
            inputs,
            inputs_after,
            outputs,
        };
        (r, run)
    }

    fn run_graph<R: TraceOutput>(self, f: impl FnOnce() -> R) -> (R, Graph) {
        start_recording();
        mark_known(self.inputs.iter().flat_map(|s| s.ids.iter().copied()));
        let guard = RecordingGuard;
        let result = f();
        let mut outputs = Vec::new();
        result.collect_ids(&mut outputs);
        let reads = super::record::take_host_reads();
        let (nodes, mut constants) = stop_recording_with_constants();
        drop(guard);
        for (id, v) in self.constants {
            constants.entry(id).or_insert(v);
        }
        let mut graph =
            Graph::from_recording(&self.name, &self.inputs, nodes, &outputs, &constants);
        graph.set_host_reads(reads.iter().map(|s| s.to_string()).collect());
        (result, graph)
    }
}

/// True if traces are to be dumped (`FUNCZ_TRACE_DUMP`, feature `serde`).
fn dump_requested() -> bool {
    #[cfg(feature = "serde")]
    {
        dump_dir().is_some()
    }
    #[cfg(not(feature = "serde"))]
    {
        false
    }
}

/// The directory `FUNCZ_TRACE_DUMP` names, if any.
#[cfg(feature = "serde")]
fn dump_dir() -> Option<std::path::PathBuf> {
    std::env::var_os("FUNCZ_TRACE_DUMP")
        .filter(|d| !d.is_empty())
        .map(Into::into)
}

/// Writes `run` into `dir` (see [`Tracer::run`]); a failure to write is
/// reported on stderr, never a panic in the traced program.
#[cfg(feature = "serde")]
fn dump(dir: &std::path::Path, run: &TracedRun) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let safe: String = run
        .graph
        .name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let path = dir.join(format!("{safe}-{}-{n}.json", std::process::id()));
    let json = run.to_json();
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, json)) {
        eprintln!(
            "funcz: FUNCZ_TRACE_DUMP: cannot write {}: {e}",
            path.display()
        );
    }
}

/// Runs `f` while recording every op it executes, and returns its result
/// with the graph (the `make_fx` of funcz). `inputs` names the tensors (or
/// lists of tensors) `f` reads as inputs; any other tensor `f` uses without
/// making it by a recorded op becomes a constant `_tensor_constant{i}`.
///
/// ```
/// use funcz_runtime::{Tensor, trace::trace};
/// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
/// let b = Tensor::<i64>::from_vec(vec![3, 4], &[2]);
/// let ((), g) = trace("forward", &[("a", &a), ("b", &b)], || ());
/// assert_eq!(g.to_string(), "fn forward(a_1, b_1) {\n    return ();\n}\n");
/// let (_, g) = trace("f", &[("a", &a)], || a.id());
/// assert!(g.is_empty() && g.outputs().is_empty());
/// ```
pub fn trace<R: TraceOutput>(
    name: &str,
    inputs: &[(&str, &dyn TraceInput)],
    f: impl FnOnce() -> R,
) -> (R, Graph) {
    let mut tracer = Tracer::new(name);
    for (n, v) in inputs {
        tracer = tracer.input(n, *v);
    }
    tracer.run(f)
}

#[cfg(test)]
mod tests {
    //! End-to-end recording with tiny private ops (the real ops live in
    //! `ops/` and `view/`).

    use super::*;
    use crate::element::Element;
    use crate::layout::Layout;
    use crate::trace::{Arg, ToArg, op, untraced};

    fn add<T: Element>(t: &Tensor<T>, s: T) -> Tensor<T> {
        op(
            "add",
            || vec![t.to_arg(), Arg::Float(s.to_f64())],
            || Tensor::from_contiguous(t.to_vec().into_iter().map(|x| x + s).collect(), t.shape()),
        )
    }

    fn add_<T: Element>(t: &Tensor<T>, s: T) -> Tensor<T> {
        op(
            "add_",
            || vec![t.to_arg(), Arg::Float(s.to_f64())],
            || {
                let vals = t.to_vec();
                let mut data = t.storage.write();
                for (o, v) in t.layout.offsets().zip(vals) {
                    data[o] = v + s;
                }
                drop(data);
                t.handle()
            },
        )
    }

    fn view<T: Element>(t: &Tensor<T>, shape: &[i64]) -> Tensor<T> {
        op(
            "view",
            || vec![t.to_arg(), shape.to_arg()],
            || {
                let n = t.numel() as i64;
                let known: i64 = shape.iter().filter(|&&d| d >= 0).product();
                let dims: Vec<usize> = shape
                    .iter()
                    .map(|&d| {
                        if d < 0 {
                            (n / known) as usize
                        } else {
                            d as usize
                        }
                    })
                    .collect();
                t.with_layout(Layout::contiguous(&dims))
            },
        )
    }

    /// Splits a 1-d contiguous tensor into two halves (views).
    fn halves<T: Element>(t: &Tensor<T>) -> Vec<Tensor<T>> {
        op(
            "split",
            || vec![t.to_arg(), 1usize.to_arg(), 0usize.to_arg()],
            || {
                let h = t.numel() / 2;
                vec![
                    t.with_layout(Layout::new(&[h], &[1], 0)),
                    t.with_layout(Layout::new(&[h], &[1], h)),
                ]
            },
        )
    }

    /// `add` twice internally: only the outer op is recorded.
    fn add2<T: Element>(t: &Tensor<T>, s: T) -> Tensor<T> {
        op(
            "add2",
            || vec![t.to_arg(), Arg::Float(s.to_f64())],
            || add(&add(t, s), s),
        )
    }

    fn cat<T: Element>(ts: &[Tensor<T>]) -> Tensor<T> {
        op(
            "cat",
            || vec![ts.to_arg(), 0usize.to_arg()],
            || Tensor::from_contiguous(ts.iter().flat_map(|t| t.to_vec()).collect(), &[4]),
        )
    }

    #[test]
    fn seed_example_traced_end_to_end() {
        let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let (b, g) = trace("forward", &[("a", &a)], || {
            let b = add(&a, 1.0);
            let c = view(&b, &[-1]);
            add_(&c, 1.0);
            b
        });
        assert_eq!(b.to_vec(), vec![3.0, 4.0]);
        assert_eq!(
            g.to_string(),
            "fn forward(a_1) {\n    let add = aten::add(a_1, 1.0);\n    let view = aten::view(add, [-1]);\n    let add_ = aten::add_(view, 1.0);\n    return add;\n}\n"
        );
        assert!(!is_recording());
        assert!(g.has_mutations() && g.has_views() && !g.is_functional());
    }

    #[test]
    fn inplace_remaps_receiver_and_mixed_dtypes() {
        let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let n = Tensor::<i64>::from_vec(vec![5, 6], &[2]);
        let ((x, y), g) = trace("f", &[("a", &a), ("n", &n)], || {
            add_(&a, 0.5);
            let y = add(&n, 2);
            (add_(&a, 1.0), add_(&y, 1))
        });
        assert_eq!(x.to_vec(), vec![2.5, 3.5]);
        assert_eq!(y.to_vec(), vec![8, 9]);
        assert_eq!(
            g.to_string(),
            "fn f(a_1, n_1) {\n    let add_ = aten::add_(a_1, 0.5);\n    let add = aten::add(n_1, 2.0);\n    let add__1 = aten::add_(add_, 1.0);\n    let add__2 = aten::add_(add, 1.0);\n    return (add__1, add__2);\n}\n"
        );
        // add_ on a_1 then add_ again: neither is a copy_ write-back.
        assert_eq!(g.mutations_except_input_writeback().len(), 3);
    }

    #[test]
    fn list_inputs_list_outputs_constants_and_nesting() {
        let xs = vec![
            Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]),
            Tensor::<f64>::from_vec(vec![3.0, 4.0], &[2]),
        ];
        let outside = Tensor::<f64>::from_vec(vec![0.0; 4], &[4]);
        let (out, g) = Tracer::new("forward").input("xs", &xs).run(|| {
            let c = cat(&xs);
            let parts = halves(&c);
            let d = add2(&parts[1], 10.0);
            let k = Tensor::<f64>::from_vec(vec![7.0], &[1]);
            let e = untraced(|| add(&outside, 1.0));
            vec![d, k, e, parts[0].handle()]
        });
        assert_eq!(out[0].to_vec(), vec![23.0, 24.0]);
        assert_eq!(
            g.to_string(),
            "fn forward(xs_1) {\n    let cat = aten::cat([xs_1[0], xs_1[1]], 0);\n    let split = aten::split(cat, 1, 0);\n    let add2 = aten::add2(split[1], 10.0);\n    let _tensor_constant0 = self._tensor_constant0;\n    let _tensor_constant1 = self._tensor_constant1;\n    return (add2, _tensor_constant0, _tensor_constant1, split[0]);\n}\n"
        );
        assert_eq!(g.ops(), vec!["cat", "split", "add2"]);
        assert_eq!(g.constants().len(), 2);
        assert_eq!(g.constants()[0].id, out[1].id());
    }

    #[test]
    fn panic_inside_trace_stops_recording() {
        let a = Tensor::<f32>::from_vec(vec![1.0], &[1]);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            trace("f", &[("a", &a)], || {
                add(&a, 1.0);
                if a.numel() == 1 {
                    panic!("boom");
                }
            })
        }));
        assert!(r.is_err());
        assert!(!is_recording());
        // A new trace starts clean.
        let (_, g) = trace("f", &[("a", &a)], || add(&a, 2.0));
        assert_eq!(g.ops(), vec!["add"]);
    }

    #[test]
    fn ops_outside_a_trace_are_not_recorded() {
        let a = Tensor::<f32>::from_vec(vec![1.0], &[1]);
        let _ = add(&a, 1.0);
        let (_, g) = trace("f", &[("a", &a)], || ());
        assert!(g.is_empty());
        assert_eq!(g.to_string(), "fn f(a_1) {\n    return ();\n}\n");
    }

    #[test]
    #[should_panic(expected = "funcz: trace: a trace is already being recorded")]
    fn traces_do_not_nest() {
        trace("outer", &[], || {
            trace("inner", &[], || ());
        });
    }

    #[test]
    fn metadata_inplace_closure_can_borrow_input_mutably() {
        let mut a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let (_, g) = Tracer::new("f").input("a", &a).run(|| {
            a = view(&a, &[2, 1]);
        });
        assert_eq!(g.ops(), vec!["view"]);
        assert_eq!(a.shape(), &[2, 1]);
    }
}
