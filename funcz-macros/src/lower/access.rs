//! How generated code names a binding's value or state: a field of an
//! `rt::Var` (`__fz_v_x_0.value`), a variable (`x`, `__fz_state_3`), or
//! other tokens (`(*p)`, `v[__fz_index]`).
//!
//! Input: `self.value(id)` for a root held in an `rt::Var`.
//! Output: `Access::Field(__fz_v_x_0, Field::Value)`, which `quote!` appends
//! as three tokens, and which [`var_pair`] recognizes without reading tokens.
//!
//! (A `TokenStream` interpolated into `quote!` is handed to the compiler to
//! be joined, and reading one back asks the compiler for its tokens: about
//! 7,000 and 8,000 instructions in an unoptimized macro, where appending an
//! identifier and a punctuation mark is a few hundred.)

use proc_macro2::{Punct, Spacing, Span, TokenStream};
use quote::{ToTokens, TokenStreamExt};
use syn::Ident;

/// A field of an `rt::Var`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Field {
    Value,
    State,
}

impl Field {
    /// The field's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Field::Value => "value",
            Field::State => "state",
        }
    }
}

/// A binding's value or state as generated code names it.
#[derive(Clone)]
pub(crate) enum Access {
    /// `var.value` or `var.state`.
    Field(Ident, Field),
    /// A variable.
    Name(Ident),
    /// Any other expression.
    Tokens(TokenStream),
}

impl ToTokens for Access {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            Access::Field(var, field) => {
                tokens.append(var.clone());
                tokens.append(Punct::new('.', Spacing::Alone));
                tokens.append(Ident::new(field.name(), Span::call_site()));
            }
            Access::Name(name) => tokens.append(name.clone()),
            Access::Tokens(ts) => ts.to_tokens(tokens),
        }
    }
}

/// The `rt::Var` whose value and state `value` and `state` are
/// (`v.value`, `v.state`), if they are one's.
pub(crate) fn var_pair(value: &Access, state: &Access) -> Option<Ident> {
    match (value, state) {
        (Access::Field(v, Field::Value), Access::Field(s, Field::State)) => {
            // (Two texts asked of the compiler, once a pair is found.)
            (crate::fast::text(v) == crate::fast::text(s)).then(|| v.clone())
        }
        _ => None,
    }
}
