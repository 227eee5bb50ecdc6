//! Owning a value before an in-place op runs on it: the three-statement
//! form generated code gives an in-place op on a tracked tensor.
//!
//! Input (the user's code): `x.add_(&y);` on a tracked root `x`.
//! Output (generated): `rt::own_root(&mut x, &s); x.add_(&y); rt::donated_root("add_", &mut x, &mut s);`
//!
//! `own_*` leaves the value in a buffer nobody else can observe: if the
//! buffer is shared (another handle, a caller's tensor that may observe
//! it, a view of a root another view also sees), the value is replaced by
//! a private contiguous copy of its elements, with the same identity and
//! nothing recorded in a trace. The in-place op then writes that private
//! buffer, which is exactly the functional op computed into a fresh buffer
//! (`x.add(&y)`), and the commit ([`donated_root`](super::donated_root),
//! [`donated`](super::donated), [`commit_donated`](super::commit_donated))
//! records it as the functional op with a fresh identity and, for an
//! alias, writes it back into its root. So each in-place op is one call of
//! the user's own method (the op's `#[track_caller]` location, argument
//! coercions and types are the original's) between two runtime calls, and
//! the generated code holds no second, functional call of it.
//!
//! ```
//! use funcz_runtime::rt::{self, Tracked};
//! use funcz_runtime::Tensor;
//! let caller = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
//! let mut x = caller.alias(); // shares the caller's buffer
//! let mut s = Tracked::root(&x);
//! rt::own_root(&mut x, &s); // not uniquely held: a private copy
//! x.add_(10.0);
//! rt::donated_root("add_", &mut x, &mut s);
//! assert_eq!(x.to_vec(), vec![11.0, 12.0]);
//! assert_eq!(caller.to_vec(), vec![1.0, 2.0]);
//! ```

use crate::element::Element;
use crate::tensor::Tensor;
use crate::view::gather::materialize;

use super::apply::{cast_mut, cast_ref, dispatch_f32, same};
use super::tracked::Tracked;

/// Replaces `t` by a contiguous copy of its elements in a fresh buffer,
/// keeping its identity (a trace sees the same value). The in-place op
/// that follows still checks its arguments against the buffer and layout
/// `t` had (the original's: see [`crate::ops::overlap`]).
/// `orig` is `t`'s layout in the original program, if known.
#[inline(never)]
fn privatize<T: Element>(t: &mut Tensor<T>, orig: Option<&crate::layout::Layout>) {
    let id = t.id;
    let mut copy = materialize(t, &t.layout);
    copy.id = id;
    if let Some(orig) = orig {
        crate::ops::overlap::remember_copied_target(t, &copy, orig);
    }
    *t = copy;
}

dispatch_f32! {
    /// Makes the root `t` (state `state`) safe to update in place:
    /// afterwards [`can_donate_root`](super::can_donate_root) holds, so the
    /// in-place op that follows writes a buffer only `t` (and a caller's
    /// tensor that cannot observe it before the function returns) holds.
    pub fn own_root<T: Element>(t: &mut Tensor<T> => cast_mut, state: &Tracked => same)
        = own_root_any, own_root_f32;
}

fn own_root_any<T: Element>(t: &mut Tensor<T>, state: &Tracked) {
    if !super::can_donate_root(t, state) {
        privatize(t, state.known_original_layout());
    }
}

dispatch_f32! {
    /// [`own_root`] for a value without a state (a root no view is ever
    /// taken of): afterwards [`can_donate`](super::can_donate) holds.
    pub fn own<T: Element>(t: &mut Tensor<T> => cast_mut) = own_any, own_f32;
}

fn own_any<T: Element>(t: &mut Tensor<T>) {
    if !super::can_donate(t) {
        privatize(t, None);
    }
}

dispatch_f32! {
    /// Makes the alias `value` (state `state`) of `root` (state `rstate`)
    /// safe to update in place: if
    /// [`can_donate_alias`](super::can_donate_alias) does not hold, `value`
    /// becomes a private copy of its elements, which the in-place op then
    /// updates and [`commit_donated`](super::commit_donated) writes back into
    /// the root through the alias's chain, as [`commit`](super::commit)
    /// writes a functional result.
    pub fn own_alias<T: Element>(
        root: &Tensor<T> => cast_ref,
        rstate: &Tracked => same,
        value: &mut Tensor<T> => cast_mut,
        state: &Tracked => same,
    ) = own_alias_any, own_alias_f32;
}

