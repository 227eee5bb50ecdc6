//! PyTorch's memory-overlap checks between the written-to tensor of an
//! in-place op and its inputs (ATen's `get_overlap_status`,
//! `assert_no_partial_overlap` and `assert_no_overlap`).
//!
//! Two tensors on one storage are classified as PyTorch classifies them:
//!
//! - **full**: the same tensor (same trace identity, a handle of it), or
//!   both dense over exactly the same memory range with equal strides
//!   (`x.add_(&x)`, `x.add_(&x.view(..))` of the same layout);
//! - **partial**: both non-overlapping and dense, their memory ranges
//!   intersect, and they are not a full overlap (`x.add_(&x.t())`,
//!   `x.narrow(0, 0, 4).copy_(&x.narrow(0, 1, 4))`, `x.add_(&x.select(0, 0))`);
//! - **none**: other storages, an empty tensor, or disjoint ranges (two
//!   disjoint `narrow`s of one buffer);
//! - **too hard**: one of them is not dense (an `expand`ed or strided
//!   view); PyTorch does not decide, and neither check fires. funcz then
//!   reads the inputs completely before the first write (PyTorch's result
//!   can depend on its loop order there).
//!
//! The elementwise in-place ops (PyTorch's `TensorIterator`) and
//! `masked_fill_` (its mask) refuse a partial overlap; the indexed
//! in-place ops (`index_copy_`, `index_add_`, `index_fill_`, `index_put_`,
//! `scatter_`, `scatter_add_`) refuse any overlap of `self` with their
//! source or index, full or partial. `masked_scatter_` checks nothing, as
//! in PyTorch.
//!
//! Both checks cost one pointer compare when the storages differ (and
//! one thread-local read, see below).
//!
//! **A target generated code copied.** Functionalized code runs an
//! in-place op on a buffer only the target holds: where another tensor
//! shares the target's buffer it first gives the target a private copy
//! (`rt::own*`), and the op then writes that. An argument that partially
//! overlaps the target in the original program (`let y = b.t();
//! b.add_(&y);`) shares the buffer in the functionalized program too (the
//! sharing is why the copy was made), but no longer the copy's. So the copy
//! remembers what it replaced ([`remember_copied_target`]: the target's
//! identity, its new buffer, its old buffer and layout), and both checks,
//! given that target, also check the argument against the old buffer and
//! layout: the op panics as the original's does. The record is the
//! thread's one, replaced by the next copy and dropped when the op is
//! committed (the target then gets a fresh identity).
//!
//! **Copies in place of views.** With `remove = "mutations_and_views"` a
//! view is a `*_copy` in a buffer of its own. Such a copy's storage
//! remembers where the view's elements are in the original program (the
//! view's base buffer and its layout there, [`set_place`], by
//! `ViewMeta::forward` and at commits), and the checks compare the copy by
//! that place ([`place`]). A root value laid out otherwise than the
//! original's, which cannot be laid out as it (a strided input), records
//! the original's layout the same way. Records hold weak handles only:
//! they never keep elements alive, nor count as a handle that could
//! observe a buffer (donation ignores them).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};

use crate::element::Scalar;
use crate::layout::Layout;
use crate::storage::{Origin, Storage};
use crate::tensor::{Tensor, TensorId};

/// How the memory of two tensors overlaps (ATen's `MemOverlapStatus`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// Other storages, an empty tensor or disjoint ranges.
    No,
    /// The same elements with the same layout.
    Full,
    /// Some elements shared, with different layouts.
    Partial,
    /// One of them is not dense: undecided (neither check fires).
    TooHard,
}

/// PyTorch's `is_non_overlapping_and_dense`: the dims of size > 1, sorted
/// by stride, have strides 1, n0, n0*n1, ... (any permutation of a
/// contiguous tensor; size-1 dims may have any stride).
pub(crate) fn is_non_overlapping_and_dense(l: &Layout) -> bool {
    if l.ndim() == 1 {
        return l.shape[0] < 2 || l.strides[0] == 1;
    }
    // The dims of size > 1 as (stride, size), on the stack (no allocation:
    // this runs on every in-place op whose operand shares the storage).
    let mut dims = [(0usize, 0usize); crate::dims::MAX_DIMS];
    let mut n = 0;
    for (&size, &stride) in l.shape.iter().zip(l.strides.iter()) {
        if size >= 2 {
            dims[n] = (stride, size);
            n += 1;
        }
    }
    // By stride (two dims of equal stride fail either way round).
    dims[..n].sort_unstable_by_key(|&(s, _)| s);
    let mut want = 1usize;
    for &(s, size) in &dims[..n] {
        if s != want {
            return false;
        }
        want = match want.checked_mul(size) {
            Some(w) => w,
            None => return false,
        };
    }
    true
}

