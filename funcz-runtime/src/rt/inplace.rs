//! An in-place op on a tracked tensor in one runtime call and the user's
//! own call: [`InPlace`].
//!
//! Input (the user's code): `r.mul_(2.0);` on an alias `r` of a root `b`.
//! Output (generated): `rt::inplace_alias(&mut b, &mut r, mode).mul_(2.0);`
//! where it was `rt::own_alias_vars(&b, &mut r); r.value.mul_(2.0);
//! rt::commit_vars("mul_", &mut b, &mut r, mode);`.
//!
//! The constructor does what the first statement did (makes the target's
//! buffer private if anyone else could observe it); the op, a method of
//! [`InPlace`] with exactly the parameters of the [`Tensor`] method of the
//! same name, runs the in-place kernel on it and then commits it as the
//! third statement did. Arguments are evaluated between the two, as
//! before. An unoptimized build type-checks, borrow-checks and lowers one
//! runtime call fewer per op (see BENCHMARKS.md, "An in-place op in one
//! call"); an optimized build inlines both to the same code. The op
//! methods are `#[track_caller]`, so a panic of the op reports the user's
//! line, as the user's own call did. The macro uses this form for the ops
//! of [`optable::INPLACE_TARGET_OPS`](crate::optable::INPLACE_TARGET_OPS)
//! when the arguments neither name the tensors the target borrows mutably
//! while they are evaluated nor were evaluated ahead of the statement (a
//! value evaluated ahead may hold a borrow of them); otherwise the three
//! statements. A temporary view written in one statement has its own
//! one-call form, [`InPlaceWindow`](super::InPlaceWindow), with the same
//! ops.
//!
//! ```
//! use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
//! use funcz_runtime::Tensor;
//! let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
//! let mut r = rt::var_view(&b, ViewMeta::select(0, 1), Mode::Views);
//! rt::inplace_alias(&mut b, &mut r, Mode::Views).add_(2.0);
//! rt::inplace_var(&mut b).mul_(3.0);
//! assert_eq!(b.value.to_vec(), vec![0.0, 0.0, 6.0, 6.0]);
//! ```

use crate::element::{Element, FloatElement};
use crate::ops::Operand;
use crate::tensor::Tensor;

use super::tracked::Tracked;
use super::var::Var;
use super::window::InPlaceWindow;
use super::{
    Mode, commit_vars, donated, donated_root, donated_var, own, own_alias_vars, own_root, own_var,
};

/// A tracked tensor made ready for one in-place op: call the op on it.
/// Its methods are the in-place ops of [`Tensor`], with their parameters;
/// each runs the op and commits it.
///
/// ```
/// use funcz_runtime::rt::{self, Var};
/// use funcz_runtime::Tensor;
/// let mut v = Var::root(Tensor::<f32>::from_vec(vec![-1.0, 4.0], &[2]));
/// rt::inplace_var(&mut v).relu_();
/// rt::inplace_var(&mut v).sqrt_();
/// let w = Tensor::<f32>::ones(&[2]);
/// rt::inplace_var(&mut v).addcmul_(&w, &w, 0.5);
/// assert_eq!(v.value.to_vec(), vec![0.5, 2.5]);
/// ```
#[must_use = "call the in-place op on it: it runs the op and commits it"]
pub struct InPlace<'a, T: Element> {
    target: Target<'a, T>,
}

