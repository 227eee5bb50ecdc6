//! A small inline vector of sizes or strides, so that tensor handles never
//! allocate for their metadata.

use std::fmt;
use std::ops::{Deref, DerefMut};

/// The largest rank a tensor may have.
pub const MAX_DIMS: usize = 8;

/// Sizes or strides of a tensor, stored inline (at most [`MAX_DIMS`]).
///
/// ```
/// use funcz_runtime::Dims;
/// let d = Dims::from_slice(&[2, 3]);
/// assert_eq!(&d[..], &[2, 3]);
/// assert_eq!(d.iter().product::<usize>(), 6);
/// ```
#[derive(Clone, Copy, Default)]
pub struct Dims {
    len: u8,
    data: [usize; MAX_DIMS],
}

impl Dims {
    /// An empty list (the shape of a 0-d tensor).
    pub const fn new() -> Self {
        Dims {
            len: 0,
            data: [0; MAX_DIMS],
        }
    }

    /// Copies `s`; panics if it has more than [`MAX_DIMS`] entries.
    #[track_caller]
    pub fn from_slice(s: &[usize]) -> Self {
        assert!(
            s.len() <= MAX_DIMS,
            "funcz: tensors of rank {} are not supported (at most {MAX_DIMS} dims), got shape {s:?}",
            s.len()
        );
        let mut d = Dims::new();
        d.data[..s.len()].copy_from_slice(s);
        d.len = s.len() as u8;
        d
    }

    /// Appends one entry; panics past [`MAX_DIMS`].
    #[track_caller]
    pub fn push(&mut self, v: usize) {
        assert!(
            (self.len as usize) < MAX_DIMS,
            "funcz: tensors of rank > {MAX_DIMS} are not supported"
        );
        self.data[self.len as usize] = v;
        self.len += 1;
    }

    /// Inserts `v` at position `i`.
    #[track_caller]
    pub fn insert(&mut self, i: usize, v: usize) {
        let mut out = Dims::new();
        for (k, &x) in self.iter().enumerate() {
            if k == i {
                out.push(v);
            }
            out.push(x);
        }
        if i == self.len() {
            out.push(v);
        }
        *self = out;
    }

    /// Removes and returns the entry at `i`.
    #[track_caller]
    pub fn remove(&mut self, i: usize) -> usize {
        let v = self[i];
        let mut out = Dims::new();
        for (k, &x) in self.iter().enumerate() {
            if k != i {
                out.push(x);
            }
        }
        *self = out;
        v
    }

    /// A copy with entry `i` set to `v` (no change if `i` is past the
    /// end). Written as a test of every slot rather than an indexed store,
    /// so that the copy can stay in registers and be written straight into
    /// the layout being built.
    #[inline(always)]
    pub(crate) fn with(mut self, i: usize, v: usize) -> Dims {
        let len = self.len as usize;
        for (k, x) in self.data.iter_mut().enumerate() {
            if k == i && k < len {
                *x = v;
            }
        }
        self
    }

    /// A copy, field by field (see [`Layout::copied`](crate::Layout)).
    #[inline(always)]
    pub(crate) fn copied(&self) -> Dims {
        let [a, b, c, d, e, f, g, h] = self.data;
        Dims {
            len: self.len,
            data: [a, b, c, d, e, f, g, h],
        }
    }

    /// The entries as a `Vec`.
    pub fn to_vec(&self) -> Vec<usize> {
        self.deref().to_vec()
    }
}

/// Panics (naming `op` and the shape) if `shape` has more than
/// [`MAX_DIMS`] entries.
#[track_caller]
pub fn check_rank(op: &str, shape: &[usize]) {
    if shape.len() > MAX_DIMS {
        panic!(
            "funcz: {op}: tensors of rank {} are not supported (at most {MAX_DIMS} dims), got \
             shape {shape:?}",
            shape.len()
        );
    }
}

impl Deref for Dims {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        &self.data[..self.len as usize]
    }
}

impl DerefMut for Dims {
    #[inline]
    fn deref_mut(&mut self) -> &mut [usize] {
        &mut self.data[..self.len as usize]
    }
}

// Equality and hashing look at the entries in use only (a layout
// comparison is on the hot path of every view functionalized code makes).
impl PartialEq for Dims {
    #[inline]
    fn eq(&self, other: &Dims) -> bool {
        same_dims(self, other)
    }
}

/// `a == b` for sizes or strides, by a loop over the (at most a few)
/// entries: the slice comparison calls `memcmp`, which costs more than
/// the loop at these lengths.
#[inline]
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Eq for Dims {}

impl std::hash::Hash for Dims {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.deref().hash(state)
    }
}

impl fmt::Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.deref(), f)
    }
}

impl From<&[usize]> for Dims {
    fn from(s: &[usize]) -> Self {
        Dims::from_slice(s)
    }
}

impl<const N: usize> From<[usize; N]> for Dims {
    fn from(s: [usize; N]) -> Self {
        Dims::from_slice(&s)
    }
}

impl FromIterator<usize> for Dims {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut d = Dims::new();
        for v in iter {
            d.push(v);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_round_trip() {
        let mut d = Dims::from_slice(&[2, 3, 4]);
        d.insert(1, 1);
        assert_eq!(&d[..], &[2, 1, 3, 4]);
        d.insert(4, 9);
        assert_eq!(&d[..], &[2, 1, 3, 4, 9]);
        assert_eq!(d.remove(1), 1);
        assert_eq!(&d[..], &[2, 3, 4, 9]);
    }

    #[test]
    #[should_panic(expected = "at most 8 dims")]
    fn rank_limit_is_reported() {
        Dims::from_slice(&[1; 9]);
    }
}
