//! An in-place op on a temporary view of a root, as one statement
//! (`cache.narrow(0, pos, 1).copy_(&row);`, a KV-cache update): the view
//! is made, the user's own call writes it, and the write is committed.
//!
//! Input (the user's code): `cache.narrow(0, pos, 1).copy_(&row);`
//! Output (generated): `rt::inplace_window(&mut cache, &mut s, ViewMeta::narrow(0, pos, 1), mode).copy_(&row);`
//! for the ops [`InPlaceWindow`] has; for others, and where the arguments
//! were evaluated ahead of the statement, `let mut w = rt::window(&mut
//! cache, &mut s, ViewMeta::narrow(0, pos, 1), mode); w.index_add_(..);
//! rt::window_done("index_add_", &mut cache, &mut s, &mut w);`
//!
//! In [`Mode::Views`] (and in [`Mode::Copies`] when no trace is being
//! recorded), for a view whose inverse is a scatter into its window
//! ([`ViewMeta::is_window`]) of a root buffer nobody else can observe (see
//! [`can_donate_root`](super::can_donate_root)), the op writes the view
//! itself, in the root's buffer, and the trace records the view, the
//! functional op and the scatter, as [`commit_donated`] does, without a
//! state for the view. Otherwise it is exactly [`view`], [`own_alias`] and
//! [`commit_donated`]. The user's call runs on the [`Window`] (it
//! dereferences to the view), so nothing in the generated code is
//! particular to the call site but the call itself.

use crate::element::Element;
use crate::layout::Layout;
use crate::ops::Operand;
use std::ops::Deref;
use std::sync::Arc;

use crate::tensor::{Tensor, fresh_id};
use crate::view::shape::{narrow_window, select_index};

use super::Mode;
use super::meta::ViewMeta;
use super::own::own_alias;
use super::tracked::{Tracked, commit_donated, view, window_begin, window_end, window_view};

/// The temporary view of [`window`], which an in-place op then writes (it
/// dereferences to the view).
pub struct Window<T: Element> {
    view: Tensor<T>,
    kind: Kind,
}

/// How a [`Window`] is committed.
// (A window lives in the generated function's frame and is never moved:
// boxing the state would cost an allocation per general window.)
#[allow(clippy::large_enum_variant)]
enum Kind {
    /// The view of a uniquely held root's buffer, with no trace recording.
    Direct,
    /// The same while a trace records: the view's op (and the mode, which
    /// the trace shows).
    Traced(ViewMeta, Mode),
    /// Otherwise, a view with its state, made private if its buffer was
    /// shared, and the mode it commits in.
    General(Tracked, Mode),
}

impl<T: Element> Deref for Window<T> {
    type Target = Tensor<T>;

    #[inline]
    fn deref(&self) -> &Tensor<T> {
        &self.view
    }
}

// The user's in-place op on a window, whose result the statement discards
// (`rt::window` is only emitted for `root.view(..).op_(..);`): the ops'
// own twins, which do not make and drop the handle `Tensor`'s ops return
// (a reference count and a layout copied each way). Other ops reach the
// view's `Tensor` methods through `Deref`.
impl<T: Element> Window<T> {
    /// The view's [`copy_`](Tensor::copy_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::zeros(&[2, 2]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, 1, 1), Mode::Views);
    /// w.copy_(&Tensor::ones(&[1, 2]));
    /// rt::window_done("copy_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![0.0, 0.0, 1.0, 1.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn copy_(&self, src: &Tensor<T>) {
        self.view.copy_in_place(src)
    }

    /// The view's [`add_`](Tensor::add_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::zeros(&[2, 2]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::select(1, 0), Mode::Views);
    /// w.add_(2.0);
    /// rt::window_done("add_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![2.0, 0.0, 2.0, 0.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn add_(&self, other: impl Operand<T>) {
        self.view.add_in_place(other)
    }

    /// The view's [`sub_`](Tensor::sub_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::zeros(&[2]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, 1, 1), Mode::Views);
    /// w.sub_(1.0);
    /// rt::window_done("sub_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![0.0, -1.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn sub_(&self, other: impl Operand<T>) {
        self.view.sub_in_place(other)
    }

    /// The view's [`mul_`](Tensor::mul_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::ones(&[2]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, 0, 1), Mode::Views);
    /// w.mul_(3.0);
    /// rt::window_done("mul_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![3.0, 1.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn mul_(&self, other: impl Operand<T>) {
        self.view.mul_in_place(other)
    }

    /// The view's [`div_`](Tensor::div_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::ones(&[2]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, 0, 1), Mode::Views);
    /// w.div_(4.0);
    /// rt::window_done("div_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![0.25, 1.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn div_(&self, other: impl Operand<T>) {
        self.view.div_in_place(other)
    }

    /// The view's [`fill_`](Tensor::fill_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::zeros(&[3]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, 1, 2), Mode::Views);
    /// w.fill_(7.0);
    /// rt::window_done("fill_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![0.0, 7.0, 7.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn fill_(&self, value: T) {
        self.view.fill_in_place(value)
    }

    /// The view's [`zero_`](Tensor::zero_), without its returned handle.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut x = Tensor::<f32>::ones(&[3]);
    /// let mut s = Tracked::root(&x);
    /// let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, 0, 2), Mode::Views);
    /// w.zero_();
    /// rt::window_done("zero_", &mut x, &mut s, &mut w);
    /// assert_eq!(x.to_vec(), vec![0.0, 0.0, 1.0]);
    /// ```
    #[track_caller]
    #[inline]
    pub fn zero_(&self) {
        self.view.zero_in_place()
    }
}

