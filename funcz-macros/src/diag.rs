//! Refusals: one function per kind of program the macro cannot keep
//! equivalent (or per mistake in how it is applied), each with the `help:`
//! that leads to code that works. Every message the macro reports about
//! user code is written here, by stage: the attribute's arguments
//! (`attr.rs`), the item it is put on (`expand.rs`), tracked tensor fields
//! (`places.rs`) and the body (`lower/`).
//!
//! Each function's doc comment names the ui test that exercises it,
//! `(funcz-ui/tests/ui/NAME.rs)`; the unit test `tests::diag_coverage`
//! checks that the file exists and that expanding it reports that refusal.

use std::fmt::Display;

use proc_macro2::{Ident, TokenStream};
use quote::ToTokens;
use syn::{Expr, LitStr};

use crate::ctxt::Ctxt;
use crate::lower::Lowerer;

/// Reports refusal `name` (the calling function's own name) spanned on
/// `at`. Under `cfg(test)` the name is also recorded, so that the coverage
/// test can tell which refusal a ui case triggers.
fn refuse(cx: &Ctxt, name: &'static str, at: impl ToTokens, msg: impl Display, help: impl Display) {
    #[cfg(test)]
    fired::record(name);
    #[cfg(not(test))]
    let _ = name;
    cx.error(at, msg, help);
}

// ---------- The attribute's arguments (`attr.rs`) ----------

/// `#[functionalize(remove "x")]`: arguments that do not parse as a
/// comma-separated list of `key = value`. (funcz-ui/tests/ui/malformed_args.rs)
pub(crate) fn malformed_args(cx: &Ctxt, args: &TokenStream, e: &syn::Error) {
    refuse(
        cx,
        "malformed_args",
        args,
        format!("malformed #[functionalize] arguments: {e}"),
        "write #[functionalize] or #[functionalize(remove = \"mutations_and_views\")]",
    );
}

/// `#[functionalize(mode = ..)]`: a key other than `remove`.
/// (funcz-ui/tests/ui/unknown_key.rs)
pub(crate) fn unknown_argument(cx: &Ctxt, key: &Ident) {
    refuse(
        cx,
        "unknown_argument",
        key,
        format!("unknown #[functionalize] argument `{key}`"),
        "the only argument is `remove = \"mutations\"` or `remove = \"mutations_and_views\"`",
    );
}

/// `#[functionalize(remove = "..", remove = "..")]`.
/// (funcz-ui/tests/ui/duplicate_remove.rs)
pub(crate) fn duplicate_remove(cx: &Ctxt, key: &Ident) {
    refuse(
        cx,
        "duplicate_remove",
        key,
        "duplicate `remove` argument",
        "give `remove` once",
    );
}

/// `#[functionalize(remove = mutations)]`: a value that is not a string
/// literal. (funcz-ui/tests/ui/remove_not_a_string.rs)
pub(crate) fn remove_not_a_string(cx: &Ctxt, value: &syn::Expr) {
    refuse(
        cx,
        "remove_not_a_string",
        value,
        "`remove` takes a string literal",
        "write remove = \"mutations\" or remove = \"mutations_and_views\"",
    );
}

/// `#[functionalize(remove)]`: the key without a value.
/// (funcz-ui/tests/ui/remove_without_value.rs)
pub(crate) fn remove_without_value(cx: &Ctxt, key: &Ident) {
    refuse(
        cx,
        "remove_without_value",
        key,
        "`remove` needs a value",
        "write remove = \"mutations\" or remove = \"mutations_and_views\"",
    );
}

/// `#[functionalize(remove = "views")]`: a string that names no mode.
/// (funcz-ui/tests/ui/bad_remove_value.rs)
pub(crate) fn bad_remove_value(cx: &Ctxt, s: &LitStr) {
    refuse(
        cx,
        "bad_remove_value",
        s,
        format!("received invalid argument for remove=\"{}\"", s.value()),
        "valid options are remove = \"mutations\" and remove = \"mutations_and_views\"",
    );
}

