//! `torch.nn.functional`, ported the way PyTorch's reference
//! implementations write it (`torch/_decomp/decompositions.py`,
//! `torch/_refs/nn/functional`, and the documented math of
//! `scaled_dot_product_attention`): in-place ops on intermediates, running
//! statistics updated in place, boolean masks.

use crate::common::check;
use crate::fixture::{assert_matches, case, f32s, i64s, num};
use funcz::Tensor;

/// Runs the three variants on `inputs` (`check`: same outputs, same final
/// inputs, pure traces), then compares the original's first output with
/// PyTorch's `out`.
fn run(
    name: &str,
    inputs: &[Tensor],
    call: impl Fn(usize, &mut Vec<Tensor>) -> Vec<Tensor>,
) -> Vec<Tensor> {
    check(name, inputs, &call);
    let mut ins = inputs.to_vec();
    let out = call(0, &mut ins);
    assert_matches(
        &format!("{name}: out"),
        &out[0],
        &case("functional", name)["out"],
    );
    let mut all = out;
    all.extend(ins);
    all
}

variants!(softmax, softmax_f, softmax_fv; fn (x: &Tensor, dim: i64) -> Tensor {
    let x_max = x.amax([dim], true);
    let unnormalized = x.sub(&x_max);
    unnormalized.exp_();
    let result = unnormalized.div(&unnormalized.sum_dims([dim], true));
    result
});

#[test]
fn softmax_matches_pytorch() {
    let c = case("functional", "softmax");
    let dim = num(&c["dim"]) as i64;
    run("softmax", &[f32s(&c["x"])], |v, ins| {
        vec![[softmax, softmax_f, softmax_fv][v](&ins[0], dim)]
    });
}

variants!(log_softmax, log_softmax_f, log_softmax_fv; fn (x: &Tensor, dim: i64) -> Tensor {
    let shifted = x.sub(&x.amax([dim], true));
    let shifted_logsumexp = shifted.exp().sum_dims([dim], true).log();
    shifted.sub_(&shifted_logsumexp);
    shifted
});

#[test]
fn log_softmax_matches_pytorch() {
    let c = case("functional", "log_softmax");
    let dim = num(&c["dim"]) as i64;
    run("log_softmax", &[f32s(&c["x"])], |v, ins| {
        vec![[log_softmax, log_softmax_f, log_softmax_fv][v](
            &ins[0], dim,
        )]
    });
}

variants!(layer_norm, layer_norm_f, layer_norm_fv; fn (x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f64) -> Tensor {
    let mean = x.mean_dims([-1], true);
    let rstd = x.var_dims([-1], 0, true).add_(eps as f32).rsqrt_();
    let out = x.sub(&mean);
    out.mul_(&rstd).mul_(weight).add_(bias);
    out
});

#[test]
fn layer_norm_matches_pytorch() {
    let c = case("functional", "layer_norm");
    let eps = num(&c["eps"]);
    let ins = [f32s(&c["x"]), f32s(&c["weight"]), f32s(&c["bias"])];
    run("layer_norm", &ins, |v, ins| {
        vec![[layer_norm, layer_norm_f, layer_norm_fv][v](
            &ins[0], &ins[1], &ins[2], eps,
        )]
    });
}

// Training-mode batch norm over (N, C, L): normalized with the biased
// variance, running statistics updated in place with the unbiased one,
// as `torch/_decomp/decompositions.py::native_batch_norm_helper` does.
variants!(batch_norm, batch_norm_f, batch_norm_fv; fn (input: &Tensor, running_mean: &Tensor, running_var: &Tensor, weight: &Tensor, bias: &Tensor, momentum: f64, eps: f64) -> Tensor {
    let reduction_dims = [0, 2];
    let (biased_var, mean) = input.var_mean(reduction_dims, 0, true);
    let rstd = (&biased_var + eps as f32).rsqrt();
    let output = input.sub(&mean);
    output.mul_(&rstd);
    let n = (input.numel() / input.shape()[1]) as f64;
    let save_mean = mean.squeeze_dims(reduction_dims);
    running_mean.mul_((1.0 - momentum) as f32).add_(&save_mean.mul(momentum as f32));
    let squeezed_var = biased_var.squeeze_dims(reduction_dims);
    let unbiased_var = squeezed_var.mul((n / (n - 1.0)) as f32);
    running_var.mul_((1.0 - momentum) as f32).add_(&unbiased_var.mul(momentum as f32));
    output.mul_(&weight.view([1, -1, 1])).add_(&bias.view([1, -1, 1]));
    output
});

