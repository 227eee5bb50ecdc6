//! Trace graphs built from hand-made node lists: printing, naming,
//! resolution, classification and export. (End-to-end recording with real
//! ops is tested inside the crate, `trace/api.rs`.)

use funcz_runtime::Tensor;
use funcz_runtime::trace::{
    Arg, DType, Graph, InputSpec, Node, Ref, TensorData, TensorMeta, Tracer, Value, is_recording,
    trace,
};

fn node(op: &'static str, args: Vec<Arg>, out: u64) -> Node {
    Node::new(op, args, out)
}

fn list_node(op: &'static str, args: Vec<Arg>, outs: Vec<u64>) -> Node {
    Node {
        op,
        args,
        outputs: outs,
        list: true,
        metas: Vec::new(),
    }
}

use Arg::{Float, Ints, Tensor as T};

fn a_input() -> Vec<InputSpec> {
    vec![InputSpec::tensor("a", 1)]
}

/// Seed graph 1: `make_fx(f)` of the seed example (mutation + view).
fn seed1() -> Graph {
    Graph::from_nodes(
        "forward",
        &a_input(),
        vec![
            node("add", vec![T(1), Float(1.0)], 2),
            node("view", vec![T(2), Ints(vec![-1])], 3),
            node("add_", vec![T(3), Float(1.0)], 3),
        ],
        &[2],
    )
}

/// Seed graph 2: `make_fx(functionalize(f))`.
fn seed2() -> Graph {
    Graph::from_nodes(
        "forward",
        &a_input(),
        vec![
            node("add", vec![T(1), Float(1.0)], 2),
            node("view", vec![T(2), Ints(vec![-1])], 3),
            node("add", vec![T(3), Float(1.0)], 4),
            node("view", vec![T(4), Ints(vec![2])], 5),
        ],
        &[5],
    )
}

/// Seed graph 3: `make_fx(functionalize(f, remove='mutations_and_views'))`.
fn seed3_nodes() -> Vec<Node> {
    vec![
        node("add", vec![T(1), Float(1.0)], 2),
        node("view_copy", vec![T(2), Ints(vec![-1])], 3),
        node("add", vec![T(3), Float(1.0)], 4),
        node("view_copy", vec![T(4), Ints(vec![2])], 5),
    ]
}

fn seed3() -> Graph {
    Graph::from_nodes("forward", &a_input(), seed3_nodes(), &[5])
}

/// Seed graph 4: the input-mutating example, with the `copy_` write-back.
fn seed4() -> Graph {
    Graph::from_nodes(
        "forward",
        &a_input(),
        vec![
            node("view_copy", vec![T(1), Ints(vec![-1])], 2),
            node("add", vec![T(2), Float(1.0)], 3),
            node("view_copy", vec![T(3), Ints(vec![2])], 4),
            node("copy_", vec![T(1), T(4)], 1),
        ],
        &[4],
    )
}

#[test]
fn seed_graph_1_prints_exactly() {
    assert_eq!(
        seed1().to_string(),
        "\
fn forward(a_1) {
    let add = aten::add(a_1, 1.0);
    let view = aten::view(add, [-1]);
    let add_ = aten::add_(view, 1.0);
    return add;
}
"
    );
}

#[test]
fn seed_graph_2_prints_exactly() {
    assert_eq!(
        seed2().to_string(),
        "\
fn forward(a_1) {
    let add = aten::add(a_1, 1.0);
    let view = aten::view(add, [-1]);
    let add_1 = aten::add(view, 1.0);
    let view_1 = aten::view(add_1, [2]);
    return view_1;
}
"
    );
}

#[test]
fn seed_graph_3_prints_exactly() {
    assert_eq!(
        seed3().to_string(),
        "\
fn forward(a_1) {
    let add = aten::add(a_1, 1.0);
    let view_copy = aten::view_copy(add, [-1]);
    let add_1 = aten::add(view_copy, 1.0);
    let view_copy_1 = aten::view_copy(add_1, [2]);
    return view_copy_1;
}
"
    );
}

#[test]
fn seed_graph_4_prints_exactly() {
    assert_eq!(
        seed4().to_string(),
        "\
fn forward(a_1) {
    let view_copy = aten::view_copy(a_1, [-1]);
    let add = aten::add(view_copy, 1.0);
    let view_copy_1 = aten::view_copy(add, [2]);
    let copy_ = aten::copy_(a_1, view_copy_1);
    return view_copy_1;
}
"
    );
}

