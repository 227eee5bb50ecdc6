//! Test support: trace a function eagerly, export its graph to ONNX, run the
//! model in tract (a real ONNX engine) on the inputs' values from before the
//! call, and compare the model's outputs and input updates with what the
//! eager run produced. Shared by `funcz-runtime/tests/onnx.rs` and the root
//! crate's `tests/onnx_export.rs` (included by path).

#![allow(dead_code)]

use funcz_runtime::trace::{
    ExampleValue, Graph, OnnxModel, TensorData, TensorMeta, TraceInput, TraceOutput, TracedRun,
    Tracer,
};
use funcz_runtime::{Element, Tensor};
use tract_onnx::prelude::{TValue, Tensor as TTensor};

/// A value with its shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Val {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

/// Tensors whose values can be read (inputs and results of a traced fn).
pub trait Probe {
    fn vals(&self, out: &mut Vec<Val>);
}

impl<T: Element> Probe for Tensor<T> {
    fn vals(&self, out: &mut Vec<Val>) {
        out.push(Val {
            shape: self.shape().to_vec(),
            data: TensorData::of(self).expect("a dtype the exporter knows"),
        });
    }
}

impl<P: Probe + ?Sized> Probe for &P {
    fn vals(&self, out: &mut Vec<Val>) {
        (**self).vals(out)
    }
}

impl<P: Probe> Probe for [P] {
    fn vals(&self, out: &mut Vec<Val>) {
        for p in self {
            p.vals(out);
        }
    }
}

impl<P: Probe> Probe for Vec<P> {
    fn vals(&self, out: &mut Vec<Val>) {
        self.as_slice().vals(out)
    }
}

impl<P: Probe, const N: usize> Probe for [P; N] {
    fn vals(&self, out: &mut Vec<Val>) {
        self.as_slice().vals(out)
    }
}

impl Probe for () {
    fn vals(&self, _: &mut Vec<Val>) {}
}

macro_rules! probe_tuple {
    ($($n:ident),+) => {
        impl<$($n: Probe),+> Probe for ($($n,)+) {
            #[allow(non_snake_case)]
            fn vals(&self, out: &mut Vec<Val>) {
                let ($($n,)+) = self;
                $($n.vals(out);)+
            }
        }
    };
}
probe_tuple!(A);
probe_tuple!(A, B);
probe_tuple!(A, B, C);
probe_tuple!(A, B, C, D);
probe_tuple!(A, B, C, D, E);
probe_tuple!(A, B, C, D, E, F);

pub fn vals_of(p: &(impl Probe + ?Sized)) -> Vec<Val> {
    let mut v = Vec::new();
    p.vals(&mut v);
    v
}

/// `v` as a tract tensor of the model input's dtype `dtype`.
fn to_tract(v: &Val, dtype: funcz_runtime::trace::DType) -> TValue {
    use funcz_runtime::trace::DType;
    let t: TTensor = match (&v.data, dtype) {
        (TensorData::Float32(d), _) => TTensor::from_shape(&v.shape, d).unwrap(),
        (TensorData::Float64(d), _) => TTensor::from_shape(&v.shape, d).unwrap(),
        (TensorData::Int64(d), DType::Int32) => {
            let d: Vec<i32> = d.iter().map(|&x| x as i32).collect();
            TTensor::from_shape(&v.shape, &d).unwrap()
        }
        (TensorData::Int64(d), _) => TTensor::from_shape(&v.shape, d).unwrap(),
        (TensorData::Bool(d), _) => TTensor::from_shape(&v.shape, d).unwrap(),
    };
    use tract_onnx::prelude::IntoTValue;
    t.into_tvalue()
}

