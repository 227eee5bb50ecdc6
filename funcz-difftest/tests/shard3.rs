//! Shard 3 of the generated programs (see `build.rs`): every program run
//! unannotated, with `#[functionalize]` and with
//! `remove = "mutations_and_views"`, on the same random inputs.
#![allow(unused, clippy::all, clippy::pedantic)]

include!(concat!(env!("OUT_DIR"), "/shard3.rs"));

#[test]
fn original_and_functionalized_agree() {
    funcz_difftest::check_all(PROGRAMS);
}
