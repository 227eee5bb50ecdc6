//! Per-variable alias state carried by functionalized code, and the
//! operations on it: make a view, regenerate a stale one, commit a mutation.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::element::Element;
use crate::layout::Layout;
use crate::tensor::Tensor;
use crate::view::InPlace;

use super::Mode;
use super::apply::{cast_mut, cast_own, cast_place, cast_ref, dispatch_f32, same};
use super::chain::{replay, writeback, writeback_into};
use super::meta::{MultiMeta, ViewMeta};

/// A view chain, stored inline up to one view (the common case: `x.narrow(..)`,
/// `b.select(0, i)`), so that making an alias does not allocate.
#[derive(Clone, Debug, Default)]
enum Chain {
    #[default]
    Empty,
    One(ViewMeta),
    Many(Vec<ViewMeta>),
}

impl Chain {
    fn as_slice(&self) -> &[ViewMeta] {
        match self {
            Chain::Empty => &[],
            Chain::One(m) => std::slice::from_ref(m),
            Chain::Many(v) => v,
        }
    }

    /// This chain followed by `m`.
    fn pushed(&self, m: ViewMeta) -> Chain {
        match self {
            Chain::Empty => Chain::One(m),
            Chain::One(a) => Chain::Many(vec![a.clone(), m]),
            Chain::Many(v) => {
                let mut v = v.clone();
                v.push(m);
                Chain::Many(v)
            }
        }
    }

    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn is_empty(&self) -> bool {
        matches!(self, Chain::Empty)
    }
}

/// The alias state of one tensor variable in functionalized code.
///
/// A root (a function input or a fresh local) has an empty chain; its `generation`
/// counts the mutations committed to it so far. An alias records the chain
/// of views from its root, the root generation its value reflects, and its
/// layout in the original (mutating) program, which decides what
/// `reshape` and `as_strided` mean and whether a mutation is legal.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
/// let mut bs = Tracked::root(&b);
/// let (mut c, mut cs) = rt::view(&b, &bs, ViewMeta::view([-1]), Mode::Copies);
/// let new = c.add(1.0);
/// rt::commit("add_", &mut b, &mut bs, &mut c, &mut cs, new, Mode::Copies);
/// assert_eq!(b.to_vec(), vec![2.0, 3.0]);
/// ```
#[derive(Clone, Debug)]
pub struct Tracked {
    chain: Chain,
    generation: u64,
    epoch: u64,
    detached: Option<Copied>,
    orig: Orig,
    /// A collection element: its original layout is not recorded (the
    /// state is made afresh at each use), so write-backs keep its value
    /// laid out as it was (see [`Tracked::element`]).
    element: bool,
    /// For a mutated input (see [`Tracked::input`]): the address of the
    /// caller's storage, whose one other handle cannot observe it while
    /// the function runs; 0 otherwise.
    caller: usize,
}

/// A layout in the original program, with whether it overlaps itself
/// (checked at every commit, so computed once).
#[derive(Clone, Debug)]
struct Orig {
    layout: Layout,
    overlaps: bool,
}

impl Orig {
    #[inline]
    fn new(layout: Layout) -> Self {
        Orig {
            // (A contiguous layout, the common case, without the call.)
            overlaps: !layout.is_contiguous() && layout.has_internal_overlap(),
            layout,
        }
    }

    /// The original layout of `meta` applied to a variable whose original
    /// layout is `parent`.
    fn of_view(parent: &Orig, meta: &ViewMeta, layout: Layout) -> Self {
        if parent.overlaps || meta.may_create_overlap() {
            Orig::new(layout)
        } else {
            Orig {
                overlaps: false,
                layout,
            }
        }
    }
}

/// The alias went through a `reshape`/`flatten`/`contiguous` that copied
/// (in the original program too): it no longer follows its root. The
/// variable that received the copy is the `head` of the copy's family; the
/// views made from it share `writes`, the number of mutations committed to
/// the copy, and are refused (at run time) once it moved past `seen`:
/// their values could not be regenerated.
#[derive(Clone, Debug)]
struct Copied {
    writes: Arc<AtomicU64>,
    seen: u64,
    head: bool,
}

impl Copied {
    fn derived(&self) -> Copied {
        Copied {
            writes: Arc::clone(&self.writes),
            seen: self.writes.load(Ordering::Relaxed),
            head: false,
        }
    }
}

fn refuse_copy_view(what: &str) -> ! {
    panic!(
        "funcz: {what}: a view of a tensor that `reshape`/`flatten`/`contiguous` copied (the original program \
         copies too) cannot be kept in sync with that copy once either is mutated. help: make the copy explicit \
         with `.clone()` (a new tensor #[functionalize] tracks) and take views of it"
    )
}

impl Tracked {
    /// The state of a root whose current value is `t`.
    #[inline]
    pub fn root<T: Element>(t: &Tensor<T>) -> Self {
        Tracked::of_root(&t.layout, 0)
    }

    /// The state of a root laid out as `layout` (non-generic, so that the
    /// state is written once, in place, and compiled once).
    #[inline(never)]
    fn of_root(layout: &Layout, caller: usize) -> Self {
        Tracked::of_root_here(layout, caller)
    }

    /// [`Tracked::of_root`] written where its caller wants it (a
    /// [`Var`](super::Var)'s field: a returned state would be built
    /// aside and copied in).
    #[inline(always)]
    pub(super) fn of_root_here(layout: &Layout, caller: usize) -> Self {
        // (Tested first, so that the state is then written straight from
        // `layout`, with no call in between to keep its parts across. A
        // call, not inlined: a contiguous layout, the common case, is its
        // first test, and inlined, its loops were a large part of an
        // optimized build of functionalized functions.)
        let overlaps = layout.overlaps_itself();
        Tracked {
            chain: Chain::Empty,
            generation: 0,
            epoch: 0,
            detached: None,
            orig: Orig {
                layout: layout.copied(),
                overlaps,
            },
            element: false,
            caller,
        }
    }

