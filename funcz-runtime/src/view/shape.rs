//! Pure layout computations for every view op.
//!
//! Each function takes the layout of the input and the op's arguments
//! exactly as the user passed them (negative dims, `-1` sizes, unclamped
//! slice bounds), checks them with PyTorch's rules and returns the layout
//! of the result. No data is touched, so the functionalization runtime can
//! use these to recompute the layouts of a view chain.
//!
//! The first argument `op` is the name used in panic messages (the method
//! the user called: `narrow`, `narrow_copy`, `t_`, ...). Every panic reads
//! `funcz: {op}: ...` and names the input shape and the bad argument.
//!
//! ```
//! use funcz_runtime::Layout;
//! use funcz_runtime::view::shape::{narrow_layout, t_layout};
//! let base = Layout::contiguous(&[3, 4]);
//! let t = t_layout("t", &base);
//! assert_eq!((&t.shape[..], &t.strides[..]), (&[4, 3][..], &[1, 4][..]));
//! let n = narrow_layout("narrow", &t, 1, -2, 2);
//! assert_eq!((&n.shape[..], &n.strides[..], n.offset), (&[4, 2][..], &[1, 4][..], 4));
//! ```

use crate::dims::Dims;
use crate::layout::{Layout, contiguous_strides};

/// Wraps a possibly negative `dim` into `0..rank`, where `rank` is the
/// rank of `shape` (or one more, for ops that insert a dimension). A 0-d
/// tensor accepts `0` and `-1`, as in PyTorch.
#[track_caller]
pub fn wrap_dim(op: &str, dim: i64, rank: usize, shape: &[usize]) -> usize {
    let n = rank as i64;
    let (lo, hi) = if n == 0 { (-1, 0) } else { (-n, n - 1) };
    if dim < lo || dim > hi {
        panic!(
            "funcz: {op}: dimension out of range (expected to be in range of [{lo}, {hi}], \
             but got {dim}) for a tensor of shape {shape:?}"
        );
    }
    if dim < 0 {
        (dim + n.max(1)) as usize
    } else {
        dim as usize
    }
}

/// Panics (naming `op`) if a result of rank `rank` would exceed
/// [`MAX_DIMS`](crate::dims::MAX_DIMS).
#[track_caller]
fn check_rank(op: &str, rank: usize, what: &dyn std::fmt::Debug) {
    if rank > crate::dims::MAX_DIMS {
        panic!(
            "funcz: {op}: tensors of rank {rank} are not supported (at most {} dims), \
             requested {what:?}",
            crate::dims::MAX_DIMS
        );
    }
}

#[track_caller]
fn non_scalar(op: &str, l: &Layout) {
    if l.ndim() == 0 {
        panic!("funcz: {op}: cannot be applied to a 0-dim tensor (shape [])");
    }
}

// ---------------------------------------------------------------------------
// reshaping views

/// Resolves a requested shape with at most one `-1` against `numel`
/// (PyTorch's `infer_size`).
///
/// ```
/// use funcz_runtime::view::shape::infer_size;
/// assert_eq!(&infer_size("view", &[2, -1], 6)[..], &[2, 3]);
/// ```
#[track_caller]
pub fn infer_size(op: &str, shape: &[i64], numel: usize) -> Dims {
    check_rank(op, shape.len(), &shape);
    let mut infer = None;
    let mut known: Option<usize> = Some(1);
    let mut out = Dims::new();
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                panic!("funcz: {op}: only one dimension can be inferred, got shape {shape:?}");
            }
            infer = Some(i);
            out.push(1);
        } else if d < 0 {
            panic!("funcz: {op}: invalid shape dimension {d} in shape {shape:?}");
        } else {
            known = known.and_then(|k| k.checked_mul(d as usize));
            out.push(d as usize);
        }
    }
    let ok = match known {
        Some(k) => numel == k || (infer.is_some() && k > 0 && numel.is_multiple_of(k)),
        None => false,
    };
    if !ok {
        panic!("funcz: {op}: shape {shape:?} is invalid for input of size {numel}");
    }
    if let Some(i) = infer {
        let k = known.unwrap_or(0);
        if k == 0 {
            panic!(
                "funcz: {op}: cannot reshape tensor of 0 elements into shape {shape:?} because \
                 the unspecified dimension size -1 can be any value and is ambiguous"
            );
        }
        out[i] = numel / k;
    }
    out
}