#[test]
fn every_op_line_names_its_aten_op() {
    for g in [seed1(), seed2(), seed3(), seed4()] {
        let text = g.to_string();
        let op_lines: Vec<&str> = text.lines().filter(|l| l.contains(" = aten::")).collect();
        assert_eq!(op_lines.len(), g.len());
        for (line, op) in op_lines.iter().zip(g.ops()) {
            assert!(line.contains(&format!("aten::{op}(")), "{line}");
        }
        assert_eq!(g.code(), text);
    }
}

#[test]
fn seed_graphs_classification() {
    let (g1, g2, g3, g4) = (seed1(), seed2(), seed3(), seed4());
    assert_eq!(g1.ops(), vec!["add", "view", "add_"]);
    assert!(g1.has_mutations() && g1.has_views());
    assert!(!g1.is_functional() && !g1.is_view_free());
    let m: Vec<&str> = g1
        .mutations_except_input_writeback()
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(m, vec!["add_"]);

    assert!(!g2.has_mutations() && g2.has_views());
    assert!(g2.is_functional() && !g2.is_view_free());

    assert!(!g3.has_mutations() && !g3.has_views());
    assert!(g3.is_functional() && g3.is_view_free());

    // The copy_ into the input is a mutation, but only the write-back.
    assert!(g4.has_mutations() && !g4.has_views());
    assert!(g4.mutations_except_input_writeback().is_empty());
    assert!(g4.is_functional() && g4.is_view_free());
    assert!(g4.is_input_writeback(g4.node("copy_").unwrap()));

    for g in [&g1, &g2, &g3, &g4] {
        assert!(g.dead_nodes().is_empty(), "{g}");
    }
}

#[test]
fn pytorch_dead_view_copy_is_detected() {
    // PyTorch 2.x emits a dead regeneration of the view after the seed
    // example; dead_nodes() finds it.
    let mut nodes = seed3_nodes();
    nodes.push(node("view_copy", vec![T(5), Ints(vec![-1])], 6));
    let g = Graph::from_nodes("forward", &a_input(), nodes, &[5]);
    assert!(
        g.to_string()
            .contains("    let view_copy_2 = aten::view_copy(view_copy_1, [-1]);\n")
    );
    let dead: Vec<&str> = g.dead_nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(dead, vec!["view_copy_2"]);
}

#[test]
fn dead_nodes_ignore_mutations_and_count_list_elements() {
    let g = Graph::from_nodes(
        "f",
        &a_input(),
        vec![
            list_node("split", vec![T(1), Arg::Int(1)], vec![2, 3]),
            node("neg", vec![T(3)], 4),
            node("exp", vec![T(1)], 5),
            node("add_", vec![T(1), Float(2.0)], 1),
            node("mul", vec![T(4), Float(3.0)], 6),
        ],
        &[6],
    );
    // split is used through split[1]; exp is never used; add_ mutates.
    let dead: Vec<&str> = g.dead_nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(dead, vec!["exp"]);
    assert!(g.to_string().contains("let neg = aten::neg(split[1]);"));
}

#[test]
fn names_are_deduplicated_fx_style() {
    let g = Graph::from_nodes(
        "f",
        &[
            InputSpec::tensor("add", 1),
            InputSpec::tensor("x", 2),
            InputSpec::tensor("x", 3),
        ],
        vec![
            node("add", vec![T(1), T(2)], 10),
            node("add", vec![T(10), T(3)], 11),
            node("add_", vec![T(11), Float(1.0)], 11),
            node("add_", vec![T(11), Float(1.0)], 11),
            node("copy_", vec![T(1), T(11)], 1),
            node("where", vec![T(11)], 12),
        ],
        &[12],
    );
    assert_eq!(
        g.to_string(),
        "\
fn f(add_1, x_1, x_2) {
    let add = aten::add(add_1, x_1);
    let add_2 = aten::add(add, x_2);
    let add_ = aten::add_(add_2, 1.0);
    let add__1 = aten::add_(add_, 1.0);
    let copy_ = aten::copy_(add_1, add__1);
    let where_1 = aten::where(add__1);
    return where_1;
}
"
    );
    let names: Vec<&str> = g.placeholders().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["add_1", "x_1", "x_2"]);
    assert_eq!(g.placeholders()[0].source_name, "add");
}