/// The overlap of `a` and `b` (ATen's `get_overlap_status`; the storages
/// are compared first, so unrelated tensors cost one pointer compare and
/// are classified [`Overlap::No`] even when not dense).
pub(crate) fn overlap_status<A: Scalar, B: Scalar>(a: &Tensor<A>, b: &Tensor<B>) -> Overlap {
    if a.storage_key() != b.storage_key() {
        return Overlap::No;
    }
    // One storage, hence one dtype.
    if a.id() == b.id() {
        return Overlap::Full;
    }
    layouts_overlap(a.layout(), b.layout())
}

/// [`overlap_status`] of two distinct handles of one storage, by their
/// layouts.
pub(crate) fn layouts_overlap(la: &Layout, lb: &Layout) -> Overlap {
    if la.numel() == 0 || lb.numel() == 0 {
        return Overlap::No;
    }
    if !is_non_overlapping_and_dense(la) || !is_non_overlapping_and_dense(lb) {
        return Overlap::TooHard;
    }
    // Dense: the memory range is exactly [offset, offset + numel).
    let (a0, a1) = (la.offset, la.offset + la.numel());
    let (b0, b1) = (lb.offset, lb.offset + lb.numel());
    if a0 == b0 && a1 == b1 {
        if la.strides == lb.strides {
            Overlap::Full
        } else {
            Overlap::Partial
        }
    } else if a0 < b1 && b0 < a1 {
        Overlap::Partial
    } else {
        Overlap::No
    }
}

#[track_caller]
pub(crate) fn refuse(op: &str, arg: &str, dst: &Layout, src: &Layout) -> ! {
    panic!(
        "funcz: {op}: unsupported operation: some elements of the input tensor and the \
         written-to tensor refer to a single memory location. Please clone() the tensor before \
         performing the operation. (written-to: shape {:?}, strides {:?}, offset {}; argument \
         '{arg}': shape {:?}, strides {:?}, offset {})",
        &dst.shape[..],
        &dst.strides[..],
        dst.offset,
        &src.shape[..],
        &src.strides[..],
        src.offset
    );
}

/// [`refuse`] of `dst` and `src` on one buffer, naming their layouts in
/// the original program ([`place`]: a copy made in place of a view names
/// the view's).
#[cold]
#[inline(never)]
#[track_caller]
fn refuse_places<A: Scalar, B: Scalar>(op: &str, arg: &str, dst: &Tensor<A>, src: &Tensor<B>) -> ! {
    refuse(op, arg, place(dst).1, place(src).1)
}

/// Panics (at the caller's line) if the input `src` (argument `arg`)
/// partially overlaps the written-to `dst` (ATen's
/// `assert_no_partial_overlap`): the check of PyTorch's elementwise
/// in-place ops. A full overlap (`x.add_(&x)`) is allowed.
#[track_caller]
#[inline]
pub(crate) fn assert_no_partial_overlap<A: Scalar, B: Scalar>(
    op: &str,
    arg: &str,
    dst: &Tensor<A>,
    src: &Tensor<B>,
) {
    if dst.storage_key() == src.storage_key() {
        if overlap_status(dst, src) == Overlap::Partial {
            refuse_places(op, arg, dst, src);
        }
    } else if elsewhere_in_original(dst, src) {
        check_original_places(op, arg, dst, src, false);
    }
}

/// Panics (at the caller's line) if the input `src` (argument `arg`)
/// shares any element with the written-to `dst`, fully or partially
/// (ATen's `assert_no_overlap`): the check of PyTorch's indexed in-place
/// ops for their source and index.
#[track_caller]
#[inline]
pub(crate) fn assert_no_overlap<A: Scalar, B: Scalar>(
    op: &str,
    arg: &str,
    dst: &Tensor<A>,
    src: &Tensor<B>,
) {
    if dst.storage_key() == src.storage_key() {
        if matches!(overlap_status(dst, src), Overlap::Partial | Overlap::Full) {
            refuse_places(op, arg, dst, src);
        }
    } else if elsewhere_in_original(dst, src) {
        check_original_places(op, arg, dst, src, true);
    }
}

