//! Layout and aliasing of outputs, as in the original program (issue 11,
//! item 5): a returned view that was mutated through keeps its strides
//! and its storage in views mode; copies mode returns copies by contract.

mod common;

use common::check;
use funcz::Tensor;

// PyTorch's `test_copy_stride_mismatch`, with the strided tensor made by
// a view: the returned `y` is a `[2, 2]` window of a `[2, 5]` buffer.
variants!(copy_stride, copy_stride_f, copy_stride_fv; fn (x: &Tensor) -> Tensor {
    let y = Tensor::zeros(&[2, 5]).narrow(1, 0, 2);
    y.copy_(x);
    y
});

#[test]
fn returned_view_keeps_the_original_strides() {
    let x = Tensor::ones(&[2, 2]);
    let orig = copy_stride(&x);
    assert_eq!(orig.strides(), &[5, 1]);
    let views = copy_stride_f(&x);
    assert_eq!(views.strides(), orig.strides());
    assert_eq!(views.to_vec(), orig.to_vec());
    // Copies mode: a copy, laid out row-major, with the same values.
    let copies = copy_stride_fv(&x);
    assert_eq!(copies.strides(), &[2, 1]);
    assert_eq!(copies.to_vec(), orig.to_vec());
    check("copy_stride", &[x], |v, x| {
        vec![[copy_stride, copy_stride_f, copy_stride_fv][v](&x[0])]
    });
}

// `test_aliases_maintained_after_pass_when_reapplying_views`, with the
// mutation through a narrowing view of one of the two returned views.
variants!(two_views, two_views_f, two_views_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let y = x.view([4, 2]);
    let z = x.view([4, 2]);
    y.narrow(0, 0, 2).add_(1.0);
    (y, z)
});

// The same, returned with `return` from a branch, over a local base.
variants!(two_views_ret, two_views_ret_f, two_views_ret_fv; fn (x: &Tensor, early: bool) -> (Tensor, Tensor) {
    let b = x.clone();
    let y = b.view([4, 2]);
    let z = b.view([4, 2]);
    y.narrow(0, 1, 2).mul_(3.0);
    if early {
        return (y, z);
    }
    z.select(1, 0).add_(1.0);
    (z, y)
});

#[test]
fn returned_views_of_one_base_share_storage() {
    let x = Tensor::arange(8);
    let (y0, z0) = two_views(&x.clone());
    assert!(y0.same_storage(&z0));
    let (y1, z1) = two_views_f(&x.clone());
    assert!(y1.same_storage(&z1), "views mode: y and z share the base");
    assert_eq!((y1.to_vec(), z1.to_vec()), (y0.to_vec(), z0.to_vec()));
    assert_eq!(y1.strides(), y0.strides());
    let (y2, z2) = two_views_fv(&x.clone());
    assert_eq!((y2.to_vec(), z2.to_vec()), (y0.to_vec(), z0.to_vec()));
    for early in [true, false] {
        let (a0, b0) = two_views_ret(&x, early);
        let (a1, b1) = two_views_ret_f(&x, early);
        let (a2, b2) = two_views_ret_fv(&x, early);
        assert!(
            a0.same_storage(&b0) && a1.same_storage(&b1),
            "early = {early}"
        );
        assert_eq!((a1.to_vec(), b1.to_vec()), (a0.to_vec(), b0.to_vec()));
        assert_eq!((a2.to_vec(), b2.to_vec()), (a0.to_vec(), b0.to_vec()));
    }
}