#[test]
fn inplace_on_input_remaps_the_input_like_make_fx() {
    // def f(a): a.add_(1); a.mul_(2); return a
    let g = Graph::from_nodes(
        "f",
        &a_input(),
        vec![
            node("add_", vec![T(1), Float(1.0)], 1),
            node("mul_", vec![T(1), Float(2.0)], 1),
        ],
        &[1],
    );
    assert_eq!(
        g.to_string(),
        "\
fn f(a_1) {
    let add_ = aten::add_(a_1, 1.0);
    let mul_ = aten::mul_(add_, 2.0);
    return mul_;
}
"
    );
    assert_eq!(
        g.outputs(),
        &[Ref::Node {
            node: 1,
            index: None
        }]
    );
    // Both mutate the input, but neither is a copy_ write-back.
    assert_eq!(g.mutations_except_input_writeback().len(), 2);
    assert_eq!(g.mutated_input(&g.outputs()[0]), Some(0));
}

#[test]
fn writeback_through_chain_of_inplace_nodes() {
    // copy_ then as_strided_ into the same input: both are write-back.
    let g = Graph::from_nodes(
        "f",
        &a_input(),
        vec![
            node("t_copy", vec![T(1)], 2),
            node("copy_", vec![T(1), T(2)], 1),
            node(
                "as_strided_",
                vec![T(1), Ints(vec![2, 2]), Ints(vec![1, 2]), Arg::Int(0)],
                1,
            ),
        ],
        &[],
    );
    assert!(g.to_string().contains(
        "    let as_strided_ = aten::as_strided_(copy_, [2, 2], [1, 2], 0);\n    return ();\n"
    ));
    assert!(g.is_functional());
    assert!(g.has_mutations());

    // A copy_ into a view of the input is not a write-back of the input.
    let g = Graph::from_nodes(
        "f",
        &a_input(),
        vec![
            node("view", vec![T(1), Ints(vec![-1])], 2),
            node("copy_", vec![T(2), T(1)], 2),
        ],
        &[1],
    );
    assert!(!g.is_functional());
    assert_eq!(g.mutations_except_input_writeback()[0].name, "copy_");
}

#[test]
fn list_inputs_and_outputs() {
    let g = Graph::from_nodes(
        "g",
        &[InputSpec::list("xs", vec![1, 2]), InputSpec::tensor("y", 3)],
        vec![
            node("cat", vec![Arg::TensorList(vec![1, 2, 3]), Arg::Int(0)], 4),
            list_node("unbind", vec![T(4), Arg::Int(0)], vec![5, 6, 7]),
            node("add_", vec![T(6), Float(0.5)], 6),
            list_node("split", vec![T(2), Arg::Int(1)], vec![8]),
        ],
        &[5, 6, 8, 2],
    );
    assert_eq!(
        g.to_string(),
        "\
fn g(xs_1, y_1) {
    let cat = aten::cat([xs_1[0], xs_1[1], y_1], 0);
    let unbind = aten::unbind(cat, 0);
    let add_ = aten::add_(unbind[1], 0.5);
    let split = aten::split(xs_1[1], 1);
    return (unbind[0], add_, split[0], xs_1[1]);
}
"
    );
    assert_eq!(
        g.outputs()[0],
        Ref::Node {
            node: 1,
            index: Some(0)
        }
    );
    assert_eq!(
        g.outputs()[3],
        Ref::Input {
            input: 0,
            index: Some(1)
        }
    );
    assert!(g.placeholders()[0].list && !g.placeholders()[1].list);
    assert_eq!(g.count("unbind"), 1);
}

#[test]
fn unknown_ids_become_constants_at_first_use() {
    let g = Graph::from_nodes(
        "f",
        &a_input(),
        vec![
            node("add", vec![T(1), T(100)], 2),
            node("mul", vec![T(2), T(100)], 3),
            node("sub", vec![T(3), T(200)], 4),
        ],
        &[4, 300, 100],
    );
    assert_eq!(
        g.to_string(),
        "\
fn f(a_1) {
    let _tensor_constant0 = self._tensor_constant0;
    let add = aten::add(a_1, _tensor_constant0);
    let mul = aten::mul(add, _tensor_constant0);
    let _tensor_constant1 = self._tensor_constant1;
    let sub = aten::sub(mul, _tensor_constant1);
    let _tensor_constant2 = self._tensor_constant2;
    return (sub, _tensor_constant2, _tensor_constant0);
}
"
    );
    let c: Vec<(&str, u64, usize)> = g
        .constants()
        .iter()
        .map(|c| (c.name.as_str(), c.id, c.first_use))
        .collect();
    assert_eq!(
        c,
        vec![
            ("_tensor_constant0", 100, 0),
            ("_tensor_constant1", 200, 2),
            ("_tensor_constant2", 300, 3)
        ]
    );
}

