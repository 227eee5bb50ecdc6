//! The exporter's mappings for the ops of the ops issue (comparisons,
//! masks, indexed reads and writes, softmax, joins, ...), checked in tract
//! on hand-built graphs with PyTorch's argument order, against values
//! worked out by hand (the runtime ops may land after the exporter; once
//! they do, `tests/onnx.rs`-style traced checks cover them too).
#![cfg(feature = "onnx")]

mod support;

use funcz_runtime::trace::{Arg, DType, Graph, InputSpec, Node, TensorData, TensorMeta};
use support::onnx_check::{Val, assert_close, run_tract};

fn f32v(shape: &[usize], v: Vec<f32>) -> Val {
    Val {
        shape: shape.to_vec(),
        data: TensorData::Float32(v),
    }
}

fn i64v(shape: &[usize], v: Vec<i64>) -> Val {
    Val {
        shape: shape.to_vec(),
        data: TensorData::Int64(v),
    }
}

fn boolv(shape: &[usize], v: Vec<bool>) -> Val {
    Val {
        shape: shape.to_vec(),
        data: TensorData::Bool(v),
    }
}

fn dtype(v: &Val) -> DType {
    match v.data {
        TensorData::Float32(_) => DType::Float32,
        TensorData::Float64(_) => DType::Float64,
        TensorData::Int64(_) => DType::Int64,
        TensorData::Bool(_) => DType::Bool,
    }
}

/// Runs one node `op(args)` on `inputs` (ids 1, 2, ... in order) in tract.
fn run_op(
    op: &'static str,
    inputs: &[Val],
    args: Vec<Arg>,
    outs: &[(Vec<usize>, DType)],
) -> Vec<Val> {
    let specs: Vec<InputSpec> = inputs
        .iter()
        .enumerate()
        .map(|(i, v)| {
            InputSpec::tensor(&format!("x{i}"), i as u64 + 1)
                .with_metas(vec![TensorMeta::new(&v.shape, dtype(v))])
        })
        .collect();
    let ids: Vec<u64> = (0..outs.len() as u64).map(|k| 100 + k).collect();
    let node = Node {
        op,
        args,
        outputs: ids.clone(),
        list: outs.len() > 1,
        metas: outs.iter().map(|(s, d)| TensorMeta::new(s, *d)).collect(),
    };
    let g = Graph::from_nodes("f", &specs, vec![node], &ids);
    let model = g.export_onnx().unwrap_or_else(|e| panic!("{op}: {e}"));
    run_tract(&model, inputs)
}

fn check1(op: &'static str, inputs: Vec<Val>, args: Vec<Arg>, want: Val) {
    let d = dtype(&want);
    let got = run_op(op, &inputs, args, &[(want.shape.clone(), d)]);
    assert_close(op, &got[0], &want);
}

use Arg::{Bool as B, Float as F, Int as I, Ints, None as N, Tensor as T, TensorList as TL};

#[test]
fn comparisons_masks_and_logic() {
    let a = f32v(&[4], vec![1.0, -2.0, 3.0, 0.0]);
    let b = f32v(&[4], vec![1.0, 2.0, -3.0, 0.5]);
    let cases: [(&str, Vec<bool>); 6] = [
        ("eq", vec![true, false, false, false]),
        ("ne", vec![false, true, true, true]),
        ("lt", vec![false, true, false, true]),
        ("le", vec![true, true, false, true]),
        ("gt", vec![false, false, true, false]),
        ("ge", vec![true, false, true, false]),
    ];
    for (op, want) in cases {
        check1(
            op,
            vec![a.clone(), b.clone()],
            vec![T(1), T(2)],
            boolv(&[4], want),
        );
    }
    // Against a scalar.
    check1(
        "gt",
        vec![a.clone()],
        vec![T(1), F(0.5)],
        boolv(&[4], vec![true, false, true, false]),
    );
    let m = boolv(&[4], vec![true, false, true, false]);
    let n = boolv(&[4], vec![true, true, false, false]);
    check1(
        "logical_not",
        vec![m.clone()],
        vec![T(1)],
        boolv(&[4], vec![false, true, false, true]),
    );
    check1(
        "logical_and",
        vec![m.clone(), n.clone()],
        vec![T(1), T(2)],
        boolv(&[4], vec![true, false, false, false]),
    );
    check1(
        "logical_or",
        vec![m.clone(), n.clone()],
        vec![T(1), T(2)],
        boolv(&[4], vec![true, true, true, false]),
    );
    check1(
        "logical_xor",
        vec![m.clone(), n.clone()],
        vec![T(1), T(2)],
        boolv(&[4], vec![false, true, true, false]),
    );
    check1(
        "where",
        vec![m.clone(), a.clone(), b.clone()],
        vec![T(1), T(2), T(3)],
        f32v(&[4], vec![1.0, 2.0, 3.0, 0.5]),
    );
    check1(
        "where",
        vec![m.clone(), a.clone()],
        vec![T(1), T(2), F(9.0)],
        f32v(&[4], vec![1.0, 9.0, 3.0, 9.0]),
    );
    check1(
        "masked_fill",
        vec![a.clone(), m.clone()],
        vec![T(1), T(2), F(-1.0)],
        f32v(&[4], vec![-1.0, -2.0, -1.0, 0.0]),
    );
    check1("any", vec![m.clone()], vec![T(1)], boolv(&[], vec![true]));
    check1("all", vec![m.clone()], vec![T(1)], boolv(&[], vec![false]));
    check1(
        "to",
        vec![m.clone()],
        vec![T(1)],
        f32v(&[4], vec![1.0, 0.0, 1.0, 0.0]),
    );
    check1(
        "_to_copy",
        vec![a.clone()],
        vec![T(1)],
        i64v(&[4], vec![1, -2, 3, 0]),
    );
}