/// What the op writes and where its commit goes.
enum Target<'a, T: Element> {
    /// A root in an [`rt::Var`](Var) ([`own_var`], [`donated_var`]).
    Var(&'a mut Var<T>),
    /// A root held as a value and a state ([`own_root`], [`donated_root`]).
    Root(&'a mut Tensor<T>, &'a mut Tracked),
    /// A value without a state ([`own`], [`donated`]).
    Value(&'a mut Tensor<T>),
    /// An alias and its root, both `Var`s ([`own_alias_vars`], [`commit_vars`]).
    Alias(&'a mut Var<T>, &'a mut Var<T>, Mode),
}

/// The root `v` made ready for an in-place op ([`own_var`]).
///
/// ```
/// use funcz_runtime::rt::{self, Var};
/// use funcz_runtime::Tensor;
/// let t = Tensor::<f32>::ones(&[2]);
/// let mut v = Var::root(t.clone());
/// rt::inplace_var(&mut v).add_(1.0); // `t` still shares the buffer: `v` gets its own
/// assert_eq!((t.to_vec(), v.value.to_vec()), (vec![1.0, 1.0], vec![2.0, 2.0]));
/// ```
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub fn inplace_var<T: Element>(v: &mut Var<T>) -> InPlace<'_, T> {
    own_var(v);
    InPlace {
        target: Target::Var(v),
    }
}

/// The root `value` (state `state`) made ready for an in-place op
/// ([`own_root`]).
///
/// ```
/// use funcz_runtime::rt::{self, Tracked};
/// use funcz_runtime::Tensor;
/// let mut x = Tensor::<f32>::ones(&[2]);
/// let mut s = Tracked::root(&x);
/// rt::inplace_root(&mut x, &mut s).mul_(4.0);
/// assert_eq!(x.to_vec(), vec![4.0, 4.0]);
/// ```
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub fn inplace_root<'a, T: Element>(
    value: &'a mut Tensor<T>,
    state: &'a mut Tracked,
) -> InPlace<'a, T> {
    own_root(value, state);
    InPlace {
        target: Target::Root(value, state),
    }
}

/// A value no view is ever taken of made ready for an in-place op
/// ([`own`]).
///
/// ```
/// use funcz_runtime::rt;
/// use funcz_runtime::Tensor;
/// let mut x = Tensor::<f32>::ones(&[2]);
/// rt::inplace_value(&mut x).sub_(3.0);
/// assert_eq!(x.to_vec(), vec![-2.0, -2.0]);
/// ```
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub fn inplace_value<T: Element>(value: &mut Tensor<T>) -> InPlace<'_, T> {
    own(value);
    InPlace {
        target: Target::Value(value),
    }
}

/// The alias `alias` of `root` made ready for an in-place op
/// ([`own_alias_vars`]); the op writes it back into `root`
/// ([`commit_vars`]).
///
/// ```
/// use funcz_runtime::rt::{self, Mode, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// let mut c = rt::var_view(&b, ViewMeta::t(), Mode::Copies);
/// rt::inplace_alias(&mut b, &mut c, Mode::Copies).fill_(1.0);
/// assert_eq!(b.value.to_vec(), vec![1.0; 4]);
/// ```
#[cfg_attr(not(debug_assertions), inline(always))]
#[cfg_attr(debug_assertions, inline)]
pub fn inplace_alias<'a, T: Element>(
    root: &'a mut Var<T>,
    alias: &'a mut Var<T>,
    mode: Mode,
) -> InPlace<'a, T> {
    own_alias_vars(root, alias);
    InPlace {
        target: Target::Alias(root, alias, mode),
    }
}

impl<T: Element> InPlace<'_, T> {
    /// The tensor the op writes.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn value(&self) -> &Tensor<T> {
        match &self.target {
            Target::Var(v) => &v.value,
            Target::Root(t, _) | Target::Value(t) => t,
            Target::Alias(_, a, _) => &a.value,
        }
    }

    /// Commits the in-place op `op` that wrote [`value`](Self::value).
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn done(&mut self, op: &'static str) {
        match &mut self.target {
            Target::Var(v) => donated_var(op, v),
            Target::Root(t, s) => donated_root(op, t, s),
            Target::Value(t) => donated(t),
            Target::Alias(root, alias, mode) => commit_vars(op, root, alias, *mode),
        }
    }
}

