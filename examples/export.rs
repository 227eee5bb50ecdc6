//! Shipping a functionalized program to a backend: one attention step with
//! a KV cache (the new key and value are written in place into row `pos`
//! of caches the caller owns), functionalized by `#[functionalize]`,
//! traced, exported to ONNX as `attention.onnx`, run in tract (an ONNX
//! engine), and compared with funcz's eager results, including the caches'
//! new values, which the model returns as extra outputs.
//!
//! Run with `cargo run --example export` (the model is written to the
//! system temp directory, or to the directory given as the first argument).

use funcz::trace::Tracer;
use funcz::{Tensor, functionalize};
use funcz_runtime::trace::OnnxModel;
use tract_onnx::prelude::*;

/// Attention of `query` over the first `pos + 1` cached keys and values,
/// after writing this step's `key` and `value` into row `pos` of the
/// caches.
#[functionalize(remove = "mutations_and_views")]
fn attention_step(
    k_cache: &Tensor,
    v_cache: &Tensor,
    key: &Tensor,
    value: &Tensor,
    query: &Tensor,
    pos: usize,
) -> Tensor {
    k_cache.narrow(0, pos, 1).copy_(key);
    v_cache.narrow(0, pos, 1).copy_(value);
    let keys = k_cache.narrow(0, 0, pos + 1);
    let values = v_cache.narrow(0, 0, pos + 1);
    let scale = 1.0 / (query.shape()[1] as f32).sqrt();
    let scores = query.matmul(&keys.t()).mul(scale);
    let weights = scores.exp();
    let probs = &weights / &weights.sum_dim(-1, true);
    probs.matmul(&values)
}

fn to_tract(t: &Tensor) -> TValue {
    tract_onnx::prelude::Tensor::from_shape(t.shape(), &t.to_vec())
        .expect("shape matches data")
        .into_tvalue()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn run_in_tract(model: &OnnxModel, inputs: &[&Tensor]) -> TractResult<Vec<Vec<f32>>> {
    let plan = tract_onnx::onnx()
        .model_for_read(&mut model.bytes.as_slice())?
        .into_optimized()?
        .into_runnable()?;
    let outs = plan.run(inputs.iter().map(|t| to_tract(t)).collect())?;
    outs.iter()
        .map(|o| Ok(o.to_plain_array_view::<f32>()?.iter().copied().collect()))
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (len, dim, pos) = (8, 16, 5);
    let k_cache = Tensor::<f32>::randn(&[len, dim], 0);
    let v_cache = Tensor::<f32>::randn(&[len, dim], 1);
    let key = Tensor::<f32>::randn(&[1, dim], 2);
    let value = Tensor::<f32>::randn(&[1, dim], 3);
    let query = Tensor::<f32>::randn(&[1, dim], 4);
    // The model's inputs are the values before the step.
    let before = [&k_cache, &v_cache, &key, &value, &query].map(|t| t.to_vec());

    let (out, graph) = Tracer::new("attention_step")
        .input("k_cache", &k_cache)
        .input("v_cache", &v_cache)
        .input("key", &key)
        .input("value", &value)
        .input("query", &query)
        .run(|| attention_step(&k_cache, &v_cache, &key, &value, &query, pos));
    println!("{graph}");

    let model = graph.export_onnx()?;
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("funcz-export"));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("attention.onnx");
    std::fs::write(&path, &model.bytes)?;
    println!(
        "wrote {} ({} bytes; the exported functional graph has {} ops)",
        path.display(),
        model.bytes.len(),
        model.graph.len()
    );
    for u in &model.input_updates {
        println!(
            "output `{}` is the new value of input `{}`",
            u.output, u.input
        );
    }

    let inputs: Vec<Tensor> = before
        .iter()
        .zip([&k_cache, &v_cache, &key, &value, &query])
        .map(|(v, t)| Tensor::from_vec(v.clone(), t.shape()))
        .collect();
    let results = run_in_tract(&model, &inputs.iter().collect::<Vec<_>>())?;
    let mut worst = 0.0f32;
    for (o, got) in model.outputs.iter().zip(&results) {
        let want = match model.input_updates.iter().find(|u| u.output == o.name) {
            Some(u) if u.input == "k_cache_1" => k_cache.to_vec(),
            Some(u) if u.input == "v_cache_1" => v_cache.to_vec(),
            Some(u) => return Err(format!("unexpected update of {}", u.input).into()),
            None => out.to_vec(),
        };
        let d = max_abs_diff(got, &want);
        println!("{:>18}: tract vs eager, max |difference| = {d:.2e}", o.name);
        worst = worst.max(d);
    }
    if worst > 1e-5 {
        return Err(format!("tract and funcz disagree (max difference {worst})").into());
    }
    println!("tract agrees with funcz on the attention output and on both updated caches");
    Ok(())
}
