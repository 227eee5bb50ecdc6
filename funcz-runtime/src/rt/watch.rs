//! Calls and macros the macro cannot see into: a tracked tensor handed to
//! one is watched around it. Its storage's version counter says whether
//! the call wrote it (the write is then taken into the functionalized
//! value); its use count says whether the call kept a handle on it (a
//! view, a shallow clone, the tensor itself moved into a result), which
//! later functional updates would leave behind.
//!
//! Input (the user's code): `let y = first(&b); b.add_(1.0); y.sum()`
//! where `first` returns `b.narrow(..)`.
//! Output (generated): `let w = rt::watch(&b); let y = first(&b);
//! if rt::watched("first(..)", "b", &b, w, true) { s.bump() }`, which
//! panics: `y` would not see the later `add_`.

use crate::element::Element;
use crate::tensor::Tensor;

/// What a watched tensor's storage looked like before a call: its version
/// counter and how many handles shared it.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let b = Tensor::<f32>::zeros(&[4]);
/// let w = rt::watch(&b);
/// b.add_(1.0); // what a helper might do
/// assert!(rt::watched("helper(..)", "b", &b, w, true));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watch {
    version: u64,
    uses: usize,
}

/// Records `t`'s storage version and use count before a call.
#[inline]
pub fn watch<T: Element>(t: &Tensor<T>) -> Watch {
    Watch {
        version: t.version(),
        uses: t.storage_use_count(),
    }
}

/// After the call `call` that was handed `name` (value `t`, watched as
/// `before`): true if the call wrote `t`'s storage. With `kept_matters`
/// (the macro saw that `name`'s root is written later, or that `t` stands
/// for a view it cannot hand out as one), panics if the call kept another
/// handle on the storage: that handle would not see the function's later
/// writes, as it does in the original.
///
/// ```should_panic
/// use funcz_runtime::{Tensor, rt};
/// let b = Tensor::<f32>::zeros(&[4]);
/// let w = rt::watch(&b);
/// let kept = b.narrow(0, 0, 2); // what `first(&b)` might return
/// rt::watched("first(..)", "b", &b, w, true); // panics: `kept` is a view of `b`
/// # drop(kept);
/// ```
#[inline]
#[track_caller]
pub fn watched<T: Element>(
    call: &str,
    name: &str,
    t: &Tensor<T>,
    before: Watch,
    kept_matters: bool,
) -> bool {
    if kept_matters && t.storage_use_count() > before.uses {
        kept(call, name, t);
    }
    t.version() != before.version
}

#[cold]
#[inline(never)]
#[track_caller]
fn kept<T: Element>(call: &str, name: &str, t: &Tensor<T>) -> ! {
    panic!(
        "funcz: `{call}` kept a handle on `{name}` (shape {:?}): a view of it, a shallow clone, or the tensor \
         itself moved into what the call returned or stored. #[functionalize] cannot follow that handle: it would \
         miss writes the function makes later, which it sees in the original. help: make views with `let` in the \
         functionalized function itself and keep them there, or hand the call a copy (`.clone()`) if what it keeps \
         should not see later writes",
        t.shape()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_only_reads_is_neither_a_write_nor_a_kept_handle() {
        let b = Tensor::<f32>::zeros(&[4]);
        let w = watch(&b);
        let _sum = b.sum();
        assert!(!watched("read(..)", "b", &b, w, true));
    }

    #[test]
    fn a_handle_dropped_before_the_call_returns_is_not_kept() {
        let b = Tensor::<f32>::zeros(&[4]);
        let w = watch(&b);
        {
            let v = b.narrow(0, 0, 2);
            v.add_(1.0);
        }
        assert!(watched("helper(..)", "b", &b, w, true));
        assert_eq!(b.to_vec(), vec![1.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    #[should_panic(expected = "`first(..)` kept a handle on `b`")]
    fn a_kept_view_panics_when_it_matters() {
        let b = Tensor::<f32>::zeros(&[4]);
        let w = watch(&b);
        let _kept = b.narrow(0, 0, 2);
        watched("first(..)", "b", &b, w, true);
    }

    #[test]
    fn a_kept_view_is_allowed_when_nothing_writes_later() {
        let b = Tensor::<f32>::zeros(&[4]);
        let w = watch(&b);
        let kept = b.narrow(0, 0, 2);
        assert!(!watched("first(..)", "b", &b, w, false));
        assert!(kept.same_storage(&b));
    }
}
