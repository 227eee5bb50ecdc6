//! A KV-cache update: write this step's key into row `pos` of a cache the
//! caller owns, then attend over the filled prefix. The functionalized
//! version performs no in-place op but the final write-back into the cache.
//!
//! Run with `cargo run --example kv_cache`.

use funcz::trace::Tracer;
use funcz::{Tensor, functionalize};

fn step(cache: &Tensor, key: &Tensor, query: &Tensor, pos: usize) -> Tensor {
    cache.narrow(0, pos, 1).copy_(key);
    let keys = cache.narrow(0, 0, pos + 1);
    keys.matmul(&query.t()).sigmoid()
}

#[functionalize]
fn step_f(cache: &Tensor, key: &Tensor, query: &Tensor, pos: usize) -> Tensor {
    cache.narrow(0, pos, 1).copy_(key);
    let keys = cache.narrow(0, 0, pos + 1);
    keys.matmul(&query.t()).sigmoid()
}

#[functionalize(remove = "mutations_and_views")]
fn step_fv(cache: &Tensor, key: &Tensor, query: &Tensor, pos: usize) -> Tensor {
    cache.narrow(0, pos, 1).copy_(key);
    let keys = cache.narrow(0, 0, pos + 1);
    keys.matmul(&query.t()).sigmoid()
}

/// The signature shared by the three variants.
type Step = fn(&Tensor, &Tensor, &Tensor, usize) -> Tensor;

fn main() {
    let (len, dim) = (8, 4);
    let key = Tensor::<f32>::randn(&[1, dim], 1);
    let query = Tensor::<f32>::randn(&[1, dim], 2);
    let mut results = Vec::new();
    let variants: [(&str, Step); 3] = [
        ("original", step),
        ("remove = \"mutations\"", step_f),
        ("remove = \"mutations_and_views\"", step_fv),
    ];
    for (name, f) in variants {
        let cache = Tensor::<f32>::randn(&[len, dim], 0);
        let (scores, graph) = Tracer::new("step")
            .input("cache", &cache)
            .input("key", &key)
            .input("query", &query)
            .run(|| f(&cache, &key, &query, 3));
        println!("// {name}\n{graph}");
        results.push((scores, cache));
    }
    let (s0, c0) = &results[0];
    for (s, c) in &results[1..] {
        assert!(s.allclose(s0, 1e-6, 1e-6), "scores differ");
        assert!(c.equal(c0), "caches differ");
    }
    println!("all three variants agree on the scores and on the updated cache");
}