// ---------- The item the attribute is put on (`expand.rs`) ----------

/// `#[functionalize]` on something that is not a `fn` (a struct, a
/// constant); spanned on the first tokens of the item.
/// (funcz-ui/tests/ui/not_a_function.rs)
pub(crate) fn not_a_function(cx: &Ctxt, first_tokens: TokenStream) {
    refuse(
        cx,
        "not_a_function",
        first_tokens,
        "#[functionalize] can only be applied to a function or a method",
        "put the attribute on a `fn` item (free function or method in an `impl` block)",
    );
}

/// `#[functionalize] async fn ..`: mutations could interleave with other
/// code across `.await`s. (funcz-ui/tests/ui/async_fn.rs)
pub(crate) fn async_fn(cx: &Ctxt, asyncness: &syn::Token![async]) {
    refuse(
        cx,
        "async_fn",
        asyncness,
        "#[functionalize] does not support `async fn`: mutations could interleave across await points",
        "functionalize a synchronous helper and call it from the async function",
    );
}

// ---------- Tracked tensor fields of non-tensor parameters (`places.rs`) ----------

/// `helper(&c)`, `self.step()`, `*c = ..` while `c.cache` is tracked: the
/// use of `what` as a whole could read or change the field behind the
/// functionalized value. (funcz-ui/tests/ui/field_base_used_whole.rs)
pub(crate) fn field_base_used_whole(cx: &Ctxt, at: &dyn ToTokens, what: &str, field: &str) {
    refuse(
        cx,
        "field_base_used_whole",
        at,
        format!(
            "`{what}` is used as a whole while #[functionalize] tracks its tensor field `{field}`: the use could \
             read or change that field behind the functionalized value"
        ),
        format!(
            "reach the tensor through the field itself (`{field}`, `&{field}`), e.g. pass `&{field}` to the helper \
             instead of `{what}`, or move the in-place ops on `{field}` into a function of their own"
        ),
    );
}

/// `s.w = Tensor::zeros(..)` (or an assignment to a base of it) while the
/// field `s.w` is tracked: its value at entry is what is written back.
/// (funcz-ui/tests/ui/field_assigned.rs)
pub(crate) fn field_assigned(cx: &Ctxt, left: &syn::Expr, key: &str, field: &str) {
    refuse(
        cx,
        "field_assigned",
        left,
        format!(
            "`{key}` is assigned while #[functionalize] tracks the tensor field `{field}` (its value at entry is \
             written back at exit)"
        ),
        format!(
            "write the new value into the field in place: `{field}.copy_(&new_value)` (same shape), or assign the \
             field outside the functionalized function"
        ),
    );
}

// ---------- The body (`lower/`) ----------
//
// Programs whose mutations #[functionalize] cannot follow, so that the
// functionalized function would not compute what the original does.

/// `x = y.narrow(..)` where `x` is a tensor the function mutates: the
/// original then mutates `y` through `x`, which a root cannot follow.
/// (funcz-ui/tests/ui/assign_view_to_root.rs)
pub(crate) fn assign_alias_to_root(lw: &Lowerer<'_>, at: &impl ToTokens, id: usize, root: usize) {
    let (x, y) = (lw.shown(id), lw.shown(root));
    refuse(
        lw.cx,
        "assign_alias_to_root",
        at,
        format!(
            "`{x}` is assigned a view (or a handle) of `{y}` and mutated: #[functionalize] tracks `{x}` as a tensor \
             of its own, so the mutation would not reach `{y}`"
        ),
        format!(
            "bind the new value with a new `let` instead (`let {x}2 = ...;`): a `let` of a view of `{y}` is tracked \
             as one, so mutating it updates `{y}`; or `.clone()` it if `{y}` should not change"
        ),
    );
}

