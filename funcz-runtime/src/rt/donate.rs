//! Buffer donation: functional updates that reuse the old value's buffer
//! when nobody can observe it ("ownership is donation", DESIGN.md).
//!
//! A functional update `x = add(x, y)` whose old `x` is dead may write the
//! result into `x`'s buffer if no other handle shares it: generated code
//! asks [`can_donate`] (or [`can_donate_alias`] for a view of a root), runs
//! the in-place kernel (`x.add_(y)`) instead of the functional op, and then
//! calls [`donated_root`](super::donated_root) /
//! [`commit_donated`](super::commit_donated) (or [`donated`] directly),
//! which give `x` a fresh identity and record the node in the trace as the
//! functional op (`add(x, y)`): the program stays observably pure and the
//! trace still shows the functional op; only the buffer is reused.
//!
//! The test is the storage's reference count: a buffer is donated only if
//! the value being updated holds the only handle to it (or the only other
//! one is a caller's tensor that cannot observe it until the function
//! returns, see [`Tracked::input`]). `Tracked` states and trace recording
//! hold no tensors. A mutated input's buffer is updated in place only
//! while its value still holds it and the caller's tensor is its one other
//! handle; the exit then records the write-back `copy_` without copying
//! ([`write_back`](super::write_back)).
//!
//! ```
//! use funcz_runtime::{Tensor, rt};
//! let x = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
//! let mut y = x.add(1.0); // a fresh value, held only by `y`
//! assert!(rt::can_donate(&y));
//! let old = y.id();
//! y.mul_(10.0); // y = mul(y, 10.0), computed in y's buffer
//! rt::donated(&mut y);
//! assert_ne!(y.id(), old);
//! assert_eq!(y.to_vec(), vec![20.0, 30.0]);
//! let z = y.shallow_clone(); // another handle: no longer donatable
//! assert!(!rt::can_donate(&y));
//! # drop(z);
//! ```

use std::sync::Arc;

use crate::element::Element;
use crate::tensor::Tensor;

use super::apply::{cast_ref, dispatch_f32, same};
use super::tracked::Tracked;

/// True if a functional update of `t` may write its result into `t`'s own
/// buffer: `t` holds the only handle to its storage, and `t` is row-major
/// from offset 0, so that the in-place result has the same shape and
/// strides as the functional one. Generated code evaluates the op's
/// arguments before it asks, so no user code runs between the test and the
/// in-place kernel; a borrow of `t` among the arguments is `t` itself,
/// which the in-place kernels read completely before writing.
#[inline]
pub fn can_donate<T: Element>(t: &Tensor<T>) -> bool {
    sole_row_major(t, 0)
}

/// [`can_donate`] for a root with state `state`: a mutated input's value
/// that still holds the caller's buffer may also be updated in it, when
/// the caller's handle is the only other one (see [`Tracked::input`]).
#[inline]
pub fn can_donate_root<T: Element>(t: &Tensor<T>, state: &Tracked) -> bool {
    sole_row_major(t, state.caller_handles(t))
}

/// [`can_donate`] for an element of a collection input: `t` may also be
/// updated in its buffer when the only other handle to it is the caller's
/// element `caller` (`None` past the caller's length), which cannot observe
/// it until the function returns and writes the final value into it.
#[inline]
pub fn can_donate_elem<T: Element>(t: &Tensor<T>, caller: Option<&Tensor<T>>) -> bool {
    let extra = caller.map_or(0, |c| usize::from(c.same_storage(t)));
    sole_row_major(t, extra)
}

/// `t` and `extra` handles that cannot observe it are its storage's only
/// handles, and `t` is row-major from offset 0.
#[inline]
fn sole_row_major<T: Element>(t: &Tensor<T>, extra: usize) -> bool {
    // (Weak handles are the overlap checks' records, which never read the
    // elements: see `crate::ops::overlap`.)
    Arc::strong_count(&t.storage) == 1 + extra && t.layout.offset == 0 && t.layout.is_contiguous()
}

