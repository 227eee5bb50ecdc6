//! The runtime as generated code names it: one namespace per mode, with
//! the mode fixed.
//!
//! Input: a generated call in `remove = "mutations_and_views"` mode,
//! `rt::commit_vars("add_", &mut b, &mut c, Mode::Copies)`.
//! Output: `rt::copies::commit_vars("add_", &mut b, &mut c)`, the same call
//! without its mode argument.
//!
//! A functionalized body starts with `use ::funcz::rt::views as __fz_rt;`
//! (or `copies`) and names every runtime item through it. Each module
//! re-exports all of [`rt`](crate::rt) and shadows the functions that take a
//! [`Mode`] with forms that pass the module's own. The macro emits
//! thousands of these calls in a large crate, and in an unoptimized build
//! each argument is type-checked, borrow-checked and lowered at every call
//! site (see BENCHMARKS.md, "The mode in the namespace"): the forms here
//! are one instance per crate instead. Anything else that needs the mode
//! (a method such as `MultiMeta::forward`) is given the module's [`MODE`
//! constant](views::MODE).
//!
//! ```
//! use funcz_runtime::rt::{self, Var, ViewMeta};
//! use funcz_runtime::Tensor;
//! use rt::copies as fz;
//! let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
//! let mut c = fz::var_view(&b, ViewMeta::select(0, 1));
//! assert!(!c.value.same_storage(&b.value)); // a `select_copy`
//! fz::own_alias_vars(&b, &mut c);
//! c.value.add_(1.0);
//! fz::commit_vars("add_", &mut b, &mut c);
//! assert_eq!(b.value.to_vec(), vec![0.0, 0.0, 1.0, 1.0]);
//! assert_eq!(fz::MODE, rt::Mode::Copies);
//! ```

