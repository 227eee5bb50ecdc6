//! An Adam step over parameter and state tensors passed as `&mut [Tensor]`.
//! The functionalized versions compute new parameters and moments without
//! mutating anything, then write the final values back into the caller's
//! tensors once, at exit.
//!
//! Run with `cargo run --example adam`.

use funcz::trace::Tracer;
use funcz::{Tensor, functionalize};

/// Defines the same Adam step three times: as written, and functionalized
/// in both modes.
macro_rules! adam_step {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        fn $name(params: &mut [Tensor], grads: &[Tensor], m: &mut [Tensor], v: &mut [Tensor], lr: f32, step: i32) {
            let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
            for i in 0..params.len() {
                m[i].mul_(b1).add_(&(&grads[i] * (1.0 - b1)));
                v[i].mul_(b2).addcmul_(&grads[i], &grads[i], 1.0 - b2);
                let m_hat = &m[i] / (1.0 - b1.powi(step));
                let v_hat = &v[i] / (1.0 - b2.powi(step));
                params[i].addcdiv_(&m_hat, &(&v_hat.sqrt() + eps), -lr);
            }
        }
    };
}

adam_step!(adam);
adam_step!(
    #[functionalize]
    adam_f
);
adam_step!(
    #[functionalize(remove = "mutations_and_views")]
    adam_fv
);

type Step = fn(&mut [Tensor], &[Tensor], &mut [Tensor], &mut [Tensor], f32, i32);

fn main() {
    let shapes: [&[usize]; 2] = [&[2, 3], &[3]];
    let grads: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| Tensor::randn(s, 10 + i as u64))
        .collect();
    let variants: [(&str, Step); 3] = [
        ("original", adam),
        ("remove = \"mutations\"", adam_f),
        ("remove = \"mutations_and_views\"", adam_fv),
    ];
    let mut finals = Vec::new();
    for (name, f) in variants {
        let mut params: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| Tensor::randn(s, i as u64))
            .collect();
        let mut m: Vec<Tensor> = shapes.iter().map(|s| Tensor::zeros(s)).collect();
        let mut v: Vec<Tensor> = shapes.iter().map(|s| Tensor::zeros(s)).collect();
        let (_, graph) = Tracer::new("adam_step")
            .input("params", &params[..])
            .input("grads", &grads[..])
            .input("m", &m[..])
            .input("v", &v[..])
            .run(|| f(&mut params, &grads, &mut m, &mut v, 1e-3, 1));
        println!(
            "// {name}: {} ops, functional: {}\n{graph}",
            graph.len(),
            graph.is_functional()
        );
        finals.push((params, m, v));
    }
    let reference = &finals[0];
    for other in &finals[1..] {
        for (a, b) in reference
            .0
            .iter()
            .chain(&reference.1)
            .chain(&reference.2)
            .zip(other.0.iter().chain(&other.1).chain(&other.2))
        {
            assert!(a.equal(b), "a parameter or moment differs");
        }
    }
    println!("all three variants leave identical parameters and moments");
}