/// The strides that let a tensor with layout `l` be viewed as `new_shape`
/// without copying, or `None` if some new dimension would span two
/// non-contiguous chunks of the old one (PyTorch's `computeStride`).
/// `new_shape` must have the same number of elements as `l`.
#[track_caller]
pub fn view_strides(l: &Layout, new_shape: &[usize]) -> Option<Dims> {
    let old_shape = &l.shape[..];
    let old_strides = &l.strides[..];
    if old_shape.is_empty() {
        return Some(new_shape.iter().map(|_| 1).collect());
    }
    let numel = l.numel();
    if numel == 0 && old_shape == new_shape {
        return Some(l.strides);
    }
    let mut new_strides = Dims::from_slice(new_shape);
    if numel == 0 {
        let mut acc = 1usize;
        for d in (0..new_shape.len()).rev() {
            new_strides[d] = acc;
            acc = acc.saturating_mul(new_shape[d].max(1));
        }
        return Some(new_strides);
    }
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last().expect("non-empty");
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[tensor_d];
        // A stride past usize (a size-1 dim's stride may be anything) is
        // a chunk boundary, and a new stride past usize is no view.
        let chunk_ends = tensor_d == 0
            || (old_shape[tensor_d - 1] != 1
                && Some(old_strides[tensor_d - 1]) != tensor_numel.checked_mul(chunk_base_stride));
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel.checked_mul(chunk_base_stride)?;
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(new_strides)
}

/// Layout of `view(shape)`; panics like PyTorch when the strides do not
/// allow a view.
#[track_caller]
pub fn view_layout(op: &str, l: &Layout, shape: &[i64]) -> Layout {
    match reshape_layout(op, l, shape) {
        Some(v) => v,
        None => panic!(
            "funcz: {op}: view size is not compatible with input tensor's size and stride \
             (at least one dimension spans across two contiguous subspaces). Use .reshape(...) \
             instead. (input shape {:?}, strides {:?}, requested shape {shape:?})",
            &l.shape[..],
            &l.strides[..]
        ),
    }
}

/// Layout of `reshape(shape)` when it is a view, or `None` when reshape
/// must copy (the copy is then contiguous with shape
/// `infer_size(op, shape, l.numel())`). Panics on an invalid shape.
#[track_caller]
pub fn reshape_layout(op: &str, l: &Layout, shape: &[i64]) -> Option<Layout> {
    let new_shape = infer_size(op, shape, l.numel());
    view_strides(l, &new_shape).map(|strides| Layout {
        shape: new_shape,
        strides,
        offset: l.offset,
    })
}

/// Layout of `flatten()` when it is a view (`reshape(-1)`; a 0-d tensor
/// becomes shape `[1]`), or `None` when flatten must copy.
#[track_caller]
pub fn flatten_layout(op: &str, l: &Layout) -> Option<Layout> {
    reshape_layout(op, l, &[-1])
}

// ---------------------------------------------------------------------------
// dimension shuffles

/// Layout of `t()`: tensors of rank ≤ 1 are unchanged, 2-d are transposed.
#[track_caller]
pub fn t_layout(op: &str, l: &Layout) -> Layout {
    match l.ndim() {
        0 | 1 => *l,
        2 => transpose_layout(op, l, 0, 1),
        n => panic!(
            "funcz: {op}: t() expects a tensor with <= 2 dimensions, but self is {n}D \
             (shape {:?})",
            &l.shape[..]
        ),
    }
}

/// Layout of `transpose(d0, d1)`.
#[track_caller]
pub fn transpose_layout(op: &str, l: &Layout, d0: i64, d1: i64) -> Layout {
    let a = wrap_dim(op, d0, l.ndim(), &l.shape);
    let b = wrap_dim(op, d1, l.ndim(), &l.shape);
    let mut out = *l;
    if l.ndim() > 0 {
        out.shape.swap(a, b);
        out.strides.swap(a, b);
    }
    out
}