/// `let (a, b) = (x.narrow(..), ..);` where `a` is mutated: the original
/// mutates `x` through `a`, but an element of a destructured tuple is
/// tracked as a tensor of its own. (funcz-ui/tests/ui/tuple_element_view.rs)
pub(crate) fn tuple_element_alias(lw: &Lowerer<'_>, at: &impl ToTokens, id: usize, root: usize) {
    let (a, x) = (lw.shown(id), lw.shown(root));
    refuse(
        lw.cx,
        "tuple_element_alias",
        at,
        format!(
            "`{a}` is bound to a view (or a handle) of `{x}` by a tuple pattern and mutated: #[functionalize] tracks \
             each name of a tuple pattern as a tensor of its own, so the mutation would not reach `{x}`"
        ),
        format!(
            "bind it with its own `let` (`let {a} = ...;`), which #[functionalize] tracks as a view of `{x}`; or \
             `.clone()` it if `{x}` should not change"
        ),
    );
}

/// `v = b.narrow(..)` where `v` is a view of `a`: a variable is tracked as
/// a view of one base. (funcz-ui/tests/ui/view_rebound_to_other_base.rs)
pub(crate) fn view_rebound_to_other_base(lw: &Lowerer<'_>, right: &Expr, id: usize) {
    refuse(
        lw.cx,
        "view_rebound_to_other_base",
        right,
        format!(
            "`{}` is a view, and this assigns it something that is not a view of the same tensor: \
             #[functionalize] tracks one base per variable",
            lw.shown(id)
        ),
        "use a new variable for the new value",
    );
}

/// `xs = other` (or `*xs = other`) of a collection input whose tensors the
/// body mutates: the body holds handles to the caller's tensors and writes
/// its final values back into them at exit, which the original, having
/// moved on to `other`'s tensors, would not.
/// (funcz-ui/tests/ui/collection_input_reassigned.rs)
pub(crate) fn collection_input_reassigned(lw: &Lowerer<'_>, at: &syn::ExprAssign, id: usize) {
    refuse(
        lw.cx,
        "collection_input_reassigned",
        at,
        format!(
            "`{0}` is a collection input whose tensors #[functionalize] tracks and writes back at exit; \
             assigning `{0}` another collection is not supported",
            lw.shown(id)
        ),
        "bind the other collection to a new variable and use that",
    );
}

/// `for t in xs.iter_mut().filter(..) { helper(t) }`: a loop over a
/// collection input's elements, through an iterator the macro cannot
/// follow to them, gives a loop variable to a call, which may replace the
/// element (`*t = ..`); the exit would then write the new value into the
/// caller's old tensor. (funcz-ui/tests/ui/loop_elements_passed_on.rs)
pub(crate) fn loop_elements_passed_on(lw: &Lowerer<'_>, at: &Expr, id: usize) {
    refuse(
        lw.cx,
        "loop_elements_passed_on",
        at,
        format!(
            "this loop gives the elements of `{0}`, a collection input #[functionalize] writes back at exit, \
             to a call that may replace them (`*t = ..`), through an iterator it cannot follow to the collection",
            lw.shown(id)
        ),
        format!(
            "iterate `{0}.iter_mut()`, with `.enumerate()`, `.zip(..)`, `.rev()`, `.skip(n)`, `.take(n)` or \
             `.step_by(n)` if needed, and test inside the loop; or pass an element by index (`&mut {0}[i]`)",
            lw.shown(id)
        ),
    );
}

/// `x.add_(..); .. v ..` in one statement, `v` a view of `x` made before
/// it: views are regenerated between statements, so `v` would be stale.
/// (funcz-ui/tests/ui/stale_read_same_statement.rs)
pub(crate) fn stale_read_same_statement(
    lw: &Lowerer<'_>,
    at: &dyn ToTokens,
    id: usize,
    root: usize,
) {
    refuse(
        lw.cx,
        "stale_read_same_statement",
        at,
        format!(
            "`{}` is read after `{}` is mutated in the same statement; #[functionalize] regenerates views \
             between statements",
            lw.shown(id),
            lw.shown(root)
        ),
        "split the statement in two: do the in-place op first, then read the view",
    );
}

