//! Compile-fail tests of funcz (`tests/compile_fail.rs`): each file in
//! `tests/ui/` is a mistake `#[functionalize]` refuses with a spanned error
//! and a `help:` line, and each file in `tests/surface/` names an
//! implementation module the facade must not expose. The `.stderr` files
//! are regenerated with `TRYBUILD=overwrite cargo test -p funcz-ui`.