/// Makes the view `meta` of `root` (state `rstate`) for an in-place op to
/// write (see the module documentation); [`window_done`] commits it.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut cache = Tensor::<f32>::zeros(&[3, 2]);
/// let mut s = Tracked::root(&cache);
/// let row = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[1, 2]);
/// let mut w = rt::window(&mut cache, &mut s, ViewMeta::narrow(0, 1, 1), Mode::Views);
/// w.copy_(&row);
/// rt::window_done("copy_", &mut cache, &mut s, &mut w);
/// assert_eq!(cache.to_vec(), vec![0.0, 0.0, 1.0, 2.0, 0.0, 0.0]);
/// ```
// Inlined into the generated function in optimized builds (see the module
// documentation); in debug builds (no optimizer to use it) one instance
// per crate, called: inlined, each call site's IR held the whole match and
// its moves of the 440-byte window.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[track_caller]
pub fn window<T: Element>(
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    meta: ViewMeta,
    mode: Mode,
) -> Window<T> {
    build(root, rstate, meta, mode)
}

/// A temporary view of a root made ready for one in-place op, and the
/// root it commits into: `root.narrow(..).copy_(&row);` in one runtime call
/// and the op (the one-call form of [`window`], the user's call and
/// [`window_done`]). Its methods are the in-place ops
/// [`InPlace`](super::InPlace) has.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Tracked, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut cache = Tensor::<f32>::zeros(&[3, 2]);
/// let mut s = Tracked::root(&cache);
/// let row = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[1, 2]);
/// rt::inplace_window(&mut cache, &mut s, ViewMeta::narrow(0, 1, 1), Mode::Views).copy_(&row);
/// assert_eq!(cache.to_vec(), vec![0.0, 0.0, 1.0, 2.0, 0.0, 0.0]);
/// let mut b = Var::root(Tensor::<f32>::ones(&[2, 2]));
/// rt::inplace_window_var(&mut b, ViewMeta::select(1, 0), Mode::Copies).mul_(3.0);
/// assert_eq!(b.value.to_vec(), vec![3.0, 1.0, 3.0, 1.0]);
/// ```
#[must_use = "call the in-place op on it: it runs the op and commits it"]
pub struct InPlaceWindow<'a, T: Element> {
    window: Window<T>,
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
}

/// The view `meta` of `root` (state `rstate`) made ready for an in-place
/// op ([`window`]); the op commits it into `root` ([`window_done`]).
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut x = Tensor::<f32>::zeros(&[4]);
/// let mut s = Tracked::root(&x);
/// rt::inplace_window(&mut x, &mut s, ViewMeta::narrow(0, 2, 2), Mode::Views).fill_(5.0);
/// assert_eq!(x.to_vec(), vec![0.0, 0.0, 5.0, 5.0]);
/// ```
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[track_caller]
pub fn inplace_window<'a, T: Element>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    meta: ViewMeta,
    mode: Mode,
) -> InPlaceWindow<'a, T> {
    build(root, rstate, meta, mode)
}

/// [`inplace_window`] of a [`Var`](super::Var).
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// rt::inplace_window_var(&mut b, ViewMeta::select(0, 0), Mode::Views).add_(1.0);
/// assert_eq!(b.value.to_vec(), vec![1.0, 1.0, 0.0, 0.0]);
/// ```
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[track_caller]
pub fn inplace_window_var<T: Element>(
    v: &mut super::Var<T>,
    meta: ViewMeta,
    mode: Mode,
) -> InPlaceWindow<'_, T> {
    build(&mut v.value, &mut v.state, meta, mode)
}

