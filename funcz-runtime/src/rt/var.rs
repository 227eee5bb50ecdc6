//! A tensor of the functionalized body held with its state in one local.
//!
//! Generated code keeps each tracked fresh root (a tensor the body makes
//! and mutates), each alias a `let` binds and each view of a chain it
//! makes as one [`Var`]: its current value and its [`Tracked`] state side
//! by side. The body reads the value as `v.value`; the runtime calls that
//! update it take the whole `&mut Var`, one argument where the value and
//! state were two. That is what an unoptimized build pays for: every
//! local is a debug-info variable and a borrow-checker place, and every
//! argument a borrow. In optimized builds each call below inlines to the
//! two-argument call it forwards to. (Mutated inputs stay two locals: a
//! `Var` made at every call cost more than the two, see the macro's
//! `Lowerer::in_var`.)

use crate::element::Element;
use crate::tensor::Tensor;

use super::meta::ViewMeta;
use super::tracked::Tracked;
use super::window::Window;
use super::{Mode, commit_donated, donated_root, own_alias, own_root, sync, view, window};

/// A root's current value and its state, one local of the generated code.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// let mut w = rt::window_var(&mut b, ViewMeta::select(0, 1), Mode::Views);
/// w.fill_(3.0);
/// rt::window_var_done("fill_", &mut b, &mut w);
/// assert_eq!(b.value.to_vec(), vec![0.0, 0.0, 3.0, 3.0]);
/// ```
// (Not `Debug`: a `Var` that reached user code, a format capture say,
// must not compile rather than print something else.)
pub struct Var<T: Element = f32> {
    /// The root's current value (what the body reads).
    pub value: Tensor<T>,
    /// Its state ([`Tracked::root`]'s, or a view's).
    pub state: Tracked,
}

impl<T: Element> Var<T> {
    /// A fresh root: `value` with [`Tracked::root`]'s state.
    ///
    /// ```
    /// use funcz_runtime::rt::Var;
    /// use funcz_runtime::Tensor;
    /// let v = Var::root(Tensor::<f32>::ones(&[3]));
    /// assert!(v.state.chain().is_empty());
    /// ```
    // (The state is written straight into the `Var`: built by a call and
    // moved in, it was copied, 272 bytes per call. Optimized builds
    // inline it; debug builds call one instance per crate.)
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline(never))]
    pub fn root(value: Tensor<T>) -> Self {
        Var {
            state: Tracked::of_root_here(&value.layout, 0),
            value,
        }
    }

    /// A mutated input: a handle to the caller's tensor `t`
    /// ([`input`](super::input)) with [`Tracked::input`]'s state, each
    /// built where the `Var` lives.
    ///
    /// ```
    /// use funcz_runtime::rt::Var;
    /// use funcz_runtime::Tensor;
    /// let t = Tensor::<f32>::ones(&[3]);
    /// let v = Var::input(&t);
    /// assert!(v.value.same_storage(&t));
    /// ```
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub fn input(t: &Tensor<T>) -> Self {
        Var {
            state: Tracked::of_root_here(&t.layout, t.storage_key()),
            value: super::input(t),
        }
    }

    /// An alias and its state, as [`view`] returns them.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
    /// let r = Var::of_pair(rt::view_var(&b, ViewMeta::select(0, 1), Mode::Views));
    /// assert_eq!(r.value.shape(), &[2]);
    /// ```
    #[inline]
    pub fn of_pair((value, state): (Tensor<T>, Tracked)) -> Self {
        Var { value, state }
    }
}

/// [`own_root`] of a [`Var`].
///
/// ```
/// use funcz_runtime::rt::{self, Var};
/// use funcz_runtime::Tensor;
/// let t = Tensor::<f32>::ones(&[2]);
/// let mut v = Var::root(t.clone());
/// rt::own_var(&mut v); // `t` still shares the buffer: `v` gets its own
/// v.value.add_(1.0);
/// rt::donated_var("add_", &mut v);
/// assert_eq!((t.to_vec(), v.value.to_vec()), (vec![1.0, 1.0], vec![2.0, 2.0]));
/// ```
#[inline]
pub fn own_var<T: Element>(v: &mut Var<T>) {
    own_root(&mut v.value, &v.state)
}

/// [`donated_root`] of a [`Var`] (see [`own_var`]).
#[inline]
pub fn donated_var<T: Element>(op: &'static str, v: &mut Var<T>) {
    donated_root(op, &mut v.value, &mut v.state)
}

/// [`window`] of a [`Var`] (see [`Var`]).
#[inline]
#[track_caller]
pub fn window_var<T: Element>(v: &mut Var<T>, meta: ViewMeta, mode: Mode) -> Window<T> {
    window(&mut v.value, &mut v.state, meta, mode)
}

/// [`window_done`](super::window_done) of a [`Var`] (see [`Var`]).
#[inline]
pub fn window_var_done<T: Element>(op: &'static str, v: &mut Var<T>, w: &mut Window<T>) {
    super::window_done(op, &mut v.value, &mut v.state, w)
}

