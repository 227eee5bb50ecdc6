//! Out-of-place ops, constructors, reductions, matmul, operators,
//! comparison, printing and tracing, through the public API. Expected
//! values are worked out by hand from PyTorch's rules.

use funcz_runtime::Tensor;
use funcz_runtime::trace::{Arg, start_recording, stop_recording};

fn t32(v: &[f32], shape: &[usize]) -> Tensor<f32> {
    Tensor::from_vec(v.to_vec(), shape)
}

fn i64s(v: &[i64], shape: &[usize]) -> Tensor<i64> {
    Tensor::from_vec(v.to_vec(), shape)
}

// ---------------------------------------------------------------- broadcasting

#[test]
fn column_plus_row_broadcasts_to_a_matrix() {
    let col = t32(&[1.0, 2.0, 3.0], &[3, 1]);
    let row = t32(&[10.0, 20.0, 30.0, 40.0], &[4]);
    let s = col.add(&row);
    assert_eq!(s.shape(), &[3, 4]);
    assert_eq!(
        s.to_vec(),
        vec![
            11.0, 21.0, 31.0, 41.0, 12.0, 22.0, 32.0, 42.0, 13.0, 23.0, 33.0, 43.0
        ]
    );
    assert!(s.is_contiguous());
    // Operand order matters for sub: [3] - [2, 1].
    let a = t32(&[1.0, 2.0, 3.0], &[3]);
    let b = t32(&[10.0, 20.0], &[2, 1]);
    assert_eq!(
        a.sub(&b).to_vec(),
        vec![-9.0, -8.0, -7.0, -19.0, -18.0, -17.0]
    );
    assert_eq!(b.sub(&a).to_vec(), vec![9.0, 8.0, 7.0, 19.0, 18.0, 17.0]);
}

#[test]
fn three_d_times_two_d_broadcast() {
    // a: [2, 1, 3], b: [4, 1] -> [2, 4, 3], out[i][j][k] = a[i][0][k] * b[j]
    let a = i64s(&[0, 1, 2, 3, 4, 5], &[2, 1, 3]);
    let b = i64s(&[1, 2, 3, 4], &[4, 1]);
    let p = a.mul(&b);
    assert_eq!(p.shape(), &[2, 4, 3]);
    assert_eq!(
        p.to_vec(),
        vec![
            0, 1, 2, 0, 2, 4, 0, 3, 6, 0, 4, 8, //
            3, 4, 5, 6, 8, 10, 9, 12, 15, 12, 16, 20
        ]
    );
}

#[test]
fn zero_d_and_size_one_operands_broadcast() {
    let x = t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(
        x.add(Tensor::scalar(10.0)).to_vec(),
        vec![11.0, 12.0, 13.0, 14.0]
    );
    assert_eq!(Tensor::scalar(10.0).sub(&x).shape(), &[2, 2]);
    assert_eq!(
        Tensor::scalar(10.0).sub(&x).to_vec(),
        vec![9.0, 8.0, 7.0, 6.0]
    );
    assert_eq!(
        x.mul(t32(&[2.0], &[1, 1])).to_vec(),
        vec![2.0, 4.0, 6.0, 8.0]
    );
    // Scalar operands.
    assert_eq!(x.mul(0.5).to_vec(), vec![0.5, 1.0, 1.5, 2.0]);
    assert_eq!(x.div(2.0).to_vec(), vec![0.5, 1.0, 1.5, 2.0]);
    // An owned tensor operand.
    assert_eq!(x.add(x.mul(10.0)).to_vec(), vec![11.0, 22.0, 33.0, 44.0]);
}

#[test]
fn empty_tensors_broadcast_to_empty_results() {
    let e = Tensor::<f32>::zeros(&[0, 3]);
    let r = e.add(t32(&[1.0, 2.0, 3.0], &[3]));
    assert_eq!(r.shape(), &[0, 3]);
    assert_eq!(r.numel(), 0);
    assert_eq!(e.exp().shape(), &[0, 3]);
}

#[test]
#[should_panic(expected = "funcz: add: shapes [3] and [4] cannot be broadcast together")]
fn incompatible_shapes_name_the_op_and_shapes() {
    t32(&[1.0; 3], &[3]).add(t32(&[1.0; 4], &[4]));
}

