//! Fallible twins of the ops whose arguments a service takes from outside:
//! `try_from_vec`, `try_view`, `try_reshape`, `try_narrow`, `try_select`, `try_matmul` and
//! the shape-checked binary ops `try_add`/`try_sub`/`try_mul`/`try_div`.
//!
//! Each one checks its arguments with the same rules, in the same order, as
//! the panicking op, and returns the message that op would panic with as an
//! [`Error`]; when the check passes it runs the op itself (so it is traced
//! exactly as the op). Nothing is caught: a failing check runs no op.

use std::fmt;

use crate::args::{AsI64, IntoShape};
use crate::dims::{Dims, MAX_DIMS};
use crate::element::Element;
use crate::ops::{Operand, OperandRef};
use crate::tensor::Tensor;
use crate::view::shape::view_strides;

/// The error of a `try_*` method (or of a fallible conversion): the op's
/// name and the message its panicking twin gives.
///
/// `Display` prints the full message, `funcz: {op}: {detail}`, the same
/// text as the panic.
///
/// ```
/// use funcz_runtime::Tensor;
/// let a = Tensor::<f32>::zeros(&[2, 3]);
/// let e = a.try_view([4, -1]).unwrap_err();
/// assert_eq!(e.op(), "view");
/// assert_eq!(e.to_string(), "funcz: view: shape [4, -1] is invalid for input of size 6");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    op: &'static str,
    detail: String,
}

/// `Result<T, funcz::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `op` saying `detail` (without the `funcz: op: ` prefix).
    pub(crate) fn new(op: &'static str, detail: String) -> Self {
        Error { op, detail }
    }

    /// The op that refused its arguments (`view`, `matmul`, ...).
    pub fn op(&self) -> &str {
        self.op
    }

    /// The message without the `funcz: {op}: ` prefix.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "funcz: {}: {}", self.op, self.detail)
    }
}

impl std::error::Error for Error {}

/// Builds an `Err` for `op`.
fn fail<T>(op: &'static str, detail: String) -> Result<T> {
    Err(Error::new(op, detail))
}

// ---------------------------------------------------------------------------
// checks, mirroring `view::shape` and the ops' own checks

/// `wrap_dim`'s check: the wrapped dim, or its error.
fn wrap_dim(op: &'static str, dim: i64, shape: &[usize]) -> Result<usize> {
    let n = shape.len() as i64;
    let (lo, hi) = if n == 0 { (-1, 0) } else { (-n, n - 1) };
    if dim < lo || dim > hi {
        return fail(
            op,
            format!(
                "dimension out of range (expected to be in range of [{lo}, {hi}], but got \
                 {dim}) for a tensor of shape {shape:?}"
            ),
        );
    }
    Ok(if dim < 0 {
        (dim + n.max(1)) as usize
    } else {
        dim as usize
    })
}

/// The check that a narrowing view is not applied to a 0-d tensor.
fn non_scalar(op: &'static str, shape: &[usize]) -> Result<()> {
    if shape.is_empty() {
        return fail(op, "cannot be applied to a 0-dim tensor (shape [])".into());
    }
    Ok(())
}

/// `infer_size`'s checks: the resolved shape, or its error.
fn infer_size(op: &'static str, shape: &[i64], numel: usize) -> Result<Dims> {
    if shape.len() > MAX_DIMS {
        return fail(
            op,
            format!(
                "tensors of rank {} are not supported (at most {MAX_DIMS} dims), requested \
                 {shape:?}",
                shape.len()
            ),
        );
    }
    let mut infer = None;
    let mut known: Option<usize> = Some(1);
    let mut out = Dims::new();
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return fail(
                    op,
                    format!("only one dimension can be inferred, got shape {shape:?}"),
                );
            }
            infer = Some(i);
            out.push(1);
        } else if d < 0 {
            return fail(
                op,
                format!("invalid shape dimension {d} in shape {shape:?}"),
            );
        } else {
            known = known.and_then(|k| k.checked_mul(d as usize));
            out.push(d as usize);
        }
    }
    let ok = match known {
        Some(k) => numel == k || (infer.is_some() && k > 0 && numel.is_multiple_of(k)),
        None => false,
    };
    if !ok {
        return fail(
            op,
            format!("shape {shape:?} is invalid for input of size {numel}"),
        );
    }
    if let Some(i) = infer {
        let k = known.unwrap_or(0);
        if k == 0 {
            return fail(
                op,
                format!(
                    "cannot reshape tensor of 0 elements into shape {shape:?} because the \
                     unspecified dimension size -1 can be any value and is ambiguous"
                ),
            );
        }
        out[i] = numel / k;
    }
    Ok(out)
}