/// [`view`] of a [`Var`]: the alias and its state.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// let (mut r, mut rs) = rt::view_var(&b, ViewMeta::select(0, 0), Mode::Views);
/// rt::own_alias_var(&b, &mut r, &rs);
/// r.add_(1.0);
/// rt::commit_var("add_", &mut b, &mut r, &mut rs, Mode::Views);
/// assert_eq!(b.value.to_vec(), vec![1.0, 1.0, 0.0, 0.0]);
/// b.value.mul_(2.0);
/// rt::sync_var(&mut r, &mut rs, &b, Mode::Views);
/// assert_eq!(r.to_vec(), vec![2.0, 2.0]);
/// ```
#[inline]
#[track_caller]
pub fn view_var<T: Element>(root: &Var<T>, meta: ViewMeta, mode: Mode) -> (Tensor<T>, Tracked) {
    view(&root.value, &root.state, meta, mode)
}

/// [`view`] of a [`Var`], as a [`Var`]: the view a generated `let` or
/// view chain binds, in one call.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 3]));
/// let mut r = rt::var_view(&b, ViewMeta::select(1, 2), Mode::Views);
/// rt::own_alias_vars(&b, &mut r);
/// r.value.fill_(5.0);
/// rt::commit_vars("fill_", &mut b, &mut r, Mode::Views);
/// assert_eq!(b.value.to_vec(), vec![0.0, 0.0, 5.0, 0.0, 0.0, 5.0]);
/// ```
#[inline]
#[track_caller]
pub fn var_view<T: Element>(root: &Var<T>, meta: ViewMeta, mode: Mode) -> Var<T> {
    var_view_of(&root.value, &root.state, meta, mode)
}

/// [`view`] of a root held as a value and a state (a mutated input), as a
/// [`Var`] (see [`var_view`]).
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
/// use funcz_runtime::Tensor;
/// let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
/// let s = Tracked::root(&x);
/// let r = rt::var_view_of(&x, &s, ViewMeta::t(), Mode::Copies);
/// assert_eq!(r.value.to_vec(), vec![1.0, 3.0, 2.0, 4.0]);
/// assert!(!r.value.same_storage(&x)); // a `t_copy` in `Mode::Copies`
/// ```
#[inline]
#[track_caller]
pub fn var_view_of<T: Element>(
    value: &Tensor<T>,
    state: &Tracked,
    meta: ViewMeta,
    mode: Mode,
) -> Var<T> {
    Var::of_pair(view(value, state, meta, mode))
}

/// [`own_alias`] of an alias of a [`Var`] (see [`view_var`]).
#[inline]
pub fn own_alias_var<T: Element>(root: &Var<T>, value: &mut Tensor<T>, state: &Tracked) {
    own_alias(&root.value, &root.state, value, state)
}

/// [`commit_donated`] into a [`Var`] (see [`view_var`]).
#[inline]
pub fn commit_var<T: Element>(
    op: &'static str,
    root: &mut Var<T>,
    value: &mut Tensor<T>,
    state: &mut Tracked,
    mode: Mode,
) {
    commit_donated(op, &mut root.value, &mut root.state, value, state, mode)
}

/// [`sync`] of an alias of a [`Var`] (see [`view_var`]).
#[inline]
pub fn sync_var<T: Element>(value: &mut Tensor<T>, state: &mut Tracked, root: &Var<T>, mode: Mode) {
    sync(value, state, &root.value, &root.state, mode)
}

/// [`own_alias`] of an alias held in a [`Var`] (see [`commit_vars`]).
#[inline]
pub fn own_alias_vars<T: Element>(root: &Var<T>, alias: &mut Var<T>) {
    own_alias_var(root, &mut alias.value, &alias.state)
}

/// [`commit_donated`] of an alias held in a [`Var`] into its root.
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// let mut r = Var::of_pair(rt::view_var(&b, ViewMeta::select(0, 1), Mode::Views));
/// rt::own_alias_vars(&b, &mut r);
/// r.value.add_(1.0);
/// rt::commit_vars("add_", &mut b, &mut r, Mode::Views);
/// assert_eq!(b.value.to_vec(), vec![0.0, 0.0, 1.0, 1.0]);
/// b.value.mul_(3.0);
/// rt::sync_vars(&mut r, &b, Mode::Views);
/// assert_eq!(r.value.to_vec(), vec![3.0, 3.0]);
/// ```
#[inline]
pub fn commit_vars<T: Element>(
    op: &'static str,
    root: &mut Var<T>,
    alias: &mut Var<T>,
    mode: Mode,
) {
    commit_var(op, root, &mut alias.value, &mut alias.state, mode)
}

/// [`sync`] of an alias held in a [`Var`] (see [`commit_vars`]).
#[inline]
pub fn sync_vars<T: Element>(alias: &mut Var<T>, root: &Var<T>, mode: Mode) {
    sync_var(&mut alias.value, &mut alias.state, root, mode)
}
