//! Small helpers for generated code at exits and for `resize_`.

use crate::args::IntoShape;
use crate::element::Element;
use crate::tensor::Tensor;

use super::Mode;
use super::meta::MultiMeta;
use super::tracked::{Tracked, view};

/// A value `?` may return early on (`Err`, `None`).
pub trait Exit {
    /// True if `?` would return here.
    fn is_exit(&self) -> bool;
}

impl<T, E> Exit for Result<T, E> {
    fn is_exit(&self) -> bool {
        self.is_err()
    }
}

impl<T> Exit for Option<T> {
    fn is_exit(&self) -> bool {
        self.is_none()
    }
}

/// True if `?` on `v` returns early: generated code writes inputs back
/// first.
pub fn is_exit<X: Exit>(v: &X) -> bool {
    v.is_exit()
}

/// Output `k` of a multi-output view of `parent`, made as a single
/// `slice`/`select` (PyTorch's single-output replay).
#[track_caller]
pub fn multi_out<T: Element>(
    parent: &Tensor<T>,
    pstate: &Tracked,
    meta: MultiMeta,
    k: usize,
    mode: Mode,
) -> (Tensor<T>, Tracked) {
    let m = meta.output(parent.shape(), k);
    view(parent, pstate, m, mode)
}

/// The functional form of `resize_` on a fresh tensor: a new contiguous
/// tensor of `shape` holding the old elements first (zeros after).
pub fn resized<T: Element>(t: &Tensor<T>, shape: impl IntoShape) -> Tensor<T> {
    let shape: Vec<usize> = shape
        .into_shape()
        .into_iter()
        .map(|d| {
            usize::try_from(d).unwrap_or_else(|_| {
                panic!("funcz: resize_: negative size {d} in the requested shape")
            })
        })
        .collect();
    let n: usize = shape.iter().product();
    let mut data = t.to_vec();
    data.resize(n, T::zero());
    crate::trace::op(
        "resize",
        || {
            vec![
                crate::trace::ToArg::to_arg(t),
                crate::trace::ToArg::to_arg(&shape[..]),
            ]
        },
        || Tensor::from_contiguous(data, &shape),
    )
}
