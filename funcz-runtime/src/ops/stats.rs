//! Reductions real code uses: `max`/`min` (all, or along a dim with
//! indices), `argmax`/`argmin`, `amax`/`amin`, `sum`/`mean` over a list of
//! dims, `var`/`std`/`var_mean` with `correction`, and
//! `norm`/`linalg_vector_norm`.
//!
//! Naming: PyTorch overloads one name on its arguments; here each overload
//! has its own method, recorded under the aten name:
//!
//! | method | aten |
//! |---|---|
//! | `max()` / `min()` | `max(self)` / `min(self)` |
//! | `max_dim(dim, keepdim)` → (values, `i64` indices) | `max(self, dim, keepdim)` |
//! | `argmax(dim, keepdim)` (`dim: None` = flattened) | `argmax(self, dim, keepdim)` |
//! | `amax(dims, keepdim)` | `amax(self, dims, keepdim)` |
//! | `sum_dims(dims, keepdim)` / `mean_dims` | `sum(self, dims, keepdim)` / `mean(...)` |
//! | `var(correction)` / `var_dims(dims, correction, keepdim)` | `var(self, dims, correction, keepdim)` |
//! | `std(..)` / `std_dims(..)` | `std(self, dims, correction, keepdim)` |
//! | `var_mean(dims, correction, keepdim)` → (var, mean) | `var_mean(self, dims, correction, keepdim)` |
//! | `vector_norm(ord, dims, keepdim)` | `linalg_vector_norm(self, ord, dims, keepdim)` |
//! | `norm(p)` | `norm(self, p)` |
//!
//! An empty `dims` list reduces over every dimension (PyTorch's `dim=[]`).

use crate::args::IntoShape;
use crate::element::{Element, FloatElement};
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::lanes::{Pair, group_reduced, norm_dims, reduced_shape};

/// Sum of `vals`, accumulated in `f64` for floats.
fn sum_of<T: Element>(vals: &[T]) -> T {
    if T::IS_FLOAT {
        T::from_f64(vals.iter().map(|v| Element::to_f64(*v)).sum())
    } else {
        vals.iter().copied().sum()
    }
}

/// Index of the largest (`max`) or smallest value in `vals`: the first
/// NaN if there is one, else the first of the tied extremes (PyTorch).
fn arg_extreme<T: Element>(vals: &[T], max: bool) -> usize {
    let mut best = 0;
    for (i, &v) in vals.iter().enumerate() {
        #[allow(clippy::eq_op)]
        if v != v {
            return i;
        }
        let b = vals[best];
        if (max && v > b) || (!max && v < b) {
            best = i;
        }
    }
    best
}

/// Panics unless every reduced dim is non-empty.
#[track_caller]
fn check_nonempty(op: &str, shape: &[usize], mask: &[bool]) {
    for (d, (&n, &m)) in shape.iter().zip(mask).enumerate() {
        if m && n == 0 {
            panic!(
                "funcz: {op}: Expected reduction dim {d} to have non-zero size (input shape \
                 {shape:?})"
            );
        }
    }
}

fn dims_arg(dims: &Option<Vec<i64>>) -> Arg {
    match dims {
        Some(d) => Arg::Ints(d.clone()),
        None => Arg::None,
    }
}

/// Validated reduction dims: (mask, output shape).
#[track_caller]
fn reduction(op: &str, shape: &[usize], dims: &[i64], keepdim: bool) -> (Vec<bool>, Vec<usize>) {
    let mut nd = norm_dims(op, "dim", dims, shape);
    if shape.is_empty() {
        // A 0-d tensor's one (virtual) dim, 0 or -1, is all of it.
        nd.clear();
    }
    reduced_shape(shape, &nd, keepdim)
}

/// Reduces each group of values reduced into one output with `f`.
fn reduce_groups<T: Element, U>(t: &Tensor<T>, mask: &[bool], f: impl Fn(&[T]) -> U) -> Vec<U> {
    let (vals, kept, red) = group_reduced(t, mask);
    if red == 0 {
        return (0..kept).map(|_| f(&[])).collect();
    }
    vals.chunks(red).map(f).collect()
}

impl<T: Element> Tensor<T> {
    /// The largest element as a 0-d tensor (aten `max(self)`); NaN if any
    /// element is NaN. Panics on an empty tensor, as PyTorch.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![3, 9, 2], &[3]);
    /// assert_eq!(x.max().item(), 9);
    /// ```
    #[track_caller]
    pub fn max(&self) -> Tensor<T> {
        self.extreme_all("max", true)
    }

