//! In-place semantics through the public API: broadcasting into the
//! receiver, shape errors, version counting, returned handles, chaining,
//! and the `op=` operators. (Aliasing cases that need raw layouts are unit
//! tests in `src/ops/inplace.rs`.)

use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz_runtime::Tensor;
use funcz_runtime::trace::{Arg, start_recording, stop_recording};

fn t32(v: &[f32], shape: &[usize]) -> Tensor<f32> {
    Tensor::from_vec(v.to_vec(), shape)
}

fn panic_message(f: impl FnOnce()) -> String {
    let e = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn operands_broadcast_into_the_receiver() {
    // [2, 3] += [3]: each row gets the vector.
    let x = Tensor::<f32>::zeros(&[2, 3]);
    x.add_(t32(&[1.0, 2.0, 3.0], &[3]));
    assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    // [2, 3] *= [2, 1]: each row scaled by its own factor.
    x.mul_(t32(&[10.0, -1.0], &[2, 1]));
    assert_eq!(x.to_vec(), vec![10.0, 20.0, 30.0, -1.0, -2.0, -3.0]);
    // 0-d and [1, 1] operands.
    x.sub_(Tensor::scalar(1.0));
    assert_eq!(x.to_vec(), vec![9.0, 19.0, 29.0, -2.0, -3.0, -4.0]);
    x.div_(t32(&[2.0], &[1, 1]));
    assert_eq!(x.to_vec(), vec![4.5, 9.5, 14.5, -1.0, -1.5, -2.0]);
    assert_eq!(x.shape(), &[2, 3]);
    assert_eq!(x.version(), 4);
}

#[test]
#[should_panic(
    expected = "funcz: add_: output with shape [3] doesn't match the broadcast shape [2, 3]"
)]
fn receiver_never_grows() {
    Tensor::<f32>::zeros(&[3]).add_(Tensor::zeros(&[2, 3]));
}

#[test]
#[should_panic(
    expected = "funcz: mul_: output with shape [2, 1] doesn't match the broadcast shape [2, 3]"
)]
fn size_one_receiver_dims_do_not_broadcast() {
    Tensor::<f32>::zeros(&[2, 1]).mul_(Tensor::zeros(&[3]));
}

#[test]
#[should_panic(expected = "funcz: sub_: shapes [3] and [4] cannot be broadcast together")]
fn incompatible_operand_names_the_inplace_op() {
    Tensor::<f32>::zeros(&[3]).sub_(Tensor::zeros(&[4]));
}

#[test]
#[should_panic(
    expected = "funcz: copy_: output with shape [2] doesn't match the broadcast shape [3, 2]"
)]
fn copy_source_must_broadcast_to_the_receiver() {
    Tensor::<f32>::zeros(&[2]).copy_(&Tensor::zeros(&[3, 2]));
}

#[test]
#[should_panic(
    expected = "funcz: addcmul_: output with shape [2] doesn't match the broadcast shape [2, 2]"
)]
fn addcmul_result_must_fit_the_receiver() {
    let x = Tensor::<f32>::zeros(&[2]);
    x.addcmul_(&Tensor::ones(&[2, 1]), &Tensor::ones(&[2]), 1.0);
}

#[test]
fn failed_inplace_ops_write_nothing() {
    let x = t32(&[1.0, 2.0, 3.0], &[3]);
    let msg = panic_message(|| {
        x.add_(Tensor::zeros(&[2, 3]));
    });
    assert!(msg.starts_with("funcz: add_:"), "{msg}");
    let msg = panic_message(|| {
        x.lerp_(&Tensor::zeros(&[3]), Tensor::zeros(&[4, 3]));
    });
    assert!(msg.contains("lerp_: output with shape [3]"), "{msg}");
    let msg = panic_message(|| {
        x.clamp_(None, None);
    });
    assert!(msg.starts_with("funcz: clamp_:"), "{msg}");
    let i = Tensor::<i32>::from_vec(vec![4, 6], &[2]);
    let msg = panic_message(|| {
        i.div_(Tensor::from_vec(vec![2, 0], &[2]));
    });
    assert!(
        msg.starts_with("funcz: div_: integer division by zero"),
        "{msg}"
    );
    assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!(x.version(), 0);
    assert_eq!(i.to_vec(), vec![4, 6]);
    assert_eq!(i.version(), 0);
}

