//! Shape, strides and storage offset: where a tensor's elements live in its
//! storage (candle's `Layout`, PyTorch's sizes/strides/storage_offset).

use crate::dims::Dims;

/// The strided layout of a tensor inside its storage.
///
/// ```
/// use funcz_runtime::Layout;
/// let l = Layout::contiguous(&[2, 3]);
/// assert_eq!(&l.strides[..], &[3, 1]);
/// assert!(l.is_contiguous());
/// assert_eq!(l.offsets().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Size of each dimension.
    pub shape: Dims,
    /// Distance in storage elements between neighbours along each dimension.
    pub strides: Dims,
    /// Position of the first element in the storage.
    pub offset: usize,
}

/// Row-major (C-contiguous) strides for `shape`.
#[track_caller]
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides = Dims::from_slice(shape);
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        // Saturating: the ops check a new shape's strides fit (storage::
        // checked_numel) before they get here.
        acc = acc.saturating_mul(shape[i].max(1));
    }
    strides
}

impl Layout {
    /// A row-major layout at offset 0.
    #[track_caller]
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: Dims::from_slice(shape),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// Builds a layout from its parts.
    #[track_caller]
    pub fn new(shape: &[usize], strides: &[usize], offset: usize) -> Self {
        assert_eq!(
            shape.len(),
            strides.len(),
            "funcz: layout has shape {shape:?} but strides {strides:?}"
        );
        Layout {
            shape: Dims::from_slice(shape),
            strides: Dims::from_slice(strides),
            offset,
        }
    }

    /// A copy of this layout, field by field: a whole `Layout` (152
    /// bytes) is copied by a call to `memcpy`, its fields by a few moves
    /// each (on the hot paths that copy a tensor's layout).
    #[inline(always)]
    pub(crate) fn copied(&self) -> Layout {
        Layout {
            shape: self.shape.copied(),
            strides: self.strides.copied(),
            offset: self.offset,
        }
    }

    /// True if `self` and `other`, two layouts of one buffer, reach the same
    /// elements in the same order: the same shape, and (unless empty) the
    /// same offset and the same strides along every dimension of more than
    /// one element (a size-1 dimension's stride addresses nothing, and
    /// functionalized code may lay out a view with another one there).
    pub(crate) fn same_elements(&self, other: &Layout) -> bool {
        // (An empty layout's offset and strides address nothing: tested
        // last, as the common case agrees in those.)
        self.shape == other.shape
            && ((self.offset == other.offset
                && self
                    .shape
                    .iter()
                    .zip(self.strides.iter().zip(other.strides.iter()))
                    .all(|(&n, (x, y))| n <= 1 || x == y))
                || self.numel() == 0)
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    #[inline]
    pub fn numel(&self) -> usize {
        // Saturating, so that an empty shape with huge sizes before its 0
        // ([2^40, 2^40, 0]) counts 0, not an overflow; the ops never make
        // a layout with more than i64::MAX elements.
        self.shape.iter().fold(1usize, |a, &n| a.saturating_mul(n))
    }

    /// True if the elements are laid out row-major without gaps
    /// (dimensions of size 1 may have any stride, as in PyTorch).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for (&n, &s) in self.shape.iter().zip(self.strides.iter()).rev() {
            if n == 1 {
                continue;
            }
            if s != expected {
                return self.numel() == 0;
            }
            expected = expected.saturating_mul(n);
        }
        true
    }

    /// One past the largest storage index this layout touches (0 when empty).
    pub fn storage_end(&self) -> usize {
        if self.numel() == 0 {
            return self.offset;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(self.strides.iter())
                .map(|(&n, &s)| (n - 1) * s)
                .sum::<usize>()
            + 1
    }

    /// [`has_internal_overlap`](Self::has_internal_overlap), after its
    /// first test (contiguous: no overlap) in a small frame of its own:
    /// the state of every input and root of a functionalized function
    /// asks it, where the common case must be a cheap call.
    #[inline(never)]
    pub(crate) fn overlaps_itself(&self) -> bool {
        !self.is_contiguous() && self.has_internal_overlap()
    }

    /// True if two different indices reach the same storage element
    /// (an `expand`ed tensor, an overlapping `as_strided` or `unfold`).
    /// The check is exact.
    pub fn has_internal_overlap(&self) -> bool {
        if self.is_contiguous() || self.numel() <= 1 {
            return false;
        }
        // Fast sufficient test: sort the dims of size > 1 by stride; no
        // overlap if each stride exceeds the span of all smaller ones.
        let mut dims: Vec<(usize, usize)> = self
            .shape
            .iter()
            .zip(self.strides.iter())
            .filter(|(n, _)| **n > 1)
            .map(|(&n, &s)| (s, n))
            .collect();
        if dims.iter().any(|&(s, _)| s == 0) {
            return true;
        }
        dims.sort_unstable();
        let mut span = 0usize;
        let mut ok = true;
        for &(s, n) in &dims {
            if s <= span {
                ok = false;
                break;
            }
            span += s * (n - 1);
        }
        if ok {
            return false;
        }
        // Exact test: mark every storage element reached.
        let base = self.offset;
        let mut seen = vec![false; self.storage_end() - base];
        for off in self.offsets() {
            let k = off - base;
            if seen[k] {
                return true;
            }
            seen[k] = true;
        }
        false
    }

    /// Storage offsets of all elements in row-major logical order.
    pub fn offsets(&self) -> Offsets {
        Offsets::new(self)
    }
}

/// Iterator over the storage offsets of a layout, row-major.
pub struct Offsets {
    shape: Dims,
    strides: Dims,
    index: Dims,
    next: usize,
    remaining: usize,
}