fn own_alias_any<T: Element>(
    root: &Tensor<T>,
    rstate: &Tracked,
    value: &mut Tensor<T>,
    state: &Tracked,
) {
    if !super::can_donate_alias(root, rstate, value, state) {
        privatize(value, state.known_original_layout());
    }
}

/// Panics if the alias `value` (state `state`) follows its root `root`
/// (state `rstate`) but no longer shows it: the arguments of the in-place
/// op `op` on it, evaluated after it was made current, changed the root (a
/// helper given both, `v.add_(f(&x, &v))`), and the op would run on the
/// alias's value from before. (A view in [`Mode::Views`](super::Mode) of
/// the root's buffer still shows it: a helper writes that buffer.)
#[track_caller]
pub fn check_current<T: Element>(
    op: &str,
    root: &Tensor<T>,
    rstate: &Tracked,
    value: &Tensor<T>,
    state: &Tracked,
    mode: super::Mode,
) {
    let shows_root = mode == super::Mode::Views && value.same_storage(root);
    if state.follows(rstate) && !state.is_current(rstate) && !shows_root {
        panic!(
            "funcz: {op}: an argument of this in-place op changed the tensor the op writes (through a call \
             #[functionalize] cannot see into) after the receiver was evaluated. help: compute the argument \
             first, `let a = ...;`, then call the op with `a`"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::{Mode, ViewMeta, commit, commit_donated, view};
    use crate::trace::Tracer;

    fn iota(n: usize) -> Tensor<f32> {
        Tensor::from_vec((0..n).map(|i| i as f32).collect(), &[n])
    }

    #[test]
    fn a_shared_root_is_copied_with_its_identity_and_no_trace_node() {
        let a = iota(4).view([2, 2]).t();
        let (_, g) = Tracer::new("f").input("a", &a).run(|| {
            let mut x = a.alias();
            let s = Tracked::root(&x);
            let id = x.id;
            own_root(&mut x, &s);
            assert_eq!(x.id, id);
            assert!(!x.same_storage(&a));
            assert!(x.is_contiguous());
            assert_eq!(x.to_vec(), a.to_vec());
            // Now uniquely held: a second call keeps the buffer.
            let p = std::sync::Arc::as_ptr(&x.storage);
            own_root(&mut x, &s);
            assert_eq!(std::sync::Arc::as_ptr(&x.storage), p);
        });
        assert_eq!(
            g.ops(),
            vec!["alias"],
            "only the test's own alias is recorded"
        );
    }

    #[test]
    fn element_types_other_than_f32_take_the_generic_path() {
        let a = Tensor::<i64>::from_vec(vec![1, 2, 3], &[3]);
        let mut x = a.alias();
        own(&mut x);
        x.add_(1);
        assert_eq!(a.to_vec(), vec![1, 2, 3]);
        assert_eq!(x.to_vec(), vec![2, 3, 4]);
        let mut e = a.alias();
        super::super::own_element(&mut e, Some(&a), "add_", "xs");
        assert!(e.same_storage(&a), "the caller's own element is donatable");
    }

    #[test]
    fn owned_alias_and_functional_commit_agree_on_every_view_kind() {
        let metas = [
            ViewMeta::narrow(0, 1, 2),
            ViewMeta::slice(1, 0, 4, 2),
            ViewMeta::select(1, 3),
            ViewMeta::diagonal(1, 0, 1),
            ViewMeta::t(),
            ViewMeta::unfold(1, 2, 2),
        ];
        for meta in metas {
            for mode in [Mode::Views, Mode::Copies] {
                for shared in [false, true] {
                    let run = |owned: bool| {
                        let mut root = iota(12).view([3, 4]).add(0.0);
                        let keep = shared.then(|| root.alias());
                        let mut rs = Tracked::root(&root);
                        let (mut v, mut vs) = view(&root, &rs, meta.clone(), mode);
                        if owned {
                            own_alias(&root, &rs, &mut v, &vs);
                            v.mul_(-2.0);
                            commit_donated("mul_", &mut root, &mut rs, &mut v, &mut vs, mode);
                        } else {
                            let new = v.mul(-2.0);
                            commit("mul_", &mut root, &mut rs, &mut v, &mut vs, new, mode);
                        }
                        if let Some(k) = keep {
                            assert_eq!(k.to_vec(), iota(12).to_vec(), "another handle saw it");
                        }
                        (root.to_vec(), v.to_vec())
                    };
                    assert_eq!(run(true), run(false), "{meta:?} {mode:?} shared={shared}");
                }
            }
        }
    }
}