fn from_tract(t: &TTensor, meta: &TensorMeta) -> Val {
    use funcz_runtime::trace::DType;
    fn read<D: tract_onnx::prelude::Datum + Copy>(t: &TTensor) -> Vec<D> {
        // tract may hand integer results back as symbolic dims (TDim).
        let t = t
            .cast_to::<D>()
            .unwrap_or_else(|e| panic!("tract output of an unexpected type: {e:?}"));
        t.to_plain_array_view::<D>()
            .unwrap_or_else(|e| panic!("tract output of an unexpected type: {e:?}"))
            .iter()
            .copied()
            .collect()
    }
    let data = match meta.dtype {
        DType::Float32 => TensorData::Float32(read::<f32>(t)),
        DType::Float64 => TensorData::Float64(read::<f64>(t)),
        DType::Int32 => TensorData::Int64(read::<i32>(t).into_iter().map(|x| x as i64).collect()),
        DType::Bool => TensorData::Bool(read::<bool>(t)),
        _ => TensorData::Int64(read::<i64>(t)),
    };
    Val {
        shape: t.shape().to_vec(),
        data,
    }
}

/// Runs `model` in tract on `inputs` (one per model input, in order).
pub fn run_tract(model: &OnnxModel, inputs: &[Val]) -> Vec<Val> {
    use tract_onnx::prelude::*;
    assert_eq!(
        inputs.len(),
        model.inputs.len(),
        "one value per model input"
    );
    let plan = tract_onnx::onnx()
        .model_for_read(&mut model.bytes.as_slice())
        .unwrap_or_else(|e| panic!("tract cannot read the model: {e:?}\n{}", model.graph))
        .into_optimized()
        .unwrap_or_else(|e| panic!("tract cannot optimize the model: {e:?}\n{}", model.graph))
        .into_runnable()
        .unwrap_or_else(|e| panic!("tract cannot plan the model: {e:?}\n{}", model.graph));
    let ins: TVec<TValue> = inputs
        .iter()
        .zip(&model.inputs)
        .map(|(v, i)| to_tract(v, i.meta.dtype))
        .collect();
    let outs = plan
        .run(ins)
        .unwrap_or_else(|e| panic!("tract cannot run the model: {e:?}\n{}", model.graph));
    outs.iter()
        .zip(&model.outputs)
        .map(|(t, o)| from_tract(t, &o.meta))
        .collect()
}

/// Values agree: same shape, integers and bools equal, floats within a
/// relative 1e-4 (absolute 1e-5 near 0; NaN matches NaN).
pub fn assert_close(what: &str, got: &Val, want: &Val) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    match (&got.data, &want.data) {
        (TensorData::Int64(a), TensorData::Int64(b)) => assert_eq!(a, b, "{what}"),
        (TensorData::Bool(a), TensorData::Bool(b)) => assert_eq!(a, b, "{what}"),
        (a, b) => {
            let (a, b) = (a.to_f64(), b.to_f64());
            assert_eq!(a.len(), b.len(), "{what}: length");
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                let ok = (x.is_nan() && y.is_nan())
                    || x == y
                    || (x - y).abs() <= 1e-5 + 1e-4 * y.abs().max(x.abs());
                assert!(
                    ok,
                    "{what}: element {i}: tract {x} vs eager {y}\n{a:?}\n{b:?}"
                );
            }
        }
    }
}

