//! Per-variable alias state carried by functionalized code, and the
//! operations on it: make a view, regenerate a stale one, commit a mutation.

use crate::element::Element;
use crate::layout::Layout;
use crate::tensor::Tensor;

use super::Mode;
use super::chain::{replay, writeback_into};
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
    detached: bool,
    orig: Orig,
}

/// A layout in the original program, with whether it overlaps itself
/// (checked at every commit, so computed once).
#[derive(Clone, Debug)]
struct Orig {
    layout: Layout,
    overlaps: bool,
}

impl Orig {
    fn new(layout: Layout) -> Self {
        Orig {
            overlaps: layout.has_internal_overlap(),
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

impl Tracked {
    /// The state of a root whose current value is `t`.
    pub fn root<T: Element>(t: &Tensor<T>) -> Self {
        Tracked {
            chain: Chain::Empty,
            generation: 0,
            epoch: 0,
            detached: false,
            orig: Orig::new(t.layout),
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

    /// True if the value no longer aliases its root (a `reshape` that
    /// copied, or an alias of a root that was since rebound).
    fn follows(&self, root: &Tracked) -> bool {
        !self.detached && self.epoch == root.epoch
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

fn check_as_strided(parent: &Tracked, meta: &ViewMeta, parent_value_layout: &Layout) {
    if let ViewMeta::AsStrided(..) = meta {
        let base_ok = parent.chain().is_empty()
            && parent.orig.layout.is_contiguous()
            && parent.orig.layout.offset == 0
            && parent_value_layout.is_contiguous()
            && parent_value_layout.offset == 0;
        if !base_ok {
            panic!(
                "funcz: as_strided: functionalize supports as_strided only directly on a contiguous base \
                 at storage offset 0 (got a base of shape {:?}, strides {:?}, offset {}, {} view(s) from its root); \
                 as_strided is non-compositional (pytorch#104505). help: call .contiguous() or .clone() first",
                &parent.orig.layout.shape[..],
                &parent.orig.layout.strides[..],
                parent.orig.layout.offset,
                parent.chain().len()
            );
        }
    }
}

/// Makes the alias `meta(parent)`: a view in [`Mode::Views`], a `*_copy` in
/// [`Mode::Copies`]; returns its value and state. `reshape`, `flatten` and
/// `contiguous` alias only when the *original* layout allows it, exactly as
/// the mutating program would.
pub fn view<T: Element>(
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
        // A copy in the original program: a fresh, detached value.
        let value = match &meta {
            ViewMeta::Reshape(s) => parent.reshape(s.as_slice()),
            ViewMeta::Flatten => parent.flatten(),
            _ => parent.contiguous(),
        };
        let state = Tracked {
            chain: Chain::Empty,
            generation: 0,
            epoch: 0,
            detached: true,
            orig: Orig::new(Layout::contiguous(value.shape())),
        };
        return (value, state);
    }
    check_as_strided(pstate, &meta, &parent.layout);
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
            detached: pstate.detached,
            orig,
        },
    )
}

/// The value of `meta(parent)` for a view that is only read (never
/// mutated or bound): a view or a `*_copy` by mode.
pub fn view_value<T: Element>(parent: &Tensor<T>, meta: ViewMeta, mode: Mode) -> Tensor<T> {
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

/// Makes the outputs of a multi-output view (`split`, `chunk`, `unbind`)
/// with one state each.
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
                detached: pstate.detached,
                orig,
            }
        })
        .collect();
    (values, states)
}

/// Regenerates `value` from its root if the root was mutated since the
/// value was last made (lazily, as PyTorch: only where it is used).
pub fn sync<T: Element>(
    value: &mut Tensor<T>,
    state: &mut Tracked,
    root: &Tensor<T>,
    rstate: &Tracked,
    mode: Mode,
) {
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

/// Commits `new` as the value of the alias `value` after the in-place op
/// `op`: writes it back into `root` through the alias's chain, bumps the
/// root's generation and makes the alias current. Panics, as the mutating
/// program would, if the alias overlaps itself in the original program.
///
/// The alias's old value is dropped first, so that a root it was a view of
/// can be uniquely held again; a uniquely held root then takes the write
/// as an in-window scatter into its own buffer (see [`writeback_into`]).
pub fn commit<T: Element>(
    op: &str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    new: Tensor<T>,
    mode: Mode,
) {
    check_overlap(op, &state.orig);
    *value = new;
    commit_value(root, rstate, value, state, mode);
}

/// The donating twin of [`commit`]: the in-place op `op` already ran on
/// the alias `value` itself ([`can_donate_alias`](super::can_donate_alias)
/// said nobody else can observe it), so `value` is given a fresh identity
/// and recorded as the functional op `functional` (see
/// [`donated`](super::donated)), then written back into `root` as
/// [`commit`] does. When `value` is a view of a root buffer only the two of
/// them hold, the window already holds the new data and the write-back only
/// records its scatter.
pub fn commit_donated<T: Element>(
    op: &str,
    functional: &'static str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    mode: Mode,
) {
    check_overlap(op, &state.orig);
    super::donated(functional, value);
    commit_value(root, rstate, value, state, mode);
}

/// Writes the alias's new `value` back into `root` (if the alias still
/// follows it) and makes the alias current.
fn commit_value<T: Element>(
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    value: &Tensor<T>,
    state: &mut Tracked,
    mode: Mode,
) {
    if state.follows(rstate) {
        writeback_into(root, state.chain.as_slice(), value, mode);
        rstate.generation += 1;
        state.generation = rstate.generation;
    }
}

/// Commits `new` as the value of a root after the in-place op `op`.
pub fn commit_root<T: Element>(
    op: &str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
    new: Tensor<T>,
) {
    check_overlap(op, &rstate.orig);
    *root = new;
    rstate.generation += 1;
}

/// The donating twin of [`commit_root`]: the in-place op `op` already ran
/// on `root`'s own buffer ([`can_donate`](super::can_donate) said nobody
/// else can observe it); `root` gets a fresh identity, recorded as the
/// functional op `functional` (see [`donated`](super::donated)).
pub fn donated_root<T: Element>(
    op: &str,
    functional: &'static str,
    root: &mut Tensor<T>,
    rstate: &mut Tracked,
) {
    check_overlap(op, &rstate.orig);
    super::donated(functional, root);
    rstate.generation += 1;
}

/// Applies the metadata mutation `meta` (`t_`, `transpose_`, ...) to an
/// alias: its chain grows, its data is untouched.
pub fn meta_inplace<T: Element>(
    value: &mut Tensor<T>,
    state: &mut Tracked,
    meta: ViewMeta,
    mode: Mode,
) {
    let (v, s) = view(value, state, meta, mode);
    *value = v;
    *state = s;
}
