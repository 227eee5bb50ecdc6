//! Shared, versioned element storage. Every alias of a tensor holds the same
//! `Arc<Storage>`; a write through any alias is seen by all of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A reference-counted buffer of elements with a version counter that every
/// in-place write bumps (PyTorch's `tensor._version`).
#[derive(Debug)]
pub struct Storage<T> {
    data: RwLock<Vec<T>>,
    version: AtomicU64,
}

impl<T> Storage<T> {
    /// Wraps a buffer at version 0.
    pub fn new(data: Vec<T>) -> Self {
        Storage {
            data: RwLock::new(data),
            version: AtomicU64::new(0),
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