/// Hands the list of in-place ops the one-call forms run (each with its
/// `Tensor` method's parameters and its `*_in_place` kernel) to the macro
/// `$m`, after the tokens `$pre` (the type to declare them for). An op
/// marked `hot` is inlined at its call sites in every form of
/// [`op_fns`]: `copy_`, the write into a window (a KV-cache update),
/// whose fixed cost per call is a target of its own.
macro_rules! with_inplace_ops {
    ($m:ident $($pre:tt)*) => {
        $m! {
            $($pre)*
            impl<T: Element> {
                fn add_ / add_in_place(other: impl Operand<T>);
                fn sub_ / sub_in_place(other: impl Operand<T>);
                fn mul_ / mul_in_place(other: impl Operand<T>);
                fn div_ / div_in_place(other: impl Operand<T>);
                fn neg_ / neg_in_place();
                fn abs_ / abs_in_place();
                fn relu_ / relu_in_place();
                fn clamp_ / clamp_in_place(min: impl Into<Option<T>>, max: impl Into<Option<T>>);
                fn addcmul_ / addcmul_in_place(t1: &Tensor<T>, t2: &Tensor<T>, value: T);
                fn fill_ / fill_in_place(value: T);
                fn zero_ / zero_in_place();
                fn copy_ / copy_in_place(src: &Tensor<T>) hot;
                fn add_scaled_ / add_scaled_in_place(other: impl Operand<T>, alpha: T);
                fn sub_scaled_ / sub_scaled_in_place(other: impl Operand<T>, alpha: T);
                fn clamp_min_ / clamp_min_in_place(min: T);
                fn clamp_max_ / clamp_max_in_place(max: T);
                fn sign_ / sign_in_place();
            }
            impl<T: FloatElement> {
                fn pow_ / pow_in_place(exponent: impl Operand<T>);
                fn exp_ / exp_in_place();
                fn log_ / log_in_place();
                fn sqrt_ / sqrt_in_place();
                fn sigmoid_ / sigmoid_in_place();
                fn tanh_ / tanh_in_place();
                fn addcdiv_ / addcdiv_in_place(t1: &Tensor<T>, t2: &Tensor<T>, value: T);
                fn lerp_ / lerp_in_place(end: &Tensor<T>, weight: impl Operand<T>);
                fn hardtanh_ / hardtanh_in_place(min_val: T, max_val: T);
                fn addcmul1_ / addcmul1_in_place(t1: &Tensor<T>, t2: &Tensor<T>);
                fn addcdiv1_ / addcdiv1_in_place(t1: &Tensor<T>, t2: &Tensor<T>);
            }
        }
    };
}

/// The op methods of `$target` ([`InPlace`], [`InPlaceWindow`]): each runs
/// the [`Tensor`] method of its name on the target's `value()` (without the
/// handle it returns) and commits it (`done`). Both take the target by
/// value. For a window this was measured both ways: an optimized build
/// passes the caller's temporary by address either way (the KV-cache update
/// and the alias update cost the same instructions per call), and an
/// unoptimized one saves a borrow, and a drop with its unwind path, per op
/// (53 M of the 3,380 M instructions rustc spends on the 50-function crate
/// of `scripts/scale_build.py many`).
macro_rules! op_methods {
    ($target:ident $(impl<$t:ident: $bound:ident> { $(fn $name:ident / $kernel:ident($($arg:ident: $ty:ty),*) $($hot:ident)?;)* })*) => {
        $(
            impl<$t: $bound> $target<'_, $t> {
                $(
                    #[doc = concat!("[`Tensor::", stringify!($name), "`] on the target, then its commit.")]
                    #[track_caller]
                    #[cfg_attr(not(debug_assertions), inline(always))]
                    #[cfg_attr(debug_assertions, inline)]
                    pub fn $name(mut self, $($arg: $ty),*) {
                        self.value().$kernel($($arg),*);
                        self.done(stringify!($name));
                    }
                )*
            }
        )*
    };
}

