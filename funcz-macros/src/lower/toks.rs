//! Small pieces of generated code kept as token trees, not streams: a call
//! of the runtime (`__fz_rt::var_view(..)`), a view's metadata
//! (`__fz_rt::ViewMeta::Narrow(0i64, 0i64, 2i64)`), a typed literal.
//!
//! Input: `rt_call(at, "var_view", args)`.
//! Output: `Toks[__fz_rt, :, :, var_view, (args)]`, appended to a `quote!`
//! tree by tree.
//!
//! (A `TokenStream` interpolated into `quote!` is cloned, both streams are
//! handed to the compiler to be joined, and then joined to each other: about
//! 7,000 instructions of an unoptimized macro. Appending five trees is a few
//! hundred, and a group's is one call to the compiler, to share its stream.)

use proc_macro2::{Delimiter, Group, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::Ident;

/// A short sequence of token trees.
#[derive(Clone, Default)]
pub(crate) struct Toks(Vec<TokenTree>);

impl Toks {
    pub(crate) fn ident(mut self, ident: Ident) -> Self {
        self.0.push(TokenTree::Ident(ident));
        self
    }

    /// A one-character punctuation mark that stands alone (`-`, `,`).
    pub(crate) fn punct(mut self, ch: char, span: Span) -> Self {
        let mut p = Punct::new(ch, Spacing::Alone);
        p.set_span(span);
        self.0.push(TokenTree::Punct(p));
        self
    }

    /// `::`, as `quote!` writes it.
    pub(crate) fn path_sep(mut self, span: Span) -> Self {
        let mut first = Punct::new(':', Spacing::Joint);
        first.set_span(span);
        let mut second = Punct::new(':', Spacing::Alone);
        second.set_span(span);
        self.0.push(TokenTree::Punct(first));
        self.0.push(TokenTree::Punct(second));
        self
    }

    pub(crate) fn literal(mut self, lit: Literal) -> Self {
        self.0.push(TokenTree::Literal(lit));
        self
    }

    pub(crate) fn group(mut self, group: Group) -> Self {
        self.0.push(TokenTree::Group(group));
        self
    }

    /// `(inner)` with the span `quote!` gives a group it writes.
    pub(crate) fn parens(self, inner: TokenStream) -> Self {
        self.group(Group::new(Delimiter::Parenthesis, inner))
    }
}

impl From<TokenStream> for Toks {
    /// The stream's trees (read back from the compiler: for the rare piece
    /// made by `quote!`).
    fn from(ts: TokenStream) -> Self {
        Toks(ts.into_iter().collect())
    }
}

impl ToTokens for Toks {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.0.iter().cloned());
    }

    fn into_token_stream(self) -> TokenStream {
        self.0.into_iter().collect()
    }
}