/// If `FUNCZ_ONNX_OUT` names a directory, writes the model there with the
/// values an engine must reproduce (`{name}-{pid}-{n}.onnx` and `.json`:
/// inputs, and the expected value of every output), for
/// `scripts/check_onnxruntime.py`.
fn save_for_other_engines(model: &OnnxModel, before: &[Val], after: &[Val], results: &[Val]) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let Some(dir) = std::env::var_os("FUNCZ_ONNX_OUT") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = N.fetch_add(1, Ordering::Relaxed);
    let safe: String = model
        .graph
        .name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let stem = dir.join(format!("{safe}-{}-{n}", std::process::id()));
    let json_val = |name: &str, v: &Val| {
        let data: Vec<String> = v
            .data
            .to_f64()
            .iter()
            .map(|x| {
                if x.is_finite() {
                    format!("{x:?}")
                } else {
                    format!("\"{x}\"")
                }
            })
            .collect();
        let dtype = match &v.data {
            TensorData::Float32(_) => "float32",
            TensorData::Float64(_) => "float64",
            TensorData::Int64(_) => "int64",
            TensorData::Bool(_) => "bool",
        };
        format!(
            "{{\"name\":\"{name}\",\"dtype\":\"{dtype}\",\"shape\":{:?},\"data\":[{}]}}",
            v.shape,
            data.join(",")
        )
    };
    let inputs: Vec<String> = model
        .inputs
        .iter()
        .zip(before)
        .map(|(i, v)| json_val(&i.name, v))
        .collect();
    let n_updates = model.input_updates.len();
    let mut outputs = Vec::new();
    for (k, o) in model.outputs.iter().enumerate() {
        let want = if k < n_updates {
            let input = &model.input_updates[k].input;
            let i = model.inputs.iter().position(|x| &x.name == input).unwrap();
            &after[i]
        } else {
            &results[k - n_updates]
        };
        outputs.push(json_val(&o.name, want));
    }
    let json = format!(
        "{{\"inputs\":[{}],\"outputs\":[{}]}}",
        inputs.join(","),
        outputs.join(",")
    );
    std::fs::write(stem.with_extension("onnx"), &model.bytes).unwrap();
    std::fs::write(stem.with_extension("json"), json).unwrap();
}

/// The result of one check.
pub struct Checked {
    pub graph: Graph,
    pub model: OnnxModel,
}

/// Checks the exported model of `graph` against eager values: run on
/// `before` (the inputs' values before the eager call), its user outputs
/// must match `results` and each input update the input's value `after`
/// the call; an input without an update must be unchanged by the call.
pub fn check_model(graph: &Graph, before: &[Val], after: &[Val], results: &[Val]) -> Checked {
    let model = graph
        .export_onnx()
        .unwrap_or_else(|e| panic!("{e}\n{graph}"));
    save_for_other_engines(&model, before, after, results);
    let outs = run_tract(&model, before);
    let n_updates = model.input_updates.len();
    assert_eq!(outs.len(), n_updates + results.len(), "{}", model.graph);
    for (got, want) in outs[n_updates..].iter().zip(results) {
        assert_close(
            &format!("output of {}\n{}", graph.name(), model.graph),
            got,
            want,
        );
    }
    for (k, inp) in model.inputs.iter().enumerate() {
        match model.update_of(&inp.name) {
            Some(o) => assert_close(
                &format!(
                    "update of {} in {}\n{}",
                    inp.name,
                    graph.name(),
                    model.graph
                ),
                &outs[o],
                &after[k],
            ),
            None => assert_close(
                &format!(
                    "{} has no update output but the eager call changed it\n{}",
                    inp.name, model.graph
                ),
                &before[k],
                &after[k],
            ),
        }
    }
    Checked {
        graph: graph.clone(),
        model,
    }
}

/// Values of a traced run as [`Val`]s.
pub fn vals(v: &[ExampleValue]) -> Vec<Val> {
    v.iter()
        .map(|e| Val {
            shape: e.meta.shape.clone(),
            data: e.data.clone(),
        })
        .collect()
}

/// Checks the exported model of a traced run against its example values.
pub fn check_run(run: &TracedRun) -> Checked {
    check_model(
        &run.graph,
        &vals(&run.inputs),
        &vals(&run.inputs_after),
        &vals(&run.outputs),
    )
}

/// A trace checked in tract: `Check::new(name).input(..).run(f)`.
pub struct Check {
    tracer: Tracer,
}

impl Check {
    pub fn new(name: &str) -> Self {
        Check {
            tracer: Tracer::new(name).with_examples(),
        }
    }

    pub fn input(mut self, name: &str, value: &(impl TraceInput + ?Sized)) -> Self {
        self.tracer = self.tracer.input(name, value);
        self
    }

    /// Traces `f` eagerly and checks the exported model against it.
    pub fn run<R: TraceOutput>(self, f: impl FnOnce() -> R) -> Checked {
        let (_, run) = self.tracer.run_example(f);
        check_run(&run)
    }
}
