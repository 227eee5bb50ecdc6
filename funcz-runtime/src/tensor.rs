//! The tensor handle: shared storage + layout.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};

use crate::element::Scalar;
use crate::layout::Layout;
use crate::storage::Storage;

/// Identity of one tensor handle, used to name values in traces.
pub type TensorId = u64;

/// The next block of identities to hand to a thread.
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);

/// Identities a thread takes from [`NEXT_BLOCK`] at a time.
const ID_BLOCK: u64 = 1 << 16;

thread_local! {
    /// This thread's next identity and the end of its block.
    static IDS: Cell<(TensorId, TensorId)> = const { Cell::new((0, 0)) };
}

/// A new identity, unique across threads. Each thread draws from its own
/// block, so the common case is a thread-local increment, not an atomic
/// operation (identities are compared, never ordered).
#[inline]
pub(crate) fn fresh_id() -> TensorId {
    IDS.with(|ids| {
        let (next, end) = ids.get();
        if next < end {
            ids.set((next + 1, end));
            next
        } else {
            let start = NEXT_BLOCK.fetch_add(ID_BLOCK, Ordering::Relaxed);
            ids.set((start + 1, start + ID_BLOCK));
            start
        }
    })
}

/// A strided view of shared storage, with PyTorch's eager aliasing
/// semantics: views share storage, in-place ops write through every alias,
/// `clone()` is a deep copy and `alias()` shares storage.
///
/// ```
/// use funcz_runtime::Tensor;
/// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
/// assert_eq!(a.shape(), &[2, 2]);
/// assert_eq!(a.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
/// ```
///
/// # Methods by topic
///
/// Op names follow PyTorch's (aten); every op is recorded by
/// [`trace`](crate::trace) under that name.
///
/// - **Creation**: [`from_vec`](Tensor::from_vec), [`scalar`](Tensor::scalar),
///   [`zeros`](Tensor::zeros), [`ones`](Tensor::ones), [`full`](Tensor::full),
///   [`arange`](Tensor::arange), [`arange_step`](Tensor::arange_step),
///   [`eye`](Tensor::eye), [`rand`](Tensor::rand), [`randn`](Tensor::randn),
///   [`zeros_like`](Tensor::zeros_like), [`ones_like`](Tensor::ones_like);
///   from ndarray: [`from_ndarray`](Tensor::from_ndarray) and `From`.
/// - **Reading**: [`shape`](Tensor::shape), [`strides`](Tensor::strides),
///   [`storage_offset`](Tensor::storage_offset), [`numel`](Tensor::numel),
///   [`to_vec`](Tensor::to_vec), [`item`](Tensor::item),
///   [`to_ndarray`](Tensor::to_ndarray), zero-copy
///   [`with_array_view`](Tensor::with_array_view), `Display` (PyTorch's
///   printing), [`allclose`](Tensor::allclose), [`equal`](Tensor::equal).
/// - **Functional ops** (fresh results, broadcasting): [`add`](Tensor::add),
///   [`sub`](Tensor::sub), [`mul`](Tensor::mul), [`div`](Tensor::div),
///   [`matmul`](Tensor::matmul), [`exp`](Tensor::exp), [`relu`](Tensor::relu),
///   [`clamp`](Tensor::clamp), ... and the `+ - * /` operators; see
///   [`ops`](crate::ops).
/// - **Reductions**: [`sum`](Tensor::sum), [`sum_dim`](Tensor::sum_dim),
///   [`mean`](Tensor::mean), [`mean_dim`](Tensor::mean_dim).
/// - **Views** (share storage): [`view`](Tensor::view),
///   [`reshape`](Tensor::reshape), [`t`](Tensor::t),
///   [`transpose`](Tensor::transpose), [`permute`](Tensor::permute),
///   [`narrow`](Tensor::narrow), [`slice`](Tensor::slice),
///   [`select`](Tensor::select), [`diagonal`](Tensor::diagonal),
///   [`expand`](Tensor::expand), [`unfold`](Tensor::unfold),
///   [`split`](Tensor::split), [`chunk`](Tensor::chunk),
///   [`unbind`](Tensor::unbind), ...; their `*_copy` twins and the scatters
///   ([`slice_scatter`](Tensor::slice_scatter), ...); see
///   [`view`](crate::view).
/// - **In-place ops** (write through every alias, bump the
///   [`version`](Tensor::version)): [`add_`](Tensor::add_),
///   [`mul_`](Tensor::mul_), [`copy_`](Tensor::copy_),
///   [`fill_`](Tensor::fill_), [`zero_`](Tensor::zero_), ...; metadata
///   in-place ops [`t_`](Tensor::t_), [`transpose_`](Tensor::transpose_),
///   [`unsqueeze_`](Tensor::unsqueeze_), [`resize_`](Tensor::resize_).
/// - **Handles**: `clone()` is a deep copy (aten `clone`),
///   [`shallow_clone`](Tensor::shallow_clone) another handle to the same
///   tensor, [`alias`](Tensor::alias) a view of all of it.
/// - **Fallible twins** (return [`Error`](crate::Error) instead of
///   panicking): [`try_from_vec`](Tensor::try_from_vec), [`try_view`](Tensor::try_view),
///   [`try_reshape`](Tensor::try_reshape), [`try_narrow`](Tensor::try_narrow),
///   [`try_select`](Tensor::try_select), [`try_matmul`](Tensor::try_matmul),
///   [`try_add`](Tensor::try_add), [`try_sub`](Tensor::try_sub),
///   [`try_mul`](Tensor::try_mul), [`try_div`](Tensor::try_div).
pub struct Tensor<T: Scalar = f32> {
    pub(crate) storage: Arc<Storage<T>>,
    pub(crate) layout: Layout,
    pub(crate) id: TensorId,
}

