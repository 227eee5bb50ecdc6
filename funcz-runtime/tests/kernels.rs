//! The elementwise and matmul fast paths against a naive reference.
//!
//! Every kernel path (same-shape contiguous, a row, a column or a scalar
//! tensor broadcast against a matrix, broadcast of a size-1 dimension,
//! strided and transposed destinations and operands, zero-size tensors,
//! operands aliasing the destination) is checked element by element
//! against a reference computed here from `to_vec()` copies with explicit
//! index arithmetic, and in-place ops are checked to bump the version
//! exactly once.

use funcz_runtime::Tensor;

/// Row-major multi-indices of `shape`.
fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut k| {
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = k % shape[d];
                k /= shape[d];
            }
            idx
        })
        .collect()
}

/// The element of `t` (row-major values `v`, shape `shape`) that
/// broadcasting maps to index `idx` of a larger shape.
fn at(v: &[f64], shape: &[usize], idx: &[usize]) -> f64 {
    let lead = idx.len() - shape.len();
    let mut k = 0;
    for (d, &n) in shape.iter().enumerate() {
        let i = if n == 1 { 0 } else { idx[lead + d] };
        k = k * n + i;
    }
    v[k]
}

/// `f` applied elementwise to `ts` broadcast to `shape`, row-major.
fn reference(ts: &[&Tensor<f64>], shape: &[usize], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let vals: Vec<Vec<f64>> = ts.iter().map(|t| t.to_vec()).collect();
    indices(shape)
        .iter()
        .map(|idx| {
            let xs: Vec<f64> = ts
                .iter()
                .zip(&vals)
                .map(|(t, v)| at(v, t.shape(), idx))
                .collect();
            f(&xs)
        })
        .collect()
}

/// A tensor of `shape` holding distinct small integers (exact in f64).
fn ints(shape: &[usize], seed: i64) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    let v = (0..n as i64)
        .map(|i| ((i * 7 + seed * 13) % 23 - 11) as f64)
        .collect();
    Tensor::from_vec(v, shape)
}

/// The same values, strictly positive (for divisors).
fn positive(shape: &[usize], seed: i64) -> Tensor<f64> {
    ints(shape, seed).abs().add(1.0)
}

/// Destinations of shape `[4, 6]` in several layouts: contiguous, a
/// transpose, a column window of a wider matrix and a row-strided view.
fn destinations() -> Vec<(&'static str, Tensor<f64>)> {
    vec![
        ("contiguous", ints(&[4, 6], 1)),
        ("transposed", ints(&[6, 4], 2).t()),
        ("column window", ints(&[4, 9], 3).narrow(1, 2, 6)),
        (
            "every other row",
            ints(&[8, 6], 4).as_strided([4, 6], [12, 1], 0),
        ),
    ]
}

/// Operands that broadcast to `[4, 6]`.
fn operands() -> Vec<(&'static str, Tensor<f64>)> {
    vec![
        ("same shape", ints(&[4, 6], 5)),
        ("same shape, transposed", ints(&[6, 4], 6).t()),
        ("row", ints(&[6], 7)),
        ("row [1, 6]", ints(&[1, 6], 8)),
        ("column", ints(&[4, 1], 9)),
        ("column of a transpose", ints(&[1, 4], 10).t()),
        ("scalar tensor", Tensor::scalar(3.0)),
        ("[1, 1]", ints(&[1, 1], 11)),
        ("strided row", ints(&[12], 12).as_strided([6], [2], 0)),
        ("expanded row", ints(&[6], 13).expand([4, 6])),
        ("column with a stride", ints(&[4, 2], 14).narrow(1, 1, 1)),
    ]
}

