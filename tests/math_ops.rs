//! The math, shape and sorting ops of issue 12 (part 3) under
//! `#[functionalize]`: programs written the PyTorch way (in-place ops on
//! views of inputs: `tril_`, `cumsum_`, `clamp_min_`, `add_scaled_`, ...),
//! run as the original and both functionalized variants on the same inputs
//! (outputs and the caller's inputs compared), with the functionalized
//! traces checked free of in-place ops (and of views in
//! `mutations_and_views` mode) by `common::check`.

mod common;

use common::{check, check_values, iota};
use funcz::Tensor;

// A causal mask made in place on a view of an input, running sums in
// place on a row of it, and a clamp of the whole input.
variants!(masked, masked_f, masked_fv; fn (x: &Tensor) -> Tensor {
    let block = x.narrow(0, 1, 3);
    block.tril_(0);
    x.select(0, 0).cumsum_(0);
    x.clamp_min_(2.0);
    let scores = x.narrow(0, 0, 3).softmax(-1);
    scores.log_softmax(0)
});

#[test]
fn tril_cumsum_and_clamp_min_on_views_of_an_input() {
    let [g1, g2] = check("masked", &[iota(&[4, 3])], |v, x| {
        vec![[masked, masked_f, masked_fv][v](&x[0])]
    });
    for g in [&g1, &g2] {
        let ops = g.ops();
        assert!(ops.contains(&"tril") && ops.contains(&"cumsum"), "{g}");
        assert!(
            ops.contains(&"clamp_min") && ops.contains(&"softmax"),
            "{g}"
        );
        assert!(!ops.contains(&"tril_") && !ops.contains(&"cumsum_"), "{g}");
    }
    assert!(g1.ops().contains(&"slice_scatter"), "{g1}");
    assert!(g1.ops().contains(&"select_scatter"), "{g1}");
}

// AdamW with amsgrad, the way torch.optim writes its single-tensor step:
// `add_` with alpha, `addcmul_`, `maximum`, `addcdiv_` with value.
variants!(adamw, adamw_f, adamw_fv; fn (p: &mut Tensor, g: &Tensor, m: &mut Tensor, v: &mut Tensor, vmax: &mut Tensor) {
    let (lr, wd, b1, b2, eps) = (0.01f32, 0.1f32, 0.9f32, 0.999f32, 1e-8f32);
    p.mul_(1.0 - lr * wd);
    m.mul_(b1).add_scaled_(g, 1.0 - b1);
    v.mul_(b2).addcmul_(g, g, 1.0 - b2);
    vmax.copy_(&vmax.maximum(v));
    let denom = (vmax.sqrt() / (1.0 - b2).sqrt()).add_(eps);
    let step = lr / (1.0 - b1);
    p.addcdiv_(m, &denom, -step);
});

fn adamw_inputs() -> Vec<Tensor> {
    vec![
        iota(&[2, 3]),
        &iota(&[2, 3]) * 0.1 - 0.2,
        Tensor::zeros(&[2, 3]),
        Tensor::zeros(&[2, 3]),
        Tensor::full(&[2, 3], 0.001),
    ]
}

fn run_adamw(variant: usize, x: &mut [Tensor]) -> Vec<Tensor> {
    let (p, rest) = x.split_at_mut(1);
    let (g, rest) = rest.split_at_mut(1);
    let (m, rest) = rest.split_at_mut(1);
    let (v, vm) = rest.split_at_mut(1);
    [adamw, adamw_f, adamw_fv][variant](&mut p[0], &g[0], &mut m[0], &mut v[0], &mut vm[0]);
    vec![]
}

#[test]
fn adamw_amsgrad_step() {
    // Values and the caller's inputs (original vs both modes).
    let [g1, g2] = check_values("adamw", &adamw_inputs(), |v, x| run_adamw(v, x));
    for g in [&g1, &g2] {
        assert!(
            g.ops().contains(&"maximum") && g.ops().contains(&"addcmul"),
            "{g}"
        );
    }
}

/// The in-place ops whose Rust name is not their aten name (`add_scaled_`
/// is traced as `add_`) run on donated buffers in functionalized code; the
/// trace relabels them as their recorded op's functional twin (`add`).
#[test]
fn adamw_amsgrad_step_trace_is_pure() {
    check("adamw", &adamw_inputs(), |v, x| run_adamw(v, x));
}