#[test]
fn argument_kinds_print_in_seed_style() {
    let g = Graph::from_nodes(
        "f",
        &a_input(),
        vec![
            node("clamp", vec![T(1), Arg::None, Float(-2.0)], 2),
            node(
                "slice",
                vec![
                    T(2),
                    Arg::Int(0),
                    Arg::Int(-3),
                    Arg::Int(i64::MAX),
                    Arg::Int(2),
                ],
                3,
            ),
            node("sum_dim", vec![T(3), Ints(vec![]), Arg::Bool(true)], 4),
            node("mul", vec![T(4), Float(0.1f32 as f64), Float(1e-7)], 5),
            node("div", vec![T(5), Float(f64::INFINITY)], 6),
        ],
        &[6],
    );
    assert_eq!(
        g.to_string(),
        "\
fn f(a_1) {
    let clamp = aten::clamp(a_1, None, -2.0);
    let slice = aten::slice(clamp, 0, -3, 9223372036854775807, 2);
    let sum_dim = aten::sum_dim(slice, [], true);
    let mul = aten::mul(sum_dim, 0.1, 1.0e-7);
    let div = aten::div(mul, inf);
    return div;
}
"
    );
    assert_eq!(g.nodes()[0].args[1], Value::None);
    assert!(!g.nodes()[0].is_view() && g.nodes()[1].is_view());
}

#[test]
fn empty_graph_prints_unit_return() {
    let g = Graph::from_nodes("nothing", &[], vec![], &[]);
    assert_eq!(g.to_string(), "fn nothing() {\n    return ();\n}\n");
    assert!(g.is_empty() && g.is_functional() && g.is_view_free());
}

#[test]
fn trace_api_records_inputs_of_several_types_without_ops() {
    let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    let n = Tensor::<i64>::from_vec(vec![1, 2], &[2]);
    let xs = [
        Tensor::<f64>::from_vec(vec![1.0], &[1]),
        Tensor::<f64>::from_vec(vec![2.0], &[1]),
    ];
    let slice: &[Tensor<f64>] = &xs;
    let (r, g) = trace(
        "forward",
        &[("a", &a), ("n", &n), ("xs", &xs), ("ys", &slice)],
        || (&n, 3.5f64, (&xs[1], &a)),
    );
    assert_eq!(r.1, 3.5);
    assert!(!is_recording());
    assert_eq!(
        g.to_string(),
        "fn forward(a_1, n_1, xs_1, ys_1) {\n    return (n_1, xs_1[1], a_1);\n}\n"
    );
    // A fresh tensor made by a constructor (no recorded op) is a constant.
    let (_, g) = Tracer::new("k").run(|| Tensor::<f32>::scalar(2.0));
    assert_eq!(
        g.to_string(),
        "fn k() {\n    let _tensor_constant0 = self._tensor_constant0;\n    return _tensor_constant0;\n}\n"
    );
}

// ---------------------------------------------------------------- shapes

#[test]
fn traced_graphs_carry_shapes_and_dtypes_of_every_value() {
    let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let n = Tensor::<i64>::from_vec(vec![7, 8], &[2]);
    let w = Tensor::<f32>::from_vec(vec![0.5, 0.25, 0.125], &[3]);
    let (_, g) = Tracer::new("f").input("a", &a).input("n", &n).run(|| {
        let b = a.mul(&w); // w: a constant read by reference
        let parts = b.split(1, 0);
        let t = parts[1].t();
        (t.sum_dim(0, true), n.add(1i64))
    });
    let f32m = |s: &[usize]| TensorMeta::new(s, DType::Float32);
    assert_eq!(g.placeholders()[0].metas, vec![f32m(&[2, 3])]);
    assert_eq!(
        g.placeholders()[1].metas,
        vec![TensorMeta::new(&[2], DType::Int64)]
    );
    assert_eq!(g.ops(), vec!["mul", "split", "t", "sum", "add"]);
    assert_eq!(
        g.node("split").unwrap().metas,
        vec![f32m(&[1, 3]), f32m(&[1, 3])]
    );
    assert_eq!(g.node("t").unwrap().metas, vec![f32m(&[3, 1])]);
    assert_eq!(g.meta(&g.outputs()[0]), Some(&f32m(&[1, 1])));
    assert_eq!(
        g.meta(&g.outputs()[1]),
        Some(&TensorMeta::new(&[2], DType::Int64))
    );
    // Every value of the graph has its shape: inputs, outputs, constants.
    for n in g.nodes() {
        assert_eq!(n.metas.len(), n.outputs.len(), "{}", n.name);
        for r in n.input_refs() {
            assert!(g.meta(&r).is_some(), "{} reads {r:?}", n.name);
        }
    }
}