#[test]
fn elementwise_math() {
    let a = f32v(&[4], vec![0.25, -1.5, 2.0, 30.0]);
    let v = |f: fn(f64) -> f64| -> Val {
        f32v(
            &[4],
            [0.25f64, -1.5, 2.0, 30.0]
                .iter()
                .map(|&x| f(x) as f32)
                .collect(),
        )
    };
    let pos = f32v(&[3], vec![0.25, 4.0, 9.0]);
    check1(
        "rsqrt",
        vec![pos.clone()],
        vec![T(1)],
        f32v(&[3], vec![2.0, 0.5, 1.0 / 3.0]),
    );
    check1(
        "reciprocal",
        vec![pos.clone()],
        vec![T(1)],
        f32v(&[3], vec![4.0, 0.25, 1.0 / 9.0]),
    );
    check1("sin", vec![a.clone()], vec![T(1)], v(f64::sin));
    check1("cos", vec![a.clone()], vec![T(1)], v(f64::cos));
    check1("floor", vec![a.clone()], vec![T(1)], v(f64::floor));
    check1("ceil", vec![a.clone()], vec![T(1)], v(f64::ceil));
    check1("sign", vec![a.clone()], vec![T(1)], v(f64::signum));
    check1(
        "round",
        vec![f32v(&[4], vec![0.5, 1.5, 2.5, -0.5])],
        vec![T(1)],
        f32v(&[4], vec![0.0, 2.0, 2.0, -0.0]),
    );
    // erf(x), gelu(x) = x/2 (1 + erf(x / sqrt 2)): erf values from tables.
    let e = f32v(&[3], vec![0.0, 1.0, -2.0]);
    check1(
        "erf",
        vec![e.clone()],
        vec![T(1)],
        f32v(&[3], vec![0.0, 0.842_700_8, -0.995_322_3]),
    );
    check1(
        "gelu",
        vec![e.clone()],
        vec![T(1)],
        f32v(&[3], vec![0.0, 0.841_344_7, -0.045_500_26]),
    );
    check1(
        "silu",
        vec![a.clone()],
        vec![T(1)],
        v(|x| x / (1.0 + (-x).exp())),
    );
    check1(
        "softplus",
        vec![a.clone()],
        vec![T(1)],
        v(|x| if x > 20.0 { x } else { (1.0 + x.exp()).ln() }),
    );
    check1(
        "softplus",
        vec![a.clone()],
        vec![T(1), F(2.0), F(3.0)],
        v(|x| {
            if 2.0 * x > 3.0 {
                x
            } else {
                (1.0 + (2.0 * x).exp()).ln() / 2.0
            }
        }),
    );
    check1(
        "relu6",
        vec![a.clone()],
        vec![T(1)],
        v(|x| x.clamp(0.0, 6.0)),
    );
    check1(
        "hardtanh",
        vec![a.clone()],
        vec![T(1)],
        v(|x| x.clamp(-1.0, 1.0)),
    );
    check1(
        "clamp_min",
        vec![a.clone()],
        vec![T(1), F(0.5)],
        v(|x| x.max(0.5)),
    );
    check1(
        "clamp_max",
        vec![a.clone()],
        vec![T(1), F(0.5)],
        v(|x| x.min(0.5)),
    );
    let b = f32v(&[4], vec![1.0, 1.0, 1.0, 1.0]);
    check1(
        "maximum",
        vec![a.clone(), b.clone()],
        vec![T(1), T(2)],
        v(|x| x.max(1.0)),
    );
    check1(
        "minimum",
        vec![a.clone(), b.clone()],
        vec![T(1), T(2)],
        v(|x| x.min(1.0)),
    );
    check1(
        "add",
        vec![a.clone(), b.clone()],
        vec![T(1), T(2), F(3.0)],
        v(|x| x + 3.0),
    );
    check1(
        "sub",
        vec![a.clone(), b.clone()],
        vec![T(1), T(2), I(2)],
        v(|x| x - 2.0),
    );
}