/// The target generated code last copied (see the module's documentation).
struct Copied {
    /// The copy's buffer.
    new_key: usize,
    /// Where the target's elements were (its [`original_place`]).
    old_key: usize,
    layout: Layout,
    /// A weak handle of that buffer: its address is not reused while the
    /// record stands (a weak handle does not keep the elements).
    _old: Weak<dyn Any>,
}

thread_local! {
    /// The identity of the target [`COPIED_FROM`] describes; 0 for none
    /// (identities start at 1). Read by every check whose storages differ.
    static COPIED: Cell<TensorId> = const { Cell::new(0) };
    static COPIED_FROM: RefCell<Option<Copied>> = const { RefCell::new(None) };
}

/// Records that generated code replaced the target `old` of an in-place op
/// by the private copy `new` (same identity), for the overlap checks of the
/// op that follows, if `old`'s place is known to be the original's: `orig`,
/// the target's layout in the original program, is where `old` is, up to
/// the strides of dims of size 1 ([`Layout::same_elements`]; the record keeps
/// `orig`). A tensor laid out otherwise than the original's (a strided
/// input after a functional op) has views laid out otherwise too: the
/// checks would compare layouts the original does not have, so there is
/// no record.
pub(crate) fn remember_copied_target<T: Scalar>(old: &Tensor<T>, new: &Tensor<T>, orig: &Layout) {
    let known = match old.storage.origin.as_deref() {
        // A copy made in place of a view: its recorded place.
        Some(o) if o.base.is_some() && *old.layout() == o.own => o.layout.same_elements(orig),
        _ => old.layout().same_elements(orig),
    };
    if !known {
        return;
    }
    let (hold, _) = place_of(old);
    let layout = orig.copied();
    let old_key = hold.as_ptr() as *const u8 as usize;
    let rec = Copied {
        new_key: new.storage_key(),
        old_key,
        layout,
        _old: hold,
    };
    COPIED_FROM.with(|c| *c.borrow_mut() = Some(rec));
    COPIED.with(|c| c.set(new.id()));
}

/// Drops the record of [`remember_copied_target`] if it is `id`'s (the op
/// on it was committed).
#[inline]
pub(crate) fn forget_copied_target(id: TensorId) {
    if COPIED.with(Cell::get) == id {
        COPIED.with(|c| c.set(0));
        COPIED_FROM.with(|c| c.borrow_mut().take());
    }
}

/// Records where `t`'s elements are in the original program, if `t` alone
/// holds its buffer: at `layout` of the buffer `base` (`None`: its own
/// buffer, laid out there as `layout`). Functionalized code records it for
/// a `*_copy` made in place of a view (`remove = "mutations_and_views"`),
/// and for a root whose value is laid out otherwise than the original's.
pub(crate) fn set_place<T: Scalar>(
    t: &mut Tensor<T>,
    base: Option<Weak<Storage<T>>>,
    layout: Layout,
) {
    let own = t.layout().copied();
    if let Some(s) = Arc::get_mut(&mut t.storage) {
        s.origin = Some(Box::new(Origin { base, layout, own }));
    }
}

/// Where `t`'s elements are in the original program ([`place`]), with a
/// weak handle of that buffer.
pub(crate) fn place_of<T: Scalar>(t: &Tensor<T>) -> (Weak<Storage<T>>, Layout) {
    match original_place(t) {
        Some((Some(base), layout)) => (base.clone(), layout.copied()),
        Some((None, layout)) => (Arc::downgrade(&t.storage), layout.copied()),
        None => (Arc::downgrade(&t.storage), t.layout().copied()),
    }
}

/// Where `t`'s elements are in the original program, if recorded
/// ([`set_place`]) for `t` as it is laid out now: that buffer (`None`:
/// `t`'s own) and layout.
fn original_place<T: Scalar>(t: &Tensor<T>) -> Option<(Option<&Weak<Storage<T>>>, &Layout)> {
    let o = t.storage.origin.as_deref()?;
    (*t.layout() == o.own).then_some((o.base.as_ref(), &o.layout))
}

/// The buffer key and layout of `t` in the original program: its
/// [`original_place`], or its own.
pub(crate) fn place<T: Scalar>(t: &Tensor<T>) -> (usize, &Layout) {
    match original_place(t) {
        Some((Some(b), l)) => (b.as_ptr() as *const u8 as usize, l),
        Some((None, l)) => (t.storage_key(), l),
        None => (t.storage_key(), t.layout()),
    }
}

