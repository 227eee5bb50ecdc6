//! `torch.optim`'s single-tensor implementations (`_single_tensor_sgd`,
//! `_single_tensor_adam`, ...; `foreach=False`), ported line by line: the
//! lists of parameters, gradients and state tensors become slices, the
//! step counters plain numbers, `param.add_(grad, alpha=-lr)` becomes
//! `param.add_scaled_(&grad, -lr)`. Python computes hyperparameter
//! arithmetic in f64 and the kernels cast the result to the tensor's
//! float32; so do the ports (`as f32` at the call).

use crate::common::check;
use crate::fixture::{assert_matches, case, f32s};
use funcz::Tensor;

/// Runs `steps(variant, inputs)` for the original and both modes (outputs,
/// final inputs and purity compared by `check`), then compares the
/// original's final parameter and state with PyTorch's.
///
/// `inputs` are `[param, grad_0, grad_1, grad_2, state...]` with the state
/// tensors initialized as `torch.optim` initializes them.
fn run(name: &str, state: &[(&str, Tensor)], steps: impl Fn(usize, &mut Vec<Tensor>)) {
    let c = case("optimizers", name);
    let mut inputs = vec![f32s(&c["param0"])];
    for g in c["grads"].as_array().expect("grads") {
        inputs.push(f32s(g));
    }
    assert_eq!(inputs.len(), 4, "{name}: three steps recorded");
    inputs.extend(state.iter().map(|(_, t)| t.clone()));
    check(name, &inputs, |v, ins| {
        steps(v, ins);
        vec![]
    });
    let mut ins = inputs.to_vec();
    steps(0, &mut ins);
    assert_matches(&format!("{name}: param"), &ins[0], &c["param"]);
    for (k, (s, _)) in state.iter().enumerate() {
        assert_matches(&format!("{name}: state {s}"), &ins[4 + k], &c["state"][*s]);
    }
}

fn zeros() -> Tensor {
    Tensor::zeros(&[3, 4])
}

// ---------------------------------------------------------------- SGD

pub struct SgdHyper {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
}

// `momentum_buffer_list[i] is None` on the first step: torch clones the
// gradient into a new buffer; the port keeps a zero buffer and `copy_`s
// into it, the same values.
variants!(sgd, sgd_f, sgd_fv; fn (params: &[Tensor], grads: &[Tensor], momentum_buffers: &[Tensor], first: bool, h: &SgdHyper) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        if h.weight_decay != 0.0 {
            grad = grad.add_scaled(param, h.weight_decay as f32);
        }
        if h.momentum != 0.0 {
            let buf = &momentum_buffers[i];
            if first {
                buf.copy_(&grad);
            } else {
                buf.mul_(h.momentum as f32).add_scaled_(&grad, (1.0 - h.dampening) as f32);
            }
            if h.nesterov {
                grad = grad.add_scaled(buf, h.momentum as f32);
            } else {
                grad = buf.shallow_clone();
            }
        }
        param.add_scaled_(&grad, -h.lr as f32);
    }
});

fn sgd_case(name: &str, h: SgdHyper) {
    let state: Vec<(&str, Tensor)> = if h.momentum != 0.0 {
        vec![("momentum_buffer", zeros())]
    } else {
        vec![]
    };
    let with_buf = !state.is_empty();
    run(name, &state, |v, ins| {
        for step in 0..3 {
            let (p, g) = (&ins[0..1], &ins[1 + step..2 + step]);
            let bufs: &[Tensor] = if with_buf { &ins[4..5] } else { &[] };
            [sgd, sgd_f, sgd_fv][v](p, g, bufs, step == 0, &h);
        }
    });
}

#[test]
fn sgd_plain() {
    sgd_case(
        "sgd",
        SgdHyper {
            lr: 0.1,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
        },
    );
}

#[test]
fn sgd_momentum_dampening_weight_decay() {
    sgd_case(
        "sgd_momentum",
        SgdHyper {
            lr: 0.1,
            momentum: 0.9,
            dampening: 0.1,
            weight_decay: 0.01,
            nesterov: false,
        },
    );
}

#[test]
fn sgd_nesterov() {
    sgd_case(
        "sgd_nesterov",
        SgdHyper {
            lr: 0.1,
            momentum: 0.9,
            dampening: 0.0,
            weight_decay: 0.01,
            nesterov: true,
        },
    );
}

// ---------------------------------------------------------------- Adam, AdamW