dispatch_f32! {
    /// True if the alias `value` (state `state`) of `root` may be updated by
    /// the in-place kernel instead of the functional op. Either
    /// - `value`'s own buffer is donatable (as [`can_donate`]: a `*_copy`, or a
    ///   value that no longer shares the root's storage), or
    /// - `value` is a view, one view away from `root`, of a root buffer that
    ///   only `root` and `value` hold (and the caller, for a mutated input, see
    ///   [`Tracked::input`]), is in sync with the root, and neither it nor its
    ///   layout in the original program overlaps itself: the in-place kernel
    ///   then writes straight into the root's buffer (what the original
    ///   program does) and [`commit_donated`](super::commit_donated) finds the
    ///   window already written, so the write-back records its scatter without
    ///   copying.
    pub fn can_donate_alias<T: Element>(
        root: &Tensor<T> => cast_ref,
        rstate: &Tracked => same,
        value: &Tensor<T> => cast_ref,
        state: &Tracked => same,
    ) -> bool = can_donate_alias_any, can_donate_alias_f32;
}

/// The generic body of [`can_donate_alias`].
fn can_donate_alias_any<T: Element>(
    root: &Tensor<T>,
    rstate: &Tracked,
    value: &Tensor<T>,
    state: &Tracked,
) -> bool {
    if sole_row_major(value, 0) {
        return true;
    }
    state.chain().len() == 1
        && state.is_current(rstate)
        && value.same_storage(root)
        && Arc::strong_count(&root.storage) == 2 + rstate.caller_handles(root)
        && root.layout.is_contiguous()
        && root.layout.offset == 0
        && !state.original_overlaps()
        // A view of a non-overlapping root overlaps only through `expand`,
        // `as_strided` or `unfold`.
        && !(state.chain()[0].may_create_overlap() && value.layout.has_internal_overlap())
}