impl<T: Scalar> Tensor<T> {
    // ---- construction (crate-internal) ----

    /// A tensor over `storage` with `layout` and a fresh identity.
    pub(crate) fn from_parts(storage: Arc<Storage<T>>, layout: Layout) -> Self {
        Tensor {
            storage,
            layout,
            id: fresh_id(),
        }
    }

    /// A fresh contiguous tensor owning `data` (no checks beyond length).
    pub(crate) fn from_contiguous(data: Vec<T>, shape: &[usize]) -> Self {
        let layout = Layout::contiguous(shape);
        debug_assert_eq!(data.len(), layout.numel());
        Tensor::from_parts(Arc::new(Storage::new(data)), layout)
    }

    /// Another handle to the same tensor (same storage, layout and trace
    /// identity). Not an op: never traced.
    pub(crate) fn handle(&self) -> Self {
        Tensor {
            storage: Arc::clone(&self.storage),
            layout: self.layout.copied(),
            id: self.id,
        }
    }

    /// Another handle to this very tensor (as tch-rs's `shallow_clone`):
    /// same storage, layout and trace identity. Not an op, so nothing is
    /// recorded; use it to pass a tensor by value to a function that
    /// mutates it.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let b = a.shallow_clone();
    /// assert!(a.same_storage(&b));
    /// assert_eq!(a.id(), b.id());
    /// ```
    pub fn shallow_clone(&self) -> Self {
        self.handle()
    }

    /// A handle with the same storage and a new layout and identity.
    pub(crate) fn with_layout(&self, layout: Layout) -> Self {
        Tensor::from_parts(Arc::clone(&self.storage), layout)
    }

    // ---- public construction ----

    /// A contiguous tensor from row-major `data`; panics if the lengths
    /// disagree.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let t = Tensor::<f64>::from_vec(vec![1.0; 6], &[2, 3]);
    /// assert_eq!(t.numel(), 6);
    /// ```
    #[track_caller]
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Self {
        let n = crate::storage::checked_numel("from_vec", shape);
        if data.len() != n {
            panic!(
                "funcz: from_vec: shape {shape:?} needs {n} elements but data has {}",
                data.len()
            );
        }
        crate::dims::check_rank("from_vec", shape);
        Tensor::from_contiguous(data, shape)
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar(v: T) -> Self {
        Tensor::from_contiguous(vec![v], &[])
    }

    // ---- queries ----

    /// Size of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    /// Size of dimension `dim` (negative counts from the end).
    pub fn size(&self, dim: i64) -> usize {
        self.layout.shape[crate::layout::normalize_dim("size", dim, self.dim())]
    }

    /// Strides in elements.
    pub fn strides(&self) -> &[usize] {
        &self.layout.strides
    }

    /// Offset of the first element in the storage.
    pub fn storage_offset(&self) -> usize {
        self.layout.offset
    }

    /// The full layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.layout.ndim()
    }

    /// True if the elements are row-major without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// The storage's version counter (bumped by every in-place op).
    pub fn version(&self) -> u64 {
        self.storage.version()
    }

    /// True if both handles use the same storage buffer.
    pub fn same_storage(&self, other: &Tensor<T>) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// The identity this handle has in traces.
    pub fn id(&self) -> TensorId {
        self.id
    }