/// `.backward()` (an autograd op) in the body: functionalization does not
/// compose with autograd called from inside. (funcz-ui/tests/ui/backward.rs)
pub(crate) fn autograd_call(lw: &Lowerer<'_>, method: &Ident) {
    refuse(
        lw.cx,
        "autograd_call",
        method,
        format!(
            "`.{method}()` inside a #[functionalize] function: functionalize() doesn't work with functions that \
             directly use autograd"
        ),
        "compute gradients outside the functionalized function, or functionalize the gradient computation as a \
         whole",
    );
}

/// `let c = || v.sum(); x.add_(1.0); c()`: a closure kept in a variable
/// reads `v`, a view of `x`, which is mutated after the closure is made.
/// (funcz-ui/tests/ui/closure_reads_mutated_alias.rs)
pub(crate) fn closure_reads_mutated(lw: &Lowerer<'_>, at: &Expr, id: usize, root: usize) {
    let (v, x) = (lw.shown(id), lw.shown(root));
    refuse(
        lw.cx,
        "closure_reads_mutated",
        at,
        format!(
            "a closure bound in a `let` reads `{v}`, which this function mutates later (through `{x}`): \
             #[functionalize] cannot see when the closure runs, so it could read a stale value"
        ),
        format!(
            "pass the tensor to the closure as an argument (`|t: &Tensor| ...` called as `c(&{v})`), or compute the \
             value where the closure would run"
        ),
    );
}

/// `let r = &x; let x = ..; r ..`: `r` is read as `&x`, and `x` now names
/// another tensor. (funcz-ui/tests/ui/reference_to_shadowed.rs)
pub(crate) fn reference_to_shadowed(lw: &Lowerer<'_>, at: &Expr, name: &str, target: &Ident) {
    refuse(
        lw.cx,
        "reference_to_shadowed",
        at,
        format!(
            "`{name}` is a reference to `{target}`, which a later `let` shadows: #[functionalize] reads `{name}` as \
             `&{target}` and cannot name the shadowed tensor"
        ),
        format!("rename the later `{target}`"),
    );
}

/// `let v = if c { a.view(..) } else { b.view(..) }; v.add_(..)`: which
/// tensor the mutation must reach is only known at run time.
/// (funcz-ui/tests/ui/ambiguous_root.rs)
pub(crate) fn ambiguous_view(lw: &Lowerer<'_>, at: &Expr, id: usize) {
    refuse(
        lw.cx,
        "ambiguous_view",
        at,
        format!(
            "cannot tell statically which tensor `{}` is a view of, so its mutation cannot be written back",
            lw.shown(id)
        ),
        "make the view in one place after the branch (e.g. compute the index in the `if` and call `.narrow(..)` \
         once), or `.clone()` it in each branch",
    );
}

/// `let y = xs[0].narrow(..); y.add_(..)`: a mutation through a view of a
/// collection element, which is updated by replacing it.
/// (funcz-ui/tests/ui/regress_elem_view_mutated.rs)
pub(crate) fn mutation_through_elem_view(lw: &Lowerer<'_>, id: usize, coll: usize) {
    let name = lw.scopes.ident(id);
    refuse(
        lw.cx,
        "mutation_through_elem_view",
        name,
        format!(
            "`{name}` is a view of an element of `{}`: #[functionalize] cannot write a mutation through it back \
             into the element",
            lw.shown(coll)
        ),
        "mutate through the element itself (`xs[i].narrow(..).add_(..)`), or `.clone()` the view if it should be \
         independent",
    );
}

