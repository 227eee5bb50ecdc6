//! Expansion time of `#[functionalize]` on a realistic function of about
//! 30 statements (target: ≤ 1 ms per function). Prints the numbers.
//!
//! Run with `cargo bench -p funcz-macros --bench expand_time`.
#![allow(dead_code)]

// The macro's modules, compiled into this bench (a proc-macro crate cannot
// export them).
#[path = "../src/analysis/mod.rs"]
mod analysis;
#[path = "../src/attr.rs"]
mod attr;
#[path = "../src/ctxt.rs"]
mod ctxt;
#[path = "../src/diag.rs"]
mod diag;
#[path = "../src/elements.rs"]
mod elements;
#[path = "../src/expand.rs"]
mod expand;
#[path = "../src/fast.rs"]
mod fast;
#[path = "../src/inputs.rs"]
mod inputs;
#[path = "../src/lower/mod.rs"]
mod lower;
#[path = "../src/params.rs"]
mod params;
#[path = "../src/place_checks.rs"]
mod place_checks;
#[path = "../src/places.rs"]
mod places;
#[path = "../src/scope.rs"]
mod scope;

use std::time::Instant;

use proc_macro2::TokenStream;

const BODY: &str = r#"
fn layer(x: &Tensor, w: &Tensor, cache: &mut Tensor, params: &mut [Tensor], grads: &[Tensor], pos: usize, n: usize) -> Result<Tensor, String> {
    let h = x.matmul(w);
    let b = h.clone();
    let v = b.view([-1]);
    v.narrow(0, 0, 2).add_(1.0);
    let r = b.select(0, 0);
    r.mul_(2.0).add_(3.0);
    let t = b.t();
    t.select(0, 1).fill_(7.0);
    b.diagonal(0, 0, 1).zero_();
    for i in 0..n {
        b.select(0, i % 2).mul_(1.5);
    }
    if pos > 3 {
        b.relu_();
    } else {
        b.clamp_(-1.0, 1.0);
    }
    cache.narrow(0, pos, 1).copy_(&b.narrow(0, 0, 1));
    let s = check(b.sum().item())?;
    for (p, g) in params.iter_mut().zip(grads.iter()) {
        p.sub_(&(g * s));
    }
    for part in b.chunk(2, 1) {
        part.add_(0.5);
    }
    let mut y = b.unsqueeze(0);
    y.squeeze_();
    let z = &y + &r;
    let m = z.mean();
    x.mul_(0.5);
    let out = &z * &m;
    let u = out.sum_dim(0, false);
    if u.numel() == 0 {
        return Ok(u);
    }
    Ok(&u + &v.sum())
}
"#;

fn main() {
    let item: TokenStream = BODY.parse().expect("the bench function tokenizes");
    let stmts = BODY.matches(";\n").count() + BODY.matches("}\n").count();
    for (args, label) in [
        ("", "remove = \"mutations\""),
        (
            "remove = \"mutations_and_views\"",
            "remove = \"mutations_and_views\"",
        ),
    ] {
        let args: TokenStream = args.parse().expect("arguments tokenize");
        let out = expand::expand(args.clone(), item.clone());
        assert!(
            !out.to_string().contains("compile_error"),
            "the bench function must expand cleanly:\n{out}"
        );
        // Warm up, then time.
        for _ in 0..20 {
            std::hint::black_box(expand::expand(args.clone(), item.clone()));
        }
        let iters = 300;
        let start = Instant::now();
        for _ in 0..iters {
            std::hint::black_box(expand::expand(args.clone(), item.clone()));
        }
        let per = start.elapsed().as_secs_f64() * 1e3 / iters as f64;
        println!(
            "expand {label}: {per:.3} ms per function of ~{stmts} statements (target <= 1 ms): {}",
            if per <= 1.0 { "met" } else { "MISSED" }
        );
    }
}