#[test]
#[should_panic(expected = "funcz: mul: shapes [2, 3] and [3, 2] cannot be broadcast")]
fn incompatible_matrices_in_mul() {
    t32(&[1.0; 6], &[2, 3]).mul(t32(&[1.0; 6], &[3, 2]));
}

#[test]
fn integer_division_truncates() {
    let x = i64s(&[7, -7, 6], &[3]);
    assert_eq!(x.div(2).to_vec(), vec![3, -3, 3]);
    assert_eq!(x.div(i64s(&[-2, 2, 4], &[3])).to_vec(), vec![-3, -3, 1]);
}

#[test]
#[should_panic(expected = "funcz: div: integer division by zero")]
fn integer_division_by_zero_panics_with_op_name() {
    i64s(&[1, 2], &[2]).div(i64s(&[1, 0], &[2]));
}

#[test]
fn float_division_by_zero_is_ieee() {
    let r = t32(&[1.0, -1.0, 0.0], &[3]).div(0.0).to_vec();
    assert_eq!(r[0], f32::INFINITY);
    assert_eq!(r[1], f32::NEG_INFINITY);
    assert!(r[2].is_nan());
}

// ---------------------------------------------------------------- unary and friends

#[test]
fn unary_ops() {
    let x = t32(&[-2.0, 0.0, 3.0], &[3]);
    assert_eq!(x.neg().to_vec(), vec![2.0, 0.0, -3.0]);
    assert_eq!(x.abs().to_vec(), vec![2.0, 0.0, 3.0]);
    assert_eq!(x.relu().to_vec(), vec![0.0, 0.0, 3.0]);
    assert_eq!(i64s(&[-3, 4], &[2]).abs().to_vec(), vec![3, 4]);
    assert!(t32(&[f32::NAN], &[1]).relu().item().is_nan());

    let z = Tensor::<f64>::from_vec(vec![0.0, 1.0, 4.0], &[3]);
    assert_eq!(z.exp().to_vec()[0], 1.0);
    assert_eq!(z.exp().to_vec()[1], std::f64::consts::E);
    assert_eq!(z.sqrt().to_vec(), vec![0.0, 1.0, 2.0]);
    assert_eq!(z.add(1.0).log().to_vec()[0], 0.0);
    assert_eq!(z.sigmoid().to_vec()[0], 0.5);
    assert_eq!(z.tanh().to_vec()[0], 0.0);
    // sigmoid(x) + sigmoid(-x) = 1; tanh(1) = (e^2 - 1) / (e^2 + 1)
    let s = z.sigmoid().add(z.neg().sigmoid());
    assert!(s.allclose(&Tensor::ones(&[3]), 1e-12, 0.0));
    let e2 = std::f64::consts::E * std::f64::consts::E;
    assert!((z.tanh().to_vec()[1] - (e2 - 1.0) / (e2 + 1.0)).abs() < 1e-15);
    // The input is never modified.
    assert_eq!(x.to_vec(), vec![-2.0, 0.0, 3.0]);
    assert_eq!(x.version(), 0);
}

#[test]
fn pow_with_scalar_and_broadcast_tensor_exponents() {
    let x = t32(&[2.0, 3.0], &[2]);
    assert_eq!(x.pow(2.0).to_vec(), vec![4.0, 9.0]);
    assert_eq!(x.pow(3.0).to_vec(), vec![8.0, 27.0]);
    assert_eq!(x.pow(-1.0).to_vec(), vec![0.5, 1.0 / 3.0]);
    assert_eq!(x.pow(0.0).to_vec(), vec![1.0, 1.0]);
    assert_eq!(t32(&[4.0, 9.0], &[2]).pow(0.5).to_vec(), vec![2.0, 3.0]);
    let e = t32(&[1.0, 2.0], &[2, 1]);
    assert_eq!(x.pow(&e).to_vec(), vec![2.0, 3.0, 4.0, 9.0]);
}