    /// The smallest element as a 0-d tensor (aten `min(self)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![3.0, -9.0, 2.0], &[3]);
    /// assert_eq!(x.min().item(), -9.0);
    /// ```
    #[track_caller]
    pub fn min(&self) -> Tensor<T> {
        self.extreme_all("min", false)
    }

    #[track_caller]
    fn extreme_all(&self, op: &'static str, max: bool) -> Tensor<T> {
        if self.numel() == 0 {
            panic!(
                "funcz: {op}: Expected reduction dim to be specified for input.numel() == 0 \
                 (input shape {:?}). Specify the reduction dim with the 'dim' argument.",
                self.shape()
            );
        }
        trace::op(
            op,
            || vec![self.to_arg()],
            || {
                let v = self.to_vec();
                Tensor::from_contiguous(vec![v[arg_extreme(&v, max)]], &[])
            },
        )
    }

    /// The largest value along `dim` and its index (aten `max(self, dim,
    /// keepdim)`, PyTorch's `x.max(dim)`): `(values, indices)`. NaN is
    /// the largest value; among ties the first index is returned.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 7.0, 7.0, 4.0, 2.0, 0.0], &[2, 3]);
    /// let (v, i) = x.max_dim(-1, false);
    /// assert_eq!(v.to_vec(), vec![7.0, 4.0]);
    /// assert_eq!(i.to_vec(), vec![1, 0]);
    /// assert_eq!(x.max_dim(0, true).1.shape(), &[1, 3]);
    /// ```
    #[track_caller]
    pub fn max_dim(&self, dim: i64, keepdim: bool) -> (Tensor<T>, Tensor<i64>) {
        self.extreme_dim("max", dim, keepdim, true)
    }

    /// The smallest value along `dim` and its index (aten `min(self, dim,
    /// keepdim)`): `(values, indices)`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![5, 1, 1, 3], &[2, 2]);
    /// let (v, i) = x.min_dim(0, false);
    /// assert_eq!(v.to_vec(), vec![1, 1]);
    /// assert_eq!(i.to_vec(), vec![1, 0]);
    /// ```
    #[track_caller]
    pub fn min_dim(&self, dim: i64, keepdim: bool) -> (Tensor<T>, Tensor<i64>) {
        self.extreme_dim("min", dim, keepdim, false)
    }

    #[track_caller]
    fn extreme_dim(
        &self,
        op: &'static str,
        dim: i64,
        keepdim: bool,
        max: bool,
    ) -> (Tensor<T>, Tensor<i64>) {
        let (mask, shape) = reduction(op, self.shape(), &[dim], keepdim);
        check_nonempty(op, self.shape(), &mask);
        let Pair(v, i) = trace::op(
            op,
            || vec![self.to_arg(), Arg::Int(dim), Arg::Bool(keepdim)],
            || {
                let idx = reduce_groups(self, &mask, |g| arg_extreme(g, max) as i64);
                let vals = reduce_groups(self, &mask, |g| g[arg_extreme(g, max)]);
                Pair(
                    Tensor::from_contiguous(vals, &shape),
                    Tensor::from_contiguous(idx, &shape),
                )
            },
        );
        (v, i)
    }

    /// Index of the largest value along `dim`, or in the flattened tensor
    /// when `dim` is `None` (aten `argmax(self, dim, keepdim)`); the first
    /// NaN, else the first of tied maxima.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 7.0, 7.0, 9.0], &[2, 2]);
    /// assert_eq!(x.argmax(None, false).item(), 3);
    /// assert_eq!(x.argmax(1, false).to_vec(), vec![1, 1]);
    /// assert_eq!(x.argmax(0, true).to_vec(), vec![1, 1]);
    /// ```
    #[track_caller]
    pub fn argmax(&self, dim: impl Into<Option<i64>>, keepdim: bool) -> Tensor<i64> {
        self.arg_extreme("argmax", dim.into(), keepdim, true)
    }

    /// Index of the smallest value along `dim`, or in the flattened tensor
    /// when `dim` is `None` (aten `argmin(self, dim, keepdim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![4, 1, 1, 0], &[2, 2]);
    /// assert_eq!(x.argmin(None, false).item(), 3);
    /// assert_eq!(x.argmin(-1, false).to_vec(), vec![1, 1]);
    /// ```
    #[track_caller]
    pub fn argmin(&self, dim: impl Into<Option<i64>>, keepdim: bool) -> Tensor<i64> {
        self.arg_extreme("argmin", dim.into(), keepdim, false)
    }