/// Layout of `permute(dims)`: result dim `i` is input dim `dims[i]`.
#[track_caller]
pub fn permute_layout(op: &str, l: &Layout, dims: &[i64]) -> Layout {
    if dims.len() != l.ndim() {
        panic!(
            "funcz: {op}: number of dims don't match in permute: the tensor has {} dimensions \
             (shape {:?}) but dims {dims:?} has {}",
            l.ndim(),
            &l.shape[..],
            dims.len()
        );
    }
    let mut seen = [false; crate::dims::MAX_DIMS];
    let mut shape = Dims::new();
    let mut strides = Dims::new();
    for &d in dims {
        let w = wrap_dim(op, d, l.ndim(), &l.shape);
        if seen[w] {
            panic!(
                "funcz: {op}: duplicate dims are not allowed: dims {dims:?} for a tensor of \
                 shape {:?}",
                &l.shape[..]
            );
        }
        seen[w] = true;
        shape.push(l.shape[w]);
        strides.push(l.strides[w]);
    }
    Layout {
        shape,
        strides,
        offset: l.offset,
    }
}

// ---------------------------------------------------------------------------
// narrowing views

/// The clamped `(start, end)` of `slice(dim, start, end, step)` on a
/// dimension of size `size`, with Python's rules: negative bounds count
/// from the end, then both are clamped into `0..=size` with `end ≥ start`.
/// Panics unless `step ≥ 1`.
///
/// ```
/// use funcz_runtime::view::shape::slice_bounds;
/// assert_eq!(slice_bounds("slice", 5, -3, 100, 1), (2, 5));
/// assert_eq!(slice_bounds("slice", 5, 4, 1, 1), (4, 4));
/// ```
#[track_caller]
pub fn slice_bounds(op: &str, size: usize, start: i64, end: i64, step: i64) -> (usize, usize) {
    if step < 1 {
        panic!("funcz: {op}: slice step must be positive, got step {step}");
    }
    let n = size as i64;
    let mut s = start;
    let mut e = end;
    if s < 0 {
        s = s.saturating_add(n);
    }
    if e < 0 {
        e = e.saturating_add(n);
    }
    s = s.clamp(0, n);
    e = e.clamp(s, n);
    (s as usize, e as usize)
}

/// Layout of `slice(dim, start, end, step)` (see [`slice_bounds`]).
#[track_caller]
pub fn slice_layout(op: &str, l: &Layout, dim: i64, start: i64, end: i64, step: i64) -> Layout {
    non_scalar(op, l);
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    let (s, e) = slice_bounds(op, l.shape[d], start, end, step);
    let step = step as usize;
    // Built field by field (not `let mut out = *l`), which lets the
    // compiler write the result in place instead of copying whole layouts.
    let mut shape = l.shape;
    let mut strides = l.strides;
    shape[d] = (e - s).div_ceil(step);
    strides[d] = strides[d].saturating_mul(step);
    Layout {
        shape,
        strides,
        offset: moved_offset(op, l, s, l.strides[d]),
    }
}

/// `l.offset + k * stride`, checked: a panic naming `op` if it overflows
/// (only an empty view, whose strides may be anything, can get there).
#[track_caller]
fn moved_offset(op: &str, l: &Layout, k: usize, stride: usize) -> usize {
    match k.checked_mul(stride).and_then(|x| x.checked_add(l.offset)) {
        Some(o) => o,
        None => panic!(
            "funcz: {op}: storage offset overflow: offset {} + {k} * stride {stride} (tensor of \
             shape {:?}, strides {:?})",
            l.offset,
            &l.shape[..],
            &l.strides[..]
        ),
    }
}

/// The `(start, end)` that `narrow(dim, start, length)` covers on
/// dimension `dim`, after wrapping a negative `start`; `narrow` is
/// `slice(dim, start, end, 1)` with these bounds. Panics like PyTorch when
/// the window does not fit.
///
/// ```
/// use funcz_runtime::Layout;
/// use funcz_runtime::view::shape::narrow_bounds;
/// assert_eq!(narrow_bounds("narrow", &Layout::contiguous(&[5]), 0, -3, 2), (2, 4));
/// ```
#[track_caller]
pub fn narrow_bounds(op: &str, l: &Layout, dim: i64, start: i64, length: i64) -> (usize, usize) {
    let (_, s, e) = narrow_window(op, l, dim, start, length);
    (s, e)
}

