//! Helpers shared by the math, shape and sorting ops: argument checks that
//! report at the caller (`#[track_caller]`), the lane decomposition of a
//! tensor along one dimension, and the recorded form of two-output ops.

use crate::element::Element;
use crate::tensor::{Tensor, TensorId};
use crate::trace::{Outputs, TensorMeta};

/// `dim` normalized against `ndim` (a 0-d tensor accepts `0` and `-1`).
/// Panics at the caller, naming the op, the shape and the argument.
#[track_caller]
pub(crate) fn norm_dim(op: &str, arg: &str, dim: i64, shape: &[usize]) -> usize {
    let n = shape.len() as i64;
    let (lo, hi) = if n == 0 { (-1, 0) } else { (-n, n - 1) };
    if dim < lo || dim > hi {
        panic!(
            "funcz: {op}: dimension out of range (expected to be in range of [{lo}, {hi}], but \
             got {dim}) for argument '{arg}' (input shape {shape:?})"
        );
    }
    if dim < 0 {
        (dim + n.max(1)) as usize
    } else {
        dim as usize
    }
}

/// A list of dims normalized against `shape`; panics on a repeated dim.
#[track_caller]
pub(crate) fn norm_dims(op: &str, arg: &str, dims: &[i64], shape: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::with_capacity(dims.len());
    for &d in dims {
        let nd = norm_dim(op, arg, d, shape);
        if out.contains(&nd) {
            panic!(
                "funcz: {op}: dim {nd} appears multiple times in the list of dims (argument \
                 '{arg}' = {dims:?}, input shape {shape:?})"
            );
        }
        out.push(nd);
    }
    out
}

/// The reduced dims of a reduction over `dims` (all dims when empty), as a
/// mask over `shape`'s dims, and the result shape.
pub(crate) fn reduced_shape(
    shape: &[usize],
    dims: &[usize],
    keepdim: bool,
) -> (Vec<bool>, Vec<usize>) {
    let mut mask = vec![dims.is_empty(); shape.len()];
    for &d in dims {
        mask[d] = true;
    }
    let out = shape
        .iter()
        .zip(&mask)
        .filter_map(|(&n, &m)| match (m, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    (mask, out)
}

/// A tensor's elements seen as `outer × len × inner` (row-major), with
/// `len` the size of one dimension: lane `(o, i)` holds the elements
/// `data[o * len * inner + k * inner + i]` for `k` in `0..len`.
pub(crate) struct Lanes<T> {
    pub data: Vec<T>,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
}

impl<T: Element> Lanes<T> {
    /// The lanes of `t` along the normalized `dim` (a 0-d tensor is one
    /// lane of length 1).
    pub fn of(t: &Tensor<T>, dim: usize) -> Self {
        let data = t.to_vec();
        Self::from_values(data, t.shape(), dim)
    }

    /// The lanes of row-major `data` of shape `shape` along `dim`.
    pub fn from_values(data: Vec<T>, shape: &[usize], dim: usize) -> Self {
        if shape.is_empty() {
            return Lanes {
                data,
                outer: 1,
                len: 1,
                inner: 1,
            };
        }
        Lanes {
            data,
            outer: shape[..dim].iter().product(),
            len: shape[dim],
            inner: shape[dim + 1..].iter().product(),
        }
    }

    /// Number of lanes.
    pub fn count(&self) -> usize {
        self.outer * self.inner
    }

    /// Index into `data` of element `k` of lane `l` (`l` in `0..count()`).
    #[inline]
    pub fn at(&self, l: usize, k: usize) -> usize {
        let (o, i) = (l / self.inner.max(1), l % self.inner.max(1));
        o * self.len * self.inner + k * self.inner + i
    }
}

/// Row-major values of `t` permuted so that the dims in `mask` come last:
/// returns `(values, kept, reduced)` where each of the `kept` groups holds
/// `reduced` consecutive values (the elements reduced into one output).
pub(crate) fn group_reduced<T: Element>(t: &Tensor<T>, mask: &[bool]) -> (Vec<T>, usize, usize) {
    let shape = t.shape();
    let kept_dims: Vec<usize> = (0..shape.len()).filter(|&d| !mask[d]).collect();
    let red_dims: Vec<usize> = (0..shape.len()).filter(|&d| mask[d]).collect();
    let kept: usize = kept_dims.iter().map(|&d| shape[d]).product();
    let reduced: usize = red_dims.iter().map(|&d| shape[d]).product();
    if red_dims.iter().all(|&d| kept_dims.iter().all(|&k| k < d)) {
        // The reduced dims are already last: row-major order is right.
        return (t.to_vec(), kept, reduced);
    }
    let perm: Vec<usize> = kept_dims.iter().chain(&red_dims).copied().collect();
    let l = t.layout();
    let pshape: Vec<usize> = perm.iter().map(|&d| l.shape[d]).collect();
    let pstrides: Vec<usize> = perm.iter().map(|&d| l.strides[d]).collect();
    let p = t.with_layout(crate::layout::Layout::new(&pshape, &pstrides, l.offset));
    (p.to_vec(), kept, reduced)
}

/// Two tensors returned by one op (`max(dim)`, `sort`, `topk`,
/// `var_mean`): recorded as a list of two outputs.
pub(crate) struct Pair<A: Element, B: Element>(pub Tensor<A>, pub Tensor<B>);

impl<A: Element, B: Element> Outputs for Pair<A, B> {
    fn output_ids(&self) -> Vec<TensorId> {
        vec![self.0.id(), self.1.id()]
    }
    fn is_list(&self) -> bool {
        true
    }
    fn output_metas(&self) -> Vec<TensorMeta> {
        let m: Vec<TensorMeta> = TensorMeta::of(&self.0)
            .into_iter()
            .chain(TensorMeta::of(&self.1))
            .collect();
        if m.len() == 2 { m } else { Vec::new() }
    }
}
