//! `matmul` with PyTorch's rules: dot product, matrix-vector, matrix-matrix
//! and batched products with broadcast batch dimensions.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

use crate::element::Element;
use crate::layout::{broadcast_shapes, contiguous_strides};
use crate::storage::huge;
use crate::tensor::Tensor;
use crate::trace::{self, ToArg};

use super::kernel::with_reads;

/// A matrix operand: `rows x cols` at `strides` within its batch entry.
struct Mat {
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
}

/// Batch dims, matrix shape and strides of a matmul operand. A 1-D left
/// operand is a `1 x k` row, a 1-D right operand a `k x 1` column.
fn as_batched<T: Element>(t: &Tensor<T>, left: bool) -> (Vec<usize>, Vec<usize>, Mat) {
    let (sh, st) = (t.shape(), t.strides());
    let n = sh.len();
    if n == 1 {
        let m = if left {
            Mat {
                rows: 1,
                cols: sh[0],
                rs: 0,
                cs: st[0],
            }
        } else {
            Mat {
                rows: sh[0],
                cols: 1,
                rs: st[0],
                cs: 0,
            }
        };
        return (Vec::new(), Vec::new(), m);
    }
    let m = Mat {
        rows: sh[n - 2],
        cols: sh[n - 1],
        rs: st[n - 2],
        cs: st[n - 1],
    };
    (sh[..n - 2].to_vec(), st[..n - 2].to_vec(), m)
}

/// The shape checks of `matmul`, at the caller's line.
#[track_caller]
fn check_matmul<T: Element>(a: &Tensor<T>, b: &Tensor<T>) {
    let (da, db) = (a.dim(), b.dim());
    if da == 0 || db == 0 {
        panic!(
            "funcz: matmul: both arguments to matmul need to be at least 1D, but they are {da}D \
             and {db}D (shapes {:?} and {:?})",
            a.shape(),
            b.shape()
        );
    }
    if da == 1 && db == 1 && a.shape() != b.shape() {
        panic!(
            "funcz: matmul: inconsistent tensor size, expected tensor {:?} and src {:?} to have \
             the same number of elements, but got {} and {} elements respectively",
            a.shape(),
            b.shape(),
            a.numel(),
            b.numel()
        );
    }
    let (ba, _, ma) = as_batched(a, true);
    let (bb, _, mb) = as_batched(b, false);
    if ma.cols != mb.rows {
        panic!(
            "funcz: matmul: shapes {:?} and {:?} cannot be multiplied ({}x{} and {}x{})",
            a.shape(),
            b.shape(),
            ma.rows,
            ma.cols,
            mb.rows,
            mb.cols
        );
    }
    let batch_ok = ba
        .iter()
        .rev()
        .zip(bb.iter().rev())
        .all(|(&x, &y)| x == y || x == 1 || y == 1);
    if !batch_ok {
        panic!(
            "funcz: matmul: shapes {:?} and {:?} cannot be broadcast together (batch dimensions \
             {ba:?} and {bb:?})",
            a.shape(),
            b.shape()
        );
    }
    let mut out_shape = broadcast_shapes("matmul", &ba, &bb).to_vec();
    if da > 1 {
        out_shape.push(ma.rows);
    }
    if db > 1 {
        out_shape.push(mb.cols);
    }
    crate::storage::check_alloc::<T>("matmul", &out_shape);
}

