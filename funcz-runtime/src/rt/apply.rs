//! Compile time of expansions (issue 14, item 4): the runtime helpers are
//! generic over the element type, so every crate that calls them would
//! monomorphize them (and the tensor code they call) again, in every
//! profile. The public helpers are thin dispatchers: for `f32`, by far the
//! common element type, they hand their arguments to a non-generic
//! `#[inline(never)]` instance compiled once here, in funcz-runtime;
//! other element types take the generic path as before.
//!
//! The choice is made by a constant (`const { is_f32::<T>() }`), so a
//! dispatcher instantiated for `f32` does not mention the generic path at
//! all (rustc does not collect items under a branch that is constant
//! false after monomorphization) and the one for `f64` does not mention the
//! `f32` instance. The casts are `Any` downcasts of the same type: no
//! `unsafe`, and no run-time cost beyond a type-id comparison.
//!
//! ```
//! use funcz_runtime::rt::{self, Tracked};
//! use funcz_runtime::Tensor;
//! // The same helper, for f32 (the shared instance) and f64 (generic).
//! let mut a = Tensor::<f32>::zeros(&[2]);
//! let mut sa = Tracked::root(&a);
//! let new = a.add(1.0);
//! rt::commit_root("add_", &mut a, &mut sa, new);
//! let mut b = Tensor::<f64>::zeros(&[2]);
//! let mut sb = Tracked::root(&b);
//! let new = b.add(1.0);
//! rt::commit_root("add_", &mut b, &mut sb, new);
//! assert_eq!(a.to_vec(), vec![1.0, 1.0]);
//! assert_eq!(b.to_vec(), vec![1.0, 1.0]);
//! ```

use std::any::Any;

use crate::element::Element;

use super::tracked::Tracked;

/// Defines public helpers generic over the element type as thin
/// dispatchers (see the module docs). Each entry reads
///
/// ```text
/// /// docs
/// pub fn name<T: Element>(arg: Type => cast, ..) -> Ret = body_any, name_f32;
/// ```
///
/// (any visibility: private helpers are dispatched the same way).
///
/// `body_any` is the generic body (written by hand next to it),
/// `name_f32` names the module holding its `f32` instance, and each
/// argument's `cast` turns the dispatcher's argument into the instance's:
/// [`cast_ref`], [`cast_mut`], [`cast_own`] for a `&Tensor<T>`, `&mut
/// Tensor<T>`, `Tensor<T>`, [`same`] for an argument without `T`, or any
/// other function of that shape. The result is cast back by
/// [`cast_own`]. The instance's signature is the dispatcher's with `T` an
/// alias of `f32`.
macro_rules! dispatch_f32 {
    ($(
        $(#[$attr:meta])*
        $vis:vis fn $name:ident<$t:ident: Element>($($arg:ident: $ty:ty => $cast:ident),* $(,)?)
            $(-> $ret:ty)? = $any:ident, $f32:ident;
    )*) => {$(
        $(#[$attr])*
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$t: Element>($($arg: $ty),*) $(-> $ret)? {
            if const { $crate::rt::apply::is_f32::<$t>() } {
                $crate::rt::apply::cast_own($f32::run($($cast($arg)),*))
            } else {
                $any($($arg),*)
            }
        }

        /// The `f32` instance, compiled once in funcz-runtime.
        mod $f32 {
            #[allow(unused_imports)]
            use super::*;
            type $t = f32;
            #[allow(clippy::too_many_arguments)]
            #[inline(never)]
            #[track_caller]
            pub(super) fn run($($arg: $ty),*) $(-> $ret)? {
                super::$any($($arg),*)
            }
        }
    )*};
}

pub(crate) use dispatch_f32;

/// The argument itself (an argument whose type does not mention `T`).
#[inline(always)]
pub(crate) fn same<A>(a: A) -> A {
    a
}

/// [`cast_mut`] of the tensor in a `(place, state)` pair.
#[inline(always)]
pub(crate) fn cast_place<'a, A: 'static, B: 'static>(
    p: Option<(&'a mut A, &'a mut Tracked)>,
) -> Option<(&'a mut B, &'a mut Tracked)> {
    p.map(|(t, s)| (cast_mut(t), s))
}

/// Whether `T` is `f32` (by its dtype name: `Element` types are the
/// primitive scalars), decided at compile time.
pub(crate) const fn is_f32<T: Element>() -> bool {
    let (a, b) = (T::DTYPE.as_bytes(), b"float32");
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cold]
#[inline(never)]
fn not_same() -> ! {
    panic!("funcz: an element type other than f32 names its dtype \"float32\"; only f32 may")
}

/// `t` as the type `B` it is (the caller checked [`is_f32`]).
#[inline(always)]
pub(crate) fn cast_ref<A: 'static, B: 'static>(t: &A) -> &B {
    match (t as &dyn Any).downcast_ref() {
        Some(t) => t,
        None => not_same(),
    }
}

/// [`cast_ref`], mutably.
#[inline(always)]
pub(crate) fn cast_mut<A: 'static, B: 'static>(t: &mut A) -> &mut B {
    match (t as &mut dyn Any).downcast_mut() {
        Some(t) => t,
        None => not_same(),
    }
}

/// [`cast_ref`], by value.
#[inline(always)]
pub(crate) fn cast_own<A: 'static, B: 'static>(t: A) -> B {
    let mut t = Some(t);
    match (&mut t as &mut dyn Any).downcast_mut::<Option<B>>() {
        Some(t) => t.take().expect("just made"),
        None => not_same(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Tensor;

    #[test]
    fn only_f32_is_f32() {
        assert!(is_f32::<f32>());
        assert!(!is_f32::<f64>());
        assert!(!is_f32::<i64>());
        assert!(!is_f32::<i32>());
    }

    #[test]
    fn casts_keep_the_tensor() {
        let mut t = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
        let id = t.id();
        assert_eq!(cast_ref::<_, Tensor<f32>>(&t).id(), id);
        assert_eq!(cast_mut::<_, Tensor<f32>>(&mut t).id(), id);
        let back: Tensor<f32> = cast_own(t);
        assert_eq!(back.id(), id);
        assert_eq!(back.to_vec(), vec![1.0, 2.0]);
    }

    #[test]
    #[should_panic(expected = "only f32 may")]
    fn a_cast_to_another_type_panics() {
        let t = Tensor::<f64>::zeros(&[1]);
        let _: &Tensor<f32> = cast_ref(&t);
    }
}