/// The broadcast check of elementwise ops.
fn broadcast(op: &'static str, a: &[usize], b: &[usize]) -> Result<()> {
    match crate::layout::try_broadcast_shapes(a, b) {
        Ok(s) => match crate::storage::try_numel(&s, true) {
            Ok(_) => Ok(()),
            Err(why) => fail(
                op,
                format!("{why} for the broadcast shape {s:?} of shapes {a:?} and {b:?}"),
            ),
        },
        Err((i, da, db)) => fail(
            op,
            format!(
                "shapes {a:?} and {b:?} cannot be broadcast together (size {da} vs {db} at \
                 dimension {i})"
            ),
        ),
    }
}

/// The checks of a binary elementwise op with a tensor or scalar operand.
fn binary<T: Element>(op: &'static str, a: &Tensor<T>, b: OperandRef<'_, T>) -> Result<()> {
    match b {
        OperandRef::Tensor(b) if a.shape() != b.shape() => broadcast(op, a.shape(), b.shape()),
        _ => Ok(()),
    }
}

/// Integer division's check for a zero divisor (floats divide to inf/NaN).
fn int_divisor<T: Element>(op: &'static str, a: &Tensor<T>, b: OperandRef<'_, T>) -> Result<()> {
    if T::IS_FLOAT {
        return Ok(());
    }
    let has_zero = match b {
        OperandRef::Scalar(s) => s == T::zero(),
        OperandRef::Tensor(t) => t.with_array(|v| v.iter().any(|&x| x == T::zero())),
    };
    if has_zero {
        return fail(
            op,
            format!(
                "integer division by zero (dividend shape {:?}, divisor shape {:?})",
                a.shape(),
                b.shape()
            ),
        );
    }
    Ok(())
}

/// `matmul`'s checks.
fn matmul<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Result<()> {
    let op = "matmul";
    let (da, db) = (a.dim(), b.dim());
    let (sa, sb) = (a.shape(), b.shape());
    if da == 0 || db == 0 {
        return fail(
            op,
            format!(
                "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D \
                 (shapes {sa:?} and {sb:?})"
            ),
        );
    }
    if da == 1 && db == 1 && sa != sb {
        return fail(
            op,
            format!(
                "inconsistent tensor size, expected tensor {sa:?} and src {sb:?} to have the \
                 same number of elements, but got {} and {} elements respectively",
                a.numel(),
                b.numel()
            ),
        );
    }
    // A 1-D left operand is a 1 x k row, a 1-D right one a k x 1 column.
    let (ba, (rows_a, cols_a)) = if da == 1 {
        (&sa[..0], (1, sa[0]))
    } else {
        (&sa[..da - 2], (sa[da - 2], sa[da - 1]))
    };
    let (bb, (rows_b, cols_b)) = if db == 1 {
        (&sb[..0], (sb[0], 1))
    } else {
        (&sb[..db - 2], (sb[db - 2], sb[db - 1]))
    };
    if cols_a != rows_b {
        return fail(
            op,
            format!(
                "shapes {sa:?} and {sb:?} cannot be multiplied ({rows_a}x{cols_a} and \
                 {rows_b}x{cols_b})"
            ),
        );
    }
    let batch_ok = ba
        .iter()
        .rev()
        .zip(bb.iter().rev())
        .all(|(&x, &y)| x == y || x == 1 || y == 1);
    if !batch_ok {
        return fail(
            op,
            format!(
                "shapes {sa:?} and {sb:?} cannot be broadcast together (batch dimensions \
                 {ba:?} and {bb:?})"
            ),
        );
    }
    Ok(())
}