/// `let v = d[0].narrow(..); d[0].add_(..); v ..`: the element is replaced
/// by its mutation while a view of it is in scope.
/// (funcz-ui/tests/ui/regress_elem_view_stale.rs)
pub(crate) fn elem_view_goes_stale(lw: &Lowerer<'_>, alias: usize, coll: usize) {
    let name = lw.scopes.ident(alias);
    refuse(
        lw.cx,
        "elem_view_goes_stale",
        name,
        format!(
            "`{}` is mutated while `{name}`, a view of one of its elements, is in scope: #[functionalize] replaces \
             mutated elements, so `{name}` would go stale",
            lw.shown(coll)
        ),
        "make the view after the mutation (or in a block that ends before it), index the element where it is \
         used, or `.clone()` the view if the old value is wanted",
    );
}

/// `xs.iter().for_each(|_| x.add_(..))`: an in-place op in a closure on a
/// tensor from outside it. (funcz-ui/tests/ui/closure_capture.rs)
pub(crate) fn inplace_in_closure(lw: &Lowerer<'_>, m: &syn::ExprMethodCall) {
    refuse(
        lw.cx,
        "inplace_in_closure",
        m,
        format!(
            "in-place `{}` inside a closure on a tensor from outside the closure: #[functionalize] cannot see when \
             the closure runs, so it cannot write the mutation back",
            m.method
        ),
        "write the loop as a `for` loop in the function body, or use the out-of-place op and return the new value \
         from the closure",
    );
}

/// `c.add_(..)` where `c` is neither a tensor parameter nor a tensor made
/// in the function (`if let Some(c) = cache`).
/// (funcz-ui/tests/ui/untracked_binding.rs)
/// An element of a collection held in a field (`opt.m[i].mul_(..)`, an
/// optimizer's state) gets a help of its own.
/// (funcz-ui/tests/ui/untracked_field_element.rs)
/// So does a field of a struct made in the function (`let s = Pair { .. };
/// s.a.mul_(..)`). (funcz-ui/tests/ui/untracked_local_struct_field.rs)
pub(crate) fn inplace_on_untracked(lw: &Lowerer<'_>, receiver: &Expr, op: &str) {
    let mut bare = receiver;
    while let Expr::Paren(p) = bare {
        bare = &p.expr;
    }
    let help = match bare {
        Expr::Index(ix) if matches!(&*ix.expr, Expr::Field(_)) => {
            let coll = ix.expr.to_token_stream().to_string().replace(' ', "");
            format!(
                "give the collection to the function as a slice parameter: `fn step(m: &mut [Tensor], ..)`, \
                 called as `step(&mut {coll}, ..)`, where `m[i].{op}(..)` is an input's element that \
                 #[functionalize] writes back"
            )
        }
        Expr::Field(f) if matches!(&*f.base, Expr::Path(_)) => {
            let recv = bare.to_token_stream().to_string().replace(' ', "");
            let functional = op.strip_suffix('_').unwrap_or(op);
            format!(
                "#[functionalize] tracks the fields of struct parameters, not of structs made in the function: \
                 assign the out-of-place op \
                 instead, `{recv} = {recv}.{functional}(..);`, or make the tensor a local of its own \
                 (`let {}: Tensor = ...;`), mutate it, and build the struct after",
                match &f.member {
                    syn::Member::Named(n) => n.to_string(),
                    syn::Member::Unnamed(_) => "t".to_string(),
                }
            )
        }
        _ => "pass the tensor as a parameter (`&Tensor`, `&mut Tensor`, `&mut [Tensor]`), or bind it with a \
              type, `let x: Tensor = ...;` (checked at run time: it must not share its storage)"
            .to_string(),
    };
    refuse(
        lw.cx,
        "inplace_on_untracked",
        receiver,
        format!(
            "in-place `{op}` on `{}`, a value #[functionalize] cannot track (it is not a tensor parameter or a \
             tensor made in this function)",
            receiver.to_token_stream()
        ),
        help,
    );
}