/// Declares, in the module it is invoked in, the forms of the mode-taking
/// runtime functions with the mode `$mode`, and that mode as `MODE`.
macro_rules! fixed_mode {
    ($mode:expr; $(
        $(#[$attr:meta])*
        fn $name:ident<$($lt:lifetime,)? $t:ident>($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
    )*) => {
        /// The mode this module's functions pass.
        pub const MODE: crate::rt::Mode = $mode;
        $(
            #[doc = concat!(
                "[`rt::", stringify!($name), "`](crate::rt::", stringify!($name),
                ") with this module's [`MODE`]."
            )]
            $(#[$attr])*
            #[inline]
            #[allow(clippy::too_many_arguments)]
            pub fn $name<$($lt,)? $t: crate::element::Element>($($arg: $ty),*) $(-> $ret)? {
                crate::rt::$name($($arg,)* MODE)
            }
        )*
    };
}

/// The list of mode-taking functions, given to [`fixed_mode`] once per mode.
macro_rules! mode_api {
    ($mode:expr) => {
        #[allow(unused_imports)]
        pub use crate::rt::*;
        use crate::tensor::Tensor;

        fixed_mode! { $mode;
            #[track_caller]
            fn view<T>(parent: &Tensor<T>, pstate: &Tracked, meta: ViewMeta) -> (Tensor<T>, Tracked);
            #[track_caller]
            fn view_var<T>(root: &Var<T>, meta: ViewMeta) -> (Tensor<T>, Tracked);
            #[track_caller]
            fn var_view<T>(root: &Var<T>, meta: ViewMeta) -> Var<T>;
            #[track_caller]
            fn var_view_of<T>(value: &Tensor<T>, state: &Tracked, meta: ViewMeta) -> Var<T>;
            #[track_caller]
            fn view_value<T>(parent: &Tensor<T>, meta: ViewMeta) -> Tensor<T>;
            #[track_caller]
            fn multi_view<T>(parent: &Tensor<T>, pstate: &Tracked, meta: MultiMeta)
                -> (Vec<Tensor<T>>, Vec<Tracked>);
            #[track_caller]
            fn multi_out<T>(parent: &Tensor<T>, pstate: &Tracked, meta: MultiMeta, k: usize)
                -> (Tensor<T>, Tracked);
            #[track_caller]
            fn meta_inplace<T>(value: &mut Tensor<T>, state: &mut Tracked, meta: ViewMeta);
            #[track_caller]
            fn window<T>(root: &mut Tensor<T>, rstate: &mut Tracked, meta: ViewMeta) -> Window<T>;
            #[track_caller]
            fn window_var<T>(v: &mut Var<T>, meta: ViewMeta) -> Window<T>;
            #[track_caller]
            fn commit<T>(
                op: &str, root: &mut Tensor<T>, rstate: &mut Tracked, value: &mut Tensor<T>,
                state: &mut Tracked, new: Tensor<T>,
            );
            #[track_caller]
            fn commit_from<T>(
                op: &str, root: &mut Tensor<T>, rstate: &mut Tracked,
                place: Option<(&mut Tensor<T>, &mut Tracked)>, value: &mut Tensor<T>,
                state: &mut Tracked, new: Tensor<T>,
            );
            fn commit_donated<T>(
                op: &'static str, root: &mut Tensor<T>, rstate: &mut Tracked,
                value: &mut Tensor<T>, state: &mut Tracked,
            );
            fn commit_var<T>(
                op: &'static str, root: &mut Var<T>, value: &mut Tensor<T>, state: &mut Tracked,
            );
            fn commit_vars<T>(op: &'static str, root: &mut Var<T>, alias: &mut Var<T>);
            #[track_caller]
            fn check_current<T>(
                op: &str, root: &Tensor<T>, rstate: &Tracked, value: &Tensor<T>, state: &Tracked,
            );
            fn sync<T>(
                value: &mut Tensor<T>, state: &mut Tracked, root: &Tensor<T>, rstate: &Tracked,
            );
            fn refresh_chain<T>(
                value: &mut Tensor<T>, state: &mut Tracked, root: &Tensor<T>, rstate: &Tracked,
            );
            fn sync_var<T>(value: &mut Tensor<T>, state: &mut Tracked, root: &Var<T>);
            fn sync_vars<T>(alias: &mut Var<T>, root: &Var<T>);
            fn sync_all<T>(
                values: &mut [Tensor<T>], states: &mut [Tracked], root: &Tensor<T>,
                rstate: &Tracked,
            );
            #[track_caller]
            fn resize_root<T>(
                name: &str, value: &mut Tensor<T>, state: &mut Tracked,
                base: (&mut Tensor<T>, &mut Tracked), size: impl crate::args::IntoShape,
                keep_tail: bool,
            ) -> Tensor<T>;
            #[track_caller]
            fn resize_view<T>(
                name: &str, value: &mut Tensor<T>, state: &mut Tracked,
                size: impl crate::args::IntoShape,
            ) -> Tensor<T>;
            fn inplace_alias<'a, T>(root: &'a mut Var<T>, alias: &'a mut Var<T>) -> InPlace<'a, T>;
            #[track_caller]
            fn inplace_window<'a, T>(
                root: &'a mut Tensor<T>, rstate: &'a mut Tracked, meta: ViewMeta,
            ) -> InPlaceWindow<'a, T>;
            #[track_caller]
            fn inplace_window_var<'a, T>(v: &'a mut Var<T>, meta: ViewMeta) -> InPlaceWindow<'a, T>;
            fn output<T>(
                value: &Tensor<T>, state: &Tracked, root: &Tensor<T>, rstate: &Tracked,
            ) -> Tensor<T>;
        }
    };
}

