//! `lower::stmts::unbraced`: which generated blocks may stand in the
//! enclosing block.

use crate::lower::unbraced;

fn check(src: &str) -> Option<String> {
    let e = syn::Expr::Verbatim(src.parse().expect("tokens"));
    unbraced(&e).map(|ts| ts.to_string())
}

#[test]
fn a_block_of_statements_without_a_let_is_unbraced() {
    assert_eq!(
        check("{ a(); b.c(1); }").as_deref(),
        Some("a () ; b . c (1) ;")
    );
    assert_eq!(
        check("{ if t { a(); } else { b(); } c(); }").as_deref(),
        Some("if t { a () ; } else { b () ; } c () ;")
    );
    // A `let` inside a nested block is that block's.
    assert!(check("{ { let x = 1; f(x); }; g(); }").is_some());
}

#[test]
fn a_block_that_declares_or_yields_keeps_its_braces() {
    for src in [
        "{ let x = f(); g(&x); }",
        "{ #[allow(unused_mut)] let mut x = f(); }",
        "{ a(); let x = 1; }",
        // A statement ended by its braces, then a `let`.
        "{ if t { a(); } else { b(); } let y = 2; }",
        "{ match t { _ => {} } let y = 2; }",
        // A tail value, no braces at all, two groups.
        "{ a(); b() }",
        "a();",
        "{ a(); } { b(); }",
        "( a(); )",
    ] {
        assert_eq!(check(src), None, "{src}");
    }
}