/// Gives `t` a fresh identity after generated code ran an in-place op on
/// its donated buffer ([`can_donate`] or [`can_donate_alias`] said yes):
/// the same buffer now holds a new value. If a trace is recording, the
/// in-place op's node is recorded instead as its functional twin (`add_(x,
/// y)` becomes `add(x, y)`, the op table's twin of the node's op)
/// producing that value.
pub fn donated<T: Element>(t: &mut Tensor<T>) {
    let old = t.id;
    crate::ops::overlap::forget_copied_target(old);
    t.id = crate::tensor::fresh_id();
    crate::trace::record_as_functional(old, t.id);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::{Mode, ViewMeta, commit, commit_donated, commit_root, donated_root, view};
    use crate::trace::Tracer;

    fn buf(t: &Tensor<f32>) -> *const () {
        Arc::as_ptr(&t.storage) as *const ()
    }

    fn iota(n: usize) -> Tensor<f32> {
        Tensor::from_vec((0..n).map(|i| i as f32).collect(), &[n])
    }

    #[test]
    fn a_value_with_another_handle_is_not_donatable() {
        let mut y = iota(4).add(1.0);
        assert!(can_donate(&y));
        let other = y.shallow_clone();
        assert!(!can_donate(&y));
        // The functional path, which generated code takes here, leaves the
        // other handle alone.
        let mut s = Tracked::root(&y);
        let new = y.mul(2.0);
        commit_root("mul_", &mut y, &mut s, new);
        assert_eq!(other.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(y.to_vec(), vec![2.0, 4.0, 6.0, 8.0]);
        drop(other);
        // Views and offsets are never donated, nor non-row-major values.
        let v = iota(4).narrow(0, 1, 2);
        assert!(!can_donate(&v));
        let t = Tensor::<f32>::zeros(&[2, 3]).t();
        assert!(!can_donate(&t));
    }

    #[test]
    fn an_input_buffer_is_donated_only_while_the_caller_holds_the_one_other_handle() {
        // The caller's tensor keeps a handle, so the body's handle of it
        // (`rt::input`) is not uniquely held: a plain root is not donated.
        let caller = iota(3);
        let x = crate::rt::input(&caller);
        assert!(!can_donate(&x));
        assert!(!can_donate_root(&x, &Tracked::root(&x)));
        // As an input, the caller's handle cannot observe it during the call.
        let s = Tracked::input(&x);
        assert!(can_donate_root(&x, &s));
        // A third handle (a view, a stashed clone) can: no donation.
        let keep = x.shallow_clone();
        assert!(!can_donate_root(&x, &s));
        drop(keep);
        // A value in another buffer is judged on its own.
        let y = x.add(1.0);
        assert!(can_donate_root(&y, &s));
        let y2 = y.shallow_clone();
        assert!(!can_donate_root(&y, &s));
        drop(y2);
        // Collection elements: the caller's element at the same position.
        let other = iota(3);
        assert!(can_donate_elem(&x, Some(&caller)));
        assert!(!can_donate_elem(&x, Some(&other)));
        assert!(!can_donate_elem(&x, None));
    }

    #[test]
    fn an_input_updated_in_its_buffer_writes_back_without_copying() {
        let caller = iota(6).view([2, 3]);
        let (_, g) = Tracer::new("f").input("x", &caller).run(|| {
            let mut x = crate::rt::input(&caller);
            let mut s = Tracked::input(&x);
            let p = buf(&x);
            // A whole-tensor update, then a row through a view.
            assert!(can_donate_root(&x, &s));
            x.mul_(2.0);
            donated_root("mul_", &mut x, &mut s);
            let (mut v, mut vs) = view(&x, &s, ViewMeta::select(0, 1), Mode::Views);
            assert!(can_donate_alias(&x, &s, &v, &vs));
            v.add_(100.0);
            commit_donated("add_", &mut x, &mut s, &mut v, &mut vs, Mode::Views);
            drop(v);
            assert_eq!(buf(&x), p, "the caller's buffer is reused");
            crate::rt::write_back(&caller, &x);
        });
        assert_eq!(caller.to_vec(), vec![0.0, 2.0, 4.0, 106.0, 108.0, 110.0]);
        assert_eq!(
            g.ops(),
            vec!["mul", "select", "add", "select_scatter", "copy_"]
        );
        assert!(g.mutations_except_input_writeback().is_empty(), "{g}");
    }

    #[test]
    fn donation_reuses_the_buffer_and_records_the_functional_op() {
        let a = iota(3);
        let mut info = None;
        let (y, g) = Tracer::new("f").input("a", &a).run(|| {
            let mut y = a.add(1.0);
            let mut s = Tracked::root(&y);
            let (p, id) = (buf(&y), y.id());
            assert!(can_donate(&y));
            y.mul_(10.0);
            donated_root("mul_", &mut y, &mut s);
            info = Some((id, p == buf(&y)));
            y
        });
        let (before, same) = info.unwrap();
        assert!(same, "the buffer is reused");
        assert_ne!(before, y.id(), "the result has a fresh identity");
        assert_eq!(y.to_vec(), vec![10.0, 20.0, 30.0]);
        assert_eq!(g.ops(), vec!["add", "mul"]);
        assert!(g.is_functional(), "{g}");
        assert_eq!(g.nodes()[1].outputs, vec![y.id()]);
        assert_eq!(g.output_names(), vec!["mul"]);
    }

    #[test]
    fn in_window_scatter_into_a_uniquely_held_root() {
        let x = iota(12).view([3, 4]);
        let new_row = Tensor::<f32>::from_vec(vec![-1.0; 4], &[4]);
        let expected = {
            let e = x.clone();
            e.select(0, 1).copy_(&new_row);
            e.to_vec()
        };
        for mode in [Mode::Views, Mode::Copies] {
            let (out, g) = Tracer::new("f").input("x", &x).run(|| {
                let mut root = x.clone();
                let mut rs = Tracked::root(&root);
                let p = buf(&root);
                let (mut v, mut vs) = view(&root, &rs, ViewMeta::select(0, 1), mode);
                if can_donate_alias(&root, &rs, &v, &vs) {
                    v.copy_(&new_row);
                    commit_donated("copy_", &mut root, &mut rs, &mut v, &mut vs, mode);
                } else {
                    unreachable!("a fresh root with one view (or one copy) is donatable");
                }
                assert_eq!(
                    buf(&root),
                    p,
                    "{mode:?}: the root's buffer is written in place"
                );
                root
            });
            assert_eq!(out.to_vec(), expected, "{mode:?}");
            let copy = if mode == Mode::Views {
                "select"
            } else {
                "select_copy"
            };
            assert_eq!(
                g.ops(),
                vec!["clone", copy, "copy", "select_scatter"],
                "{mode:?}"
            );
            assert!(g.is_functional(), "{g}");
            // Every node has its own output.
            let mut outs: Vec<_> = g.nodes().iter().flat_map(|n| n.outputs.clone()).collect();
            outs.dedup();
            assert_eq!(outs.len(), 4);
        }
    }

    #[test]
    fn a_root_with_another_live_handle_is_copied_not_written() {
        let x = iota(6);
        for mode in [Mode::Views, Mode::Copies] {
            let mut root = x.clone();
            let keep = root.shallow_clone();
            let mut rs = Tracked::root(&root);
            let (mut v, mut vs) = view(&root, &rs, ViewMeta::narrow(0, 2, 2), mode);
            assert!(
                mode == Mode::Copies || !can_donate_alias(&root, &rs, &v, &vs),
                "three handles share the root's buffer"
            );
            if can_donate_alias(&root, &rs, &v, &vs) {
                // A `*_copy` is its own buffer: update it in place, then the
                // write-back must still copy the shared root.
                v.fill_(9.0);
                commit_donated("fill_", &mut root, &mut rs, &mut v, &mut vs, mode);
            } else {
                let new = v.fill(9.0);
                commit("fill_", &mut root, &mut rs, &mut v, &mut vs, new, mode);
            }
            assert_eq!(
                keep.to_vec(),
                vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
                "{mode:?}"
            );
            assert_eq!(
                root.to_vec(),
                vec![0.0, 1.0, 9.0, 9.0, 4.0, 5.0],
                "{mode:?}"
            );
            assert!(!root.same_storage(&keep), "{mode:?}");
        }
    }

    #[test]
    fn a_second_view_of_the_root_blocks_writing_through() {
        // Views mode: `other` also sees the root's buffer.
        let mut root = iota(6).add(0.0);
        let mut rs = Tracked::root(&root);
        let (other, _) = view(&root, &rs, ViewMeta::narrow(0, 0, 3), Mode::Views);
        let (mut v, mut vs) = view(&root, &rs, ViewMeta::narrow(0, 3, 3), Mode::Views);
        assert!(!can_donate_alias(&root, &rs, &v, &vs));
        let new = v.neg();
        commit(
            "neg_",
            &mut root,
            &mut rs,
            &mut v,
            &mut vs,
            new,
            Mode::Views,
        );
        assert_eq!(other.to_vec(), vec![0.0, 1.0, 2.0]);
        assert_eq!(root.to_vec(), vec![0.0, 1.0, 2.0, -3.0, -4.0, -5.0]);
    }

    #[test]
    fn write_through_and_functional_paths_agree() {
        // Every scatter kind, Views mode (write-through) against the
        // functional path (forced by holding an extra handle).
        let metas = [
            ViewMeta::narrow(0, 1, 2),
            ViewMeta::narrow(1, -2, 2),
            ViewMeta::slice(1, 0, 4, 2),
            ViewMeta::select(1, 3),
            ViewMeta::diagonal(1, 0, 1),
            ViewMeta::as_strided([2, 2], [4, 1], 5),
            ViewMeta::unfold(1, 2, 2),
            ViewMeta::t(),
            ViewMeta::view([12]),
        ];
        for meta in metas {
            for mode in [Mode::Views, Mode::Copies] {
                let run = |block: bool| {
                    let mut root = iota(12).view([3, 4]).add(0.0);
                    let keep = block.then(|| root.shallow_clone());
                    let mut rs = Tracked::root(&root);
                    let (mut v, mut vs) = view(&root, &rs, meta.clone(), mode);
                    let donated = can_donate_alias(&root, &rs, &v, &vs);
                    if donated {
                        v.mul_(-2.0);
                        commit_donated("mul_", &mut root, &mut rs, &mut v, &mut vs, mode);
                    } else {
                        let new = v.mul(-2.0);
                        commit("mul_", &mut root, &mut rs, &mut v, &mut vs, new, mode);
                    }
                    drop(keep);
                    (donated, root.to_vec(), v.to_vec())
                };
                let (d1, r1, v1) = run(false);
                let (d2, r2, v2) = run(true);
                assert!(d1, "{meta:?} {mode:?}: donated when uniquely held");
                assert!(!d2 || mode == Mode::Copies, "{meta:?} {mode:?}");
                assert_eq!(r1, r2, "{meta:?} {mode:?}: root");
                assert_eq!(v1, v2, "{meta:?} {mode:?}: alias");
            }
        }
    }
}
