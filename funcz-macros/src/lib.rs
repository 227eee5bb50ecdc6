//! The `#[functionalize]` attribute of funcz. All logic lives on
//! `proc_macro2` in [`expand`] so it can be unit-tested; the pipeline is
//! `attr` (options) → `params` (inputs) → `lower` (rewrite the body, with
//! `scope` tracking what aliases what) → `expand` (assemble, or re-emit the
//! original function with the errors).

use proc_macro::TokenStream;

mod attr;
mod ctxt;
mod diag;
mod expand;
mod lower;
mod params;
mod places;
mod scope;

/// Rewrites a function so that its body performs no mutation (and, with
/// `remove = "mutations_and_views"`, no aliasing), while returning the same
/// outputs and leaving every tensor argument as the original would.
///
/// See the `funcz` crate for the semantics and examples.
#[proc_macro_attribute]
pub fn functionalize(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::expand(args.into(), input.into()).into()
}

#[cfg(test)]
mod tests;
