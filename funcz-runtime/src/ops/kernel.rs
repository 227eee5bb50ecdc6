//! The elementwise engine shared by all ops: lock handling, broadcasting,
//! a contiguous fast path on plain slices, and a strided path on ndarray
//! `Zip`.
//!
//! Locking rules (see the contract): a storage is locked at most once per
//! op (tensors that share a storage share one guard), several storages are
//! locked in address order (so two threads can never wait on each other),
//! and a destination is never written while a guard on its own storage is
//! held for reading: an operand that shares the destination's storage is
//! first copied out ("read fully before any write").

use std::sync::{Arc, RwLockReadGuard};

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn, Zip};

use crate::dims::Dims;
use crate::element::Element;
use crate::layout::{Layout, broadcast_layout, broadcast_shapes};
use crate::storage::Storage;
use crate::tensor::{Tensor, array_view, array_view_mut};

use super::operand::OperandRef;

// ---------------------------------------------------------------------------
// locking

/// The address of a tensor's storage, used to order lock acquisition.
#[inline]
fn storage_addr<T: Element>(storage: &Arc<Storage<T>>) -> usize {
    Arc::as_ptr(storage) as *const () as usize
}

/// Runs `f` with the element buffers of `ts`, read-locking each distinct
/// storage exactly once, in address order.
pub(crate) fn with_reads<T: Element, R, const N: usize>(
    ts: [&Tensor<T>; N],
    f: impl FnOnce([&[T]; N]) -> R,
) -> R {
    let mut order: [usize; N] = std::array::from_fn(|i| i);
    order.sort_unstable_by_key(|&i| storage_addr(&ts[i].storage));
    let mut guards: Vec<RwLockReadGuard<'_, Vec<T>>> = Vec::with_capacity(N);
    let mut slot = [0usize; N];
    let mut last = None;
    for &i in &order {
        let a = storage_addr(&ts[i].storage);
        if last != Some(a) {
            guards.push(ts[i].storage.read());
            last = Some(a);
        }
        slot[i] = guards.len() - 1;
    }
    let slices: [&[T]; N] = std::array::from_fn(|i| guards[slot[i]].as_slice());
    f(slices)
}

/// Runs `f` with `dst`'s buffer write-locked (bumping its version) and
/// `src`'s buffer read-locked, in address order. The storages must differ.
fn with_write_read<T: Element, R>(
    dst: &Tensor<T>,
    src: &Tensor<T>,
    f: impl FnOnce(&mut [T], &[T]) -> R,
) -> R {
    debug_assert!(!dst.same_storage(src));
    if storage_addr(&dst.storage) < storage_addr(&src.storage) {
        let mut w = dst.storage.write();
        let r = src.storage.read();
        f(&mut w, &r)
    } else {
        let r = src.storage.read();
        let mut w = dst.storage.write();
        f(&mut w, &r)
    }
}

// ---------------------------------------------------------------------------
// checks

/// Panics if `layout` has two indices reaching one storage element (an
/// in-place op could not give a defined result).
pub(crate) fn check_writable(op: &str, layout: &Layout) {
    if layout.has_internal_overlap() {
        panic!(
            "funcz: {op}: unsupported operation: more than one element of the written-to tensor \
             refers to a single memory location (shape {:?}, strides {:?}). Please clone() the \
             tensor before performing the operation.",
            &layout.shape[..],
            &layout.strides[..]
        );
    }
}

/// Panics unless a result of shape `result` can be written into `dst`
/// (they must be equal).
pub(crate) fn check_result_shape(op: &str, dst: &[usize], result: &[usize]) {
    if dst != result {
        panic!(
            "funcz: {op}: output with shape {dst:?} doesn't match the broadcast shape {result:?}"
        );
    }
}

/// Panics unless `src` broadcasts to exactly `dst` (the rule for the
/// operands of in-place ops and for `copy_`).
pub(crate) fn check_broadcast_into(op: &str, dst: &[usize], src: &[usize]) {
    if dst != src {
        let b = broadcast_shapes(op, dst, src);
        check_result_shape(op, dst, &b);
    }
}

/// True if ndarray accepts `layout` as a mutable view (its test is a
/// sufficient one: interleaved but disjoint layouts are refused).
fn ndarray_accepts_mut(layout: &Layout) -> bool {
    let mut by_stride = [(0usize, 0usize); crate::dims::MAX_DIMS];
    let mut k = 0;
    for (&n, &s) in layout.shape.iter().zip(layout.strides.iter()) {
        if n > 1 {
            by_stride[k] = (s, n);
            k += 1;
        }
    }
    let dims = &mut by_stride[..k];
    dims.sort_unstable();
    let mut span = 0usize;
    for &(s, n) in dims.iter() {
        if s <= span {
            return false;
        }
        span += s * (n - 1);
    }
    true
}

