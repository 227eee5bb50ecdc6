//! Unit tests of the expander (snapshots, errors, never-panic corpus).

mod analysis;
mod base_precheck;
mod corpus;
mod diag_coverage;
mod fast;
mod refused;
mod snapshots;
mod unbraced;

use proc_macro2::TokenStream;

/// Expands `#[functionalize(args)]` on `src` and pretty-prints the result.
pub(crate) fn expand_pretty(args: &str, src: &str) -> String {
    let args: TokenStream = args.parse().expect("attribute arguments tokenize");
    let item: TokenStream = src.parse().expect("the function tokenizes");
    let out = crate::expand::expand(args, item);
    match syn::parse2::<syn::File>(out.clone()) {
        Ok(file) => prettyplease::unparse(&file),
        Err(_) => out.to_string(),
    }
}

/// Prints the expansion of `$FZ_SRC` with arguments `$FZ_ARGS` (a developer
/// aid: `FZ_SRC='fn f(x: &Tensor) { x.add_(1.0); }' cargo test -p
/// funcz-macros dev_print -- --nocapture`, or `$FZ_SRC_FILE` for a long
/// one); checks that it expands.
#[test]
fn dev_print() {
    let src = match std::env::var("FZ_SRC_FILE") {
        Ok(path) => std::fs::read_to_string(path).expect("FZ_SRC_FILE is readable"),
        Err(_) => {
            std::env::var("FZ_SRC").unwrap_or_else(|_| "fn f(x: &Tensor) { x.add_(1.0); }".into())
        }
    };
    let args = std::env::var("FZ_ARGS").unwrap_or_default();
    let out = expand_pretty(&args, &src);
    println!("{out}");
    assert!(!out.is_empty());
}
