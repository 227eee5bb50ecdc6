//! Transparent huge pages for large tensor buffers.
//!
//! A streaming kernel over buffers of tens of MiB spends a good part of
//! its time on TLB misses with 4 KiB pages: the same in-place add over 16M
//! `f32` runs in about 0.7 of the time when its buffers are backed by 2 MiB
//! pages (BENCHMARKS.md, "Huge pages for large buffers"). Linux gives an
//! anonymous mapping huge pages when its THP mode is `always`, or, in the
//! common `madvise` mode, when the range was advised with `MADV_HUGEPAGE`
//! before its pages are first touched. So a new buffer of at least
//! [`MIN_BYTES`] is advised right after it is allocated, before it is
//! filled: only the 2 MiB-aligned part of it, which is all a huge page can
//! back. The advice is a hint; it failing (another OS, a kernel without
//! THP, THP turned off) changes nothing but the speed.

/// The size of a transparent huge page on x86-64 and (with 4 KiB base
/// pages) AArch64.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// Buffers of at least this many bytes are advised. Below it the interior
/// would be at most one or two huge pages, the buffer fits in the L3 and
/// the allocator reuses its memory (already faulted in, so advice comes
/// too late): nothing to gain, and a system call per allocation to pay.
pub(crate) const MIN_BYTES: usize = 4 << 20;

/// An empty vector with room for `n` elements, advised for huge pages if it
/// is large (use instead of `Vec::with_capacity` for a tensor's buffer that
/// is about to be filled).
#[inline]
pub(crate) fn with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    advise(&v);
    v
}

/// `n` copies of `value`, the buffer advised for huge pages before it is
/// filled if it is large (use instead of `vec![value; n]` for a tensor's
/// buffer; [`zeroed`] for zeros).
#[inline]
pub(crate) fn filled<T: Clone>(value: T, n: usize) -> Vec<T> {
    let mut v = with_capacity(n);
    v.resize(n, value);
    v
}

/// `n` copies of `zero` (which must be the type's all-zero-bits value for
/// the advice to come in time), advised for huge pages if large. Built with
/// `vec!`, so that a primitive's zero comes from `calloc`: a large zeroed
/// block is fresh memory the system maps lazily, not yet touched, so the
/// advice still reaches all of it, and no pass writes the zeros.
#[inline]
pub(crate) fn zeroed<T: Clone>(zero: T, n: usize) -> Vec<T> {
    let v = vec![zero; n];
    advise(&v);
    v
}

/// Asks for huge pages on the 2 MiB-aligned part of `v`'s allocation (its
/// whole capacity) if it is at least [`MIN_BYTES`]. Pages of it already
/// touched keep their size (the kernel may merge them later).
/// Small buffers cost one comparison: the rest is out of line.
#[inline]
pub(crate) fn advise<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= MIN_BYTES {
        advise_bytes(v.as_ptr().cast(), bytes);
    }
}

/// [`advise`] for an allocation of `bytes` at `base`.
#[cold]
#[inline(never)]
fn advise_bytes(base: *const u8, bytes: usize) {
    if let Some((skip, len)) = advised_part(base as usize, bytes) {
        // The range lies inside the allocation: `skip + len <= bytes`.
        madvise_huge(base.wrapping_add(skip), len);
    }
}

/// The part of an allocation of `bytes` at `addr` that [`advise`] advises:
/// its [`aligned_interior`] if it is at least [`MIN_BYTES`], else none.
pub(crate) fn advised_part(addr: usize, bytes: usize) -> Option<(usize, usize)> {
    if bytes < MIN_BYTES {
        return None;
    }
    aligned_interior(addr, bytes)
}

/// The part of `[addr, addr + len)` made of whole [`HUGE_PAGE`]-aligned
/// huge pages, as `(offset from addr, length)`, or `None` if it holds no
/// whole huge page.
pub(crate) fn aligned_interior(addr: usize, len: usize) -> Option<(usize, usize)> {
    let end = addr.checked_add(len)?;
    let start = addr.checked_next_multiple_of(HUGE_PAGE)?;
    let stop = end - end % HUGE_PAGE;
    (stop > start).then(|| (start - addr, stop - start))
}

/// `madvise(ptr, len, MADV_HUGEPAGE)`; true if the kernel took the advice.
/// A failure is ignored by the callers: it is advice.
#[cfg(target_os = "linux")]
pub(crate) fn madvise_huge(ptr: *const u8, len: usize) -> bool {
    // SAFETY: MADV_HUGEPAGE only marks the mappings in the range as
    // eligible for huge pages. It changes neither their contents nor their
    // protection nor whether they are mapped (when the kernel later backs
    // them with huge pages, or merges pages already present, it copies the
    // contents), so no memory Rust can see changes, whatever the range.
    // A bad range (unaligned, partly unmapped, a kernel without THP) is
    // refused with -1 and errno, which is all that happens.
    unsafe { libc::madvise(ptr.cast_mut().cast(), len, libc::MADV_HUGEPAGE) == 0 }
}