pub struct AdamHyper {
    pub lr: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub amsgrad: bool,
    /// AdamW: `param.mul_(1 - lr * weight_decay)` instead of L2 on the grad.
    pub decoupled_weight_decay: bool,
}

variants!(adam, adam_f, adam_fv; fn (params: &[Tensor], grads: &[Tensor], exp_avgs: &[Tensor], exp_avg_sqs: &[Tensor], max_exp_avg_sqs: &[Tensor], state_steps: &mut [f64], h: &AdamHyper) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let exp_avg = &exp_avgs[i];
        let exp_avg_sq = &exp_avg_sqs[i];
        state_steps[i] += 1.0;
        if h.weight_decay != 0.0 {
            if h.decoupled_weight_decay {
                param.mul_((1.0 - h.lr * h.weight_decay) as f32);
            } else {
                grad = grad.add_scaled(param, h.weight_decay as f32);
            }
        }
        // Decay the first and second moment running average coefficient
        exp_avg.lerp_(&grad, (1.0 - h.beta1) as f32);
        exp_avg_sq.mul_(h.beta2 as f32).addcmul_(&grad, &grad, (1.0 - h.beta2) as f32);
        let step = state_steps[i];
        let bias_correction1 = 1.0 - h.beta1.powf(step);
        let bias_correction2 = 1.0 - h.beta2.powf(step);
        let step_size = h.lr / bias_correction1;
        let bias_correction2_sqrt = bias_correction2.sqrt();
        let denom;
        if h.amsgrad {
            // torch.maximum(max_exp_avg_sqs[i], exp_avg_sq, out=max_exp_avg_sqs[i])
            max_exp_avg_sqs[i].copy_(&max_exp_avg_sqs[i].maximum(exp_avg_sq));
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt as f32).add_(h.eps as f32);
        } else {
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt as f32).add_(h.eps as f32);
        }
        param.addcdiv_(exp_avg, &denom, -step_size as f32);
    }
});

fn adam_case(name: &str, h: AdamHyper) {
    let mut state = vec![("exp_avg", zeros()), ("exp_avg_sq", zeros())];
    if h.amsgrad {
        state.push(("max_exp_avg_sq", zeros()));
    }
    let ams = h.amsgrad;
    run(name, &state, |v, ins| {
        let mut steps = [0.0];
        for step in 0..3 {
            let max: &[Tensor] = if ams { &ins[6..7] } else { &[] };
            [adam, adam_f, adam_fv][v](
                &ins[0..1],
                &ins[1 + step..2 + step],
                &ins[4..5],
                &ins[5..6],
                max,
                &mut steps,
                &h,
            );
        }
    });
}

fn adam_hyper(lr: f64, weight_decay: f64, amsgrad: bool, decoupled: bool) -> AdamHyper {
    AdamHyper {
        lr,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay,
        amsgrad,
        decoupled_weight_decay: decoupled,
    }
}

#[test]
fn adam_l2() {
    adam_case("adam", adam_hyper(0.01, 0.01, false, false));
}

#[test]
fn adam_amsgrad() {
    adam_case("adam_amsgrad", adam_hyper(0.01, 0.0, true, false));
}

#[test]
fn adamw() {
    adam_case("adamw", adam_hyper(0.01, 0.1, false, true));
}

#[test]
fn adamw_amsgrad() {
    adam_case("adamw_amsgrad", adam_hyper(0.01, 0.1, true, true));
}

// ---------------------------------------------------------------- RMSprop

pub struct RmspropHyper {
    pub lr: f64,
    pub alpha: f64,
    pub eps: f64,
    pub weight_decay: f64,
    pub momentum: f64,
    pub centered: bool,
}

variants!(rmsprop, rmsprop_f, rmsprop_fv; fn (params: &[Tensor], grads: &[Tensor], square_avgs: &[Tensor], grad_avgs: &[Tensor], momentum_buffer_list: &[Tensor], h: &RmspropHyper) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let square_avg = &square_avgs[i];
        if h.weight_decay != 0.0 {
            grad = grad.add_scaled(param, h.weight_decay as f32);
        }
        square_avg.mul_(h.alpha as f32).addcmul_(&grad, &grad, (1.0 - h.alpha) as f32);
        let avg;
        if h.centered {
            let grad_avg = &grad_avgs[i];
            grad_avg.lerp_(&grad, (1.0 - h.alpha) as f32);
            avg = square_avg.addcmul(grad_avg, grad_avg, -1.0).sqrt_();
        } else {
            avg = square_avg.sqrt();
        }
        avg.add_(h.eps as f32);
        if h.momentum > 0.0 {
            let buf = &momentum_buffer_list[i];
            buf.mul_(h.momentum as f32).addcdiv1_(&grad, &avg);
            param.add_scaled_(buf, -h.lr as f32);
        } else {
            param.addcdiv_(&grad, &avg, -h.lr as f32);
        }
    }
});

