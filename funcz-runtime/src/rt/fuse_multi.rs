//! Multi-root fusion: a run of elementwise in-place ops on several
//! collection elements (`m[i]`, `v[i]`, `params[i]`), with the temporaries
//! between them (`&grads[i] * 0.1`, `denom`), as one pass over memory.
//!
//! The macro writes the run's per-element formula as a closure (the ops'
//! own formulas, `rt::k`, in program order: a later op reads an earlier
//! op's result) and guards the fast path: the original statements, lowered
//! as usual, run whenever [`fused_elems`] declines.
//!
//! Input (an Adam step): `m[i].mul_(b1).add_(&(&grads[i] * (1.0 - b1))); ... params[i].addcdiv_(&m[i], &denom, c);`
//! Output: `if !(rt::elems_fusable() && rt::fused_elems([&mut m[i], ...], [..callers..], &[0, ...],
//! [rt::IntoFuseArg::into_fuse_arg(b1), ...], &|[x0, x1, x2], o| rt::fuse_loop_multi(...))) { <the statements> }`

use std::cell::Cell;
use std::sync::{RwLockReadGuard, RwLockWriteGuard};

use crate::element::Element;
use crate::tensor::Tensor;

use super::fuse::FuseArg;
use super::fuse_kernel::FusedOperand;

/// The compiled formula of a multi-root run: updates every root's buffer
/// (in the run's root order) given the run's leaf operands, each a scalar
/// or a slice as long as the roots.
pub type MultiKernel<'k, T, const R: usize, const N: usize> =
    &'k dyn Fn([&mut [T]; R], &[FusedOperand<'_, T>; N]);

thread_local! {
    /// How many times [`fused_elems`] took the one-pass path (tests).
    static MULTI_PASSES: Cell<u64> = const { Cell::new(0) };
}

/// How many times [`fused_elems`] took the one-pass path on this thread
/// (for tests that check a run was fused, not only that its result is
/// right).
///
/// ```
/// use funcz_runtime::rt;
/// let before = rt::multi_passes();
/// assert_eq!(rt::multi_passes(), before);
/// ```
#[doc(hidden)]
pub fn multi_passes() -> u64 {
    MULTI_PASSES.with(Cell::get)
}

/// The check generated code makes before it evaluates a multi-root run's
/// operands: false while a trace records (the run then runs as written,
/// so the trace is the unfused code's, op for op).
///
/// ```
/// assert!(funcz_runtime::rt::elems_fusable());
/// ```
#[inline]
pub fn elems_fusable() -> bool {
    !crate::trace::is_recording()
}