    /// The state of a root declared without a value (`let x;`), bound by
    /// its first assignment (which [`rebind`](Tracked::rebind)s it).
    ///
    /// ```
    /// use funcz_runtime::rt::Tracked;
    /// use funcz_runtime::Tensor;
    /// let mut s = Tracked::unbound();
    /// let x = Tensor::<f32>::zeros(&[2]);
    /// s.rebind(&x);
    /// assert!(s.chain().is_empty());
    /// ```
    pub fn unbound() -> Self {
        Tracked {
            chain: Chain::Empty,
            generation: 0,
            epoch: 0,
            detached: None,
            orig: Orig::new(Layout::contiguous(&[])),
            element: false,
            caller: 0,
        }
    }

    /// The state of a mutated input whose body handle is `t`. The caller
    /// keeps one other handle to `t`'s storage (its own tensor, or, for an
    /// input passed by value, the handle the exit writes back into), and
    /// that handle cannot be used until the function returns: the caller's
    /// `&mut` (or `&`) is held by the call, and the exit writes the final
    /// value into it anyway. So while the root's value is still in the
    /// caller's buffer and no third handle shares it, updates may be
    /// computed in that buffer ([`can_donate_root`](super::can_donate_root)).
    /// After a panic in the body, such an input holds a partial update, as
    /// in the original program.
    #[inline]
    pub fn input<T: Element>(t: &Tensor<T>) -> Self {
        Tracked::of_root(&t.layout, t.storage_key())
    }

    /// How many handles to `t`'s storage, besides those the function holds,
    /// cannot observe it while the function runs: 1 if `t` (this state's
    /// value) still holds the caller's buffer of a mutated input, else 0.
    #[inline]
    pub(super) fn caller_handles<T: Element>(&self, t: &Tensor<T>) -> usize {
        usize::from(self.caller != 0 && t.storage_key() == self.caller)
    }

    /// The state of an element of a collection (`xs[i]`, or a loop
    /// variable over `xs`), made where it is mutated: its current value's
    /// layout stands for the original's, so a write-back through a
    /// `t()`/`transpose`/`permute` (whose inverse is a view with permuted
    /// strides) makes the new value contiguous again if it was.
    pub fn element<T: Element>(t: &Tensor<T>) -> Self {
        Tracked {
            element: true,
            ..Tracked::root(t)
        }
    }

    /// Marks a root as rebound to a new value (`x = fresh`): aliases made
    /// from its old value no longer follow it.
    pub fn rebind<T: Element>(&mut self, t: &Tensor<T>) {
        self.epoch += 1;
        self.generation += 1;
        self.orig = Orig::new(t.layout);
    }

    /// Records that the root's data was replaced (a functional update).
    pub fn bump(&mut self) {
        self.generation += 1;
    }

    /// The chain of views from the root.
    pub fn chain(&self) -> &[ViewMeta] {
        self.chain.as_slice()
    }

    /// True if the original layout overlaps itself (mutation is an error).
    pub(super) fn original_overlaps(&self) -> bool {
        self.orig.overlaps
    }

    /// The layout the variable has in the original program.
    pub fn original_layout(&self) -> &Layout {
        &self.orig.layout
    }

    /// [`original_layout`](Self::original_layout), where it is recorded
    /// (not for a collection element, whose state is made at each use).
    pub(super) fn known_original_layout(&self) -> Option<&Layout> {
        (!self.element).then_some(&self.orig.layout)
    }

    /// True if the value no longer aliases its root (a `reshape` that
    /// copied, or an alias of a root that was since rebound).
    pub(super) fn follows(&self, root: &Tracked) -> bool {
        self.detached.is_none() && self.epoch == root.epoch
    }

    /// True if the value follows its root and reflects the root's latest
    /// mutation.
    pub(super) fn is_current(&self, root: &Tracked) -> bool {
        self.follows(root) && self.generation == root.generation
    }
}

/// Another handle to `t` (same storage and trace identity); not an op.
pub fn handle<T: Element>(t: &Tensor<T>) -> Tensor<T> {
    t.handle()
}

/// The version counter of `t`'s storage (checked around opaque calls).
pub fn version<T: Element>(t: &Tensor<T>) -> u64 {
    t.version()
}

fn check_as_strided(parent: &Tracked, meta: &ViewMeta) {
    if let ViewMeta::AsStrided(..) = meta {
        // The functional value may be laid out differently; `forward` lays
        // it out row-major first, as the original is.
        let orig = &parent.orig.layout;
        // A view of a root (a `squeeze_`d input, a leading `narrow`) laid
        // out row-major from offset 0 addresses the same first elements of
        // the storage as its functional value laid out row-major: allowed
        // when the strided window stays inside it.
        let inside = || {
            let ViewMeta::AsStrided(size, stride, off) = meta else {
                return false;
            };
            let mut last = *off;
            for (&n, &s) in size.iter().zip(stride) {
                if n == 0 {
                    return true;
                }
                if s < 0 {
                    return false;
                }
                last += (n - 1) * s;
            }
            last >= 0 && (last as usize) < orig.numel()
        };
        let base_ok =
            orig.is_contiguous() && orig.offset == 0 && (parent.chain.is_empty() || inside());
        if !base_ok {
            panic!(
                "funcz: as_strided: functionalize supports as_strided only directly on a contiguous base \
                 at storage offset 0 (got a base of shape {:?}, strides {:?}, offset {}, {} view(s) from its root); \
                 as_strided is non-compositional (pytorch#104505). help: call .contiguous() or .clone() first",
                &orig.shape[..],
                &orig.strides[..],
                orig.offset,
                parent.chain.len()
            );
        }
    }
}