fn matmul_impl<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
    let (da, db) = (a.dim(), b.dim());
    let (ba, sa, ma) = as_batched(a, true);
    let (bb, sb, mb) = as_batched(b, false);
    let batch = broadcast_shapes("matmul", &ba, &bb);
    let (n, k, m) = (ma.rows, ma.cols, mb.cols);
    let mut out_shape = batch.to_vec();
    if da > 1 {
        out_shape.push(n);
    }
    if db > 1 {
        out_shape.push(m);
    }
    let nbatch: usize = batch.iter().product();
    let mut out = huge::zeroed(T::zero(), nbatch * n * m);
    if out.is_empty() || k == 0 {
        return Tensor::from_contiguous(out, &out_shape);
    }
    // Per-batch offsets of each operand: stride 0 along broadcast dims.
    let bstrides = |bshape: &[usize], bst: &[usize]| -> Vec<usize> {
        let lead = batch.len() - bshape.len();
        (0..batch.len())
            .map(|i| {
                if i < lead || bshape[i - lead] == 1 {
                    0
                } else {
                    bst[i - lead]
                }
            })
            .collect()
    };
    let (bsa, bsb) = (bstrides(&ba, &sa), bstrides(&bb, &sb));
    let unit = contiguous_strides(&batch);
    // A right operand shared by every batch entry (a weight matrix against
    // a batch of inputs) whose left operand's batch entries follow each
    // other row after row: one GEMM of all the rows, which packs the right
    // operand once instead of once per batch entry.
    let fold = nbatch > 1
        && bsb.iter().all(|&s| s == 0)
        && (0..batch.len()).all(|d| batch[d] == 1 || bsa[d] == unit[d] * n * ma.rs);
    let (rows, nbatch) = if fold { (nbatch * n, 1) } else { (n, nbatch) };
    with_reads([a, b], |[xa, xb]| {
        for (i, c) in out.chunks_mut(rows * m).take(nbatch).enumerate() {
            let (mut oa, mut ob) = (a.storage_offset(), b.storage_offset());
            for d in 0..batch.len() {
                let idx = (i / unit[d]) % batch[d];
                oa += idx * bsa[d];
                ob += idx * bsb[d];
            }
            let av = ArrayView2::from_shape((rows, k).strides((ma.rs, ma.cs)), &xa[oa..])
                .expect("funcz: internal: matmul lhs view");
            let bv = ArrayView2::from_shape((k, m).strides((mb.rs, mb.cs)), &xb[ob..])
                .expect("funcz: internal: matmul rhs view");
            let mut cv =
                ArrayViewMut2::from_shape((rows, m), c).expect("funcz: internal: matmul out");
            general_mat_mul(T::one(), &av, &bv, T::zero(), &mut cv);
        }
    });
    Tensor::from_contiguous(out, &out_shape)
}

impl<T: Element> Tensor<T> {
    /// Matrix product with PyTorch's rules (aten `matmul`): 1-D · 1-D is a
    /// dot product (0-d result); a 1-D left operand is a row vector and a
    /// 1-D right operand a column vector, their added dimension removed
    /// from the result; beyond two dims the leading (batch) dims broadcast.
    /// Floats use a blocked GEMM.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let v = Tensor::from_vec(vec![1.0, 0.0, -1.0], &[3]);
    /// assert_eq!(a.matmul(&v).to_vec(), vec![-2.0, -2.0]);
    /// assert_eq!(v.matmul(&v).item(), 2.0);
    /// ```
    #[track_caller]
    pub fn matmul(&self, other: &Tensor<T>) -> Tensor<T> {
        check_matmul(self, other);
        trace::op(
            "matmul",
            || vec![self.to_arg(), other.to_arg()],
            || matmul_impl(self, other),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::Layout;
    use crate::tensor::Tensor;

    #[test]
    fn matmul_reads_strided_operands() {
        // a = [[1,2,3],[4,5,6]]; a.t() @ a = [[17,22,27],[22,29,36],[27,36,45]]
        let a = Tensor::<i64>::from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
        let at = a.with_layout(Layout::new(&[3, 2], &[1, 3], 0));
        assert_eq!(
            at.matmul(&a).to_vec(),
            vec![17, 22, 27, 22, 29, 36, 27, 36, 45]
        );
        // Column 1 of a (stride 3) as a vector: a @ [2, 5]?  shapes differ;
        // use at @ col where col = a[:, 1] = [2, 5]:
        // at @ [2,5] = [1*2+4*5, 2*2+5*5, 3*2+6*5] = [22, 29, 36]
        let col = a.with_layout(Layout::new(&[2], &[3], 1));
        assert_eq!(at.matmul(&col).to_vec(), vec![22, 29, 36]);
        // A broadcast (stride-0) batch operand.
        let batch = a.with_layout(Layout::new(&[2, 2, 3], &[0, 3, 1], 0));
        let v = Tensor::<i64>::from_vec(vec![1, 1, 1], &[3]);
        assert_eq!(batch.matmul(&v).to_vec(), vec![6, 15, 6, 15]);
    }
}
