//! Elements of collection inputs (`xs[i]` of `xs: &mut [Tensor]`, of a
//! `Vec<Tensor>` parameter or of a list field): updated in place when only
//! the caller's element shares their buffer, refused when the element
//! shares it with another tensor, and handed to the caller's slot when the
//! body replaces them.
//!
//! Input: `xs[1] = g.shallow_clone(); xs[1].add_(1.0);`
//! Output: the slot marked replaced (`retire_slot`), then `own_element`
//! panics: the original's `add_` also changes `g`, which an update of a
//! private copy would not.

use crate::element::Element;
use crate::tensor::Tensor;

/// Panics if `t`, an element of the collection `coll` about to be updated
/// by `op`, shares its buffer with a tensor other than the caller's element
/// `caller`: it was given a handle of another tensor (`xs[i] =
/// t.shallow_clone()`, `xs.push(v)` with `v` a view), whose data the
/// original's in-place op changes too.
#[track_caller]
fn check_unshared<T: Element>(t: &Tensor<T>, caller: Option<&Tensor<T>>, op: &str, coll: &str) {
    let own = caller.is_some_and(|c| c.same_storage(t));
    let n = t.storage_use_count();
    if !own && n > 1 {
        panic!(
            "funcz: in-place `{op}` on an element of `{coll}` (shape {:?}) that shares its storage with {} other \
             handle(s): the element was given a handle of another tensor (`{coll}[i] = t.shallow_clone()`, a \
             view, a pushed handle), which the original's `{op}` changes too and #[functionalize] cannot \
             follow. help: store a copy (`{coll}[i] = t.clone()`) if the other tensor must not change, or \
             update that tensor itself",
            t.shape(),
            n - 1
        );
    }
}

/// Makes the element `t` of the collection input `coll` (the caller's
/// element `caller`, `None` past the caller's length) safe to update in
/// place with `op`: kept when only the caller's element shares its buffer
/// ([`can_donate_elem`](super::can_donate_elem)), else made a private copy;
/// an element sharing its buffer with another tensor panics.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let caller = Tensor::<f32>::zeros(&[2]);
/// let mut t = caller.shallow_clone();
/// rt::own_element(&mut t, Some(&caller), "add_", "xs");
/// assert!(t.same_storage(&caller));
///
/// let other = Tensor::<f32>::zeros(&[2]);
/// let mut shared = other.shallow_clone();
/// let r = std::panic::catch_unwind(move || rt::own_element(&mut shared, Some(&caller), "add_", "xs"));
/// assert!(r.is_err());
/// ```
#[track_caller]
pub fn own_element<T: Element>(
    t: &mut Tensor<T>,
    caller: Option<&Tensor<T>>,
    op: &str,
    coll: &str,
) {
    if !super::can_donate_elem(t, caller) {
        check_unshared(t, caller, op, coll);
        super::own(t);
    }
}

/// [`can_donate_elem`](super::can_donate_elem) for the element `t` of the
/// collection input `coll` about to be updated by `op`, panicking as
/// [`own_element`] where the element shares its buffer with another
/// tensor.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let caller = Tensor::<f32>::zeros(&[2]);
/// let t = caller.shallow_clone();
/// assert!(rt::can_update_element(&t, Some(&caller), "add_", "xs"));
/// ```
#[track_caller]
pub fn can_update_element<T: Element>(
    t: &Tensor<T>,
    caller: Option<&Tensor<T>>,
    op: &str,
    coll: &str,
) -> bool {
    if super::can_donate_elem(t, caller) {
        return true;
    }
    check_unshared(t, caller, op, coll);
    false
}

/// Which elements of a collection input the body replaced (`xs[i] =
/// value`), so that the exit rebinds the caller's slot to the body's final
/// tensor instead of writing into the tensor the slot held before.
///
/// ```
/// let mut r = funcz_runtime::rt::Replaced::default();
/// assert!(!r.get(3));
/// r.mark(3);
/// assert!(r.get(3));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Replaced(Vec<bool>, bool);