/// [`narrow_bounds`] with the wrapped dimension: `(dim, start, end)`.
#[track_caller]
pub(crate) fn narrow_window(
    op: &str,
    l: &Layout,
    dim: i64,
    start: i64,
    length: i64,
) -> (usize, usize, usize) {
    non_scalar(op, l);
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    let size = l.shape[d] as i64;
    if length < 0 {
        panic!(
            "funcz: {op}: length must be non-negative, got length {length} for a tensor of \
             shape {:?}",
            &l.shape[..]
        );
    }
    if start < -size || start > size {
        panic!(
            "funcz: {op}: start out of range (expected to be in range of [{}, {size}], but got \
             {start}) for dimension {d} of a tensor of shape {:?}",
            -size,
            &l.shape[..]
        );
    }
    let s = if start < 0 { start + size } else { start };
    if s > size - length {
        panic!(
            "funcz: {op}: start ({s}) + length ({length}) exceeds dimension size ({size}) of \
             dimension {d} of a tensor of shape {:?}",
            &l.shape[..]
        );
    }
    (d, s as usize, (s + length) as usize)
}

/// Layout of the window `[s, e)` of dimension `d` of `l`, bounds already
/// checked ([`narrow_window`]): `slice(d, s, e, 1)` without checking
/// them again.
#[track_caller]
pub(crate) fn window_layout(op: &str, l: &Layout, d: usize, s: usize, e: usize) -> Layout {
    let mut shape = l.shape;
    shape[d] = e - s;
    Layout {
        shape,
        strides: l.strides,
        offset: moved_offset(op, l, s, l.strides[d]),
    }
}

/// Layout of `narrow(dim, start, length)`.
#[track_caller]
pub fn narrow_layout(op: &str, l: &Layout, dim: i64, start: i64, length: i64) -> Layout {
    let (d, s, e) = narrow_window(op, l, dim, start, length);
    window_layout(op, l, d, s, e)
}

/// Wraps a possibly negative `index` along `dim` for `select`, panicking
/// like PyTorch when it is out of range. Returns `(dim, index)`.
#[track_caller]
pub fn select_index(op: &str, l: &Layout, dim: i64, index: i64) -> (usize, usize) {
    non_scalar(op, l);
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    let size = l.shape[d] as i64;
    if index < -size || index >= size {
        panic!(
            "funcz: {op}: index {index} out of range for tensor of size {:?} at dimension {d}",
            &l.shape[..]
        );
    }
    let i = if index < 0 { index + size } else { index };
    (d, i as usize)
}

/// Layout of `select(dim, index)`: dimension `dim` is removed.
#[track_caller]
pub fn select_layout(op: &str, l: &Layout, dim: i64, index: i64) -> Layout {
    let (d, i) = select_index(op, l, dim, index);
    let mut out = *l;
    out.offset = moved_offset(op, l, i, l.strides[d]);
    out.shape.remove(d);
    out.strides.remove(d);
    out
}

/// Layout of `diagonal(offset, dim1, dim2)`: both dims are removed and the
/// diagonal is appended as the last dim. An offset past either edge gives
/// an empty diagonal (and leaves the storage offset alone).
#[track_caller]
pub fn diagonal_layout(op: &str, l: &Layout, offset: i64, dim1: i64, dim2: i64) -> Layout {
    let d1 = wrap_dim(op, dim1, l.ndim(), &l.shape);
    let d2 = wrap_dim(op, dim2, l.ndim(), &l.shape);
    if d1 == d2 {
        panic!(
            "funcz: {op}: diagonal dimensions cannot be identical {dim1}, {dim2} (tensor of \
             shape {:?})",
            &l.shape[..]
        );
    }
    let (n1, n2) = (l.shape[d1] as i64, l.shape[d2] as i64);
    let diag = if offset >= 0 {
        n1.min(n2.saturating_sub(offset)).max(0)
    } else {
        n1.saturating_add(offset).min(n2).max(0)
    } as usize;
    let mut out = *l;
    if diag > 0 {
        if offset >= 0 {
            out.offset = moved_offset(op, l, offset as usize, l.strides[d2]);
        } else {
            out.offset = moved_offset(op, l, offset.unsigned_abs() as usize, l.strides[d1]);
        }
    }
    let (hi, lo) = (d1.max(d2), d1.min(d2));
    out.shape.remove(hi);
    out.shape.remove(lo);
    out.strides.remove(hi);
    out.strides.remove(lo);
    out.shape.push(diag);
    out.strides
        .push(l.strides[d1].saturating_add(l.strides[d2]));
    out
}

// ---------------------------------------------------------------------------
// size-1 dimensions

