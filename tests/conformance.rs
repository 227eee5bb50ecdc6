//! Conformance with PyTorch's functionalization, after the cases of
//! `test/test_functionalization.py` (and the extra rows observed on torch
//! 2.15; see the reference notes, §6). Every case runs the unannotated
//! original and both functionalized variants on the same inputs
//! (`common::check`: equal outputs and final inputs, pure traces) and
//! asserts the op sequence of the functionalized graphs.
//!
//! funcz's sequences may differ from PyTorch's by dropping dead ops, which
//! PyTorch emits and leaves to DCE; each difference is explained where it
//! occurs. Recurring ones:
//! - *(regen)* after `y.add_(..)`, PyTorch regenerates `y` from the updated
//!   base (`commit_update` then `sync`); funcz keeps `y`'s new value, which
//!   is the same tensor, so the regeneration is never emitted (whether
//!   PyTorch's would be dead or not);
//! - *(dead)* views made only to be regenerated later, and regenerations of
//!   aliases never used again, are not emitted;
//! - *(dead user op)* funcz traces what the program computes: an op the
//!   user wrote whose result is unused still appears (as in PyTorch).

mod common;

use common::{check, iota};
use funcz::Tensor;
use funcz::trace::Graph;

/// The op sequence of `g` as one space-separated string.
fn seq(g: &Graph) -> String {
    g.ops().join(" ")
}

/// Asserts the op sequences of the `mutations` and `mutations_and_views`
/// graphs.
fn ops(graphs: &[Graph; 2], views: &str, copies: &str) {
    assert_eq!(
        seq(&graphs[0]),
        views,
        "remove = \"mutations\":\n{}",
        graphs[0]
    );
    assert_eq!(
        seq(&graphs[1]),
        copies,
        "remove = \"mutations_and_views\":\n{}",
        graphs[1]
    );
}

// ---------------------------------------------------------------------------
// 1 / 22. test_simple, test_reapply_views_simple:
// y = x.view(4, 2); y.add_(ones); z = x * x; return y
// PyTorch: ones, view_copy, add, view_copy, view_copy, mul(dead), copy_
// (reapply: the same with view). funcz drops the third view_copy (regen).
variants!(simple, simple_f, simple_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[4, 2]);
    let y = x.view([4, 2]);
    y.add_(&tmp);
    let _z = x * x;
    y
});