#[test]
fn inplace_binary_matches_reference_for_every_layout() {
    for (dname, _) in destinations() {
        for (oname, op) in operands() {
            // Fresh destination each time (the op mutates it).
            let dst = destinations()
                .into_iter()
                .find(|(n, _)| *n == dname)
                .unwrap()
                .1;
            let before = dst.to_vec();
            let v0 = dst.version();
            let want = reference(&[&dst, &op], &[4, 6], |x| x[0] * 2.0 - x[1]);
            dst.mul_(2.0).sub_(&op);
            assert_eq!(dst.to_vec(), want, "{dname} -= {oname} (before {before:?})");
            assert_eq!(dst.version(), v0 + 2, "{dname}, {oname}: one bump per op");
        }
    }
}

#[test]
fn out_of_place_binary_matches_reference_for_every_layout() {
    for (dname, a) in destinations() {
        for (oname, b) in operands() {
            let want = reference(&[&a, &b], &[4, 6], |x| x[0] - x[1]);
            assert_eq!(a.sub(&b).to_vec(), want, "{dname} - {oname}");
            // Operands swapped: the broadcast one on the left.
            let want = reference(&[&b, &a], &[4, 6], |x| x[0] - x[1]);
            assert_eq!(b.sub(&a).to_vec(), want, "{oname} - {dname}");
        }
    }
}

#[test]
fn out_of_place_broadcast_of_both_operands() {
    // [4, 1] - [1, 6] and [6] - [4, 1]: both operands broadcast.
    let col = ints(&[4, 1], 1);
    let row = ints(&[1, 6], 2);
    let r = col.sub(&row);
    assert_eq!(r.shape(), &[4, 6]);
    assert_eq!(
        r.to_vec(),
        reference(&[&col, &row], &[4, 6], |x| x[0] - x[1])
    );
    let row1 = ints(&[6], 3);
    let r = row1.sub(&col);
    assert_eq!(
        r.to_vec(),
        reference(&[&row1, &col], &[4, 6], |x| x[0] - x[1])
    );
    // A 3-D broadcast with a size-1 middle dimension: [2, 1, 3] * [4, 1].
    let a = ints(&[2, 1, 3], 4);
    let b = ints(&[4, 1], 5);
    let r = a.mul(&b);
    assert_eq!(r.shape(), &[2, 4, 3]);
    assert_eq!(
        r.to_vec(),
        reference(&[&a, &b], &[2, 4, 3], |x| x[0] * x[1])
    );
}

#[test]
fn unary_ops_on_strided_tensors() {
    for (name, t) in destinations() {
        let want: Vec<f64> = t.to_vec().iter().map(|x| -x.abs()).collect();
        assert_eq!(t.abs().neg().to_vec(), want, "{name}: out of place");
        t.abs_().neg_();
        assert_eq!(t.to_vec(), want, "{name}: in place");
        let clamped: Vec<f64> = want.iter().map(|x| x.clamp(-5.0, -1.0)).collect();
        t.clamp_(-5.0, -1.0);
        assert_eq!(t.to_vec(), clamped, "{name}: clamp_");
    }
}