/// No transparent huge pages to ask for outside Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) fn madvise_huge(_ptr: *const u8, _len: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: usize = HUGE_PAGE;

    #[test]
    fn interior_of_ranges() {
        // Smaller than a huge page: none, aligned or not.
        assert_eq!(aligned_interior(0, H - 1), None);
        assert_eq!(aligned_interior(H, H - 1), None);
        assert_eq!(aligned_interior(H + 16, H - 16), None);
        // Length 0, and a huge page's worth straddling a boundary.
        assert_eq!(aligned_interior(H, 0), None);
        assert_eq!(aligned_interior(H + 4096, H), None);
        // Exactly aligned: all of it.
        assert_eq!(aligned_interior(H, H), Some((0, H)));
        assert_eq!(aligned_interior(3 * H, 5 * H), Some((0, 5 * H)));
        // Not aligned: the whole huge pages inside.
        assert_eq!(aligned_interior(H + 16, 3 * H), Some((H - 16, 2 * H)));
        assert_eq!(aligned_interior(H - 1, 2 * H + 1), Some((1, 2 * H)));
        // Aligned start, ragged end; ragged start, aligned end.
        assert_eq!(aligned_interior(2 * H, 3 * H - 1), Some((0, 2 * H)));
        assert_eq!(aligned_interior(2 * H - 8, 2 * H + 8), Some((8, 2 * H)));
        // At the top of the address space: no overflow.
        assert_eq!(aligned_interior(usize::MAX - 10, 5), None);
        assert_eq!(aligned_interior(usize::MAX - H, H + 1), None);
        assert_eq!(aligned_interior(1, usize::MAX), None);
    }

    #[test]
    fn only_large_allocations_are_advised() {
        // Below the threshold: nothing, even with whole huge pages inside.
        assert_eq!(advised_part(H, MIN_BYTES - 1), None);
        assert_eq!(advised_part(0, H), None);
        assert_eq!(advised_part(H, 0), None);
        // At it: the aligned interior.
        assert_eq!(advised_part(H, MIN_BYTES), Some((0, MIN_BYTES)));
        assert_eq!(
            advised_part(H + 16, MIN_BYTES),
            Some((H - 16, MIN_BYTES - H))
        );
    }

    #[test]
    fn buffers_hold_their_values_whatever_their_size() {
        for n in [0, 1, 1000, MIN_BYTES / 4 - 1, MIN_BYTES / 4, 3 * H] {
            let v: Vec<f32> = filled(1.5, n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 1.5));
            let z: Vec<f32> = zeroed(0.0, n);
            assert_eq!(z.len(), n);
            assert!(z.iter().all(|&x| x == 0.0));
            let mut w: Vec<i64> = with_capacity(n);
            assert!(w.capacity() >= n);
            w.extend(0..n as i64);
            assert_eq!(w.last().copied(), n.checked_sub(1).map(|k| k as i64));
        }
        // Zero-sized elements: no allocation to advise.
        let u: Vec<()> = filled((), 1 << 16);
        assert_eq!(u.len(), 1 << 16);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn failing_advice_is_only_reported() {
        let v = vec![1u8; 3 * H];
        let p = v.as_ptr();
        // Not page-aligned: EINVAL, and nothing else happens.
        assert!(!madvise_huge(p.wrapping_add(1), H));
        assert!(v.iter().all(|&x| x == 1));
        // An empty vector (dangling pointer, capacity 0) asks nothing.
        advise(&Vec::<u8>::new());
        advise(&Vec::<f64>::with_capacity(0));
    }

    /// A large buffer's aligned interior is marked `hg` (MADV_HUGEPAGE) in
    /// `/proc/self/smaps` when the kernel takes the advice.
    #[cfg(target_os = "linux")]
    #[test]
    fn large_buffers_are_marked_for_huge_pages() {
        fn flags_at(addr: usize) -> Option<String> {
            let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
            let mut inside = false;
            for line in smaps.lines() {
                let first = line.split_whitespace().next().unwrap_or("");
                if let Some((a, b)) = first.split_once('-')
                    && let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = (a..b).contains(&addr);
                } else if inside && let Some(f) = line.strip_prefix("VmFlags:") {
                    return Some(f.to_string());
                }
            }
            None
        }
        let hg = |addr: usize| flags_at(addr).map(|f| f.split_whitespace().any(|x| x == "hg"));

        // Whether this kernel takes the advice at all (not if it has no
        // THP): a raw call on a buffer of our own.
        let probe: Vec<u8> = Vec::with_capacity(4 * H);
        let (skip, len) = aligned_interior(probe.as_ptr() as usize, 4 * H).unwrap();
        let taken = madvise_huge(probe.as_ptr().wrapping_add(skip), len);
        let Some(flagged) = hg(probe.as_ptr() as usize + skip) else {
            return; // no smaps to read
        };
        assert_eq!(flagged, taken, "madvise's result and the hg flag disagree");

        let elems = MIN_BYTES / 4 + H;
        let mut big: Vec<f32> = with_capacity(elems);
        let (skip, len) = aligned_interior(big.as_ptr() as usize, elems * 4).unwrap();
        assert!(len >= MIN_BYTES);
        let inner = big.as_ptr() as usize + skip;
        assert_eq!(hg(inner), Some(taken), "a {MIN_BYTES}-byte buffer");
        assert_eq!(hg(inner + len - 1), Some(taken));
        big.resize(elems, 2.0);
        assert!(big.iter().all(|&x| x == 2.0));
    }
}
