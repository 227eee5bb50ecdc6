//! The elementwise engine shared by all ops: lock handling, broadcasting,
//! a contiguous fast path on plain slices, and a strided path that walks
//! merged dimensions row by row ([`Walk`]), each row a plain slice loop
//! that LLVM vectorizes when its operands have stride 0 or 1.
//!
//! Locking rules (see the contract): a storage is locked at most once per
//! op (tensors that share a storage share one guard), several storages are
//! locked in address order (so two threads can never wait on each other),
//! and a destination is never written while a guard on its own storage is
//! held for reading: an operand that shares the destination's storage is
//! first copied out ("read fully before any write").

use std::sync::{Arc, RwLockReadGuard};

use crate::dims::{Dims, MAX_DIMS};
use crate::element::Element;
use crate::layout::{Layout, broadcast_layout, broadcast_shapes};
use crate::storage::{Storage, huge};
use crate::tensor::Tensor;

use super::operand::OperandRef;

pub(crate) mod wide;

/// The `W` argument of the kernels: the contiguous loops may run their
/// AVX2 copy ([`wide`]).
const WIDE: bool = true;
/// The `W` argument of the kernels: baseline loops only (for kernels that
/// may return their own element unchanged; see [`wide`]).
const BASE: bool = false;

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
    // One guard per distinct storage, in the slot of its first tensor (no
    // allocation: this runs once per op).
    let mut guards: [Option<RwLockReadGuard<'_, Vec<T>>>; N] = std::array::from_fn(|_| None);
    let mut slot = [0usize; N];
    let mut last: Option<(usize, usize)> = None;
    for &i in &order {
        let a = storage_addr(&ts[i].storage);
        match last {
            Some((addr, j)) if addr == a => slot[i] = j,
            _ => {
                guards[i] = Some(ts[i].storage.read());
                slot[i] = i;
                last = Some((a, i));
            }
        }
    }
    let slices: [&[T]; N] = std::array::from_fn(|i| match &guards[slot[i]] {
        Some(g) => g.as_slice(),
        None => unreachable!("funcz: internal: every tensor has a guard"),
    });
    f(slices)
}