#[test]
fn constants_carry_their_values_from_before_the_op_that_mutates_them() {
    let a = Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]);
    let k = Tensor::<f64>::from_vec(vec![10.0, 20.0], &[2]);
    let k2 = Tensor::<f64>::from_vec(vec![3.0, 4.0], &[2]);
    let (_, g) = Tracer::new("f").input("a", &a).capture(&k2).run(|| {
        k.add_(&a); // the constant is the receiver of an in-place op
        (k.mul(2.0), &k2)
    });
    assert_eq!(k.to_vec(), vec![11.0, 22.0]);
    let c = &g.constants()[0];
    assert_eq!(c.meta, Some(TensorMeta::new(&[2], DType::Float64)));
    assert_eq!(c.data, Some(TensorData::Float64(vec![10.0, 20.0])));
    // A returned tensor that no op made, captured with Tracer::capture.
    assert_eq!(
        g.constants()[1].data,
        Some(TensorData::Float64(vec![3.0, 4.0]))
    );
}

#[test]
fn hand_made_nodes_have_no_shapes() {
    let g = seed1();
    assert!(g.nodes().iter().all(|n| n.metas.is_empty()));
    assert_eq!(g.meta(&g.outputs()[0]), None);
    assert!(g.check_refs().is_ok());
}

#[test]
fn dtype_names_follow_pytorch() {
    for d in DType::ALL {
        assert_eq!(DType::from_name(d.name()), Some(d));
    }
    assert_eq!(DType::of::<f64>(), Some(DType::Float64));
    assert_eq!(DType::of::<i32>(), Some(DType::Int32));
    assert!(DType::Float32.is_float() && !DType::Bool.is_float());
    assert_eq!(
        TensorMeta::new(&[2, 3], DType::Bool).to_string(),
        "bool[2, 3]"
    );
    assert_eq!(DType::from_name("complex64"), None);
}

// ---------------------------------------------------------------- JSON

#[cfg(feature = "serde")]
mod json {
    use super::*;
    use serde_json::{Value as J, json};

