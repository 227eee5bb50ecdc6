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
    use crate::ops::overlap::{Overlap, layouts_overlap, place, refuse};
    let (name, any, params) = as_reported(op);
    let (target_key, target_layout) = place(target);
    for (i, a) in args.iter().enumerate() {
        let Some(param) = params.get(i).copied().filter(|p| !p.is_empty()) else {
            continue;
        };
        if let Some((key, id, src)) = a.and_then(|a| a.single_tensor())
            && key == target_key
        {
            let overlap = if id == target.id {
                Overlap::Full
            } else {
                layouts_overlap(target_layout, src)
            };
            if overlap == Overlap::Partial || (any && overlap == Overlap::Full) {
                refuse(name, param, target_layout, src)
            }
        }
    }
}

/// How the kernel of the in-place op `op` checks its arguments against
/// the tensor it writes, so that [`check_args_overlap`]'s panic is the
/// op's own: the op name it reports (PyTorch's: `add_scaled_` is `add_`
/// with `alpha`), whether it refuses a full overlap too (the indexed ops),
/// and the names of its checked parameters by position (`""`: not checked;
/// positions past the end neither). An op not in
/// [`OVERLAP_CHECKED_OPS`](crate::optable::OVERLAP_CHECKED_OPS) checks
/// nothing (a test keeps the two lists one).
fn as_reported(op: &str) -> (&str, bool, &'static [&'static str]) {
    const OTHER: &[&str] = &["other"];
    const ADDC: &[&str] = &["tensor1", "tensor2"];
    const SOURCE: &[&str] = &["", "index", "source"];
    match op {
        "add_" | "sub_" | "mul_" | "div_" => (op, false, OTHER),
        "add_scaled_" => ("add_", false, OTHER),
        "sub_scaled_" => ("sub_", false, OTHER),
        "addcmul1_" => ("addcmul_", false, ADDC),
        "addcdiv1_" => ("addcdiv_", false, ADDC),
        "addcmul_" | "addcdiv_" => (op, false, ADDC),
        "lerp_" => (op, false, &["end", "weight"]),
        "pow_" => (op, false, &["exponent"]),
        "copy_" => (op, false, &["src"]),
        "index_copy_" | "index_add_" => (op, true, SOURCE),
        "index_add_scaled_" => ("index_add_", true, SOURCE),
        "scatter_" | "scatter_add_" => (op, true, &["", "index", "src"]),
        "index_put_" => (op, true, &["", "values"]),
        _ => (op, false, &[]),
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

    /// `as_reported` checks the ops of the op table's list, and no other.
    #[test]
    fn the_reported_checks_are_the_listed_ops() {
        for op in crate::optable::OVERLAP_CHECKED_OPS {
            assert!(!super::as_reported(op).2.is_empty(), "{op}");
        }
        for op in crate::optable::INPLACE_TARGET_OPS {
            let listed = crate::optable::OVERLAP_CHECKED_OPS.contains(op);
            assert_eq!(!super::as_reported(op).2.is_empty(), listed, "{op}");
        }
        assert!(super::as_reported("masked_scatter_").2.is_empty());
    }

    fn message(f: impl FnOnce()) -> String {
        let e = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("a panic");
        e.downcast_ref::<String>().cloned().expect("a message")
    }

    /// For every elementwise op with tensor parameters, an argument
    /// partially overlapping the target in each parameter: the check's
    /// panic is the op's own, word for word.
    #[test]
    fn the_overlap_check_panics_as_each_op_does() {
        use super::super::{KeyProbe, ViaKey};
        let base = || Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        let ones = Tensor::<f32>::ones(&[2, 2]);
        type Op = fn(&Tensor<f32>, &Tensor<f32>, &Tensor<f32>);
        let ops: &[(&str, usize, Op)] = &[
            ("add_", 0, |b, a, _| drop(b.add_(a))),
            ("sub_", 0, |b, a, _| drop(b.sub_(a))),
            ("mul_", 0, |b, a, _| drop(b.mul_(a))),
            ("div_", 0, |b, a, _| drop(b.div_(a))),
            ("pow_", 0, |b, a, _| drop(b.pow_(a))),
            ("add_scaled_", 0, |b, a, _| drop(b.add_scaled_(a, 2.0))),
            ("sub_scaled_", 0, |b, a, _| drop(b.sub_scaled_(a, 2.0))),
            ("copy_", 0, |b, a, _| drop(b.copy_(a))),
            ("lerp_", 0, |b, a, o| drop(b.lerp_(a, o))),
            ("lerp_", 1, |b, a, o| drop(b.lerp_(o, a))),
            ("addcmul_", 0, |b, a, o| drop(b.addcmul_(a, o, 0.5))),
            ("addcmul_", 1, |b, a, o| drop(b.addcmul_(o, a, 0.5))),
            ("addcdiv_", 1, |b, a, o| drop(b.addcdiv_(o, a, 0.5))),
            ("addcmul1_", 1, |b, a, o| drop(b.addcmul1_(o, a))),
            ("addcdiv1_", 0, |b, a, o| drop(b.addcdiv1_(a, o))),
        ];
        for &(op, at, run) in ops {
            assert!(crate::optable::OVERLAP_CHECKED_OPS.contains(&op), "{op}");
            let b = base();
            let own = message(|| run(&b, &b.t(), &ones));
            let b = base();
            let t = b.t();
            let probes = if at == 0 {
                [KeyProbe(&t).key(), KeyProbe(&ones).key()]
            } else {
                [KeyProbe(&ones).key(), KeyProbe(&t).key()]
            };
            let ours = message(|| check_args_overlap(op, &b, &probes));
            assert_eq!(ours, own, "{op}");
        }
        // The indexed ops refuse any overlap of their source, the very
        // target included.
        let idx = Tensor::<i64>::from_vec(vec![0, 1], &[2]);
        type Indexed = fn(&Tensor<f32>, &Tensor<i64>, &Tensor<f32>);
        let indexed: &[(&str, usize, Indexed)] = &[
            ("index_copy_", 2, |b, i, s| drop(b.index_copy_(0, i, s))),
            ("index_add_", 2, |b, i, s| drop(b.index_add_(0, i, s))),
            ("index_add_scaled_", 2, |b, i, s| {
                drop(b.index_add_scaled_(0, i, s, 2.0))
            }),
            ("scatter_", 2, |b, i, s| drop(b.scatter_(0, i, s))),
            ("scatter_add_", 2, |b, i, s| drop(b.scatter_add_(0, i, s))),
            ("index_put_", 1, |b, i, s| {
                drop(b.index_put_(&[i], s, false))
            }),
        ];
        for &(op, at, run) in indexed {
            assert!(crate::optable::OVERLAP_CHECKED_OPS.contains(&op), "{op}");
            for whole in [false, true] {
                let b = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]);
                let (src, idx) = if whole {
                    (b.alias(), Tensor::<i64>::from_vec(vec![3, 2, 1, 0], &[4]))
                } else {
                    (b.narrow(0, 1, 2), idx.alias())
                };
                let own = message(|| run(&b.alias(), &idx, &src.alias()));
                let mut probes: Vec<Option<&dyn crate::rt::InputKey>> = vec![None; at + 1];
                probes[at] = KeyProbe(&src).key();
                let ours = message(|| check_args_overlap(op, &b, &probes));
                assert_eq!(ours, own, "{op} whole={whole}");
            }
        }
    }
}