dispatch_f32! {
    /// Makes the alias `meta(parent)`: a view in [`Mode::Views`], a `*_copy` in
    /// [`Mode::Copies`]; returns its value and state. `reshape`, `flatten` and
    /// `contiguous` alias only when the *original* layout allows it, exactly as
    /// the mutating program would.
    #[track_caller]
    pub fn view<T: Element>(
        parent: &Tensor<T> => cast_ref,
        pstate: &Tracked => same,
        meta: ViewMeta => same,
        mode: Mode => same,
    ) -> (Tensor<T>, Tracked) = view_any, view_f32;
}

/// The generic body of [`view`].
#[track_caller]
fn view_any<T: Element>(
    parent: &Tensor<T>,
    pstate: &Tracked,
    meta: ViewMeta,
    mode: Mode,
) -> (Tensor<T>, Tracked) {
    if meta.is_maybe_view() {
        let as_view = match &meta {
            ViewMeta::Reshape(s) => ViewMeta::View(s.clone()),
            ViewMeta::Flatten => ViewMeta::View(vec![-1]),
            _ => ViewMeta::Alias,
        };
        let viewable = meta.is_view_of(&pstate.orig.layout);
        if viewable {
            if meta == ViewMeta::Contiguous {
                // contiguous() of a contiguous tensor is the tensor itself.
                return (parent.handle(), pstate.clone());
            }
            return view(parent, pstate, as_view, mode);
        }
        // A copy in the original program: a fresh, detached value. (Not
        // `parent.reshape(..)`: the functional value's layout may differ
        // from the original's and allow a view, which would alias `parent`
        // and, in `Mode::Copies`, put a view op in the trace.)
        let shape: Vec<i64> = match &meta {
            ViewMeta::Reshape(s) => s.clone(),
            ViewMeta::Flatten => vec![-1],
            _ => parent.shape().iter().map(|&n| n as i64).collect(),
        };
        let value = match mode {
            Mode::Views => parent.clone().view(shape.as_slice()),
            Mode::Copies => parent.view_copy(shape.as_slice()),
        };
        let state = Tracked {
            chain: Chain::Empty,
            generation: 0,
            epoch: 0,
            detached: Some(Copied {
                writes: Arc::new(AtomicU64::new(0)),
                seen: 0,
                head: true,
            }),
            orig: Orig::new(Layout::contiguous(value.shape())),
            element: false,
            caller: 0,
        };
        return (value, state);
    }
    check_as_strided(pstate, &meta);
    let value = meta.forward(parent, mode);
    // A real view of a value laid out as in the original program is laid
    // out as the original program's view.
    let orig = if mode == Mode::Views && parent.layout == pstate.orig.layout {
        Orig::of_view(&pstate.orig, &meta, value.layout)
    } else {
        Orig::of_view(&pstate.orig, &meta, meta.apply_layout(&pstate.orig.layout))
    };
    debug_assert_eq!(orig.overlaps, orig.layout.has_internal_overlap());
    debug_assert_eq!(orig.layout, meta.apply_layout(&pstate.orig.layout));
    let chain = pstate.chain.pushed(meta);
    (
        value,
        Tracked {
            chain,
            generation: pstate.generation,
            epoch: pstate.epoch,
            detached: pstate.detached.as_ref().map(Copied::derived),
            orig,
            element: false,
            caller: 0,
        },
    )
}

dispatch_f32! {
    /// The value of `meta(parent)` for a view that is only read (never
    /// mutated or bound): a view or a `*_copy` by mode.
    #[track_caller]
    pub fn view_value<T: Element>(
        parent: &Tensor<T> => cast_ref,
        meta: ViewMeta => same,
        mode: Mode => same,
    ) -> Tensor<T> = view_value_any, view_value_f32;
}

/// The generic body of [`view_value`].
#[track_caller]
fn view_value_any<T: Element>(parent: &Tensor<T>, meta: ViewMeta, mode: Mode) -> Tensor<T> {
    match meta {
        ViewMeta::Reshape(s) => match mode {
            Mode::Views => parent.reshape(s.as_slice()),
            Mode::Copies if parent.is_contiguous() => parent.view_copy(s.as_slice()),
            Mode::Copies => parent.clone().view_copy(s.as_slice()),
        },
        ViewMeta::Flatten => view_value(parent, ViewMeta::Reshape(vec![-1]), mode),
        ViewMeta::Contiguous => match mode {
            Mode::Views => parent.contiguous(),
            Mode::Copies => parent.clone(),
        },
        m => m.forward(parent, mode),
    }
}

/// A view that a reduction only reads (`x.narrow(0, 0, n).sum()` in
/// copies mode): its `*_copy` when a trace is recorded, so the graph has no
/// view; otherwise the view itself, which holds the same values without
/// copying them (the reduction's result does not depend on its
/// receiver's strides).
///
/// ```
/// use funcz_runtime::rt::{self, ViewMeta};
/// use funcz_runtime::Tensor;
/// let x = Tensor::<f32>::arange(6).view([2, 3]);
/// assert_eq!(rt::read_view(&x, ViewMeta::narrow(1, 1, 2)).sum().item(), 1.0 + 2.0 + 4.0 + 5.0);
/// ```
#[track_caller]
pub fn read_view<T: Element>(parent: &Tensor<T>, meta: ViewMeta) -> Tensor<T> {
    let mode = if crate::trace::is_recording() {
        Mode::Copies
    } else {
        Mode::Views
    };
    view_value(parent, meta, mode)
}

/// Makes the outputs of a multi-output view (`split`, `chunk`, `unbind`)
/// with one state each.
#[track_caller]
pub fn multi_view<T: Element>(
    parent: &Tensor<T>,
    pstate: &Tracked,
    meta: MultiMeta,
    mode: Mode,
) -> (Vec<Tensor<T>>, Vec<Tracked>) {
    let values = meta.forward(parent, mode);
    let shape = pstate.orig.layout.shape;
    let states = (0..values.len())
        .map(|k| {
            let m = meta.output(&shape, k);
            let orig = Orig::of_view(&pstate.orig, &m, m.apply_layout(&pstate.orig.layout));
            let chain = pstate.chain.pushed(m);
            Tracked {
                chain,
                generation: pstate.generation,
                epoch: pstate.epoch,
                detached: pstate.detached.as_ref().map(Copied::derived),
                orig,
                element: false,
                caller: 0,
            }
        })
        .collect();
    (values, states)
}

