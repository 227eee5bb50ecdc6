//! `torch.optim`'s optimizer *classes* ported as a Rust port writes them:
//! a struct whose fields hold the hyperparameters and the per-parameter
//! state (`self.exp_avg[i]`, a `Vec<Tensor>`, PyTorch's
//! `self.state[p]["exp_avg"]`), and `step(&mut self, params, grads)` a
//! method that updates the state in place. Lazily created state (PyTorch's
//! `if len(state) == 0:`) is pushed on the first step. Same recorded runs
//! as `optim.rs` (`scripts/record_ported.py`); each variant is compared
//! with PyTorch's values, and the three with each other bit for bit.

use crate::fixture::{assert_matches, case, f32s};
use funcz::Tensor;

pub struct Adam {
    pub lr: f64,
    pub betas: (f64, f64),
    pub eps: f64,
    pub weight_decay: f64,
    pub exp_avg: Vec<Tensor>,
    pub exp_avg_sq: Vec<Tensor>,
    pub step: Vec<f64>,
}

impl Adam {
    variants!(step, step_f, step_fv; fn (&mut self, params: &[Tensor], grads: &[Tensor]) {
        if self.exp_avg.len() < params.len() {
            for p in params.iter() {
                self.exp_avg.push(p.zeros_like());
                self.exp_avg_sq.push(p.zeros_like());
                self.step.push(0.0);
            }
        }
        for (i, param) in params.iter().enumerate() {
            let mut grad = grads[i].shallow_clone();
            self.step[i] += 1.0;
            if self.weight_decay != 0.0 {
                grad = grad.add_scaled(param, self.weight_decay as f32);
            }
            self.exp_avg[i].lerp_(&grad, (1.0 - self.betas.0) as f32);
            self.exp_avg_sq[i]
                .mul_(self.betas.1 as f32)
                .addcmul_(&grad, &grad, (1.0 - self.betas.1) as f32);
            let step = self.step[i];
            let bias_correction1 = 1.0 - self.betas.0.powf(step);
            let bias_correction2 = 1.0 - self.betas.1.powf(step);
            let step_size = self.lr / bias_correction1;
            let bias_correction2_sqrt = bias_correction2.sqrt();
            let denom = (self.exp_avg_sq[i].sqrt() / bias_correction2_sqrt as f32).add_(self.eps as f32);
            param.addcdiv_(&self.exp_avg[i], &denom, -step_size as f32);
        }
    });
}

pub struct Sgd {
    pub lr: f64,
    pub momentum: f64,
    pub dampening: f64,
    pub weight_decay: f64,
    pub nesterov: bool,
    pub momentum_buffer: Vec<Tensor>,
}

impl Sgd {
    variants!(step, step_f, step_fv; fn (&mut self, params: &[Tensor], grads: &[Tensor]) {
        for (i, param) in params.iter().enumerate() {
            let mut grad = grads[i].shallow_clone();
            if self.weight_decay != 0.0 {
                grad = grad.add_scaled(param, self.weight_decay as f32);
            }
            if self.momentum != 0.0 {
                if self.momentum_buffer.len() <= i {
                    // `buf = torch.clone(grad).detach()`
                    self.momentum_buffer.push(grad.clone());
                } else {
                    self.momentum_buffer[i]
                        .mul_(self.momentum as f32)
                        .add_scaled_(&grad, (1.0 - self.dampening) as f32);
                }
                if self.nesterov {
                    grad = grad.add_scaled(&self.momentum_buffer[i], self.momentum as f32);
                } else {
                    grad = self.momentum_buffer[i].clone();
                }
            }
            param.add_scaled_(&grad, -self.lr as f32);
        }
    });
}

/// The recorded parameter and gradients of `name`.
fn recorded(name: &str) -> (Tensor, Vec<Tensor>) {
    let c = case("optimizers", name);
    let grads: Vec<Tensor> = c["grads"]
        .as_array()
        .expect("grads")
        .iter()
        .map(f32s)
        .collect();
    assert_eq!(grads.len(), 3, "{name}: three steps recorded");
    (f32s(&c["param0"]), grads)
}

/// Three steps of `step` (variant `v`) from the recorded start; the final
/// parameter and the state tensors named in `state`.
fn bits(ts: &[&Tensor]) -> Vec<Vec<u32>> {
    ts.iter()
        .map(|t| t.to_vec().iter().map(|x| x.to_bits()).collect())
        .collect()
}

#[test]
fn adam_class_with_state_in_fields() {
    let (p0, grads) = recorded("adam");
    let c = case("optimizers", "adam");
    let mut runs = Vec::new();
    for step in [Adam::step, Adam::step_f, Adam::step_fv] {
        let mut opt = Adam {
            lr: 0.01,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.01,
            exp_avg: Vec::new(),
            exp_avg_sq: Vec::new(),
            step: Vec::new(),
        };
        let params = vec![p0.clone()];
        for g in &grads {
            step(&mut opt, &params, std::slice::from_ref(g));
        }
        assert_eq!(opt.step, vec![3.0]);
        assert_matches("Adam: param", &params[0], &c["param"]);
        assert_matches("Adam: exp_avg", &opt.exp_avg[0], &c["state"]["exp_avg"]);
        assert_matches(
            "Adam: exp_avg_sq",
            &opt.exp_avg_sq[0],
            &c["state"]["exp_avg_sq"],
        );
        runs.push(bits(&[&params[0], &opt.exp_avg[0], &opt.exp_avg_sq[0]]));
    }
    assert_eq!(runs[1], runs[0], "mutations mode, bit for bit");
    assert_eq!(runs[2], runs[0], "mutations_and_views mode, bit for bit");
}

#[test]
fn sgd_class_with_lazy_momentum_buffers() {
    for (name, nesterov, dampening) in [("sgd_momentum", false, 0.1), ("sgd_nesterov", true, 0.0)] {
        let (p0, grads) = recorded(name);
        let c = case("optimizers", name);
        let mut runs = Vec::new();
        for step in [Sgd::step, Sgd::step_f, Sgd::step_fv] {
            let mut opt = Sgd {
                lr: 0.1,
                momentum: 0.9,
                dampening,
                weight_decay: 0.01,
                nesterov,
                momentum_buffer: Vec::new(),
            };
            let params = vec![p0.clone()];
            for g in &grads {
                step(&mut opt, &params, std::slice::from_ref(g));
            }
            assert_matches(&format!("{name}: param"), &params[0], &c["param"]);
            assert_matches(
                &format!("{name}: momentum_buffer"),
                &opt.momentum_buffer[0],
                &c["state"]["momentum_buffer"],
            );
            runs.push(bits(&[&params[0], &opt.momentum_buffer[0]]));
        }
        assert_eq!(runs[1], runs[0], "{name}: mutations mode, bit for bit");
        assert_eq!(
            runs[2], runs[0],
            "{name}: mutations_and_views mode, bit for bit"
        );
    }
}
