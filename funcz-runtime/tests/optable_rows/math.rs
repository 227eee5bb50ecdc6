//! Calls the methods of the `math` rows of the op table (see `optable.rs`).

use super::Out;
use funcz_runtime::Tensor;

/// `(values, indices)` as two float tensors (the table test compares
/// storages and values only).
fn two(p: (Tensor, Tensor<i64>)) -> Out {
    Out::Many(vec![p.0, floats(p.1)])
}

/// An index tensor as a float tensor.
fn floats(t: Tensor<i64>) -> Tensor {
    let v = t.to_vec().into_iter().map(|v| v as f32).collect();
    Tensor::from_vec(v, t.shape())
}

/// Calls the method `name` on `x` (a 2×2 f32 tensor) with valid arguments,
/// or `None` when `name` is not a row of this group.
pub fn call(name: &str, x: &mut Tensor) -> Option<Out> {
    let y = Tensor::<f32>::from_vec(vec![0.5, 1.5, 2.5, 3.5], &[2, 2]);
    let row = Tensor::<f32>::from_vec(vec![9.0, 8.0], &[2]);
    use Out::*;
    Some(match name {
        "rsqrt" => One(x.rsqrt()),
        "reciprocal" => One(x.reciprocal()),
        "sin" => One(x.sin()),
        "cos" => One(x.cos()),
        "erf" => One(x.erf()),
        "floor" => One(x.floor()),
        "round" => One(x.round()),
        "gelu" => One(x.gelu("tanh")),
        "silu" => One(x.silu()),
        "softplus" => One(x.softplus(1.0, 20.0)),
        "relu6" => One(x.relu6()),
        "hardtanh" => One(x.hardtanh(-1.0, 1.0)),
        "clamp_min" => One(x.clamp_min(2.0)),
        "clamp_max" => One(x.clamp_max(2.0)),
        "sign" => One(x.sign()),
        "maximum" => One(x.maximum(&row)),
        "minimum" => One(x.minimum(&y)),
        "add_scaled" => One(x.add_scaled(&row, 0.5)),
        "sub_scaled" => One(x.sub_scaled(&y, 2.0)),
        "addcmul1" => One(x.addcmul1(&y, &row)),
        "addcdiv1" => One(x.addcdiv1(&y, &row)),
        "max" => One(x.max()),
        "min" => One(x.min()),
        "max_dim" => two(x.max_dim(1, false)),
        "min_dim" => two(x.min_dim(-1, true)),
        "argmax" => One(floats(x.argmax(None, false))),
        "argmin" => One(floats(x.argmin(0, true))),
        "amax" => One(x.amax([0], false)),
        "amin" => One(x.amin([0, 1], true)),
        "sum_dims" => One(x.sum_dims([0, 1], false)),
        "mean_dims" => One(x.mean_dims([-1], true)),
        "var" => One(x.var(1)),
        "var_dims" => One(x.var_dims([0], 0, false)),
        "std" => One(x.std(1)),
        "std_dims" => One(x.std_dims([1], 1, true)),
        "var_mean" => {
            let (v, m) = x.var_mean([0], 1, false);
            Many(vec![v, m])
        }
        "vector_norm" => One(x.vector_norm(2.0, [1], false)),
        "norm" => One(x.norm(1.0)),
        "cumsum" => One(x.cumsum(0)),
        "softmax" => One(x.softmax(-1)),
        "log_softmax" => One(x.log_softmax(0)),
        "cat" => One(Tensor::cat(&[&*x, &y], 0)),
        "stack" => One(Tensor::stack(&[&*x, &y], 1)),
        "roll" => One(x.roll([1], [0])),
        "flip" => One(x.flip([1])),
        "repeat" => One(x.repeat([2, 1])),
        "tril" => One(x.tril(0)),
        "triu" => One(x.triu(1)),
        "squeeze_dims_copy" => One(x.squeeze_dims_copy([0])),
        "squeeze_dims" => One(x.squeeze_dims([0])),
        "sort" => two(x.sort(1, true)),
        "topk" => two(x.topk(1, 0, true, true)),
        "empty" => One(Tensor::empty(&[2, 2])),
        "empty_like" => One(x.empty_like()),
        "rsqrt_" => One(x.rsqrt_()),
        "reciprocal_" => One(x.reciprocal_()),
        "sin_" => One(x.sin_()),
        "cos_" => One(x.cos_()),
        "erf_" => One(x.erf_()),
        "floor_" => One(x.floor_()),
        "round_" => One(x.round_()),
        "hardtanh_" => One(x.hardtanh_(0.0, 2.0)),
        "clamp_min_" => One(x.clamp_min_(2.0)),
        "clamp_max_" => One(x.clamp_max_(2.0)),
        "sign_" => One(x.sign_()),
        "add_scaled_" => One(x.add_scaled_(&row, 0.5)),
        "sub_scaled_" => One(x.sub_scaled_(&y, 2.0)),
        "addcmul1_" => One(x.addcmul1_(&y, &row)),
        "addcdiv1_" => One(x.addcdiv1_(&y, &row)),
        "cumsum_" => One(x.cumsum_(1)),
        "tril_" => One(x.tril_(0)),
        "triu_" => One(x.triu_(0)),
        _ => return None,
    })
}