dispatch_f32! {
    /// Regenerates `value` from its root if the root was mutated since the
    /// value was last made (lazily, as PyTorch: only where it is used).
    pub fn sync<T: Element>(
        value: &mut Tensor<T> => cast_mut,
        state: &mut Tracked => same,
        root: &Tensor<T> => cast_ref,
        rstate: &Tracked => same,
        mode: Mode => same,
    ) = sync_any, sync_f32;
}

/// After the arguments of an in-place op on a view chain with a step
/// that may copy (`v.flatten().add_(helper(&x))`), which run after the
/// chain is made, as in the original: a chain that is a view of the root
/// is made again, so that it sees what the arguments changed; a chain that
/// copied keeps the copy made before them (the original's copy does not
/// see them either).
///
/// ```
/// use funcz_runtime::rt::{self, Mode, ViewMeta};
/// use funcz_runtime::Tensor;
/// let x = Tensor::<f32>::zeros(&[2, 2]);
/// let mut s = rt::Tracked::root(&x);
/// let (mut row, mut rs) = rt::view(&x, &s, ViewMeta::select(0, 0), Mode::Copies);
/// let (mut col, mut cs) = rt::view(&x, &s, ViewMeta::t(), Mode::Copies);
/// let (mut flat, mut fs) = rt::view(&col, &cs, ViewMeta::flatten(), Mode::Copies);
/// x.add_(1.0); // what the arguments did
/// s.bump();
/// rt::refresh_chain(&mut row, &mut rs, &x, &s, Mode::Copies);
/// rt::refresh_chain(&mut flat, &mut fs, &x, &s, Mode::Copies);
/// assert_eq!(row.to_vec(), vec![1.0, 1.0]); // a view: made again
/// assert_eq!(flat.to_vec(), vec![0.0; 4]); // a copy: as it was
/// # let _ = (&mut col, &mut cs);
/// ```
pub fn refresh_chain<T: Element>(
    value: &mut Tensor<T>,
    state: &mut Tracked,
    root: &Tensor<T>,
    rstate: &Tracked,
    mode: Mode,
) {
    if state.detached.is_none() {
        sync_any(value, state, root, rstate, mode);
    }
}

/// The generic body of [`sync`].
fn sync_any<T: Element>(
    value: &mut Tensor<T>,
    state: &mut Tracked,
    root: &Tensor<T>,
    rstate: &Tracked,
    mode: Mode,
) {
    if let Some(c) = &state.detached {
        if !c.head && c.writes.load(Ordering::Relaxed) != c.seen {
            refuse_copy_view("read");
        }
        return;
    }
    if state.follows(rstate) && state.generation != rstate.generation {
        *value = replay(root, state.chain(), mode);
        state.generation = rstate.generation;
    }
}

/// [`sync`] for every element of a collection of aliases.
pub fn sync_all<T: Element>(
    values: &mut [Tensor<T>],
    states: &mut [Tracked],
    root: &Tensor<T>,
    rstate: &Tracked,
    mode: Mode,
) {
    for (v, s) in values.iter_mut().zip(states.iter_mut()) {
        sync(v, s, root, rstate, mode);
    }
}

#[inline]
fn check_overlap(op: &str, orig: &Orig) {
    if orig.overlaps {
        overlap_error(op, orig);
    }
}

#[cold]
fn overlap_error(op: &str, orig: &Orig) -> ! {
    let layout = &orig.layout;
    panic!(
        "funcz: {op}: unsupported operation: more than one element of the written-to tensor refers to a single \
         memory location (shape {:?}, strides {:?}). Please clone() the tensor before performing the operation.",
        &layout.shape[..],
        &layout.strides[..]
    );
}

dispatch_f32! {
    /// Commits `new` as the value of the alias `value` after the in-place op
    /// `op`: writes it back into `root` through the alias's chain, bumps the
    /// root's generation and makes the alias current. Panics, as the mutating
    /// program would, if the alias overlaps itself in the original program.
    ///
    /// The alias's old value is dropped first, so that a root it was a view of
    /// can be uniquely held again; a uniquely held root then takes the write
    /// as an in-window scatter into its own buffer (see `writeback_into`).
    #[track_caller]
    pub fn commit<T: Element>(
        op: &str => same,
        root: &mut Tensor<T> => cast_mut,
        rstate: &mut Tracked => same,
        value: &mut Tensor<T> => cast_mut,
        state: &mut Tracked => same,
        new: Tensor<T> => cast_own,
        mode: Mode => same,
    ) = commit_any, commit_f32;
}

/// The generic body of [`commit`].
#[track_caller]
fn commit_any<T: Element>(
    op: &str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    new: Tensor<T>,
    mode: Mode,
) {
    check_overlap(op, &state.orig);
    super::kept_shape(op, value, &new);
    *value = new;
    commit_value(op, root, rstate, value, state, false, mode);
    place_committed_copy(root, rstate, value, state, mode);
}