/// One free function per op for one target form: `$name(target.., args..)`
/// makes the target ready as `$make` does, runs the op and commits it, in
/// one call (see [`on_var`]). `#[$inline]` is the form's inlining in
/// optimized builds: `inline(always)` where the inlined op is a few calls
/// (`on_var`, `on_root`, `on_value`, `on_alias`), `inline(never)` for the
/// window forms, whose inlined fast path (the window's tests, the view
/// made in place, its commit) made each site's code large enough to take
/// the optimizer of an annotated crate 1.66x the original's time
/// (BENCHMARKS.md, "Release builds of annotated crates"); `hot` ops are
/// inlined in every form.
macro_rules! op_fns {
    ($form:literal #[$inline:meta] $params:tt => $make:expr; $(impl<$t:ident: $bound:ident> { $(fn $name:ident / $kernel:ident($($arg:ident: $ty:ty),*) $($hot:ident)?;)* })*) => {
        $($(
            op_fns!(@one $form #[$inline] [$($hot)?] $params => $make; $t $bound $name ($($arg: $ty),*));
        )*)*
    };
    // A `hot` op is inlined at its call sites in every form.
    (@one $form:literal #[$inline:meta] [hot] $($rest:tt)*) => {
        op_fns!(@fn $form #[inline(always)] $($rest)*);
    };
    (@one $form:literal #[$inline:meta] [] $($rest:tt)*) => {
        op_fns!(@fn $form #[$inline] $($rest)*);
    };
    (@fn $form:literal #[$inline:meta] ($($target:ident: $tty:ty),*) => $make:expr; $t:ident $bound:ident $name:ident ($($arg:ident: $ty:ty),*)) => {
        #[doc = concat!("[`Tensor::", stringify!($name), "`] on ", $form, ", then its commit, in one call.")]
        #[track_caller]
        #[cfg_attr(not(debug_assertions), $inline)]
        #[cfg_attr(debug_assertions, inline)]
        pub fn $name<$t: $bound>($($target: $tty,)* $($arg: $ty),*) {
            $make.$name($($arg),*)
        }
    };
}
pub(crate) use {op_fns, with_inplace_ops};

/// The in-place ops on a root held in a [`Var`], each one call:
/// `on_var::add_(&mut v, x)` is `inplace_var(&mut v).add_(x)`. Generated
/// code calls these: one call and no borrowing value between two calls
/// per op, which an unoptimized build compiles faster (the 50 functions of
/// `scripts/scale_build.py many`: 111 M fewer rustc instructions, 3%).
///
/// ```
/// use funcz_runtime::rt::{self, on_var, Var};
/// use funcz_runtime::Tensor;
/// let mut v = Var::root(Tensor::<f32>::from_vec(vec![-1.0, 4.0], &[2]));
/// on_var::relu_(&mut v);
/// on_var::add_(&mut v, &Tensor::ones(&[2]));
/// assert_eq!(v.value.to_vec(), vec![1.0, 5.0]);
/// ```
pub mod on_var {
    use super::*;
    with_inplace_ops!(op_fns "a root in a `Var`" #[inline(always)] (v: &mut Var<T>) => inplace_var(v););
}

/// The in-place ops on a root held as a value and a state, each one call:
/// `on_root::add_(&mut x, &mut s, 1.0)` is `inplace_root(&mut x, &mut
/// s).add_(1.0)` (see [`on_var`]).
///
/// ```
/// use funcz_runtime::rt::{on_root, Tracked};
/// use funcz_runtime::Tensor;
/// let mut x = Tensor::<f32>::ones(&[2]);
/// let mut s = Tracked::root(&x);
/// on_root::mul_(&mut x, &mut s, 3.0);
/// assert_eq!(x.to_vec(), vec![3.0, 3.0]);
/// ```
pub mod on_root {
    use super::*;
    with_inplace_ops!(op_fns "a root held as a value and a state" #[inline(always)]
        (value: &mut Tensor<T>, state: &mut Tracked) => inplace_root(value, state););
}

/// The in-place ops on a value without a state (a collection's element),
/// each one call: `on_value::sub_(&mut t, x)` is `inplace_value(&mut
/// t).sub_(x)` (see [`on_var`]).
///
/// ```
/// use funcz_runtime::rt::on_value;
/// use funcz_runtime::Tensor;
/// let mut t = Tensor::<f32>::ones(&[2]);
/// on_value::sub_(&mut t, 0.5);
/// assert_eq!(t.to_vec(), vec![0.5, 0.5]);
/// ```
pub mod on_value {
    use super::*;
    with_inplace_ops!(op_fns "a value without a state" #[inline(always)] (value: &mut Tensor<T>) => inplace_value(value););
}

/// `NAMES`: the ops the one-call forms run, for the test against the op
/// table.
macro_rules! op_names {
    ($(impl<$t:ident: $bound:ident> { $(fn $name:ident / $kernel:ident($($arg:ident: $ty:ty),*) $($hot:ident)?;)* })*) => {
        /// The ops [`InPlace`] and [`InPlaceWindow`] run.
        #[cfg(test)]
        pub(crate) const NAMES: &[&str] = &[$($(stringify!($name)),*),*];
    };
}

with_inplace_ops!(op_methods InPlace);
with_inplace_ops!(op_methods InPlaceWindow);
with_inplace_ops!(op_names);

#[cfg(test)]
mod tests {
    use super::super::meta::ViewMeta;
    use super::*;
    use crate::trace::Tracer;

    #[test]
    fn the_one_call_ops_are_the_op_tables() {
        let mut ours: Vec<&str> = NAMES.to_vec();
        let mut table: Vec<&str> = crate::optable::INPLACE_TARGET_OPS.to_vec();
        ours.sort_unstable();
        table.sort_unstable();
        assert_eq!(ours, table);
        for op in NAMES {
            assert!(
                matches!(
                    crate::optable::lookup(op).map(|o| o.kind),
                    Some(crate::optable::OpKind::Inplace { .. })
                ),
                "{op}"
            );
        }
    }

    /// Each target gives the values and the trace the three-statement form
    /// gives (own, the user's call, the commit).
    #[test]
    fn each_target_matches_the_three_statement_form() {
        let x = Tensor::<f32>::from_vec((0..6).map(|i| i as f32).collect(), &[2, 3]);
        for mode in [Mode::Views, Mode::Copies] {
            let run = |one_call: bool| {
                let (out, g) = Tracer::new("f").input("x", &x).run(|| {
                    let mut b = Var::root(x.add(1.0));
                    let mut r = super::super::var_view(&b, ViewMeta::select(0, 1), mode);
                    if one_call {
                        inplace_alias(&mut b, &mut r, mode).mul_(2.0);
                        inplace_var(&mut b).add_(0.5);
                        inplace_var(&mut b).clamp_(None, 8.0);
                    } else {
                        own_alias_vars(&b, &mut r);
                        r.value.mul_(2.0);
                        commit_vars("mul_", &mut b, &mut r, mode);
                        own_var(&mut b);
                        b.value.add_(0.5);
                        donated_var("add_", &mut b);
                        own_var(&mut b);
                        b.value.clamp_(None, 8.0);
                        donated_var("clamp_", &mut b);
                    }
                    b.value
                });
                (out.to_vec(), g.to_string())
            };
            let (a, b) = (run(true), run(false));
            assert_eq!(a, b, "{mode:?}");
            assert_eq!(a.0, vec![1.5, 2.5, 3.5, 8.0, 8.0, 8.0], "{mode:?}");
        }
    }

    #[test]
    fn a_value_and_a_root_pair_are_updated_and_recorded_as_functional_ops() {
        let x = Tensor::<f32>::ones(&[3]);
        let (out, g) = Tracer::new("f").input("x", &x).run(|| {
            let mut y = x.add(1.0);
            inplace_value(&mut y).mul_(3.0);
            let mut s = Tracked::root(&y);
            inplace_root(&mut y, &mut s).sub_(1.0);
            y
        });
        assert_eq!(out.to_vec(), vec![5.0, 5.0, 5.0]);
        let g = g.to_string();
        assert!(g.contains("mul(") && g.contains("sub("), "{g}");
        assert!(!g.contains("mul_(") && !g.contains("sub_("), "{g}");
    }
}