impl<T: Element> InPlaceWindow<'_, T> {
    /// The view the op writes.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(super) fn value(&self) -> &Tensor<T> {
        &self.window.view
    }

    /// Commits the in-place op `op` that wrote the window.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub(super) fn done(&mut self, op: &'static str) {
        window_done(op, self.root, self.rstate, &mut self.window)
    }
}

/// What a window's paths return: the [`Window`] alone ([`window`]) or with
/// the root it commits into ([`inplace_window`]). Each path makes it where
/// the caller's statement keeps it: a window made by a call and then moved
/// into an [`InPlaceWindow`] was copied, 440 bytes per op.
trait Built<'a, T: Element> {
    fn built(window: Window<T>, root: &'a mut Tensor<T>, rstate: &'a mut Tracked) -> Self;
}

impl<'a, T: Element> Built<'a, T> for Window<T> {
    #[inline(always)]
    fn built(window: Window<T>, _: &'a mut Tensor<T>, _: &'a mut Tracked) -> Self {
        window
    }
}

impl<'a, T: Element> Built<'a, T> for InPlaceWindow<'a, T> {
    #[inline(always)]
    fn built(window: Window<T>, root: &'a mut Tensor<T>, rstate: &'a mut Tracked) -> Self {
        InPlaceWindow {
            window,
            root,
            rstate,
        }
    }
}

/// [`window`] and [`inplace_window`]: the fast paths, then the general one.
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
#[track_caller]
fn build<'a, T: Element, B: Built<'a, T>>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    meta: ViewMeta,
    mode: Mode,
) -> B {
    // (Each arm's call returns straight into the returned window: a tensor
    // moved through a local copies its 152-byte layout, a window its 440
    // bytes.)
    match window_begin(root, rstate, &meta, mode) {
        Some(false) => match meta {
            // (`narrow`, the common window, without the dispatch.)
            ViewMeta::Narrow(dim, start, length) => {
                // (Nothing to drop in a `Narrow`; this saves the call to
                // `ViewMeta`'s drop glue, which does not know the variant.)
                std::mem::forget(meta);
                // Checked here, where a panic reports the caller's line (the
                // call then takes five values, all in registers). A window
                // inside the root, given by a dimension, start and length
                // that need no wrapping, is taken as it is; anything else
                // gets `narrow`'s own checks, panics and negative indices.
                let (d, s, e) = match plain_window(&root.layout, dim, start, length) {
                    Some(w) => w,
                    None => narrow_window("narrow", &root.layout, dim, start, length),
                };
                // The root is row-major from offset 0 (`window_begin`), so
                // the view's offset is `s * stride`, which fits unless the
                // view is empty (and even then only with huge strides):
                // there `narrow` panics as it should.
                let Some(offset) = s.checked_mul(root.layout.strides[d]) else {
                    let _ = root.narrow(dim, start, length);
                    unreachable!("narrow: the offset overflows")
                };
                direct_narrow(root, rstate, d, e - s, offset)
            }
            // (`select`, the window of a row loop, likewise.)
            ViewMeta::Select(dim, index) => {
                std::mem::forget(meta);
                // An index inside the dimension is taken as it is; anything
                // else gets `select`'s own wrapping and panics.
                let (d, i) = match plain_index(&root.layout, dim, index) {
                    Some(w) => w,
                    None => select_index("select", &root.layout, dim, index),
                };
                // Row-major from offset 0 with an index inside its
                // dimension: `i * stride` is an element of the buffer.
                direct_select(root, rstate, d, i * root.layout.strides[d])
            }
            _ => direct_window(root, rstate, mode, meta, false),
        },
        Some(true) => direct_window(root, rstate, mode, meta, true),
        None => window_general(root, rstate, meta, mode),
    }
}

/// [`window`]'s direct `narrow` with no trace recording, checked: the
/// view of length `n` along `d` at `offset` is made in the returned
/// window, its layout set in place (what `Tensor::narrow` computes).
#[inline(never)]
fn direct_narrow<'a, T: Element, B: Built<'a, T>>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    d: usize,
    n: usize,
    offset: usize,
) -> B {
    let layout = Layout {
        shape: root.layout.shape.with(d, n),
        strides: root.layout.strides,
        offset,
    };
    direct_view(root, rstate, layout)
}

/// [`window`]'s direct `select` with no trace recording: the view of
/// index `offset / stride` along `d` (dimension `d` removed) is made in the
/// returned window, its layout set in place (what `Tensor::select`
/// computes).
#[inline(never)]
fn direct_select<'a, T: Element, B: Built<'a, T>>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    d: usize,
    offset: usize,
) -> B {
    let mut shape = root.layout.shape;
    shape.remove(d);
    let mut strides = root.layout.strides;
    strides.remove(d);
    direct_view(
        root,
        rstate,
        Layout {
            shape,
            strides,
            offset,
        },
    )
}