fn rmsprop_case(name: &str, h: RmspropHyper) {
    let mut state = vec![("square_avg", zeros())];
    if h.momentum > 0.0 {
        state.push(("momentum_buffer", zeros()));
    }
    if h.centered {
        state.push(("grad_avg", zeros()));
    }
    let (m, c) = (h.momentum > 0.0, h.centered);
    run(name, &state, |v, ins| {
        for step in 0..3 {
            let bufs: &[Tensor] = if m { &ins[5..6] } else { &[] };
            let gavg: &[Tensor] = if c { &ins[6..7] } else { &[] };
            [rmsprop, rmsprop_f, rmsprop_fv][v](
                &ins[0..1],
                &ins[1 + step..2 + step],
                &ins[4..5],
                gavg,
                bufs,
                &h,
            );
        }
    });
}

#[test]
fn rmsprop_plain() {
    rmsprop_case(
        "rmsprop",
        RmspropHyper {
            lr: 0.01,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
        },
    );
}

#[test]
fn rmsprop_centered_momentum() {
    rmsprop_case(
        "rmsprop_centered",
        RmspropHyper {
            lr: 0.01,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.01,
            momentum: 0.5,
            centered: true,
        },
    );
}

// ---------------------------------------------------------------- Adagrad

variants!(adagrad, adagrad_f, adagrad_fv; fn (params: &[Tensor], grads: &[Tensor], state_sums: &[Tensor], state_steps: &mut [f64], lr: f64, weight_decay: f64, lr_decay: f64, eps: f64) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let state_sum = &state_sums[i];
        state_steps[i] += 1.0;
        let step = state_steps[i];
        if weight_decay != 0.0 {
            grad = grad.add_scaled(param, weight_decay as f32);
        }
        let clr = lr / (1.0 + (step - 1.0) * lr_decay);
        state_sum.addcmul_(&grad, &grad, 1.0);
        let std = state_sum.sqrt().add_(eps as f32);
        param.addcdiv_(&grad, &std, -clr as f32);
    }
});

#[test]
fn adagrad_lr_decay_weight_decay() {
    run("adagrad", &[("sum", zeros())], |v, ins| {
        let mut steps = [0.0];
        for step in 0..3 {
            [adagrad, adagrad_f, adagrad_fv][v](
                &ins[0..1],
                &ins[1 + step..2 + step],
                &ins[4..5],
                &mut steps,
                0.1,
                0.01,
                0.01,
                1e-10,
            );
        }
    });
}

// ---------------------------------------------------------------- Adadelta

variants!(adadelta, adadelta_f, adadelta_fv; fn (params: &[Tensor], grads: &[Tensor], square_avgs: &[Tensor], acc_deltas: &[Tensor], lr: f64, rho: f64, eps: f64, weight_decay: f64) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let square_avg = &square_avgs[i];
        let acc_delta = &acc_deltas[i];
        if weight_decay != 0.0 {
            grad = grad.add_scaled(param, weight_decay as f32);
        }
        square_avg.mul_(rho as f32).addcmul_(&grad, &grad, (1.0 - rho) as f32);
        let std = square_avg.add(eps as f32).sqrt_();
        let delta = acc_delta.add(eps as f32).sqrt_();
        delta.div_(&std).mul_(&grad);
        acc_delta.mul_(rho as f32).addcmul_(&delta, &delta, (1.0 - rho) as f32);
        param.add_scaled_(&delta, -lr as f32);
    }
});

#[test]
fn adadelta_weight_decay() {
    run(
        "adadelta",
        &[("square_avg", zeros()), ("acc_delta", zeros())],
        |v, ins| {
            for step in 0..3 {
                [adadelta, adadelta_f, adadelta_fv][v](
                    &ins[0..1],
                    &ins[1 + step..2 + step],
                    &ins[4..5],
                    &ins[5..6],
                    1.0,
                    0.9,
                    1e-6,
                    0.01,
                );
            }
        },
    );
}

// ---------------------------------------------------------------- Adamax