    #[track_caller]
    fn arg_extreme(
        &self,
        op: &'static str,
        dim: Option<i64>,
        keepdim: bool,
        max: bool,
    ) -> Tensor<i64> {
        let (mask, shape) = match dim {
            Some(d) => reduction(op, self.shape(), &[d], keepdim),
            None => reduced_shape(self.shape(), &[], keepdim),
        };
        if dim.is_none() && self.numel() == 0 {
            panic!(
                "funcz: {op}: Expected reduction dim to be specified for input.numel() == 0 \
                 (input shape {:?})",
                self.shape()
            );
        }
        check_nonempty(op, self.shape(), &mask);
        trace::op(
            op,
            || {
                vec![
                    self.to_arg(),
                    dim.map_or(Arg::None, Arg::Int),
                    Arg::Bool(keepdim),
                ]
            },
            || {
                let idx = reduce_groups(self, &mask, |g| arg_extreme(g, max) as i64);
                Tensor::from_contiguous(idx, &shape)
            },
        )
    }

    /// The largest values over `dims` (aten `amax(self, dims, keepdim)`);
    /// NaN propagates; ties are irrelevant (no indices).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec((0..8).map(|v| v as f32).collect(), &[2, 2, 2]);
    /// assert_eq!(x.amax([0, 2], false).to_vec(), vec![5.0, 7.0]);
    /// assert_eq!(x.amax([-1], true).shape(), &[2, 2, 1]);
    /// ```
    #[track_caller]
    pub fn amax(&self, dims: impl IntoShape, keepdim: bool) -> Tensor<T> {
        self.amax_amin("amax", dims.into_shape(), keepdim, true)
    }

    /// The smallest values over `dims` (aten `amin(self, dims, keepdim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![3, 1, 4, 1, 5, 9], &[2, 3]);
    /// assert_eq!(x.amin([1], false).to_vec(), vec![1, 1]);
    /// ```
    #[track_caller]
    pub fn amin(&self, dims: impl IntoShape, keepdim: bool) -> Tensor<T> {
        self.amax_amin("amin", dims.into_shape(), keepdim, false)
    }

    #[track_caller]
    fn amax_amin(&self, op: &'static str, dims: Vec<i64>, keepdim: bool, max: bool) -> Tensor<T> {
        let (mask, shape) = reduction(op, self.shape(), &dims, keepdim);
        check_nonempty(op, self.shape(), &mask);
        trace::op(
            op,
            || vec![self.to_arg(), Arg::Ints(dims.clone()), Arg::Bool(keepdim)],
            || {
                let v = reduce_groups(self, &mask, |g| g[arg_extreme(g, max)]);
                Tensor::from_contiguous(v, &shape)
            },
        )
    }

    /// Sum over every dim in `dims` (aten `sum(self, dims, keepdim)`); an
    /// empty list sums everything.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec((0..8).collect(), &[2, 2, 2]);
    /// assert_eq!(x.sum_dims(&[0, 2], false).to_vec(), vec![10, 18]);
    /// assert_eq!(x.sum_dims(&[-1, 0], true).shape(), &[1, 2, 1]);
    /// ```
    #[track_caller]
    pub fn sum_dims(&self, dims: impl IntoShape, keepdim: bool) -> Tensor<T> {
        let dims = dims.into_shape();
        let (mask, shape) = reduction("sum", self.shape(), &dims, keepdim);
        trace::op(
            "sum",
            || vec![self.to_arg(), Arg::Ints(dims.clone()), Arg::Bool(keepdim)],
            || Tensor::from_contiguous(reduce_groups(self, &mask, sum_of), &shape),
        )
    }
}

/// `Σ (x - mean)² / max(0, n - correction)` and the mean, in `f64`.
fn var_mean_of<T: FloatElement>(g: &[T], correction: i64) -> (f64, f64) {
    let n = g.len() as f64;
    let mean = g.iter().map(|v| Element::to_f64(*v)).sum::<f64>() / n;
    let ss: f64 = g
        .iter()
        .map(|v| {
            let d = Element::to_f64(*v) - mean;
            d * d
        })
        .sum();
    let denom = (n - correction as f64).max(0.0);
    (ss / denom, mean)
}

