//! `Graph::functionalize` on graphs traced from unannotated code: the
//! printed result against PyTorch's `make_fx(functionalize(f))` for the
//! seed programs, and the properties every result has (no mutation but the
//! input epilogue, no views in `MutationsAndViews` mode, no dead ops,
//! idempotence). Values are checked in tract by `tests/onnx*.rs`.

use funcz_runtime::Tensor;
use funcz_runtime::trace::{Graph, Remove, Tracer};

fn seed_g_graph() -> Graph {
    let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    Tracer::new("forward")
        .input("a", &a)
        .run(|| {
            let a_view = a.view([-1]);
            a_view.add_(1.0);
            a.clone()
        })
        .1
}

#[test]
fn input_mutation_gets_pytorchs_copy_epilogue() {
    let g = seed_g_graph();
    assert!(!g.is_functional());
    let f = g.functionalize(Remove::MutationsAndViews).unwrap();
    // PyTorch (seed doc): view_copy, add, view_copy, copy_ write-back.
    assert_eq!(
        f.to_string(),
        "\
fn forward(a_1) {
    let view_copy = aten::view_copy(a_1, [-1]);
    let add = aten::add(view_copy, 1.0);
    let view_copy_1 = aten::view_copy(add, [2]);
    let clone = aten::clone(view_copy_1);
    let copy_ = aten::copy_(a_1, view_copy_1);
    return clone;
}
"
    );
    assert!(f.is_functional() && f.is_view_free() && f.dead_nodes().is_empty());
    assert!(f.is_input_writeback(f.node("copy_").unwrap()));
    // Every value keeps its shape and dtype.
    for n in f.nodes() {
        assert_eq!(n.metas.len(), n.outputs.len(), "{}", n.name);
    }
}

#[test]
fn mutations_mode_keeps_views_and_regenerates_aliases() {
    let a = Tensor::<f32>::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]);
    let (_, g) = Tracer::new("f").input("a", &a).run(|| {
        let b = a.add(1.0);
        let row = b.select(0, 1);
        let col = b.t().select(0, 2); // overlaps row at b[1, 2]
        row.mul_(2.0);
        col.add(0.0) // read after the write: regenerated from b's new value
    });
    let f = g.functionalize(Remove::Mutations).unwrap();
    assert_eq!(
        f.ops(),
        vec![
            "add",
            "select",
            "mul",
            "select_scatter",
            "t",
            "select",
            "add"
        ]
    );
    assert!(
        f.is_functional() && f.has_views() && f.dead_nodes().is_empty(),
        "{f}"
    );
    let fv = g.functionalize(Remove::MutationsAndViews).unwrap();
    assert_eq!(
        fv.ops(),
        vec![
            "add",
            "select_copy",
            "mul",
            "select_scatter",
            "t_copy",
            "select_copy",
            "add"
        ]
    );
}

#[test]
fn functionalize_is_idempotent_and_drops_dead_ops() {
    let a = Tensor::<f32>::from_vec((0..8).map(|x| x as f32).collect(), &[2, 4]);
    let (_, g) = Tracer::new("f").input("a", &a).run(|| {
        let unused = a.exp(); // dead
        let _ = unused.sum();
        let v = a.narrow(1, 1, 2);
        v.zero_();
        a.sum_dim(1, false)
    });
    let f = g.functionalize(Remove::MutationsAndViews).unwrap();
    assert!(!f.ops().contains(&"exp"), "{f}");
    assert_eq!(f.count("zero"), 1);
    assert_eq!(f.count("slice_scatter"), 1);
    let ff = f.functionalize(Remove::MutationsAndViews).unwrap();
    assert_eq!(ff.to_string(), f.to_string());
}

#[test]
fn metadata_inplace_ops_are_views_of_the_same_storage() {
    let mut a = Tensor::<f32>::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]);
    let (_, g) = Tracer::new("f").input("a", &a).run(|| {
        a.t_(); // a is now [3, 2], a view of the input's storage
        a.select(0, 0).fill_(9.0);
    });
    let f = g.functionalize(Remove::MutationsAndViews).unwrap();
    assert_eq!(
        f.ops(),
        vec![
            "t_copy",
            "select_copy",
            "fill",
            "select_scatter",
            "t_copy",
            "copy_"
        ]
    );
}

#[test]
fn long_view_chains_functionalize_in_linear_time() {
    let a = Tensor::<f32>::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]);
    let n = 2000;
    let (_, g) = Tracer::new("chain").input("a", &a).run(|| {
        let mut v = a.alias();
        for _ in 0..n {
            v = v.t();
        }
        v.add_(1.0);
        v.mul_(2.0);
        a.sum()
    });
    let start = std::time::Instant::now();
    let f = g.functionalize(Remove::MutationsAndViews).unwrap();
    let took = start.elapsed();
    // Each write replays the chain once and scatters back through it once;
    // the second write reuses nothing (the base changed), so about 4n ops.
    assert!(f.count("t_copy") <= 4 * n + 4, "{}", f.count("t_copy"));
    assert_eq!(
        f.count("add") + f.count("mul") + f.count("sum") + f.count("copy_"),
        4
    );
    // ~0.1 s in a debug build (it was quadratic, 2.3 s, before chains
    // shared their prefixes).
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
}