#[test]
fn softmax_reductions_and_scans() {
    let a = f32v(&[2, 3], vec![1.0, 2.0, 3.0, -1.0, 0.0, 5.0]);
    let sm = |r: [f64; 3]| {
        let s: f64 = r.iter().map(|x| x.exp()).sum();
        r.map(|x| x.exp() / s)
    };
    let (r0, r1) = (sm([1.0, 2.0, 3.0]), sm([-1.0, 0.0, 5.0]));
    let soft: Vec<f32> = r0.iter().chain(&r1).map(|&x| x as f32).collect();
    check1(
        "softmax",
        vec![a.clone()],
        vec![T(1), I(-1), B(false)],
        f32v(&[2, 3], soft.clone()),
    );
    check1(
        "_log_softmax",
        vec![a.clone()],
        vec![T(1), I(1), B(false)],
        f32v(&[2, 3], soft.iter().map(|x| x.ln()).collect()),
    );
    check1(
        "amax",
        vec![a.clone()],
        vec![T(1), Ints(vec![1]), B(false)],
        f32v(&[2], vec![3.0, 5.0]),
    );
    check1(
        "amin",
        vec![a.clone()],
        vec![T(1), Ints(vec![0]), B(true)],
        f32v(&[1, 3], vec![-1.0, 0.0, 3.0]),
    );
    check1(
        "prod",
        vec![a.clone()],
        vec![T(1), I(1), B(false)],
        f32v(&[2], vec![6.0, 0.0]),
    );
    check1("max", vec![a.clone()], vec![T(1)], f32v(&[], vec![5.0]));
    check1(
        "min",
        vec![a.clone(), f32v(&[3], vec![0.0, 0.0, 0.0])],
        vec![T(1), T(2)],
        f32v(&[2, 3], vec![0.0, 0.0, 0.0, -1.0, 0.0, 0.0]),
    );
    let got = run_op(
        "max",
        std::slice::from_ref(&a),
        vec![T(1), I(1), B(false)],
        &[(vec![2], DType::Float32), (vec![2], DType::Int64)],
    );
    assert_close("max values", &got[0], &f32v(&[2], vec![3.0, 5.0]));
    assert_close("max indices", &got[1], &i64v(&[2], vec![2, 2]));
    check1(
        "argmax",
        vec![a.clone()],
        vec![T(1), N, B(false)],
        i64v(&[], vec![5]),
    );
    check1(
        "argmin",
        vec![a.clone()],
        vec![T(1), I(1), B(true)],
        i64v(&[2, 1], vec![0, 0]),
    );
    check1(
        "cumsum",
        vec![a.clone()],
        vec![T(1), I(1)],
        f32v(&[2, 3], vec![1.0, 3.0, 6.0, -1.0, -1.0, 4.0]),
    );
}