// Elementwise in-place ops on views: rounding, sign, hardtanh, scalar-left
// operators, the value = 1 forms of addcmul/addcdiv, sub with alpha.
variants!(elementwise, elementwise_f, elementwise_fv; fn (x: &Tensor, y: &mut Tensor) -> Tensor {
    let t = x.t();
    t.select(0, 1).round_();
    x.narrow(1, 0, 1).floor_();
    y.narrow(0, 1, 1).sign_();
    y.hardtanh_(-0.5, 0.5);
    let z = 1.0 - x;
    let w = 2.0 / &(x + 1.0);
    z.addcmul1_(&w, &w);
    z.addcdiv1_(&w, &(&w + 1.0));
    x.sub_scaled_(&z, 0.25);
    x.narrow(0, 0, 1).clamp_max_(1.5);
    y.select(1, 0).rsqrt_();
    z.maximum(&y.minimum(&w))
});

fn elementwise_inputs() -> Vec<Tensor> {
    vec![&iota(&[3, 2]) * 0.75 - 1.3, &iota(&[3, 2]) * -0.4 + 1.1]
}

fn run_elementwise(v: usize, t: &mut [Tensor]) -> Vec<Tensor> {
    let (a, b) = t.split_at_mut(1);
    vec![[elementwise, elementwise_f, elementwise_fv][v](
        &a[0], &mut b[0],
    )]
}

#[test]
fn rounding_sign_hardtanh_and_scalar_left_operators() {
    let [g1, g2] = check_values("elementwise", &elementwise_inputs(), |v, t| {
        run_elementwise(v, t)
    });
    for op in ["round", "floor", "sign", "hardtanh", "rsqrt", "clamp_max"] {
        assert!(g1.ops().contains(&op), "{op} missing\n{g1}");
        assert!(g2.ops().contains(&op), "{op} missing\n{g2}");
    }
    // Every in-place op left is one of the four traced under another aten
    // name (see `adamw_amsgrad_step_trace_is_pure`), never on an input.
    for g in [&g1, &g2] {
        for n in g.mutations_except_input_writeback() {
            assert!(
                ["add_", "sub_", "addcmul_", "addcdiv_"].contains(&n.op),
                "{}\n{g}",
                n.op
            );
        }
    }
}

#[test]
fn rounding_sign_hardtanh_and_scalar_left_operators_trace_is_pure() {
    check("elementwise", &elementwise_inputs(), |v, t| {
        run_elementwise(v, t)
    });
}

// Attention with a causal mask made by triu_ on a fresh tensor, top-k
// filtering, sorting, joins, reductions returning pairs.
variants!(attention, attention_f, attention_fv; fn (q: &Tensor, k: &Tensor, cache: &Tensor) -> (Tensor, Tensor, Tensor) {
    let scores = q.matmul(&k.t()).mul(0.5);
    let mask = Tensor::ones(&[3, 3]);
    mask.triu_(1).mul_(-1e9);
    scores.add_(&mask);
    let probs = scores.softmax(-1);
    let (top, idx) = probs.topk(2, -1, true, true);
    let (sorted, _) = probs.sort(-1, true);
    let joined = Tensor::cat(&[&top, &sorted], 1);
    let stacked = Tensor::stack(&[&joined, &joined.flip([1])], 0);
    cache.narrow(0, 0, 2).copy_(&stacked.sum_dims([0, 1], false).roll([1], [0]).repeat([2, 1]));
    // The macro does not track tensors destructured from a tuple (yet):
    // a typed `let` makes `var` a tensor it checks at run time.
    let (v0, mean) = stacked.var_mean([-1], 1, false);
    let (best, arg) = probs.max_dim(1, false);
    let var: Tensor = v0;
    var.add_(&mean).add_(&best);
    let n = probs.vector_norm(2.0, [1], false);
    let n = n.add_scaled(var.amax([0], false), 2.0);
    n.clamp_max_(0.9);
    let total = idx.sum().to_vec()[0] + arg.sum().to_vec()[0];
    (var, n, Tensor::full(&[1], total as f32))
});

#[test]
fn attention_with_a_causal_mask_and_topk() {
    let [g1, g2] = check(
        "attention",
        &[
            iota(&[3, 4]) * 0.1,
            &iota(&[3, 4]) * -0.05 + 0.3,
            Tensor::zeros(&[4, 5]),
        ],
        |v, x| {
            let (a, b, c) = [attention, attention_f, attention_fv][v](&x[0], &x[1], &x[2]);
            vec![a, b, c]
        },
    );
    for op in [
        "triu",
        "softmax",
        "topk",
        "sort",
        "cat",
        "stack",
        "var_mean",
        "max",
        "linalg_vector_norm",
    ] {
        assert!(g1.ops().contains(&op), "{op} missing\n{g1}");
        assert!(g2.ops().contains(&op), "{op} missing\n{g2}");
    }
}
