//! ONNX export checked by a real engine: functions written with in-place
//! ops and views (no macro) are traced, exported with `Graph::to_onnx`
//! (which functionalizes them), run in tract, and compared with the eager
//! results, including the new values of mutated inputs.
#![cfg(feature = "onnx")]

mod support;

use funcz_runtime::Tensor;
use funcz_runtime::trace::{Arg, DType, Graph, InputSpec, Node, TensorMeta};
use funcz_runtime::trace::{ExportError, Remove, Tracer, has_onnx_mapping};
use support::onnx_check::{Check, check_model, vals_of};

fn f32s(n: usize, shape: &[usize]) -> Tensor<f32> {
    let v = (0..n)
        .map(|i| (i as f32 * 0.37 - 1.1).sin() * 2.0)
        .collect();
    Tensor::from_vec(v, shape)
}

#[test]
fn seed_example_unannotated() {
    let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    let c = Check::new("forward").input("a", &a).run(|| {
        let b = a.add(1.0);
        let c = b.view([-1]);
        c.add_(1.0);
        b
    });
    assert_eq!(c.model.input_updates.len(), 0);
    assert!(c.model.graph.is_functional() && c.model.graph.is_view_free());
}

#[test]
fn input_mutated_through_a_view_is_an_update_output() {
    let a = f32s(6, &[2, 3]);
    let c = Check::new("f").input("a", &a).run(|| {
        let row = a.select(0, 1);
        row.mul_(10.0);
        a.t().sum_dim(1, false)
    });
    assert_eq!(c.model.output_names(), vec!["a_1_updated", "output_0"]);
    assert_eq!(c.model.update_of("a_1"), Some(0));
}

#[test]
fn elementwise_ops_and_scalars() {
    let a = f32s(12, &[3, 4]);
    let b = f32s(4, &[4]);
    Check::new("ew").input("a", &a).input("b", &b).run(|| {
        let x = a.add(&b).mul(0.5).sub(1.0).div(b.abs().add(1.0));
        let y = x.neg().exp().add(x.relu()).sigmoid().tanh();
        let z = a.abs().add(1.1).log().sqrt().pow(2.0);
        let w = x
            .clamp(-0.5, 0.5)
            .add(y.clamp(None, 0.3))
            .add(z.clamp(0.2, None));
        let v = w.addcmul(&a, &b, 0.25).addcdiv(&a, &b.abs().add(1.0), -2.0);
        let l = v.lerp(&a, 0.3);
        (l, a.pow(b.abs()))
    });
}

#[test]
fn integer_and_double_tensors() {
    let n = Tensor::<i64>::from_vec(vec![3, -7, 12, 5, 0, 9], &[2, 3]);
    let d = Tensor::<f64>::from_vec(vec![0.5, 1.5, -2.25], &[3]);
    Check::new("ints").input("n", &n).input("d", &d).run(|| {
        let m = n.mul(2i64).add(n.t().t()).sub(1i64);
        m.add_(5i64);
        (m.sum_dim(0, true), d.mul(&d).mean(), n.abs().neg())
    });
}

#[test]
fn int32_tensors() {
    let n = Tensor::<i32>::from_vec(vec![3, -7, 12, 5, 0, 9], &[3, 2]);
    Check::new("i32").input("n", &n).run(|| {
        let v = n.t();
        v.mul_(3);
        (n.add(1).sum_dim(1, false), v.neg())
    });
}

#[test]
fn reductions_and_matmul() {
    let a = f32s(24, &[2, 3, 4]);
    let w = f32s(20, &[4, 5]);
    let v = f32s(4, &[4]);
    Check::new("red")
        .input("a", &a)
        .input("w", &w)
        .input("v", &v)
        .run(|| {
            (
                a.sum(),
                a.sum_dim(-1, true),
                a.mean_dim(1, false),
                a.matmul(&w),
                a.matmul(&v),
                v.matmul(&w),
            )
        });
}

#[test]
fn views_and_copies() {
    let a = f32s(24, &[2, 3, 4]);
    Check::new("views").input("a", &a).run(|| {
        let p = a.permute([2, 0, 1]).contiguous().view([4, 6]);
        let s = a
            .slice(2, 1, 4, 2)
            .add(a.narrow(1, 0, 2).sum_dim(1, true).slice(2, 0, 4, 2));
        let d = a.diagonal(0, 1, 2).add(a.diagonal(1, -2, -1).sum());
        let u = a.unfold(2, 2, 1).sum_dim(-1, false);
        let st = a.as_strided([3, 2], [1, 3], 2).mul(2.0);
        let e = a
            .select(1, -1)
            .unsqueeze(0)
            .expand([3, 2, 4])
            .squeeze_dim(0);
        let t = a.transpose(0, 2).reshape([-1]);
        (p, s, d, (u, st, e.squeeze(), t))
    });
}