/// Layout of `squeeze()`: every size-1 dim removed. Never fails (`op` is
/// taken for uniformity).
#[track_caller]
pub fn squeeze_layout(op: &str, l: &Layout) -> Layout {
    let _ = op;
    let mut out = Layout {
        shape: Dims::new(),
        strides: Dims::new(),
        offset: l.offset,
    };
    for (&n, &s) in l.shape.iter().zip(l.strides.iter()) {
        if n != 1 {
            out.shape.push(n);
            out.strides.push(s);
        }
    }
    out
}

/// Layout of `squeeze_dim(dim)`: dim removed if its size is 1, else
/// unchanged.
#[track_caller]
pub fn squeeze_dim_layout(op: &str, l: &Layout, dim: i64) -> Layout {
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    let mut out = *l;
    if l.ndim() > 0 && l.shape[d] == 1 {
        out.shape.remove(d);
        out.strides.remove(d);
    }
    out
}

/// Layout of `unsqueeze(dim)` (`dim` in `-(n+1)..=n`): a size-1 dim is
/// inserted, with stride `size * stride` of the dim it precedes (1 at the
/// end), as PyTorch.
#[track_caller]
pub fn unsqueeze_layout(op: &str, l: &Layout, dim: i64) -> Layout {
    let d = wrap_dim(op, dim, l.ndim() + 1, &l.shape);
    check_rank(op, l.ndim() + 1, &"one more dim");
    let stride = if d >= l.ndim() {
        1
    } else {
        // The new dim has size 1, so its stride only has to be defined.
        l.shape[d].saturating_mul(l.strides[d])
    };
    let mut out = *l;
    out.shape.insert(d, 1);
    out.strides.insert(d, stride);
    out
}

// ---------------------------------------------------------------------------
// overlapping views

/// Layout of `expand(shape)`: `-1` keeps an existing dim, new leading dims
/// and expanded size-1 dims get stride 0 (PyTorch's `inferExpandGeometry`).
#[track_caller]
pub fn expand_layout(op: &str, l: &Layout, shape: &[i64]) -> Layout {
    let ndim = shape.len();
    let tdim = l.ndim();
    check_rank(op, ndim, &shape);
    if ndim < tdim {
        panic!(
            "funcz: {op}: the number of sizes provided ({ndim}) must be greater or equal to the \
             number of dimensions in the tensor ({tdim}): size {shape:?}, tensor shape {:?}",
            &l.shape[..]
        );
    }
    let mut sizes = Dims::from_slice(&vec![0; ndim]);
    let mut strides = Dims::from_slice(&vec![0; ndim]);
    for i in (0..ndim).rev() {
        let existing = (i + tdim).checked_sub(ndim);
        let (mut size, mut stride) = match existing {
            Some(d) => (l.shape[d], l.strides[d]),
            None if tdim == 0 => (1, 0),
            None if i + 1 < ndim => (1, sizes[i + 1].saturating_mul(strides[i + 1])),
            None => (1, 1),
        };
        let mut target = shape[i];
        if target == -1 {
            if existing.is_none() {
                panic!(
                    "funcz: {op}: the expanded size of the tensor (-1) isn't allowed in a \
                     leading, non-existing dimension {i}: size {shape:?}, tensor shape {:?}",
                    &l.shape[..]
                );
            }
            target = size as i64;
        }
        if target < 0 {
            panic!(
                "funcz: {op}: invalid expanded size {target} at dimension {i}: size {shape:?}, \
                 tensor shape {:?}",
                &l.shape[..]
            );
        }
        let target = target as usize;
        if size != target {
            if size != 1 {
                panic!(
                    "funcz: {op}: the expanded size of the tensor ({target}) must match the \
                     existing size ({size}) at non-singleton dimension {i}. Target sizes: \
                     {shape:?}. Tensor sizes: {:?}",
                    &l.shape[..]
                );
            }
            size = target;
            stride = 0;
        }
        sizes[i] = size;
        strides[i] = stride;
    }
    crate::storage::checked_view_numel(op, &sizes);
    Layout {
        shape: sizes,
        strides,
        offset: l.offset,
    }
}

