//! Error accumulator: every mistake is reported once, spanned on the
//! offending tokens, and expansion goes on so that all of them are seen.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    /// Records an error spanned on `tokens` with a `help:` line.
    pub(crate) fn error(&self, tokens: impl ToTokens, msg: impl Display, help: impl Display) {
        self.errors.borrow_mut().push(syn::Error::new_spanned(
            tokens,
            format!("{msg}\n\nhelp: {help}"),
        ));
    }

    /// Records an internal error of the macro (two of its passes disagree:
    /// a bug of funcz, not of the user's code), reported only in strict
    /// mode (see `expand::generate`).
    pub(crate) fn internal(&self, tokens: impl ToTokens, what: impl Display) {
        self.error(
            tokens,
            format!("internal error of #[functionalize]: {what}"),
            "please report this function to funcz; without FUNCZ_STRICT_ANALYSIS the function is generated \
             from the facts code generation found",
        );
    }

    /// Takes over the errors collected by `other`.
    pub(crate) fn absorb(&self, other: Ctxt) {
        self.errors.borrow_mut().extend(other.errors.into_inner());
    }

    pub(crate) fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// The collected errors, deduplicated by message and position.
    pub(crate) fn take(&self) -> Vec<syn::Error> {
        let mut out: Vec<syn::Error> = Vec::new();
        for e in self.errors.borrow_mut().drain(..) {
            let key = (e.to_string(), format!("{:?}", e.span()));
            if !out
                .iter()
                .any(|o| (o.to_string(), format!("{:?}", o.span())) == key)
            {
                out.push(e);
            }
        }
        out
    }
}
