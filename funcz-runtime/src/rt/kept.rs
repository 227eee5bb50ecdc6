//! An in-place op keeps its target's shape: the check on the result of the
//! functional twin that stands in for it.
//!
//! Input (generated): `let new = y.add(&w); rt::commit_root("add_", &mut y, &mut s, new);`
//! for `y.add_(&w)` on a root another handle shares.
//! Output: the same commit, which first refuses a `new` whose shape is not
//! `y`'s.
//!
//! The functional op broadcasts its operands both ways; the in-place op
//! only broadcasts them into its target, and the original program panics
//! when they would make the target bigger (`y` of shape `[3]`, `w` of shape
//! `[2, 3]`). Without this check the functionalized program went on with
//! a value of the bigger shape (and wrote it back into the caller's
//! tensor). Every commit of a functional result (`commit`, `commit_from`,
//! `commit_root`, and so a fused run's step) checks it (`resize_`, which
//! sets the shape, commits with `commit_resized`); generated code that
//! replaces a value without a commit checks it with [`kept`].

use crate::dims::same_dims;
use crate::element::Element;
use crate::tensor::Tensor;

/// Panics as the in-place op `op` does when its operands broadcast to a
/// shape other than its target's: `new`, the functional twin's result,
/// must have the shape of `target`, the tensor the op writes.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let y = Tensor::<f32>::ones(&[3]);
/// rt::kept_shape("add_", &y, &y.add(1.0)); // the same shape: fine
/// let r = std::panic::catch_unwind(|| rt::kept_shape("add_", &y, &Tensor::ones(&[2, 3])));
/// assert!(r.is_err());
/// ```
#[inline]
#[track_caller]
pub fn kept_shape<T: Element>(op: &str, target: &Tensor<T>, new: &Tensor<T>) {
    if !same_dims(target.shape(), new.shape()) {
        shape_changed(op, target.shape(), new.shape())
    }
}

/// `new` once [`kept_shape`] accepts it: the value a generated `y = new`
/// assigns for the in-place op `op` on `target`.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let mut y = Tensor::<f32>::ones(&[2]);
/// y = rt::kept("mul_", &y, y.mul(3.0));
/// assert_eq!(y.to_vec(), vec![3.0, 3.0]);
/// ```
#[inline]
#[track_caller]
pub fn kept<T: Element>(op: &str, target: &Tensor<T>, new: Tensor<T>) -> Tensor<T> {
    kept_shape(op, target, &new);
    new
}

/// Panics as the in-place op `op` does when one of its arguments (`args`,
/// probed with [`KeyProbe`](super::KeyProbe): `None` for a value that is
/// no tensor) partially overlaps `target`, the tensor it writes (PyTorch
/// refuses it: the result would depend on the order elements are written
/// in). Generated code runs it before the functional twin that stands in
/// for the op on a shared target: the twin reads a consistent old value
/// and would have computed a result where the original panics.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// use funcz_runtime::rt::{KeyProbe, ViaKey, ViaNone};
/// let x = Tensor::<f32>::zeros(&[4]);
/// let (head, tail) = (x.narrow(0, 0, 2), x.narrow(0, 1, 2));
/// rt::check_args_overlap("add_", &head, &[(&KeyProbe(&x.narrow(0, 2, 2))).key(), (&KeyProbe(&1.0f32)).key()]);
/// let r = std::panic::catch_unwind(|| rt::check_args_overlap("add_", &head, &[(&KeyProbe(&tail)).key()]));
/// assert!(r.is_err());
/// ```
#[track_caller]
pub fn check_args_overlap<T: Element>(
    op: &str,
    target: &Tensor<T>,
    args: &[Option<&dyn super::InputKey>],
) {
    use crate::ops::overlap::{Overlap, layouts_overlap, refuse};
    for (i, a) in args.iter().enumerate() {
        if let Some((key, id, src)) = a.and_then(|a| a.single_tensor())
            && key == target.storage_key()
            && id != target.id
            && layouts_overlap(&target.layout, src) == Overlap::Partial
        {
            refuse(op, &format!("#{}", i + 1), &target.layout, src)
        }
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn shape_changed(op: &str, target: &[usize], new: &[usize]) -> ! {
    panic!("funcz: {op}: output with shape {target:?} doesn't match the broadcast shape {new:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_of_the_targets_shape_is_kept_and_another_refused() {
        let y = Tensor::<f32>::ones(&[3]);
        assert_eq!(kept("add_", &y, y.add(1.0)).to_vec(), vec![2.0; 3]);
        let err = std::panic::catch_unwind(|| kept("add_", &y, y.add(Tensor::ones(&[2, 3]))))
            .expect_err("a bigger result");
        let msg = err.downcast_ref::<String>().expect("a message");
        assert_eq!(
            msg,
            "funcz: add_: output with shape [3] doesn't match the broadcast shape [2, 3]"
        );
        // The message is the in-place op's own.
        let own = std::panic::catch_unwind(|| y.add_(Tensor::ones(&[2, 3])))
            .expect_err("the in-place op refuses it too");
        assert_eq!(own.downcast_ref::<String>(), Some(msg));
    }
}