/// `let v = b.narrow(..); b.resize_(..)`: the views address the storage as
/// laid out before the resize. (funcz-ui/tests/ui/regress_resize_with_views.rs)
pub(crate) fn resize_with_views(lw: &Lowerer<'_>, m: &syn::ExprMethodCall, id: usize) {
    refuse(
        lw.cx,
        "resize_with_views",
        m,
        format!(
            "`resize_` on `{}`, which has views: #[functionalize] cannot keep them in sync with the resized \
             tensor",
            lw.shown(id)
        ),
        "resize before making views of it, or resize a `.clone()`",
    );
}

/// `x.narrow(..).resize_(..)`: resizing a receiver that is not a tracked
/// root or view variable. (funcz-ui/tests/ui/resize_of_view.rs)
pub(crate) fn resize_of_view(lw: &Lowerer<'_>, m: &syn::ExprMethodCall) {
    refuse(
        lw.cx,
        "resize_of_view",
        m,
        "`resize_` on a view: functionalization cannot grow a tensor that shares its storage (\"Attempted to \
         resize a view tensor to a larger size\")",
        "resize a fresh tensor in a variable of its own (`let t = v.clone(); t.resize_(..);`), or build the new \
         tensor with `Tensor::zeros` and copy into a `narrow` of it",
    );
}

/// `let v = vec![x.narrow(..)]; x.add_(..)` (or `list.push(x.t())`): the
/// stored view would not follow the later mutation.
/// (funcz-ui/tests/ui/view_stored_in_vec.rs)
pub(crate) fn view_stored(lw: &Lowerer<'_>, at: &Expr, root: usize) {
    let x = lw.shown(root);
    refuse(
        lw.cx,
        "view_stored",
        at,
        format!(
            "a view of `{x}` is stored in a collection or struct, but this function mutates `{x}` later: the stored \
             view would not follow the mutation"
        ),
        "store a copy (`.clone()`), or build the collection after the last mutation, or keep the view in its own \
         variable (`let v = ...;`), which #[functionalize] keeps up to date",
    );
}

/// `println!("{:?}", x.mul_(2.0))`: an in-place op in a macro's
/// arguments. (funcz-ui/tests/ui/inplace_in_macro.rs)
pub(crate) fn inplace_in_macro(lw: &Lowerer<'_>, ident: &Ident) {
    refuse(
        lw.cx,
        "inplace_in_macro",
        ident,
        format!(
            "in-place `{ident}` inside a macro invocation: #[functionalize] cannot see into macro arguments"
        ),
        "do the in-place op in its own statement before the macro call",
    );
}

/// `macro_rules! bump { () => { b.add_(1.0) }; }` defined in the body:
/// its tokens are expanded where it is invoked, as written.
/// (funcz-ui/tests/ui/tensor_in_local_macro.rs)
pub(crate) fn tensor_in_local_macro(lw: &Lowerer<'_>, ident: &Ident) {
    refuse(
        lw.cx,
        "tensor_in_local_macro",
        ident,
        format!(
            "`{ident}` is named in a `macro_rules!` defined in this function: the macro's body is expanded where it \
             is invoked, as written, so #[functionalize] cannot see its in-place ops nor give it `{ident}`'s \
             current value"
        ),
        "move the tensor code out of the macro: write it in the function, or in a helper function given the \
         tensor (`fn bump(t: &Tensor) { t.add_(1.0); }`, called as `bump(&b)`)",
    );
}

/// `my_macro!(x => ..)` where `x` is mutated in the function: arguments
/// that are not expressions are left as written, so `x` there would be
/// read stale. (funcz-ui/tests/ui/read_in_opaque_macro.rs)
pub(crate) fn read_in_opaque_macro(lw: &Lowerer<'_>, ident: &Ident) {
    refuse(
        lw.cx,
        "read_in_opaque_macro",
        ident,
        format!(
            "`{ident}` is read inside a macro whose arguments are not expressions: #[functionalize] cannot see into \
             them, and `{ident}` is mutated in this function"
        ),
        format!(
            "bind what the macro needs first: `let v = {ident}.clone();` (its current value) and pass `v` to the macro"
        ),
    );
}