/// Layout of `unfold(dim, size, step)`: windows of `size` elements every
/// `step` along `dim`, as a new last dim.
#[track_caller]
pub fn unfold_layout(op: &str, l: &Layout, dim: i64, size: i64, step: i64) -> Layout {
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    check_rank(op, l.ndim() + 1, &"one more dim");
    let max = if l.ndim() == 0 { 1 } else { l.shape[d] } as i64;
    if size < 0 || size > max {
        panic!(
            "funcz: {op}: maximum size for tensor at dimension {d} is {max} but size is {size} \
             (tensor shape {:?})",
            &l.shape[..]
        );
    }
    if step < 1 {
        panic!(
            "funcz: {op}: step is {step} but must be > 0 (tensor shape {:?})",
            &l.shape[..]
        );
    }
    let mut out = *l;
    if l.ndim() == 0 {
        out.shape.push(size as usize);
        out.strides.push(1);
        return out;
    }
    // The window stride is step * stride in int64, as PyTorch: a product
    // that wraps negative is refused (PyTorch: "Negative strides are not
    // supported"); one that wraps positive only happens with a single
    // window (step past the size), whose stride is never used.
    let stride = step.wrapping_mul(l.strides[d] as i64);
    if stride < 0 {
        panic!(
            "funcz: {op}: the window stride step {step} x stride {} of dimension {d} overflows \
             int64 to the negative stride {stride} (tensor shape {:?})",
            l.strides[d],
            &l.shape[..]
        );
    }
    let stride = stride as usize;
    out.shape[d] = ((max - size) / step + 1) as usize;
    out.strides[d] = stride;
    out.shape.push(size as usize);
    out.strides.push(l.strides[d]);
    crate::storage::checked_view_numel(op, &out.shape);
    out
}

/// Layout of `as_strided(size, stride, storage_offset)` on a storage of
/// `storage_len` elements. The offset is absolute (not relative to the
/// input's offset), as in PyTorch; the layout must stay inside the storage.
#[track_caller]
pub fn as_strided_layout(
    op: &str,
    storage_len: usize,
    size: &[i64],
    stride: &[i64],
    storage_offset: i64,
) -> Layout {
    if size.len() != stride.len() {
        panic!(
            "funcz: {op}: mismatch in length of strides and shape: size {size:?}, stride {stride:?}"
        );
    }
    check_rank(op, size.len(), &size);
    if let Some(&n) = size.iter().find(|&&n| n < 0) {
        panic!("funcz: {op}: trying to create tensor with negative dimension {n}: size {size:?}");
    }
    if let Some(&s) = stride.iter().find(|&&s| s < 0) {
        panic!(
            "funcz: {op}: negative strides are not supported, got stride {s} in {stride:?} \
             (size {size:?})"
        );
    }
    if storage_offset < 0 {
        panic!(
            "funcz: {op}: invalid storage offset {storage_offset} (size {size:?}, stride {stride:?})"
        );
    }
    let shape: Dims = size.iter().map(|&n| n as usize).collect();
    let strides: Dims = stride.iter().map(|&s| s as usize).collect();
    let l = Layout {
        shape,
        strides,
        offset: storage_offset as usize,
    };
    if l.shape.contains(&0) {
        crate::storage::checked_view_numel(op, &l.shape);
        return l;
    }
    // One past the last element, without overflowing on absurd inputs.
    let end = l
        .shape
        .iter()
        .zip(l.strides.iter())
        .try_fold(l.offset, |acc, (&n, &s)| {
            (n - 1).checked_mul(s).and_then(|x| acc.checked_add(x))
        })
        .and_then(|x| x.checked_add(1));
    match end {
        Some(end) if end <= storage_len => {
            // In bounds with stride 0 (PyTorch checks the storage first).
            crate::storage::checked_view_numel(op, &l.shape);
            l
        }
        _ => panic!(
            "funcz: {op}: size {size:?}, stride {stride:?} and storage offset {storage_offset} \
             need a storage of {} elements, out of bounds for a storage of {storage_len} elements",
            end.map_or_else(|| "too many".to_string(), |e| e.to_string())
        ),
    }
}

// ---------------------------------------------------------------------------
// multi-output views

