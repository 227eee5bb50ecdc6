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
//! Both checks cost one pointer compare when the storages differ.

use crate::element::Scalar;
use crate::layout::Layout;
use crate::tensor::Tensor;

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
    if dst.storage_key() == src.storage_key() && overlap_status(dst, src) == Overlap::Partial {
        refuse(op, arg, dst.layout(), src.layout());
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
    if dst.storage_key() == src.storage_key()
        && matches!(overlap_status(dst, src), Overlap::Partial | Overlap::Full)
    {
        refuse(op, arg, dst.layout(), src.layout());
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