/// `bump!(x => 1.0)`, a macro this crate does not know, whose arguments
/// are not expressions, naming a tensor that has views (or is one): the
/// macro may write it, and the write would not reach the views.
/// (funcz-ui/tests/ui/tensor_in_opaque_macro.rs)
pub(crate) fn tensor_in_opaque_macro(lw: &Lowerer<'_>, ident: &Ident, mac: &syn::Path) {
    let mac = mac.to_token_stream().to_string().replace(' ', "");
    refuse(
        lw.cx,
        "tensor_in_opaque_macro",
        ident,
        format!(
            "`{ident}` is named inside `{mac}!`, whose arguments are not expressions: #[functionalize] cannot see \
             whether the macro writes `{ident}`, and a write there would not reach the views of it this function \
             makes"
        ),
        format!(
            "give the macro `{ident}` as a plain expression argument (`{mac}!({ident}, ..)`), which #[functionalize] \
             watches like a call's argument, or do the work in a helper function given `&{ident}`"
        ),
    );
}

/// `let e = &mut c;` with `c` a tensor of the function: writes through
/// `e`, and helpers given `e`, would not be seen as writes of `c`.
/// (funcz-ui/tests/ui/mut_ref_binding.rs)
pub(crate) fn mut_ref_binding(lw: &Lowerer<'_>, ident: &Ident, target: &Expr) {
    let to = target.to_token_stream().to_string();
    refuse(
        lw.cx,
        "mut_ref_binding",
        ident,
        format!(
            "`{ident}` is a `&mut` borrow of the tensor `{to}`: #[functionalize] follows `{to}` by its own name \
             only, so a write through `{ident}` would not reach `{to}`'s views"
        ),
        format!(
            "use `{to}` itself: `{to}.add_(..)`, or `helper(&mut {to})` where the borrow is passed on"
        ),
    );
}

/// `for x in xs.iter_mut() { *x = value; }` with `xs` a collection input:
/// the replacement's position is not known, so the caller's slot could not
/// be handed the new tensor. (funcz-ui/tests/ui/elem_ref_replaced.rs)
pub(crate) fn elem_ref_replaced(lw: &Lowerer<'_>, at: &Expr, coll: usize) {
    let c = lw.shown(coll);
    refuse(
        lw.cx,
        "elem_ref_replaced",
        at,
        format!(
            "`{}` replaces an element of `{c}` through a loop variable: #[functionalize] hands a replaced \
             element to the caller's slot by its index, which the loop does not name",
            at.to_token_stream().to_string().replace(' ', "")
        ),
        format!("index the element: `for i in 0..{c}.len() {{ {c}[i] = ..; }}`"),
    );
}

/// `my_log!("{x}")`, a macro this crate does not know, whose format string
/// captures a tensor the function tracks: the capture would read `x` as
/// written (an input's value at entry), and a named argument giving it the
/// current value may not fit the macro's patterns.
/// (funcz-ui/tests/ui/capture_in_opaque_macro.rs)
pub(crate) fn capture_in_opaque_macro(lw: &Lowerer<'_>, ident: &Ident) {
    refuse(
        lw.cx,
        "capture_in_opaque_macro",
        ident,
        format!(
            "`{ident}` is captured by a format string inside a macro #[functionalize] does not know: the capture \
             would read `{ident}` as it was when the function was called, not its current value"
        ),
        format!(
            "bind the current value first and capture that: `let {ident}_now = {ident}.clone();` then \
             `\"{{{ident}_now}}\"`"
        ),
    );
}

/// The refusals reported, by name, for the coverage test.
#[cfg(test)]
pub(crate) mod fired {
    use std::cell::RefCell;

    thread_local! {
        static FIRED: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn record(name: &'static str) {
        FIRED.with(|f| f.borrow_mut().push(name));
    }

    /// The names of the refusals reported on this thread since the last call.
    pub(crate) fn take() -> Vec<&'static str> {
        FIRED.with(|f| std::mem::take(&mut *f.borrow_mut()))
    }
}