// ---------------------------------------------------------------------------
// out-of-place kernels (fresh row-major outputs)

/// A mutable row-major view of a fresh output buffer.
fn out_view<'a, T>(out: &'a mut [T], shape: &[usize]) -> ArrayViewMutD<'a, T> {
    ArrayViewMutD::from_shape(IxDyn(shape), out).expect("funcz: internal: output buffer size")
}

/// A read view of `layout` inside `data`, broadcast to `shape`.
fn broadcast_view<'a, T>(data: &'a [T], layout: &Layout, shape: &[usize]) -> ArrayViewD<'a, T> {
    let l = broadcast_layout(layout, shape).expect("funcz: internal: shapes were checked");
    array_view(data, &l)
}

/// `f` of every element of `layout` in `data`, in row-major order.
#[inline]
fn map_layout<T: Element, F: Fn(T) -> T>(data: &[T], layout: &Layout, f: F) -> Vec<T> {
    let n = layout.numel();
    if layout.is_contiguous() {
        let o = layout.offset;
        data[o..o + n].iter().map(|&x| f(x)).collect()
    } else if n == 0 {
        Vec::new()
    } else {
        let mut out = vec![T::zero(); n];
        Zip::from(out_view(&mut out, &layout.shape))
            .and(array_view(data, layout))
            .for_each(|o, &x| *o = f(x));
        out
    }
}

/// `f` of every element of `a`, row-major.
pub(crate) fn unary_values<T: Element, F: Fn(T) -> T>(a: &Tensor<T>, f: F) -> Vec<T> {
    let data = a.storage.read();
    map_layout(&data, &a.layout, f)
}

/// A fresh contiguous tensor holding `f` of every element of `a`.
pub(crate) fn unary<T: Element, F: Fn(T) -> T>(a: &Tensor<T>, f: F) -> Tensor<T> {
    Tensor::from_contiguous(unary_values(a, f), a.shape())
}

/// The broadcast shape of the op's operands.
pub(crate) fn result_shape<T: Element>(op: &str, a: &Tensor<T>, b: &OperandRef<'_, T>) -> Dims {
    match b {
        OperandRef::Scalar(_) => a.layout.shape,
        OperandRef::Tensor(b) if a.shape() == b.shape() => a.layout.shape,
        OperandRef::Tensor(b) => broadcast_shapes(op, a.shape(), b.shape()),
    }
}

/// `f(a, b)` elementwise with broadcasting, row-major, with its shape.
pub(crate) fn binary_values<T: Element, F: Fn(T, T) -> T>(
    op: &str,
    a: &Tensor<T>,
    b: OperandRef<'_, T>,
    f: F,
) -> (Vec<T>, Dims) {
    let shape = result_shape(op, a, &b);
    let b = match b {
        OperandRef::Scalar(s) => return (unary_values(a, |x| f(x, s)), shape),
        OperandRef::Tensor(b) => b,
    };
    let (la, lb) = (&a.layout, &b.layout);
    let vals = with_reads([a, b], |[da, db]| {
        let n = shape.iter().product::<usize>();
        if n == 0 {
            Vec::new()
        } else if la.shape == shape && lb.shape == shape && la.is_contiguous() && lb.is_contiguous()
        {
            let sa = &da[la.offset..la.offset + n];
            let sb = &db[lb.offset..lb.offset + n];
            sa.iter().zip(sb).map(|(&x, &y)| f(x, y)).collect()
        } else if lb.numel() == 1 && la.shape == shape {
            let y = db[lb.offset];
            map_layout(da, la, |x| f(x, y))
        } else if la.numel() == 1 && lb.shape == shape {
            let x = da[la.offset];
            map_layout(db, lb, |y| f(x, y))
        } else {
            let mut out = vec![T::zero(); n];
            Zip::from(out_view(&mut out, &shape))
                .and(broadcast_view(da, la, &shape))
                .and(broadcast_view(db, lb, &shape))
                .for_each(|o, &x, &y| *o = f(x, y));
            out
        }
    });
    (vals, shape)
}

/// A fresh contiguous tensor holding `f(a, b)` with broadcasting.
pub(crate) fn binary<T: Element, F: Fn(T, T) -> T>(
    op: &str,
    a: &Tensor<T>,
    b: OperandRef<'_, T>,
    f: F,
) -> Tensor<T> {
    let (vals, shape) = binary_values(op, a, b, f);
    Tensor::from_contiguous(vals, &shape)
}

