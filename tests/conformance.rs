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
    assert_eq!(seq(&graphs[0]), views, "remove = \"mutations\":\n{}", graphs[0]);
    assert_eq!(seq(&graphs[1]), copies, "remove = \"mutations_and_views\":\n{}", graphs[1]);
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
// mul(dead), copy_. funcz: `getitem` is a list index, not a node; the
// final slice_copy + diagonal_copy (regen of y3) are not needed.
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
// transpose_copy -> no copy_ (metadata changed). funcz writes the input's
// data back (`copy_`) and its layout (`as_strided_`), as PyTorch does for
// the same program in its AOT path.
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
// transpose_copy.
variants!(view_inplace, view_inplace_f, view_inplace_fv; fn (x: &mut Tensor) -> Tensor {
    let tmp = Tensor::ones(&[4]);
    x.transpose_(1, 0);
    x.select(0, 0).add_(&tmp);
    x.clone()
});

#[test]
fn test_view_inplace() {
    let g = check("view_inplace", &[iota(&[4, 2])], |v, x| {
        vec![[view_inplace, view_inplace_f, view_inplace_fv][v](&mut x[0])]
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
// select_copy(dead), transpose_copy. unbind's inverse is select_scatter.
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
    ops(&g, "view add view mul div copy_", "view_copy add view_copy mul div copy_");
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
// and *(dead)*. z0 is regenerated once for `z0[0]` in both. funcz returns
// a `clone` (a Vec element cannot be moved out).
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
         slice_scatter unsqueeze squeeze transpose reshape view view view select view add clone",
        "ones add view_copy view_copy transpose_copy unsqueeze_copy squeeze_copy split_copy add view_copy \
         view_copy transpose_copy unsqueeze_copy squeeze_copy slice_scatter unsqueeze_copy squeeze_copy \
         transpose_copy view_copy view_copy view_copy view_copy select_copy view_copy add clone",
    );
}
