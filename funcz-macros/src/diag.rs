//! Refusals: one function per kind of program the macro cannot keep
//! equivalent, each with the `help:` that leads to code that works. Each is
//! exercised by a ui test under `funcz-ui/tests/ui/`.

use quote::ToTokens;

use crate::lower::Lowerer;

/// `x = y.narrow(..)` where `x` is a tensor the function mutates: the
/// original then mutates `y` through `x`, which a root cannot follow.
/// (funcz-ui/tests/ui/assign_view_to_root.rs)
pub(crate) fn assign_alias_to_root(lw: &Lowerer<'_>, at: &impl ToTokens, id: usize, root: usize) {
    let (x, y) = (lw.scopes.ident(id), lw.scopes.ident(root));
    lw.error(
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
    let (a, x) = (lw.scopes.ident(id), lw.scopes.ident(root));
    lw.error(
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
