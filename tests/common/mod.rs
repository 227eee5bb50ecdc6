//! Test harness: run the original and both functionalized variants of a
//! program on the same inputs, compare outputs and final inputs, and check
//! the traces of the functionalized runs for purity.
#![allow(dead_code)]

use funcz::Tensor;
use funcz::trace::{Graph, Tracer};

/// Defines `$orig` (unannotated), `$f` (`#[functionalize]`) and `$fv`
/// (`remove = "mutations_and_views"`) from one body.
#[macro_export]
macro_rules! variants {
    ($orig:ident, $f:ident, $fv:ident; fn ($($args:tt)*) $(-> $ret:ty)? $body:block) => {
        #[allow(unused_mut, unused_variables)]
        fn $orig($($args)*) $(-> $ret)? $body
        #[funcz::functionalize]
        fn $f($($args)*) $(-> $ret)? $body
        #[funcz::functionalize(remove = "mutations_and_views")]
        fn $fv($($args)*) $(-> $ret)? $body
    };
}

/// Deep copies of `inputs`, so each variant starts from the same values.
pub fn fresh(inputs: &[Tensor]) -> Vec<Tensor> {
    inputs.to_vec()
}

/// Same shape and values, NaN matching NaN (`equal` is `torch.equal`,
/// where NaN equals nothing).
pub fn same(a: &Tensor, b: &Tensor) -> bool {
    a.shape() == b.shape()
        && a.to_vec()
            .iter()
            .zip(b.to_vec())
            .all(|(x, y)| *x == y || (x.is_nan() && y.is_nan()))
}

/// Runs `call(variant, inputs)` for variant 0 (original), 1 (mutations),
/// 2 (mutations_and_views); asserts equal outputs and final inputs (values
/// and shapes), and that the functionalized traces are pure. Returns the
/// two functionalized graphs.
pub fn check(
    name: &str,
    inputs: &[Tensor],
    call: impl Fn(usize, &mut Vec<Tensor>) -> Vec<Tensor>,
) -> [Graph; 2] {
    check_impl(name, inputs, call, true)
}

/// [`check`] without the purity check (for programs that call helpers the
/// macro cannot see into, whose own in-place ops still run).
pub fn check_values(
    name: &str,
    inputs: &[Tensor],
    call: impl Fn(usize, &mut Vec<Tensor>) -> Vec<Tensor>,
) -> [Graph; 2] {
    check_impl(name, inputs, call, false)
}

fn check_impl(
    name: &str,
    inputs: &[Tensor],
    call: impl Fn(usize, &mut Vec<Tensor>) -> Vec<Tensor>,
    pure: bool,
) -> [Graph; 2] {
    let mut ins0 = fresh(inputs);
    let out0 = call(0, &mut ins0);
    let mut graphs = Vec::new();
    for variant in 1..=2 {
        let mut ins = fresh(inputs);
        let mut tracer = Tracer::new(name);
        for (i, t) in ins.iter().enumerate() {
            tracer = tracer.input(&format!("x{i}"), t);
        }
        let (out, graph) = tracer.run(|| call(variant, &mut ins));
        assert_eq!(
            out.len(),
            out0.len(),
            "{name} v{variant}: number of outputs"
        );
        for (k, (a, b)) in out0.iter().zip(&out).enumerate() {
            assert!(
                same(a, b),
                "{name} v{variant}: output {k} differs\noriginal: {a:?}\nfunctionalized: {b:?}\n{graph}"
            );
        }
        for (k, (a, b)) in ins0.iter().zip(&ins).enumerate() {
            assert!(
                same(a, b),
                "{name} v{variant}: input {k} differs after the call\noriginal: {a:?}\nfunctionalized: {b:?}\n{graph}"
            );
            assert_eq!(
                a.strides(),
                b.strides(),
                "{name} v{variant}: input {k} layout"
            );
        }
        let bad = graph.mutations_except_input_writeback();
        assert!(
            !pure || bad.is_empty(),
            "{name} v{variant}: in-place ops remain: {:?}\n{graph}",
            bad.iter().map(|n| n.op).collect::<Vec<_>>()
        );
        if variant == 2 && pure {
            assert!(
                !graph.has_views(),
                "{name}: view ops remain in mutations_and_views mode\n{graph}"
            );
        }
        graphs.push(graph);
    }
    let g2 = graphs.pop().expect("two graphs");
    let g1 = graphs.pop().expect("two graphs");
    [g1, g2]
}

/// `0, 1, 2, ...` as an f32 tensor of `shape`.
pub fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape)
}