impl Replaced {
    /// Records that every slot was replaced (the body reordered or resized
    /// the collection: positions no longer name the caller's tensors).
    pub fn mark_all(&mut self) {
        self.1 = true;
    }

    /// Records that slot `k` was replaced.
    pub fn mark(&mut self, k: usize) {
        if self.0.len() <= k {
            self.0.resize(k + 1, false);
        }
        self.0[k] = true;
    }

    /// Whether slot `k` was replaced.
    pub fn get(&self, k: usize) -> bool {
        self.1 || self.0.get(k).copied().unwrap_or(false)
    }
}

/// Before `xs[k] = value` in the body: the first time slot `k` is
/// replaced, the tensor the caller's slot holds (`None` past the caller's
/// length) gets the element's current value `current`, as the original's
/// in-place ops before the assignment left it; the slot is marked in
/// `replaced`, and the exit hands the caller the body's final element
/// there ([`write_back_slots`]).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let old = Tensor::<f32>::zeros(&[2]);
/// let mut replaced = rt::Replaced::default();
/// rt::retire_slot(Some(&old), &old.add(1.0), &mut replaced, 0);
/// assert_eq!(old.to_vec(), vec![1.0, 1.0]);
/// // A second replacement leaves it.
/// rt::retire_slot(Some(&old), &old.add(5.0), &mut replaced, 0);
/// assert_eq!(old.to_vec(), vec![1.0, 1.0]);
/// ```
pub fn retire_slot<T: Element>(
    slot: Option<&Tensor<T>>,
    current: &Tensor<T>,
    replaced: &mut Replaced,
    k: usize,
) {
    if replaced.get(k) {
        return;
    }
    replaced.mark(k);
    if let Some(s) = slot {
        super::write_back(s, current);
    }
}

/// After a call given `&mut xs[k]` (`helper(&mut xs[k])`, `mem::swap`):
/// if the element `now` is no longer the tensor `before` the call, the
/// call replaced it, as [`retire_slot`] records an assignment (the caller's
/// old tensor gets `before`'s value, as the call left it).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let old = Tensor::<f32>::zeros(&[1]);
/// let mut replaced = rt::Replaced::default();
/// let t = rt::input(&old);
/// rt::replaced_by_call(Some(&old), t.shallow_clone(), &t, &mut replaced, 0);
/// assert!(!replaced.get(0));
/// rt::replaced_by_call(Some(&old), t.shallow_clone(), &Tensor::ones(&[1]), &mut replaced, 0);
/// assert!(replaced.get(0));
/// ```
pub fn replaced_by_call<T: Element>(
    slot: Option<&Tensor<T>>,
    before: Tensor<T>,
    now: &Tensor<T>,
    replaced: &mut Replaced,
    k: usize,
) {
    if !now.same_storage(&before) {
        retire_slot(slot, &before, replaced, k);
    }
}

/// Where a collection's slots are: the address of the first and their
/// number, taken before a loop over its elements (`for t in
/// xs.iter_mut()`), for [`element_index`].
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let xs = vec![Tensor::<f32>::zeros(&[1]), Tensor::zeros(&[1])];
/// let at = rt::slots_at(&xs);
/// assert_eq!(rt::element_index(at, &xs[1]), 1);
/// ```
pub fn slots_at<T: Element>(elements: &[Tensor<T>]) -> (usize, usize) {
    (elements.as_ptr().addr(), elements.len())
}

/// The position of the slot `element` refers to, in the collection whose
/// slots are `at` ([`slots_at`]): a loop variable's index, which `for t
/// in xs.iter_mut()` does not name. (An address, not a search: the loop
/// holds the collection borrowed.)
///
/// Panics, naming the macro, if `element` is not one of those slots.
#[track_caller]
pub fn element_index<T: Element>(at: (usize, usize), element: &Tensor<T>) -> usize {
    let (base, len) = at;
    let size = std::mem::size_of::<Tensor<T>>();
    let offset = (element as *const Tensor<T>).addr().wrapping_sub(base);
    let k = offset / size;
    assert!(
        offset % size == 0 && k < len,
        "funcz: internal error of #[functionalize]: a loop variable is not an element of its collection"
    );
    k
}