/// The window of [`direct_narrow`] and [`direct_select`]: a view of
/// `root`'s buffer laid out as `layout`, made in the returned window.
#[inline(always)]
fn direct_view<'a, T: Element, B: Built<'a, T>>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    layout: Layout,
) -> B {
    let view = Tensor {
        storage: Arc::clone(&root.storage),
        layout,
        id: fresh_id(),
    };
    let kind = Kind::Direct;
    B::built(Window { view, kind }, root, rstate)
}

/// `select(dim, index)`'s `(dim, index)` on `l` when `dim` and `index` are
/// non-negative and the index lies inside dimension `dim` (what
/// [`select_index`] returns then); `None` otherwise.
#[inline(always)]
fn plain_index(l: &Layout, dim: i64, index: i64) -> Option<(usize, usize)> {
    let d = usize::try_from(dim).ok()?;
    let size = *l.shape.get(d)?;
    let i = usize::try_from(index).ok()?;
    (i < size).then_some((d, i))
}

/// `narrow(dim, start, length)`'s `(dim, start, end)` on `l` when `dim`,
/// `start` and `length` are non-negative and the window lies inside
/// dimension `dim` (what [`narrow_window`] computes then); `None`
/// otherwise.
#[inline(always)]
fn plain_window(l: &Layout, dim: i64, start: i64, length: i64) -> Option<(usize, usize, usize)> {
    let d = usize::try_from(dim).ok()?;
    let size = *l.shape.get(d)?;
    let s = usize::try_from(start).ok()?;
    let n = usize::try_from(length).ok()?;
    (s <= size && n <= size - s).then_some((d, s, s + n))
}

/// [`window`]'s direct path for any window view (while a trace records,
/// `narrow` too, recorded as the view op is).
#[inline(never)]
#[track_caller]
fn direct_window<'a, T: Element, B: Built<'a, T>>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    mode: Mode,
    meta: ViewMeta,
    recording: bool,
) -> B {
    let view = window_view(root, &meta);
    let kind = if recording {
        Kind::Traced(meta, mode)
    } else {
        Kind::Direct
    };
    B::built(Window { view, kind }, root, rstate)
}

/// [`window`] past its fast path: [`view`], [`own_alias`].
#[inline(never)]
#[track_caller]
fn window_general<'a, T: Element, B: Built<'a, T>>(
    root: &'a mut Tensor<T>,
    rstate: &'a mut Tracked,
    meta: ViewMeta,
    mode: Mode,
) -> B {
    let (mut view, state) = view(root, rstate, meta, mode);
    own_alias(root, rstate, &mut view, &state);
    let kind = Kind::General(state, mode);
    B::built(Window { view, kind }, root, rstate)
}