#[test]
fn copy_ops_from_the_macro() {
    let a = f32s(12, &[3, 4]);
    Check::new("copies").input("a", &a).run(|| {
        let v = a
            .view_copy([4, 3])
            .t_copy()
            .transpose_copy(0, 1)
            .permute_copy([1, 0]);
        let s = a.slice_copy(1, 0, 3, 2).select_copy(0, 2);
        let d = a
            .diagonal_copy(0, 0, 1)
            .unsqueeze_copy(1)
            .expand_copy([3, 2]);
        let u = a.unfold_copy(1, 2, 2).as_strided_copy([2, 2], [2, 1], 1);
        let parts = a.split_copy(2, 0);
        let rows = a.unbind_copy(1);
        (
            v,
            s,
            (d, u),
            (parts[1].squeeze_copy(), rows[3].alias_copy()),
        )
    });
}

#[test]
fn scatters() {
    let a = f32s(16, &[4, 4]);
    let r = f32s(4, &[4]);
    Check::new("scatters")
        .input("a", &a)
        .input("r", &r)
        .run(|| {
            let x = a.slice_scatter(&a.slice(0, 1, 4, 2).mul(3.0), 0, 1, 4, 2);
            let y = x.select_scatter(&r, 1, 2);
            let z = y.diagonal_scatter(&r.neg(), 0, 0, 1);

            z.as_strided_scatter(&r.view([2, 2]), [2, 2], [4, 1], 5)
        });
}

#[test]
fn mutations_through_views_of_views_and_aliases_regenerated() {
    let a = f32s(24, &[4, 6]);
    let b = f32s(6, &[6]);
    let c = Check::new("chains").input("a", &a).input("b", &b).run(|| {
        let top = a.narrow(0, 1, 2); // [2, 6]
        let cols = top.t(); // [6, 2]
        let d = a.diagonal(0, 0, 1); // [4], overlaps top
        cols.select(1, 0).add_(&b); // writes a[1, :]
        let before = d.mul(1.0);
        d.mul_(2.0);
        let parts = a.split(2, 0);
        parts[1].sub_(1.0);
        b.copy_(&a.select(0, 3));
        (before, cols.sum_dim(0, false), top)
    });
    assert_eq!(c.model.input_updates.len(), 2);
    // Regenerated aliases: the graph reads `top` after mutations of `a`.
    let f = &c.model.graph;
    assert!(
        f.is_functional() && f.is_view_free() && f.dead_nodes().is_empty(),
        "{f}"
    );
    assert!(
        f.count("slice_scatter") + f.count("select_scatter") + f.count("diagonal_scatter") >= 3
    );
}

#[test]
fn metadata_inplace_ops_and_list_inputs() {
    let mut a = f32s(6, &[2, 3]);
    let xs = vec![f32s(3, &[3]), f32s(3, &[3])];
    let probe = a.shallow_clone();
    let before = [vals_of(&a), vals_of(&xs)].concat();
    let (r, g) = Tracer::new("meta").input("a", &a).input("xs", &xs).run(|| {
        a.t_();
        a.unsqueeze_(0);
        a.select(2, 1).add_(&xs[0]);
        xs[1].mul_(2.0);
        a.sum_dim(0, false)
    });
    let m = g.export_onnx().unwrap();
    assert_eq!(
        m.inputs.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        vec!["a_1", "xs_1.0", "xs_1.1"]
    );
    assert_eq!(
        m.output_names(),
        vec!["a_1_updated", "xs_1.1_updated", "output_0"]
    );
    // The update of `a` is its storage's new value, in its original shape.
    let after = [vals_of(&probe), vals_of(&xs)].concat();
    check_model(&g, &before, &after, &vals_of(&r));
}

#[test]
fn constructors_fills_and_constants() {
    let a = f32s(6, &[2, 3]);
    let w = f32s(3, &[3]);
    Check::new("ctor").input("a", &a).run(|| {
        let z = Tensor::<f32>::zeros(&[2, 3]).add(Tensor::<f32>::ones(&[3]));
        let f = Tensor::<f32>::full(&[2, 1], 2.5).mul(Tensor::<f32>::arange(3));
        let r = Tensor::<f32>::rand(&[2, 3], 7).add(Tensor::<f32>::randn(&[2, 3], 8));
        let e = Tensor::<f32>::eye(3).matmul(&a.t());
        let k = a
            .zeros_like()
            .add(a.ones_like())
            .add(a.fill(3.0))
            .add(a.zero());
        let s = Tensor::<f32>::arange_step(0.5, 2.0, 0.5).view([1, 3]);
        let c = a.mul(&w); // w: a constant captured by reference
        (z.add(&f).add(&r), e, k.add(&s), c)
    });
}

