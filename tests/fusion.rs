//! Runs of in-place elementwise ops on one tensor run as one fused pass
//! in functionalized code (`rt::fused_root`). The values, the inputs and
//! the traces are the unfused program's; an argument whose value could
//! depend on the tensor ends the run (it is evaluated after the ops before
//! it, as in the original).

mod common;

use common::{check, iota};
use funcz::Tensor;

// The chain kernel of the benchmark, on a local and on an input.
variants!(chain_local, chain_local_f, chain_local_fv; fn (x: &Tensor, w: &Tensor) -> Tensor {
    let y = x.clone();
    y.mul_(1.01);
    y.add_(w);
    y.sub_(0.5);
    y.relu_();
    y.div_(1.01);
    y.sub_(w);
    y.add_(0.5);
    y.clamp_(-1000.0, 1000.0);
    y.abs_();
    y.neg_();
    y
});

variants!(chain_input, chain_input_f, chain_input_fv; fn (x: &mut Tensor, w: &Tensor) {
    x.mul_(1.01).add_(w).sub_(0.5).relu_();
    x.div_(1.01).sub_(w).add_(0.5).clamp_(-1000.0, 1000.0).abs_().neg_();
});

#[test]
fn a_chain_of_elementwise_ops_fuses_and_traces_each_op() {
    // Values from 2048 elements fuse (the default is 4M; tests run one per
    // thread, and the threshold is per thread).
    funcz::rt::set_min_fused(2048);
    let n = 5000; // more than one block of the fused pass
    let x = Tensor::randn(&[n], 1);
    let w = Tensor::rand(&[n], 2);
    let [g1, g2] = check("chain_local", &[x.clone(), w.clone()], |v, t| {
        vec![[chain_local, chain_local_f, chain_local_fv][v](
            &t[0], &t[1],
        )]
    });
    let ops = "clone mul add sub relu div sub add clamp abs neg";
    assert_eq!(g1.ops().join(" "), ops, "{g1}");
    assert_eq!(g2.ops().join(" "), ops, "{g2}");
    let [g1, _] = check("chain_input", &[x.clone(), w.clone()], |v, t| {
        let (a, b) = t.split_at_mut(1);
        [chain_input, chain_input_f, chain_input_fv][v](&mut a[0], &b[0]);
        vec![]
    });
    assert_eq!(g1.ops().len(), 11, "{g1}");
    // Untraced (the fused pass runs only then): one pass, the same bits.
    let before = funcz::rt::fused_passes();
    let (a, b) = (chain_local(&x, &w), chain_local_f(&x, &w));
    assert_eq!(funcz::rt::fused_passes(), before + 1);
    assert_eq!(a.to_vec(), b.to_vec());
    let (mut a, mut b) = (x.clone(), x.clone());
    chain_input(&mut a, &w);
    chain_input_f(&mut b, &w);
    assert_eq!(funcz::rt::fused_passes(), before + 2);
    assert_eq!(a.to_vec(), b.to_vec());
}

// Layer norm's tail: a column and two rows broadcast against the rows.
variants!(norm_tail, norm_tail_f, norm_tail_fv; fn (x: &Tensor, w: &Tensor, b: &Tensor) -> Tensor {
    let y = x.clone();
    y.sub_(x.mean_dim(-1, true));
    let var = y.mul(&y).mean_dim(-1, true);
    var.add_(1e-5).sqrt_();
    y.div_(&var).mul_(w).add_(b);
    y
});

#[test]
fn broadcast_operands_fuse_with_the_unfused_values() {
    funcz::rt::set_min_fused(2048); // (see above)
    let x = Tensor::randn(&[64, 300], 3);
    let w = Tensor::rand(&[300], 4);
    let b = Tensor::randn(&[300], 5);
    check("norm_tail", &[x.clone(), w.clone(), b.clone()], |v, t| {
        vec![[norm_tail, norm_tail_f, norm_tail_fv][v](
            &t[0], &t[1], &t[2],
        )]
    });
    let before = funcz::rt::fused_passes();
    assert_eq!(
        norm_tail(&x, &w, &b).to_vec(),
        norm_tail_f(&x, &w, &b).to_vec()
    );
    // `y.div_(&var).mul_(w).add_(b)`; `var.add_(1e-5).sqrt_()` is too
    // small to need a fused pass (64 elements).
    assert_eq!(funcz::rt::fused_passes(), before + 1);
}

