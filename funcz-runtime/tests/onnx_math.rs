//! The math, shape and sorting ops of issue 12 (part 3), traced from eager
//! code (with in-place forms and views), exported with `Graph::to_onnx`
//! and run in tract: the model's outputs and updated inputs must match the
//! eager values. Checks that the traced argument order is the one the
//! exporter's mappings (`trace/onnx/lower.rs`) read.
#![cfg(feature = "onnx")]
#![allow(clippy::needless_borrows_for_generic_args)]

mod support;

use funcz_runtime::Tensor;
use support::onnx_check::Check;

fn f32s(n: usize, shape: &[usize]) -> Tensor<f32> {
    let v = (0..n)
        .map(|i| (i as f32 * 0.37 - 1.1).sin() * 2.0)
        .collect();
    Tensor::from_vec(v, shape)
}

fn f64s(n: usize, shape: &[usize]) -> Tensor<f64> {
    let v = (0..n)
        .map(|i| (i as f64 * 0.61 + 0.3).cos() * 3.0)
        .collect();
    Tensor::from_vec(v, shape)
}

#[test]
fn elementwise_math_and_in_place_forms() {
    let a = f32s(12, &[3, 4]);
    let b = f32s(4, &[4]);
    let c = Check::new("math").input("a", &a).input("b", &b).run(|| {
        let p = a.abs().add(0.5);
        let r = p.rsqrt().add(&p.reciprocal()).add(&a.sin()).add(&a.cos());
        let e = a.erf().add(&a.gelu("none")).add(&a.gelu("tanh"));
        let s = a
            .silu()
            .add(&a.softplus(1.0, 20.0))
            .add(&a.softplus(2.0, 1.5));
        let h = a.mul(4.0).relu6().add(&a.hardtanh(-0.5, 0.7));
        let m = a.clamp_min(-0.3).add(&a.clamp_max(0.4)).add(&a.sign());
        let f = a.mul(3.0).floor().add(&a.mul(2.0).round());
        let x = a.maximum(&b).add(&b.minimum(&a)).add_scaled(&b, 0.5);
        let y = x.sub_scaled(&a, 2.0).addcmul1(&a, &b).addcdiv1(&a, &p);
        let z = (1.0 - &y).add(&(2.0 / &p));
        // In place, on the input and on a view of it.
        a.select(0, 1).clamp_min_(0.0);
        a.narrow(1, 0, 2).sin_().round_();
        a.add_scaled_(&b, -0.25).hardtanh_(-1.5, 1.5);
        ((r, e, s, h), (m, f, z))
    });
    assert!(c.model.graph.is_functional());
    assert_eq!(c.model.input_updates.len(), 1);
}

#[test]
fn softmax_reductions_and_scans() {
    let a = f32s(24, &[2, 3, 4]);
    let d = f64s(12, &[3, 4]);
    Check::new("reduce").input("a", &a).input("d", &d).run(|| {
        let sm = a.softmax(-1).add(&a.log_softmax(1));
        let (mx, mi) = a.max_dim(1, false);
        let (mn, ni) = a.min_dim(-1, true);
        let am = a.argmax(2, false);
        let an = a.argmin(None, false);
        let aa = a
            .amax([0, 2], true)
            .add(&a.amin([1], true).sum_dims([1], true));
        let s = a.sum_dims([0, -1], false).add(&a.mean_dims([2, 0], false));
        let all = a.max().add(&a.min());
        let ds = d
            .sum_dims([0i64; 0], false)
            .add(&d.mean_dims([1], true).sum());
        let cs = d.cumsum(0);
        d.narrow(0, 1, 2).cumsum_(1);
        ((sm, mx, mi, mn, ni), (am, an, aa, s, all), (ds, cs))
    });
}

#[test]
fn joins_index_maps_and_triangles() {
    let a = f32s(6, &[2, 3]);
    let b = f32s(3, &[1, 3]);
    let n = Tensor::<i64>::from_vec((0..12).collect(), &[3, 4]);
    let c = Check::new("shape")
        .input("a", &a)
        .input("b", &b)
        .input("n", &n)
        .run(|| {
            let c = Tensor::cat(&[&a, &b, &a], 0);
            let s = Tensor::stack(&[&a, &a.mul(2.0)], -1);
            let r = c.roll([1, -1], [0, 1]).add(&c.roll([4], [0i64; 0]));
            let f = s.flip([0, -1]);
            let p = b.repeat([2, 1, 2]);
            let t = n.tril(0).add(&n.triu(1)).add(&n.tril(-1));
            let q = b.squeeze_dims_copy([0]);
            let e = a.empty_like().add(&Tensor::<f32>::empty(&[2, 3]));
            n.triu_(1);
            n.t().tril_(-1);
            (r, f, p, t, q, e)
        });
    assert_eq!(c.model.input_updates.len(), 1);
}

#[test]
fn a_causal_attention_block() {
    let q = f32s(12, &[3, 4]);
    let k = f32s(12, &[3, 4]).mul(0.5);
    Check::new("attention")
        .input("q", &q)
        .input("k", &k)
        .run(|| {
            let scores = q.matmul(&k.t()).mul(0.5);
            let mask = Tensor::<f32>::ones(&[3, 3]);
            mask.triu_(1).mul_(-1e9);
            scores.add_(&mask);
            let probs = scores.softmax(-1);
            let lp = scores.log_softmax(-1);
            (probs, lp, scores.argmax(-1, true))
        });
}

#[test]
fn variance_norms_and_sorting() {
    // Distinct values, so the tie order of TopK does not matter.
    let a = f32s(24, &[2, 3, 4]);
    let d = f64s(12, &[3, 4]);
    Check::new("stats").input("a", &a).input("d", &d).run(|| {
        let v = a.var(1).add(&a.var_dims([1], 0, true).sum());
        let s = a.std_dims([-1, 0], 1, false);
        let (vm, m) = d.var_mean([1], 0, true);
        let n = a
            .vector_norm(2.0, [1], false)
            .add(&a.vector_norm(1.0, [1], false))
            .add(&a.vector_norm(f64::INFINITY, [1], false))
            .add(&a.vector_norm(f64::NEG_INFINITY, [1], false))
            .add(&a.vector_norm(0.0, [1], false))
            .add(&a.vector_norm(3.0, [1], false));
        let all = d.norm(2.0).add(&d.vector_norm(1.0, [0i64; 0], true).sum());
        let (sv, si) = a.sort(-1, true);
        let (tv, ti) = d.topk(2, 0, false, true);
        ((v, s, vm, m, n), (all, sv, si, tv, ti))
    });
}