#[test]
fn every_inplace_op_bumps_the_version_exactly_once() {
    let x = t32(&[0.25, 0.5, 1.0, 2.0], &[2, 2]);
    let y = t32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    type Op<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let ops: Vec<Op> = vec![
        ("add_", Box::new(|| drop(x.add_(&y)))),
        ("sub_", Box::new(|| drop(x.sub_(1.0)))),
        ("mul_", Box::new(|| drop(x.mul_(&y)))),
        ("div_", Box::new(|| drop(x.div_(2.0)))),
        ("neg_", Box::new(|| drop(x.neg_()))),
        ("abs_", Box::new(|| drop(x.abs_()))),
        ("exp_", Box::new(|| drop(x.exp_()))),
        ("log_", Box::new(|| drop(x.log_()))),
        ("sqrt_", Box::new(|| drop(x.sqrt_()))),
        ("pow_", Box::new(|| drop(x.pow_(2.0)))),
        ("pow_ tensor", Box::new(|| drop(x.pow_(&y)))),
        ("relu_", Box::new(|| drop(x.relu_()))),
        ("sigmoid_", Box::new(|| drop(x.sigmoid_()))),
        ("tanh_", Box::new(|| drop(x.tanh_()))),
        ("clamp_", Box::new(|| drop(x.clamp_(0.0, 1.0)))),
        ("addcmul_", Box::new(|| drop(x.addcmul_(&y, &y, 0.5)))),
        ("addcdiv_", Box::new(|| drop(x.addcdiv_(&y, &y, 0.5)))),
        ("lerp_", Box::new(|| drop(x.lerp_(&y, 0.5)))),
        ("lerp_ tensor", Box::new(|| drop(x.lerp_(&y, &y)))),
        ("fill_", Box::new(|| drop(x.fill_(3.0)))),
        ("zero_", Box::new(|| drop(x.zero_()))),
        ("copy_", Box::new(|| drop(x.copy_(&y)))),
    ];
    for (name, op) in ops {
        let before = x.version();
        op();
        assert_eq!(x.version(), before + 1, "{name}");
        assert_eq!(y.version(), 0, "{name} must not bump its operand");
    }
    // Out-of-place ops and reads bump nothing.
    let v = x.version();
    let _ = (
        x.add(&y),
        x.exp(),
        x.sum(),
        x.clone(),
        x.to_vec(),
        x.fill(1.0),
    );
    assert_eq!(x.version(), v);
}

#[test]
fn inplace_values_match_pytorch() {
    let x = t32(&[-2.0, -0.5, 0.0, 4.0], &[4]);
    x.relu_();
    assert_eq!(x.to_vec(), vec![0.0, 0.0, 0.0, 4.0]);
    x.sqrt_().pow_(3.0);
    assert_eq!(x.to_vec(), vec![0.0, 0.0, 0.0, 8.0]);
    x.exp_().log_();
    assert_eq!(x.to_vec(), vec![0.0, 0.0, 0.0, 8.0]);
    x.sigmoid_();
    assert_eq!(x.to_vec()[0], 0.5);
    x.fill_(-3.0).abs_().neg_();
    assert_eq!(x.to_vec(), vec![-3.0; 4]);
    x.tanh_();
    assert_eq!(x.to_vec()[0], (-3.0f32).tanh());
    x.zero_();
    assert_eq!(x.to_vec(), vec![0.0; 4]);

    let y = t32(&[1.0, 2.0], &[2]);
    y.addcmul_(&t32(&[3.0, 4.0], &[2]), &t32(&[2.0], &[1]), 0.5);
    assert_eq!(y.to_vec(), vec![4.0, 6.0]);
    y.addcdiv_(&t32(&[8.0], &[1]), &t32(&[2.0, 4.0], &[2]), 2.0);
    assert_eq!(y.to_vec(), vec![12.0, 10.0]);
    y.lerp_(&t32(&[0.0, 20.0], &[2]), t32(&[0.25, 0.5], &[2]));
    assert_eq!(y.to_vec(), vec![9.0, 15.0]);
    y.pow_(t32(&[0.5, 1.0], &[2]));
    assert_eq!(y.to_vec(), vec![3.0, 15.0]);
    y.clamp_(None, 5.0);
    assert_eq!(y.to_vec(), vec![3.0, 5.0]);
    y.copy_(&t32(&[7.0], &[1]));
    assert_eq!(y.to_vec(), vec![7.0, 7.0]);

    let i = Tensor::<i64>::from_vec(vec![7, -7], &[2]);
    i.div_(2).mul_(-1).sub_(Tensor::from_vec(vec![1, 1], &[2]));
    assert_eq!(i.to_vec(), vec![-4, 2]);
}