/// The `(start, end)` windows along the wrapped `dim` of
/// `split(split_size, dim)`: chunks of `split_size`, the last one smaller;
/// at least one chunk. Returns `(dim, windows)`; output `k` is
/// `slice(dim, start_k, end_k, 1)`, which is also its scatter inverse.
#[track_caller]
pub fn split_bounds(
    op: &str,
    l: &Layout,
    split_size: i64,
    dim: i64,
) -> (usize, Vec<(usize, usize)>) {
    if l.ndim() == 0 {
        panic!("funcz: {op}: split expects at least a 1-dimensional tensor (shape [])");
    }
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    if split_size < 0 {
        panic!(
            "funcz: {op}: split expects split_size be non-negative, but got \
             split_size={split_size} (tensor shape {:?})",
            &l.shape[..]
        );
    }
    let n = l.shape[d];
    let s = split_size as usize;
    if s == 0 && n != 0 {
        panic!(
            "funcz: {op}: split_size can only be 0 if dimension size is 0, but got dimension \
             size of {n} (tensor shape {:?}, dim {d})",
            &l.shape[..]
        );
    }
    let count = if s == 0 { 1 } else { n.div_ceil(s).max(1) };
    let mut windows = crate::storage::reserve_items(op, &l.shape, count);
    // k * s < n for every k < count, and (k + 1) * s may pass usize only
    // for the last window, which ends at n.
    windows.extend((0..count).map(|k| (k * s, (k * s).saturating_add(s).min(n))));
    (d, windows)
}

/// Layouts of `split(split_size, dim)`.
#[track_caller]
pub fn split_layouts(op: &str, l: &Layout, split_size: i64, dim: i64) -> Vec<Layout> {
    let (d, windows) = split_bounds(op, l, split_size, dim);
    let mut out = crate::storage::reserve_items(op, &l.shape, windows.len());
    out.extend(
        windows
            .into_iter()
            .map(|(s, e)| slice_layout(op, l, d as i64, s as i64, e as i64, 1)),
    );
    out
}

/// The `split_size` that `chunk(chunks, dim)` uses: `ceil(size / chunks)`
/// (so chunk may return fewer than `chunks` pieces, as PyTorch).
#[track_caller]
pub fn chunk_split_size(op: &str, l: &Layout, chunks: i64, dim: i64) -> usize {
    if l.ndim() == 0 {
        panic!("funcz: {op}: chunk expects at least a 1-dimensional tensor (shape [])");
    }
    if chunks <= 0 {
        panic!(
            "funcz: {op}: chunk expects `chunks` to be greater than 0, got: {chunks} (tensor \
             shape {:?})",
            &l.shape[..]
        );
    }
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    l.shape[d].div_ceil(chunks as usize)
}

/// Layouts of `chunk(chunks, dim)`: `split(ceil(size / chunks), dim)`,
/// except that a dimension of size 0 gives `chunks` empty pieces.
#[track_caller]
pub fn chunk_layouts(op: &str, l: &Layout, chunks: i64, dim: i64) -> Vec<Layout> {
    let s = chunk_split_size(op, l, chunks, dim);
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    if l.shape[d] == 0 {
        let piece = slice_layout(op, l, d as i64, 0, 0, 1);
        let mut out = crate::storage::reserve_items(op, &l.shape, chunks as usize);
        out.resize(chunks as usize, piece);
        return out;
    }
    split_layouts(op, l, s as i64, dim)
}

/// Layouts of `unbind(dim)`: `select(dim, k)` for every `k`.
#[track_caller]
pub fn unbind_layouts(op: &str, l: &Layout, dim: i64) -> Vec<Layout> {
    if l.ndim() == 0 {
        panic!("funcz: {op}: dimension specified as {dim} but tensor has no dimensions");
    }
    let d = wrap_dim(op, dim, l.ndim(), &l.shape);
    let mut out = crate::storage::reserve_items(op, &l.shape, l.shape[d]);
    out.extend((0..l.shape[d]).map(|k| select_layout(op, l, d as i64, k as i64)));
    out
}

// ---------------------------------------------------------------------------
// in-place resize

/// Layout after `resize_(shape)`: contiguous strides at the same storage
/// offset, or the layout unchanged when the sizes are the same (PyTorch's
/// `resize_` keeps a transposed tensor's strides then). The storage must
/// then hold at least `storage_end()` elements.
#[track_caller]
pub fn resize_layout(op: &str, l: &Layout, shape: &[i64]) -> Layout {
    if l.shape.iter().map(|&d| d as i64).eq(shape.iter().copied()) {
        return *l;
    }
    if let Some(&n) = shape.iter().find(|&&n| n < 0) {
        panic!(
            "funcz: {op}: trying to create tensor with negative dimension {n}: {shape:?} (tensor \
             shape {:?})",
            &l.shape[..]
        );
    }
    check_rank(op, shape.len(), &shape);
    let shape: Dims = shape.iter().map(|&n| n as usize).collect();
    crate::storage::checked_numel(op, &shape);
    Layout {
        shape,
        strides: contiguous_strides(&shape),
        offset: l.offset,
    }
}