/// After a commit through the alias `value` (state `state`) of `root`,
/// where `value` holds a buffer of its own (the functional op's result, a
/// private copy made for the op, a `*_copy` in [`Mode::Copies`]) and not a
/// view of the root's: in [`Mode::Views`] it becomes that view again (as
/// it is in the original: its views, and the overlap checks of the
/// in-place ops that follow, then see the root's buffer); in
/// [`Mode::Copies`] it remembers where its elements are in the original
/// program (see [`crate::ops::overlap`]).
fn place_committed_copy<T: Element>(
    root: &Tensor<T>,
    rstate: &Tracked,
    value: &mut Tensor<T>,
    state: &Tracked,
    mode: Mode,
) {
    if !state.follows(rstate) || state.chain.is_empty() || value.same_storage(root) {
        return;
    }
    match mode {
        Mode::Views => {
            let mut v = crate::trace::untraced(|| replay(root, state.chain(), Mode::Views));
            // (Unless a step copies, a `reshape` the layout does not allow,
            // or the view is laid out otherwise than the original's.)
            if v.same_storage(root) && v.layout.same_elements(&state.orig.layout) {
                v.id = value.id;
                *value = v;
            }
        }
        Mode::Copies => {
            let (base, _) = crate::ops::overlap::place_of(root);
            crate::ops::overlap::set_place(value, Some(base), state.orig.layout.copied());
        }
    }
}

/// After a commit gave `root` a new value: a value laid out otherwise than
/// the root is in the original program (a write-back through `t()` leaves
/// a transposed base, a functional op a contiguous one; even the strides
/// of dims of size 1 count, which decide a full overlap from a partial
/// one) is laid out again as the original's, when that is dense (a permutation of a contiguous
/// layout): its views are then laid out as the original's, and so decide
/// what the original decides where layouts matter (the overlap checks of
/// in-place ops, `is_contiguous`, `stride`). Otherwise (a strided input)
/// it remembers the original's layout, so that the `*_copy`s made of it in
/// `remove = "mutations_and_views"` mode know where their elements are in
/// the original (see [`crate::ops::overlap`]).
fn place_root<T: Element>(root: &mut Tensor<T>, rstate: &Tracked) {
    let orig = &rstate.orig.layout;
    if rstate.element || root.layout == *orig || root.shape() != &orig.shape[..] {
        return;
    }
    if orig.offset == 0 && crate::ops::overlap::is_non_overlapping_and_dense(orig) {
        relayout(root, orig);
    } else {
        crate::ops::overlap::set_place(root, None, orig.copied());
    }
}

/// Replaces `t` by its elements in a fresh buffer laid out as `orig` (of
/// `t`'s shape, dense, from offset 0), keeping its identity; untraced.
#[inline(never)]
fn relayout<T: Element>(t: &mut Tensor<T>, orig: &Layout) {
    // The dims by decreasing stride: the permuted view of `t` whose
    // row-major order is `orig`'s order in memory.
    let mut order: Vec<usize> = (0..orig.ndim()).collect();
    order.sort_by(|&a, &b| orig.strides[b].cmp(&orig.strides[a]).then(a.cmp(&b)));
    let dims: Vec<i64> = order.iter().map(|&d| d as i64).collect();
    let in_memory_order = crate::view::shape::permute_layout("permute", &t.layout, &dims);
    let mut laid = crate::view::gather::materialize(t, &in_memory_order);
    laid.layout = orig.copied();
    laid.id = t.id;
    *t = laid;
}

dispatch_f32! {
    /// The donating twin of [`commit`]: the in-place op `op` already ran on
    /// the alias `value` itself ([`can_donate_alias`](super::can_donate_alias)
    /// said nobody else can observe it), so `value` is given a fresh identity
    /// and recorded as the functional op `functional` (see
    /// [`donated`](super::donated)), then written back into `root` as
    /// [`commit`] does. When `value` is a view of a root buffer only the two of
    /// them hold, the window already holds the new data and the write-back only
    /// records its scatter.
    pub fn commit_donated<T: Element>(
        op: &'static str => same,
        root: &mut Tensor<T> => cast_mut,
        rstate: &mut Tracked => same,
        value: &mut Tensor<T> => cast_mut,
        state: &mut Tracked => same,
        mode: Mode => same,
    ) = commit_donated_any, commit_donated_f32;
}

/// The generic body of [`commit_donated`].
fn commit_donated_any<T: Element>(
    op: &'static str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    mode: Mode,
) {
    check_overlap(op, &state.orig);
    super::donated(value);
    // Written through a current one-view alias of the root's buffer: the
    // alias is that view of the root as it is now, so it is exactly the
    // scatter's window (see `can_donate_alias`).
    let known_window =
        state.chain.len() == 1 && value.same_storage(root) && state.is_current(rstate);
    commit_value(op, root, rstate, value, state, known_window, mode);
    place_committed_copy(root, rstate, value, state, mode);
}

/// [`window`](super::window)'s fast path, when it applies: returns
/// whether a trace is recording if the in-place op may write the view
/// `meta` of `root` directly. It applies in [`Mode::Views`] (and in
/// [`Mode::Copies`] when no trace is recording: the temporary view is
/// never observable, only the root's new value is, so writing through it
/// gives the values the `*_copy` + scatter would, without the copy) to a
/// window view ([`ViewMeta::is_window`]) of a root buffer nobody else can
/// observe. Only tests, inlined into `window` (which then makes the view
/// straight into the window it returns).
#[inline]
pub(super) fn window_begin<T: Element>(
    root: &Tensor<T>,
    rstate: &Tracked,
    meta: &ViewMeta,
    mode: Mode,
) -> Option<bool> {
    let recording = crate::trace::is_recording();
    if (mode == Mode::Views || !recording)
        && meta.is_window()
        && rstate.chain.is_empty()
        && rstate.detached.is_none()
        && !rstate.orig.overlaps
        && super::can_donate_root(root, rstate)
    {
        Some(recording)
    } else {
        None
    }
}

dispatch_f32! {
    /// The view `meta` of `root` (a window view other than `narrow`, which
    /// [`window`](super::window) makes itself), for [`window_begin`]'s path.
    #[track_caller]
    pub(super) fn window_view<T: Element>(
        root: &Tensor<T> => cast_ref,
        meta: &ViewMeta => same,
    ) -> Tensor<T> = window_view_any, window_view_f32;
}