/// `f(a, b, c)` elementwise with broadcasting, row-major, with its shape.
pub(crate) fn ternary_values<T: Element, F: Fn(T, T, T) -> T>(
    op: &str,
    a: &Tensor<T>,
    b: &Tensor<T>,
    c: &Tensor<T>,
    f: F,
) -> (Vec<T>, Dims) {
    let shape = broadcast_shapes(op, &broadcast_shapes(op, a.shape(), b.shape()), c.shape());
    let (la, lb, lc) = (&a.layout, &b.layout, &c.layout);
    let n = shape.iter().product::<usize>();
    let vals = with_reads([a, b, c], |[da, db, dc]| {
        let plain = |l: &Layout| l.shape == shape && l.is_contiguous();
        if n == 0 {
            Vec::new()
        } else if plain(la) && plain(lb) && plain(lc) {
            let sa = &da[la.offset..la.offset + n];
            let sb = &db[lb.offset..lb.offset + n];
            let sc = &dc[lc.offset..lc.offset + n];
            sa.iter()
                .zip(sb)
                .zip(sc)
                .map(|((&x, &y), &z)| f(x, y, z))
                .collect()
        } else {
            let mut out = vec![T::zero(); n];
            Zip::from(out_view(&mut out, &shape))
                .and(broadcast_view(da, la, &shape))
                .and(broadcast_view(db, lb, &shape))
                .and(broadcast_view(dc, lc, &shape))
                .for_each(|o, &x, &y, &z| *o = f(x, y, z));
            out
        }
    });
    (vals, shape)
}

// ---------------------------------------------------------------------------
// in-place kernels (write into an existing buffer)

/// `x = f(x)` for every element of `layout` in `data`. The layout must not
/// overlap itself.
#[inline]
pub(crate) fn apply_unary<T: Element, F: Fn(T) -> T>(data: &mut [T], layout: &Layout, f: F) {
    let n = layout.numel();
    if n == 0 {
        return;
    }
    if layout.is_contiguous() {
        let o = layout.offset;
        for x in &mut data[o..o + n] {
            *x = f(*x);
        }
    } else if ndarray_accepts_mut(layout) {
        array_view_mut(data, layout).map_inplace(|x| *x = f(*x));
    } else {
        for off in layout.offsets() {
            data[off] = f(data[off]);
        }
    }
}

/// `x = f(x, y)` for every element `x` of `dl` in `d`, with `y` the
/// matching element of `sl` in `s` broadcast to `dl`'s shape. `dl` must not
/// overlap itself and `sl` must broadcast to it.
#[inline]
pub(crate) fn apply_binary<T: Element, F: Fn(T, T) -> T>(
    d: &mut [T],
    dl: &Layout,
    s: &[T],
    sl: &Layout,
    f: F,
) {
    let n = dl.numel();
    if n == 0 {
        return;
    }
    if dl.shape == sl.shape && dl.is_contiguous() && sl.is_contiguous() {
        let (o, so) = (dl.offset, sl.offset);
        for (x, &y) in d[o..o + n].iter_mut().zip(&s[so..so + n]) {
            *x = f(*x, y);
        }
    } else if sl.numel() == 1 {
        let y = s[sl.offset];
        apply_unary(d, dl, |x| f(x, y));
    } else {
        let bl = broadcast_layout(sl, &dl.shape).expect("funcz: internal: shapes were checked");
        if ndarray_accepts_mut(dl) {
            Zip::from(array_view_mut(d, dl))
                .and(array_view(s, &bl))
                .for_each(|x, &y| *x = f(*x, y));
        } else {
            for (off, soff) in dl.offsets().zip(bl.offsets()) {
                d[off] = f(d[off], s[soff]);
            }
        }
    }
}

/// In-place `x = f(x)` on `dst`: checks overlap, takes the write lock once
/// (bumping the version) and runs the kernel.
pub(crate) fn inplace_unary<T: Element, F: Fn(T) -> T>(op: &str, dst: &Tensor<T>, f: F) {
    check_writable(op, &dst.layout);
    if !dst.layout.is_contiguous() && ndarray_accepts_mut(&dst.layout) {
        dst.with_array_mut(|mut a| a.map_inplace(|x| *x = f(*x)));
        return;
    }
    let mut data = dst.storage.write();
    apply_unary(&mut data, &dst.layout, f);
}

/// In-place `x = f(x, y)` on `dst` with `src` broadcast to `dst`'s shape.
/// An operand sharing `dst`'s storage is copied out first, unless it is
/// exactly `dst` (then each element is read just before it is written).
pub(crate) fn inplace_binary<T: Element, F: Fn(T, T) -> T>(
    op: &str,
    dst: &Tensor<T>,
    src: OperandRef<'_, T>,
    f: F,
) {
    check_writable(op, &dst.layout);
    let src = match src {
        OperandRef::Scalar(y) => {
            let mut data = dst.storage.write();
            apply_unary(&mut data, &dst.layout, |x| f(x, y));
            return;
        }
        OperandRef::Tensor(t) => t,
    };
    check_broadcast_into(op, dst.shape(), src.shape());
    if dst.same_storage(src) {
        if dst.layout == src.layout {
            let mut data = dst.storage.write();
            apply_unary(&mut data, &dst.layout, |x| f(x, x));
            return;
        }
        // Read the operand completely before the first write.
        let copy = Tensor::from_contiguous(src.to_vec(), src.shape());
        with_write_read(dst, &copy, |d, s| {
            apply_binary(d, &dst.layout, s, &copy.layout, f)
        });
        return;
    }
    with_write_read(dst, src, |d, s| {
        apply_binary(d, &dst.layout, s, &src.layout, f)
    });
}