#[test]
fn clamp_follows_pytorch() {
    let x = t32(&[-2.0, 0.5, 3.0, f32::NAN], &[4]);
    let c = x.clamp(0.0, 1.0).to_vec();
    assert_eq!(&c[..3], &[0.0, 0.5, 1.0]);
    assert!(c[3].is_nan());
    assert_eq!(&x.clamp(None, 1.0).to_vec()[..3], &[-2.0, 0.5, 1.0]);
    assert_eq!(&x.clamp(0.0, None).to_vec()[..3], &[0.0, 0.5, 3.0]);
    // min > max: every element becomes max.
    assert_eq!(i64s(&[1, 5], &[2]).clamp(4, 2).to_vec(), vec![2, 2]);
}

#[test]
#[should_panic(expected = "funcz: clamp: at least one of 'min' or 'max' must not be None")]
fn clamp_needs_a_bound() {
    t32(&[1.0], &[1]).clamp(None, None);
}

#[test]
fn addcmul_addcdiv_lerp() {
    // [2] + 2 * [2,1] * [2] -> [2, 2]
    let x = t32(&[1.0, 1.0], &[2]);
    let t1 = t32(&[1.0, 2.0], &[2, 1]);
    let t2 = t32(&[3.0, 4.0], &[2]);
    let r = x.addcmul(&t1, &t2, 2.0);
    assert_eq!(r.shape(), &[2, 2]);
    assert_eq!(r.to_vec(), vec![7.0, 9.0, 13.0, 17.0]);
    let d = x.addcdiv(&t32(&[6.0, 8.0], &[2]), &t32(&[2.0, 4.0], &[2]), 0.5);
    assert_eq!(d.to_vec(), vec![2.5, 2.0]);

    let a = t32(&[0.0, 10.0], &[2]);
    let b = t32(&[10.0, 20.0], &[2]);
    assert_eq!(a.lerp(&b, 0.25).to_vec(), vec![2.5, 12.5]);
    assert_eq!(a.lerp(&b, 0.75).to_vec(), vec![7.5, 17.5]);
    assert_eq!(a.lerp(&b, 1.0).to_vec(), vec![10.0, 20.0]);
    assert_eq!(a.lerp(&b, t32(&[0.0, 1.0], &[2])).to_vec(), vec![0.0, 20.0]);
    // Tensor weight broadcasting to a bigger result: [2] lerp [2] by [2,1].
    let w = t32(&[0.0, 0.5], &[2, 1]);
    assert_eq!(a.lerp(&b, &w).to_vec(), vec![0.0, 10.0, 5.0, 15.0]);
}

#[test]
fn functional_fill_zero_copy_leave_self_untouched() {
    let x = t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(x.fill(7.0).to_vec(), vec![7.0; 4]);
    assert_eq!(x.zero().to_vec(), vec![0.0; 4]);
    let c = x.copy(&t32(&[5.0, 6.0], &[2]));
    assert_eq!(c.to_vec(), vec![5.0, 6.0, 5.0, 6.0]);
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(x.version(), 0);
}

#[test]
#[should_panic(
    expected = "funcz: copy: output with shape [2] doesn't match the broadcast shape [2, 2]"
)]
fn functional_copy_keeps_self_shape() {
    t32(&[1.0, 2.0], &[2]).copy(&t32(&[1.0; 4], &[2, 2]));
}

// ---------------------------------------------------------------- reductions

#[test]
fn sums_and_means() {
    let x = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let s = x.sum();
    assert_eq!(s.shape(), &[] as &[usize]);
    assert_eq!(s.item(), 21.0);
    assert_eq!(x.sum_dim(0, false).to_vec(), vec![5.0, 7.0, 9.0]);
    assert_eq!(x.sum_dim(1, false).to_vec(), vec![6.0, 15.0]);
    assert_eq!(x.sum_dim(-1, true).shape(), &[2, 1]);
    assert_eq!(x.sum_dim(0usize, true).shape(), &[1, 3]);
    assert_eq!(x.mean().item(), 3.5);
    assert_eq!(x.mean_dim(0, false).to_vec(), vec![2.5, 3.5, 4.5]);
    assert_eq!(x.mean_dim(-1, false).to_vec(), vec![2.0, 5.0]);

    // [2, 3, 4] = 0..24: sum over dim 1 is 36 i + 12 + 3 k.
    let y = Tensor::<i64>::from_vec((0..24).collect(), &[2, 3, 4]);
    let s1 = y.sum_dim(1, false);
    assert_eq!(s1.shape(), &[2, 4]);
    assert_eq!(s1.to_vec(), vec![12, 15, 18, 21, 48, 51, 54, 57]);
    assert_eq!(y.sum().item(), 276);
}