    #[test]
    fn json_of_seed_graph_1_reads_back_equal() {
        let g = seed1();
        let json = g.to_json();
        let j: J = serde_json::from_str(&json).unwrap();
        assert_eq!(j["name"], "forward");
        assert_eq!(j["placeholders"][0]["name"], "a_1");
        assert_eq!(j["placeholders"][0]["list"], false);
        let ops: Vec<&str> = j["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["op"].as_str().unwrap())
            .collect();
        assert_eq!(ops, vec!["add", "view", "add_"]);
        assert_eq!(
            j["nodes"][1]["args"],
            json!([{"tensor": {"node": {"node": 0, "index": null}}}, {"ints": [-1]}])
        );
        let back = Graph::from_json(&json).unwrap();
        assert_eq!(back, g);
        assert_eq!(back.to_string(), g.to_string());
        assert_eq!(Graph::from_json(&g.to_json_pretty()).unwrap(), g);
    }

    #[test]
    fn json_round_trips_every_argument_kind_and_odd_names() {
        let g = Graph::from_nodes(
            "we\"ird\\name\n\t\u{1}é",
            &[InputSpec::list("xs", vec![1, 2])],
            vec![
                list_node("unbind", vec![T(1), Arg::Int(0)], vec![3, 4]),
                node(
                    "f",
                    vec![
                        Arg::TensorList(vec![3, 4, 99]),
                        Arg::None,
                        Arg::Bool(false),
                        Float(f64::NEG_INFINITY),
                        Float(f64::NAN),
                        Float(2.5e-8),
                        Float(0.1f32 as f64),
                    ],
                    5,
                ),
            ],
            &[5, 4],
        );
        let json = g.to_json();
        assert!(json.contains(r#"{"float":"-inf"}"#), "{json}");
        let back = Graph::from_json(&json).unwrap();
        // NaN != NaN: compare the printed form, which shows every argument.
        assert_eq!(back.to_string(), g.to_string());
        assert!(matches!(back.nodes()[1].args[4], Value::Float(x) if x.is_nan()));
        assert_eq!(back.nodes()[1].args[6], Value::Float(0.1f32 as f64));
        assert_eq!(back.name(), g.name());
        assert_eq!(back.constants(), g.constants());
    }

    #[test]
    fn traced_graph_with_shapes_and_constants_round_trips() {
        let a = Tensor::<f32>::from_vec(vec![1.0, -2.0, 3.5, 0.1], &[2, 2]);
        let w = Tensor::<f32>::from_vec(vec![0.1, f32::INFINITY], &[2]);
        let n = Tensor::<i64>::from_vec(vec![i64::MAX, -3], &[2]);
        let (_, g) = Tracer::new("f").input("a", &a).input("n", &n).run(|| {
            let v = a.view([4]);
            v.add_(1.0);
            (a.mul(&w), n.mul(1i64))
        });
        assert!(g.constants()[0].data.is_some());
        let json = g.to_json();
        let back = Graph::from_json(&json).unwrap();
        assert_eq!(back, g);
        assert_eq!(back.to_json(), json);
    }

    #[test]
    fn malformed_json_is_refused_with_a_reason() {
        let err = Graph::from_json("{\"name\": 3}").unwrap_err();
        assert!(err.to_string().starts_with("funcz: graph JSON:"), "{err}");
        // A node reading a later node.
        let mut j: J = serde_json::from_str(&seed1().to_json()).unwrap();
        j["nodes"][0]["args"][0] = json!({"tensor": {"node": {"node": 2, "index": null}}});
        let err = Graph::from_json(&j.to_string()).unwrap_err();
        assert!(err.to_string().contains("node add (add) reads"), "{err}");
    }
}

// ---------------------------------------------------------------- DOT

#[test]
fn dot_of_seed_graph_1() {
    let dot = seed1().to_dot();
    let expected = "\
digraph \"forward\" {
    rankdir=TB;
    node [shape=box];
    \"a_1\" [shape=ellipse];
    \"add\" [label=\"add\\naten::add\"];
    \"view\" [label=\"view\\naten::view\", style=dashed];
    \"add_\" [label=\"add_\\naten::add_\", color=red, fontcolor=red];
    \"return\" [shape=doubleoctagon];
    \"a_1\" -> \"add\";
    \"add\" -> \"view\" [style=dashed];
    \"view\" -> \"add_\" [color=red];
    \"add\" -> \"return\";
}
";
    assert_eq!(dot, expected);
}

#[test]
fn dot_draws_list_elements_constants_and_every_tensor_argument() {
    let g = Graph::from_nodes(
        "g",
        &[InputSpec::list("xs", vec![1, 2])],
        vec![
            list_node("split", vec![T(1), Arg::Int(1)], vec![3, 4]),
            node("copy_", vec![T(2), T(4)], 2),
            node("add", vec![T(3), T(50)], 5),
        ],
        &[5],
    );
    let dot = g.to_dot();
    for line in [
        "    \"xs_1\" [shape=ellipse];\n",
        "    \"_tensor_constant0\" [style=dotted];\n",
        "    \"xs_1\" -> \"split\" [label=\"[0]\", style=dashed];\n",
        "    \"xs_1\" -> \"copy_\" [label=\"[1]\", color=red];\n",
        "    \"split\" -> \"copy_\" [label=\"[1]\"];\n",
        "    \"split\" -> \"add\" [label=\"[0]\"];\n",
        "    \"_tensor_constant0\" -> \"add\";\n",
        "    \"add\" -> \"return\";\n",
    ] {
        assert!(dot.contains(line), "missing {line:?} in\n{dot}");
    }
    // One node statement per placeholder, constant, op, plus the sink.
    let stmts = dot
        .lines()
        .filter(|l| l.ends_with("];") && !l.contains("->"))
        .count();
    assert_eq!(stmts, 1 + 1 + 3 + 1 + 1 /* node [shape=box] */);
    assert_eq!(dot.matches("->").count(), 6);
    assert!(dot.starts_with("digraph \"g\" {\n") && dot.ends_with("}\n"));
}