/// # Fallible twins
///
/// For servers and other callers that take shapes and indices from
/// outside: each `try_*` method checks its arguments exactly as its
/// panicking twin and returns the same message as an [`Error`] instead of
/// panicking; on success it runs (and traces) the op itself.
///
/// ```
/// use funcz_runtime::{Error, Tensor};
///
/// fn logits(x: &Tensor, w: &Tensor) -> Result<Tensor, Error> {
///     let h = x.try_reshape([-1, 4])?;
///     h.try_matmul(w)?.try_add(1.0)
/// }
///
/// let w = Tensor::<f32>::ones(&[4, 2]);
/// assert_eq!(logits(&Tensor::ones(&[2, 4]), &w).unwrap().to_vec(), vec![5.0; 4]);
/// let e = logits(&Tensor::ones(&[2, 3]), &w).unwrap_err();
/// assert_eq!(e.to_string(), "funcz: reshape: shape [-1, 4] is invalid for input of size 6");
/// ```
impl<T: Element> Tensor<T> {
    /// [`from_vec`](Tensor::from_vec), or the error it would panic with
    /// (a length that is not the shape's number of elements).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// assert_eq!(Tensor::try_from_vec(vec![1.0f32; 6], &[2, 3]).unwrap().shape(), &[2, 3]);
    /// assert_eq!(
    ///     Tensor::try_from_vec(vec![1.0f32; 5], &[2, 3]).unwrap_err().to_string(),
    ///     "funcz: from_vec: shape [2, 3] needs 6 elements but data has 5"
    /// );
    /// ```
    pub fn try_from_vec(data: Vec<T>, shape: &[usize]) -> Result<Tensor<T>> {
        let op = "from_vec";
        // The same order as `from_vec`: the length, then the rank.
        match crate::storage::try_numel(shape, true) {
            Ok(n) if n == data.len() => {}
            Ok(n) => {
                return fail(
                    op,
                    format!(
                        "shape {shape:?} needs {n} elements but data has {}",
                        data.len()
                    ),
                );
            }
            Err(why) => return fail(op, format!("{why} for a tensor of shape {shape:?}")),
        }
        if shape.len() > MAX_DIMS {
            return fail(
                op,
                format!(
                    "tensors of rank {} are not supported (at most {MAX_DIMS} dims), got shape \
                     {shape:?}",
                    shape.len()
                ),
            );
        }
        Ok(Tensor::from_vec(data, shape))
    }

    /// [`view`](Tensor::view), or the error it would panic with (an invalid
    /// shape, or strides that do not allow a view).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::zeros(&[2, 3]);
    /// assert_eq!(a.try_view([3, 2]).unwrap().shape(), &[3, 2]);
    /// let e = a.t().try_view([6]).unwrap_err();
    /// assert!(e.detail().starts_with("view size is not compatible"));
    /// ```
    pub fn try_view(&self, shape: impl IntoShape) -> Result<Tensor<T>> {
        let shape = shape.into_shape();
        let dims = infer_size("view", &shape, self.numel())?;
        if view_strides(self.layout(), &dims).is_none() {
            return fail(
                "view",
                format!(
                    "view size is not compatible with input tensor's size and stride (at least \
                     one dimension spans across two contiguous subspaces). Use .reshape(...) \
                     instead. (input shape {:?}, strides {:?}, requested shape {shape:?})",
                    self.shape(),
                    self.strides()
                ),
            );
        }
        Ok(self.view(shape))
    }

    /// [`reshape`](Tensor::reshape), or the error it would panic with (an
    /// invalid shape).
    pub fn try_reshape(&self, shape: impl IntoShape) -> Result<Tensor<T>> {
        let shape = shape.into_shape();
        infer_size("reshape", &shape, self.numel())?;
        Ok(self.reshape(shape))
    }

    /// [`narrow`](Tensor::narrow), or the error it would panic with (a 0-d
    /// tensor, a dim out of range, a window that does not fit).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::zeros(&[5]);
    /// assert_eq!(a.try_narrow(0, 3, 2).unwrap().shape(), &[2]);
    /// assert_eq!(
    ///     a.try_narrow(0, 4, 2).unwrap_err().detail(),
    ///     "start (4) + length (2) exceeds dimension size (5) of dimension 0 of a tensor of \
    ///      shape [5]"
    /// );
    /// ```
    pub fn try_narrow(
        &self,
        dim: impl AsI64,
        start: impl AsI64,
        length: impl AsI64,
    ) -> Result<Tensor<T>> {
        let (dim, start, length) = (dim.as_i64(), start.as_i64(), length.as_i64());
        let op = "narrow";
        let shape = self.shape();
        non_scalar(op, shape)?;
        let d = wrap_dim(op, dim, shape)?;
        let size = shape[d] as i64;
        if length < 0 {
            return fail(
                op,
                format!(
                    "length must be non-negative, got length {length} for a tensor of shape \
                     {shape:?}"
                ),
            );
        }
        if start < -size || start > size {
            return fail(
                op,
                format!(
                    "start out of range (expected to be in range of [{}, {size}], but got \
                     {start}) for dimension {d} of a tensor of shape {shape:?}",
                    -size
                ),
            );
        }
        let s = if start < 0 { start + size } else { start };
        if s > size - length {
            return fail(
                op,
                format!(
                    "start ({s}) + length ({length}) exceeds dimension size ({size}) of \
                     dimension {d} of a tensor of shape {shape:?}"
                ),
            );
        }
        Ok(self.narrow(dim, start, length))
    }

