//! The `#[functionalize]` attribute of funcz. All logic lives on
//! `proc_macro2` in the `expand` module so it can be unit-tested. The
//! pipeline, one file (or folder) a step:
//!
//! 1. `attr`: the options (`remove = ..`, an enum);
//! 2. `params`, `places`, `inputs`: what the parameters are (tensors,
//!    collections, field places such as `self.cache`), declared as bindings;
//!    `place_checks`: the entry checks on fields that are not places (read
//!    as tensors, or compound-assigned without being proven tensors);
//!    `elements`: which collection inputs' elements the body may assign,
//!    reorder or replace;
//! 3. `analysis`: a read-only walk of the body (`syn::visit::Visit`) that
//!    computes the facts: which roots are mutated or re-laid-out, and how
//!    often;
//! 4. `lower`: code generation, which reads those facts (`scope` tracks what
//!    aliases what; `lower/resolve.rs` holds the questions both passes ask,
//!    among them the one classification of an in-place op's receiver);
//! 5. `expand`: assembles the function, or re-emits the original with the
//!    errors `diag` reported (collected in `ctxt`).

use proc_macro::TokenStream;

mod analysis;
mod attr;
mod ctxt;
mod diag;
mod elements;
mod expand;
mod fast;
mod inputs;
mod lower;
mod params;
mod place_checks;
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