#[test]
fn inplace_ops_return_the_receiver() {
    let x = t32(&[1.0, 2.0], &[2]);
    let r = x.mul_(2.0).add_(3.0);
    assert_eq!(r.id(), x.id());
    assert!(r.same_storage(&x));
    assert_eq!(r.to_vec(), vec![5.0, 7.0]);
    // Writing through the returned handle is writing to x.
    r.neg_();
    assert_eq!(x.to_vec(), vec![-5.0, -7.0]);
    assert_eq!(x.version(), 3);
}

#[test]
fn a_tensor_can_be_its_own_operand() {
    let x = t32(&[1.0, 2.0, 3.0], &[3]);
    x.mul_(&x);
    assert_eq!(x.to_vec(), vec![1.0, 4.0, 9.0]);
    x.sub_(&x);
    assert_eq!(x.to_vec(), vec![0.0; 3]);
    x.fill_(2.0).copy_(&x);
    assert_eq!(x.to_vec(), vec![2.0; 3]);
    x.addcmul_(&x, &x, 1.0);
    assert_eq!(x.to_vec(), vec![6.0; 3]);
}

#[test]
fn op_assign_operators_are_inplace() {
    let mut x = t32(&[1.0, 2.0], &[2]);
    let id = x.id();
    let y = t32(&[10.0, 20.0], &[2]);
    x += &y;
    assert_eq!(x.to_vec(), vec![11.0, 22.0]);
    x -= 1.0;
    assert_eq!(x.to_vec(), vec![10.0, 21.0]);
    x *= &t32(&[2.0], &[1]);
    assert_eq!(x.to_vec(), vec![20.0, 42.0]);
    x /= 2.0;
    assert_eq!(x.to_vec(), vec![10.0, 21.0]);
    x += y.clone();
    assert_eq!(x.to_vec(), vec![20.0, 41.0]);
    assert_eq!(x.id(), id);
    assert_eq!(x.version(), 5);
}

#[test]
#[should_panic(
    expected = "funcz: add_: output with shape [2] doesn't match the broadcast shape [2, 2]"
)]
fn op_assign_keeps_the_receiver_shape() {
    let mut x = Tensor::<f32>::zeros(&[2]);
    x += &Tensor::zeros(&[2, 2]);
}

#[test]
fn inplace_ops_are_recorded_with_the_receiver_as_output() {
    let mut x = t32(&[1.0, 2.0], &[2]);
    let y = t32(&[3.0, 4.0], &[2]);
    start_recording();
    x.add_(&y).mul_(2.0);
    x -= &y;
    x.copy_(&y);
    x.clamp_(0.0, None);
    let nodes = stop_recording();
    let ops: Vec<&str> = nodes.iter().map(|n| n.op).collect();
    assert_eq!(ops, vec!["add_", "mul_", "sub_", "copy_", "clamp_"]);
    for n in &nodes {
        assert_eq!(n.outputs, vec![x.id()]);
        assert_eq!(n.args[0], Arg::Tensor(x.id()));
    }
    assert_eq!(nodes[1].args[1], Arg::Float(2.0));
    assert_eq!(nodes[3].args[1], Arg::Tensor(y.id()));
    assert_eq!(nodes[4].args[1..], [Arg::Float(0.0), Arg::None]);
}