    /// [`select`](Tensor::select), or the error it would panic with (a 0-d
    /// tensor, a dim or index out of range).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::zeros(&[2, 3]);
    /// assert_eq!(a.try_select(1, -1).unwrap().shape(), &[2]);
    /// assert_eq!(
    ///     a.try_select(1, 3).unwrap_err().to_string(),
    ///     "funcz: select: index 3 out of range for tensor of size [2, 3] at dimension 1"
    /// );
    /// ```
    pub fn try_select(&self, dim: impl AsI64, index: impl AsI64) -> Result<Tensor<T>> {
        let (dim, index) = (dim.as_i64(), index.as_i64());
        let op = "select";
        let shape = self.shape();
        non_scalar(op, shape)?;
        let d = wrap_dim(op, dim, shape)?;
        let size = shape[d] as i64;
        if index < -size || index >= size {
            return fail(
                op,
                format!("index {index} out of range for tensor of size {shape:?} at dimension {d}"),
            );
        }
        Ok(self.select(dim, index))
    }

    /// [`matmul`](Tensor::matmul), or the error it would panic with (a 0-d
    /// operand, inner sizes that differ, batch dims that do not broadcast).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::ones(&[2, 3]);
    /// assert_eq!(a.try_matmul(&a.t()).unwrap().shape(), &[2, 2]);
    /// assert_eq!(
    ///     a.try_matmul(&a).unwrap_err().detail(),
    ///     "shapes [2, 3] and [2, 3] cannot be multiplied (2x3 and 2x3)"
    /// );
    /// ```
    pub fn try_matmul(&self, other: &Tensor<T>) -> Result<Tensor<T>> {
        matmul(self, other)?;
        Ok(self.matmul(other))
    }

    /// [`add`](Tensor::add), or the error it would panic with (shapes that
    /// do not broadcast).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::ones(&[2, 3]);
    /// assert_eq!(a.try_add(&Tensor::ones(&[3])).unwrap().to_vec(), vec![2.0; 6]);
    /// assert!(a.try_add(&Tensor::ones(&[2])).is_err());
    /// ```
    pub fn try_add(&self, other: impl Operand<T>) -> Result<Tensor<T>> {
        binary("add", self, other.operand())?;
        Ok(self.add(other))
    }

    /// [`sub`](Tensor::sub), or the error it would panic with (shapes that
    /// do not broadcast).
    pub fn try_sub(&self, other: impl Operand<T>) -> Result<Tensor<T>> {
        binary("sub", self, other.operand())?;
        Ok(self.sub(other))
    }

    /// [`mul`](Tensor::mul), or the error it would panic with (shapes that
    /// do not broadcast).
    pub fn try_mul(&self, other: impl Operand<T>) -> Result<Tensor<T>> {
        binary("mul", self, other.operand())?;
        Ok(self.mul(other))
    }

    /// [`div`](Tensor::div), or the error it would panic with (shapes that
    /// do not broadcast, or an integer division by zero).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<i64>::from_vec(vec![4, 6], &[2]);
    /// assert_eq!(a.try_div(2).unwrap().to_vec(), vec![2, 3]);
    /// assert_eq!(a.try_div(0).unwrap_err().detail(),
    ///     "integer division by zero (dividend shape [2], divisor shape [])");
    /// ```
    pub fn try_div(&self, other: impl Operand<T>) -> Result<Tensor<T>> {
        // The same order as `div`: the divisor first, then the shapes.
        int_divisor("div", self, other.operand())?;
        binary("div", self, other.operand())?;
        Ok(self.div(other))
    }
}