#[test]
fn reductions_of_zero_d_and_empty_tensors() {
    let s = Tensor::<f32>::scalar(5.0);
    assert_eq!(s.sum().item(), 5.0);
    assert_eq!(s.sum_dim(0, false).item(), 5.0);
    assert_eq!(s.sum_dim(-1, true).shape(), &[] as &[usize]);
    let e = Tensor::<f32>::zeros(&[0]);
    assert_eq!(e.sum().item(), 0.0);
    assert!(e.mean().item().is_nan());
    let e2 = Tensor::<f32>::zeros(&[2, 0]);
    assert_eq!(e2.sum_dim(1, false).to_vec(), vec![0.0, 0.0]);
}

#[test]
#[should_panic(
    expected = "funcz: sum: dimension out of range (expected to be in range of [-2, 1], but got 2)"
)]
fn sum_dim_out_of_range() {
    t32(&[1.0; 4], &[2, 2]).sum_dim(2, false);
}

// ---------------------------------------------------------------- matmul

#[test]
fn matmul_matrix_matrix_and_vector_cases() {
    let a = t32(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let b = t32(&[7.0, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2]);
    let c = a.matmul(&b);
    assert_eq!(c.shape(), &[2, 2]);
    assert_eq!(c.to_vec(), vec![58.0, 64.0, 139.0, 154.0]);

    let u = t32(&[1.0, 2.0, 3.0], &[3]);
    let w = t32(&[4.0, 5.0, 6.0], &[3]);
    let dot = u.matmul(&w);
    assert_eq!(dot.shape(), &[] as &[usize]);
    assert_eq!(dot.item(), 32.0);

    let r = t32(&[1.0, 2.0], &[2]).matmul(&a);
    assert_eq!(r.shape(), &[3]);
    assert_eq!(r.to_vec(), vec![9.0, 12.0, 15.0]);

    let mv = a.matmul(&t32(&[1.0, 0.0, -1.0], &[3]));
    assert_eq!(mv.shape(), &[2]);
    assert_eq!(mv.to_vec(), vec![-2.0, -2.0]);
}

#[test]
fn batched_matmul_broadcasts_batch_dims() {
    // [2, 2, 2] @ [2, 2]
    let a = t32(&[1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0], &[2, 2, 2]);
    let b = t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let c = a.matmul(&b);
    assert_eq!(c.shape(), &[2, 2, 2]);
    assert_eq!(c.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 2.0, 4.0, 6.0, 8.0]);

    // [1, 2, 2] @ [3, 2, 1] -> [3, 2, 1]
    let a = i64s(&[1, 2, 3, 4], &[1, 2, 2]);
    let b = i64s(&[1, 0, 0, 1, 1, 1], &[3, 2, 1]);
    let c = a.matmul(&b);
    assert_eq!(c.shape(), &[3, 2, 1]);
    assert_eq!(c.to_vec(), vec![1, 3, 2, 4, 3, 7]);

    // 3-D @ 1-D sums rows, 1-D @ 3-D sums columns.
    let m = i64s(&[1, 2, 3, 4, 5, 6, 7, 8], &[2, 2, 2]);
    let ones = i64s(&[1, 1], &[2]);
    assert_eq!(m.matmul(&ones).shape(), &[2, 2]);
    assert_eq!(m.matmul(&ones).to_vec(), vec![3, 7, 11, 15]);
    assert_eq!(ones.matmul(&m).to_vec(), vec![4, 6, 12, 14]);

    // [2, 1, 2, 3] @ [3, 3, 1]: batch [2, 1] and [3] broadcast to [2, 3].
    let a = i64s(&(0..12).collect::<Vec<_>>(), &[2, 1, 2, 3]);
    let b = i64s(&[1, 0, 0, 0, 1, 0, 0, 0, 1], &[3, 3, 1]);
    let c = a.matmul(&b);
    assert_eq!(c.shape(), &[2, 3, 2, 1]);
    // batch (i, j) picks column j of a[i].
    assert_eq!(c.to_vec(), vec![0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11]);
}

