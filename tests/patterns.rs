//! Patterns from real code: generics, shadowing, accumulators, layer norm,
//! tuples of inputs, unfold, metadata ops on `&mut` inputs.

mod common;

use common::{check, iota};
use funcz::{FloatElement, Tensor};

variants!(shadowing, shadowing_f, shadowing_fv; fn (x: &Tensor) -> Tensor {
    let x = x.view([-1]);
    x.narrow(0, 1, 2).mul_(3.0);
    let x = x.view([2, 3]);
    x.t().select(0, 0).add_(1.0);
    x.sum_dim(1, true)
});

#[test]
fn shadowed_views_of_an_input() {
    check("shadowing", &[iota(&[3, 2])], |v, x| {
        vec![[shadowing, shadowing_f, shadowing_fv][v](&x[0])]
    });
}

variants!(accumulate, accumulate_f, accumulate_fv; fn (xs: &[Tensor], scale: f32) -> Tensor {
    let mut acc = Tensor::zeros(&[3]);
    for x in xs {
        acc += x;
        acc.mul_(scale);
    }
    acc.clamp_(-5.0, 5.0);
    acc
});

#[test]
fn accumulator_over_a_slice() {
    check(
        "accumulate",
        &[iota(&[3]), &iota(&[3]) * -2.0, Tensor::ones(&[3])],
        |v, x| vec![[accumulate, accumulate_f, accumulate_fv][v](x, 0.5)],
    );
}

variants!(layer_norm, layer_norm_f, layer_norm_fv; fn (x: &Tensor, gamma: &Tensor, beta: &Tensor) -> Tensor {
    let mean = x.mean_dim(-1, true);
    let centered = x - &mean;
    let var = (&centered * &centered).mean_dim(-1, true);
    let y = centered.clone();
    y.div_((var + 1e-5).sqrt());
    y.mul_(gamma).add_(beta);
    y
});

#[test]
fn layer_norm_with_inplace_ops() {
    check(
        "layer_norm",
        &[iota(&[2, 4]), Tensor::ones(&[4]), &iota(&[4]) * 0.1],
        |v, x| {
            vec![[layer_norm, layer_norm_f, layer_norm_fv][v](
                &x[0], &x[1], &x[2],
            )]
        },
    );
}

variants!(pair, pair_f, pair_fv; fn (a: &mut Tensor, b: Tensor) -> (Tensor, Tensor) {
    a.unsqueeze_(0);
    a.select(0, 0).select(0, 1).fill_(-1.0);
    a.squeeze_dim_(0);
    b.unfold(0, 2, 3).mul_(10.0);
    (a.sum(), b)
});

#[test]
fn metadata_on_mut_inputs_and_gapped_unfold() {
    check("pair", &[iota(&[2, 2]), iota(&[8])], |v, x| {
        let (l, r) = x.split_at_mut(1);
        let (s, b) = [pair, pair_f, pair_fv][v](&mut l[0], r[0].shallow_clone());
        vec![s, b]
    });
}

#[funcz::functionalize]
fn generic_scale<T: FloatElement>(x: &Tensor<T>, s: T) -> Tensor<T> {
    x.narrow(0, 0, 1).mul_(s);
    x.sum()
}

#[test]
fn generic_functions() {
    let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    assert_eq!(generic_scale(&x, 10.0).item(), 15.0);
    assert_eq!(x.to_vec(), vec![10.0, 2.0, 3.0]);
}

variants!(optional, optional_f, optional_fv; fn (x: &Tensor, bias: Option<&Tensor>) -> Tensor {
    let y = x.clone();
    if let Some(b) = bias {
        y.add_(b);
    }
    match bias {
        Some(b) => y.select(0, 0).sub_(b.select(0, 0)),
        None => y.select(0, 0).zero_(),
    };
    y
});

#[test]
fn optional_tensors() {
    for with in [true, false] {
        check(
            "optional",
            &[iota(&[2, 2]), Tensor::ones(&[2, 2])],
            |v, x| {
                let bias = if with { Some(&x[1]) } else { None };
                vec![[optional, optional_f, optional_fv][v](&x[0], bias)]
            },
        );
    }
}

variants!(vecs, vecs_f, vecs_fv; fn (owned: Vec<Tensor>, shared: &mut Vec<Tensor>) -> Tensor {
    for t in owned.iter() {
        t.mul_(2.0);
    }
    shared[0].narrow(0, 0, 1).fill_(7.0);
    shared.push(Tensor::ones(&[2]));
    let total = owned[0].sum();
    &total + &shared[1].sum()
});

#[test]
fn vec_parameters() {
    let ins = [iota(&[2]), iota(&[3]), iota(&[2]), iota(&[2])];
    check("vecs", &ins, |v, x| {
        let owned: Vec<Tensor> = x[..2].iter().map(Tensor::shallow_clone).collect();
        let mut shared: Vec<Tensor> = x[2..].iter().map(Tensor::shallow_clone).collect();
        let out = [vecs, vecs_f, vecs_fv][v](owned, &mut shared);
        assert_eq!(shared.len(), 3, "the caller's Vec sees the push");
        vec![out, shared[2].clone()]
    });
}

variants!(chain3, chain3_f, chain3_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    y.add_(1.0).mul_(2.0).sub_(3.0);
    let mut z = x.clone();
    z.t_();
    z.select(0, 1).add_(1.0).mul_(10.0);
    &y.sum() + &z.sum()
});

#[test]
fn chains_of_three_inplace_ops_run_each_op_once() {
    check("chain3", &[iota(&[2, 2])], |v, x| {
        vec![[chain3, chain3_f, chain3_fv][v](&x[0])]
    });
}