    /// How many handles share this tensor's storage.
    ///
    /// ```
    /// let a = funcz_runtime::Tensor::<f32>::zeros(&[2]);
    /// let v = a.narrow(0, 0, 1);
    /// assert_eq!(a.storage_use_count(), 2);
    /// ```
    pub fn storage_use_count(&self) -> usize {
        Arc::strong_count(&self.storage)
    }

    /// The address of the shared storage (equal for handles that share it;
    /// never 0).
    #[inline]
    pub(crate) fn storage_key(&self) -> usize {
        Arc::as_ptr(&self.storage) as *const u8 as usize
    }

    /// The elements in row-major logical order.
    pub fn to_vec(&self) -> Vec<T> {
        if self.numel() == 0 {
            // An empty view may sit past the end of its storage.
            return Vec::new();
        }
        let data = self.storage.read();
        if self.layout.is_contiguous() {
            let o = self.layout.offset;
            data[o..o + self.numel()].to_vec()
        } else {
            self.layout.offsets().map(|i| data[i]).collect()
        }
    }

    /// The single element of a one-element tensor.
    pub fn item(&self) -> T {
        assert_eq!(
            self.numel(),
            1,
            "funcz: item: a tensor with {} elements (shape {:?}) cannot be converted to a scalar",
            self.numel(),
            self.shape()
        );
        self.storage.read()[self.layout.offset]
    }

    // ---- data access for kernels (crate-internal) ----

    /// Runs `f` on an ndarray view of the elements.
    pub(crate) fn with_array<R>(&self, f: impl FnOnce(ArrayViewD<'_, T>) -> R) -> R {
        let data = self.storage.read();
        f(array_view(&data, &self.layout))
    }

    /// Runs `f` on a mutable ndarray view of the elements; bumps the version.
    /// The caller must have checked that the layout does not overlap itself.
    #[allow(dead_code)] // the kernels walk strided layouts themselves
    pub(crate) fn with_array_mut<R>(&self, f: impl FnOnce(ArrayViewMutD<'_, T>) -> R) -> R {
        let mut data = self.storage.write();
        f(array_view_mut(&mut data, &self.layout))
    }

    /// Runs `f` on the contiguous elements if the tensor is contiguous.
    pub(crate) fn with_contiguous<R>(&self, f: impl FnOnce(&[T]) -> R) -> Option<R> {
        if !self.layout.is_contiguous() {
            return None;
        }
        if self.numel() == 0 {
            return Some(f(&[]));
        }
        let data = self.storage.read();
        let o = self.layout.offset;
        Some(f(&data[o..o + self.numel()]))
    }
}

/// An ndarray view of `layout` inside `data`.
pub(crate) fn array_view<'a, T>(data: &'a [T], layout: &Layout) -> ArrayViewD<'a, T> {
    let shape = IxDyn(&layout.shape);
    if layout.numel() == 0 {
        // Any strides describe an empty array; ndarray wants them to fit.
        return ArrayViewD::from_shape(shape, &data[0..0]).expect("funcz: internal: empty view");
    }
    let strides = IxDyn(&layout.strides);
    let tail = &data[layout.offset..layout.storage_end()];
    ArrayViewD::from_shape(shape.strides(strides), tail)
        .expect("funcz: internal: layout fits its storage")
}

/// A mutable ndarray view of `layout` inside `data`.
#[allow(dead_code)] // the kernels walk strided layouts themselves
pub(crate) fn array_view_mut<'a, T>(data: &'a mut [T], layout: &Layout) -> ArrayViewMutD<'a, T> {
    let shape = IxDyn(&layout.shape);
    if layout.numel() == 0 {
        return ArrayViewMutD::from_shape(shape, &mut data[0..0])
            .expect("funcz: internal: empty view");
    }
    let strides = IxDyn(&layout.strides);
    let tail = &mut data[layout.offset..layout.storage_end()];
    ArrayViewMutD::from_shape(shape.strides(strides), tail)
        .expect("funcz: internal: layout fits its storage and does not overlap")
}

impl<T: Scalar> std::fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("offset", &self.layout.offset)
            .field("data", &self.to_vec())
            .finish()
    }
}

impl<T: Scalar> AsRef<Tensor<T>> for Tensor<T> {
    fn as_ref(&self) -> &Tensor<T> {
        self
    }
}

#[cfg(test)]
mod array_view_tests {
    use super::*;

    #[test]
    fn empty_layouts_with_strides_make_empty_views() {
        let data = vec![1.0f32; 6];
        let l = Layout::new(&[2, 0], &[3, 1], 0);
        assert_eq!(array_view(&data, &l).len(), 0);
        let mut data = data;
        assert_eq!(array_view_mut(&mut data, &l).shape(), &[2, 0]);
    }
}