impl Offsets {
    fn new(l: &Layout) -> Self {
        Offsets {
            shape: l.shape,
            strides: l.strides,
            index: Dims::from_slice(&vec![0; l.ndim()]),
            next: l.offset,
            remaining: l.numel(),
        }
    }
}

impl Iterator for Offsets {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let cur = self.next;
        if self.remaining > 0 {
            let mut d = self.shape.len();
            // Wrapping: a size-1 dim may have any stride (a slice with a
            // huge step), and stepping past its end is undone at once; the
            // offset of every element returned is in the storage.
            while d > 0 {
                d -= 1;
                self.index[d] += 1;
                self.next = self.next.wrapping_add(self.strides[d]);
                if self.index[d] < self.shape[d] {
                    break;
                }
                self.next = self
                    .next
                    .wrapping_sub(self.strides[d].wrapping_mul(self.index[d]));
                self.index[d] = 0;
            }
        }
        Some(cur)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets {}

/// Normalizes a possibly negative dimension index for a tensor of rank
/// `ndim` (use `ndim + 1` for ops that insert a dim), naming `op` on error.
#[track_caller]
pub fn normalize_dim(op: &str, dim: i64, ndim: usize) -> usize {
    let n = ndim as i64;
    let lo = if n == 0 { -1 } else { -n };
    let hi = if n == 0 { 0 } else { n - 1 };
    if dim < lo || dim > hi {
        panic!(
            "funcz: {op}: dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        );
    }
    if dim < 0 {
        (dim + n.max(1)) as usize
    } else {
        dim as usize
    }
}

/// The broadcast shape of `a` and `b` under NumPy/PyTorch rules, or the
/// first dimension (counted in the result) where they disagree, with the
/// two sizes there.
// (`#[inline]`: every in-place op with a scalar operand broadcasts through
// it; left to itself, the compiler stopped inlining it into
// `broadcast_shapes` when the fused runs' checks became a second caller of
// `check_inplace`, and a 1K-element five-op chain took 75 instructions
// more per call.)
#[inline]
pub(crate) fn try_broadcast_shapes(
    a: &[usize],
    b: &[usize],
) -> Result<Dims, (usize, usize, usize)> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    let mut out = Dims::new();
    for i in 0..n {
        let (da, db) = (at(a, i), at(b, i));
        if da != db && da != 1 && db != 1 {
            return Err((i, da, db));
        }
        out.push(if da == 1 { db } else { da });
    }
    Ok(out)
}

/// The broadcast shape of `a` and `b` under NumPy/PyTorch rules, naming
/// `op` on error.
#[track_caller]
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Dims {
    match try_broadcast_shapes(a, b) {
        Ok(s) => {
            if let Err(why) = crate::storage::try_numel(&s, true) {
                panic!(
                    "funcz: {op}: {why} for the broadcast shape {s:?} of shapes {a:?} and {b:?}"
                );
            }
            s
        }
        Err((i, da, db)) => panic!(
            "funcz: {op}: shapes {a:?} and {b:?} cannot be broadcast together \
             (size {da} vs {db} at dimension {i})"
        ),
    }
}

/// The layout of `l` broadcast to `shape` (stride 0 on expanded dims),
/// or `None` if it cannot be broadcast.
pub fn broadcast_layout(l: &Layout, shape: &[usize]) -> Option<Layout> {
    if l.ndim() > shape.len() {
        return None;
    }
    let lead = shape.len() - l.ndim();
    let mut strides = Dims::new();
    for (i, &target) in shape.iter().enumerate() {
        if i < lead {
            strides.push(0);
        } else {
            let (n, s) = (l.shape[i - lead], l.strides[i - lead]);
            if n == target {
                strides.push(if n == 1 { 0 } else { s });
            } else if n == 1 {
                strides.push(0);
            } else {
                return None;
            }
        }
    }
    Some(Layout {
        shape: Dims::from_slice(shape),
        strides,
        offset: l.offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_transpose() {
        let l = Layout::new(&[3, 2], &[1, 3], 0);
        assert_eq!(l.offsets().collect::<Vec<_>>(), vec![0, 3, 1, 4, 2, 5]);
        assert!(!l.is_contiguous());
    }

    #[test]
    fn overlap_is_exact() {
        assert!(Layout::new(&[3, 2], &[0, 1], 0).has_internal_overlap());
        assert!(Layout::new(&[2, 2], &[1, 1], 0).has_internal_overlap());
        // Interleaved but disjoint: {0,3,2,5,4,7}.
        assert!(!Layout::new(&[3, 2], &[2, 3], 0).has_internal_overlap());
        assert!(!Layout::new(&[2, 3], &[1, 2], 0).has_internal_overlap());
        // unfold(0, 3, 2) of 7 elements overlaps; unfold(0, 2, 3) has gaps.
        assert!(Layout::new(&[3, 3], &[2, 1], 0).has_internal_overlap());
        assert!(!Layout::new(&[2, 2], &[3, 1], 0).has_internal_overlap());
    }

    #[test]
    fn broadcasting() {
        assert_eq!(&broadcast_shapes("add", &[3, 1], &[4])[..], &[3, 4]);
        let l = broadcast_layout(&Layout::contiguous(&[4]), &[3, 4]).unwrap();
        assert_eq!(&l.strides[..], &[0, 1]);
    }

    #[test]
    #[should_panic(expected = "add: shapes [3] and [4] cannot be broadcast")]
    fn broadcast_error_names_op_and_shapes() {
        broadcast_shapes("add", &[3], &[4]);
    }

    #[test]
    fn negative_dims() {
        assert_eq!(normalize_dim("select", -1, 3), 2);
        assert_eq!(normalize_dim("unsqueeze", 0, 0), 0);
    }

    #[test]
    #[should_panic(expected = "select: dimension out of range")]
    fn dim_out_of_range() {
        normalize_dim("select", 3, 3);
    }
}
