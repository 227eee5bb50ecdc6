//! Optimizers from `torch.optim`, ported the way PyTorch writes them
//! (in-place updates of the parameter and its state, masks), functionalized,
//! and run on a toy problem: minimize `0.5 * |p - target|^2`, whose gradient
//! is `p - target`. Each optimizer runs as written and functionalized and
//! must agree bit for bit; then one functionalized step is printed as a
//! graph with no mutation left but the write-back into the caller's tensors.
//!
//! `cargo run --example optimizers`
//!
//! (`tests/ported/optim.rs` checks these ports, and six more, against
//! values recorded from PyTorch.)

use funcz::trace::Tracer;
use funcz::{Tensor, functionalize};

/// Adam's state for one parameter.
pub struct AdamState {
    pub exp_avg: Tensor,
    pub exp_avg_sq: Tensor,
    pub max_exp_avg_sq: Tensor,
    pub step: f64,
}

/// Defines `$plain` as written and `$func` with the attribute `$attr`, from
/// one body.
macro_rules! as_written_and {
    (#[$attr:meta] $plain:ident, $func:ident; fn ($($args:tt)*) $body:block) => {
        fn $plain($($args)*) $body
        #[$attr]
        fn $func($($args)*) $body
    };
}

// `torch.optim.Adam`'s `_single_tensor_adam` (amsgrad, L2 weight decay).
as_written_and!(#[functionalize] adam_step, adam_step_f; fn (param: &Tensor, grad: &Tensor, st: &mut AdamState, lr: f64) {
    let (beta1, beta2, eps, weight_decay) = (0.9, 0.999, 1e-8, 0.01);
    st.step += 1.0;
    let grad = grad.add_scaled(param, weight_decay as f32);
    st.exp_avg.lerp_(&grad, (1.0 - beta1) as f32);
    st.exp_avg_sq
        .mul_(beta2 as f32)
        .addcmul_(&grad, &grad, (1.0 - beta2) as f32);
    let bias_correction1 = 1.0 - f64::powf(beta1, st.step);
    let bias_correction2 = 1.0 - f64::powf(beta2, st.step);
    let step_size = lr / bias_correction1;
    st.max_exp_avg_sq.copy_(&st.max_exp_avg_sq.maximum(&st.exp_avg_sq));
    let denom = (st.max_exp_avg_sq.sqrt() / bias_correction2.sqrt() as f32).add_(eps as f32);
    param.addcdiv_(&st.exp_avg, &denom, -step_size as f32);
});

// SGD with nesterov momentum (`_single_tensor_sgd`), in copies mode.
as_written_and!(#[functionalize(remove = "mutations_and_views")] sgd_step, sgd_step_f; fn (param: &Tensor, grad: &Tensor, buf: &Tensor, lr: f64) {
    let momentum = 0.9;
    buf.mul_(momentum as f32).add_(grad);
    let grad = grad.add_scaled(buf, momentum as f32);
    param.add_scaled_(&grad, -lr as f32);
});

// Rprop (`_single_tensor_rprop`): boolean masks written with `masked_fill_`.
as_written_and!(#[functionalize] rprop_step, rprop_step_f; fn (param: &Tensor, grad: &Tensor, prev: &Tensor, step_size: &Tensor) {
    let (etaminus, etaplus) = (0.5f32, 1.2f32);
    let sign = grad.mul(prev).sign();
    sign.masked_fill_(&sign.gt(0.0), etaplus);
    sign.masked_fill_(&sign.lt(0.0), etaminus);
    sign.masked_fill_(&sign.eq(0.0), 1.0);
    step_size.mul_(&sign).clamp_(1e-6, 50.0);
    let grad = grad.clone();
    grad.masked_fill_(&sign.eq(etaminus), 0.0);
    param.addcmul_(&grad.sign(), step_size, -1.0);
    prev.copy_(&grad);
});

fn loss(p: &Tensor, target: &Tensor) -> f32 {
    let d = p.sub(target);
    d.mul(&d).sum().item() * 0.5
}

fn adam_state() -> AdamState {
    AdamState {
        exp_avg: Tensor::zeros(&[4]),
        exp_avg_sq: Tensor::zeros(&[4]),
        max_exp_avg_sq: Tensor::zeros(&[4]),
        step: 0.0,
    }
}

fn main() {
    let target = Tensor::<f32>::from_vec(vec![1.0, -2.0, 0.5, 3.0], &[4]);
    let start = Tensor::<f32>::zeros(&[4]);
    let steps = 50;

    // Adam: as written and functionalized, same values at every step.
    let (p, q) = (start.clone(), start.clone());
    let (mut s, mut t) = (adam_state(), adam_state());
    for _ in 0..steps {
        adam_step(&p, &p.sub(&target), &mut s, 0.1);
        adam_step_f(&q, &q.sub(&target), &mut t, 0.1);
        assert!(p.equal(&q), "Adam: functionalized step differs");
    }
    println!(
        "Adam (amsgrad)   loss {:.4} -> {:.4} in {steps} steps; as written == #[functionalize]",
        loss(&start, &target),
        loss(&p, &target)
    );

    // SGD with momentum, in copies mode.
    let (p, q) = (start.clone(), start.clone());
    let (b, c) = (Tensor::zeros(&[4]), Tensor::zeros(&[4]));
    for _ in 0..steps {
        sgd_step(&p, &p.sub(&target), &b, 0.05);
        sgd_step_f(&q, &q.sub(&target), &c, 0.05);
        assert!(
            p.equal(&q) && b.equal(&c),
            "SGD: functionalized step differs"
        );
    }
    println!(
        "SGD (nesterov)   loss {:.4} -> {:.4} in {steps} steps; as written == remove = \"mutations_and_views\"",
        loss(&start, &target),
        loss(&p, &target)
    );

    // Rprop, with boolean masks.
    let (p, q) = (start.clone(), start.clone());
    let (prev1, prev2) = (Tensor::zeros(&[4]), Tensor::zeros(&[4]));
    let (ss1, ss2) = (Tensor::full(&[4], 0.05), Tensor::full(&[4], 0.05));
    for _ in 0..steps {
        rprop_step(&p, &p.sub(&target), &prev1, &ss1);
        rprop_step_f(&q, &q.sub(&target), &prev2, &ss2);
        assert!(
            p.equal(&q) && ss1.equal(&ss2),
            "Rprop: functionalized step differs"
        );
    }
    println!(
        "Rprop            loss {:.4} -> {:.4} in {steps} steps; as written == #[functionalize]",
        loss(&start, &target),
        loss(&p, &target)
    );

    // One functionalized Adam step as a graph.
    let q = start.clone();
    let g = q.sub(&target);
    let mut st = adam_state();
    let (_, graph) = Tracer::new("adam_step")
        .input("param", &q)
        .input("grad", &g)
        .input("exp_avg", &st.exp_avg)
        .input("exp_avg_sq", &st.exp_avg_sq)
        .input("max_exp_avg_sq", &st.max_exp_avg_sq)
        .run(|| adam_step_f(&q, &g, &mut st, 0.1));
    assert!(graph.mutations_except_input_writeback().is_empty());
    println!(
        "\n// one #[functionalize] Adam step: functional ops, then copy_ into the caller's tensors\n{graph}"
    );
}