/// `(Σ |x|^p)^(1/p)`, with PyTorch's special cases for `p = 0, ±inf`.
fn norm_of<T: FloatElement>(g: &[T], p: f64) -> f64 {
    let a = g.iter().map(|v| Element::to_f64(*v).abs());
    if p == f64::INFINITY {
        a.fold(
            if g.is_empty() { 0.0 } else { f64::NEG_INFINITY },
            |m, x| {
                if x.is_nan() || x > m { x } else { m }
            },
        )
    } else if p == f64::NEG_INFINITY {
        a.fold(
            f64::INFINITY,
            |m, x| if x.is_nan() || x < m { x } else { m },
        )
    } else if p == 0.0 {
        a.filter(|&x| x != 0.0).count() as f64
    } else if p == 1.0 {
        a.sum()
    } else if p == 2.0 {
        a.map(|x| x * x).sum::<f64>().sqrt()
    } else {
        a.map(|x| x.powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

impl<T: FloatElement> Tensor<T> {
    /// Mean over every dim in `dims` (aten `mean(self, dims, keepdim)`);
    /// an empty list averages everything; NaN over an empty selection.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec((0..8).map(|v| v as f32).collect(), &[2, 2, 2]);
    /// assert_eq!(x.mean_dims(&[0, 2], false).to_vec(), vec![2.5, 4.5]);
    /// ```
    #[track_caller]
    pub fn mean_dims(&self, dims: impl IntoShape, keepdim: bool) -> Tensor<T> {
        let dims = dims.into_shape();
        let (mask, shape) = reduction("mean", self.shape(), &dims, keepdim);
        trace::op(
            "mean",
            || vec![self.to_arg(), Arg::Ints(dims.clone()), Arg::Bool(keepdim)],
            || {
                let v = reduce_groups(self, &mask, |g| {
                    T::from_f64(g.iter().map(|v| Element::to_f64(*v)).sum::<f64>() / g.len() as f64)
                });
                Tensor::from_contiguous(v, &shape)
            },
        )
    }

    /// Variance of all elements with Bessel's `correction` (PyTorch's
    /// `x.var(correction=c)`; `1` is the unbiased default, `0` the
    /// population variance); recorded as `var(self, None, correction,
    /// false)`. NaN when `numel - correction <= 0`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]);
    /// assert_eq!(x.var(0).item(), 1.25);
    /// assert!((x.var(1).item() - 5.0 / 3.0).abs() < 1e-15);
    /// ```
    #[track_caller]
    pub fn var(&self, correction: i64) -> Tensor<T> {
        self.var_std("var", None, correction, false, false)
    }

    /// Variance over `dims` (aten `var(self, dims, correction, keepdim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 3.0, 2.0, 2.0], &[2, 2]);
    /// assert_eq!(x.var_dims([1], 0, false).to_vec(), vec![1.0, 0.0]);
    /// assert_eq!(x.var_dims([-1], 1, true).shape(), &[2, 1]);
    /// ```
    #[track_caller]
    pub fn var_dims(&self, dims: impl IntoShape, correction: i64, keepdim: bool) -> Tensor<T> {
        self.var_std("var", Some(dims.into_shape()), correction, keepdim, false)
    }

    /// Standard deviation of all elements (aten `std(self, None,
    /// correction, false)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 3.0], &[2]);
    /// assert_eq!(x.std(0).item(), 1.0);
    /// ```
    #[track_caller]
    pub fn std(&self, correction: i64) -> Tensor<T> {
        self.var_std("std", None, correction, false, true)
    }

    /// Standard deviation over `dims` (aten `std(self, dims, correction,
    /// keepdim)`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![1.0, 3.0, 5.0, 5.0], &[2, 2]);
    /// assert_eq!(x.std_dims([1], 0, false).to_vec(), vec![1.0, 0.0]);
    /// ```
    #[track_caller]
    pub fn std_dims(&self, dims: impl IntoShape, correction: i64, keepdim: bool) -> Tensor<T> {
        self.var_std("std", Some(dims.into_shape()), correction, keepdim, true)
    }

    #[track_caller]
    fn var_std(
        &self,
        op: &'static str,
        dims: Option<Vec<i64>>,
        correction: i64,
        keepdim: bool,
        sqrt: bool,
    ) -> Tensor<T> {
        let (mask, shape) = reduction(op, self.shape(), dims.as_deref().unwrap_or(&[]), keepdim);
        trace::op(
            op,
            || {
                vec![
                    self.to_arg(),
                    dims_arg(&dims),
                    Arg::Int(correction),
                    Arg::Bool(keepdim),
                ]
            },
            || {
                let v = reduce_groups(self, &mask, |g| {
                    let var = var_mean_of(g, correction).0;
                    T::from_f64(if sqrt { var.sqrt() } else { var })
                });
                Tensor::from_contiguous(v, &shape)
            },
        )
    }

    /// Variance and mean over `dims` in one pass (aten `var_mean(self,
    /// dims, correction, keepdim)`): `(var, mean)`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![1.0, 3.0, 2.0, 2.0], &[2, 2]);
    /// let (v, m) = x.var_mean([-1], 0, true);
    /// assert_eq!(v.to_vec(), vec![1.0, 0.0]);
    /// assert_eq!(m.to_vec(), vec![2.0, 2.0]);
    /// assert_eq!(m.shape(), &[2, 1]);
    /// ```
    #[track_caller]
    pub fn var_mean(
        &self,
        dims: impl IntoShape,
        correction: i64,
        keepdim: bool,
    ) -> (Tensor<T>, Tensor<T>) {
        let dims = dims.into_shape();
        let (mask, shape) = reduction("var_mean", self.shape(), &dims, keepdim);
        let Pair(v, m) = trace::op(
            "var_mean",
            || {
                vec![
                    self.to_arg(),
                    Arg::Ints(dims.clone()),
                    Arg::Int(correction),
                    Arg::Bool(keepdim),
                ]
            },
            || {
                let vm = reduce_groups(self, &mask, |g| {
                    let (v, m) = var_mean_of(g, correction);
                    [T::from_f64(v), T::from_f64(m)]
                });
                Pair(
                    Tensor::from_contiguous(vm.iter().map(|p| p[0]).collect(), &shape),
                    Tensor::from_contiguous(vm.iter().map(|p| p[1]).collect(), &shape),
                )
            },
        );
        (v, m)
    }

    /// The vector `ord`-norm over `dims` (aten `linalg_vector_norm(self,
    /// ord, dims, keepdim)`): `ord` is any float, with `inf` (largest
    /// `|x|`), `-inf` (smallest) and `0` (number of non-zeros) as PyTorch.
    /// An empty `dims` list takes the norm of all elements.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec(vec![3.0, -4.0, 0.0, 1.0], &[2, 2]);
    /// assert_eq!(x.vector_norm(2.0, [1], false).to_vec(), vec![5.0, 1.0]);
    /// assert_eq!(x.vector_norm(1.0, [0], true).to_vec(), vec![3.0, 5.0]);
    /// assert_eq!(x.vector_norm(f64::INFINITY, [0, 1], false).item(), 4.0);
    /// ```
    #[track_caller]
    pub fn vector_norm(&self, ord: f64, dims: impl IntoShape, keepdim: bool) -> Tensor<T> {
        let dims = dims.into_shape();
        let op = "linalg_vector_norm";
        let (mask, shape) = reduction(op, self.shape(), &dims, keepdim);
        if ord < 0.0 || ord == f64::INFINITY {
            // PyTorch refuses max/min-like norms over empty selections.
            if self.numel() == 0 || mask.iter().zip(self.shape()).any(|(&m, &n)| m && n == 0) {
                panic!(
                    "funcz: {op}: Expected a non-empty tensor for ord {ord}; the reduced \
                     dimensions of shape {:?} are empty",
                    self.shape()
                );
            }
        }
        trace::op(
            op,
            || {
                vec![
                    self.to_arg(),
                    Arg::Float(ord),
                    Arg::Ints(dims.clone()),
                    Arg::Bool(keepdim),
                ]
            },
            || {
                let v = reduce_groups(self, &mask, |g| T::from_f64(norm_of(g, ord)));
                Tensor::from_contiguous(v, &shape)
            },
        )
    }

    /// The `p`-norm of all elements as a 0-d tensor (aten `norm(self, p)`,
    /// PyTorch's `x.norm(p)`); see [`vector_norm`](Tensor::vector_norm)
    /// for norms over dims.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f64>::from_vec(vec![3.0, 4.0], &[2]);
    /// assert_eq!(x.norm(2.0).item(), 5.0);
    /// assert_eq!(x.norm(f64::INFINITY).item(), 4.0);
    /// ```
    #[track_caller]
    pub fn norm(&self, p: f64) -> Tensor<T> {
        if (p < 0.0 || p == f64::INFINITY) && self.numel() == 0 {
            panic!(
                "funcz: norm: Expected a non-empty tensor for p = {p} (input shape {:?})",
                self.shape()
            );
        }
        trace::op(
            "norm",
            || vec![self.to_arg(), Arg::Float(p)],
            || {
                let v = self.to_vec();
                Tensor::from_contiguous(vec![T::from_f64(norm_of(&v, p))], &[])
            },
        )
    }
}
