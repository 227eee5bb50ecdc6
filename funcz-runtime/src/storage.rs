//! Shared, versioned element storage. Every alias of a tensor holds the same
//! `Arc<Storage>`; a write through any alias is seen by all of them.

pub(crate) mod huge;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use crate::layout::Layout;

/// A reference-counted buffer of elements with a version counter that every
/// in-place write bumps (PyTorch's `tensor._version`).
#[derive(Debug)]
pub struct Storage<T> {
    data: RwLock<Vec<T>>,
    version: AtomicU64,
    /// For a buffer functionalized code made as the `*_copy` of a view
    /// (`remove = "mutations_and_views"`): where the view's elements are in
    /// the original program, for the overlap checks of in-place ops (see
    /// [`crate::ops::overlap`]).
    pub(crate) origin: Option<Box<Origin<T>>>,
}

/// Where the elements of a tensor functionalized code made are in the
/// original program (a `*_copy` made in place of a view, a root laid out
/// otherwise than the original's): a buffer and a layout there.
#[derive(Debug)]
pub(crate) struct Origin<T> {
    /// A weak handle (`None`: this buffer): the base's elements are not
    /// kept alive, and its address, the key the checks compare, is not
    /// reused while this lives.
    pub(crate) base: Option<Weak<Storage<T>>>,
    /// The layout there.
    pub(crate) layout: Layout,
    /// The layout of the tensor the record is for, in this buffer: another
    /// tensor of the buffer (a view of the copy) is where it is.
    pub(crate) own: Layout,
}

impl<T> Storage<T> {
    /// Wraps a buffer at version 0.
    pub fn new(data: Vec<T>) -> Self {
        Storage {
            data: RwLock::new(data),
            version: AtomicU64::new(0),
            origin: None,
        }
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// True if the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of in-place writes so far.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Shared access to the elements.
    pub fn read(&self) -> RwLockReadGuard<'_, Vec<T>> {
        self.data.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive access to the elements; bumps the version.
    pub fn write(&self) -> RwLockWriteGuard<'_, Vec<T>> {
        let guard = self.data.write().unwrap_or_else(|e| e.into_inner());
        // Only a holder of the write lock bumps the version, so no other
        // bump can come between this load and store: a plain load and store
        // do the job of a (much slower) atomic read-modify-write.
        let v = self.version.load(Ordering::Relaxed);
        self.version.store(v + 1, Ordering::Relaxed);
        guard
    }

    /// Exclusive access without bumping the version (for buffers nobody else
    /// can observe, e.g. the output of an out-of-place op being filled).
    pub(crate) fn write_unversioned(&self) -> RwLockWriteGuard<'_, Vec<T>> {
        self.data.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// The largest number of elements (and the largest size of one
/// dimension) a tensor may have: PyTorch's sizes and `numel` are `int64`.
pub const MAX_NUMEL: usize = i64::MAX as usize;

/// Allocations of at least this many bytes are tried with
/// `try_reserve_exact` before the op runs, so that a request the system
/// cannot serve is a panic naming the op (not an abort of the process).
/// Smaller ones are not probed: their failure is a genuine out-of-memory.
const PROBE_BYTES: usize = 1 << 30;

/// The number of elements of `shape`, checked as PyTorch checks a new
/// tensor's sizes: every size and the product of all of them fit in
/// `int64` ("numel: integer multiplication overflow"), and so do the
/// row-major strides (the product of the sizes after the first, a size 0
/// counted as 1: "Stride calculation overflowed"). Panics at the caller,
/// naming `op` and the shape.
///
/// ```
/// use funcz_runtime::storage::checked_numel;
/// assert_eq!(checked_numel("zeros", &[2, 3]), 6);
/// assert_eq!(checked_numel("zeros", &[0, 1 << 40, 1 << 20]), 0);
/// let r = std::panic::catch_unwind(|| checked_numel("zeros", &[1 << 32, 1 << 32]));
/// assert!(r.is_err());
/// ```
#[track_caller]
pub fn checked_numel(op: &str, shape: &[usize]) -> usize {
    match try_numel(shape, true) {
        Ok(n) => n,
        Err(why) => panic!("funcz: {op}: {why} for a tensor of shape {shape:?}"),
    }
}

/// The number of elements of a view of `shape` (an `expand`, `as_strided`
/// or `unfold` result), checked as [`checked_numel`] but for the strides,
/// which a view does not compute.
#[track_caller]
pub fn checked_view_numel(op: &str, shape: &[usize]) -> usize {
    match try_numel(shape, false) {
        Ok(n) => n,
        Err(why) => panic!("funcz: {op}: {why} for a view of shape {shape:?}"),
    }
}

/// [`checked_numel`]'s rules (the strides' only if `strides`, which a
/// new tensor computes and a view does not): the number of elements, or
/// what is wrong, in PyTorch's words. As PyTorch, the product is taken
/// from the first size on and an overflow on the way counts, even if a
/// later size is 0 (`[2^40, 2^40, 0]` is refused, `[0, 2^40, 2^40]` is
/// not, unless its strides overflow).
pub(crate) fn try_numel(shape: &[usize], strides: bool) -> Result<usize, &'static str> {
    let mut numel = Some(1usize);
    for &d in shape {
        if d > MAX_NUMEL {
            return Err("size is too large (larger than int64 max 9223372036854775807)");
        }
        numel = numel.and_then(|n| n.checked_mul(d));
    }
    let numel = match numel {
        Some(n) if n <= MAX_NUMEL => n,
        _ if strides => return Err("Storage size calculation overflowed"),
        _ => return Err("numel: integer multiplication overflow"),
    };
    if strides {
        let mut stride = 1usize;
        for &d in shape.iter().skip(1) {
            stride = stride.saturating_mul(d.max(1));
        }
        if stride > MAX_NUMEL {
            return Err("Stride calculation overflowed");
        }
    }
    Ok(numel)
}

