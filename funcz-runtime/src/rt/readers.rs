//! Fields of struct parameters that the body only reads as tensors
//! (`cfg.w.add(..)`, `&self.table`), checked at entry against the inputs
//! it mutates: a read of such a field after the input's mutation would
//! otherwise see the input's value at entry.
//!
//! Input: `fn f(x: &mut Tensor, cfg: &Cfg) { x.add_(1.0); cfg.w.sum() }`.
//! Output: `rt::check_readers_disjoint("f", &[("x", &x)], &[("cfg.w",
//! &(&rt::KeyProbe(&cfg.w)).key())])` at entry.

use super::InputKey;

/// A field whose type the macro cannot see, probed for [`InputKey`]: with
/// [`ViaKey`] and [`ViaNone`] in scope, `(&KeyProbe(&field)).key()` is
/// `Some` for a tensor (or a collection of tensors) and `None` for any
/// other type (method resolution picks `ViaKey` when it applies).
///
/// ```
/// use funcz_runtime::{Tensor, rt::{KeyProbe, ViaKey, ViaNone}};
/// let t = Tensor::<f32>::zeros(&[2]);
/// assert!((&KeyProbe(&t)).key().is_some());
/// assert!((&KeyProbe(&1.5f32)).key().is_none());
/// ```
pub struct KeyProbe<'a, T: ?Sized>(pub &'a T);

/// See [`KeyProbe`]: the tensors of a value whose type holds them.
pub trait ViaKey<'a> {
    /// The value as an input key.
    fn key(&self) -> Option<&'a dyn InputKey>;
}

impl<'a, T: InputKey> ViaKey<'a> for KeyProbe<'a, T> {
    fn key(&self) -> Option<&'a dyn InputKey> {
        Some(self.0)
    }
}

/// See [`KeyProbe`]: any other value holds no tensor the check can see.
pub trait ViaNone<'a> {
    /// `None`.
    fn key(&self) -> Option<&'a dyn InputKey>;
}

impl<'a, T: ?Sized> ViaNone<'a> for &KeyProbe<'a, T> {
    fn key(&self) -> Option<&'a dyn InputKey> {
        None
    }
}

/// Panics if a tensor of `readers` (fields the body only reads) shares
/// storage with one of `mutated` (the inputs the body mutates): the body's
/// reads of the field would not see the mutation, the original's would.
/// Readers may share storage with each other (tied weights).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let x = Tensor::<f32>::zeros(&[2]);
/// let other = Tensor::<f32>::zeros(&[2]);
/// rt::check_readers_disjoint("f", &[("x", &x)], &[("cfg.w", &other), ("cfg.v", &other)]);
/// let alias = x.shallow_clone();
/// let r = std::panic::catch_unwind(|| rt::check_readers_disjoint("f", &[("x", &x)], &[("cfg.w", &alias)]));
/// assert!(r.is_err());
/// ```
#[track_caller]
pub fn check_readers_disjoint(
    function: &str,
    mutated: &[(&str, &dyn InputKey)],
    readers: &[(&str, &dyn InputKey)],
) {
    for (reader, r) in readers {
        let mut clash: Option<&str> = None;
        r.visit_keys(&mut |key| {
            for (input, m) in mutated {
                let mut same = false;
                m.visit_keys(&mut |k| same |= k == key);
                if same && clash.is_none() {
                    clash = Some(input);
                }
            }
        });
        // (Outside the closure: the panic points at the caller's line.)
        if let Some(input) = clash {
            panic!(
                "funcz: {function}: `{reader}`, which the body reads, shares storage with the input `{input}`, \
                 which it mutates: #[functionalize] would read `{reader}` as it was at entry. help: read it \
                 through `{input}`, or pass a .clone() of one of them"
            );
        }
    }
}
