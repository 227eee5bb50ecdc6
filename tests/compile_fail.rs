//! Every mistake the macro refuses gets a spanned error with a `help:`,
//! and the original function is still emitted (no cascade of errors).

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