fn total(t: &Tensor) -> Tensor {
    t.sum()
}

// Arguments that read the tensor end the run: `y.sum()` after `add_` sees
// the added value, a view of `y` too, and so does a helper's result.
variants!(reads_root, reads_root_f, reads_root_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    let v = y.narrow(0, 0, 1);
    y.add_(1.0);
    y.mul_(y.sum());
    y.add_(2.0);
    y.div_(v.clone());
    y.sub_(1.0);
    y.mul_(total(&y));
    y.add_(&y);
    y
});

#[test]
fn arguments_that_read_the_tensor_end_the_run() {
    check("reads_root", &[iota(&[3])], |v, t| {
        vec![[reads_root, reads_root_f, reads_root_fv][v](&t[0])]
    });
    let x = iota(&[3]);
    assert_eq!(reads_root(&x).to_vec(), reads_root_f(&x).to_vec());
}

// Every op with a compiled formula (`optable::KERNELS`), in runs the macro
// compiles into one kernel: scalar, same-shape, row and column operands.
variants!(kernel_ops, kernel_ops_f, kernel_ops_fv;
    fn (x: &Tensor, w: &Tensor, row: &Tensor, col: &Tensor) -> Tensor {
    let y = x.clone();
    y.mul_(1.5);
    y.add_(w);
    y.sub_(row);
    y.div_(col);
    y.add_scaled_(w, 0.25);
    y.sub_scaled_(row, 2.0);
    y.neg_();
    y.abs_();
    y.sqrt_();
    y.log_();
    y.exp_();
    y.sigmoid_();
    y.tanh_();
    y.addcmul_(w, row, 0.5);
    y.addcdiv_(row, col, -0.75);
    y.sign_();
    y.add_(w);
    y.relu_();
    y.clamp_(0.1, 0.9);
    y.clamp_min_(0.2);
    y.clamp_max_(0.8);
    y.hardtanh_(0.3, 0.7);
    y
});

#[test]
fn compiled_kernels_give_the_bits_of_the_ops_one_by_one() {
    let w = Tensor::randn(&[70, 90], 7);
    let row = Tensor::rand(&[90], 8).add(0.5);
    let col = Tensor::rand(&[70, 1], 9).add(0.5);
    let x = Tensor::randn(&[70, 90], 6);
    check(
        "kernel_ops",
        &[x.clone(), w.clone(), row.clone(), col.clone()],
        |v, t| {
            vec![[kernel_ops, kernel_ops_f, kernel_ops_fv][v](
                &t[0], &t[1], &t[2], &t[3],
            )]
        },
    );
    let bits = |t: &Tensor| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let want = bits(&kernel_ops(&x, &w, &row, &col));
    // Large enough for the one-pass path (6300 elements: several blocks and
    // a tail shorter than the kernel's chunk), and small values fused too.
    for min in [2048, 0] {
        let prev = funcz::rt::set_min_fused(min);
        let before = funcz::rt::kernel_blocks();
        assert_eq!(bits(&kernel_ops_f(&x, &w, &row, &col)), want);
        assert_eq!(bits(&kernel_ops_fv(&x, &w, &row, &col)), want);
        assert!(funcz::rt::kernel_blocks() > before, "the kernel ran");
        funcz::rt::set_min_fused(prev);
    }
    // Non-finite values and signed zeros go through the same formulas.
    let odd = Tensor::from_vec(
        [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1e-40,
            -3.0,
        ]
        .repeat(900),
        &[70, 90],
    );
    assert_eq!(
        bits(&kernel_ops_f(&odd, &w, &row, &col)),
        bits(&kernel_ops(&odd, &w, &row, &col))
    );
}