/// Handles to the elements of a collection input, taken before a call the
/// macro cannot see is given the collection mutably (`helper(xs)`,
/// `mem::swap(&mut xs, ..)`), for [`replaced_by_call_all`].
pub fn slots<T: Element>(elements: &[Tensor<T>]) -> Vec<Tensor<T>> {
    elements.iter().map(Tensor::handle).collect()
}

/// After a call given a whole collection input `coll` mutably (`call`):
/// compared with the elements it held before (`before`, from [`slots`]).
/// A slot whose old element is gone was replaced by the call, and is
/// retired as [`replaced_by_call`] retires one element (the caller's tensor
/// keeps the value the old element had). An element the call moved to
/// another slot (`insert`, `swap`) is treated as a reordering method's
/// ([`check_reorder`], [`reordered`]): it panics if a caller's tensor is
/// held elsewhere (the original goes on updating it where it moved), and
/// otherwise every slot is handed the body's final element at the exit.
/// A `Vec` the call resized gets the body's length at the exit
/// ([`write_back_slots`]).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let caller = vec![Tensor::<f32>::zeros(&[1]), Tensor::zeros(&[1])];
/// let mut body = rt::inputs(&caller[..]);
/// let mut replaced = rt::Replaced::default();
/// let before = rt::slots(&body);
/// body[1] = Tensor::ones(&[1]); // what the call did
/// rt::replaced_by_call_all(&caller, before, &mut body, &mut replaced, "xs", "helper");
/// assert!(!replaced.get(0) && replaced.get(1));
/// ```
#[track_caller]
pub fn replaced_by_call_all<T: Element>(
    callers: &[Tensor<T>],
    before: Vec<Tensor<T>>,
    now: &mut [Tensor<T>],
    replaced: &mut Replaced,
    coll: &str,
    call: &str,
) {
    let mut moved = false;
    for (k, b) in before.iter().enumerate() {
        if now.get(k).is_some_and(|n| n.same_storage(b)) {
            continue;
        }
        if now.iter().any(|n| n.same_storage(b)) {
            moved = true;
        } else {
            retire_slot(callers.get(k), b, replaced, k);
        }
    }
    drop(before);
    if moved {
        check_moved(callers, now, coll, &|| format!("`{call}`"));
        reordered(now, replaced);
    }
}

/// The exit of a collection input some of whose slots the body replaced:
/// a replaced slot gets (a handle of) the body's final element, as the
/// original's slot holds the tensor assigned to it; the others get their
/// final data written into the caller's tensor
/// ([`write_back`](super::write_back)); a `Vec` takes the body's length.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let old = Tensor::<f32>::zeros(&[2]);
/// let mut caller = vec![old.shallow_clone(), Tensor::zeros(&[2])];
/// let mut replaced = rt::Replaced::default();
/// replaced.mark(0);
/// let body = [Tensor::ones(&[2]), Tensor::full(&[2], 2.0)];
/// rt::write_back_slots(&mut caller, &body, &replaced);
/// assert!(caller[0].same_storage(&body[0]));
/// assert_eq!(old.to_vec(), vec![0.0, 0.0]);
/// assert_eq!(caller[1].to_vec(), vec![2.0, 2.0]);
/// ```
#[track_caller]
pub fn write_back_slots<L: super::TensorList + ?Sized>(
    dst: &mut L,
    values: &[Tensor<L::Elem>],
    replaced: &Replaced,
) {
    let slots = dst.tensors_mut();
    let common = slots.len().min(values.len());
    for (k, (slot, value)) in slots.iter_mut().zip(values).enumerate() {
        if replaced.get(k) {
            *slot = value.handle();
        } else {
            super::write_back(slot, value);
        }
    }
    dst.resize_to(&values[common..], values.len());
}