#[test]
fn joins_and_index_maps() {
    let a = f32v(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let b = f32v(&[1, 2], vec![5.0, 6.0]);
    check1(
        "cat",
        vec![a.clone(), b.clone()],
        vec![TL(vec![1, 2]), I(0)],
        f32v(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    );
    check1(
        "stack",
        vec![a.clone(), a.clone()],
        vec![TL(vec![1, 2]), I(1)],
        f32v(&[2, 2, 2], vec![1.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 4.0]),
    );
    check1(
        "flip",
        vec![a.clone()],
        vec![T(1), Ints(vec![0])],
        f32v(&[2, 2], vec![3.0, 4.0, 1.0, 2.0]),
    );
    check1(
        "roll",
        vec![a.clone()],
        vec![T(1), Ints(vec![1]), Ints(vec![1])],
        f32v(&[2, 2], vec![2.0, 1.0, 4.0, 3.0]),
    );
    check1(
        "roll",
        vec![a.clone()],
        vec![T(1), Ints(vec![1]), Ints(vec![])],
        f32v(&[2, 2], vec![4.0, 1.0, 2.0, 3.0]),
    );
    check1(
        "repeat",
        vec![b.clone()],
        vec![T(1), Ints(vec![2, 1, 2])],
        f32v(&[2, 1, 4], vec![5.0, 6.0, 5.0, 6.0, 5.0, 6.0, 5.0, 6.0]),
    );
    let m = f32v(&[3, 3], (1..=9).map(|x| x as f32).collect());
    check1(
        "tril",
        vec![m.clone()],
        vec![T(1), I(0)],
        f32v(&[3, 3], vec![1.0, 0.0, 0.0, 4.0, 5.0, 0.0, 7.0, 8.0, 9.0]),
    );
    check1(
        "triu",
        vec![m.clone()],
        vec![T(1), I(1)],
        f32v(&[3, 3], vec![0.0, 2.0, 3.0, 0.0, 0.0, 6.0, 0.0, 0.0, 0.0]),
    );
}

#[test]
fn indexed_reads_and_writes() {
    let x = f32v(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let idx = i64v(&[2], vec![2, 0]);
    check1(
        "index_select",
        vec![x.clone(), idx.clone()],
        vec![T(1), I(0), T(2)],
        f32v(&[2, 2], vec![5.0, 6.0, 1.0, 2.0]),
    );
    let gi = i64v(&[3, 1], vec![1, 0, 1]);
    check1(
        "gather",
        vec![x.clone(), gi.clone()],
        vec![T(1), I(1), T(2)],
        f32v(&[3, 1], vec![2.0, 3.0, 6.0]),
    );
    let src = f32v(&[3, 1], vec![10.0, 20.0, 30.0]);
    check1(
        "scatter",
        vec![x.clone(), gi.clone(), src.clone()],
        vec![T(1), I(1), T(2), T(3)],
        f32v(&[3, 2], vec![1.0, 10.0, 20.0, 4.0, 5.0, 30.0]),
    );
    check1(
        "scatter",
        vec![x.clone(), gi.clone()],
        vec![T(1), I(1), T(2), F(0.0)],
        f32v(&[3, 2], vec![1.0, 0.0, 0.0, 4.0, 5.0, 0.0]),
    );
    check1(
        "scatter_add",
        vec![x.clone(), gi.clone(), src.clone()],
        vec![T(1), I(1), T(2), T(3)],
        f32v(&[3, 2], vec![1.0, 12.0, 23.0, 4.0, 5.0, 36.0]),
    );
    let rows = f32v(&[2, 2], vec![-1.0, -2.0, -3.0, -4.0]);
    check1(
        "index_copy",
        vec![x.clone(), idx.clone(), rows.clone()],
        vec![T(1), I(0), T(2), T(3)],
        f32v(&[3, 2], vec![-3.0, -4.0, 3.0, 4.0, -1.0, -2.0]),
    );
    check1(
        "index_add",
        vec![x.clone(), idx.clone(), rows.clone()],
        vec![T(1), I(0), T(2), T(3), F(2.0)],
        f32v(&[3, 2], vec![-5.0, -6.0, 3.0, 4.0, 3.0, 2.0]),
    );
    let col = i64v(&[1], vec![1]);
    check1(
        "index_fill",
        vec![x.clone(), col.clone()],
        vec![T(1), I(1), T(2), F(7.0)],
        f32v(&[3, 2], vec![1.0, 7.0, 3.0, 7.0, 5.0, 7.0]),
    );
    // x[[2, -3], [1, 0]] = [8, 9]; then accumulate.
    let i0 = i64v(&[2], vec![2, -3]);
    let i1 = i64v(&[2], vec![1, 0]);
    let vals = f32v(&[2], vec![8.0, 9.0]);
    check1(
        "index_put",
        vec![x.clone(), i0.clone(), i1.clone(), vals.clone()],
        vec![T(1), TL(vec![2, 3]), T(4), B(false)],
        f32v(&[3, 2], vec![9.0, 2.0, 3.0, 4.0, 5.0, 8.0]),
    );
    check1(
        "index_put",
        vec![x.clone(), i0.clone(), i1.clone(), vals.clone()],
        vec![T(1), TL(vec![2, 3]), T(4), B(true)],
        f32v(&[3, 2], vec![10.0, 2.0, 3.0, 4.0, 5.0, 14.0]),
    );
    // Whole rows: x[[0, 2]] = row (broadcast).
    let r = f32v(&[2], vec![0.5, 0.25]);
    check1(
        "index_put",
        vec![x.clone(), i64v(&[2], vec![0, 2]), r.clone()],
        vec![T(1), TL(vec![2]), T(3), B(false)],
        f32v(&[3, 2], vec![0.5, 0.25, 3.0, 4.0, 0.5, 0.25]),
    );
}