/// Runs a multi-root run in one pass if it can be the same computation,
/// and returns whether it did (if not, nothing was done and the caller runs
/// the original statements).
///
/// - `roots`: the elements the run updates in place, in the order the
///   kernel takes them; `callers`: for an element of a collection input,
///   the caller's tensor (its one other allowed handle, as
///   [`can_donate_elem`](super::can_donate_elem)), else `None`.
/// - `steps`: every in-place op on a root, in program order: the root's
///   position and the op's functional name (for the trace identities and
///   the version bumps).
/// - `leaves`: the operands the formula reads besides the roots.
/// - `kernel`: the formula (see [`fuse_loop_multi`]).
///
/// The one pass runs when: the element type is a float, the roots have at
/// least [`min_fused`](super::set_min_fused) elements and one shape, each
/// is row-major from offset 0 and held only by the function (and its
/// caller), no two share a buffer, and every tensor operand has exactly
/// the roots' shape (no broadcasting: a temporary of the run then has that
/// shape too, as in the original), is contiguous and shares no root's
/// buffer. Then each root's version goes up once per op on it and each op
/// gets a fresh identity ([`donated`](super::donated)), as the unfused code
/// does.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{FusedOperand, IntoFuseArg, fuse_loop_multi, k};
/// let prev = rt::set_min_fused(0);
/// let mut a = vec![Tensor::<f32>::ones(&[3])];
/// let mut b = vec![Tensor::<f32>::zeros(&[3])];
/// let g = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
/// // a[0].mul_(2.0); b[0].add_(&a[0]); b[0].add_(&g); as one pass:
/// let d = rt::FusedParams::default();
/// let done = rt::fused_elems(
///     [&mut a[0], &mut b[0]],
///     [None, None],
///     &[0, 1, 1],
///     [2.0f32.into_fuse_arg(), (&g).into_fuse_arg()],
///     &|[x0, x1], o| {
///         fuse_loop_multi::<_, 2, 2>([x0, x1], o, |[r0, r1], [a0, a1]| {
///             let r0 = k::mul(r0, a0, &d);
///             let r1 = k::add(r1, r0, &d);
///             let r1 = k::add(r1, a1, &d);
///             [r0, r1]
///         })
///     },
/// );
/// assert!(done);
/// assert_eq!(a[0].to_vec(), vec![2.0; 3]);
/// assert_eq!(b[0].to_vec(), vec![3.0, 4.0, 5.0]);
/// assert_eq!(b[0].version(), 2);
/// rt::set_min_fused(prev);
/// ```
#[track_caller]
pub fn fused_elems<T: Element, const R: usize, const N: usize>(
    roots: [&mut Tensor<T>; R],
    callers: [Option<&Tensor<T>>; R],
    steps: &[u8],
    leaves: [FuseArg<'_, T>; N],
    kernel: MultiKernel<'_, T, R, N>,
) -> bool {
    if !T::IS_FLOAT || R == 0 || crate::trace::is_recording() {
        return false;
    }
    let shape = roots[0].shape();
    let n = roots[0].numel();
    if n == 0 || n < super::fuse::min_fused_kernel() {
        return false;
    }
    for (i, (r, c)) in roots.iter().zip(&callers).enumerate() {
        if r.shape() != shape || !super::can_donate_elem(r, *c) {
            return false;
        }
        if roots[..i].iter().any(|o| o.same_storage(r)) {
            return false;
        }
    }
    if R + N > MAX_BUFFERS {
        return false;
    }
    // One version bump per op on each root, as the unfused ops.
    let mut bumps = [0usize; R];
    for &r in steps {
        match bumps.get_mut(usize::from(r)) {
            Some(b) => *b += 1,
            None => return false,
        }
    }
    if bumps.contains(&0) {
        return false;
    }
    let tensor = |k: usize| -> Option<&Tensor<T>> {
        match &leaves[k] {
            FuseArg::Scalar(_) => None,
            FuseArg::Ref(t) => Some(*t),
            FuseArg::Owned(t) => Some(&**t),
        }
    };
    // Every tensor operand: the roots' shape, contiguous, not a root's
    // buffer. The buffers to lock: (address, root `i` or operand `R + k`).
    let mut bufs = [(usize::MAX, 0usize); MAX_BUFFERS];
    for (i, r) in roots.iter().enumerate() {
        bufs[i] = (r.storage_key(), i);
    }
    let mut nb = R;
    for k in 0..N {
        let Some(t) = tensor(k) else { continue };
        if t.shape() != shape || !t.is_contiguous() || roots.iter().any(|r| r.same_storage(t)) {
            return false;
        }
        bufs[nb] = (t.storage_key(), R + k);
        nb += 1;
    }
    // Lock every buffer once, in address order (the order every kernel
    // locks in): the roots' for writing, the operands' for reading. (No
    // allocation: the fused pass runs once per element of a parameter
    // list.)
    let bufs = &mut bufs[..nb];
    bufs.sort_unstable();
    let mut guards: [Option<Guard<'_, T>>; MAX_BUFFERS] = std::array::from_fn(|_| None);
    let mut ng = 0;
    for &(key, code) in bufs.iter() {
        if ng > 0 && guards[ng - 1].as_ref().is_some_and(|g| g.key == key) {
            continue; // an operand read twice
        }
        let lock = if code < R {
            let t = &*roots[code];
            // The last bump is the write lock the pass holds.
            for _ in 1..bumps[code] {
                drop(t.storage.write());
            }
            Lock::W(t.storage.write())
        } else {
            let t = tensor(code - R).expect("funcz: internal: a tensor operand");
            Lock::R(t.storage.read())
        };
        guards[ng] = Some(Guard { key, code, lock });
        ng += 1;
    }
    let mut outs: [Option<&mut [T]>; R] = std::array::from_fn(|_| None);
    let mut reads: [(usize, &[T]); MAX_BUFFERS] = [(usize::MAX, &[]); MAX_BUFFERS];
    for (g, read) in guards.iter_mut().flatten().zip(reads.iter_mut()) {
        match &mut g.lock {
            Lock::W(w) => outs[g.code] = Some(&mut w[..n]),
            Lock::R(r) => *read = (g.key, &r[..]),
        }
    }
    let ops: [FusedOperand<'_, T>; N] = std::array::from_fn(|k| match (&leaves[k], tensor(k)) {
        (FuseArg::Scalar(v), _) => FusedOperand::Scalar(*v),
        (_, Some(t)) => {
            let key = t.storage_key();
            let data = reads
                .iter()
                .find(|(k, _)| *k == key)
                .expect("funcz: internal: every operand storage is locked")
                .1;
            FusedOperand::Slice(&data[t.layout.offset..t.layout.offset + n])
        }
        (_, None) => unreachable!("funcz: internal: a tensor operand"),
    });
    let outs = outs.map(|o| o.expect("funcz: internal: every root is locked"));
    kernel(outs, &ops);
    drop(guards);
    for &r in steps {
        super::donated(&mut *roots[usize::from(r)]);
    }
    MULTI_PASSES.with(|p| p.set(p.get() + 1));
    true
}

/// The most buffers (roots and tensor operands) one fused pass locks.
const MAX_BUFFERS: usize = 64;

/// A lock [`fused_elems`] holds during its pass.
enum Lock<'g, T> {
    W(RwLockWriteGuard<'g, Vec<T>>),
    R(RwLockReadGuard<'g, Vec<T>>),
}

/// A locked buffer: its address, the root (`< R`) or operand (`R + k`) it
/// was locked for, and the lock.
struct Guard<'g, T> {
    key: usize,
    code: usize,
    lock: Lock<'g, T>,
}

/// Runs `f` on every element of the `R` roots `xs` with the matching
/// element of each of the `N` operands `o` (a broadcast scalar or a slice
/// as long as the roots): `[x0[i], .., x(R-1)[i]] = f([x0[i], ..], [o0[i], ..])`.
/// The same chunked loop (and AVX2 copy, no FMA) as
/// [`fuse_loop`](super::fuse_loop).
///
/// ```
/// use funcz_runtime::rt::{FusedOperand, fuse_loop_multi};
/// let (mut a, mut b) = (vec![1.0f32, 2.0], vec![10.0f32, 20.0]);
/// fuse_loop_multi::<f32, 2, 1>([&mut a, &mut b], &[FusedOperand::Scalar(3.0)], |[x, y], [s]| {
///     let x = x * s;
///     [x, y + x]
/// });
/// assert_eq!((a, b), (vec![3.0, 6.0], vec![13.0, 26.0]));
/// ```
#[inline(always)]
pub fn fuse_loop_multi<T: Element, const R: usize, const N: usize>(
    xs: [&mut [T]; R],
    o: &[FusedOperand<'_, T>; N],
    f: impl Fn([T; R], [T; N]) -> [T; R],
) {
    let n = xs.first().map_or(0, |x| x.len());
    for x in &xs {
        assert_eq!(
            x.len(),
            n,
            "funcz: internal: fused roots of different lengths"
        );
    }
    super::fuse_kernel::check_operands(o, n);
    #[cfg(target_arch = "x86_64")]
    if crate::ops::kernel::wide::avx2() {
        // SAFETY: `avx2()` is true only if the running CPU supports AVX2
        // (`is_x86_feature_detected!`), the one requirement of the call.
        return unsafe { chunks_multi_avx2(xs, o, &f) };
    }
    chunks_multi(xs, o, &f)
}

/// [`chunks_multi`] compiled with AVX2 enabled (no FMA: the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn chunks_multi_avx2<T: Element, const R: usize, const N: usize>(
    xs: [&mut [T]; R],
    o: &[FusedOperand<'_, T>; N],
    f: &impl Fn([T; R], [T; N]) -> [T; R],
) {
    chunks_multi(xs, o, f)
}

/// Elements per inner loop (as `fuse_loop`'s).
const CHUNK: usize = 64;

/// The loop of [`fuse_loop_multi`] (lengths checked): chunks of [`CHUNK`]
/// elements, each operand a fixed-size array (a scalar one filled once),
/// then the rest one by one.
#[inline(always)]
fn chunks_multi<T: Element, const R: usize, const N: usize>(
    mut xs: [&mut [T]; R],
    o: &[FusedOperand<'_, T>; N],
    f: &impl Fn([T; R], [T; N]) -> [T; R],
) {
    let n = xs.first().map_or(0, |x| x.len());
    let mut fill = [[T::zero(); CHUNK]; N];
    for (k, op) in o.iter().enumerate() {
        if let FusedOperand::Scalar(v) = *op {
            fill[k] = [v; CHUNK];
        }
    }
    let fill = &fill;
    let mut s = 0;
    while s + CHUNK <= n {
        let ops: [&[T; CHUNK]; N] = std::array::from_fn(|k| match o[k] {
            FusedOperand::Slice(d) => chunk(&d[s..s + CHUNK]),
            _ => &fill[k],
        });
        let outs: [&mut [T; CHUNK]; R] = xs.each_mut().map(|x| {
            (&mut x[s..s + CHUNK])
                .try_into()
                .expect("funcz: internal: a chunk of CHUNK elements")
        });
        for i in 0..CHUNK {
            let mut a = [T::zero(); N];
            for k in 0..N {
                a[k] = ops[k][i];
            }
            let mut v = [T::zero(); R];
            for r in 0..R {
                v[r] = outs[r][i];
            }
            let v = f(v, a);
            for r in 0..R {
                outs[r][i] = v[r];
            }
        }
        s += CHUNK;
    }
    for i in s..n {
        let a: [T; N] = std::array::from_fn(|k| match o[k] {
            FusedOperand::Slice(d) => d[i],
            FusedOperand::Scalar(v) => v,
            FusedOperand::None => T::zero(),
        });
        let v: [T; R] = std::array::from_fn(|r| xs[r][i]);
        let v = f(v, a);
        for r in 0..R {
            xs[r][i] = v[r];
        }
    }
}

#[inline(always)]
fn chunk<T>(s: &[T]) -> &[T; CHUNK] {
    s.try_into()
        .expect("funcz: internal: a chunk of CHUNK elements")
}
