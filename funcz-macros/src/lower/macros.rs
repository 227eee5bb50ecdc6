//! Macro invocations. A macro not known to only read its arguments
//! (`bump!(b)`) is watched like an opaque call; the arguments of any other
//! are lowered like any code, implicit format captures of tracked tensors
//! are passed by name, and views stored into collections before a mutation
//! are refused.

use super::opaque::watched_block;
use super::resolve::read_only_macro;
#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// A macro invocation in expression position: a macro that may write
    /// what it is given (see [`Resolve::macro_as_call`]) is watched like an
    /// opaque call; any other is lowered by [`Self::lower_macro`].
    ///
    /// Input: `let s = bump!(b);` with `b` tracked.
    /// Output: `let s = { let w = rt::watch(&b); let r = bump!(b); if rt::watched(..) { commit } r };`
    pub(super) fn lower_macro_expr(&mut self, e: &mut Expr) {
        let Expr::Macro(m) = e else { return };
        match self.watched_macro(&mut m.mac) {
            Some((before, after)) => *e = watched_block(before, e.clone(), after, false),
            None => self.lower_macro(&mut m.mac),
        }
    }

    /// A macro invocation in statement position: as
    /// [`Self::lower_macro_expr`], the watch statements placed beside the
    /// invocation (so `let`s it expands to stay in scope).
    pub(super) fn lower_macro_stmt(&mut self, mut m: syn::StmtMacro) -> Vec<Stmt> {
        match self.watched_macro(&mut m.mac) {
            Some((before, after)) if m.semi_token.is_some() => {
                let mut out = before;
                out.push(Stmt::Macro(m));
                out.extend(after);
                out
            }
            Some((before, after)) if !(before.is_empty() && after.is_empty()) => {
                let call = Expr::Macro(syn::ExprMacro {
                    attrs: m.attrs,
                    mac: m.mac,
                });
                vec![Stmt::Expr(watched_block(before, call, after, false), None)]
            }
            Some(_) => vec![Stmt::Macro(m)],
            None => {
                self.lower_macro(&mut m.mac);
                vec![Stmt::Macro(m)]
            }
        }
    }

    /// A macro that may write what it is given, lowered as the opaque call
    /// [`Resolve::macro_as_call`] makes of it: its arguments lowered, the
    /// watch statements returned. `None`: not such a macro.
    fn watched_macro(&mut self, mac: &mut syn::Macro) -> Option<(Vec<Stmt>, Vec<Stmt>)> {
        let (mut call, wrapped) = self.macro_as_call(mac)?;
        self.check_macro(mac);
        let label = format!("{}!(..)", mac.path.to_token_stream()).replace(' ', "");
        let span = mac.path.span();
        let (before, after) = self.opaque_parts(&mut call, &label, span);
        let Expr::Call(c) = call else {
            return Some((before, after));
        };
        let args: Punctuated<Expr, Token![,]> = c
            .args
            .into_iter()
            .zip(wrapped)
            .map(|(a, w)| match (a, w) {
                (a @ (Expr::Reference(_) | Expr::Paren(_)), true) if is_ref(&a) => peel_refs(a),
                (a, true) => pq!((*#a)),
                (a, false) => a,
            })
            .collect();
        // A format string's implicit capture of a tensor the function
        // tracks is refused: the macro's own patterns may not accept the
        // named argument that would give it the current value.
        self.capture_args(&args, false);
        mac.tokens = args.to_token_stream();
        Some((before, after))
    }

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
            let extra = self.capture_args(&args, read_only_macro(mac));
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
        self.check_opaque_tokens(mac);
    }

    /// The named arguments to add for the implicit captures of a format
    /// string among `args` (`"{x}"`) whose tensor lives in a hidden
    /// variable: `x = __fz_x_0`.
    ///
    /// `known`: the macro is one of `READ_ONLY_MACROS`, which take named
    /// arguments; for any other, such a capture is refused instead
    /// (`diag::capture_in_opaque_macro`): its patterns may not accept one.
    fn capture_args(
        &mut self,
        args: &Punctuated<Expr, Token![,]>,
        known: bool,
    ) -> Vec<TokenStream> {
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
                        if !known {
                            crate::diag::capture_in_opaque_macro(self, &ident);
                            continue;
                        }
                        extra.push(quote!(#ident = #value));
                    }
                }
            }
        }
        extra
    }

    /// Arguments that are not expressions, left as written: a tracked
    /// tensor named there is refused (it would be read stale, or written
    /// unseen).
    fn check_opaque_tokens(&mut self, mac: &syn::Macro) {
        // Not expressions: a tracked tensor named there would be read as
        // the caller's, stale.
        let mut names = Vec::new();
        scan_tokens(mac.tokens.clone(), &mut |_, ident: &Ident| {
            names.push(ident.clone())
        });
        let read_only = read_only_macro(mac);
        for ident in names {
            let Some(id) = self.scopes.lookup(&ident.to_string()) else {
                continue;
            };
            if self.var(id) != ident && self.has_state(id) {
                crate::diag::read_in_opaque_macro(self, &ident);
            } else if !read_only
                && match self.scopes.kind(id) {
                    Kind::Alias { .. } | Kind::Multi { .. } => true,
                    Kind::Root { .. } => self.has_aliases(id),
                    _ => false,
                }
            {
                // A write there would not reach the views of the tensor.
                crate::diag::tensor_in_opaque_macro(self, &ident, &mac.path);
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

/// `&x`, `(&mut x)`: a whole-binding argument as the macro call was
/// given it, wrapped by `macro_as_call` and by the lowering of a shadowed
/// `&`/`&mut` input.
fn is_ref(e: &Expr) -> bool {
    match e {
        Expr::Reference(_) => true,
        Expr::Paren(p) => is_ref(&p.expr),
        _ => false,
    }
}

/// The name inside [`is_ref`]'s references: a macro's patterns may want a
/// name (`$t:ident`).
fn peel_refs(e: Expr) -> Expr {
    match e {
        Expr::Reference(r) => peel_refs(*r.expr),
        Expr::Paren(p) if is_ref(&p.expr) => peel_refs(*p.expr),
        other => other,
    }
}

/// Every name in the arguments of a macro of `block` not known to only
/// read them (`bump!(b)`): the roots kept out of an `rt::Var`.
pub(crate) fn macro_names(block: &Block) -> crate::fast::HashSet<String> {
    struct Find(crate::fast::HashSet<String>);
    impl<'ast> syn::visit::Visit<'ast> for Find {
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if !read_only_macro(m) {
                scan_tokens(m.tokens.clone(), &mut |_, i: &Ident| {
                    self.0.insert(i.to_string());
                });
            }
        }
    }
    let mut f = Find(Default::default());
    syn::visit::Visit::visit_block(&mut f, block);
    f.0
}