/// Runs `f` with `dst`'s buffer write-locked (bumping its version once) and
/// the buffers of the tensors in `srcs` read-locked (an empty slice for
/// `None`), each distinct storage locked once, all in address order. No
/// tensor of `srcs` may share `dst`'s storage.
fn with_write_reads<T: Element, R, const N: usize>(
    dst: &Tensor<T>,
    srcs: [Option<&Tensor<T>>; N],
    f: impl FnOnce(&mut [T], [&[T]; N]) -> R,
) -> R {
    // Index N stands for `dst`.
    let addr = |i: usize| -> usize {
        if i == N {
            storage_addr(&dst.storage)
        } else {
            srcs[i].map_or(0, |t| storage_addr(&t.storage))
        }
    };
    let mut order = [0usize; 3];
    let order = &mut order[..=N];
    for (k, o) in order.iter_mut().enumerate() {
        *o = k;
    }
    order.sort_unstable_by_key(|&i| addr(i));
    let mut write = None;
    let mut guards: [Option<RwLockReadGuard<'_, Vec<T>>>; N] = std::array::from_fn(|_| None);
    let mut slot = [0usize; N];
    let mut last: Option<(usize, usize)> = None;
    for &i in order.iter() {
        if i == N {
            write = Some(dst.storage.write());
            continue;
        }
        let Some(t) = srcs[i] else { continue };
        let a = storage_addr(&t.storage);
        debug_assert_ne!(a, storage_addr(&dst.storage));
        match last {
            Some((addr, j)) if addr == a => slot[i] = j,
            _ => {
                guards[i] = Some(t.storage.read());
                slot[i] = i;
                last = Some((a, i));
            }
        }
    }
    let slices: [&[T]; N] = std::array::from_fn(|i| match (srcs[i], &guards[slot[i]]) {
        (Some(_), Some(g)) => g.as_slice(),
        _ => &[],
    });
    let mut w = write.expect("funcz: internal: the destination is locked");
    f(&mut w, slices)
}

/// [`with_write_reads`] for one source of another storage (the common
/// `x.add_(&w)`): the two locks in address order, without sorting.
#[inline]
pub(crate) fn with_write_read<T: Element, R>(
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
#[track_caller]
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

// ---------------------------------------------------------------------------
// strided walks

/// A joint walk over one shape in several strided layouts (the operands of
/// an elementwise op, broadcast to its shape): dimensions of size 1 are
/// dropped, and neighbouring dimensions that are contiguous with each other
/// in every operand are merged, so a walk is a loop over "rows" (the
/// innermost remaining dimension, a plain slice loop for every operand of
/// stride 0 or 1) driven by a small counter over the outer dimensions. A
/// row vector, a column vector or a scalar tensor against a matrix, and
/// same-shape contiguous operands, all become one or two loops over slices;
/// no ndarray dynamic-dimension iteration is involved.
struct Walk<const K: usize> {
    /// Number of outer dimensions (all but the innermost).
    outer: usize,
    /// Sizes of the outer dimensions, outermost first.
    shape: [usize; MAX_DIMS],
    /// Each operand's stride along each outer dimension.
    strides: [[usize; K]; MAX_DIMS],
    /// Length of a row (the innermost dimension).
    n: usize,
    /// Each operand's stride along a row.
    inner: [usize; K],
}

impl<const K: usize> Walk<K> {
    /// The walk over `shape` with operand `k` at `strides[k]`. With
    /// `reorder`, dimensions are visited in decreasing order of the first
    /// operand's strides (an in-place op on a transposed destination then
    /// still runs its rows along memory); otherwise in row-major order
    /// (the order in which a fresh output is filled).
    fn new(shape: &[usize], strides: [&[usize]; K], reorder: bool) -> Self {
        let mut dims = [0usize; MAX_DIMS];
        let mut m = 0;
        for (d, &n) in shape.iter().enumerate() {
            if n != 1 {
                dims[m] = d;
                m += 1;
            }
        }
        let dims = &mut dims[..m];
        if reorder && K > 0 {
            // Stable insertion sort, largest stride first.
            for i in 1..dims.len() {
                let mut j = i;
                while j > 0 && strides[0][dims[j - 1]] < strides[0][dims[j]] {
                    dims.swap(j - 1, j);
                    j -= 1;
                }
            }
        }
        let mut nd = 0;
        let mut sh = [1usize; MAX_DIMS];
        let mut st = [[0usize; K]; MAX_DIMS];
        for &d in dims.iter() {
            let s: [usize; K] = std::array::from_fn(|k| strides[k][d]);
            if nd > 0 && (0..K).all(|k| st[nd - 1][k] == s[k] * shape[d]) {
                sh[nd - 1] *= shape[d];
                st[nd - 1] = s;
            } else {
                sh[nd] = shape[d];
                st[nd] = s;
                nd += 1;
            }
        }
        if nd == 0 {
            // Every dimension has size 1 (or there are none): one element,
            // walked as a row of length 1 with unit strides (each operand
            // has an element at its offset; a stride of 0 would make a
            // destination row look like a broadcast).
            nd = 1;
            st[0] = [1; K];
        }
        Walk {
            outer: nd - 1,
            n: sh[nd - 1],
            inner: st[nd - 1],
            shape: sh,
            strides: st,
        }
    }

    /// Calls `row` with each operand's storage offset at the start of
    /// every row, starting from `base`. The shape must not be empty.
    #[inline(always)]
    fn rows(&self, mut off: [usize; K], mut row: impl FnMut([usize; K])) {
        let mut idx = [0usize; MAX_DIMS];
        loop {
            row(off);
            let mut d = self.outer;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                for (o, s) in off.iter_mut().zip(&self.strides[d]) {
                    *o += s;
                }
                if idx[d] < self.shape[d] {
                    break;
                }
                for (o, s) in off.iter_mut().zip(&self.strides[d]) {
                    *o -= s * self.shape[d];
                }
                idx[d] = 0;
            }
        }
    }
}

/// A read operand of an elementwise kernel: the element at index `i` of
/// the op's shape is `data[offset + sum(i[d] * strides[d])]` (stride 0
/// along broadcast dimensions).
#[derive(Clone, Copy)]
pub(crate) struct Src<'a, T> {
    data: &'a [T],
    offset: usize,
    strides: Dims,
}