#[test]
fn addcmul_addcdiv_lerp_in_place_match_reference() {
    let pairs = [
        ("same shape", ints(&[4, 6], 20), positive(&[4, 6], 21)),
        ("row and column", ints(&[6], 22), positive(&[4, 1], 23)),
        ("scalar tensors", Tensor::scalar(2.0), Tensor::scalar(4.0)),
        (
            "transposed and row",
            ints(&[6, 4], 24).t(),
            positive(&[1, 6], 25),
        ),
        (
            "expanded and [1, 1]",
            ints(&[6], 26).expand([4, 6]),
            positive(&[1, 1], 27),
        ),
    ];
    for (dname, _) in destinations() {
        for (pname, a, b) in &pairs {
            let fresh = || {
                destinations()
                    .into_iter()
                    .find(|(n, _)| *n == dname)
                    .unwrap()
                    .1
            };
            let what = format!("{dname}, {pname}");

            let d = fresh();
            let want = reference(&[&d, a, b], &[4, 6], |x| x[0] + 0.5 * x[1] * x[2]);
            let v0 = d.version();
            d.addcmul_(a, b, 0.5);
            assert_eq!(d.to_vec(), want, "addcmul_: {what}");
            assert_eq!(d.version(), v0 + 1, "addcmul_: {what}: one bump");

            let d = fresh();
            let want = reference(&[&d, a, b], &[4, 6], |x| x[0] + -0.25 * x[1] / x[2]);
            d.addcdiv_(a, b, -0.25);
            assert_eq!(d.to_vec(), want, "addcdiv_: {what}");

            // lerp_ with a tensor weight (b / 8 is in (0, 3]).
            let d = fresh();
            let w = b.div(8.0);
            let want = reference(&[&d, a, &w], &[4, 6], |x| {
                let (s, e, w) = (x[0], x[1], x[2]);
                if w.abs() < 0.5 {
                    s + w * (e - s)
                } else {
                    e - (e - s) * (1.0 - w)
                }
            });
            d.lerp_(a, &w);
            assert_eq!(d.to_vec(), want, "lerp_: {what}");

            // The out-of-place twins agree with the in-place ones.
            let d = fresh();
            let want = reference(&[&d, a, b], &[4, 6], |x| x[0] + 0.5 * x[1] * x[2]);
            assert_eq!(d.addcmul(a, b, 0.5).to_vec(), want, "addcmul: {what}");
        }
    }
}

#[test]
fn ternary_in_place_with_operands_aliasing_the_destination() {
    // Both operands are the destination itself: x + v * x * x.
    let x = ints(&[3, 4], 1);
    let want: Vec<f64> = x.to_vec().iter().map(|&e| e + 2.0 * e * e).collect();
    x.addcmul_(&x, &x, 2.0);
    assert_eq!(x.to_vec(), want);
    assert_eq!(x.version(), 1);

    // One operand is the destination, the other its transpose: a partial
    // overlap, refused as PyTorch refuses it; with the transpose cloned
    // first, x + x.t() / x on a square.
    let x = positive(&[3, 3], 2);
    let xt = x.t();
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        x.addcdiv_(&xt, &x, 1.0);
    }));
    assert!(
        refused.is_err(),
        "a partially overlapping operand is refused"
    );
    let xt = xt.contiguous_copy();
    let want = reference(&[&x, &xt, &x], &[3, 3], |v| v[0] + 1.0 * v[1] / v[2]);
    x.addcdiv_(&xt, &x, 1.0);
    assert_eq!(x.to_vec(), want);
    assert_eq!(x.version(), 1);

    // The destination is a view written through its base's storage, one
    // operand the base's other half: rows 0..2 += rows 2..4 * 3.
    let base = ints(&[4, 3], 3);
    let top = base.narrow(0, 0, 2);
    let bottom = base.narrow(0, 2, 2);
    let want = reference(&[&top, &bottom], &[2, 3], |v| v[0] + 3.0 * v[1] * 1.0);
    top.addcmul_(&bottom, &Tensor::ones(&[1]), 3.0);
    assert_eq!(top.to_vec(), want);
    assert_eq!(base.narrow(0, 2, 2).to_vec(), bottom.to_vec());

    // The same non-destination tensor twice (one guard for both).
    let v = ints(&[5], 4);
    let g = ints(&[5], 5);
    let want = reference(&[&v, &g], &[5], |x| x[0] + 0.25 * x[1] * x[1]);
    v.addcmul_(&g, &g, 0.25);
    assert_eq!(v.to_vec(), want);
}

