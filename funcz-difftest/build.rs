//! Writes the random programs of this run into `$OUT_DIR/shard{k}.rs`.
//!
//! `FUNCZ_SEED` (default 0x5EED) and `FUNCZ_PROGRAMS` (default 1000) choose
//! the run; program `i` of a seed is the same whatever the count.

#[path = "src/generator.rs"]
#[allow(dead_code)]
mod generator;

use std::path::PathBuf;

/// Test targets `tests/shard{k}.rs` (separate crates, so they compile in
/// parallel).
const SHARDS: usize = 4;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/generator.rs");
    println!("cargo:rerun-if-env-changed=FUNCZ_SEED");
    println!("cargo:rerun-if-env-changed=FUNCZ_PROGRAMS");
    let seed = match std::env::var("FUNCZ_SEED") {
        Ok(s) => {
            parse_u64(&s).unwrap_or_else(|| panic!("FUNCZ_SEED must be an integer, got {s:?}"))
        }
        Err(_) => 0x5EED,
    };
    let programs = match std::env::var("FUNCZ_PROGRAMS") {
        Ok(s) => s
            .trim()
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("FUNCZ_PROGRAMS must be a count, got {s:?}")),
        Err(_) => 1000,
    };
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for shard in 0..SHARDS {
        let src = generator::render_shard(seed, programs, SHARDS, shard);
        std::fs::write(out.join(format!("shard{shard}.rs")), src)
            .expect("write generated programs");
    }
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}
