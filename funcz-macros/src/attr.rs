//! The attribute's arguments: `remove = "mutations" | "mutations_and_views"`.
//!
//! Input: `remove = "mutations_and_views"`.
//! Output: `Remove::MutationsAndViews`, emitted as `::funcz::rt::Mode::Copies`.

use proc_macro2::TokenStream;
use syn::parse::{Parse, ParseStream};
use syn::{Ident, Token};

use crate::ctxt::Ctxt;
use crate::diag;

/// What the functionalized body may still contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Remove {
    Mutations,
    MutationsAndViews,
}

/// Emitted as the runtime's mode (`Mode::Views` for `"mutations"`,
/// `Copies` for `"mutations_and_views"`), for the few runtime items that
/// take it (`MultiMeta::forward`): the `MODE` of the namespace the
/// function imports as `__fz_rt` (`rt::views` / `rt::copies`, see
/// `expand::lower_fn`), whose functions pass it themselves.
impl quote::ToTokens for Remove {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            Remove::Mutations | Remove::MutationsAndViews => quote::quote!(__fz_rt::MODE),
        });
    }
}

struct Arg {
    key: Ident,
    value: Option<syn::Expr>,
}

impl Parse for Arg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let key: Ident = input.parse()?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            Some(input.parse()?)
        } else {
            None
        };
        Ok(Arg { key, value })
    }
}

/// Parses the arguments, reporting every problem to `cx`.
pub(crate) fn parse(args: TokenStream, cx: &Ctxt) -> Remove {
    let mut remove = Remove::Mutations;
    if args.is_empty() {
        return remove;
    }
    let parsed = syn::parse::Parser::parse2(
        syn::punctuated::Punctuated::<Arg, Token![,]>::parse_terminated,
        args.clone(),
    );
    let list = match parsed {
        Ok(l) => l,
        Err(e) => {
            diag::malformed_args(cx, &args, &e);
            return remove;
        }
    };
    let mut seen = false;
    for arg in list {
        if arg.key != "remove" {
            diag::unknown_argument(cx, &arg.key);
            continue;
        }
        if seen {
            diag::duplicate_remove(cx, &arg.key);
            continue;
        }
        seen = true;
        match &arg.value {
            Some(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            })) => match s.value().as_str() {
                "mutations" => remove = Remove::Mutations,
                "mutations_and_views" => remove = Remove::MutationsAndViews,
                _ => diag::bad_remove_value(cx, s),
            },
            Some(v) => diag::remove_not_a_string(cx, v),
            None => diag::remove_without_value(cx, &arg.key),
        }
    }
    remove
}