/// Writes row-major `values` of shape `shape` (which must equal `dst`'s
/// shape) into `dst`: the second half of in-place ops computed
/// out-of-place first.
pub(crate) fn write_values<T: Element>(op: &str, dst: &Tensor<T>, values: &[T], shape: &[usize]) {
    check_writable(op, &dst.layout);
    check_result_shape(op, dst.shape(), shape);
    let src = Layout::contiguous(shape);
    let mut data = dst.storage.write();
    apply_binary(&mut data, &dst.layout, values, &src, |_, y| y);
}

// ---------------------------------------------------------------------------
// buffer donation (owned operands of `std::ops` operators)

/// True if `t` is the only handle to its storage and covers all of it
/// row-major with shape `shape`: an op consuming `t` may then write its
/// result into `t`'s buffer instead of allocating (nobody can observe it).
pub(crate) fn donatable<T: Element>(t: &Tensor<T>, shape: &[usize]) -> bool {
    Arc::strong_count(&t.storage) == 1
        && Arc::weak_count(&t.storage) == 0
        && t.layout.offset == 0
        && t.shape() == shape
        && t.layout.is_contiguous()
        && t.storage.len() == t.numel()
}

/// Computes `f(x, y)` into the buffer of `dst` (which must be
/// [`donatable`] for the result shape) and returns it as a fresh tensor.
pub(crate) fn binary_into_donated<T: Element, F: Fn(T, T) -> T>(
    dst: Tensor<T>,
    src: OperandRef<'_, T>,
    f: F,
) -> Tensor<T> {
    {
        let mut d = dst.storage.write_unversioned();
        match src {
            OperandRef::Scalar(y) => apply_unary(&mut d, &dst.layout, |x| f(x, y)),
            OperandRef::Tensor(s) => {
                // `dst` is the sole owner of its storage, so `s` uses another
                // one and no other thread can be waiting on `dst`'s lock.
                let r = s.storage.read();
                apply_binary(&mut d, &dst.layout, &r, &s.layout, f);
            }
        }
    }
    // Same storage, fresh identity: the result is a new value.
    dst.with_layout(dst.layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndarray_mut_check_matches_ndarray() {
        assert!(ndarray_accepts_mut(&Layout::contiguous(&[2, 3])));
        assert!(ndarray_accepts_mut(&Layout::new(&[3, 2], &[1, 3], 0)));
        assert!(ndarray_accepts_mut(&Layout::new(&[2, 1, 3], &[3, 0, 1], 0)));
        // Interleaved but disjoint: ndarray refuses it, the exact test accepts.
        let l = Layout::new(&[3, 2], &[2, 3], 0);
        assert!(!ndarray_accepts_mut(&l));
        assert!(!l.has_internal_overlap());
    }

    #[test]
    fn interleaved_layout_is_written_through_the_offsets_path() {
        // Storage 0..8, layout {0,3,2,5,4,7} row-major.
        let base = Tensor::<i64>::from_vec((0..8).collect(), &[8]);
        let v = base.with_layout(Layout::new(&[3, 2], &[2, 3], 0));
        let add = Tensor::from_vec(vec![100, 200], &[2]);
        inplace_binary("add_", &v, OperandRef::Tensor(&add), |x, y| x + y);
        assert_eq!(base.to_vec(), vec![100, 1, 102, 203, 104, 205, 6, 207]);
        inplace_unary("neg_", &v, |x| -x);
        assert_eq!(
            base.to_vec(),
            vec![-100, 1, -102, -203, -104, -205, 6, -207]
        );
    }

    #[test]
    fn reads_of_one_storage_share_a_guard() {
        let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let t = a.with_layout(Layout::new(&[2, 2], &[1, 2], 0));
        let n = with_reads([&a, &t, &a], |[x, y, z]| {
            assert!(std::ptr::eq(x, y) && std::ptr::eq(y, z));
            x.len()
        });
        assert_eq!(n, 4);
    }

    #[test]
    fn donation_needs_sole_ownership() {
        let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        assert!(donatable(&a, &[2]));
        assert!(!donatable(&a, &[1, 2]));
        let h = a.handle();
        assert!(!donatable(&a, &[2]));
        drop(h);
        let narrow = a.with_layout(Layout::new(&[1], &[1], 1));
        assert!(!donatable(&narrow, &[1]));
    }
}
