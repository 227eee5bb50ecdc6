//! Replaying a chain of views from a root, and writing a mutated alias back
//! up its chain (PyTorch's `apply_updates`).

use crate::element::Element;
use crate::tensor::Tensor;

use super::Mode;
use super::meta::ViewMeta;
use crate::view::InPlace;

/// The value of the alias reached from `root` through `chain` (each view
/// replayed, or its `*_copy`, by mode). Recorded in the trace.
pub fn replay<T: Element>(root: &Tensor<T>, chain: &[ViewMeta], mode: Mode) -> Tensor<T> {
    let mut t = root.handle();
    for m in chain {
        t = m.forward(&t, mode);
    }
    t
}

/// The new value of `root` after the alias at the end of `chain` took the
/// value `new`: recompute the intermediate bases that a scatter needs, then
/// apply each view's inverse from the bottom up. Intermediates whose data no
/// later inverse reads are computed as untraced views (only their shape is
/// used), so the trace shows no dead ops.
pub fn writeback<T: Element>(
    root: &Tensor<T>,
    chain: &[ViewMeta],
    new: Tensor<T>,
    mode: Mode,
) -> Tensor<T> {
    match chain.first() {
        None => new,
        Some(first) => first.reverse(root, writeback_below(root, chain, new, mode), mode),
    }
}

/// The new value of `chain[0](root)` after the alias at the end of `chain`
/// (at least one view) took the value `new`: the intermediate bases below
/// `root` are recomputed and the inverses of `chain[1..]` applied from the
/// bottom up. The bases are dropped before returning.
fn writeback_below<T: Element>(
    root: &Tensor<T>,
    chain: &[ViewMeta],
    new: Tensor<T>,
    mode: Mode,
) -> Tensor<T> {
    let n = chain.len();
    // needs_data[i]: the data of chain[i]'s base is read by some inverse at
    // or below i.
    let mut needs_data = vec![false; n];
    let mut acc = false;
    for i in (0..n).rev() {
        acc = acc || chain[i].inverse_needs_data();
        needs_data[i] = acc;
    }
    // bases[i - 1] is chain[i]'s base.
    let mut bases: Vec<Tensor<T>> = Vec::with_capacity(n.saturating_sub(1));
    for i in 0..n.saturating_sub(1) {
        let parent = if i == 0 { root } else { &bases[i - 1] };
        let next = if needs_data[i + 1] {
            chain[i].forward(parent, mode)
        } else {
            chain[i].forward_view(parent)
        };
        bases.push(next);
    }
    let mut t = new;
    for i in (1..n).rev() {
        t = chain[i].reverse(&bases[i - 1], t, mode);
    }
    t
}

/// [`writeback`] into `root` itself: `root` becomes the new value of the
/// root after the alias at the end of `chain` took the value `new`.
///
/// When nobody else can observe `root`'s buffer (it is the storage's only
/// handle, or its only other handle is `new`, already written in place as
/// exactly the window), the scatter into the root writes only the window of
/// that buffer: O(size of the view), not O(size of the root). The trace is
/// the same as [`writeback`]'s: the scatter is recorded as a functional op
/// with a fresh output. Intermediate bases (chains of two or more views)
/// are dropped before that last scatter, so that they do not count as
/// observers. `how` counts a handle that cannot observe the root's buffer
/// while the function runs (see `Tracked::input`) and says whether `new`,
/// when it shares the root's buffer, is known to be its window.
pub(crate) fn writeback_into<T: Element>(
    root: &mut Tensor<T>,
    chain: &[ViewMeta],
    new: &Tensor<T>,
    how: InPlace,
    mode: Mode,
) {
    if chain.is_empty() {
        *root = new.handle();
        return;
    }
    let t = if chain.len() == 1 {
        if chain[0].reverse_in_place(root, new, how) {
            return;
        }
        new.handle()
    } else {
        let t = writeback_below(root, chain, new.handle(), mode);
        let how = InPlace {
            known_window: false,
            ..how
        };
        if chain[0].reverse_in_place(root, &t, how) {
            return;
        }
        t
    };
    *root = chain[0].reverse(root, t, mode);
}