#[test]
fn add_of_own_transpose_reads_the_operand_first() {
    // x.add_(x.t()) on [[1, 2], [3, 4]] is a partial overlap: refused, as
    // PyTorch refuses it, before anything is written; with the transpose
    // cloned, [[2, 5], [5, 8]].
    let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        x.add_(x.t());
    }));
    assert!(refused.is_err());
    assert_eq!((x.to_vec(), x.version()), (vec![1.0, 2.0, 3.0, 4.0], 0));
    x.add_(x.t().contiguous_copy());
    assert_eq!(x.to_vec(), vec![2.0, 5.0, 5.0, 8.0]);
    // Through the transpose, with a broadcast column of the same storage:
    // x.t() += x[:, 0:1] (the column is copied before the write).
    let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let col = x.narrow(1, 0, 1);
    x.t().add_(&col);
    // x.t() = [[1, 3], [2, 4]] += [[1], [3]] -> [[2, 4], [5, 7]];
    // x = [[2, 5], [4, 7]].
    assert_eq!(x.to_vec(), vec![2.0, 5.0, 4.0, 7.0]);
    assert_eq!(x.version(), 1);
}

#[test]
fn zero_size_tensors() {
    for shape in [[0usize, 6], [4, 0]] {
        let x = Tensor::<f64>::zeros(&shape);
        let row = ints(&[shape[1]], 1);
        x.add_(&row).addcmul_(&row, &row, 2.0);
        assert_eq!(x.to_vec(), Vec::<f64>::new());
        assert_eq!(x.version(), 2, "{shape:?}: the version still moves");
        assert_eq!(x.add(&row).shape(), &shape[..]);
        assert_eq!(x.addcmul(&row, &row, 1.0).shape(), &shape[..]);
        // A zero-size result from a size-1 dimension broadcast.
        let r = x.narrow(1, 0, 0).add(Tensor::<f64>::zeros(&[shape[0], 1]));
        assert_eq!(r.shape(), &[shape[0], 0]);
    }
    // [2, 0] + [3, 1, 1] broadcasts to [3, 2, 0].
    let r = Tensor::<f64>::zeros(&[2, 0]).add(ints(&[3, 1, 1], 3));
    assert_eq!(r.shape(), &[3, 2, 0]);
}

#[test]
fn one_element_destinations() {
    // Every dimension of size 1: a walk of one row of one element.
    for shape in [&[][..], &[1][..], &[1, 1][..]] {
        let x = Tensor::<f64>::full(shape, 1.0);
        x.addcmul_(&Tensor::scalar(2.0), &Tensor::full(shape, 3.0), 1.0);
        x.addcdiv_(&x, &Tensor::scalar(2.0), 1.0);
        x.lerp_(&Tensor::scalar(1.0), Tensor::scalar(0.5));
        x.add_(Tensor::scalar(1.0)).mul_(&x);
        // ((1 + 6) * 1.5 = 10.5, lerp to 1 by 0.5 = 5.75, + 1 = 6.75)^2.
        assert_eq!(x.to_vec(), vec![6.75 * 6.75], "{shape:?}");
        assert_eq!(x.version(), 5);
    }
    // A one-element view at an offset, through its base.
    let base = ints(&[3, 3], 1);
    let v = base.narrow(0, 1, 1).narrow(1, 2, 1);
    let want = base.to_vec()[5] + 2.0 * 3.0;
    v.addcmul_(&Tensor::scalar(2.0), &Tensor::scalar(3.0), 1.0);
    assert_eq!(base.to_vec()[5], want);
}

#[test]
fn broadcast_errors_are_unchanged() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let err = std::panic::catch_unwind(|| {
        x.addcmul_(&Tensor::zeros(&[4, 1, 3]), &Tensor::zeros(&[3]), 1.0);
    })
    .expect_err("a result of shape [4, 2, 3] does not fit [2, 3]");
    let msg = err.downcast_ref::<String>().unwrap();
    assert_eq!(
        msg,
        "funcz: addcmul_: output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]"
    );
    assert_eq!(x.version(), 0);
}

#[test]
fn many_small_ops_bump_the_version_once_each() {
    let x = Tensor::<f32>::zeros(&[16]);
    let w = Tensor::<f32>::ones(&[16]);
    for _ in 0..1000 {
        x.add_(&w);
    }
    assert_eq!(x.version(), 1000);
    assert_eq!(w.version(), 0);
    assert_eq!(x.to_vec(), vec![1000.0; 16]);
}

