//! Reading a strided window of a storage into a fresh row-major buffer, and
//! writing a tensor's elements into a window of a buffer (the kernels of
//! the `*_copy` and `*_scatter` ops).

use crate::element::Scalar;
use crate::layout::Layout;
use crate::storage::huge;
use crate::tensor::Tensor;

/// The elements of `layout` inside `data`, row-major. Copies whole rows
/// when the innermost stride is 1.
pub(crate) fn gather_from<T: Scalar>(data: &[T], layout: &Layout) -> Vec<T> {
    let mut out = huge::with_capacity(layout.numel());
    append_from(&mut out, data, layout);
    out
}

/// Appends the elements of `layout` inside `data` to `out`, row-major: one
/// slice copy when it is contiguous, else row by row (whole rows when the
/// innermost stride is 1).
pub(crate) fn append_from<T: Scalar>(out: &mut Vec<T>, data: &[T], layout: &Layout) {
    let n = layout.numel();
    if n == 0 {
        return;
    }
    if layout.is_contiguous() {
        out.extend_from_slice(&data[layout.offset..layout.offset + n]);
        return;
    }
    let nd = layout.ndim();
    let (inner, stride) = (layout.shape[nd - 1], layout.strides[nd - 1]);
    let rows = Layout::new(
        &layout.shape[..nd - 1],
        &layout.strides[..nd - 1],
        layout.offset,
    );
    for start in rows.offsets() {
        if stride == 1 {
            out.extend_from_slice(&data[start..start + inner]);
        } else {
            out.extend((0..inner).map(|k| data[start + k * stride]));
        }
    }
}

/// A fresh contiguous tensor holding the elements of `layout` in `t`'s
/// storage.
pub(crate) fn materialize<T: Scalar>(t: &Tensor<T>, layout: &Layout) -> Tensor<T> {
    let data = {
        let guard = t.storage.read();
        gather_from(&guard, layout)
    };
    Tensor::from_contiguous(data, &layout.shape)
}

/// Writes `values` (row-major, one per element of `window`) into the
/// storage positions of `window` inside `dst`. The window must not
/// overlap itself.
pub(crate) fn scatter_into<T: Scalar>(dst: &mut [T], window: &Layout, values: &[T]) {
    debug_assert_eq!(window.numel(), values.len());
    if values.is_empty() {
        return;
    }
    if window.is_contiguous() {
        dst[window.offset..window.offset + values.len()].copy_from_slice(values);
        return;
    }
    for (pos, &v) in window.offsets().zip(values) {
        dst[pos] = v;
    }
}
