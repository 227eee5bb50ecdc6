//! Chains of three or more in-place ops on one receiver perform each op
//! exactly once (the place of a chain is found without lowering the inner
//! ops a second time).

mod common;

use common::{check, iota};
use funcz::Tensor;

variants!(chain3, chain3_f, chain3_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    y.add_(1.0).mul_(2.0).sub_(3.0);
    y
});

variants!(chain_on_view, chain_on_view_f, chain_on_view_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    y.narrow(0, 1, 2).mul_(2.0).add_(1.0).neg_();
    y
});

variants!(chain_on_input, chain_on_input_f, chain_on_input_fv; fn (x: &mut Tensor, w: &Tensor) {
    x.div_(w).mul_(3.0).add_(w).abs_();
});

variants!(chain_with_meta, chain_with_meta_f, chain_with_meta_fv; fn (x: &Tensor) -> Tensor {
    let mut y = x.clone();
    y.t_().mul_(2.0).add_(1.0).mul_(10.0);
    y
});

#[test]
fn three_op_chains() {
    let [g1, g2] = check("chain3", &[iota(&[3])], |v, xs| {
        vec![[chain3, chain3_f, chain3_fv][v](&xs[0])]
    });
    assert_eq!(g1.ops(), vec!["clone", "add", "mul", "sub"], "{g1}");
    assert_eq!(g2.ops(), vec!["clone", "add", "mul", "sub"], "{g2}");
    check("chain_on_view", &[iota(&[4, 2])], |v, xs| {
        vec![[chain_on_view, chain_on_view_f, chain_on_view_fv][v](
            &xs[0],
        )]
    });
    let w = iota(&[2, 3]).add(1.0);
    check("chain_on_input", &[iota(&[2, 3]), w], |v, xs| {
        let (a, b) = xs.split_at_mut(1);
        [chain_on_input, chain_on_input_f, chain_on_input_fv][v](&mut a[0], &b[0]);
        vec![]
    });
    check("chain_with_meta", &[iota(&[2, 3])], |v, xs| {
        vec![[chain_with_meta, chain_with_meta_f, chain_with_meta_fv][v](
            &xs[0],
        )]
    });
}
