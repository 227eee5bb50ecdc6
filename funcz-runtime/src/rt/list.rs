//! Lists of tensors held in struct fields (`opt.m` of `opt.m[i].mul_(..)`,
//! an optimizer's per-parameter state): the functionalized body borrows the
//! field once at entry ([`list_mut`] / [`list`]), works on a `Vec` of
//! handles to its elements ([`list_handles`]) exactly like a collection
//! input, and writes the final elements back at every exit
//! ([`write_back_list`]).
//!
//! Input: `opt.m[i].mul_(0.9);` with `opt: &mut Momentum`, `m: Vec<Tensor>`.
//! Output: `let l = rt::list_mut(&mut opt.m); let mut m = rt::list_handles(&*l);`,
//! the body on `m`, then `rt::write_back_list(&mut *l, &m[..])`.

use crate::element::Element;
use crate::tensor::Tensor;

/// A list of tensors that a struct field may hold and `#[functionalize]`
/// may track: `Vec<Tensor>`, `[Tensor; N]`, `Box<[Tensor]>`, `[Tensor]`
/// and references to these.
///
/// ```
/// use funcz_runtime::{Tensor, rt::TensorList};
/// let v = vec![Tensor::<f32>::zeros(&[2]), Tensor::ones(&[3])];
/// assert_eq!(v.tensors().len(), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "#[functionalize] tracks `{Self}` as a list of tensors, and it is not one",
    label = "its elements are updated in place",
    note = "a field whose elements are updated in place (`s.m[i].mul_(..)`) must be a `Vec<Tensor>`, \
            `[Tensor; N]`, `Box<[Tensor]>` or `&mut [Tensor]`; for another container, give the \
            element to a function as a `&Tensor` parameter and update it there"
)]
pub trait TensorList {
    /// The element type of the tensors.
    type Elem: Element;

    /// The tensors, in order.
    fn tensors(&self) -> &[Tensor<Self::Elem>];

    /// The tensors, to rebind (a list behind a shared reference cannot be
    /// assigned to, so the body never replaces its elements: it panics).
    fn tensors_mut(&mut self) -> &mut [Tensor<Self::Elem>];

    /// After the first `len - tail.len()` elements were written back: a
    /// `Vec` drops the rest and appends `tail` (the body pushed or removed
    /// elements); fixed-length containers panic if the length changed.
    #[track_caller]
    fn resize_to(&mut self, tail: &[Tensor<Self::Elem>], len: usize) {
        assert!(
            tail.is_empty() && self.tensors().len() == len,
            "funcz: a list of tensors of fixed length changed length in the body"
        );
    }
}

impl<T: Element> TensorList for Vec<Tensor<T>> {
    type Elem = T;
    fn tensors(&self) -> &[Tensor<T>] {
        self
    }
    fn tensors_mut(&mut self) -> &mut [Tensor<T>] {
        self
    }
    fn resize_to(&mut self, tail: &[Tensor<T>], len: usize) {
        self.truncate(len - tail.len());
        self.extend(tail.iter().map(Tensor::handle));
    }
}

impl<T: Element> TensorList for [Tensor<T>] {
    type Elem = T;
    fn tensors(&self) -> &[Tensor<T>] {
        self
    }
    fn tensors_mut(&mut self) -> &mut [Tensor<T>] {
        self
    }
}

impl<T: Element, const N: usize> TensorList for [Tensor<T>; N] {
    type Elem = T;
    fn tensors(&self) -> &[Tensor<T>] {
        self
    }
    fn tensors_mut(&mut self) -> &mut [Tensor<T>] {
        self
    }
}

impl<T: Element> TensorList for Box<[Tensor<T>]> {
    type Elem = T;
    fn tensors(&self) -> &[Tensor<T>] {
        self
    }
    fn tensors_mut(&mut self) -> &mut [Tensor<T>] {
        self
    }
}

impl<L: TensorList + ?Sized> TensorList for &mut L {
    type Elem = L::Elem;
    fn tensors(&self) -> &[Tensor<L::Elem>] {
        (**self).tensors()
    }
    fn tensors_mut(&mut self) -> &mut [Tensor<L::Elem>] {
        (**self).tensors_mut()
    }
    #[track_caller]
    fn resize_to(&mut self, tail: &[Tensor<L::Elem>], len: usize) {
        (**self).resize_to(tail, len);
    }
}

impl<L: TensorList + ?Sized> TensorList for &L {
    type Elem = L::Elem;
    fn tensors(&self) -> &[Tensor<L::Elem>] {
        (**self).tensors()
    }
    fn tensors_mut(&mut self) -> &mut [Tensor<L::Elem>] {
        unreachable!("funcz: an element of a list behind a shared reference was replaced")
    }
}

/// The field `list`, borrowed mutably for the body (the identity, with the
/// bound that names the containers a tracked list may be).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let mut v = vec![Tensor::<f32>::zeros(&[2])];
/// let l = rt::list_mut(&mut v);
/// assert_eq!(l.len(), 1);
/// ```
#[inline]
pub fn list_mut<L: TensorList + ?Sized>(list: &mut L) -> &mut L {
    list
}

/// [`list_mut`] for a field reached through a shared reference (its
/// tensors are updated through their shared storage).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let v = [Tensor::<f32>::zeros(&[2]), Tensor::zeros(&[2])];
/// assert_eq!(rt::list(&v).len(), 2);
/// ```
#[inline]
pub fn list<L: TensorList + ?Sized>(list: &L) -> &L {
    list
}

/// Handles to the list's tensors (same storage and identity), which the
/// body updates as a collection input's.
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let v = vec![Tensor::<f32>::zeros(&[2])];
/// let h = rt::list_handles(&v);
/// assert!(h[0].same_storage(&v[0]));
/// ```
pub fn list_handles<L: TensorList + ?Sized>(list: &L) -> Vec<Tensor<L::Elem>> {
    list.tensors().iter().map(Tensor::handle).collect()
}

/// Writes the body's final elements `values` back into the field `list`:
/// each element's data into the tensor the field holds (the caller's
/// handles see it), and a `Vec` takes the body's length
/// ([`write_back_slots`](super::write_back_slots) with no slot replaced).
///
/// ```
/// use funcz_runtime::{Tensor, rt};
/// let mut v = vec![Tensor::<f32>::zeros(&[2])];
/// let caller = v[0].shallow_clone();
/// rt::write_back_list(&mut v, &[Tensor::ones(&[2]), Tensor::ones(&[1])]);
/// assert_eq!(caller.to_vec(), vec![1.0, 1.0]);
/// assert_eq!(v.len(), 2);
/// ```
#[track_caller]
pub fn write_back_list<L: TensorList + ?Sized>(list: &mut L, values: &[Tensor<L::Elem>]) {
    super::write_back_slots(list, values, &super::Replaced::default());
}