// The `differentiable=True` branch of torch's Adamax (the other one is
// `torch.maximum(..., out=exp_inf)`, the same values): a `cat` of two
// unsqueezed rows, one made by `unsqueeze_`, reduced with `amax`.
variants!(adamax, adamax_f, adamax_fv; fn (params: &[Tensor], grads: &[Tensor], exp_avgs: &[Tensor], exp_infs: &[Tensor], state_steps: &mut [f64], lr: f64, beta1: f64, beta2: f64, eps: f64, weight_decay: f64) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let exp_avg = &exp_avgs[i];
        let exp_inf = &exp_infs[i];
        state_steps[i] += 1.0;
        if weight_decay != 0.0 {
            grad = grad.add_scaled(param, weight_decay as f32);
        }
        exp_avg.lerp_(&grad, (1.0 - beta1) as f32);
        let norm_buf = Tensor::cat(
            &[exp_inf.mul_(beta2 as f32).unsqueeze(0), grad.abs().add_(eps as f32).unsqueeze_(0)],
            0,
        );
        exp_inf.copy_(&norm_buf.amax([0], false));
        let bias_correction = 1.0 - beta1.powf(state_steps[i]);
        let clr = lr / bias_correction;
        param.addcdiv_(exp_avg, exp_inf, -clr as f32);
    }
});

#[test]
fn adamax_weight_decay() {
    run(
        "adamax",
        &[("exp_avg", zeros()), ("exp_inf", zeros())],
        |v, ins| {
            let mut steps = [0.0];
            for step in 0..3 {
                [adamax, adamax_f, adamax_fv][v](
                    &ins[0..1],
                    &ins[1 + step..2 + step],
                    &ins[4..5],
                    &ins[5..6],
                    &mut steps,
                    0.02,
                    0.9,
                    0.999,
                    1e-8,
                    0.01,
                );
            }
        },
    );
}

// ---------------------------------------------------------------- NAdam

// `mu_product` is a float32 scalar tensor in torch (`mu_product *= mu`
// rounds to float32), read back with `.item()`.
variants!(nadam, nadam_f, nadam_fv; fn (params: &[Tensor], grads: &[Tensor], exp_avgs: &[Tensor], exp_avg_sqs: &[Tensor], mu_products: &[Tensor], state_steps: &mut [f64], lr: f64, beta1: f64, beta2: f64, eps: f64, weight_decay: f64, momentum_decay: f64) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let exp_avg = &exp_avgs[i];
        let exp_avg_sq = &exp_avg_sqs[i];
        let mu_product = &mu_products[i];
        state_steps[i] += 1.0;
        let step = state_steps[i];
        let bias_correction2 = 1.0 - beta2.powf(step);
        if weight_decay != 0.0 {
            grad = grad.add_scaled(param, weight_decay as f32);
        }
        // calculate the momentum cache \mu^{t} and \mu^{t+1}
        let mu = beta1 * (1.0 - 0.5 * 0.96f64.powf(step * momentum_decay));
        let mu_next = beta1 * (1.0 - 0.5 * 0.96f64.powf((step + 1.0) * momentum_decay));
        // update mu_product
        mu_product.mul_(mu as f32);
        // decay the first and second moment running average coefficient
        exp_avg.lerp_(&grad, (1.0 - beta1) as f32);
        exp_avg_sq.mul_(beta2 as f32).addcmul_(&grad, &grad, (1.0 - beta2) as f32);
        let denom = exp_avg_sq.div(bias_correction2 as f32).sqrt();
        let mu_product_value = mu_product.item() as f64;
        let mu_product_next = mu_product_value * mu_next;
        denom.add_(eps as f32);
        param.addcdiv_(&grad, &denom, (-lr * (1.0 - mu) / (1.0 - mu_product_value)) as f32);
        param.addcdiv_(exp_avg, &denom, ((-lr * mu_next) / (1.0 - mu_product_next)) as f32);
    }
});

#[test]
fn nadam_weight_decay() {
    let state = [
        ("exp_avg", zeros()),
        ("exp_avg_sq", zeros()),
        ("mu_product", Tensor::ones(&[])),
    ];
    run("nadam", &state, |v, ins| {
        let mut steps = [0.0];
        for step in 0..3 {
            [nadam, nadam_f, nadam_fv][v](
                &ins[0..1],
                &ins[1 + step..2 + step],
                &ins[4..5],
                &ins[5..6],
                &ins[6..7],
                &mut steps,
                0.02,
                0.9,
                0.999,
                1e-8,
                0.01,
                4e-3,
            );
        }
    });
}

