//! The `#[functionalize]` attribute of funcz. All logic lives on
//! `proc_macro2` in the `expand` module so it can be unit-tested; the pipeline is
//! `attr` (options) → `params` (inputs) → `lower` (rewrite the body, with
//! `scope` tracking what aliases what) → `expand` (assemble, or re-emit the
//! original function with the errors).

use proc_macro::TokenStream;

mod analysis;
mod attr;
mod ctxt;
mod diag;
mod expand;
mod inputs;
mod lower;
mod params;
mod places;
mod scope;

// The documentation lives in `functionalize.md`. Its example needs the
// `funcz` crate, which this crate cannot depend on, so it is not a doctest
// here; funcz's `src/lib.rs` includes the same file and runs it.
#[cfg_attr(not(doctest), doc = include_str!("functionalize.md"))]
#[proc_macro_attribute]
pub fn functionalize(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::expand(args.into(), input.into()).into()
}

#[cfg(test)]
mod tests;
