//! Every mistake the macro refuses gets a spanned error with a `help:`,
//! and the original function is still emitted (no cascade of errors).

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

/// The runtime's implementation modules are not part of the facade's API
/// (see `tests/public_api.rs` at the workspace root for what is).
#[test]
fn implementation_modules_are_not_facade_api() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/surface/*.rs");
}