impl<'a, T: Element> Src<'a, T> {
    /// `*v` broadcast to any shape of rank `ndim`.
    fn scalar(v: &'a T, ndim: usize) -> Self {
        let mut strides = Dims::new();
        for _ in 0..ndim {
            strides.push(0);
        }
        Src {
            data: std::slice::from_ref(v),
            offset: 0,
            strides,
        }
    }

    /// `layout` in `data`, broadcast to `shape` (which it must broadcast
    /// to).
    fn broadcast(data: &'a [T], layout: &Layout, shape: &[usize]) -> Self {
        let l = if layout.shape[..] == *shape {
            *layout
        } else {
            broadcast_layout(layout, shape).expect("funcz: internal: shapes were checked")
        };
        Src {
            data,
            offset: l.offset,
            strides: l.strides,
        }
    }
}

// ---- rows of in-place kernels: `d` at `o` with stride `ds`, `n` elements ----

#[inline(always)]
fn row_unary<T: Element, F: Fn(T) -> T, const W: bool>(
    d: &mut [T],
    o: usize,
    ds: usize,
    n: usize,
    f: &F,
) {
    if ds == 1 {
        wide::map_mut::<T, F, W>(&mut d[o..o + n], f);
    } else {
        for x in d[o..].iter_mut().step_by(ds).take(n) {
            *x = f(*x);
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn row_binary<T: Element, F: Fn(T, T) -> T, const W: bool>(
    d: &mut [T],
    o: usize,
    ds: usize,
    s: &[T],
    so: usize,
    ss: usize,
    n: usize,
    f: &F,
) {
    match (ds, ss) {
        (1, 1) => wide::zip_mut::<T, F, W>(&mut d[o..o + n], &s[so..so + n], f),
        (_, 0) => {
            let y = s[so];
            row_unary::<T, _, W>(d, o, ds, n, &|x| f(x, y));
        }
        _ => {
            let ys = s[so..].iter().step_by(ss);
            for (x, &y) in d[o..].iter_mut().step_by(ds).take(n).zip(ys) {
                *x = f(*x, y);
            }
        }
    }
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn row_ternary<T: Element, F: Fn(T, T, T) -> T, const W: bool>(
    d: &mut [T],
    o: usize,
    ds: usize,
    a: &[T],
    (oa, sa): (usize, usize),
    b: &[T],
    (ob, sb): (usize, usize),
    n: usize,
    f: &F,
) {
    match (ds, sa, sb) {
        (1, 1, 1) => wide::zip3_mut::<T, F, W>(&mut d[o..o + n], &a[oa..oa + n], &b[ob..ob + n], f),
        (_, _, 0) => {
            let z = b[ob];
            row_binary::<T, _, W>(d, o, ds, a, oa, sa, n, &|x, y| f(x, y, z));
        }
        (_, 0, _) => {
            let y = a[oa];
            row_binary::<T, _, W>(d, o, ds, b, ob, sb, n, &|x, z| f(x, y, z));
        }
        _ => {
            for i in 0..n {
                let p = o + i * ds;
                d[p] = f(d[p], a[oa + i * sa], b[ob + i * sb]);
            }
        }
    }
}

// ---- rows of out-of-place kernels: appended to `out` ----

#[inline(always)]
fn push_unary<T: Element, F: Fn(T) -> T, const W: bool>(
    out: &mut Vec<T>,
    a: &[T],
    oa: usize,
    sa: usize,
    n: usize,
    f: &F,
) {
    match sa {
        1 => wide::map_push::<T, F, W>(out, &a[oa..oa + n], f),
        0 => {
            let y = f(a[oa]);
            out.extend(std::iter::repeat_n(y, n));
        }
        _ => out.extend(a[oa..].iter().step_by(sa).take(n).map(|&x| f(x))),
    }
}

#[inline(always)]
fn push_binary<T: Element, F: Fn(T, T) -> T, const W: bool>(
    out: &mut Vec<T>,
    a: &[T],
    (oa, sa): (usize, usize),
    b: &[T],
    (ob, sb): (usize, usize),
    n: usize,
    f: &F,
) {
    match (sa, sb) {
        (1, 1) => wide::zip_push::<T, F, W>(out, &a[oa..oa + n], &b[ob..ob + n], f),
        (_, 0) => {
            let y = b[ob];
            push_unary::<T, _, W>(out, a, oa, sa, n, &|x| f(x, y));
        }
        (0, _) => {
            let x = a[oa];
            push_unary::<T, _, W>(out, b, ob, sb, n, &|y| f(x, y));
        }
        _ => out.extend((0..n).map(|i| f(a[oa + i * sa], b[ob + i * sb]))),
    }
}

#[inline(always)]
fn push_ternary<T: Element, F: Fn(T, T, T) -> T, const W: bool>(
    out: &mut Vec<T>,
    [a, b, c]: [&[T]; 3],
    [(oa, sa), (ob, sb), (oc, sc)]: [(usize, usize); 3],
    n: usize,
    f: &F,
) {
    match (sa, sb, sc) {
        (1, 1, 1) => {
            wide::zip3_push::<T, F, W>(out, &a[oa..oa + n], &b[ob..ob + n], &c[oc..oc + n], f)
        }
        (_, _, 0) => {
            let z = c[oc];
            push_binary::<T, _, W>(out, a, (oa, sa), b, (ob, sb), n, &|x, y| f(x, y, z));
        }
        (_, 0, _) => {
            let y = b[ob];
            push_binary::<T, _, W>(out, a, (oa, sa), c, (oc, sc), n, &|x, z| f(x, y, z));
        }
        (0, _, _) => {
            let x = a[oa];
            push_binary::<T, _, W>(out, b, (ob, sb), c, (oc, sc), n, &|y, z| f(x, y, z));
        }
        _ => out.extend((0..n).map(|i| f(a[oa + i * sa], b[ob + i * sb], c[oc + i * sc]))),
    }
}

// ---------------------------------------------------------------------------
// out-of-place kernels (fresh row-major outputs)

/// `f` of every element of `layout` in `data`, in row-major order.
#[inline]
fn map_layout<T: Element, F: Fn(T) -> T, const W: bool>(
    data: &[T],
    layout: &Layout,
    f: F,
) -> Vec<T> {
    let n = layout.numel();
    if layout.is_contiguous() {
        let o = layout.offset;
        let mut out = huge::with_capacity(n);
        wide::map_push::<T, F, W>(&mut out, &data[o..o + n], &f);
        out
    } else if n == 0 {
        Vec::new()
    } else {
        let mut out = huge::with_capacity(n);
        let w = Walk::new(&layout.shape, [&layout.strides], false);
        w.rows([layout.offset], |[o]| {
            push_unary::<T, F, W>(&mut out, data, o, w.inner[0], w.n, &f)
        });
        out
    }
}

/// `f` of every element of `a`, row-major.
fn unary_values<T: Element, F: Fn(T) -> T, const W: bool>(a: &Tensor<T>, f: F) -> Vec<T> {
    let data = a.storage.read();
    map_layout::<T, F, W>(&data, &a.layout, f)
}

/// A fresh contiguous tensor holding `f` of every element of `a` (baseline
/// loops: for kernels that call a library function per element, which a
/// wider loop does not speed up).
pub(crate) fn unary<T: Element, F: Fn(T) -> T>(a: &Tensor<T>, f: F) -> Tensor<T> {
    Tensor::from_contiguous(unary_values::<T, F, BASE>(a, f), a.shape())
}

/// [`unary`] with the contiguous loop's AVX2 copy when the CPU has it (for
/// arithmetic kernels: `neg`, `abs`, `sqrt`).
pub(crate) fn unary_wide<T: Element, F: Fn(T) -> T>(a: &Tensor<T>, f: F) -> Tensor<T> {
    Tensor::from_contiguous(unary_values::<T, F, WIDE>(a, f), a.shape())
}

/// The broadcast shape of the op's operands.
pub(crate) fn result_shape<T: Element>(op: &str, a: &Tensor<T>, b: &OperandRef<'_, T>) -> Dims {
    match b {
        OperandRef::Scalar(_) => a.layout.shape,
        OperandRef::Tensor(b) if a.shape() == b.shape() => a.layout.shape,
        OperandRef::Tensor(b) => broadcast_shapes(op, a.shape(), b.shape()),
    }
}

/// `f(a, b)` of the elements of `a` and `b` broadcast to `shape`, row-major.
fn map2<T: Element, F: Fn(T, T) -> T, const W: bool>(
    a: Src<'_, T>,
    b: Src<'_, T>,
    shape: &[usize],
    f: F,
) -> Vec<T> {
    let n = shape.iter().product::<usize>();
    let mut out = huge::with_capacity(n);
    if n == 0 {
        return out;
    }
    let w = Walk::new(shape, [&a.strides, &b.strides], false);
    let [sa, sb] = w.inner;
    w.rows([a.offset, b.offset], |[oa, ob]| {
        push_binary::<T, F, W>(&mut out, a.data, (oa, sa), b.data, (ob, sb), w.n, &f)
    });
    out
}

/// `f(a, b)` elementwise with broadcasting, row-major, with its shape
/// (contiguous loops in their AVX2 copy when the CPU has it).
pub(crate) fn binary_values<T: Element, F: Fn(T, T) -> T>(
    op: &str,
    a: &Tensor<T>,
    b: OperandRef<'_, T>,
    f: F,
) -> (Vec<T>, Dims) {
    let shape = result_shape(op, a, &b);
    let b = match b {
        OperandRef::Scalar(s) => return (unary_values::<T, _, WIDE>(a, move |x| f(x, s)), shape),
        OperandRef::Tensor(b) => b,
    };
    let (la, lb) = (&a.layout, &b.layout);
    let vals = with_reads([a, b], |[da, db]| {
        if la.shape == shape && lb.shape == shape && la.is_contiguous() && lb.is_contiguous() {
            let n = la.numel();
            let sa = &da[la.offset..la.offset + n];
            let sb = &db[lb.offset..lb.offset + n];
            let mut out = huge::with_capacity(n);
            wide::zip_push::<T, F, WIDE>(&mut out, sa, sb, &f);
            out
        } else {
            map2::<T, F, WIDE>(
                Src::broadcast(da, la, &shape),
                Src::broadcast(db, lb, &shape),
                &shape,
                f,
            )
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
    let shape = if a.shape() == b.shape() && a.shape() == c.shape() {
        a.layout.shape
    } else {
        broadcast_shapes(op, &broadcast_shapes(op, a.shape(), b.shape()), c.shape())
    };
    let (la, lb, lc) = (&a.layout, &b.layout, &c.layout);
    let n = shape.iter().product::<usize>();
    let vals = with_reads([a, b, c], |[da, db, dc]| {
        let mut out = huge::with_capacity(n);
        if n == 0 {
            return out;
        }
        let srcs = [
            Src::broadcast(da, la, &shape),
            Src::broadcast(db, lb, &shape),
            Src::broadcast(dc, lc, &shape),
        ];
        let w = Walk::new(
            &shape,
            [&srcs[0].strides, &srcs[1].strides, &srcs[2].strides],
            false,
        );
        let [sa, sb, sc] = w.inner;
        w.rows(
            [srcs[0].offset, srcs[1].offset, srcs[2].offset],
            |[oa, ob, oc]| {
                push_ternary::<T, F, WIDE>(
                    &mut out,
                    [da, db, dc],
                    [(oa, sa), (ob, sb), (oc, sc)],
                    w.n,
                    &f,
                )
            },
        );
        out
    });
    (vals, shape)
}

// ---------------------------------------------------------------------------
// in-place kernels (write into an existing buffer)

/// `x = f(x)` for every element of `layout` in `data`. The layout must not
/// overlap itself.
#[inline]
fn apply_unary<T: Element, F: Fn(T) -> T, const W: bool>(data: &mut [T], layout: &Layout, f: F) {
    let n = layout.numel();
    if n == 0 {
        return;
    }
    if layout.is_contiguous() {
        let o = layout.offset;
        wide::map_mut::<T, F, W>(&mut data[o..o + n], &f);
    } else {
        let w = Walk::new(&layout.shape, [&layout.strides], true);
        let ds = w.inner[0];
        w.rows([layout.offset], |[o]| {
            row_unary::<T, F, W>(data, o, ds, w.n, &f)
        });
    }
}

/// `x = f(x, y)` for every element `x` of `dl` in `d`, `y` the matching
/// element of `s` (already broadcast to `dl`'s shape). `dl` must not
/// overlap itself.
#[inline]
fn apply_binary_src<T: Element, F: Fn(T, T) -> T, const W: bool>(
    d: &mut [T],
    dl: &Layout,
    s: Src<'_, T>,
    f: F,
) {
    if dl.numel() == 0 {
        return;
    }
    let w = Walk::new(&dl.shape, [&dl.strides, &s.strides], true);
    let [ds, ss] = w.inner;
    w.rows([dl.offset, s.offset], |[o, so]| {
        row_binary::<T, F, W>(d, o, ds, s.data, so, ss, w.n, &f)
    });
}

/// `x = f(x, y)` for every element `x` of `dl` in `d`, with `y` the
/// matching element of `sl` in `s` broadcast to `dl`'s shape. `dl` must not
/// overlap itself and `sl` must broadcast to it.
#[inline]
fn apply_binary<T: Element, F: Fn(T, T) -> T, const W: bool>(
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
        wide::zip_mut::<T, F, W>(&mut d[o..o + n], &s[so..so + n], &f);
    } else if sl.numel() == 1 {
        let y = s[sl.offset];
        apply_unary::<T, _, W>(d, dl, move |x| f(x, y));
    } else {
        apply_binary_src::<T, F, W>(d, dl, Src::broadcast(s, sl, &dl.shape), f);
    }
}

/// `x = f(x, y, z)` for every element `x` of `dl` in `d`, `y` and `z` the
/// matching elements of `a` and `b` (already broadcast to `dl`'s shape).
/// `dl` must not overlap itself.
#[inline]
fn apply_ternary<T: Element, F: Fn(T, T, T) -> T, const W: bool>(
    d: &mut [T],
    dl: &Layout,
    a: Src<'_, T>,
    b: Src<'_, T>,
    f: F,
) {
    if dl.numel() == 0 {
        return;
    }
    let w = Walk::new(&dl.shape, [&dl.strides, &a.strides, &b.strides], true);
    let [ds, sa, sb] = w.inner;
    w.rows([dl.offset, a.offset, b.offset], |[o, oa, ob]| {
        row_ternary::<T, F, W>(d, o, ds, a.data, (oa, sa), b.data, (ob, sb), w.n, &f)
    });
}

/// In-place `x = f(x)` on `dst`: checks overlap, takes the write lock once
/// (bumping the version) and runs the kernel in the baseline loops (the
/// kernels that may return `x` itself: see [`wide`]).
pub(crate) fn inplace_unary<T: Element, F: Fn(T) -> T>(op: &str, dst: &Tensor<T>, f: F) {
    check_writable(op, &dst.layout);
    let mut data = dst.storage.write();
    apply_unary::<T, F, BASE>(&mut data, &dst.layout, f);
}

/// [`inplace_unary`] with the contiguous loops' AVX2 copies when the CPU
/// has AVX2, for kernels that always compute a new value (`-x`, `x.sqrt()`,
/// float `x.abs()`), never `x` itself on some path (see [`wide`]).
pub(crate) fn inplace_unary_wide<T: Element, F: Fn(T) -> T>(op: &str, dst: &Tensor<T>, f: F) {
    check_writable(op, &dst.layout);
    let mut data = dst.storage.write();
    apply_unary::<T, F, WIDE>(&mut data, &dst.layout, f);
}

/// An operand of an in-place op, resolved against the destination's
/// storage before anything is locked.
enum Resolved<'a, T: Element> {
    /// A scalar.
    Scalar(T),
    /// The destination itself (same storage and layout): each element is
    /// read just before it is written.
    Dst,
    /// A copy of an operand that shares the destination's storage with
    /// another layout (read completely before the first write).
    Copied(Vec<T>, Layout),
    /// A tensor of another storage.
    Other(&'a Tensor<T>),
}

impl<'a, T: Element> Resolved<'a, T> {
    fn new(dst: &Tensor<T>, src: OperandRef<'a, T>) -> Self {
        match src {
            OperandRef::Scalar(v) => Resolved::Scalar(v),
            OperandRef::Tensor(t) if t.same_storage(dst) => {
                if t.layout == dst.layout {
                    Resolved::Dst
                } else {
                    Resolved::Copied(t.to_vec(), Layout::contiguous(t.shape()))
                }
            }
            OperandRef::Tensor(t) => Resolved::Other(t),
        }
    }

    /// The tensor to read-lock, if any.
    fn locked(&self) -> Option<&'a Tensor<T>> {
        match self {
            Resolved::Other(t) => Some(t),
            _ => None,
        }
    }

    /// The operand as a kernel source broadcast to `shape`, given the
    /// locked buffer of its storage (for [`Resolved::Other`]). `Dst` has no
    /// source (the caller substitutes the destination's element).
    fn src<'s>(&'s self, locked: &'s [T], shape: &[usize]) -> Src<'s, T> {
        match self {
            Resolved::Scalar(v) => Src::scalar(v, shape.len()),
            Resolved::Copied(v, l) => Src::broadcast(v, l, shape),
            Resolved::Other(t) => Src::broadcast(locked, &t.layout, shape),
            Resolved::Dst => unreachable!("funcz: internal: the destination is not a source"),
        }
    }
}

/// In-place `x = f(x, y)` on `dst` with `src` broadcast to `dst`'s shape.
/// An operand sharing `dst`'s storage is copied out first, unless it is
/// exactly `dst` (then each element is read just before it is written).
/// The contiguous loops run their AVX2 copies when the CPU has AVX2: `f`
/// must not return `x` itself on some path (see [`wide`]).
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
            apply_unary::<T, _, WIDE>(&mut data, &dst.layout, move |x| f(x, y));
            return;
        }
        OperandRef::Tensor(t) => t,
    };
    check_broadcast_into(op, dst.shape(), src.shape());
    if !dst.same_storage(src) {
        return with_write_read(dst, src, |d, s| {
            apply_binary::<T, F, WIDE>(d, &dst.layout, s, &src.layout, f)
        });
    }
    match Resolved::new(dst, OperandRef::Tensor(src)) {
        Resolved::Dst => {
            let mut data = dst.storage.write();
            apply_unary::<T, _, WIDE>(&mut data, &dst.layout, move |x| f(x, x));
        }
        Resolved::Copied(v, l) => {
            let mut data = dst.storage.write();
            apply_binary::<T, F, WIDE>(&mut data, &dst.layout, &v, &l, f);
        }
        _ => unreachable!("funcz: internal: the operand shares the destination's storage"),
    }
}

/// In-place `x = f(x, y, z)` on `dst` with `a` and `b` broadcast to
/// `dst`'s shape (the broadcast shape of all three must be `dst`'s). An
/// operand sharing `dst`'s storage is copied out first, unless it is
/// exactly `dst`. One write lock, one version bump, no temporary buffer.
/// The contiguous loops run their AVX2 copies when the CPU has AVX2: `f`
/// must not return `x` itself on some path (see [`wide`]).
pub(crate) fn inplace_ternary<T: Element, F: Fn(T, T, T) -> T>(
    op: &str,
    dst: &Tensor<T>,
    a: OperandRef<'_, T>,
    b: OperandRef<'_, T>,
    f: F,
) {
    check_writable(op, &dst.layout);
    if a.shape() != dst.shape() || b.shape() != dst.shape() {
        let s = broadcast_shapes(op, &broadcast_shapes(op, dst.shape(), a.shape()), b.shape());
        check_result_shape(op, dst.shape(), &s);
    }
    let (ra, rb) = (Resolved::new(dst, a), Resolved::new(dst, b));
    let shape = &dst.layout.shape;
    with_write_reads(dst, [ra.locked(), rb.locked()], |d, [la, lb]| {
        let dl = &dst.layout;
        match (&ra, &rb) {
            (Resolved::Dst, Resolved::Dst) => apply_unary::<T, _, WIDE>(d, dl, move |x| f(x, x, x)),
            (Resolved::Dst, r) => {
                apply_binary_src::<T, _, WIDE>(d, dl, r.src(lb, shape), move |x, z| f(x, x, z))
            }
            (r, Resolved::Dst) => {
                apply_binary_src::<T, _, WIDE>(d, dl, r.src(la, shape), move |x, y| f(x, y, x))
            }
            (r, q) => apply_ternary::<T, F, WIDE>(d, dl, r.src(la, shape), q.src(lb, shape), f),
        }
    });
}

/// Writes row-major `values` of shape `shape` (which must equal `dst`'s
/// shape) into `dst`: the second half of in-place ops computed
/// out-of-place first.
#[allow(dead_code)] // for ops that cannot run in place (other op files)
pub(crate) fn write_values<T: Element>(op: &str, dst: &Tensor<T>, values: &[T], shape: &[usize]) {
    check_writable(op, &dst.layout);
    check_result_shape(op, dst.shape(), shape);
    let src = Layout::contiguous(shape);
    let mut data = dst.storage.write();
    apply_binary::<T, _, WIDE>(&mut data, &dst.layout, values, &src, |_, y| y);
}

// ---------------------------------------------------------------------------
// buffer donation (owned operands of `std::ops` operators)

/// True if `t` is the only handle to its storage and covers all of it
/// row-major with shape `shape`: an op consuming `t` may then write its
/// result into `t`'s buffer instead of allocating (nobody can observe it).
pub(crate) fn donatable<T: Element>(t: &Tensor<T>, shape: &[usize]) -> bool {
    // (Weak handles never read the elements: see `super::overlap`.)
    Arc::strong_count(&t.storage) == 1
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
            OperandRef::Scalar(y) => apply_unary::<T, _, WIDE>(&mut d, &dst.layout, |x| f(x, y)),
            OperandRef::Tensor(s) => {
                // `dst` is the sole owner of its storage, so `s` uses another
                // one and no other thread can be waiting on `dst`'s lock.
                let r = s.storage.read();
                apply_binary::<T, F, WIDE>(&mut d, &dst.layout, &r, &s.layout, f);
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