#[test]
fn batch_norm_training_updates_running_stats_like_pytorch() {
    let c = case("functional", "batch_norm_train");
    let (momentum, eps) = (num(&c["momentum"]), num(&c["eps"]));
    let ins = [
        f32s(&c["x"]),
        f32s(&c["running_mean0"]),
        f32s(&c["running_var0"]),
        f32s(&c["weight"]),
        f32s(&c["bias"]),
    ];
    let all = run("batch_norm_train", &ins, |v, ins| {
        vec![[batch_norm, batch_norm_f, batch_norm_fv][v](
            &ins[0], &ins[1], &ins[2], &ins[3], &ins[4], momentum, eps,
        )]
    });
    // all = [out, x, running_mean, running_var, weight, bias]
    assert_matches("batch_norm: running_mean", &all[2], &c["running_mean"]);
    assert_matches("batch_norm: running_var", &all[3], &c["running_var"]);
}

variants!(group_norm, group_norm_f, group_norm_fv; fn (input: &Tensor, num_groups: i64, weight: &Tensor, bias: &Tensor, eps: f64) -> Tensor {
    let shape = input.shape().to_vec();
    let (n, c) = (shape[0] as i64, shape[1] as i64);
    let x = input.reshape([n, num_groups, -1]);
    let (var, mean) = x.var_mean([-1], 0, true);
    let rstd = var.add(eps as f32).rsqrt_();
    let out = x.sub(&mean);
    out.mul_(&rstd);
    let out = out.view([n, c, -1]);
    out.mul_(&weight.view([1, c, 1])).add_(&bias.view([1, c, 1]));
    out
});

#[test]
fn group_norm_matches_pytorch() {
    let c = case("functional", "group_norm");
    let (groups, eps) = (num(&c["groups"]) as i64, num(&c["eps"]));
    let ins = [f32s(&c["x"]), f32s(&c["weight"]), f32s(&c["bias"])];
    run("group_norm", &ins, |v, ins| {
        vec![[group_norm, group_norm_f, group_norm_fv][v](
            &ins[0], groups, &ins[1], &ins[2], eps,
        )]
    });
}

variants!(rms_norm, rms_norm_f, rms_norm_fv; fn (x: &Tensor, weight: &Tensor, eps: f64) -> Tensor {
    let rqrst = x.pow(2.0).mean_dims([-1], true).add_(eps as f32).rsqrt_();
    let out = x.mul(&rqrst);
    out.mul_(weight);
    out
});

#[test]
fn rms_norm_matches_pytorch() {
    let c = case("functional", "rms_norm");
    let eps = num(&c["eps"]);
    run(
        "rms_norm",
        &[f32s(&c["x"]), f32s(&c["weight"])],
        |v, ins| {
            vec![[rms_norm, rms_norm_f, rms_norm_fv][v](
                &ins[0], &ins[1], eps,
            )]
        },
    );
}

variants!(embedding, embedding_f, embedding_fv; fn (weight: &Tensor, indices: &Tensor<i64>) -> Tensor {
    let mut size = indices.shape().iter().map(|&d| d as i64).collect::<Vec<_>>();
    size.push(-1);
    weight.index_select(0, &indices.reshape([-1])).view(size)
});

#[test]
fn embedding_matches_pytorch() {
    let c = case("functional", "embedding");
    let idx = i64s(&c["indices"]);
    run("embedding", &[f32s(&c["weight"])], |v, ins| {
        vec![[embedding, embedding_f, embedding_fv][v](&ins[0], &idx)]
    });
}