#[track_caller]
fn window_view_any<T: Element>(root: &Tensor<T>, meta: &ViewMeta) -> Tensor<T> {
    meta.forward(root, Mode::Views)
}

/// [`window_done`](super::window_done)'s fast path: after the in-place op
/// wrote the view `v` of [`window_begin`]: the root's new value is its
/// buffer. `meta` is `None` when no trace is recording.
#[inline]
pub(super) fn window_end<T: Element>(
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    meta: Option<&ViewMeta>,
    v: &mut Tensor<T>,
    mode: Mode,
) {
    match meta {
        // What `reverse_in_place` below does here, minus the trace: `root`
        // and `v` are the buffer's only handles (and the caller's, which
        // cannot observe it), `v` is exactly the window (a window view of
        // the root as it is now), so the scatter moves nothing. The root
        // keeps its identity: with no trace to name the scatter's output,
        // an identity only tells handles apart, and `root` is still the
        // same handle (storage and layout), changed in place as the
        // original's tensor is; so the exit's write-back sees at once that
        // there is nothing to copy. `v` is dropped unrenamed.
        None => {
            debug_assert!(v.same_storage(root));
            rstate.generation += 1;
        }
        Some(meta) => window_end_traced(root, rstate, meta, v, mode),
    }
}

dispatch_f32! {
    /// [`window_end`] while a trace records.
    fn window_end_traced<T: Element>(
        root: &mut Tensor<T> => cast_mut,
        rstate: &mut Tracked => same,
        meta: &ViewMeta => same,
        v: &mut Tensor<T> => cast_mut,
        mode: Mode => same,
    ) = window_end_traced_any, window_end_traced_f32;
}

fn window_end_traced_any<T: Element>(
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    meta: &ViewMeta,
    v: &mut Tensor<T>,
    mode: Mode,
) {
    super::donated(v);
    let how = InPlace {
        caller: rstate.caller_handles(root),
        known_window: true,
    };
    if !meta.reverse_in_place(root, v, how) {
        // Not reached (`root` and `v` are the buffer's only
        // handles); the copying scatter computes the same value.
        *root = meta.reverse(root, v.handle(), mode);
    }
    rstate.generation += 1;
}

/// Writes the alias's new `value` back into `root` (if the alias still
/// follows it) and makes the alias current; for a copy `reshape` & co.
/// made, counts the write (see [`Copied`]); refuses writes through views
/// of a rebound variable.
fn commit_value<T: Element>(
    op: &str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    value: &Tensor<T>,
    state: &mut Tracked,
    known_window: bool,
    mode: Mode,
) {
    if state.follows(rstate) {
        writeback_root(root, rstate, state.chain(), value, known_window, mode);
        rstate.generation += 1;
        state.generation = rstate.generation;
    } else if let Some(c) = &mut state.detached {
        // The variable holds the copy itself: it is its own root.
        if !c.head {
            refuse_copy_view(op);
        }
        c.seen = c.writes.fetch_add(1, Ordering::Relaxed) + 1;
    } else {
        refuse_rebound_view(op);
    }
}

/// A view of a variable that was since assigned a new value still views
/// the old value in the original program, and so do its other views; they
/// are kept as they were at the assignment, but mutating one is refused.
fn refuse_rebound_view(op: &str) -> ! {
    panic!(
        "funcz: {op}: mutation through a view of a variable that was assigned a new value since the view was \
         made: the old value's other views could not see it. help: make the view a fresh tensor with `.clone()`, \
         or assign the new value to a new variable"
    )
}

/// Called when a variable is bound to a view made from `place` (`let v =
/// place.view(..)..;`): if a `reshape` & co. in between copied, nothing
/// else can see that copy, so `v` holds it alone and becomes the head of
/// its own copy (its mutations are its own, views of it follow it).
pub fn bind_view(place: &Tracked, state: &mut Tracked) {
    let inherited = match (&place.detached, &state.detached) {
        (Some(p), Some(s)) => Arc::ptr_eq(&p.writes, &s.writes),
        _ => false,
    };
    if state.detached.is_some() && !inherited {
        state.detached = Some(Copied {
            writes: Arc::new(AtomicU64::new(0)),
            seen: 0,
            head: true,
        });
        state.chain = Chain::Empty;
    }
}

/// [`bind_view`] for the outputs of a multi-output view (each holds its own
/// disjoint piece of the copy).
pub fn bind_views(place: &Tracked, states: &mut [Tracked]) {
    for s in states {
        bind_view(place, s);
    }
}

/// In a chain of in-place ops (`x.reshape(..).mul_(2.0).add_(1.0)`), each
/// op re-makes the views from the place; if a `reshape` & co. among them
/// copied (`state` is a copy the place does not hold), the earlier ops went
/// to another copy: refused.
pub fn check_chain_copy(op: &str, place: &Tracked, state: &Tracked) {
    let fresh_copy = match (&place.detached, &state.detached) {
        (_, None) => false,
        (Some(p), Some(s)) => !Arc::ptr_eq(&p.writes, &s.writes),
        (None, Some(_)) => true,
    };
    if fresh_copy {
        panic!(
            "funcz: {op}: chained in-place ops on a `reshape`/`flatten`/`contiguous` that copied: #[functionalize] \
             re-makes the views for each op, so the earlier ops would be lost. help: bind the result first \
             (`let v = x.reshape(..);`) and chain the ops on `v`"
        );
    }
}