/// Commits the in-place op `op` that wrote the [`window`] `w` of `root`
/// (in the mode `w` was made in).
#[inline]
pub fn window_done<T: Element>(
    op: &'static str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    w: &mut Window<T>,
) {
    match &mut w.kind {
        Kind::Direct => window_end(root, rstate, None, &mut w.view, Mode::Views),
        Kind::Traced(meta, mode) => window_end(root, rstate, Some(meta), &mut w.view, *mode),
        Kind::General(state, mode) => commit_donated(op, root, rstate, &mut w.view, state, *mode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Tracer;

    fn iota(n: usize) -> Tensor<f32> {
        Tensor::from_vec((0..n).map(|i| i as f32).collect(), &[n])
    }

    #[test]
    fn a_window_writes_a_unique_root_in_place_and_leaves_other_handles_alone() {
        let row = Tensor::<f32>::from_vec(vec![-1.0; 4], &[4]);
        for keep_handle in [false, true] {
            for mode in [Mode::Views, Mode::Copies] {
                let x = iota(12).view([3, 4]);
                let (out, g) = Tracer::new("f").input("x", &x).run(|| {
                    let mut root = x.clone();
                    let keep = keep_handle.then(|| root.shallow_clone());
                    let mut rs = Tracked::root(&root);
                    let p = std::sync::Arc::as_ptr(&root.storage);
                    let mut w = window(&mut root, &mut rs, ViewMeta::select(0, 1), mode);
                    w.copy_(&row);
                    window_done("copy_", &mut root, &mut rs, &mut w);
                    drop(w);
                    let in_place = std::sync::Arc::as_ptr(&root.storage) == p;
                    // (Copies mode: the row is copied out, updated, and
                    // scattered into the root's own buffer.)
                    assert_eq!(in_place, !keep_handle, "{mode:?} keep={keep_handle}");
                    if let Some(k) = keep {
                        assert_eq!(k.to_vec(), x.to_vec(), "another handle saw the update");
                    }
                    root
                });
                let mut expected = x.to_vec();
                expected[4..8].copy_from_slice(&[-1.0; 4]);
                assert_eq!(out.to_vec(), expected, "{mode:?} keep={keep_handle}");
                let select = if mode == Mode::Views {
                    "select"
                } else {
                    "select_copy"
                };
                assert_eq!(g.ops(), vec!["clone", select, "copy", "select_scatter"]);
                assert!(g.is_functional(), "{g}");
            }
        }
    }

    /// `rt::inplace_window` (one call and the op) gives the values, the
    /// trace and the untouched other handles the three statements give,
    /// on each path: direct, recorded, and general (a shared buffer).
    #[test]
    fn a_one_call_window_matches_the_three_statement_form() {
        let row = Tensor::<f32>::from_vec(vec![-1.0, -2.0, -3.0, -4.0], &[4]);
        for mode in [Mode::Views, Mode::Copies] {
            for keep_handle in [false, true] {
                for meta in [ViewMeta::narrow(0, 1, 1), ViewMeta::select(0, 2)] {
                    let run = |one_call: bool| {
                        let x = iota(12).view([3, 4]);
                        let (out, g) = Tracer::new("f").input("x", &x).run(|| {
                            let mut root = x.add(0.0);
                            let keep = keep_handle.then(|| root.shallow_clone());
                            let mut rs = Tracked::root(&root);
                            if one_call {
                                inplace_window(&mut root, &mut rs, meta.clone(), mode)
                                    .add_scaled_(&row, 2.0);
                            } else {
                                let mut w = window(&mut root, &mut rs, meta.clone(), mode);
                                w.add_scaled_(&row, 2.0);
                                window_done("add_scaled_", &mut root, &mut rs, &mut w);
                            }
                            (root, keep.map(|k| k.to_vec()))
                        });
                        (out.0.to_vec(), out.1, g.to_string(), g.is_functional())
                    };
                    let (one, three) = (run(true), run(false));
                    let what = format!("{mode:?} keep={keep_handle} {meta:?}");
                    assert_eq!(one, three, "{what}");
                    let first = if matches!(meta, ViewMeta::Narrow(..)) {
                        4
                    } else {
                        8
                    };
                    let mut expected: Vec<f32> = (0..12).map(|i| i as f32).collect();
                    for (j, r) in [-1.0, -2.0, -3.0, -4.0].into_iter().enumerate() {
                        expected[first + j] += 2.0 * r;
                    }
                    assert_eq!(one.0, expected, "{what}");
                    if keep_handle {
                        let untouched: Vec<f32> = (0..12).map(|i| i as f32).collect();
                        assert_eq!(one.1, Some(untouched), "{what}: another handle saw it");
                    }
                    assert!(one.3, "{what}: {}", one.2);
                    assert!(one.2.contains("scatter("), "{what}: {}", one.2);
                }
            }
        }
    }

    /// A `Var`'s window in one call writes the `Var`'s value and keeps
    /// its state current (a view made after it sees the write).
    #[test]
    fn a_one_call_window_of_a_var_keeps_its_state_current() {
        for mode in [Mode::Views, Mode::Copies] {
            let mut b = super::super::Var::root(iota(6).view([2, 3]).add(0.0));
            inplace_window_var(&mut b, ViewMeta::select(0, 1), mode).fill_(9.0);
            inplace_window_var(&mut b, ViewMeta::narrow(1, 0, 1), mode).mul_(-1.0);
            let r = super::super::var_view(&b, ViewMeta::select(0, 1), mode);
            assert_eq!(
                b.value.to_vec(),
                vec![-0.0, 1.0, 2.0, -9.0, 9.0, 9.0],
                "{mode:?}"
            );
            assert_eq!(r.value.to_vec(), vec![-9.0, 9.0, 9.0], "{mode:?}");
        }
    }

    #[test]
    fn a_window_that_is_not_a_scatter_window_commits_through_its_state() {
        // `t()` is not a window view: the general path.
        let mut root = iota(6).view([2, 3]).add(0.0);
        let mut rs = Tracked::root(&root);
        let mut w = window(&mut root, &mut rs, ViewMeta::t(), Mode::Views);
        w.mul_(2.0);
        window_done("mul_", &mut root, &mut rs, &mut w);
        assert_eq!(root.to_vec(), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    }
}