/// Whether `dst` and `src`, on distinct buffers, may be on one in the
/// original program: one of them is a copy made in place of a view, or
/// `dst` a copy of the target made for the op.
#[inline]
fn elsewhere_in_original<A: Scalar, B: Scalar>(dst: &Tensor<A>, src: &Tensor<B>) -> bool {
    dst.storage.origin.is_some()
        || src.storage.origin.is_some()
        || COPIED.with(Cell::get) == dst.id()
}

/// The checks above for the argument `src` of an op on `dst`, on distinct
/// buffers (`any`: refuse a full overlap too), by where the two are in
/// the original program ([`original_place`], and for a target generated
/// code copied for the op, where it was).
#[cold]
#[inline(never)]
#[track_caller]
fn check_original_places<A: Scalar, B: Scalar>(
    op: &str,
    arg: &str,
    dst: &Tensor<A>,
    src: &Tensor<B>,
    any: bool,
) {
    let (src_key, src_layout) = place(src);
    let refused = |o: Overlap| o == Overlap::Partial || (any && o == Overlap::Full);
    if COPIED.with(Cell::get) == dst.id() {
        // (The layout is copied out of the record only to refuse.)
        let copied = COPIED_FROM.with(|c| {
            c.borrow()
                .as_ref()
                .filter(|r| r.new_key == dst.storage_key())
                .map(|r| {
                    (r.old_key == src_key && refused(layouts_overlap(&r.layout, src_layout)))
                        .then(|| r.layout.copied())
                })
        });
        match copied {
            Some(Some(layout)) => refuse(op, arg, &layout, src_layout),
            Some(None) => return,
            None => {}
        }
    }
    let (dst_key, dst_layout) = place(dst);
    if dst_key == src_key && refused(layouts_overlap(dst_layout, src_layout)) {
        refuse(op, arg, dst_layout, src_layout);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
        Layout::new(shape, strides, offset)
    }

    #[test]
    fn dense_layouts_as_pytorch() {
        assert!(is_non_overlapping_and_dense(&l(&[], &[], 3)));
        assert!(is_non_overlapping_and_dense(&l(&[2, 3], &[3, 1], 0)));
        // Transposed and permuted.
        assert!(is_non_overlapping_and_dense(&l(&[3, 2], &[1, 3], 0)));
        assert!(is_non_overlapping_and_dense(&l(&[2, 3, 4], &[1, 8, 2], 5)));
        // Size-1 dims may have any stride.
        assert!(is_non_overlapping_and_dense(&l(&[2, 1, 3], &[3, 99, 1], 0)));
        assert!(is_non_overlapping_and_dense(&l(&[1], &[7], 0)));
        // Gaps, expansion, overlapping windows.
        assert!(!is_non_overlapping_and_dense(&l(&[4, 2], &[4, 1], 0)));
        assert!(!is_non_overlapping_and_dense(&l(&[2, 3], &[0, 1], 0)));
        assert!(!is_non_overlapping_and_dense(&l(&[2, 2], &[1, 1], 0)));
        assert!(!is_non_overlapping_and_dense(&l(&[3], &[2], 0)));
    }

    #[test]
    fn statuses() {
        let x = Tensor::<f32>::from_vec((0..8).map(|v| v as f32).collect(), &[8]);
        let v =
            |shape: &[usize], strides: &[usize], off: usize| x.with_layout(l(shape, strides, off));
        let other = Tensor::<f32>::zeros(&[8]);
        assert_eq!(overlap_status(&x, &other), Overlap::No);
        assert_eq!(overlap_status(&x, &x.handle()), Overlap::Full);
        assert_eq!(overlap_status(&x, &v(&[8], &[1], 0)), Overlap::Full);
        assert_eq!(
            overlap_status(&v(&[2, 4], &[4, 1], 0), &v(&[2, 4], &[1, 2], 0)),
            Overlap::Partial
        );
        assert_eq!(overlap_status(&x, &v(&[4], &[1], 2)), Overlap::Partial);
        assert_eq!(overlap_status(&x, &v(&[], &[], 7)), Overlap::Partial);
        assert_eq!(
            overlap_status(&v(&[4], &[1], 0), &v(&[4], &[1], 4)),
            Overlap::No
        );
        assert_eq!(overlap_status(&x, &v(&[0], &[1], 0)), Overlap::No);
        assert_eq!(
            overlap_status(&x, &v(&[2, 4], &[0, 1], 0)),
            Overlap::TooHard
        );
        assert_eq!(overlap_status(&x, &v(&[4], &[2], 0)), Overlap::TooHard);
    }
}