dispatch_f32! {
    /// [`commit`] for a view `value` made in the same statement from `place`
    /// (`None` when the place is `root` itself), e.g. `v.narrow(..).add_(..)`.
    /// If `place` holds a copy that `reshape` & co. made (see [`view`]), the
    /// mutation is written back into `place` through the views in between, not
    /// into `root`; if a `reshape` in the statement itself copied, only the
    /// temporary copy changes, as in the original program.
    #[track_caller]
    pub fn commit_from<T: Element>(
        op: &str => same,
        root: &mut Tensor<T> => cast_mut,
        rstate: &mut Tracked => same,
        place: Option<(&mut Tensor<T>, &mut Tracked)> => cast_place,
        value: &mut Tensor<T> => cast_mut,
        state: &mut Tracked => same,
        new: Tensor<T> => cast_own,
        mode: Mode => same,
    ) = commit_from_any, commit_from_f32;
}

/// The generic body of [`commit_from`].
#[allow(clippy::too_many_arguments)]
#[track_caller]
fn commit_from_any<T: Element>(
    op: &str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    place: Option<(&mut Tensor<T>, &mut Tracked)>,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    new: Tensor<T>,
    mode: Mode,
) {
    check_overlap(op, &state.orig);
    super::kept_shape(op, value, &new);
    *value = new;
    if let Some((place, pstate)) = place
        && let (Some(p), Some(s)) = (&mut pstate.detached, &state.detached)
        && Arc::ptr_eq(&p.writes, &s.writes)
    {
        if !p.head {
            refuse_copy_view(op);
        }
        let suffix = &state.chain()[pstate.chain.len()..];
        *place = writeback(place, suffix, value.handle(), mode);
        p.seen = p.writes.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(s) = &mut state.detached {
            s.seen = p.seen;
        }
    } else if state.follows(rstate) {
        writeback_root(root, rstate, state.chain(), value, false, mode);
        rstate.generation += 1;
        state.generation = rstate.generation;
        place_committed_copy(root, rstate, value, state, mode);
    } else if state.detached.is_none() {
        refuse_rebound_view(op);
    }
}

/// `writeback_into`, keeping a collection element's layout (see
/// [`Tracked::element`]).
fn writeback_root<T: Element>(
    root: &mut Tensor<T>,
    rstate: &Tracked,
    chain: &[ViewMeta],
    new: &Tensor<T>,
    known_window: bool,
    mode: Mode,
) {
    let was_contiguous = rstate.element && mode == Mode::Views && root.is_contiguous();
    let before = was_contiguous.then_some(root.layout.strides);
    let how = InPlace {
        caller: rstate.caller_handles(root),
        known_window,
    };
    writeback_into(root, chain, new, how, mode);
    if was_contiguous && !root.is_contiguous() {
        *root = root.contiguous();
    }
    place_root(root, rstate);
    // A contiguous element stays laid out as it was, down to the strides
    // of its size-1 dimensions, which address nothing (the inverse of a
    // `permute` of a `[2, 1]` tensor rebuilt it with strides `[1, 2]`).
    if let Some(before) = before
        && root.layout.strides.len() == before.len()
    {
        for (d, &n) in root.layout.shape.clone().iter().enumerate() {
            if n == 1 {
                root.layout.strides[d] = before[d];
            }
        }
    }
}

dispatch_f32! {
    /// Commits `new`, the functional twin's result, as the value of a root
    /// after the in-place op `op` (it keeps the root's shape, see
    /// [`kept_shape`](super::kept_shape); `resize_` commits with
    /// [`commit_resized`]).
    #[track_caller]
    pub fn commit_root<T: Element>(
        op: &str => same,
        root: &mut Tensor<T> => cast_mut,
        rstate: &mut Tracked => same,
        new: Tensor<T> => cast_own,
    ) = commit_root_any, commit_root_f32;
}

/// The generic body of [`commit_root`].
#[track_caller]
fn commit_root_any<T: Element>(
    op: &str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    new: Tensor<T>,
) {
    check_overlap(op, &rstate.orig);
    super::kept_shape(op, root, &new);
    *root = new;
    root_committed(op, root, rstate);
    place_root(root, rstate);
}

/// Commits `new`, the root resized by `resize_` (the one in-place op that
/// sets the shape), as the value of a root.
///
/// ```
/// use funcz_runtime::rt::{self, Tracked};
/// use funcz_runtime::Tensor;
/// let mut x = Tensor::<f32>::zeros(&[4]);
/// let mut s = Tracked::root(&x);
/// let new = rt::resized(&x, [2, 3]);
/// rt::commit_resized(&mut x, &mut s, new);
/// assert_eq!(x.shape(), &[2, 3]);
/// ```
pub fn commit_resized<T: Element>(root: &mut Tensor<T>, rstate: &mut Tracked, new: Tensor<T>) {
    check_overlap("resize_", &rstate.orig);
    *root = new;
    root_committed("resize_", root, rstate);
}

dispatch_f32! {
    /// The donating twin of [`commit_root`]: the in-place op `op` already ran
    /// on `root`'s own buffer ([`can_donate`](super::can_donate) said nobody
    /// else can observe it); `root` gets a fresh identity, recorded as the
    /// functional op `functional` (see [`donated`](super::donated)).
    pub fn donated_root<T: Element>(
        op: &'static str => same,
        root: &mut Tensor<T> => cast_mut,
        rstate: &mut Tracked => same,
    ) = donated_root_any, donated_root_f32;
}

/// The generic body of [`donated_root`].
fn donated_root_any<T: Element>(op: &'static str, root: &mut Tensor<T>, rstate: &mut Tracked) {
    check_overlap(op, &rstate.orig);
    super::donated(root);
    root_committed(op, root, rstate);
}

#[inline]
fn root_committed<T: Element>(op: &str, root: &Tensor<T>, rstate: &mut Tracked) {
    if op == "resize_" {
        // A new layout (and, when it grows, new storage in the original):
        // the root is laid out anew; views of the old one keep it.
        rstate.rebind(root);
    } else {
        rstate.generation += 1;
    }
}

