//! Exits: every `return`, `?` and the tail write the inputs the body
//! mutated back (in the order Rust evaluates them).
//!
//! Input: `return x.sum();`
//! Output: `{ let __fz_ret = x.sum(); rt::write_back(&*input, &x); return __fz_ret; }`

#[allow(unused_imports)]
use super::*;

impl Lowerer<'_> {
    /// Builds an exit: the write-backs, then `value`, when `value` moves an
    /// input (so it cannot be read after); else `value` first, as PyTorch
    /// (the `copy_` epilogue comes last).
    pub(super) fn exit_block(&self, value: Expr, write_back_first: bool, ret: bool) -> Expr {
        let wb = &self.exit;
        if write_back_first {
            if ret {
                pq!({ #(#wb)* return #value; })
            } else {
                pq!({ #(#wb)* #value })
            }
        } else {
            // The value may diverge (`panic!(..)` as the tail): the
            // write-back after it is unreachable, which is not the user's
            // code to be warned about.
            let r = tmp("__fz_ret");
            if ret {
                pq!({
                    #[allow(clippy::diverging_sub_expression)] let #r = #value;
                    #[allow(unreachable_code)] { #(#wb)* }
                    return #r;
                })
            } else {
                pq!({
                    #[allow(clippy::diverging_sub_expression)] let #r = #value;
                    #[allow(unreachable_code)] { #(#wb)* }
                    #r
                })
            }
        }
    }

    /// True if evaluating `e` may move a shadowed input variable (a bare
    /// use that is not borrowed, indexed or a method receiver).
    pub fn moves_input(&self, e: &Expr) -> bool {
        struct V<'l, 'a> {
            lw: &'l Lowerer<'a>,
            moved: bool,
        }
        impl V<'_, '_> {
            // (Only an input passed by value: a bare `x` of a `&Tensor` or
            // `&mut Tensor` input is read as a reference to its value,
            // `(&__fz_v_x)`, which moves nothing; writing back first there
            // conflicted with a borrow the value holds, `return (x * 1.0,
            // t.clone())` in a `for t in xs.iter_mut()` loop.)
            fn input(&self, e: &Expr) -> bool {
                self.lw.binding_of(e).is_some_and(|id| {
                    matches!(
                        self.lw.scopes.kind(id),
                        Kind::Root {
                            input: Some(Passing::Value),
                            ..
                        } | Kind::Coll {
                            input: Some((Passing::Value, _))
                        }
                    )
                })
            }
            fn borrowed(&mut self, e: &Expr) {
                if !self.input(e) {
                    syn::visit::Visit::visit_expr(self, e);
                }
            }
        }
        impl<'ast> syn::visit::Visit<'ast> for V<'_, '_> {
            fn visit_expr(&mut self, e: &'ast Expr) {
                match e {
                    Expr::Path(_) if self.input(e) => self.moved = true,
                    Expr::MethodCall(m) => {
                        self.borrowed(&m.receiver);
                        for a in &m.args {
                            self.visit_expr(a);
                        }
                    }
                    Expr::Reference(r) => self.borrowed(&r.expr),
                    // `*y` of a `&`/`&mut` input is a place, not a move of `y`.
                    Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.borrowed(&u.expr),
                    Expr::Index(i) => {
                        self.borrowed(&i.expr);
                        self.visit_expr(&i.index);
                    }
                    Expr::Field(f) => self.borrowed(&f.base),
                    _ => syn::visit::visit_expr(self, e),
                }
            }
        }
        let mut v = V {
            lw: self,
            moved: false,
        };
        syn::visit::Visit::visit_expr(&mut v, e);
        v.moved
    }

    /// A returned tensor variable (`y`, or an element of a returned tuple
    /// `(y, z)`) keeps the original's layout: an alias is returned as its
    /// root's view again in views mode (see `rt::output`), a root laid out
    /// with gaps in the original as such (see `rt::output_root`). Runs on
    /// the user's expression, before it is lowered.
    ///
    /// Input: `y` (a view of `base`, mutated through it)
    /// Output: `rt::output(&y, &s_y, &base, &s_base, Mode::Views)`
    pub(super) fn eager_output(&mut self, e: Expr) -> Expr {
        if !self.closure_floor.is_empty() {
            return e;
        }
        match e {
            Expr::Tuple(mut t) => {
                t.elems = t.elems.into_iter().map(|x| self.eager_output(x)).collect();
                Expr::Tuple(t)
            }
            Expr::Paren(mut p) => {
                *p.expr = self.eager_output(*p.expr);
                Expr::Paren(p)
            }
            Expr::Path(_) => {
                let Some(id) = self.binding_of(&e) else {
                    return e;
                };
                let s = self.state(id);
                match self.scopes.kind(id).clone() {
                    Kind::Alias { root } if !self.copies() && self.has_state(id) => {
                        let (rv, rs) = self.root_value_state(root);
                        let mut v = e;
                        self.use_binding(id, &mut v);
                        pq!(__fz_rt::output(&#v, &#s, &#rv, &#rs))
                    }
                    Kind::Root {
                        input: None | Some(Passing::Value),
                        ..
                    } if self.has_state(id) => {
                        let mut v = e;
                        self.use_binding(id, &mut v);
                        pq!(__fz_rt::output_root(&#v, &#s))
                    }
                    _ => e,
                }
            }
            _ => e,
        }
    }

    /// Wraps the function's tail expression with the input write-backs.
    /// `moves` is whether the tail as written moves an input.
    pub fn lower_tail(&mut self, e: Expr, moves: bool) -> Expr {
        if self.exit.is_empty() {
            return e;
        }
        self.exit_block(e, moves, false)
    }
}