/// [`checked_numel`], and the bytes `numel` elements of `T` take must be
/// allocatable: at most `isize::MAX`, and a request of a gigabyte or more
/// is tried first (and freed) so that one the system refuses panics here,
/// naming `op` and the shape, instead of aborting the process later.
/// Returns the number of elements. Called once per op, before its kernel.
#[track_caller]
pub fn check_alloc<T>(op: &str, shape: &[usize]) -> usize {
    let n = checked_bytes::<T>(op, shape);
    let bytes = n * std::mem::size_of::<T>();
    if bytes >= PROBE_BYTES && Vec::<T>::new().try_reserve_exact(n).is_err() {
        panic!(
            "funcz: {op}: can't allocate memory: you tried to allocate {bytes} bytes for a \
             tensor of shape {shape:?}"
        );
    }
    n
}

/// [`checked_numel`], and `numel` elements of `T` fit in `isize::MAX`
/// bytes (the largest allocation Rust can make), without trying to
/// allocate.
#[track_caller]
pub fn checked_bytes<T>(op: &str, shape: &[usize]) -> usize {
    let n = checked_numel(op, shape);
    fits_in_bytes::<T>(op, shape, n);
    n
}

/// [`checked_view_numel`], and the view could be materialized: `numel`
/// elements of `T` fit in `isize::MAX` bytes. A larger view (an `expand`
/// to 2^62 elements) could be neither copied nor walked in a lifetime, so
/// it is refused when made, naming the view op, rather than by a kernel
/// that cannot say which op asked.
#[track_caller]
pub fn checked_view_bytes<T>(op: &str, shape: &[usize]) -> usize {
    let n = checked_view_numel(op, shape);
    fits_in_bytes::<T>(op, shape, n);
    n
}

/// A vector with room for `n` items (`n` views, windows, pieces), or a
/// panic naming `op` and `shape` if the memory for them cannot be had
/// (`split(1)` of a dimension expanded to 2^40).
#[track_caller]
pub fn reserve_items<I>(op: &str, shape: &[usize], n: usize) -> Vec<I> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        panic!("funcz: {op}: can't allocate memory for {n} results of a tensor of shape {shape:?}");
    }
    v
}

#[track_caller]
fn fits_in_bytes<T>(op: &str, shape: &[usize], n: usize) {
    let size = std::mem::size_of::<T>().max(1);
    if n > isize::MAX as usize / size {
        panic!(
            "funcz: {op}: a tensor of shape {shape:?} ({n} elements of {size} bytes) is larger \
             than the largest possible allocation ({} bytes)",
            isize::MAX
        );
    }
}