/// `a @ b` for `[.., n, k] @ [.., k, m]` with explicit loops.
fn matmul_reference(a: &Tensor<f64>, b: &Tensor<f64>) -> Vec<f64> {
    let (n, k) = (a.size(-2), a.size(-1));
    let m = b.size(-1);
    let batch = &a.shape()[..a.dim() - 2];
    let b = b.expand(
        batch
            .iter()
            .copied()
            .chain([k, m])
            .map(|x| x as i64)
            .collect::<Vec<_>>(),
    );
    let (av, bv) = (a.to_vec(), b.contiguous_copy().to_vec());
    let nb: usize = batch.iter().product();
    let mut out = Vec::new();
    for i in 0..nb {
        for r in 0..n {
            for c in 0..m {
                let mut s = 0.0;
                for j in 0..k {
                    s += av[i * n * k + r * k + j] * bv[i * k * m + j * m + c];
                }
                out.push(s);
            }
        }
    }
    out
}

#[test]
fn batched_matmul_with_a_shared_right_operand() {
    // Folded into one GEMM: b shared by every batch entry.
    let a = ints(&[3, 4, 5], 1);
    for b in [ints(&[5, 2], 2), ints(&[1, 5, 2], 3)] {
        let r = a.matmul(&b);
        assert_eq!(r.shape(), &[3, 4, 2]);
        assert_eq!(r.to_vec(), matmul_reference(&a, &b), "b {:?}", b.shape());
    }
    // 4-D with broadcast batch dims: [2, 3, 4, 5] @ [1, 1, 5, 2].
    let a4 = ints(&[2, 3, 4, 5], 4);
    let b4 = ints(&[1, 1, 5, 2], 5);
    assert_eq!(a4.matmul(&b4).to_vec(), matmul_reference(&a4, &b4));
    // Not foldable: the batch entries of `a` are interleaved (a permuted
    // [4, 3, 5]), or `b` differs per batch entry.
    let ap = ints(&[4, 3, 5], 6).permute([1, 0, 2]);
    let b = ints(&[5, 2], 7);
    assert_eq!(
        ap.matmul(&b).to_vec(),
        matmul_reference(&ap.contiguous_copy(), &b)
    );
    let bb = ints(&[3, 5, 2], 8);
    assert_eq!(a.matmul(&bb).to_vec(), matmul_reference(&a, &bb));
    // An expanded left operand (row stride 0 within a batch entry).
    let ae = ints(&[3, 1, 5], 9).expand([3, 4, 5]);
    assert_eq!(
        ae.matmul(&b).to_vec(),
        matmul_reference(&ae.contiguous_copy(), &b)
    );
    // Zero-size batch and inner dimensions.
    assert_eq!(ints(&[0, 4, 5], 1).matmul(&b).shape(), &[0, 4, 2]);
    let z = Tensor::<f64>::zeros(&[3, 4, 0]).matmul(&Tensor::zeros(&[0, 2]));
    assert_eq!(z.to_vec(), vec![0.0; 24]);
}

#[test]
fn matmul_square_sizes_match_reference() {
    for n in [1usize, 7, 64, 65] {
        let a = ints(&[n, n], 1);
        let b = ints(&[n, n], 2);
        assert_eq!(a.matmul(&b).to_vec(), matmul_reference(&a, &b), "{n}");
        assert_eq!(
            a.t().matmul(&b).to_vec(),
            matmul_reference(&a.t().contiguous_copy(), &b),
            "{n}, transposed"
        );
    }
}

/// `contiguous()` under a name that does not depend on which helper
/// methods exist: a row-major copy.
trait ContiguousCopy {
    fn contiguous_copy(&self) -> Self;
}

impl ContiguousCopy for Tensor<f64> {
    fn contiguous_copy(&self) -> Self {
        Tensor::from_vec(self.to_vec(), self.shape())
    }
}
