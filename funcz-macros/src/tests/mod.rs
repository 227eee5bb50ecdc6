//! Unit tests of the expander (snapshots, errors, never-panic corpus).

mod corpus;
mod snapshots;

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