#[test]
fn matmul_agrees_with_a_naive_loop() {
    let (n, k, m) = (17, 33, 9);
    let a = Tensor::<f64>::randn(&[n, k], 1);
    let b = Tensor::<f64>::randn(&[k, m], 2);
    let (av, bv) = (a.to_vec(), b.to_vec());
    let mut want = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            for p in 0..k {
                want[i * m + j] += av[i * k + p] * bv[p * m + j];
            }
        }
    }
    let got = a.matmul(&b);
    assert!(got.allclose(&Tensor::from_vec(want, &[n, m]), 1e-12, 1e-12));
    // Empty inner dimension gives zeros.
    let z = Tensor::<f32>::ones(&[2, 0]).matmul(&Tensor::ones(&[0, 3]));
    assert_eq!(z.to_vec(), vec![0.0; 6]);
}

#[test]
#[should_panic(
    expected = "funcz: matmul: shapes [2, 3] and [4, 5] cannot be multiplied (2x3 and 4x5)"
)]
fn matmul_inner_dimension_mismatch() {
    Tensor::<f32>::zeros(&[2, 3]).matmul(&Tensor::zeros(&[4, 5]));
}

#[test]
#[should_panic(
    expected = "funcz: matmul: inconsistent tensor size, expected tensor [3] and src [4]"
)]
fn matmul_dot_length_mismatch() {
    Tensor::<f32>::zeros(&[3]).matmul(&Tensor::zeros(&[4]));
}

#[test]
#[should_panic(
    expected = "funcz: matmul: both arguments to matmul need to be at least 1D, but they are 0D and 1D"
)]
fn matmul_of_a_scalar() {
    Tensor::<f32>::scalar(1.0).matmul(&Tensor::zeros(&[4]));
}

#[test]
#[should_panic(expected = "funcz: matmul: shapes [2, 2, 3] and [3, 3, 1] cannot be broadcast")]
fn matmul_batch_mismatch() {
    Tensor::<f32>::zeros(&[2, 2, 3]).matmul(&Tensor::zeros(&[3, 3, 1]));
}

// ---------------------------------------------------------------- constructors

#[test]
fn constructors() {
    assert_eq!(Tensor::<f32>::zeros(&[2, 3]).to_vec(), vec![0.0; 6]);
    assert_eq!(Tensor::<i32>::ones(&[2]).to_vec(), vec![1, 1]);
    assert_eq!(Tensor::<f64>::full(&[1, 2], 2.5).to_vec(), vec![2.5, 2.5]);
    assert_eq!(Tensor::<f32>::full(&[], 2.5).shape(), &[] as &[usize]);
    assert_eq!(Tensor::<i64>::arange(5).to_vec(), vec![0, 1, 2, 3, 4]);
    assert_eq!(Tensor::<i64>::arange(0).shape(), &[0]);
    assert_eq!(
        Tensor::<i64>::eye(3).to_vec(),
        vec![1, 0, 0, 0, 1, 0, 0, 0, 1]
    );
    let x = t32(&[1.0, 2.0, 3.0], &[3, 1]);
    assert_eq!(x.zeros_like().shape(), &[3, 1]);
    assert_eq!(x.ones_like().to_vec(), vec![1.0; 3]);
}

#[test]
fn arange_with_steps() {
    // ceil((1 - 0) / 0.3) = 4 elements, computed as start + i * step.
    assert_eq!(
        Tensor::<f64>::arange_step(0.0, 1.0, 0.3).to_vec(),
        vec![0.0, 0.3, 0.6, 0.8999999999999999]
    );
    assert_eq!(
        Tensor::<f32>::arange_step(1.0, 2.0, 0.25).to_vec(),
        vec![1.0, 1.25, 1.5, 1.75]
    );
    assert_eq!(
        Tensor::<i64>::arange_step(5, -2, -3).to_vec(),
        vec![5, 2, -1]
    );
    assert_eq!(Tensor::<i32>::arange_step(3, 3, 1).shape(), &[0]);
}