/// The exit of a collection input passed by value (`xs: Vec<Tensor>`, its
/// `Vec` now the body's): the caller's tensors `dst` (handles taken at
/// entry) get their final data, except those of replaced slots, which keep
/// what they had when they were replaced.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let old = [Tensor::<f32>::zeros(&[1]), Tensor::zeros(&[1])];
/// let mut replaced = rt::Replaced::default();
/// replaced.mark(1);
/// rt::write_back_kept(&old, &[Tensor::ones(&[1]), Tensor::ones(&[1])], &replaced);
/// assert_eq!((old[0].to_vec(), old[1].to_vec()), (vec![1.0], vec![0.0]));
/// ```
pub fn write_back_kept<T: Element>(dst: &[Tensor<T>], values: &[Tensor<T>], replaced: &Replaced) {
    for (k, (d, v)) in dst.iter().zip(values).enumerate() {
        if !replaced.get(k) {
            super::write_back(d, v);
        }
    }
}

/// Before a method that may reorder or resize the collection input `coll`
/// (`xs.swap(0, 1)`, `xs.remove(0)`, `xs.push(t)`; `method`) whose body
/// elements are `elements`: after it, positions no longer name the
/// caller's tensors `callers`, which then keep the data they have now
/// (see [`reordered`]). That is the original's only while nothing but the
/// caller's slot and the body's element holds them (the original goes on
/// updating them wherever they move): a caller's tensor held elsewhere
/// panics.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let callers = vec![Tensor::<f32>::zeros(&[1]), Tensor::ones(&[1])];
/// let body = rt::inputs(&callers[..]);
/// rt::check_reorder(&callers, &body, "xs", "swap");
///
/// let kept = callers[0].shallow_clone();
/// let r = std::panic::catch_unwind(move || rt::check_reorder(&callers, &body, "xs", "swap"));
/// assert!(r.is_err());
/// # drop(kept);
/// ```
#[track_caller]
pub fn check_reorder<T: Element>(
    callers: &[Tensor<T>],
    elements: &[Tensor<T>],
    coll: &str,
    method: &str,
) {
    check_moved(callers, elements, coll, &|| {
        format!("`{coll}.{method}(..)`")
    });
}

/// [`check_reorder`] of what `what` names (a method, or a call given the
/// collection).
#[track_caller]
fn check_moved<T: Element>(
    callers: &[Tensor<T>],
    elements: &[Tensor<T>],
    coll: &str,
    what: &dyn Fn() -> String,
) {
    for (k, c) in callers.iter().enumerate() {
        let body = elements.iter().filter(|e| e.same_storage(c)).count();
        let n = c.storage_use_count();
        if n > 1 + body {
            panic!(
                "funcz: {} may move the tensors of `{coll}`, and the caller's `{coll}[{k}]` (shape \
                 {:?}) is also held by {} other handle(s): the original goes on updating it wherever it moves, \
                 which #[functionalize] cannot follow. help: do not keep other handles to the elements of \
                 `{coll}`, or rebuild the collection with `.clone()`s of its elements",
                what(),
                c.shape(),
                n - 1 - body
            );
        }
    }
}

/// After a method that may reorder or resize a collection input (see
/// [`check_reorder`]): every slot is handed the body's final element at the
/// exit ([`write_back_slots`]), and each element gets a buffer of its own
/// (no element shares one with a caller's tensor that now sits elsewhere).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let callers = vec![Tensor::<f32>::zeros(&[1]), Tensor::ones(&[1])];
/// let mut body = rt::inputs(&callers[..]);
/// let mut replaced = rt::Replaced::default();
/// body.swap(0, 1);
/// rt::reordered(&mut body, &mut replaced);
/// assert!(replaced.get(0) && !body[0].same_storage(&callers[1]));
/// ```
pub fn reordered<T: Element>(elements: &mut [Tensor<T>], replaced: &mut Replaced) {
    replaced.mark_all();
    super::detach_all(elements);
}