// ---------------------------------------------------------------- RAdam

variants!(radam, radam_f, radam_fv; fn (params: &[Tensor], grads: &[Tensor], exp_avgs: &[Tensor], exp_avg_sqs: &[Tensor], state_steps: &mut [f64], lr: f64, beta1: f64, beta2: f64, eps: f64, weight_decay: f64) {
    for (i, param) in params.iter().enumerate() {
        let mut grad = grads[i].shallow_clone();
        let exp_avg = &exp_avgs[i];
        let exp_avg_sq = &exp_avg_sqs[i];
        state_steps[i] += 1.0;
        let step = state_steps[i];
        if weight_decay != 0.0 {
            grad = grad.add_scaled(param, weight_decay as f32);
        }
        exp_avg.lerp_(&grad, (1.0 - beta1) as f32);
        exp_avg_sq.mul_(beta2 as f32).addcmul_(&grad, &grad, (1.0 - beta2) as f32);
        let bias_correction1 = 1.0 - beta1.powf(step);
        let bias_correction2 = 1.0 - beta2.powf(step);
        // correcting bias for the first moving moment
        let bias_corrected_exp_avg = exp_avg / bias_correction1 as f32;
        // maximum length of the approximated SMA
        let rho_inf = 2.0 / (1.0 - beta2) - 1.0;
        // compute the length of the approximated SMA
        let rho_t = rho_inf - 2.0 * step * beta2.powf(step) / bias_correction2;
        if rho_t > 5.0 {
            let rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
                .sqrt();
            let exp_avg_sq_sqrt = exp_avg_sq.sqrt();
            exp_avg_sq_sqrt.add_(eps as f32);
            let adaptive_lr = bias_correction2.sqrt() as f32 / &exp_avg_sq_sqrt;
            param.add_scaled_(&(&bias_corrected_exp_avg * lr as f32 * &adaptive_lr * rect as f32), -1.0);
        } else {
            param.add_scaled_(&(&bias_corrected_exp_avg * lr as f32), -1.0);
        }
    }
});

#[test]
fn radam_weight_decay() {
    run(
        "radam",
        &[("exp_avg", zeros()), ("exp_avg_sq", zeros())],
        |v, ins| {
            let mut steps = [0.0];
            for step in 0..3 {
                [radam, radam_f, radam_fv][v](
                    &ins[0..1],
                    &ins[1 + step..2 + step],
                    &ins[4..5],
                    &ins[5..6],
                    &mut steps,
                    0.01,
                    0.9,
                    0.999,
                    1e-8,
                    0.01,
                );
            }
        },
    );
}

// ---------------------------------------------------------------- Rprop

// `sign[sign.gt(0)] = etaplus` is `index_put_` with a boolean mask, which
// is `masked_fill_`; `grad[sign.eq(etaminus)] = 0` likewise.
variants!(rprop, rprop_f, rprop_fv; fn (params: &[Tensor], grads: &[Tensor], prevs: &[Tensor], step_sizes: &[Tensor], etaminus: f64, etaplus: f64, step_size_min: f64, step_size_max: f64) {
    for (i, param) in params.iter().enumerate() {
        let grad = &grads[i];
        let prev = &prevs[i];
        let step_size = &step_sizes[i];
        let sign = grad.mul(prev).sign();
        sign.masked_fill_(&sign.gt(0.0), etaplus as f32);
        sign.masked_fill_(&sign.lt(0.0), etaminus as f32);
        sign.masked_fill_(&sign.eq(0.0), 1.0);
        // update stepsizes with step size updates
        step_size.mul_(&sign).clamp_(step_size_min as f32, step_size_max as f32);
        // for dir<0, dfdx=0
        // for dir>=0 dfdx=dfdx
        let grad = grad.clone();
        grad.masked_fill_(&sign.eq(etaminus as f32), 0.0);
        // update parameters
        param.addcmul_(&grad.sign(), step_size, -1.0);
        prev.copy_(&grad);
    }
});

#[test]
fn rprop_etas_and_step_sizes() {
    let state = [
        ("prev", zeros()),
        ("step_size", Tensor::full(&[3, 4], 0.01)),
    ];
    run("rprop", &state, |v, ins| {
        for step in 0..3 {
            [rprop, rprop_f, rprop_fv][v](
                &ins[0..1],
                &ins[1 + step..2 + step],
                &ins[4..5],
                &ins[5..6],
                0.5,
                1.2,
                1e-6,
                50.0,
            );
        }
    });
}