#[test]
fn test_simple() {
    let g = check("simple", &[iota(&[4, 2])], |v, x| {
        vec![[simple, simple_f, simple_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones view add view mul copy_",
        "ones view_copy add view_copy mul copy_",
    );
}

// ---------------------------------------------------------------------------
// 4. test_tensor_ctr: y = tensor([1, 2, 3]); y.view(-1).add_(1); return y
// PyTorch: _tensor_constant0, lift_fresh_copy, view_copy, add, view_copy,
// view_copy(dead). funcz: a tensor built from data is a graph constant,
// not a node (no lift_fresh_copy); the dead regeneration is dropped.
variants!(tensor_ctr, tensor_ctr_f, tensor_ctr_fv; fn () -> Tensor {
    let y = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    y.view([-1]).add_(1.0);
    y
});

#[test]
fn test_tensor_ctr() {
    let g = check("tensor_ctr", &[], |v, _| {
        vec![[tensor_ctr, tensor_ctr_f, tensor_ctr_fv][v]()]
    });
    ops(&g, "view add view", "view_copy add view_copy");
    assert_eq!(tensor_ctr_fv().to_vec(), vec![2.0, 3.0, 4.0]);
}

// ---------------------------------------------------------------------------
// 5. test_inplace_on_non_view: y = x.view(4, 2); x.add_(tmp); return y
// PyTorch: ones, view_copy(dead), add, copy_, view_copy -> view_copy_1.
// funcz: the same ops; the user's `view_copy` is dead as in PyTorch; `y`
// is regenerated before the exit (where it is read), so `copy_` comes last.
variants!(non_view, non_view_f, non_view_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[4, 2]);
    let y = x.view([4, 2]);
    x.add_(&tmp);
    y
});

#[test]
fn test_inplace_on_non_view() {
    let g = check("non_view", &[iota(&[4, 2])], |v, x| {
        vec![[non_view, non_view_f, non_view_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones view add view copy_",
        "ones view_copy add view_copy copy_",
    );
}

// ---------------------------------------------------------------------------
// 6. test_as_strided: x.as_strided((2,), (2,), 1).add_(1); return x
// PyTorch: as_strided_copy, add, as_strided_scatter, as_strided_copy(dead),
// copy_ (reapply: as_strided, add, as_strided_scatter, as_strided, copy_).
// funcz drops the dead as_strided_copy.
variants!(as_strided, as_strided_f, as_strided_fv; fn (x: &Tensor) -> Tensor {
    x.as_strided([2], [2], 1).add_(1.0);
    x.clone()
});

#[test]
fn test_as_strided() {
    let g = check("as_strided", &[iota(&[4])], |v, x| {
        vec![[as_strided, as_strided_f, as_strided_fv][v](&x[0])]
    });
    ops(
        &g,
        "as_strided add as_strided_scatter clone copy_",
        "as_strided_copy add as_strided_scatter clone copy_",
    );
}

// ---------------------------------------------------------------------------
// 9. test_diagonal: y = x.clone().diagonal(); y.add_(ones(2)); return x * x
// PyTorch: ones, clone, diagonal_copy, add, diagonal_scatter(dead),
// diagonal_copy(dead), mul. funcz: the clone is a temporary nothing else
// can see, so its write-back is dead and not emitted.
variants!(diagonal, diagonal_f, diagonal_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[2]);
    let y = x.clone().diagonal(0, 0, 1);
    y.add_(&tmp);
    x * x
});

#[test]
fn test_diagonal() {
    let g = check("diagonal", &[iota(&[2, 2])], |v, x| {
        vec![[diagonal, diagonal_f, diagonal_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones clone diagonal add mul",
        "ones clone diagonal_copy add mul",
    );
}

// ---------------------------------------------------------------------------
// 10. test_diagonal_mutated_input: x.diagonal().add_(ones(2)); return x
// PyTorch: ones, diagonal_copy, add, diagonal_scatter, diagonal_copy(dead),
// copy_. funcz drops the dead diagonal_copy.
variants!(diag_input, diag_input_f, diag_input_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[2]);
    x.diagonal(0, 0, 1).add_(&tmp);
    x.clone()
});

#[test]
fn test_diagonal_mutated_input() {
    let g = check("diag_input", &[iota(&[2, 2])], |v, x| {
        vec![[diag_input, diag_input_f, diag_input_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones diagonal add diagonal_scatter clone copy_",
        "ones diagonal_copy add diagonal_scatter clone copy_",
    );
}

// ---------------------------------------------------------------------------
// 12. test_split: y1, y2 = x.split(2); y3 = y2.diagonal(); y3.add_(ones(2));
// z = x * x; return y3
// PyTorch: ones, split_copy, getitem(dead), getitem, diagonal_copy, add,
// slice_copy, diagonal_scatter, slice_scatter, slice_copy, diagonal_copy,
// mul(dead), copy_. funcz: `getitem` is a list index, not a node. In
// views mode y3, once its update is written back, is made again the view
// of the base it is in the original (untraced: its value is the `add`'s),
// so the returned y3 is a view of the base with no regeneration; in copies
// mode it is returned as computed.
variants!(split, split_f, split_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[2]);
    let ys = x.split(2, 0);
    let y3 = ys[1].diagonal(0, 0, 1);
    y3.add_(&tmp);
    let _z = x * x;
    y3
});

#[test]
fn test_split() {
    let g = check("split", &[iota(&[4, 2])], |v, x| {
        vec![[split, split_f, split_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones split diagonal add slice diagonal_scatter slice_scatter mul copy_",
        "ones split_copy diagonal_copy add slice_copy diagonal_scatter slice_scatter mul copy_",
    );
}

// ---------------------------------------------------------------------------
// 13. test_split_with_sizes, with `chunk` (PyTorch decomposes chunk into
// split): y1, y2 = x.chunk(2); y3 = y1.diagonal(); y3.add_(ones(2));
// z = x * x; return y1
// PyTorch (split_with_sizes): ones, split_with_sizes_copy, getitem,
// getitem(dead), diagonal_copy, add, slice_copy(0, 0, 2), diagonal_scatter,
// slice_scatter, slice_copy, diagonal_copy, mul(dead), copy_. funcz returns
// y1, regenerated from the base (slice_copy); y3 is not regenerated.
variants!(chunk, chunk_f, chunk_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[2]);
    let ys = x.chunk(2, 0);
    let y3 = ys[0].diagonal(0, 0, 1);
    y3.add_(&tmp);
    let _z = x * x;
    ys[0].clone()
});

#[test]
fn test_split_with_sizes() {
    let g = check("chunk", &[iota(&[4, 2])], |v, x| {
        vec![[chunk, chunk_f, chunk_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones split diagonal add slice diagonal_scatter slice_scatter mul slice clone copy_",
        "ones split_copy diagonal_copy add slice_copy diagonal_scatter slice_scatter mul slice_copy clone copy_",
    );
}

// ---------------------------------------------------------------------------
// 14. test_slice: x.transpose_(1, 0); x[0:2].add_(ones(4)); return x
// PyTorch: ones, transpose_copy, slice_copy, add, transpose_copy,
// slice_scatter, transpose_copy, transpose_copy, slice_copy(dead),
// transpose_copy. funcz: the same eight first ops (the fourth-from-last
// is the inverse of the transpose, the next one regenerates x); PyTorch
// then regenerates the mutated slice (dead) and x once more for the
// output, funcz neither *(dead)*, *(regen)*. `clone` is this test's way to
// return `x` (a `&mut` input); the caller's tensor gets the data back
// (`copy_`) and the transposed layout (`as_strided_`), which PyTorch's
// test harness skips when the input's metadata changed.
variants!(slice, slice_f, slice_fv; fn (x: &mut Tensor) -> Tensor {
    let tmp = Tensor::ones(&[4]);
    x.transpose_(1, 0);
    x.slice(0, 0, 2, 1).add_(&tmp);
    x.clone()
});

#[test]
fn test_slice() {
    let g = check("slice", &[iota(&[4, 2])], |v, x| {
        vec![[slice, slice_f, slice_fv][v](&mut x[0])]
    });
    ops(
        &g,
        "ones transpose slice add transpose slice_scatter transpose transpose clone copy_ as_strided_",
        "ones transpose_copy slice_copy add transpose_copy slice_scatter transpose_copy transpose_copy clone copy_ as_strided_",
    );
}

// ---------------------------------------------------------------------------
// 15. test_view_inplace: x.transpose_(1, 0); x[0].add_(ones(4)); return x
// PyTorch: ones, transpose_copy, select_copy, add, transpose_copy,
// select_scatter, transpose_copy, transpose_copy, select_copy(dead),
// transpose_copy. Differences as in test_slice.
variants!(view_inplace, view_inplace_f, view_inplace_fv; fn (x: &mut Tensor) -> Tensor {
    let tmp = Tensor::ones(&[4]);
    x.transpose_(1, 0);
    x.select(0, 0).add_(&tmp);
    x.clone()
});

#[test]
fn test_view_inplace() {
    let g = check("view_inplace", &[iota(&[4, 2])], |v, x| {
        vec![[view_inplace, view_inplace_f, view_inplace_fv][v](
            &mut x[0],
        )]
    });
    ops(
        &g,
        "ones transpose select add transpose select_scatter transpose transpose clone copy_ as_strided_",
        "ones transpose_copy select_copy add transpose_copy select_scatter transpose_copy transpose_copy clone copy_ as_strided_",
    );
}

// ---------------------------------------------------------------------------
// 16. test_unbind: x.transpose_(1, 0); y, _ = x.unbind(0); y.add_(ones(4));
// return x
// PyTorch: ones, transpose_copy, unbind_copy, getitem, getitem(dead), add,
// transpose_copy, select_scatter, transpose_copy, transpose_copy,
// select_copy(dead), transpose_copy. unbind's inverse is select_scatter;
// no `getitem` nodes (a list index is not an op); otherwise as test_slice.
variants!(unbind, unbind_f, unbind_fv; fn (x: &mut Tensor) -> Tensor {
    let tmp = Tensor::ones(&[4]);
    x.transpose_(1, 0);
    let ys = x.unbind(0);
    ys[0].add_(&tmp);
    x.clone()
});

#[test]
fn test_unbind() {
    let g = check("unbind", &[iota(&[4, 2])], |v, x| {
        vec![[unbind, unbind_f, unbind_fv][v](&mut x[0])]
    });
    ops(
        &g,
        "ones transpose unbind add transpose select_scatter transpose transpose clone copy_ as_strided_",
        "ones transpose_copy unbind_copy add transpose_copy select_scatter transpose_copy transpose_copy clone copy_ as_strided_",
    );
}

// ---------------------------------------------------------------------------
// 18. test_scalars: y = x.view(4, 2); y.add_(1); z = 2 * y; z.div_(1);
// return z
// PyTorch: ones(dead), view_copy, add, view_copy, view_copy, mul, div,
// copy_. funcz: no `ones` (the test's unused tmp is not written here), and
// no second view_copy (regen: `2 * y` reads `y`'s new value).
variants!(scalars, scalars_f, scalars_fv; fn (x: &Tensor) -> Tensor {
    let y = x.view([4, 2]);
    y.add_(1.0);
    let z = 2.0 * &y;
    z.div_(1.0);
    z
});

#[test]
fn test_scalars() {
    let g = check("scalars", &[iota(&[4, 2])], |v, x| {
        vec![[scalars, scalars_f, scalars_fv][v](&x[0])]
    });
    ops(
        &g,
        "view add view mul div copy_",
        "view_copy add view_copy mul div copy_",
    );
}

// ---------------------------------------------------------------------------
// 20. test_only_one_view: return x.view(4, 2)
// PyTorch: view_copy (exactly one op: unmutated inputs are never
// regenerated). Same in funcz.
variants!(one_view, one_view_f, one_view_fv; fn (x: &Tensor) -> Tensor {
    x.view([4, 2])
});

#[test]
fn test_only_one_view() {
    let g = check("one_view", &[iota(&[8])], |v, x| {
        vec![[one_view, one_view_f, one_view_fv][v](&x[0])]
    });
    ops(&g, "view", "view_copy");
}

// ---------------------------------------------------------------------------
// 21. test_everything:
// x2 = x + x; y = x2.view(8); z0 = y.reshape(2, 4); z1 = z0.transpose(1, 0);
// z1.unsqueeze_(0); z1.squeeze_(); z2, z3 = z1.split(2); z2.add_(ones(2, 2));
// z4 = z0[0] + z2.reshape(4); return z2
// PyTorch (42 ops): ones, add, view_copy, view_copy, transpose_copy,
// unsqueeze_copy, squeeze_copy, split_copy, getitem, getitem(dead), add,
// view_copy, view_copy, transpose_copy, unsqueeze_copy, squeeze_copy,
// slice_scatter, unsqueeze_copy, squeeze_copy.dim, transpose_copy,
// view_copy, view_copy, view_copy, view_copy, transpose_copy,
// unsqueeze_copy, squeeze_copy, slice_copy, select_copy(dead),
// view_copy(dead), view_copy, view_copy, select_copy, view_copy, view_copy,
// transpose_copy, unsqueeze_copy, squeeze_copy, slice_copy, view_copy,
// add(dead).
// funcz: identical through the write-back (no `getitem` nodes: a list
// index is not an op; `squeeze_copy.dim` is spelled `squeeze_copy`). Then
// PyTorch regenerates z2 (view_copy x2 .. slice_copy) for nothing
// (select_copy and view_copy of it are dead) and once more for
// `z2.reshape(4)`; funcz reads z2's new value (`add`) directly: *(regen)*
// and *(dead)*. z0 is regenerated once for `z0[0]` in both. In views mode
// z2 is, as in the original, a transposed view of the base, which
// `reshape(4)` copies (`reshape`; the copies mode's `view_copy` of the
// `add` reads the same values). funcz returns a `clone` (a Vec element
// cannot be moved out).
variants!(everything, everything_f, everything_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::ones(&[2, 2]);
    let x2 = x + x;
    let y = x2.view([8]);
    let z0 = y.reshape([2, 4]);
    let mut z1 = z0.transpose(1, 0);
    z1.unsqueeze_(0);
    z1.squeeze_();
    let zs = z1.split(2, 0);
    zs[0].add_(&tmp);
    let _z4 = &z0.select(0, 0) + &zs[0].reshape([4]);
    zs[0].clone()
});

#[test]
fn test_everything() {
    let g = check("everything", &[iota(&[4, 2])], |v, x| {
        vec![[everything, everything_f, everything_fv][v](&x[0])]
    });
    ops(
        &g,
        "ones add view view transpose unsqueeze squeeze split add view view transpose unsqueeze squeeze \
         slice_scatter unsqueeze squeeze transpose reshape view view view select reshape add clone",
        "ones add view_copy view_copy transpose_copy unsqueeze_copy squeeze_copy split_copy add view_copy \
         view_copy transpose_copy unsqueeze_copy squeeze_copy slice_scatter unsqueeze_copy squeeze_copy \
         transpose_copy view_copy view_copy view_copy view_copy select_copy view_copy add clone",
    );
}

// ---------------------------------------------------------------------------
// 23. test_copy_: tmp = zeros(2, 2); y = tmp.diagonal().copy_(x);
// z = y.add_(x); return z -- with x of shape (2,) and (1,) (broadcast).
// PyTorch (all four sub-cases): zeros, diagonal_copy, copy,
// diagonal_scatter, diagonal_copy, add, diagonal_scatter, diagonal_copy.
// funcz: `y` keeps its new value after `copy_` and after `add_` *(regen)*.
variants!(copy_, copy_f, copy_fv; fn (x: &Tensor) -> Tensor {
    let tmp = Tensor::zeros(&[2, 2]);
    let y = tmp.diagonal(0, 0, 1).copy_(x);
    y.add_(x)
});

#[test]
fn test_copy_() {
    for shape in [[2], [1]] {
        let g = check("copy_", &[iota(&shape) + 1.0], |v, x| {
            vec![[copy_, copy_f, copy_fv][v](&x[0])]
        });
        ops(
            &g,
            "zeros diagonal copy diagonal_scatter add diagonal_scatter",
            "zeros diagonal_copy copy diagonal_scatter add diagonal_scatter",
        );
    }
}

// ---------------------------------------------------------------------------
// 24. test_expand_symint: x.expand(x.size(0), x.size(1))
// PyTorch: expand_copy. Same in funcz.
variants!(expand, expand_f, expand_fv; fn (x: &Tensor) -> Tensor {
    x.expand([x.size(0) as i64, x.size(1) as i64])
});

#[test]
fn test_expand_symint() {
    let g = check("expand", &[iota(&[2, 3])], |v, x| {
        vec![[expand, expand_f, expand_fv][v](&x[0])]
    });
    ops(&g, "expand", "expand_copy");
}

// ---------------------------------------------------------------------------
// 25. test_fill_: y = x + x; y.diagonal().fill_(0); return y
// PyTorch: add, diagonal_copy, fill, diagonal_scatter, diagonal_copy(dead)
// -> diagonal_scatter. funcz drops the dead diagonal_copy.
variants!(fill, fill_f, fill_fv; fn (x: &Tensor) -> Tensor {
    let y = x + x;
    y.diagonal(0, 0, 1).fill_(0.0);
    y
});

#[test]
fn test_fill_() {
    let g = check("fill", &[iota(&[3, 3])], |v, x| {
        vec![[fill, fill_f, fill_fv][v](&x[0])]
    });
    ops(
        &g,
        "add diagonal fill diagonal_scatter",
        "add diagonal_copy fill diagonal_scatter",
    );
}

// ---------------------------------------------------------------------------
// 27. test_resize_same_size_diff_rank: y = x.clone(); y.resize_(25, 5)
// PyTorch: clone, resize, as_strided_copy (same byte count: treated as a
// view). funcz resizes a fresh tensor functionally: clone, resize.
variants!(resize_same, resize_same_f, resize_same_fv; fn (x: &Tensor) -> Tensor {
    let mut y = x.clone();
    y.resize_([25, 5]);
    y
});

#[test]
fn test_resize_same_size_diff_rank() {
    let g = check("resize_same", &[iota(&[5, 5, 5])], |v, x| {
        vec![[resize_same, resize_same_f, resize_same_fv][v](&x[0])]
    });
    ops(&g, "clone resize", "clone resize");
}

// ---------------------------------------------------------------------------
// 28. test_resize_larger_valid: y = x + 1; y.resize_(5, 5);
// y.view(25).fill_(1); return y, y + 1
// PyTorch: add, resize, view_copy, fill, view_copy, view_copy(dead), add.
// funcz drops the dead view_copy.
variants!(resize_larger, resize_larger_f, resize_larger_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let mut y = x + 1.0;
    y.resize_([5, 5]);
    y.view([25]).fill_(1.0);
    let y1 = &y + 1.0;
    (y, y1)
});

#[test]
fn test_resize_larger_valid() {
    let g = check("resize_larger", &[iota(&[8])], |v, x| {
        let (a, b) = [resize_larger, resize_larger_f, resize_larger_fv][v](&x[0]);
        vec![a, b]
    });
    ops(
        &g,
        "add resize view fill view add",
        "add resize view_copy fill view_copy add",
    );
}

// ---------------------------------------------------------------------------
// 30. test_index_mutation_on_non_input: tmp = zeros(10); tmp[5].fill_(1);
// return tmp
// PyTorch: zeros, select_copy, fill, select_scatter, select_copy(dead).
variants!(index_mut, index_mut_f, index_mut_fv; fn () -> Tensor {
    let tmp = Tensor::zeros(&[10]);
    tmp.select(0, 5).fill_(1.0);
    tmp
});

#[test]
fn test_index_mutation_on_non_input() {
    let g = check("index_mut", &[], |v, _| {
        vec![[index_mut, index_mut_f, index_mut_fv][v]()]
    });
    ops(
        &g,
        "zeros select fill select_scatter",
        "zeros select_copy fill select_scatter",
    );
}

// ---------------------------------------------------------------------------
// 31. test_mutation_overlapping_mem: (x + x).unfold(1, 3, 2).abs_()
// PyTorch: RuntimeError with reapply_views ("functionalization encountered
// a tensor being mutated that has internal overlap"); without it, silently
// `add, unfold_copy, abs, unfold_backward, unfold_copy`. funcz refuses in
// both modes, as the mutating original does.
variants!(overlap, overlap_f, overlap_fv; fn (x: &Tensor) -> Tensor {
    let y = x + x;
    y.unfold(1, 3, 2).abs_();
    y
});

#[test]
fn test_mutation_overlapping_mem() {
    let x = iota(&[3, 5]);
    for f in [overlap, overlap_f, overlap_fv] {
        let err = std::panic::catch_unwind(|| f(&x)).expect_err("overlap refused");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("more than one element of the written-to tensor"),
            "{msg}"
        );
    }
}

// ---------------------------------------------------------------------------
// 35. test_python_functionalization (reapply views):
// xv = x.view(-1); x.mul_(2); return xv + 1
// PyTorch: view(dead), mul, view(dead), view, add. funcz: the user's view
// is dead as in PyTorch; `xv` is regenerated once; the input write-back
// (`copy_`) is explicit (PyTorch's Python mode leaves it to its caller).
variants!(py_mode, py_mode_f, py_mode_fv; fn (x: &Tensor) -> Tensor {
    let xv = x.view([-1]);
    x.mul_(2.0);
    &xv + 1.0
});

#[test]
fn test_python_functionalization() {
    let g = check("py_mode", &[iota(&[2, 2])], |v, x| {
        vec![[py_mode, py_mode_f, py_mode_fv][v](&x[0])]
    });
    ops(
        &g,
        "view mul view add copy_",
        "view_copy mul view_copy add copy_",
    );
}

// ---------------------------------------------------------------------------
// Values: test_multiple_views_of_same_base -- x.add_ is seen through both
// views y and z.
variants!(two_views, two_views_f, two_views_fv; fn (x: &Tensor) -> (Tensor, Tensor, Tensor) {
    let y = x.view([-1]);
    let z = x.t();
    x.add_(1.0);
    let y2 = &y * 2.0;
    let z2 = &z * 3.0;
    (x.clone(), y2, z2)
});

#[test]
fn test_multiple_views_of_same_base() {
    let g = check("two_views", &[iota(&[2, 2])], |v, x| {
        let (a, b, c) = [two_views, two_views_f, two_views_fv][v](&x[0]);
        vec![a, b, c]
    });
    // The user's views are dead (made before the mutation, regenerated after).
    ops(
        &g,
        "view t add view mul t mul clone copy_",
        "view_copy t_copy add view_copy mul t_copy mul clone copy_",
    );
}

// Values: test_nested_functions_propagate_updates -- a view made and
// mutated inside a helper the macro cannot see must still update x.
fn nested_helper(t: &Tensor) {
    funcz::trace::untraced(|| {
        let v = t.view([-1]);
        v.add_(1.0);
    });
}

variants!(nested, nested_f, nested_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    let z = y.t();
    nested_helper(&y);
    &z + 1.0
});

#[test]
fn test_nested_functions_propagate_updates() {
    let g = check("nested", &[iota(&[2, 2])], |v, x| {
        vec![[nested, nested_f, nested_fv][v](&x[0])]
    });
    // The helper's own ops are untraced; `z` is regenerated after the call
    // (its root's storage version changed).
    ops(&g, "clone t t add", "clone t_copy t_copy add");
}

// Aliasing: test_aliases_maintained_after_pass_when_reapplying_views -- the
// outputs of the views mode may alias each other; of the copies mode not.
variants!(aliases, aliases_f, aliases_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let tmp = x + 1.0;
    let y = tmp.view([-1]);
    let z = tmp.t();
    y.add_(1.0);
    (y, z)
});

#[test]
fn test_aliases_maintained_after_pass_when_reapplying_views() {
    let x = iota(&[2, 2]);
    let (y, z) = aliases(&x);
    assert!(y.same_storage(&z));
    check("aliases", std::slice::from_ref(&x), |v, x| {
        let (a, b) = [aliases, aliases_f, aliases_fv][v](&x[0]);
        vec![a, b]
    });
    let (y, z) = aliases_f(&x);
    assert!(
        y.same_storage(&z),
        "views mode keeps aliasing outputs aliased"
    );
    let (y, z) = aliases_fv(&x);
    assert!(
        !y.same_storage(&z),
        "mutations_and_views returns independent tensors"
    );
}

// ---------------------------------------------------------------------------
// Extra rows observed on torch 2.15 (mutations_and_views mode), each a
// mutation of an input through one view kind. PyTorch regenerates the
// mutated view after the scatter (last `*_copy` before `copy_`), which is
// dead there: funcz drops it.

// x.permute(1, 0)[0].add_(1); return x
// PyTorch: permute_copy, select_copy, add, permute_copy, select_scatter,
// permute_copy, permute_copy(dead), select_copy(dead), copy_.
variants!(permute, permute_f, permute_fv; fn (x: &Tensor) {
    x.permute([1, 0]).select(0, 0).add_(1.0);
});

#[test]
fn extra_permute_select() {
    let g = check("permute", &[iota(&[2, 3])], |v, x| {
        [permute, permute_f, permute_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "permute select add permute select_scatter permute copy_",
        "permute_copy select_copy add permute_copy select_scatter permute_copy copy_",
    );
}

// x.narrow(0, 1, 2).mul_(2)
// PyTorch: slice_copy, mul, slice_scatter, slice_copy(dead), copy_.
variants!(narrow, narrow_f, narrow_fv; fn (x: &Tensor) {
    x.narrow(0, 1, 2).mul_(2.0);
});

#[test]
fn extra_narrow() {
    let g = check("narrow", &[iota(&[4, 2])], |v, x| {
        [narrow, narrow_f, narrow_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "slice mul slice_scatter copy_",
        "slice_copy mul slice_scatter copy_",
    );
}

// x.chunk(2)[1].add_(1)
// PyTorch: split_copy, add, slice_scatter, slice_copy(dead), copy_.
// funcz makes only the mutated chunk (a `slice`): the other one is never
// read.
variants!(chunk1, chunk1_f, chunk1_fv; fn (x: &Tensor) {
    x.chunk(2, 0)[1].add_(1.0);
});

#[test]
fn extra_chunk() {
    let g = check("chunk1", &[iota(&[4])], |v, x| {
        [chunk1, chunk1_f, chunk1_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "slice add slice_scatter copy_",
        "slice_copy add slice_scatter copy_",
    );
}

// x.unsqueeze(0).add_(1)
// PyTorch: unsqueeze_copy, add, squeeze_copy.dim, unsqueeze_copy(dead),
// copy_.
variants!(unsqueeze, unsqueeze_f, unsqueeze_fv; fn (x: &Tensor) {
    x.unsqueeze(0).add_(1.0);
});

#[test]
fn extra_unsqueeze() {
    let g = check("unsqueeze", &[iota(&[3])], |v, x| {
        [unsqueeze, unsqueeze_f, unsqueeze_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "unsqueeze add squeeze copy_",
        "unsqueeze_copy add squeeze_copy copy_",
    );
}

// x.squeeze().add_(1) with x of shape (1, 3)
// PyTorch: squeeze_copy, add, unsqueeze_copy, squeeze_copy(dead), copy_.
variants!(squeeze, squeeze_f, squeeze_fv; fn (x: &Tensor) {
    x.squeeze().add_(1.0);
});

#[test]
fn extra_squeeze() {
    let g = check("squeeze", &[iota(&[1, 3])], |v, x| {
        [squeeze, squeeze_f, squeeze_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "squeeze add unsqueeze copy_",
        "squeeze_copy add unsqueeze_copy copy_",
    );
}

// x[1][2].fill_(7)
// PyTorch: select_copy, select_copy, fill, select_copy, select_scatter,
// select_scatter, select_copy(dead), select_copy(dead), copy_. The third
// select_copy is the intermediate base the inner scatter writes into.
variants!(select2, select2_f, select2_fv; fn (x: &Tensor) {
    x.select(0, 1).select(0, 2).fill_(7.0);
});

#[test]
fn extra_select_select() {
    let g = check("select2", &[iota(&[3, 4])], |v, x| {
        [select2, select2_f, select2_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "select select fill select select_scatter select_scatter copy_",
        "select_copy select_copy fill select_copy select_scatter select_scatter copy_",
    );
}

// x[1:, 2] = 9
// PyTorch: slice_copy, select_copy, fill, slice_copy, select_scatter,
// slice_scatter, slice_copy(dead), select_copy(dead), copy_.
variants!(slice_select, slice_select_f, slice_select_fv; fn (x: &Tensor) {
    x.slice(0, 1, 3, 1).select(1, 2).fill_(9.0);
});

#[test]
fn extra_slice_select_assign() {
    let g = check("slice_select", &[iota(&[3, 4])], |v, x| {
        [slice_select, slice_select_f, slice_select_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "slice select fill slice select_scatter slice_scatter copy_",
        "slice_copy select_copy fill slice_copy select_scatter slice_scatter copy_",
    );
}

// x.detach().add_(1)
// PyTorch: detach_copy, add, detach_copy(dead), copy_ (reapply: alias).
// The inverse of detach is the identity (no op).
variants!(detach, detach_f, detach_fv; fn (x: &Tensor) {
    x.detach().add_(1.0);
});

#[test]
fn extra_detach() {
    let g = check("detach", &[iota(&[3])], |v, x| {
        [detach, detach_f, detach_fv][v](&x[0]);
        vec![]
    });
    ops(&g, "detach add copy_", "detach_copy add copy_");
}

// x.squeeze_(); x.add_(1)  (x of shape (1, 3), a `&mut` input)
// PyTorch: squeeze_copy, add, unsqueeze_copy, squeeze_copy(dead),
// as_strided_, copy_. funcz writes the data back (copy_) then the layout
// (as_strided_); PyTorch applies the metadata first.
variants!(squeeze_inplace, squeeze_inplace_f, squeeze_inplace_fv; fn (x: &mut Tensor) {
    x.squeeze_();
    x.add_(1.0);
});

#[test]
fn extra_squeeze_inplace() {
    let g = check("squeeze_inplace", &[iota(&[1, 3])], |v, x| {
        [squeeze_inplace, squeeze_inplace_f, squeeze_inplace_fv][v](&mut x[0]);
        vec![]
    });
    ops(
        &g,
        "squeeze add unsqueeze copy_ as_strided_",
        "squeeze_copy add unsqueeze_copy copy_ as_strided_",
    );
}

// x.unfold(1, 2, 2).add_(1) (windows do not overlap)
// PyTorch: unfold_copy, add, unfold_backward, unfold_copy(dead), copy_.
// funcz writes the windows back with as_strided_scatter, which keeps the
// elements no window covers (PyTorch's unfold_backward zeroes them,
// pytorch#198102; here x has 5 columns and column 4 is not covered).
variants!(unfold, unfold_f, unfold_fv; fn (x: &Tensor) {
    x.unfold(1, 2, 2).add_(1.0);
});

#[test]
fn extra_unfold() {
    let g = check("unfold", &[iota(&[2, 5])], |v, x| {
        [unfold, unfold_f, unfold_fv][v](&x[0]);
        vec![]
    });
    ops(
        &g,
        "unfold add as_strided_scatter copy_",
        "unfold_copy add as_strided_scatter copy_",
    );
    let x = iota(&[2, 5]);
    unfold_fv(&x);
    assert_eq!(x.to_vec()[4], 4.0, "the uncovered column keeps its value");
}

// t = zeros(4, 4, 4); t[:, 2:] = ones(4, 2, 4)
// PyTorch: zeros, ones, slice_copy, copy, slice_scatter, slice_copy(dead).
variants!(slice_assign, slice_assign_f, slice_assign_fv; fn () -> Tensor {
    let t = Tensor::zeros(&[4, 4, 4]);
    let o = Tensor::ones(&[4, 2, 4]);
    t.slice(1, 2, 4, 1).copy_(&o);
    t
});

#[test]
fn extra_slice_assign() {
    let g = check("slice_assign", &[], |v, _| {
        vec![[slice_assign, slice_assign_f, slice_assign_fv][v]()]
    });
    ops(
        &g,
        "zeros ones slice copy slice_scatter",
        "zeros ones slice_copy copy slice_scatter",
    );
}