#[test]
#[should_panic(expected = "funcz: arange: step must be nonzero")]
fn arange_zero_step() {
    Tensor::<f32>::arange_step(0.0, 1.0, 0.0);
}

#[test]
#[should_panic(
    expected = "funcz: arange: upper bound and larger bound inconsistent with step sign"
)]
fn arange_wrong_sign() {
    Tensor::<i64>::arange_step(0, 5, -1);
}

#[test]
fn seeded_random_tensors() {
    let a = Tensor::<f32>::rand(&[4, 250], 42);
    assert_eq!(a.shape(), &[4, 250]);
    assert!(a.equal(&Tensor::rand(&[4, 250], 42)));
    assert!(!a.equal(&Tensor::rand(&[4, 250], 43)));
    let v = a.to_vec();
    assert!(v.iter().all(|&x| (0.0..1.0).contains(&x)));
    // Uniform [0, 1): mean 1/2 (std of the mean ~ 0.009).
    assert!((a.mean().item() - 0.5).abs() < 0.05);

    let n = Tensor::<f64>::randn(&[20001], 3);
    let mean = n.mean().item();
    let var = n.sub(mean).pow(2.0).mean().item();
    assert!(mean.abs() < 0.05, "{mean}");
    assert!((var - 1.0).abs() < 0.05, "{var}");
}

// ---------------------------------------------------------------- clone

