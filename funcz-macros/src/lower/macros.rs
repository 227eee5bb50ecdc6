//! Macro invocations: arguments that are expressions are lowered like
//! any code, implicit format captures of tracked tensors are passed by
//! name, and views stored into collections before a mutation are refused.

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// Lowers a macro invocation whose arguments are expressions
    /// (`vec![a, b]`, `vec![x; n]`, `println!("{}", x)`, `assert!(..)`): each
    /// argument is lowered like any expression, and a tensor named inside a
    /// format string (`"{x}"`) that lives in a hidden variable is passed as a
    /// named argument. Arguments that are not expressions are left as
    /// written; reading a tracked tensor there is refused.
    ///
    /// Input: `println!("{x:?} {}", y.sum())` with `x` mutated before.
    /// Output: `println!("{x:?} {}", y.sum(), x = __fz_x_0)`.
    pub(super) fn lower_macro(&mut self, mac: &mut syn::Macro) {
        self.check_macro(mac);
        let parser = Punctuated::<Expr, Token![,]>::parse_terminated;
        if let Ok(mut args) = syn::parse::Parser::parse2(parser, mac.tokens.clone()) {
            if mac.path.segments.last().is_some_and(|s| s.ident == "vec") {
                for a in args.iter() {
                    self.check_stored(a, false);
                }
            }
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            // Implicit captures of a format string.
            let mut extra: Vec<TokenStream> = Vec::new();
            if let Some(Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(fmt),
                ..
            })) = args.iter().find(|a| {
                matches!(
                    a,
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(_),
                        ..
                    })
                )
            }) {
                for name in format_captures(&fmt.value()) {
                    if extra
                        .iter()
                        .any(|t| t.to_string().starts_with(&format!("{name} =")))
                    {
                        continue;
                    }
                    if let Some(id) = self.scopes.lookup(&name) {
                        let ident = Ident::new(&name, fmt.span());
                        let mut value: Expr = syn::parse_quote!(#ident);
                        self.use_binding(id, &mut value);
                        if value.to_token_stream().to_string() != name {
                            extra.push(quote!(#ident = #value));
                        }
                    }
                }
            }
            mac.tokens = if extra.is_empty() {
                args.to_token_stream()
            } else {
                let sep = (!args.empty_or_trailing()).then(|| quote!(,));
                quote!(#args #sep #(#extra),*)
            };
            return;
        }
        // `vec![x; n]`.
        struct Repeat(Expr, Token![;], Expr);
        impl syn::parse::Parse for Repeat {
            fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
                Ok(Repeat(input.parse()?, input.parse()?, input.parse()?))
            }
        }
        if let Ok(Repeat(mut a, semi, mut b)) = syn::parse2::<Repeat>(mac.tokens.clone()) {
            self.visit_expr_mut(&mut a);
            self.visit_expr_mut(&mut b);
            mac.tokens = quote!(#a #semi #b);
            return;
        }
        // Not expressions: a tracked tensor named there would be read as
        // the caller's, stale.
        let mut names = Vec::new();
        scan_tokens(mac.tokens.clone(), &mut |_, ident: &Ident| {
            names.push(ident.clone())
        });
        for ident in names {
            if let Some(id) = self.scopes.lookup(&ident.to_string())
                && self.var(id) != ident
                && self.has_state(id)
            {
                crate::diag::read_in_opaque_macro(self, &ident);
            }
        }
    }

    /// Refuses storing a view of a tensor this function mutates in a
    /// collection or struct that outlives the statement (`let v = vec![x.t()]`,
    /// `list.push(x.narrow(..))`): the stored view would not follow later
    /// mutations of `x` (issue 11's `vec![..]` repro read a stale value).
    pub(super) fn check_stored(&self, e: &Expr, always: bool) {
        if !(always || self.let_depth > 0) {
            return;
        }
        if let Some(root) = self.view_chain_root(e)
            && self.mutated_later(root)
        {
            crate::diag::view_stored(self, e, root);
        }
    }

    pub(super) fn check_macro(&mut self, mac: &syn::Macro) {
        let mut found: Option<(Ident, TokenTree)> = None;
        scan_tokens(mac.tokens.clone(), &mut |prev_dot, ident: &Ident| {
            if prev_dot
                && found.is_none()
                && matches!(
                    optable::lookup(&ident.to_string()).map(|i| i.kind),
                    Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
                )
            {
                found = Some((ident.clone(), TokenTree::Ident(ident.clone())));
            }
        });
        if let Some((ident, _)) = found {
            crate::diag::inplace_in_macro(self, &ident);
        }
        // Aliases read by the macro must be current.
        let mut names = Vec::new();
        scan_tokens(mac.tokens.clone(), &mut |_, ident: &Ident| {
            names.push(ident.to_string())
        });
        for n in names {
            if let Some(id) = self.scopes.lookup(&n) {
                self.need_sync(id);
            }
        }
    }

    /// A `macro_rules!` defined in the body is expanded where it is
    /// invoked, from its tokens as written: a tensor of the function named
    /// there is the binding as written, not its functionalized value, and
    /// an in-place op there is not seen. Refused if it names a tensor the
    /// function mutates, or names one and holds an in-place op.
    ///
    /// Input: `let v = b.narrow(0, 0, 1); macro_rules! bump { () => { b.add_(1.0) }; }`
    /// Output: a spanned error at `b`.
    pub(super) fn check_local_macro(&mut self, mac: &syn::Macro) {
        let mut inplace = false;
        scan_tokens(mac.tokens.clone(), &mut |prev_dot, ident: &Ident| {
            inplace |= prev_dot
                && matches!(
                    optable::lookup(&ident.to_string()).map(|i| i.kind),
                    Some(OpKind::Inplace { .. } | OpKind::InplaceView { .. } | OpKind::Resize)
                );
        });
        let mut named: Option<Ident> = None;
        scan_tokens(mac.tokens.clone(), &mut |_, ident: &Ident| {
            if named.is_none()
                && let Some(id) = self.scopes.lookup(&ident.to_string())
                && let Some(root) = self.scopes.root_of(id)
                && (inplace || self.tracked_root(root))
            {
                named = Some(ident.clone());
            }
        });
        if let Some(ident) = named {
            crate::diag::tensor_in_local_macro(self, &ident);
        }
    }
}