/// One module of mode-taking one-call in-place ops (see
/// [`on_var`](crate::rt::on_var)): `$name::add_(target.., x)` is
/// `$make.add_(x)`, `$make` given the module's mode.
macro_rules! mode_form {
    ($(#[$doc:meta])* $name:ident, $form:literal #[$inline:meta], $params:tt => $make:expr) => {
        $(#[$doc])*
        pub mod $name {
            use crate::element::{Element, FloatElement};
            use crate::ops::Operand;
            use crate::rt::inplace::op_fns;
            // (What the forms' targets and `$make` name, each some of it.)
            #[allow(unused_imports)]
            use crate::rt::{Tracked, Var, ViewMeta, inplace_alias, inplace_window, inplace_window_var};
            use crate::tensor::Tensor;
            crate::rt::inplace::with_inplace_ops!(op_fns $form #[$inline] $params => $make;);
        }
    };
}

/// The mode-taking in-place forms, one call per op:
/// `on_alias::add_(&mut root, &mut alias, x)` is `inplace_alias(&mut root,
/// &mut alias).add_(x)` with the module's mode; `on_window_var` and
/// `on_window` make a window and run the op on it.
macro_rules! mode_forms {
    () => {
        mode_form!(
            /// The in-place ops on an alias held in a `Var` and its root, each
            /// one call, in this module's mode.
            ///
            /// ```
            /// use funcz_runtime::rt::{self, Var, ViewMeta};
            /// use funcz_runtime::Tensor;
            /// use rt::views as fz;
            /// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
            /// let mut r = fz::var_view(&b, ViewMeta::select(0, 1));
            /// fz::on_alias::fill_(&mut b, &mut r, 7.0);
            /// assert_eq!(b.value.to_vec(), vec![0.0, 0.0, 7.0, 7.0]);
            /// ```
            on_alias, "an alias and its root" #[inline(always)],
            (root: &mut Var<T>, alias: &mut Var<T>) => inplace_alias(root, alias, super::MODE)
        );
        mode_form!(
            /// The in-place ops on a window of a root held in a `Var` (see
            /// [`inplace_window_var`](crate::rt::inplace_window_var)), each one
            /// call in this module's mode: `on_window_var::add_(&mut b, meta,
            /// 1.0)`. Generated code calls these when the op's arguments have
            /// no effects to order before the window (literals, variables).
            ///
            /// ```
            /// use funcz_runtime::rt::{self, Var, ViewMeta};
            /// use funcz_runtime::Tensor;
            /// let mut b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
            /// rt::views::on_window_var::add_(&mut b, ViewMeta::select(0, 0), 1.0);
            /// assert_eq!(b.value.to_vec(), vec![1.0, 1.0, 0.0, 0.0]);
            /// ```
            on_window_var, "a window of a root in a `Var`" #[inline(never)],
            (v: &mut Var<T>, meta: ViewMeta) => inplace_window_var(v, meta, super::MODE)
        );
        mode_form!(
            /// [`on_window_var`]'s ops on a window of a root held as a value and
            /// a state: `on_window::add_(&mut x, &mut s, meta, 1.0)`.
            ///
            /// ```
            /// use funcz_runtime::rt::{self, Tracked, ViewMeta};
            /// use funcz_runtime::Tensor;
            /// let mut x = Tensor::<f32>::zeros(&[4]);
            /// let mut s = Tracked::root(&x);
            /// rt::copies::on_window::fill_(&mut x, &mut s, ViewMeta::narrow(0, 2, 2), 5.0);
            /// assert_eq!(x.to_vec(), vec![0.0, 0.0, 5.0, 5.0]);
            /// ```
            on_window, "a window of a root held as a value and a state" #[inline(never)],
            (root: &mut Tensor<T>, rstate: &mut Tracked, meta: ViewMeta)
                => inplace_window(root, rstate, meta, super::MODE)
        );
    };
}

/// The runtime for `remove = "mutations"` (views stay views): all of
/// [`rt`](crate::rt), with the mode-taking functions in [`Mode::Views`](crate::rt::Mode).
///
/// ```
/// use funcz_runtime::rt::{self, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// let c = rt::views::var_view(&b, ViewMeta::select(0, 1));
/// assert!(c.value.same_storage(&b.value)); // a view
/// ```
pub mod views {
    mode_api!(crate::rt::Mode::Views);
    mode_forms!();
}

/// The runtime for `remove = "mutations_and_views"` (every view a
/// `*_copy`): all of [`rt`](crate::rt), with the mode-taking functions in
/// [`Mode::Copies`](crate::rt::Mode).
///
/// ```
/// use funcz_runtime::rt::{self, Var, ViewMeta};
/// use funcz_runtime::Tensor;
/// let b = Var::root(Tensor::<f32>::zeros(&[2, 2]));
/// let c = rt::copies::var_view(&b, ViewMeta::select(0, 1));
/// assert!(!c.value.same_storage(&b.value)); // a copy
/// ```
pub mod copies {
    mode_api!(crate::rt::Mode::Copies);
    mode_forms!();
}
