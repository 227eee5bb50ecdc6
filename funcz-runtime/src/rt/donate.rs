//! Buffer donation: functional updates that reuse the old value's buffer
//! when nobody can observe it ("ownership is donation", DESIGN.md).
//!
//! A functional update `x = add(x, y)` whose old `x` is dead may write the
//! result into `x`'s buffer if no other handle shares it: generated code
//! asks [`can_donate`] (or [`can_donate_alias`] for a view of a root), runs
//! the in-place kernel (`x.add_(y)`) instead of the functional op, and then
//! calls [`donated_root`](super::donated_root) /
//! [`commit_donated`](super::commit_donated) (or [`donated`] directly),
//! which give `x` a fresh identity and record the node in the trace as the
//! functional op (`add(x, y)`): the program stays observably pure and the
//! trace still shows the functional op; only the buffer is reused.
//!
//! The test is the storage's reference count: a buffer is donated only if
//! the value being updated holds the only handle to it. `Tracked` states and
//! trace recording hold no tensors; an input's body handle shares the
//! caller's storage, so an input's original buffer is never donated, only
//! values made inside the function are.
//!
//! ```
//! use funcz_runtime::{Tensor, rt};
//! let x = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
//! let mut y = x.add(1.0); // a fresh value, held only by `y`
//! assert!(rt::can_donate(&mut y));
//! let old = y.id();
//! y.mul_(10.0); // y = mul(y, 10.0), computed in y's buffer
//! rt::donated("mul", &mut y);
//! assert_ne!(y.id(), old);
//! assert_eq!(y.to_vec(), vec![20.0, 30.0]);
//! let z = y.shallow_clone(); // another handle: no longer donatable
//! assert!(!rt::can_donate(&mut y));
//! # drop(z);
//! ```

use std::sync::Arc;

use crate::element::Element;
use crate::tensor::Tensor;

use super::tracked::Tracked;

/// True if a functional update of `t` may write its result into `t`'s own
/// buffer: `t` holds the only handle to its storage (`&mut` and a count of
/// one make that exact: no other handle exists, and none can appear while
/// the caller holds `t` mutably), and `t` is row-major from offset 0, so
/// that the in-place result has the same shape and strides as the
/// functional one.
#[inline]
pub fn can_donate<T: Element>(t: &mut Tensor<T>) -> bool {
    sole_row_major(t)
}

/// `t` is its storage's only handle and is row-major from offset 0.
#[inline]
fn sole_row_major<T: Element>(t: &Tensor<T>) -> bool {
    Arc::strong_count(&t.storage) == 1
        && Arc::weak_count(&t.storage) == 0
        && t.layout.offset == 0
        && t.layout.is_contiguous()
}

/// True if the alias `value` (state `state`) of `root` may be updated by
/// the in-place kernel instead of the functional op. Either
/// - `value`'s own buffer is donatable (as [`can_donate`]: a `*_copy`, or a
///   value that no longer shares the root's storage), or
/// - `value` is a view, one view away from `root`, of a root buffer that
///   only `root` and `value` hold, is in sync with the root, and neither it
///   nor its layout in the original program overlaps itself: the in-place
///   kernel then writes straight into the root's buffer (what the original
///   program does) and [`commit_donated`](super::commit_donated) finds the
///   window already written, so the write-back records its scatter without
///   copying.
pub fn can_donate_alias<T: Element>(
    root: &Tensor<T>,
    rstate: &Tracked,
    value: &Tensor<T>,
    state: &Tracked,
) -> bool {
    if sole_row_major(value) {
        return true;
    }
    state.chain().len() == 1
        && state.is_current(rstate)
        && value.same_storage(root)
        && Arc::strong_count(&root.storage) == 2
        && Arc::weak_count(&root.storage) == 0
        && root.layout.is_contiguous()
        && root.layout.offset == 0
        && !state.original_overlaps()
        // A view of a non-overlapping root overlaps only through `expand`,
        // `as_strided` or `unfold`.
        && !(state.chain()[0].may_create_overlap() && value.layout.has_internal_overlap())
}

/// Gives `t` a fresh identity after generated code ran an in-place op on
/// its donated buffer ([`can_donate`] or [`can_donate_alias`] said yes):
/// the same buffer now holds a new value. If a trace is recording, the
/// in-place op's node is recorded instead as its functional twin
/// `functional` (`add_(x, y)` becomes `add(x, y)`) producing that value.
pub fn donated<T: Element>(functional: &'static str, t: &mut Tensor<T>) {
    let old = t.id;
    t.id = crate::tensor::fresh_id();
    crate::trace::record_as_functional(old, functional, t.id);
}