#[test]
fn clone_is_a_deep_contiguous_copy() {
    let a = t32(&[1.0, 2.0, 3.0], &[3]);
    let b = a.clone();
    assert!(!b.same_storage(&a));
    assert_ne!(b.id(), a.id());
    b.mul_(2.0);
    assert_eq!(a.to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!(b.to_vec(), vec![2.0, 4.0, 6.0]);
    assert_eq!(a.version(), 0);
    assert!(b.is_contiguous());
}

// ---------------------------------------------------------------- operators

#[test]
fn std_operators() {
    let a = t32(&[1.0, 2.0], &[2]);
    let b = t32(&[10.0, 20.0], &[2]);
    assert_eq!((&a + &b).to_vec(), vec![11.0, 22.0]);
    assert_eq!((&b - &a).to_vec(), vec![9.0, 18.0]);
    assert_eq!((&a * &b).to_vec(), vec![10.0, 40.0]);
    assert_eq!((&b / &a).to_vec(), vec![10.0, 10.0]);
    assert_eq!((&a + 1.0).to_vec(), vec![2.0, 3.0]);
    assert_eq!((&a - 1.0).to_vec(), vec![0.0, 1.0]);
    assert_eq!((-&a).to_vec(), vec![-1.0, -2.0]);
    assert_eq!((2.0 * &a + 1.0).to_vec(), vec![3.0, 5.0]);
    assert_eq!((1.0 + &a).to_vec(), vec![2.0, 3.0]);
    // Owned operands (their buffers may be reused).
    let c = a.clone() * 3.0 - &a;
    assert_eq!(c.to_vec(), vec![2.0, 4.0]);
    let d = a.clone() / b.clone();
    assert_eq!(d.to_vec(), vec![0.1, 0.1]);
    let e = &b - a.clone();
    assert_eq!(e.to_vec(), vec![9.0, 18.0]);
    let f = -(a.clone() + b.clone());
    assert_eq!(f.to_vec(), vec![-11.0, -22.0]);
    // Broadcasting through operators.
    let m = &t32(&[1.0, 2.0], &[2, 1]) * &a;
    assert_eq!(m.to_vec(), vec![1.0, 2.0, 2.0, 4.0]);
    // Inputs are untouched.
    assert_eq!(a.to_vec(), vec![1.0, 2.0]);
    assert_eq!(b.to_vec(), vec![10.0, 20.0]);
    // Integer operators.
    let i = i64s(&[7, 9], &[2]);
    assert_eq!((&i / 2).to_vec(), vec![3, 4]);
    assert_eq!((3 * &i).to_vec(), vec![21, 27]);
}

#[test]
#[should_panic(expected = "funcz: div: integer division by zero")]
fn owned_integer_division_by_zero() {
    let _ = i64s(&[1], &[1]) / 0;
}

// ---------------------------------------------------------------- comparison

#[test]
fn allclose_and_equal() {
    let a = t32(&[1.0, 2.0], &[2]);
    assert!(a.allclose(&t32(&[1.0, 2.000_001], &[2]), 1e-5, 1e-8));
    assert!(!a.allclose(&t32(&[1.0, 2.001], &[2]), 1e-5, 1e-8));
    assert!(a.allclose(&t32(&[1.0, 2.001], &[2]), 0.0, 1e-2));
    // Broadcasts like torch.allclose.
    assert!(a.allclose(&t32(&[1.0, 2.0, 1.0, 2.0], &[2, 2]), 0.0, 0.0));
    // NaN is never close; equal infinities are.
    let n = t32(&[f32::NAN], &[1]);
    assert!(!n.allclose(&n, 1e-5, 1e-8));
    let inf = t32(&[f32::INFINITY], &[1]);
    assert!(inf.allclose(&inf, 0.0, 0.0));
    assert!(!inf.allclose(&t32(&[f32::NEG_INFINITY], &[1]), 1.0, 1.0));

    assert!(a.equal(&a.clone()));
    // As torch.equal: NaN equals nothing, not even itself.
    assert!(!n.equal(&n.clone()));
    assert!(!n.equal(&n));
    assert!(!a.equal(&t32(&[1.0, 2.5], &[2])));
    assert!(!a.equal(&t32(&[1.0, 2.0], &[1, 2])));
    assert!(i64s(&[], &[0]).equal(&i64s(&[], &[0])));
}

#[test]
#[should_panic(expected = "funcz: allclose: shapes [2] and [3] cannot be broadcast")]
fn allclose_shape_mismatch() {
    t32(&[1.0, 2.0], &[2]).allclose(&t32(&[1.0; 3], &[3]), 1e-5, 1e-8);
}

// ---------------------------------------------------------------- printing

#[test]
fn display_matches_pytorch_repr() {
    let cases: Vec<(String, &str)> = vec![
        (
            t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).to_string(),
            "tensor([[1., 2.],\n        [3., 4.]])",
        ),
        (
            t32(&[1.5, 2.25], &[2]).to_string(),
            "tensor([1.5000, 2.2500])",
        ),
        (
            t32(&[-1.5, 10.0], &[2]).to_string(),
            "tensor([-1.5000, 10.0000])",
        ),
        (t32(&[1.0, -10.0], &[2]).to_string(), "tensor([  1., -10.])"),
        (
            t32(&[1e-5, 1.0], &[2]).to_string(),
            "tensor([1.0000e-05, 1.0000e+00])",
        ),
        (
            t32(&[1.0, 1e9], &[2]).to_string(),
            "tensor([1.0000e+00, 1.0000e+09])",
        ),
        (t32(&[0.0, 0.0], &[2]).to_string(), "tensor([0., 0.])"),
        (
            t32(&[1.0, f32::NAN, f32::INFINITY], &[3]).to_string(),
            "tensor([1., nan, inf])",
        ),
        (Tensor::<f32>::scalar(3.5).to_string(), "tensor(3.5000)"),
        (Tensor::<f32>::scalar(2.0).to_string(), "tensor(2.)"),
        (i64s(&[1, 2, 3], &[3]).to_string(), "tensor([1, 2, 3])"),
        (
            Tensor::<i32>::from_vec(vec![1, -20], &[2]).to_string(),
            "tensor([  1, -20], dtype=torch.int32)",
        ),
        (
            Tensor::<f64>::from_vec(vec![1.0, 2.0], &[2]).to_string(),
            "tensor([1., 2.], dtype=torch.float64)",
        ),
        (Tensor::<f32>::zeros(&[0]).to_string(), "tensor([])"),
        (
            Tensor::<f32>::zeros(&[0, 3]).to_string(),
            "tensor([], size=(0, 3))",
        ),
        (
            Tensor::<i64>::zeros(&[0]).to_string(),
            "tensor([], dtype=torch.int64)",
        ),
        (
            i64s(&(0..8).collect::<Vec<_>>(), &[2, 2, 2]).to_string(),
            "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

#[test]
fn display_wraps_long_rows_at_80_columns() {
    let x = Tensor::<f32>::from_vec((0..30).map(|i| i as f32).collect(), &[30]);
    assert_eq!(
        x.to_string(),
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n        \
         14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n        \
         28., 29.])"
    );
}

#[test]
fn display_summarizes_big_tensors() {
    let v = Tensor::<i64>::arange(2000);
    assert_eq!(
        v.to_string(),
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    );
    let m = Tensor::<i64>::from_vec((0..1010).collect(), &[101, 10]);
    assert_eq!(
        m.to_string(),
        "tensor([[   0,    1,    2,  ...,    7,    8,    9],\n        \
         [  10,   11,   12,  ...,   17,   18,   19],\n        \
         [  20,   21,   22,  ...,   27,   28,   29],\n        \
         ...,\n        \
         [ 980,  981,  982,  ...,  987,  988,  989],\n        \
         [ 990,  991,  992,  ...,  997,  998,  999],\n        \
         [1000, 1001, 1002,  ..., 1007, 1008, 1009]])"
    );
}

// ---------------------------------------------------------------- tracing

#[test]
fn ops_are_recorded_under_aten_names() {
    let x = t32(&[1.0, 2.0], &[2]);
    let y = t32(&[3.0, 4.0], &[2]);
    start_recording();
    let a = x.add(&y);
    let b = a.mul(2.0);
    let r = b.add_(1.0);
    let c = b.clone();
    let s = c.sum_dim(-1, true);
    let z = x.addcmul(&y, &y, 0.5);
    let m = &x * &y;
    let nodes = stop_recording();
    let ops: Vec<&str> = nodes.iter().map(|n| n.op).collect();
    assert_eq!(
        ops,
        vec!["add", "mul", "add_", "clone", "sum", "addcmul", "mul"]
    );
    assert_eq!(
        nodes[0].args,
        vec![Arg::Tensor(x.id()), Arg::Tensor(y.id())]
    );
    assert_eq!(nodes[0].outputs, vec![a.id()]);
    assert_eq!(nodes[1].args, vec![Arg::Tensor(a.id()), Arg::Float(2.0)]);
    // The in-place op returns (and records) the receiver itself.
    assert_eq!(r.id(), b.id());
    assert_eq!(nodes[2].outputs, vec![b.id()]);
    assert_eq!(nodes[3].outputs, vec![c.id()]);
    assert_eq!(
        nodes[4].args,
        vec![Arg::Tensor(c.id()), Arg::Ints(vec![-1]), Arg::Bool(true)]
    );
    assert_eq!(nodes[4].outputs, vec![s.id()]);
    assert_eq!(nodes[5].outputs, vec![z.id()]);
    assert_eq!(nodes[6].outputs, vec![m.id()]);
}

#[test]
fn owned_operator_records_its_inputs_before_consuming_them() {
    let x = t32(&[1.0, 2.0], &[2]);
    let xid = x.id();
    start_recording();
    let y = x * 2.0;
    let nodes = stop_recording();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].op, "mul");
    assert_eq!(nodes[0].args, vec![Arg::Tensor(xid), Arg::Float(2.0)]);
    assert_eq!(nodes[0].outputs, vec![y.id()]);
    assert_ne!(y.id(), xid);
}

#[test]
fn constructors_and_scalars_are_recorded() {
    start_recording();
    let z = Tensor::<i64>::zeros(&[2, 3]);
    let c = z.clamp(None, 4);
    let r = Tensor::<i64>::arange_step(0, 6, 2);
    let nodes = stop_recording();
    assert_eq!(nodes[0].op, "zeros");
    assert_eq!(nodes[0].args, vec![Arg::Ints(vec![2, 3])]);
    assert_eq!(nodes[1].op, "clamp");
    assert_eq!(
        nodes[1].args,
        vec![Arg::Tensor(z.id()), Arg::None, Arg::Int(4)]
    );
    assert_eq!(nodes[1].outputs, vec![c.id()]);
    assert_eq!(nodes[2].op, "arange");
    assert_eq!(nodes[2].args, vec![Arg::Int(0), Arg::Int(6), Arg::Int(2)]);
    assert_eq!(r.to_vec(), vec![0, 2, 4]);
}