#[test]
fn unsupported_op_is_a_clear_error() {
    let m = TensorMeta::new(&[2], DType::Float32);
    let g = Graph::from_nodes(
        "f",
        &[InputSpec::tensor("a", 1).with_metas(vec![m.clone()])],
        vec![Node::new("frobnicate", vec![Arg::Tensor(1)], 2).with_metas(vec![m])],
        &[2],
    );
    let e = g.to_onnx().unwrap_err();
    assert!(
        matches!(&e, ExportError::UnsupportedOp { op, node, .. } if op == "frobnicate" && node == "frobnicate")
    );
    assert_eq!(
        e.to_string(),
        "funcz: export: aten::frobnicate (node `frobnicate`): no ONNX mapping for this op"
    );
    // A graph without shapes cannot be exported either, and says why.
    let g = Graph::from_nodes("f", &[InputSpec::tensor("a", 1)], vec![], &[1]);
    assert!(g.to_onnx().unwrap_err().to_string().contains("`a_1`"));
    // Writing through an expand view is refused, as in PyTorch (the
    // runtime refuses it eagerly, so the graph is made by hand).
    let m3 = TensorMeta::new(&[3], DType::Float32);
    let m23 = TensorMeta::new(&[2, 3], DType::Float32);
    let g = Graph::from_nodes(
        "f",
        &[InputSpec::tensor("a", 1).with_metas(vec![m3])],
        vec![
            Node::new("expand", vec![Arg::Tensor(1), Arg::Ints(vec![2, 3])], 2)
                .with_metas(vec![m23.clone()]),
            Node::new("add_", vec![Arg::Tensor(2), Arg::Float(1.0)], 2).with_metas(vec![m23]),
        ],
        &[],
    );
    let e = g.functionalize(Remove::Mutations).unwrap_err();
    assert!(
        e.to_string().contains("aten::add_ (node `add_`)") && e.to_string().contains("expand"),
        "{e}"
    );
}

#[test]
fn every_op_of_the_op_table_has_a_mapping() {
    let mut missing = Vec::new();
    for info in funcz_runtime::optable::all() {
        use funcz_runtime::optable::OpKind::*;
        if info.kind == Autograd {
            continue;
        }
        let name = funcz_runtime::optable::traced_name(info.name).expect("a row");
        if !has_onnx_mapping(name) {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "ops with no ONNX mapping: {missing:?}");
}

/// The example of the README's "Shipping a graph" section.
#[test]
fn shipping_doc_example() -> Result<(), ExportError> {
    fn step(cache: &Tensor, key: &Tensor, pos: usize) -> Tensor {
        cache.narrow(0, pos, 1).copy_(key);
        cache.narrow(0, 0, pos + 1).sum_dim(0, false)
    }
    let cache = Tensor::<f32>::zeros(&[8, 4]);
    let key = Tensor::<f32>::ones(&[1, 4]);
    let (_, graph) = Tracer::new("step")
        .input("cache", &cache)
        .input("key", &key)
        .run(|| step(&cache, &key, 3));
    let pure = graph.functionalize(Remove::MutationsAndViews)?;
    assert!(pure.is_functional() && pure.is_view_free());
    assert_eq!(
        pure.ops(),
        vec!["slice_scatter", "slice_copy", "sum", "copy_"]
    );
    let model = graph.export_onnx()?;
    assert_eq!(model.output_names(), ["cache_1_updated", "output_0"]);
    assert_eq!(model.update_of("cache_1"), Some(0));
    Ok(())
}

#[test]
fn host_reads_are_noted_in_the_models_doc_string() {
    use funcz_runtime::trace::note_host_read;
    let a = f32s(4, &[4]);
    let (_, g) = Tracer::new("branchy").input("a", &a).run(|| {
        // A program branching on a tensor value; the host read is noted
        // (the runtime's readers call note_host_read).
        note_host_read("to_vec");
        if a.sum().to_vec()[0] > 0.0 {
            a.mul(2.0)
        } else {
            a.neg()
        }
    });
    assert_eq!(g.host_reads(), ["to_vec"]);
    let m = g.export_onnx().unwrap();
    assert!(
        m.doc_string
            .contains("WARNING: the traced code read tensor values on the host (to_vec)"),
        "{}",
        m.doc_string
    );
    assert_eq!(m.graph.host_reads(), ["to_vec"]);
    // A trace with no host read says so too.
    let (_, g) = Tracer::new("plain").input("a", &a).run(|| a.mul(2.0));
    let m = g.export_onnx().unwrap();
    assert!(m.doc_string.contains("read no tensor value on the host"));
}

#[test]
fn index_put_with_none_entries_is_one_node_and_refused_by_the_exporter() {
    // `x[:, i] = 5`: one `index_put` in the graph (its fifth argument the
    // indexed dimensions), which the exporter does not map yet and says so.
    let a = f32s(6, &[2, 3]);
    let i = Tensor::<i64>::from_vec(vec![1], &[1]);
    let (r, g) = Tracer::new("put")
        .input("a", &a)
        .run(|| a.index_put(&[None, Some(&i)], 5.0, false));
    let mut want = a.to_vec();
    want[1] = 5.0;
    want[4] = 5.0;
    assert_eq!(r.to_vec(), want);
    assert_eq!(g.ops(), vec!["index_put"], "{g}");
    let e = g.to_onnx().unwrap_err();
    assert!(
        matches!(&e, ExportError::UnsupportedOp { op, reason, .. } if op == "index_put" && reason.contains("None")),
        "{e}"
    );
}