// `F.cross_entropy(logits, target, label_smoothing=ls)` with mean reduction:
// (1 - ls) * nll + ls * (mean over the batch of -sum_c logp) / C.
variants!(cross_entropy, cross_entropy_f, cross_entropy_fv; fn (logits: &Tensor, target: &Tensor<i64>, label_smoothing: f64) -> Tensor {
    let logp = logits.log_softmax(1);
    let nll = logp.gather(1, &target.unsqueeze(1)).neg_().mean();
    if label_smoothing > 0.0 {
        let classes = logits.shape()[1] as f64;
        let smooth = logp.sum_dims([1], false).neg_().mean();
        nll.mul_((1.0 - label_smoothing) as f32)
            .add_(&smooth.mul((label_smoothing / classes) as f32));
    }
    nll
});

#[test]
fn cross_entropy_with_label_smoothing_matches_pytorch() {
    for name in ["cross_entropy", "cross_entropy_plain"] {
        let c = case("functional", name);
        let (target, ls) = (i64s(&c["target"]), num(&c["label_smoothing"]));
        run(name, &[f32s(&c["logits"])], |v, ins| {
            vec![[cross_entropy, cross_entropy_f, cross_entropy_fv][v](
                &ins[0], &target, ls,
            )]
        });
    }
}

variants!(nll_loss, nll_loss_f, nll_loss_fv; fn (logp: &Tensor, target: &Tensor<i64>) -> Tensor {
    let picked = logp.gather(1, &target.unsqueeze(1));
    picked.neg_();
    picked.mean()
});

#[test]
fn nll_loss_matches_pytorch() {
    let c = case("functional", "nll_loss");
    let target = i64s(&c["target"]);
    run("nll_loss", &[f32s(&c["logp"])], |v, ins| {
        vec![[nll_loss, nll_loss_f, nll_loss_fv][v](&ins[0], &target)]
    });
}

variants!(mse_loss, mse_loss_f, mse_loss_fv; fn (input: &Tensor, target: &Tensor) -> Tensor {
    let diff = input.sub(target);
    diff.pow_(2.0);
    diff.mean()
});

#[test]
fn mse_loss_matches_pytorch() {
    let c = case("functional", "mse_loss");
    run("mse_loss", &[f32s(&c["x"]), f32s(&c["y"])], |v, ins| {
        vec![[mse_loss, mse_loss_f, mse_loss_fv][v](&ins[0], &ins[1])]
    });
}

// The reference implementation in `scaled_dot_product_attention`'s
// documentation, with `is_causal=True`: a boolean lower-triangular mask,
// `attn_bias.masked_fill_(temp_mask.logical_not(), -inf)`, `attn_weight +=
// attn_bias`, softmax, then the product with `value`.
variants!(sdpa, sdpa_f, sdpa_fv; fn (query: &Tensor, key: &Tensor, value: &Tensor) -> Tensor {
    let l = query.shape()[query.dim() - 2];
    let s = key.shape()[key.dim() - 2];
    let scale_factor = 1.0 / (query.shape()[query.dim() - 1] as f64).sqrt();
    let attn_bias = Tensor::<f32>::zeros(&[l, s]);
    let temp_mask = Tensor::<f32>::ones(&[l, s]).tril(0).bool();
    attn_bias.masked_fill_(&temp_mask.logical_not(), f32::NEG_INFINITY);
    let attn_weight = query.matmul(&key.transpose(-2, -1)).mul(scale_factor as f32);
    attn_weight.add_(&attn_bias);
    let attn_weight = attn_weight.softmax(-1);
    attn_weight.matmul(value)
});

#[test]
fn scaled_dot_product_attention_causal_matches_pytorch() {
    let c = case("functional", "sdpa_causal");
    let ins = [f32s(&c["q"]), f32s(&c["k"]), f32s(&c["v"])];
    run("sdpa_causal", &ins, |v, ins| {
        vec![[sdpa, sdpa_f, sdpa_fv][v](&ins[0], &ins[1], &ins[2])]
    });
}