dispatch_f32! {
    /// Applies the metadata mutation `meta` (`t_`, `transpose_`, ...) to an
    /// alias: its chain grows, its data is untouched.
    #[track_caller]
    pub fn meta_inplace<T: Element>(
        value: &mut Tensor<T> => cast_mut,
        state: &mut Tracked => same,
        meta: ViewMeta => same,
        mode: Mode => same,
    ) = meta_inplace_any, meta_inplace_f32;
}

/// The generic body of [`meta_inplace`].
#[track_caller]
fn meta_inplace_any<T: Element>(
    value: &mut Tensor<T>,
    state: &mut Tracked,
    meta: ViewMeta,
    mode: Mode,
) {
    let (v, mut s) = view(value, state, meta, mode);
    if s.detached.is_some() {
        // Still the same variable: the head of its copy stays the head.
        s.detached = state.detached.clone();
    }
    *value = v;
    *state = s;
}

/// `x.resize_(size)` on a root `x` held as a view of its hidden base
/// (`base`, `bstate`): as eager, the new layout is contiguous at the same
/// storage offset and the storage keeps its elements, so shrinking and
/// growing back shows the old tail (new elements are zeros). `keep_tail`
/// is false when no later `resize_` of `x` can show that tail (the macro
/// counts them): the resized tensor is then its new base. When the
/// storage must grow, the base is replaced by a longer copy (traced as
/// `resize`); the root becomes `view(-1)`, `narrow`, `view(size)` of it.
/// Returns a handle of the resized root.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let mut base = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]);
/// let mut bs = rt::Tracked::root(&base);
/// let (mut x, mut s) = (base.shallow_clone(), bs.clone());
/// rt::resize_root("x", &mut x, &mut s, (&mut base, &mut bs), [3], true, rt::Mode::Views);
/// assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0]);
/// let r = rt::resize_root("x", &mut x, &mut s, (&mut base, &mut bs), [5], true, rt::Mode::Views);
/// assert_eq!(r.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 0.0]);
/// ```
#[track_caller]
pub fn resize_root<T: Element>(
    name: &str,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    (base, bstate): (&mut Tensor<T>, &mut Tracked),
    size: impl crate::args::IntoShape,
    keep_tail: bool,
    mode: Mode,
) -> Tensor<T> {
    let size = size.into_shape();
    if let Some(d) = size.iter().find(|&&d| d < 0) {
        panic!("funcz: {name}.resize_({size:?}): negative size {d} in the requested shape");
    }
    let cur = *state.original_layout();
    if cur.shape.iter().map(|&d| d as i64).eq(size.iter().copied()) {
        // Same sizes: eager leaves the tensor as it is.
        return value.handle();
    }
    let blay = *bstate.original_layout();
    if !blay.is_contiguous() {
        panic!(
            "funcz: {name}.resize_({size:?}): the storage of `{name}` is not laid out contiguously (shape {:?}, \
             strides {:?}), so #[functionalize] cannot tell which elements the resized tensor shows. help: resize \
             a `.contiguous()` copy",
            blay.shape, blay.strides
        );
    }
    let n: i64 = size.iter().product();
    let rel = cur.offset as i64 - blay.offset as i64;
    let need = usize::try_from(rel + n).expect("a non-negative storage extent");
    if rel == 0 && (need >= base.numel() || !keep_tail) {
        // The resized tensor covers the whole (grown) storage, or no later
        // resize can show the elements past its end: it is the new base
        // itself (old elements first, then zeros).
        *base = super::exit::resized(base, size.as_slice());
        bstate.rebind(base);
        *value = base.handle();
        *state = bstate.clone();
        return value.handle();
    }
    if need > base.numel() {
        // The storage grows: old elements first, then zeros.
        *base = super::exit::resized(base, [need as i64]);
        bstate.rebind(base);
    }
    *value = base.handle();
    *state = bstate.clone();
    for meta in [
        ViewMeta::view([-1]),
        ViewMeta::narrow(0, rel, n),
        ViewMeta::view(size.clone()),
    ] {
        meta_inplace(value, state, meta, mode);
    }
    value.handle()
}

/// `v.resize_(size)` on a view `v`, as PyTorch's functionalization does it:
/// shrinking is a new view of the first elements of `v` (`view(-1)`,
/// `slice`, `view(size)`); growing is an error, with PyTorch's message.
/// Returns a handle of the resized view.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let x = Tensor::<f32>::from_vec((0..16).map(|i| i as f32).collect(), &[16]);
/// let mut v = x.view([4, 4]);
/// let mut s = rt::Tracked::root(&v);
/// let r = rt::resize_view("v", &mut v, &mut s, [3, 3], rt::Mode::Views);
/// assert_eq!(r.shape(), &[3, 3]);
/// assert_eq!(r.to_vec()[8], 8.0);
/// ```
#[track_caller]
pub fn resize_view<T: Element>(
    name: &str,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    size: impl crate::args::IntoShape,
    mode: Mode,
) -> Tensor<T> {
    let size = size.into_shape();
    let n: i64 = size.iter().product();
    let have = value.numel() as i64;
    if size.iter().any(|&d| d < 0) {
        panic!("funcz: {name}.resize_({size:?}): sizes must be non-negative");
    }
    if n > have {
        panic!(
            "funcz: {name}.resize_({size:?}) on a view of {have} elements (shape {:?}): Attempted to resize a view \
             tensor to a larger size. This is not allowed in the functionalization pass. help: resize a fresh \
             tensor (`.clone()` the view first)",
            value.shape()
        );
    }
    if !state.original_layout().is_contiguous() {
        panic!(
            "funcz: {name}.resize_({size:?}) on a non-contiguous view (shape {:?}): #[functionalize] does not \
             re-lay out a view over its base's storage. help: resize a `.contiguous()` copy or a `.clone()`",
            value.shape()
        );
    }
    for meta in [
        ViewMeta::view([-1]),
        ViewMeta::narrow(0, 0, n),
        ViewMeta::view(size.clone()),
    ] {
        meta_inplace(value, state, meta, mode);
    }
    value.handle()
}
