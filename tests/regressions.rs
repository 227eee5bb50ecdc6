//! Divergences found by differential testing (`funcz-difftest`), each kept
//! as its minimized program. A test named after the bug runs the original
//! and both functionalized variants (`common::check`) and asserts what the
//! fix guarantees; each fails (or does not compile) on the code before its
//! fix. The comment names the generated program it was minimized from
//! (seed and index, for the generator of that time: the generator has
//! grown since, so the same seed now makes other programs). Programs the
//! macro now refuses at compile time live in `funcz-ui/tests/ui/regress_*.rs` (run
//! by `tests/compile_fail.rs`).

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use common::{check, check_values, iota};
use funcz::Tensor;

/// The panic message of `f`, which must panic.
fn panic_message(f: impl FnOnce()) -> String {
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

// Compound assignment through a deref (`*y += x`) was re-parsed as
// `*(y.add_(x))` and left unlowered: a compile error (`Tensor` cannot be
// dereferenced) once the input is shadowed. (seed 24301, program 33)
variants!(deref_compound, deref_compound_f, deref_compound_fv; fn (x: &mut Tensor, y: &Tensor) {
    *x *= 2.0;
    *x += y;
    *x -= 0.5;
});

#[test]
fn compound_assignment_through_deref_of_mut_input() {
    let [g1, g2] = check("deref_compound", &[iota(&[2, 2]), iota(&[2, 2])], |v, x| {
        let (a, b) = x.split_at_mut(1);
        [deref_compound, deref_compound_f, deref_compound_fv][v](&mut a[0], &b[0]);
        vec![]
    });
    assert_eq!(g1.ops(), vec!["mul", "add", "sub", "copy_"], "{g1}");
    assert_eq!(g2.ops(), vec!["mul", "add", "sub", "copy_"], "{g2}");
}

// `y.add_(&*y)` and `y.mul(&*y)` on a `&mut` input: the shadowed input was
// read as `*(&mut y)` (also as a method receiver), a mutable borrow that
// conflicts with the other operand (E0502). (seed 24301, programs 0, 20, 30)
variants!(deref_read, deref_read_f, deref_read_fv; fn (y: &mut Tensor) -> Tensor {
    y.add_(&*y);
    y.addcmul_(&*y, &*y, 0.5);
    y.mul(&*y)
});

#[test]
fn deref_read_of_mut_input_in_its_own_op() {
    check("deref_read", &[iota(&[3])], |v, x| {
        vec![[deref_read, deref_read_f, deref_read_fv][v](&mut x[0])]
    });
}

// `d[0].add_(&d[1])` on a mutated `&mut [Tensor]` input: the shadowed Vec
// was read as `(&mut d[..])[1]`, borrowed mutably twice (E0499). (seed
// 24301, program 9)
variants!(slice_read, slice_read_f, slice_read_fv; fn (d: &mut [Tensor]) {
    d[0].add_(&d[1]);
    d[1].mul_(&d[0]);
    d[0].narrow(0, 0, 1).addcmul_(&d[1].narrow(0, 1, 1), &d[0].narrow(0, 0, 1), 2.0);
});

#[test]
fn slice_elements_read_in_their_own_op() {
    check("slice_read", &[iota(&[2]), iota(&[2])], |v, x| {
        [slice_read, slice_read_f, slice_read_fv][v](x);
        vec![]
    });
}

// `let v = if flag { .. } else { .. };` whose branches are tensors was not
// known to be a tensor: mutating it was refused. (seed 24301, program 11)
variants!(if_value, if_value_f, if_value_fv; fn (x: &Tensor, flag: bool) -> Tensor {
    let v = if flag { x.clone() } else { x * 2.0 };
    v.add_(1.0);
    let w = match flag {
        true => &v + 1.0,
        false => v.relu(),
    };
    w.mul_(3.0);
    &v + &w
});

#[test]
fn if_and_match_tensor_values_are_tracked() {
    for flag in [true, false] {
        check("if_value", &[iota(&[2])], |v, x| {
            vec![[if_value, if_value_f, if_value_fv][v](&x[0], flag)]
        });
    }
}

// `let w = <in-place op on a temporary>;` makes a fresh root: it got no
// hidden base, so a later `w.t_()` referred to an undeclared `__fz_base_*`.
// (seed 24301, program 9)
variants!(inplace_root, inplace_root_f, inplace_root_fv; fn (x: &Tensor) -> Tensor {
    let mut w = (x * 2.0).add_(1.0);
    w.t_();
    w.select(0, 1).mul_(3.0);
    w
});

#[test]
fn let_of_inplace_result_on_a_temporary_then_metadata_mutation() {
    check("inplace_root", &[iota(&[2, 3])], |v, x| {
        vec![[inplace_root, inplace_root_f, inplace_root_fv][v](&x[0])]
    });
}

// `r.unsqueeze(0).add_(10.0).add_(100.0)` with `r` a view: the second op
// re-made its view from `r` without regenerating `r` after the first op,
// so the first op was lost. (seed 24301, program 32)
variants!(chain_alias, chain_alias_f, chain_alias_fv; fn (x: Tensor) -> Tensor {
    let r = x.select(0, 1);
    r.unsqueeze(0).add_(10.0).add_(100.0);
    r.mul_(2.0).sub_(1.0);
    x
});

#[test]
fn chained_inplace_ops_on_a_view_of_an_alias() {
    check("chain_alias", &[iota(&[3])], |v, x| {
        vec![[chain_alias, chain_alias_f, chain_alias_fv][v](
            x[0].shallow_clone(),
        )]
    });
    assert_eq!(chain_alias_f(iota(&[3])).to_vec(), vec![0.0, 221.0, 2.0]);
}

// A `reshape` that copies (in the original too) was made with
// `parent.reshape(..)`, which on the contiguous `*_copy` value of copies
// mode is a view: a `view` op in a mutations_and_views trace. (seed 24301,
// programs 1 and 29)
variants!(reshape_copy, reshape_copy_f, reshape_copy_fv; fn (x: &Tensor) -> Tensor {
    let v = x.t().reshape([-1]);
    v.mul_(2.0);
    let w = x.unfold(1, 2, 1).reshape([-1]);
    w.add_(1.0);
    &v.sum() + &w.sum()
});

#[test]
fn reshape_that_copies_is_not_a_view_in_copies_mode() {
    let [_, g2] = check("reshape_copy", &[iota(&[2, 3])], |v, x| {
        vec![[reshape_copy, reshape_copy_f, reshape_copy_fv][v](&x[0])]
    });
    assert!(g2.ops().contains(&"view_copy"), "{g2}");
}

// After a write-back through `t()`, the root's value was a transposed view
// (unlike the original's contiguous tensor): `as_strided` of it read the
// wrong elements and `view` of it panicked. (seed 24301, program 35; seed
// 10, programs 55 and 785)
variants!(after_t, after_t_f, after_t_fv; fn (x: &Tensor, d: &mut [Tensor]) -> (Tensor, Tensor, Tensor) {
    let s = x.clone();
    s.t().narrow(0, 0, 1).add_(1.0);
    let a = s.as_strided([2], [2], 1).clone();
    let v = s.view([-1]);
    v.mul_(2.0);
    d[0].t().abs_();
    let e = d[0].unsqueeze(2).view([-1]).neg();
    (a, s, e)
});

#[test]
fn views_of_a_root_written_back_through_a_transpose() {
    check("after_t", &[iota(&[2, 3]), iota(&[2, 2])], |v, x| {
        let (a, b) = x.split_at_mut(1);
        let (p, q, r) = [after_t, after_t_f, after_t_fv][v](&a[0], b);
        vec![p, q, r]
    });
}

// A method the macro cannot see, called on an element of a multi-output
// view (`p[1].bump()`), was not checked: in copies mode the mutation went
// to a copy and was lost. (seed 24301, program 34)
trait Bump {
    fn bump(&self);
}

impl Bump for Tensor {
    fn bump(&self) {
        funcz::trace::untraced(|| {
            self.add_(1.0);
        });
    }
}

variants!(multi_opaque, multi_opaque_f, multi_opaque_fv; fn (x: &Tensor) -> Tensor {
    let mut p = x.unbind(0);
    p[1] -= 0.5;
    p[1].bump();
    p[0].sum()
});

#[test]
fn opaque_method_on_a_multi_output_element() {
    check("multi_opaque", &[iota(&[3])], |v, x| {
        vec![[multi_opaque, multi_opaque_f, multi_opaque_fv][v](&x[0])]
    });
}

// An opaque call on a root that was never mutated in place, but has views:
// the views (copies, in copies mode) were not regenerated. And an opaque
// call on a root re-laid-out by `t_()`: the mutation of its (copied) value
// was not written into its base. (seed 24301, programs 112, 121, 159)
fn scale(t: &mut Tensor) {
    funcz::trace::untraced(|| {
        t.mul_(3.0);
    });
}

fn fill_first(t: &Tensor) {
    funcz::trace::untraced(|| {
        t.narrow(0, 0, 1).fill_(-1.0);
    });
}

variants!(opaque_root, opaque_root_f, opaque_root_fv; fn (x: &mut Tensor) -> (Tensor, Tensor) {
    let b = x.clone();
    let a = b.alias();
    let c = b.t();
    b.bump();
    let v = x.flatten();
    x.t_();
    fill_first(x);
    let mut s = x.select(0, 0).clone();
    scale(&mut s);
    (&a + &c.t(), &v + &s.sum())
});

#[test]
fn opaque_calls_on_roots_with_views_and_relaid_out_roots() {
    check("opaque_root", &[iota(&[2, 2])], |v, x| {
        let (a, b) = [opaque_root, opaque_root_f, opaque_root_fv][v](&mut x[0]);
        vec![a, b]
    });
}

// A view of a copy made by `reshape`/`contiguous`, mutated in place: the
// mutation went to the temporary view only, not to the copy. (seed 24301,
// program 581)
variants!(copy_view, copy_view_f, copy_view_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let c = x.t().contiguous();
    c.narrow(0, 0, 1).mul_(2.0);
    c.select(1, 1).add_(100.0);
    let f = x.t().flatten().unsqueeze(0);
    f.add_(1.0);
    f.narrow(1, 0, 2).zero_();
    (c, f)
});

#[test]
fn mutation_through_a_view_of_a_reshape_copy() {
    check("copy_view", &[iota(&[2, 3])], |v, x| {
        let (a, b) = [copy_view, copy_view_f, copy_view_fv][v](&x[0]);
        vec![a, b]
    });
}

// A named view of such a copy cannot be kept in sync with it: refused at
// run time (it used to be silently stale), while the original runs.
variants!(copy_named_view, copy_named_view_f, copy_named_view_fv; fn (x: &Tensor) -> Tensor {
    let c = x.t().contiguous();
    let v = c.narrow(0, 0, 1);
    v.add_(1.0);
    c
});

#[test]
fn named_view_of_a_reshape_copy_is_refused_when_mutated() {
    let x = iota(&[2, 3]);
    let orig = copy_named_view(&x);
    assert_eq!(orig.to_vec()[..2], [1.0, 4.0]);
    for f in [copy_named_view_f, copy_named_view_fv] {
        let msg = panic_message(|| {
            f(&x);
        });
        assert!(
            msg.contains("`reshape`/`flatten`/`contiguous` copied"),
            "{msg}"
        );
    }
}

// Chained in-place ops through a `reshape` that copies re-made the copy
// for each op (the earlier ops were lost): refused at run time when the
// copy happens; the same chain through a `reshape` that is a view runs.
// (seed 4, program 881)
variants!(copy_chain, copy_chain_f, copy_chain_fv; fn (x: &Tensor, c: &Tensor) -> Tensor {
    let w = c.contiguous().add_(0.5).add_(3.0);
    let k = x.narrow(1, 0, 1).contiguous().add_(0.5).add_(3.0);
    &w.sum() + &k.sum()
});

#[test]
fn chained_inplace_ops_on_a_copying_reshape() {
    let (x, c) = (iota(&[2, 2]), iota(&[2]));
    check(
        "copy_chain_view",
        &[x.narrow(1, 0, 1).clone(), c.clone()],
        |v, x| vec![[copy_chain, copy_chain_f, copy_chain_fv][v](&x[0], &x[1])],
    );
    let orig = copy_chain(&x, &c);
    assert_eq!(orig.item(), 1.0 + 7.0 + 2.0 + 7.0);
    for f in [copy_chain_f, copy_chain_fv] {
        let msg = panic_message(|| {
            f(&x, &c);
        });
        assert!(msg.contains("chained in-place ops"), "{msg}");
    }
}

// `let v = x.t().flatten().unsqueeze(0)` alone holds the copy `flatten`
// made: it was treated as a view of an anonymous copy and its mutation
// refused. (seed 24301, programs 404 and 482)
variants!(copy_head, copy_head_f, copy_head_fv; fn (x: &Tensor) -> Tensor {
    let v = x.t().flatten().unsqueeze(0);
    v.add_(1.0);
    let p = x.t().contiguous().split(1, 0);
    p[0].neg_();
    &v.sum() + &p[0].sum()
});

#[test]
fn binding_that_alone_holds_a_reshape_copy() {
    check("copy_head", &[iota(&[2, 3])], |v, x| {
        vec![[copy_head, copy_head_f, copy_head_fv][v](&x[0])]
    });
}

// Assigning a new value to a root re-laid-out by `t_()`/`squeeze_()` kept
// its old base and chain: a later `as_strided` was refused as if it were a
// view. (seed 1, programs 8 and 837)
variants!(rebind_based, rebind_based_f, rebind_based_fv; fn (x: &Tensor, y: &Tensor) -> Tensor {
    let mut v = x.clone();
    v.unsqueeze_(0);
    v.add_(1.0);
    v = y.clone();
    let a = v.as_strided([2], [2], 1).sum();
    v.t_();
    v.narrow(0, 0, 1).mul_(2.0);
    &a + &v.sum()
});

#[test]
fn rebinding_a_relaid_out_root() {
    check("rebind_based", &[iota(&[3]), iota(&[2, 2])], |v, x| {
        vec![[rebind_based, rebind_based_f, rebind_based_fv][v](
            &x[0], &x[1],
        )]
    });
}

// Views of a root keep its old value after the root is assigned a new one;
// they were regenerated lazily, so mutations since their last use were
// missing. (seed 1, programs 535 and 775; seed 2, 894; seed 3, 297, 862, 981)
variants!(rebind_views, rebind_views_f, rebind_views_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let mut s = x.clone();
    let w = s.narrow(0, 0, 2);
    let u = s.unbind(0);
    s.mul_(2.0);
    s += &w.sum();
    s = x * 10.0;
    (&w + &u[2], s)
});

#[test]
fn views_keep_the_old_value_of_a_rebound_root() {
    check("rebind_views", &[iota(&[3])], |v, x| {
        let (a, b) = [rebind_views, rebind_views_f, rebind_views_fv][v](&x[0]);
        vec![a, b]
    });
}

// Mutating such a view is refused (its sibling views of the old value
// could not see it; it used to be silently lost). (seed 4, program 289;
// seed 10, program 330)
variants!(rebound_mut, rebound_mut_f, rebound_mut_fv; fn (x: &Tensor) -> Tensor {
    let mut s = x.clone();
    let w = s.narrow(0, 0, 2);
    let w2 = w.view([-1]);
    s = x * 10.0;
    w.add_(1.0);
    &w2.sum() + &s.sum()
});

#[test]
fn mutation_through_a_view_of_a_rebound_root_is_refused() {
    let x = iota(&[3]);
    assert_eq!(rebound_mut(&x).item(), 3.0 + 30.0);
    for f in [rebound_mut_f, rebound_mut_fv] {
        let msg = panic_message(|| {
            f(&x);
        });
        assert!(
            msg.contains("assigned a new value since the view was made"),
            "{msg}"
        );
    }
}

// Iterating a mutated `&[Tensor]` with `.iter()`: the macro iterates
// mutably, so the loop variable became `&mut Tensor` and `t.add_(t)` no
// longer type-checked (E0277). (seed 2, program 223)
variants!(shared_loop, shared_loop_f, shared_loop_fv; fn (d: &[Tensor]) -> Tensor {
    d[0].mul_(2.0);
    let mut s = Tensor::zeros(&[2]);
    for (j, t) in d.iter().enumerate() {
        t.add_(t);
        s = &s + &(t * j as f32);
    }
    s
});

#[test]
fn shared_loop_variable_over_a_mutated_slice() {
    check("shared_loop", &[iota(&[2]), iota(&[2])], |v, x| {
        vec![[shared_loop, shared_loop_f, shared_loop_fv][v](x)]
    });
}

// `return &*x + ..` inside a loop over a mutated slice: `*x` was taken for a
// move of the input `x`, so the write-back ran before the value and
// borrowed the slice the loop holds (E0502). (seed 4, program 352)
variants!(ret_in_loop, ret_in_loop_f, ret_in_loop_fv; fn (x: &mut Tensor, d: &[Tensor], flag: bool) -> Tensor {
    d[0].mul_(2.0);
    x.add_(1.0);
    for (j, t) in d.iter().enumerate() {
        if flag && j == 1 {
            return &*x + t;
        }
    }
    x.clone()
});

#[test]
fn deref_of_an_input_in_a_return_is_not_a_move() {
    for flag in [true, false] {
        check(
            "ret_in_loop",
            &[iota(&[2]), iota(&[2]), iota(&[2])],
            |v, x| {
                let (a, b) = x.split_at_mut(1);
                vec![[ret_in_loop, ret_in_loop_f, ret_in_loop_fv][v](
                    &mut a[0], b, flag,
                )]
            },
        );
    }
}

// A view of a collection element passed to an opaque call that mutates it
// cannot be written back into the element: refused at run time (in copies
// mode the mutation went to a copy).
variants!(elem_view_opaque, elem_view_opaque_f, elem_view_opaque_fv; fn (d: &[Tensor]) -> Tensor {
    let v = d[0].t();
    fill_first(&v);
    d[0].sum()
});

#[test]
fn opaque_mutation_of_a_view_of_a_collection_element_is_refused() {
    let d = [iota(&[2, 2])];
    assert_eq!(elem_view_opaque(&d).item(), -1.0 + -1.0 + 1.0 + 3.0);
    for f in [elem_view_opaque_f, elem_view_opaque_fv] {
        let d = [iota(&[2, 2])];
        let msg = panic_message(|| {
            f(&d);
        });
        assert!(msg.contains("a view of a collection element"), "{msg}");
    }
}

// `resize_` of a fresh tensor then a view of it: the root's recorded
// layout stayed the old one, so `view([25])` of the resized tensor
// panicked. (Found by the conformance case test_resize_larger_valid.)
variants!(resize_view, resize_view_f, resize_view_fv; fn (x: &Tensor) -> Tensor {
    let mut y = x + 1.0;
    y.resize_([5, 5]);
    y.view([25]).narrow(0, 0, 10).fill_(1.0);
    y
});

#[test]
fn view_of_a_resized_tensor() {
    check("resize_view", &[iota(&[8])], |v, x| {
        vec![[resize_view, resize_view_f, resize_view_fv][v](&x[0])]
    });
}

// `let w = v.t_();` binds the re-laid-out variable: the lowering gave a
// tensor where a (tensor, state) pair was expected (E0308). (Found when
// the generator learnt to bind metadata mutations.)
variants!(bind_meta, bind_meta_f, bind_meta_fv; fn (x: &Tensor, y: &mut Tensor) -> (Tensor, Tensor) {
    let mut v = x.clone();
    let w = v.t_();
    w.select(0, 0).add_(1.0);
    let u = y.unsqueeze_(0);
    u.mul_(2.0);
    (v, w)
});

#[test]
fn binding_the_result_of_a_metadata_mutation() {
    check("bind_meta", &[iota(&[2, 3]), iota(&[3])], |v, x| {
        let (a, b) = x.split_at_mut(1);
        let (p, q) = [bind_meta, bind_meta_f, bind_meta_fv][v](&a[0], &mut b[0]);
        vec![p, q]
    });
}

// `?` inside a loop over a mutated `&mut [Tensor]`: the write-back on the
// exit path borrowed the slice the loop holds, because the exit branch did
// not visibly diverge (E0502). (seed 22, program 717)
fn small(t: &Tensor) -> Result<f32, String> {
    let s = t.sum().item();
    if s > 10.0 {
        Err(format!("sum {s}"))
    } else {
        Ok(s)
    }
}

variants!(try_in_loop, try_in_loop_f, try_in_loop_fv; fn (d: &mut [Tensor]) -> Result<Tensor, String> {
    for t in d.iter_mut() {
        *t += 1.0;
        let s = small(t)?;
        t.mul_(s);
    }
    Ok(d[0].sum())
});

#[test]
fn try_inside_a_loop_over_a_mutated_slice() {
    for scale in [0.5f32, 4.0] {
        let ins = [&iota(&[2]) * scale, &iota(&[2]) * scale];
        check("try_in_loop", &ins, |v, x| {
            match [try_in_loop, try_in_loop_f, try_in_loop_fv][v](x) {
                Ok(t) => vec![t],
                Err(e) => vec![Tensor::from_vec(vec![e.len() as f32], &[1])],
            }
        });
    }
}

// `resize_` of a tensor re-laid-out by `unsqueeze_()` (before or after):
// its hidden base kept the old size, so the tensor regenerated from it
// lost the resize. (seed 21, program 301)
variants!(resize_based, resize_based_f, resize_based_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let mut v = x.clone();
    v.resize_([6]);
    v.unsqueeze_(0);
    v.add_(1.0);
    let mut w = x.clone();
    w.t_();
    w.resize_([2, 2]);
    w.select(0, 1).mul_(3.0);
    (v, w)
});

#[test]
fn resize_of_a_relaid_out_tensor() {
    check("resize_based", &[iota(&[2, 2])], |v, x| {
        let (a, b) = [resize_based, resize_based_f, resize_based_fv][v](&x[0]);
        vec![a, b]
    });
}

// `v = v.reshape(..)` where the reshape copies: `v`'s later mutation was
// lost (it went to a temporary); an intermediate version of the fix also
// borrowed `v`'s state twice (E0502). (seed 24301, program 694, with the
// extended generator)
variants!(reshape_self, reshape_self_f, reshape_self_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let b = x.clone();
    let mut v = b.t();
    v = v.reshape([-1]);
    v.add_(1.0);
    (v, b)
});

#[test]
fn view_reassigned_from_its_own_copying_reshape() {
    check("reshape_self", &[iota(&[2, 3])], |v, x| {
        let (a, b) = [reshape_self, reshape_self_f, reshape_self_fv][v](&x[0]);
        vec![a, b]
    });
}

// An owned parameter assigned a fresh value that a view still reads: the
// exit wrote the parameter's final value into the assigned tensor (a copy_
// left in the trace). (seed 1, program 325)
variants!(owned_param_assigned, owned_param_assigned_f, owned_param_assigned_fv; fn (x0: &Tensor, mut x1: Tensor) -> (Tensor, Tensor) {
    x1.add_(1.0);
    x1 = x0.narrow(0, 0, 2).sum();
    let v = x1.view([-1]);
    let w = x1.sub_(-0.75);
    w.neg_();
    (x1.clone(), &v * 1.0)
});

#[test]
fn owned_parameter_assigned_then_mutated_through_an_alias() {
    check("owned_param_assigned", &[iota(&[3]), iota(&[2])], |v, x| {
        let (a, b) = [
            owned_param_assigned,
            owned_param_assigned_f,
            owned_param_assigned_fv,
        ][v](&x[0], x[1].shallow_clone());
        vec![a, b]
    });
}

// One resize_ of a re-laid-out tensor, then as_strided of it: the resized
// tensor must be its hidden base itself (as_strided needs a contiguous base
// at offset 0), not a view of it. (seed 3, program 516)
variants!(resize_then_as_strided, resize_then_as_strided_f, resize_then_as_strided_fv; fn (x: &Tensor) -> Tensor {
    let mut s = x.unfold(-1, 2, 3).clone();
    s.resize_([3]);
    let p = s.as_strided([1], [2], 2);
    p.add_(5.0);
    s.squeeze_dim_(0);
    s
});

#[test]
fn as_strided_after_one_resize_of_a_relaid_out_root() {
    check("resize_then_as_strided", &[iota(&[4])], |v, x| {
        vec![[
            resize_then_as_strided,
            resize_then_as_strided_f,
            resize_then_as_strided_fv,
        ][v](&x[0])]
    });
}

// State in a struct (the generator's `s: &mut Pair`), found as soon as the
// generator learned struct fields:
pub struct Pair {
    a: Tensor,
    b: Tensor,
}

// A field mutated through a loop variable over its `unbind` and a `let`
// view of that: the field was not found as a place, and the mutation was
// refused at run time as "a value from a call". (seed 7, program 172; its
// first statement `s.a.mul_(1.0)` shows `s.a` is a tensor: without it,
// `s.a -= 1.0` alone is refused, `untracked_compound_tensor`.)
#[funcz::functionalize]
fn field_through_loop_view_f(s: &mut Pair) {
    s.a.mul_(1.0);
    for r in s.b.unbind(0) {
        let v = r.shallow_clone();
        v.alias().reshape([-1]).mul_(&r);
    }
    s.a -= 1.0;
}
fn field_through_loop_view(s: &mut Pair) {
    s.a.mul_(1.0);
    for r in s.b.unbind(0) {
        let v = r.shallow_clone();
        v.alias().reshape([-1]).mul_(&r);
    }
    s.a -= 1.0;
}

#[test]
fn field_mutated_through_a_loop_variable_and_compound_assignment() {
    let run = |f: fn(&mut Pair)| {
        let mut s = Pair {
            a: iota(&[2, 3]),
            b: iota(&[2, 3]),
        };
        f(&mut s);
        (s.a.to_vec(), s.b.to_vec())
    };
    assert_eq!(run(field_through_loop_view), run(field_through_loop_view_f));
}

// A root of unknown origin (the clone of a field the body only reads) that
// is also re-laid-out (`t_`): its freshness check ran after the hidden base
// took a second handle, and refused it. (seed 7, program 104)
#[funcz::functionalize]
fn unknown_root_relaid_f(s: &mut Pair) -> Tensor {
    let mut s1 = s.b.clone();
    s1.sub_(0.75);
    s1.t_();
    s1
}
fn unknown_root_relaid(s: &mut Pair) -> Tensor {
    let mut s1 = s.b.clone();
    s1.sub_(0.75);
    s1.t_();
    s1
}

#[test]
fn unknown_root_re_laid_out_is_fresh() {
    let run = |f: fn(&mut Pair) -> Tensor| {
        let mut s = Pair {
            a: iota(&[2, 3]),
            b: iota(&[2, 3]),
        };
        let r = f(&mut s);
        (r.shape().to_vec(), r.to_vec(), s.b.to_vec())
    };
    assert_eq!(run(unknown_root_relaid), run(unknown_root_relaid_f));
}

fn bump(t: &Tensor) {
    t.add_(1.0);
}

// A typed `let` of a view of a field the body does not mutate itself,
// mutated by a helper through a copies-mode chunk: the type annotation
// skipped the freshness check and the helper's write was lost (copies
// mode). It is checked now: a clear panic. (seed 11, program 337)
#[funcz::functionalize(remove = "mutations_and_views")]
fn typed_view_of_field_fv(s: &mut Pair) {
    let v1: Tensor = s.b.t().slice(1, 0, 2, 1);
    let p = v1.chunk(2, 0);
    bump(&p[1]);
}
// With the field mutated by the body, it is a tracked place, and the
// helper's write reaches it.
#[funcz::functionalize(remove = "mutations_and_views")]
fn field_view_helper_fv(s: &mut Pair) {
    s.b.mul_(2.0);
    let v1: Tensor = s.b.t().slice(1, 0, 2, 1);
    let p = v1.chunk(2, 0);
    bump(&p[1]);
}
fn field_view_helper(s: &mut Pair) {
    s.b.mul_(2.0);
    let v1: Tensor = s.b.t().slice(1, 0, 2, 1);
    let p = v1.chunk(2, 0);
    bump(&p[1]);
}

#[test]
fn typed_view_of_a_field_is_checked_not_assumed_fresh() {
    let mut s = Pair {
        a: iota(&[2, 3]),
        b: iota(&[2, 3]),
    };
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        typed_view_of_field_fv(&mut s)
    }))
    .expect_err("refused at run time");
    let msg = err.downcast_ref::<String>().expect("a message");
    assert!(
        msg.contains("`v1`") && msg.contains("shares its storage"),
        "{msg}"
    );
    let run = |f: fn(&mut Pair)| {
        let mut s = Pair {
            a: iota(&[2, 3]),
            b: iota(&[2, 3]),
        };
        f(&mut s);
        s.b.to_vec()
    };
    assert_eq!(run(field_view_helper), run(field_view_helper_fv));
}

// A parameter named `input` was kept in a hidden variable `__fz_input_0`,
// the name of the hidden reference to the caller's first input: the
// write-back at exit then dereferenced the functional value (E0614 at the
// attribute). Found by porting `F.group_norm` (tests/ported).
variants!(param_named_input, param_named_input_f, param_named_input_fv; fn (input: &Tensor, state: &mut Tensor, base: Tensor) -> Tensor {
    let x = input.reshape([-1]);
    x.add_(1.0);
    state.mul_(2.0);
    base.sub_(1.0);
    let (a, b) = (x.sum(), state.sum());
    a.add(&b)
});

#[test]
fn parameters_named_like_hidden_variables() {
    check(
        "param_named_input",
        &[iota(&[2, 2]), iota(&[3]), iota(&[2])],
        |v, x| {
            let base = x[2].shallow_clone();
            let (input, rest) = x.split_at_mut(1);
            vec![[
                param_named_input,
                param_named_input_f,
                param_named_input_fv,
            ][v](&input[0], &mut rest[0], base)]
        },
    );
}

// `as_strided` of an owned input after `squeeze_()` (a no-op reshape here):
// the input's value is a one-view chain from its root, which the runtime
// refused as non-compositional although the view is row-major from offset
// 0 and the strided window stays inside it (the original ran). Then a
// write through the as_strided window and one through the input itself.
// (seed 77, program 3237)
variants!(strided_after_squeeze, strided_after_squeeze_f, strided_after_squeeze_fv; fn (mut x0: Tensor) -> Tensor {
    x0.squeeze_();
    let v4 = x0.as_strided([3i64, 2i64], [3i64, 1i64], 8).narrow(1, 0, 1).shallow_clone();
    v4.permute([1, 0]).reshape([1, 3, 1]).transpose(0, -2).add_(3.0f32);
    x0.slice(0, -3, -1, 1).sub_(0.25f32);
    &x0 + &v4.sum()
});

#[test]
fn as_strided_of_a_squeezed_owned_input() {
    let [g1, _] = check("strided_after_squeeze", &[iota(&[4, 4])], |v, x| {
        vec![[
            strided_after_squeeze,
            strided_after_squeeze_f,
            strided_after_squeeze_fv,
        ][v](x[0].shallow_clone())]
    });
    assert!(g1.ops().contains(&"as_strided_scatter"), "{g1}");
}

// The window of an `as_strided` on a view must stay inside the view: past
// it, the original reads storage the functional value does not have, and
// the functionalized code refuses with the non-compositional message.
variants!(strided_past_view, strided_past_view_f, strided_past_view_fv; fn (x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2);
    v.as_strided([2i64], [1i64], 9).add_(1.0);
    x.sum()
});

#[test]
fn as_strided_of_a_view_reaching_past_it_is_refused() {
    let x = iota(&[4, 4]);
    let orig = strided_past_view(&x.clone());
    assert_eq!(orig.item(), 122.0);
    for f in [strided_past_view_f, strided_past_view_fv] {
        let msg = panic_message(|| {
            f(&x.clone());
        });
        assert!(msg.contains("as_strided is non-compositional"), "{msg}");
    }
}

// `index_put_` with `None` entries (PyTorch's `x[:, i] = v`) ran as an
// `index_put_` on a `permute`d view of its receiver, and was traced so: in
// `#[functionalize]` code that updates the root in place (nobody else sees
// its buffer), an in-place `index_put_` stayed in the trace; in
// `mutations_and_views` mode the functional `index_put` with `None`
// entries left `permute` views in the trace. The values were right.
// (funcz-difftest, seed 24301: 29 of 1000 programs, e.g. 124, 200, 300.)
variants!(put_none, put_none_f, put_none_fv; fn (x: &mut Tensor) -> Tensor {
    let i = Tensor::<i64>::from_vec(vec![1], &[1]);
    x.index_put_(&[None, Some(&i)], 5.0, false);
    let y = Tensor::<f32>::zeros(&[2, 3]);
    y.index_put(&[None, Some(&i)], 1.0, true)
});

#[test]
fn index_put_with_none_entries_traces_one_functional_op() {
    let [g1, g2] = check("put_none", &[iota(&[2, 3])], |v, x| {
        vec![[put_none, put_none_f, put_none_fv][v](&mut x[0])]
    });
    for g in [&g1, &g2] {
        assert!(g.ops().contains(&"index_put"), "{g}");
    }
    assert!(!g2.has_views(), "{g2}");
    let x = iota(&[2, 3]);
    let y = put_none(&mut x.shallow_clone());
    assert_eq!(x.to_vec(), vec![0.0, 5.0, 2.0, 3.0, 5.0, 5.0]);
    assert_eq!(y.to_vec(), vec![0.0, 1.0, 0.0, 0.0, 1.0, 0.0]);
}

// A helper the macro cannot see into, given a temporary `reshape` of a root
// that was mutated through `t().narrow(..)`: after that write-back the
// root's value is laid out transposed (the original's is contiguous), so the
// `reshape` copies where the original's is a view, and the helper's write is
// lost. (funcz-difftest, seed 1001, program 731; likely also seed 1003,
// program 679.)
variants!(reshape_to_helper, reshape_to_helper_f, reshape_to_helper_fv; fn (x: &Tensor) -> Tensor {
    x.t().narrow(0, 0, 1).add_(1.0);
    fill_first(&x.reshape([-1]));
    x.clone()
});

#[test]
fn helper_given_a_reshape_of_a_root_written_back_through_a_transpose() {
    check("reshape_to_helper", &[iota(&[4, 2])], |v, x| {
        vec![[
            reshape_to_helper,
            reshape_to_helper_f,
            reshape_to_helper_fv,
        ][v](&x[0])]
    });
    let x = iota(&[4, 2]);
    let y = reshape_to_helper(&x);
    assert_eq!(y.to_vec(), vec![-1.0, 1.0, 3.0, 3.0, 5.0, 5.0, 7.0, 7.0]);
}

fn sub_half(t: &Tensor) {
    funcz::trace::untraced(|| {
        t.sub_(0.5);
    });
}

// `let w = x.narrow(..).alias().sub_(..)` (a view bound to an in-place
// result), then a helper the macro cannot see into, given a temporary view
// of `x` that overlaps `w`: `w` did not see the helper's write. Without the
// `.alias()`, or with the helper given `&x` itself, it does. (funcz-difftest,
// seed 1001, program 1969; likely also seed 1003, program 1982.)
variants!(alias_then_helper, alias_then_helper_f, alias_then_helper_fv; fn (x: &Tensor) -> Tensor {
    let w = x.narrow(1, 1, 1).alias().sub_(0.5);
    sub_half(&x.narrow(0, 0, 3));
    w.clone()
});

#[test]
fn bound_view_of_an_alias_sees_a_helper_write_through_a_temporary_view() {
    check("alias_then_helper", &[iota(&[4, 2])], |v, x| {
        vec![[
            alias_then_helper,
            alias_then_helper_f,
            alias_then_helper_fv,
        ][v](&x[0])]
    });
    let x = iota(&[4, 2]);
    let w = alias_then_helper(&x);
    assert_eq!(w.to_vec(), vec![0.0, 2.0, 4.0, 6.5]);
}

// A view `v` of an input, re-laid-out by `squeeze_dim_` and mutated; then a
// helper the macro cannot see into writes to the input through a temporary
// view; then `v` is mutated again: the helper's write is lost (`v`'s stale
// value is written back over it). Without the `squeeze_dim_` (and without
// other views of `v`), it is kept. (funcz-difftest, seed 2001, program 944;
// likely also seed 2001, program 5.)
variants!(stale_after_helper, stale_after_helper_f, stale_after_helper_fv; fn (x: &Tensor) -> Tensor {
    let mut v = x.select(-2, 0);
    v.squeeze_dim_(-1);
    v += 1.0;
    sub_half(&x.unsqueeze(0));
    v.sub_(2.0);
    x.clone()
});

#[test]
fn relaid_out_view_mutated_after_a_helper_write_through_a_temporary_view() {
    check("stale_after_helper", &[iota(&[3, 4, 1])], |v, x| {
        vec![[
            stale_after_helper,
            stale_after_helper_f,
            stale_after_helper_fv,
        ][v](&x[0])]
    });
    let x = iota(&[3, 4, 1]);
    let y = stale_after_helper(&x);
    assert_eq!(
        y.to_vec(),
        vec![-1.5, 0.5, 1.5, 2.5, 2.5, 4.5, 5.5, 6.5, 6.5, 8.5, 9.5, 10.5]
    );
}

// An input re-laid-out by `transpose_` and `squeeze_`, then written by a
// helper the macro cannot see into: its value and the caller's tensor
// name the same elements with other strides along a size-1 dimension, and
// the exit's write-back `copy_` was refused as a partial overlap.
// (funcz-difftest, seed 3002, program 1289.)
variants!(squeezed_input_to_helper, squeezed_input_to_helper_f, squeezed_input_to_helper_fv;
    fn (x: &mut Tensor) -> Tensor {
    x.transpose_(-1, 0);
    x.squeeze_();
    fill_first(x);
    x.clone()
});

#[test]
fn squeezed_input_written_by_a_helper_is_written_back() {
    check_values("squeezed_input_to_helper", &[iota(&[1, 3])], |v, x| {
        vec![[
            squeezed_input_to_helper,
            squeezed_input_to_helper_f,
            squeezed_input_to_helper_fv,
        ][v](&mut x[0])]
    });
    let mut x = iota(&[1, 3]);
    let y = squeezed_input_to_helper_f(&mut x);
    assert_eq!(y.to_vec(), vec![-1.0, 1.0, 2.0]);
    assert_eq!(x.shape(), &[3]);
    assert_eq!(x.to_vec(), vec![-1.0, 1.0, 2.0]);
}

// A multi-root run whose steps all take scalar parameters (`addcdiv_`,
// `addcmul_` with a value): the fused kernel declared the parameters of
// parameterless steps anyway, unread, and rustc could not infer their
// element type (E0283 at the attribute). (seed 6101, program 381, from the
// generator's element runs)
variants!(run_of_steps_with_scalars, run_of_steps_with_scalars_f, run_of_steps_with_scalars_fv; fn (d: &mut [Tensor]) {
    d[1].addcdiv_(&d[1], &d[1], 1.5f32);
    d[1].addcmul_(&d[1], &d[1], 0.5f32);
});

#[test]
fn regress_run_of_steps_with_scalars() {
    for min in [usize::MAX, 0] {
        let prev = funcz::rt::set_min_fused(min);
        let [g, _] = check(
            "run_of_steps_with_scalars",
            &[iota(&[2, 3]), iota(&[3, 3]).add(1.0)],
            |v, x| {
                [
                    run_of_steps_with_scalars,
                    run_of_steps_with_scalars_f,
                    run_of_steps_with_scalars_fv,
                ][v](x);
                vec![]
            },
        );
        funcz::rt::set_min_fused(prev);
        assert_eq!(g.ops(), vec!["addcdiv", "addcmul", "copy_"], "{g}");
    }
}

// Seed 6110, program 1009 (minimized): an element of a `&mut [Tensor]`
// replaced by a fresh `[2, 1]` tensor, then written through a view chain
// whose inverse rebuilt it as a permute of a `[1, 2]` view (strides
// `[1, 2]`, not the original's `[1, 1]`).
variants!(elem_relaid, elem_relaid_f, elem_relaid_fv; fn (d: &mut [Tensor]) -> Tensor {
    d[0] = d[0].mul(-0.5);
    let ix = Tensor::<i64>::from_vec(vec![-2], &[1]);
    d[0].permute([1, -2]).flatten().narrow(-1, 0, 2).index_fill_(0, &ix, 3.0);
    d[0].clone()
});

#[test]
fn regress_replaced_element_written_through_a_permuted_view_keeps_its_strides() {
    check("elem_relaid", &[iota(&[2, 1])], |v, ins| {
        let f = [elem_relaid, elem_relaid_f, elem_relaid_fv][v];
        vec![f(&mut ins[..])]
    });
}

// The difftest generator's `bump_name!` (a macro whose pattern takes a
// name, `$t:ident`) given a `&mut` input the body mutates, and a `&`
// input it reads: the shadowed inputs reached the macro as `(&mut x)` and
// `(&x)`, which the pattern refuses (a compile error at the attribute for
// code the original compiles). Found by the generator's first programs
// with the shape (default seed, programs 41 and 43 of shards 1 and 3).
macro_rules! bump_by_name {
    ($t:ident) => {
        $t.add_(10.0)
    };
}

macro_rules! read_by_name {
    ($t:ident) => {
        $t.sum()
    };
}

variants!(named_inputs, named_inputs_f, named_inputs_fv; fn (x: &mut Tensor, y: &Tensor) -> Tensor {
    bump_by_name!(x);
    x.mul_(2.0);
    let s = read_by_name!(y);
    y.narrow(0, 0, 1).sub_(1.0);
    &*x + &s
});

#[test]
fn regress_a_macro_taking_a_name_is_given_a_shadowed_input() {
    check_values("named_inputs", &[iota(&[3]), iota(&[3])], |v, ins| {
        let (a, b) = ins.split_at_mut(1);
        let f = [named_inputs, named_inputs_f, named_inputs_fv][v];
        vec![f(&mut a[0], &b[0])]
    });
}

// The one-call form of an in-place op (`rt::inplace_alias(&mut root, &mut
// view).add_(args)`, which borrows the root mutably while the arguments
// are evaluated) was used for an op whose arguments the lowering had
// hoisted because they read the root (`__fz_arg0 = &t.value`): the hoisted
// borrow was still live, a compile error at the attribute for code the
// original compiles. Found by the default seed's programs 5 and 365 of
// shard 1 (`t.t().transpose(0, 1).squeeze_dim(0).add_(&t)`,
// `v.unfold(0, 1, 2).select(0, 0).lerp_(&v, 0.25)`), the first time the
// form was tried.
variants!(hoisted_reads_root, hoisted_reads_root_f, hoisted_reads_root_fv; fn (x: &Tensor) -> Tensor {
    let t = x.abs().sqrt();
    let w = t.t().transpose(0, 1).squeeze_dim(0).add_(&t);
    let v = x.sum_dim(0, true).sum_dim(1, true);
    v.unfold(0, 1, 2).select(0, 0).lerp_(&v, 0.25);
    &(&w + &t) + &v.sum()
});

#[test]
fn regress_an_in_place_op_whose_hoisted_arguments_read_its_root_is_not_one_call() {
    check_values("hoisted_reads_root", &[iota(&[2, 2])], |v, ins| {
        let f = [
            hoisted_reads_root,
            hoisted_reads_root_f,
            hoisted_reads_root_fv,
        ][v];
        vec![f(&ins[0])]
    });
}

// An in-place op whose operand broadcasts its target to a bigger shape
// (`y` of shape `[3]`, `y.add_(&w)` with `w` of shape `[2, 3]`) panics in
// the original ("output with shape [3] doesn't match the broadcast shape
// [2, 3]"). Where the target is shared with another handle, the
// functionalized code computes the functional twin (`y.add(&w)`), which
// broadcasts both ways, and committed its result: the function went on
// with a `[2, 3]` value, returned it, and wrote it back into the caller's
// `&mut` tensor. A silently different value. Found while the fused runs'
// panics were given the user's line: the fused-run property test compares
// with the op-by-op code, and both took the functional path. Now every
// commit of a functional result refuses another shape (`rt::kept_shape`),
// as the in-place op does, with its message.
variants!(bigger_root, bigger_root_f, bigger_root_fv; fn (x: &mut Tensor, w: &Tensor) -> f32 {
    // (The operand names `x`: the op takes the donate-or-commit form.)
    x.add_(&(x.unsqueeze(0) * w));
    x.sum().item()
});

variants!(bigger_local, bigger_local_f, bigger_local_fv; fn (w: &Tensor) -> Tensor {
    let y = w.sum_dim(0, false).mul(0.0);
    let keep = y.shallow_clone();
    y.add_(&(y.unsqueeze(0) * w));
    keep
});

variants!(bigger_fused, bigger_fused_f, bigger_fused_fv; fn (x: &Tensor, w: &Tensor) -> f32 {
    x.mul_(w).add_(1.0);
    x.sum().item()
});

variants!(bigger_temp, bigger_temp_f, bigger_temp_fv; fn (x: &Tensor, w: &Tensor) -> Tensor {
    x.mul(2.0).add_(w)
});

variants!(bigger_view, bigger_view_f, bigger_view_fv; fn (x: &Tensor, w: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    let keep = b.shallow_clone();
    b.narrow(0, 0, 2).add_(&(b.narrow(0, 0, 2).unsqueeze(0) * w));
    keep
});

#[test]
fn regress_an_in_place_op_whose_operand_broadcasts_its_shared_target_bigger_panics() {
    let expect = |name: &str, shape: &str, big: &str, run: &dyn Fn(usize)| {
        let want = format!(
            "funcz: {name}: output with shape {shape} doesn't match the broadcast shape {big}"
        );
        for v in 0..3 {
            let msg = panic_message(|| run(v));
            assert_eq!(msg, want, "variant {v}");
        }
    };
    let w = Tensor::ones(&[2, 1]);
    expect("add_", "[3]", "[2, 3]", &|v| {
        let mut x = Tensor::ones(&[3]);
        let keep = x.shallow_clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            [bigger_root, bigger_root_f, bigger_root_fv][v](&mut x, &w)
        }));
        // The caller's tensor keeps its shape and values.
        assert_eq!(
            (x.shape(), x.to_vec()),
            (&[3][..], vec![1.0; 3]),
            "variant {v}"
        );
        assert_eq!(keep.to_vec(), vec![1.0; 3]);
        if let Err(e) = r {
            std::panic::resume_unwind(e);
        }
    });
    let w3 = Tensor::ones(&[2, 3]);
    expect("add_", "[3]", "[2, 3]", &|v| {
        drop([bigger_local, bigger_local_f, bigger_local_fv][v](&w3))
    });
    expect("mul_", "[3]", "[2, 3]", &|v| {
        let x = Tensor::ones(&[3]);
        let _keep = x.shallow_clone();
        [bigger_fused, bigger_fused_f, bigger_fused_fv][v](&x, &w3);
    });
    expect("add_", "[3]", "[2, 3]", &|v| {
        drop([bigger_temp, bigger_temp_f, bigger_temp_fv][v](
            &Tensor::ones(&[3]),
            &w3,
        ))
    });
    expect("add_", "[2]", "[2, 2]", &|v| {
        drop([bigger_view, bigger_view_f, bigger_view_fv][v](
            &Tensor::ones(&[3]),
            &w,
        ))
    });
}

// An in-place op whose argument partially overlaps the tensor it writes
// (`b.add_(b.t())` on a 2x2 `b`) panics in the original (PyTorch refuses
// it). Where `b` was shared with another handle, the generated code took
// the functional twin (`b.add(b.t())`), which reads a consistent old value,
// and returned a result. Found while checking the broadcast bug's
// neighbours; the functional branch first runs the in-place op's overlap
// check (`rt::check_args_overlap`), whose message is the op's own.
variants!(overlap_shared, overlap_shared_f, overlap_shared_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let keep = b.shallow_clone();
    b.add_(b.t());
    keep.sum().item() + b.sum().item()
});

// The same through an alias held in a variable (`let y = b.t(); b.add_(&y);`)
// or on a view of the target, and in `mutations_and_views` mode anywhere:
// the generated code gave the target a private copy before the op (`y`
// shares its buffer: that is why), or made `y` a `t_copy`, and the op saw
// no overlap; the functionalized function returned a value where the
// original panics. Now the copy of the target remembers the buffer and
// layout it replaced, and a `*_copy` made in place of a view where its
// elements are in the original; the op's own check looks there
// (`funcz_runtime::ops::overlap`). Each program below panics with the
// original's message, at its line, in all three variants.
variants!(overlap_alias, overlap_alias_f, overlap_alias_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let y = b.t();
    b.add_(&y);
    b.sum().item()
});
variants!(overlap_view_target, overlap_view_target_f, overlap_view_target_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let v = b.narrow(0, 0, 2);
    v.add_(b.narrow(0, 1, 2));
    b.sum().item()
});
variants!(overlap_two_aliases, overlap_two_aliases_f, overlap_two_aliases_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let v = b.narrow(0, 0, 2);
    let u = b.narrow(0, 1, 2);
    v.mul_(&u);
    b.sum().item()
});
variants!(overlap_input, overlap_input_f, overlap_input_fv; fn (x: &mut Tensor) -> f32 {
    let y = x.t();
    x.add_(&y);
    x.sum().item()
});
variants!(overlap_ternary, overlap_ternary_f, overlap_ternary_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let y = b.t();
    b.addcmul_(&y, x, 0.5);
    b.sum().item()
});
variants!(overlap_chain, overlap_chain_f, overlap_chain_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let y = b.t();
    b.mul_(2.0).add_(&y).sub_(1.0);
    b.sum().item()
});
variants!(overlap_window, overlap_window_f, overlap_window_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    b.narrow(0, 0, 2).copy_(&b.narrow(0, 1, 2));
    b.sum().item()
});
variants!(overlap_indexed, overlap_indexed_f, overlap_indexed_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let y = b.view([-1]);
    let idx = Tensor::<i64>::from_vec(vec![0, 1], &[2]);
    b.view([-1]).index_add_(0, &idx, &y.narrow(0, 0, 2));
    b.sum().item()
});
variants!(overlap_after_update, overlap_after_update_f, overlap_after_update_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let y = b.t();
    b.add_(1.0);
    for _ in 0..2 {
        b.add_(&y);
    }
    b.sum().item()
});
variants!(overlap_view_of_view, overlap_view_of_view_f, overlap_view_of_view_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let c = b.t();
    let d = b.view([4]).view([2, 2]);
    c.add_(&d);
    b.sum().item()
});
// Full overlaps are allowed (the same elements, the same layout).
variants!(overlap_full, overlap_full_f, overlap_full_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let c = b.t();
    let d = b.t();
    c.add_(&d);
    c.t().add_(&b);
    b.sum().item()
});

#[test]
fn regress_an_argument_partially_overlapping_its_shared_target_panics() {
    let x = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let msgs: Vec<String> = (0..3)
        .map(|v| {
            panic_message(|| {
                let _ = [overlap_shared, overlap_shared_f, overlap_shared_fv][v](&x);
            })
        })
        .collect();
    assert!(
        msgs[0].starts_with("funcz: add_: unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location"),
        "{}",
        msgs[0]
    );
    assert_eq!(msgs[1], msgs[0]);
    assert_eq!(msgs[2], msgs[0]);
}

#[test]
fn regress_an_argument_overlapping_its_target_through_an_alias_panics_in_every_mode() {
    type F = fn(&Tensor) -> f32;
    type Case = (&'static str, [F; 3], fn() -> Tensor, &'static str);
    let square = || Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let three = || Tensor::from_vec((0..9).map(|v| v as f32).collect(), &[3, 3]);
    let cases: &[Case] = &[
        (
            "alias",
            [overlap_alias, overlap_alias_f, overlap_alias_fv],
            square,
            "add_",
        ),
        (
            "view_target",
            [
                overlap_view_target,
                overlap_view_target_f,
                overlap_view_target_fv,
            ],
            three,
            "add_",
        ),
        (
            "two_aliases",
            [
                overlap_two_aliases,
                overlap_two_aliases_f,
                overlap_two_aliases_fv,
            ],
            three,
            "mul_",
        ),
        (
            "ternary",
            [overlap_ternary, overlap_ternary_f, overlap_ternary_fv],
            square,
            "addcmul_",
        ),
        (
            "chain",
            [overlap_chain, overlap_chain_f, overlap_chain_fv],
            square,
            "add_",
        ),
        (
            "window",
            [overlap_window, overlap_window_f, overlap_window_fv],
            three,
            "copy_",
        ),
        (
            "indexed",
            [overlap_indexed, overlap_indexed_f, overlap_indexed_fv],
            square,
            "index_add_",
        ),
        (
            "after_update",
            [
                overlap_after_update,
                overlap_after_update_f,
                overlap_after_update_fv,
            ],
            square,
            "add_",
        ),
        (
            "view_of_view",
            [
                overlap_view_of_view,
                overlap_view_of_view_f,
                overlap_view_of_view_fv,
            ],
            square,
            "add_",
        ),
    ];
    for (name, fs, input, op) in cases {
        let msgs: Vec<String> = (0..3)
            .map(|v| {
                panic_message(|| {
                    let _ = fs[v](&input());
                })
            })
            .collect();
        assert!(
            msgs[0].starts_with(&format!(
                "funcz: {op}: unsupported operation: some elements"
            )),
            "{name}: {}",
            msgs[0]
        );
        assert_eq!(msgs[1], msgs[0], "{name}, mutations");
        assert_eq!(msgs[2], msgs[0], "{name}, mutations_and_views");
    }
    let ins = [overlap_input, overlap_input_f, overlap_input_fv];
    let msgs: Vec<String> = (0..3)
        .map(|v| {
            panic_message(|| {
                let _ = ins[v](&mut square());
            })
        })
        .collect();
    assert!(
        msgs[0].contains("refer to a single memory location"),
        "{}",
        msgs[0]
    );
    assert_eq!((&msgs[1], &msgs[2]), (&msgs[0], &msgs[0]), "input");
    // A full overlap runs, with the original's values.
    let full: Vec<f32> = [overlap_full, overlap_full_f, overlap_full_fv]
        .iter()
        .map(|f| f(&square()))
        .collect();
    assert_eq!(full, vec![40.0; 3]);
}

// The first version of the check above ran for every in-place op and
// refused `masked_scatter_` with a source that overlaps the target
// (`place.as_strided([4], [1], 0)` of a 2x2 `place`), which the op itself
// does not check and the original runs. Found by the differential run of
// seed 6130 (program 1948). The check now runs for the elementwise ops
// only, which refuse an overlapping argument whatever it is.
variants!(scatter_from_alias, scatter_from_alias_f, scatter_from_alias_fv; fn (x: &Tensor) -> Tensor {
    let place = x.mul(1.0);
    let keep = place.shallow_clone();
    let v2 = place.as_strided([4i64], [1i64], 0);
    place.masked_scatter_(&place.lt(2.5f32).logical_not(), &v2);
    &place + &keep
});

#[test]
fn regress_an_op_that_does_not_check_its_source_is_not_refused() {
    check_values("scatter_from_alias", &[iota(&[2, 2])], |v, ins| {
        let f = [
            scatter_from_alias,
            scatter_from_alias_f,
            scatter_from_alias_fv,
        ][v];
        vec![f(&ins[0])]
    });
}

// Found by the differential generator once it learned to make operands
// that overlap their target on purpose (seeds 6134 and 0x5EED, this
// session's generator): each program panics with the original's overlap
// error in every variant.
//
// `mutations_and_views` mode after a commit: the alias's value is the
// functional op's result (and after a helper wrote the alias, the root has
// a new buffer), which no longer knew where its elements are in the
// original. (Seed 6134, program 810.)
variants!(overlap_after_commit, overlap_after_commit_f, overlap_after_commit_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0).view([2, 2]);
    let v = b.t();
    v.add_(1.0);
    v.add_(&b);
    b.sum().item()
});
fn fill_first_row(t: &Tensor) {
    t.narrow(0, 0, 1).fill_(9.0);
}
variants!(overlap_after_helper, overlap_after_helper_f, overlap_after_helper_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let v = b.unsqueeze(-1).reshape([2, 2]);
    fill_first_row(&v);
    v.permute([1, 0]).copy_(&b.view([2, 2]));
    b.sum().item()
});
// A collection element with an alias of itself: the element's own check
// (it shares its buffer with another handle) came first. (Seed 6134,
// program 58.)
variants!(overlap_element, overlap_element_f, overlap_element_fv; fn (xs: &mut [Tensor]) {
    xs[0].sub_(xs[0].t());
});
// An indexed op whose source is its target: refused as a full overlap,
// naming the original's layouts. (Seed 6134, program 1874.)
variants!(overlap_indexed_self, overlap_indexed_self_f, overlap_indexed_self_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let v = b.diagonal(0, 0, 1).unsqueeze(-1);
    let ix = Tensor::<i64>::from_vec(vec![1, 0], &[2]);
    v.index_copy_(0, &ix, &v);
    b.sum().item()
});
// An `as_strided` view's copy. (Seed 0x5EED, program 136.)
variants!(overlap_as_strided, overlap_as_strided_f, overlap_as_strided_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0).view([3, 2, 2]);
    let v = b.as_strided([2i64, 1i64], [1i64, 1i64], 5);
    b.add_scaled_(&v, 0.5);
    b.sum().item()
});
// A view whose functionalized strides differ from the original's in dims
// of size 1 only (`[3, 1, 1]` for `[9, 1, 3]`): the copy of the target made
// for the op kept no record. (Seed 0x5EED, program 765.)
variants!(overlap_unit_strides, overlap_unit_strides_f, overlap_unit_strides_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let mut v1 = b.unfold(0, 1, 3).narrow(0, -1, 1).unsqueeze(0);
    v1.view([1, 1, 1, 3, 1]).fill_(-0.75);
    v1.squeeze_dim_(0);
    let v4 = v1.reshape([-1, 1]).narrow(-1, 0, 1).contiguous();
    v1.add_(&v4);
    b.sum().item()
});

// Default mode: an alias updated through a private copy of it (another
// view shared its buffer) keeps that copy as its value after the commit
// (it shows the root's elements, so it is not made again), no longer a view
// of the root's buffer. (Seed 6136, program 1869.)
variants!(overlap_private_alias, overlap_private_alias_f, overlap_private_alias_fv; fn (x0: &Tensor) -> f32 {
    let v1 = x0.view([-1]).select(0, 4).contiguous();
    let v2 = v1.contiguous();
    v1.sigmoid_();
    let _ = &v2;
    x0.add_(&v1);
    x0.sum().item()
});
// The outputs of a multi-output view (`unbind`) as copies. (Seed 6137,
// program 1812.)
variants!(overlap_unbind, overlap_unbind_f, overlap_unbind_fv; fn (x: &Tensor) -> f32 {
    let b = x.mul(1.0);
    let p = b.as_strided([2i64], [1i64], 0).narrow(-1, 0, 1).unbind(0);
    b.unsqueeze(1).reshape([2, 1, 1]).mul_(&p[0]);
    b.sum().item()
});

#[test]
fn regress_overlaps_the_generator_found_panic_alike() {
    type F = fn(&Tensor) -> f32;
    let flat4 = || Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[4]);
    let cases: &[(&str, [F; 3], Tensor)] = &[
        (
            "after_commit",
            [
                overlap_after_commit,
                overlap_after_commit_f,
                overlap_after_commit_fv,
            ],
            flat4(),
        ),
        (
            "after_helper",
            [
                overlap_after_helper,
                overlap_after_helper_f,
                overlap_after_helper_fv,
            ],
            flat4(),
        ),
        (
            "indexed_self",
            [
                overlap_indexed_self,
                overlap_indexed_self_f,
                overlap_indexed_self_fv,
            ],
            iota(&[2, 2]),
        ),
        (
            "as_strided",
            [
                overlap_as_strided,
                overlap_as_strided_f,
                overlap_as_strided_fv,
            ],
            iota(&[12]),
        ),
        (
            "unit_strides",
            [
                overlap_unit_strides,
                overlap_unit_strides_f,
                overlap_unit_strides_fv,
            ],
            iota(&[3, 3]),
        ),
        (
            "private_alias",
            [
                overlap_private_alias,
                overlap_private_alias_f,
                overlap_private_alias_fv,
            ],
            iota(&[9]),
        ),
        (
            "unbind",
            [overlap_unbind, overlap_unbind_f, overlap_unbind_fv],
            iota(&[2]),
        ),
    ];
    let head = |m: &str| {
        m.split(" (written-to:")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    for (name, fs, input) in cases {
        let msgs: Vec<String> = (0..3)
            .map(|v| {
                panic_message(|| {
                    let _ = fs[v](&input.clone());
                })
            })
            .collect();
        assert!(
            msgs[0].contains("refer to a single memory location"),
            "{name}: {}",
            msgs[0]
        );
        for m in &msgs[1..] {
            assert_eq!(head(m), head(&msgs[0]), "{name}");
        }
    }
    let msgs: Vec<String> = (0..3)
        .map(|v| {
            panic_message(|| {
                let mut xs = vec![iota(&[2, 2]), iota(&[2, 2])];
                [overlap_element, overlap_element_f, overlap_element_fv][v](&mut xs);
            })
        })
        .collect();
    assert!(
        msgs[0].contains("refer to a single memory location"),
        "{}",
        msgs[0]
    );
    assert_eq!((&msgs[1], &msgs[2]), (&msgs[0], &msgs[0]), "element");
}

// A write-back through `t()` into a root another handle shares left the
// root's new value transposed (the inverse of `t()` is a view), so its
// layout, and the layouts of its views, were not the original's: a
// `stride()` or `is_contiguous()` read differently, and an overlap check
// compared layouts the original does not have (seed 24301, program 56, a
// false overlap panic). Now the value is laid out again as the original.
variants!(layout_after_transposed_write, layout_after_transposed_write_f, layout_after_transposed_write_fv; fn (x: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    let keep = b.t();
    b.t().add_(1.0);
    let contiguous = if b.is_contiguous() { 1.0f32 } else { 0.0 };
    let strides: Vec<f32> = b.strides().iter().map(|&s| s as f32).collect();
    let v2 = b.narrow(1, 0, 1);
    b.add_(&v2);
    let _ = keep;
    Tensor::from_vec(vec![contiguous, strides[0], strides[1]], &[3]).add(b.sum())
});

#[test]
fn regress_a_write_back_through_a_transpose_keeps_the_roots_layout() {
    check_values(
        "layout_after_transposed_write",
        &[iota(&[4, 4])],
        |v, ins| {
            vec![[
                layout_after_transposed_write,
                layout_after_transposed_write_f,
                layout_after_transposed_write_fv,
            ][v](&ins[0])]
        },
    );
}

// An early `return` inside a `for t in xs.iter_mut()` loop whose value
// reads a mutated `&Tensor` input (`return (x * 1.0, t.clone());`) did not
// compile (E0502 at the attribute): a bare input in the value was taken
// for a move of it, so the inputs were written back first, while `t`
// still borrowed the collection. A `&`/`&mut` input is read by reference;
// only one passed by value is moved. (Seed 6147, program 195.)
variants!(return_in_iter_mut, return_in_iter_mut_f, return_in_iter_mut_fv; fn (x: &Tensor, xs: &mut [Tensor], n: usize) -> (Tensor, Tensor) {
    x.mul_(2.0);
    xs[0].add_(1.0);
    for t in xs.iter_mut() {
        if n == 0 {
            return (x * 1.0f32, t.clone());
        }
    }
    (x * 3.0f32, xs[1].clone())
});

#[test]
fn regress_an_early_return_in_an_iter_mut_loop_reading_a_ref_input_compiles() {
    for n in [0, 1] {
        check_values(
            "return_in_iter_mut",
            &[iota(&[2]), iota(&[2]), iota(&[2])],
            |v, ins| {
                let (x, rest) = ins.split_at_mut(1);
                let (a, b) = [
                    return_in_iter_mut,
                    return_in_iter_mut_f,
                    return_in_iter_mut_fv,
                ][v](&x[0], rest, n);
                vec![a, b]
            },
        );
    }
}

// A `&mut Vec<Tensor>` input given whole to a call the macro cannot see,
// which replaces an element (found 2026-11-29: the exit wrote the new
// element's final value into the caller's old tensor).
#[allow(clippy::ptr_arg)]
fn replace_first(v: &mut Vec<Tensor>, b: Tensor) {
    v[0] = b;
}
#[allow(clippy::ptr_arg)]
fn insert_first(v: &mut Vec<Tensor>, b: Tensor) {
    v.insert(0, b);
}

variants!(regress_replaced, regress_replaced_f, regress_replaced_fv;
fn (xs: &mut Vec<Tensor>, other: Vec<Tensor>) {
    xs[0].add_(1.0);
    replace_first(xs, other[0].clone());
    xs[0].add_(1.0);
});
variants!(regress_moved, regress_moved_f, regress_moved_fv;
fn (xs: &mut Vec<Tensor>, other: Vec<Tensor>) {
    xs[0].add_(1.0);
    insert_first(xs, other[0].clone());
    xs[1].add_(1.0);
});

/// Runs `f` on a one-tensor `Vec` holding 1 (and another holding 10),
/// keeping a handle to the first tensor if `keep`: whether it returned,
/// the kept tensor's values, and the `Vec`'s.
type VecFn = fn(&mut Vec<Tensor>, Vec<Tensor>);
fn run_vec(f: VecFn, keep: bool) -> (bool, Vec<f32>, Vec<Vec<f32>>) {
    let a = Tensor::from_vec(vec![1.0f32], &[1]);
    let kept = keep.then(|| a.shallow_clone());
    let mut xs = vec![a];
    let r = catch_unwind(AssertUnwindSafe(|| {
        f(&mut xs, vec![Tensor::from_vec(vec![10.0f32], &[1])])
    }));
    let seen = kept.map(|k| k.to_vec()).unwrap_or_default();
    (r.is_ok(), seen, xs.iter().map(|t| t.to_vec()).collect())
}

#[test]
fn regress_a_call_that_replaces_an_element_of_a_collection_input_leaves_the_callers_tensor_as_the_original()
 {
    // Replaced: the caller's old tensor keeps the value it had then.
    let want = run_vec(regress_replaced, true);
    assert_eq!(want, (true, vec![2.0], vec![vec![11.0]]));
    for f in [regress_replaced_f as VecFn, regress_replaced_fv] {
        assert_eq!(run_vec(f, true), want);
    }
    // Moved (another slot now holds it): the same when nothing else holds
    // the caller's tensor; a clear panic when something does, since the
    // original goes on updating it at its new place.
    let want = run_vec(regress_moved, false);
    assert_eq!(run_vec(regress_moved, true).1, vec![3.0]);
    for f in [regress_moved_f as VecFn, regress_moved_fv] {
        assert_eq!(run_vec(f, false), want);
        let msg = panic_message(|| {
            let a = Tensor::from_vec(vec![1.0f32], &[1]);
            let _kept = a.shallow_clone();
            f(&mut vec![a], vec![Tensor::from_vec(vec![10.0f32], &[1])]);
        });
        assert!(
            msg.contains("`insert_first(..)` may move the tensors of `xs`"),
            "{msg}"
        );
    }
}

// The same through a list field given by `&mut` (`helper(&mut l.xs)`),
// minimized from seed 6155, program 1564 (2026-11-29): the call was not
// compared, and the exit wrote the new first tensor's value into the
// caller's old one.
pub struct Slots {
    xs: Vec<Tensor>,
}
variants!(regress_field, regress_field_f, regress_field_fv; fn (l: &mut Slots) -> Tensor {
    l.xs[0].add_(1.0);
    replace_first(&mut l.xs, Tensor::from_vec(vec![10.0f32], &[1]));
    l.xs[0].add_(1.0);
    l.xs[0].clone()
});

#[test]
fn regress_a_call_given_a_list_field_that_replaces_an_element_leaves_the_callers_tensor_as_the_original()
 {
    let run = |f: fn(&mut Slots) -> Tensor| {
        let a = Tensor::from_vec(vec![1.0f32], &[1]);
        let kept = a.shallow_clone();
        let mut l = Slots { xs: vec![a] };
        let out = f(&mut l);
        (kept.to_vec(), l.xs[0].to_vec(), out.to_vec())
    };
    let want = run(regress_field);
    assert_eq!(want, (vec![2.0], vec![11.0], vec![11.0]));
    assert_eq!(run(regress_field_f), want);
    assert_eq!(run(regress_field_fv), want);
}

// A loop variable over a collection input's elements given to a call that
// replaces the element (`for t in l.xs.iter_mut() { replace_scaled(t) }`),
// found by the generator (seed 6170, program 1628, 2026-11-29): the call
// was not compared, and the exit wrote the new element's value into the
// caller's old tensor. Now the slot the loop variable's address names is
// retired as for `helper(&mut xs[i])`.
fn replace_scaled(t: &mut Tensor) {
    *t = t.mul(10.0);
}
variants!(regress_loop_field, regress_loop_field_f, regress_loop_field_fv; fn (l: &mut Slots) -> Tensor {
    l.xs[0].add_(1.0);
    for t in l.xs.iter_mut() {
        replace_scaled(t);
    }
    l.xs[0].add_(1.0);
    l.xs[1].clone()
});
variants!(regress_loop_slice, regress_loop_slice_f, regress_loop_slice_fv; fn (xs: &mut [Tensor], gs: &[Tensor]) {
    for (t, g) in xs.iter_mut().zip(gs.iter()) {
        t.sub_(g);
        if t.sum().item() > 2.5 {
            replace_scaled(&mut *t);
        }
        t.add_(1.0);
    }
});

#[test]
fn regress_a_call_that_replaces_a_loop_variables_element_leaves_the_callers_tensor_as_the_original()
{
    let run = |f: fn(&mut Slots) -> Tensor| {
        let a = Tensor::from_vec(vec![1.0f32], &[1]);
        let b = Tensor::from_vec(vec![3.0f32], &[1]);
        let kept = (a.shallow_clone(), b.shallow_clone());
        let mut l = Slots { xs: vec![a, b] };
        let out = f(&mut l);
        let now: Vec<Vec<f32>> = l.xs.iter().map(|t| t.to_vec()).collect();
        (kept.0.to_vec(), kept.1.to_vec(), now, out.to_vec())
    };
    let want = run(regress_loop_field);
    // The caller's old tensors keep what they had when replaced; its list
    // holds the new ones.
    assert_eq!(
        want,
        (
            vec![2.0],
            vec![3.0],
            vec![vec![21.0], vec![30.0]],
            vec![30.0]
        )
    );
    assert_eq!(run(regress_loop_field_f), want);
    assert_eq!(run(regress_loop_field_fv), want);

    let run = |f: fn(&mut [Tensor], &[Tensor])| {
        let gs = [0.5f32, 0.5, 0.5].map(|v| Tensor::from_vec(vec![v], &[1]));
        kept_and_now(&[1.0, 4.0, 2.0], |xs| f(xs, &gs))
    };
    let want = run(regress_loop_slice);
    // Only the middle element (3.5 after `sub_`) is replaced: its caller's
    // tensor keeps 3.5; the others are updated in place.
    assert_eq!(
        want,
        (
            vec![vec![1.5], vec![3.5], vec![2.5]],
            vec![vec![1.5], vec![36.0], vec![2.5]]
        )
    );
    assert_eq!(run(regress_loop_slice_f), want);
    assert_eq!(run(regress_loop_slice_fv), want);
}

/// Calls `f` on one-element tensors of `values`: the values the caller's
/// tensors hold afterwards (handles kept before the call), and those its
/// slots then hold.
fn kept_and_now(values: &[f32], f: impl FnOnce(&mut [Tensor])) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let mut xs: Vec<Tensor> = values
        .iter()
        .map(|&v| Tensor::from_vec(vec![v], &[1]))
        .collect();
    let kept: Vec<Tensor> = xs.iter().map(|t| t.shallow_clone()).collect();
    f(&mut xs);
    let values = |ts: &[Tensor]| ts.iter().map(|t| t.to_vec()).collect();
    (values(&kept), values(&xs))
}

// The same through a method the macro does not know, on the loop variable
// (`t.reset()`) or on an element (`xs[1].reset()`), which may replace
// `*self`: both wrote the new value into the caller's old tensor too.
pub trait Reset {
    fn reset(&mut self);
}
impl Reset for Tensor {
    fn reset(&mut self) {
        *self = self.mul(10.0);
    }
}
variants!(regress_loop_recv, regress_loop_recv_f, regress_loop_recv_fv; fn (xs: &mut [Tensor]) {
    xs[0].add_(1.0);
    for t in xs.iter_mut() {
        t.reset();
    }
    xs[1].add_(1.0);
});
variants!(regress_slot_recv, regress_slot_recv_f, regress_slot_recv_fv; fn (xs: &mut [Tensor]) {
    xs[0].add_(1.0);
    xs[1].reset();
    xs[1].add_(1.0);
});

#[test]
fn regress_a_method_that_replaces_self_on_a_loop_variable_or_an_element_leaves_the_callers_tensor_as_the_original()
 {
    type F = fn(&mut [Tensor]);
    let run = |f: F| kept_and_now(&[1.0, 2.0], f);
    // The caller's tensors keep 2.0 (the first after its `add_`); the
    // slots hold the replacements.
    for (original, variants, slots) in [
        (
            regress_loop_recv as F,
            [regress_loop_recv_f as F, regress_loop_recv_fv],
            [20.0, 21.0],
        ),
        (
            regress_slot_recv,
            [regress_slot_recv_f, regress_slot_recv_fv],
            [2.0, 21.0],
        ),
    ] {
        let want = run(original);
        assert_eq!(
            want,
            (vec![vec![2.0], vec![2.0]], slots.map(|v| vec![v]).to_vec())
        );
        for f in variants {
            assert_eq!(run(f), want);
        }
    }
}

// An in-place op on a view chain with a step that may copy (`flatten` of
// a permuted view), whose argument mutates the root through a helper
// (`v.flatten().add_(bump(x))`), found by the generator (seed 6172,
// program 1970, 2026-11-29): the argument was evaluated before the chain
// (to let the views see its change), so the copy saw the bump the
// original's copy, made first, does not. Now such a chain is made first,
// as the original makes it.
fn bump_all(t: &Tensor) -> f32 {
    t.add_(1.0);
    0.5
}
variants!(regress_copy_step, regress_copy_step_f, regress_copy_step_fv; fn (x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2).permute([1, 0]);
    v.flatten().add_(bump_all(x))
});
variants!(regress_view_step, regress_view_step_f, regress_view_step_fv; fn (x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2);
    v.flatten().add_(bump_all(x))
});

#[test]
fn regress_an_argument_that_mutates_the_root_runs_after_a_chain_step_that_may_copy() {
    let run = |f: fn(&Tensor) -> Tensor| {
        let x = iota(&[3, 2]);
        let out = f(&x);
        (out.to_vec(), x.to_vec())
    };
    for (o, fs) in [
        (
            regress_copy_step as fn(&Tensor) -> Tensor,
            [
                regress_copy_step_f as fn(&Tensor) -> Tensor,
                regress_copy_step_fv,
            ],
        ),
        (
            regress_view_step,
            [regress_view_step_f, regress_view_step_fv],
        ),
    ] {
        let want = run(o);
        for (f, mode) in fs.into_iter().zip(["views", "copies"]) {
            assert_eq!(run(f), want, "{mode} mode");
        }
    }
    // The copy is made before the bump; the view sees it.
    let (x0, x1) = (iota(&[3, 2]).to_vec(), iota(&[3, 2]).add(1.0).to_vec());
    let copied: Vec<f32> = [0, 2, 1, 3].iter().map(|&i| x0[i] + 0.5).collect();
    assert_eq!(run(regress_copy_step), (copied, x1.clone()));
    let viewed: Vec<f32> = x1[..4].iter().map(|v| v + 0.5).collect();
    let mut after = viewed.clone();
    after.extend_from_slice(&x1[4..]);
    assert_eq!(run(regress_view_step), (viewed, after));
}

// The same through iterator adaptors that yield the collection's own
// elements (`rev()`, `skip(n)`, `take(n)`, `step_by(n)`): their loop
// variables were not known as elements, so a call replacing one was not
// compared either (found by hand after the loop-variable fix).
variants!(regress_adapted_loop, regress_adapted_loop_f, regress_adapted_loop_fv; fn (xs: &mut [Tensor], n: usize) -> Tensor {
    xs[0].add_(1.0);
    for t in xs.iter_mut().rev().skip(1) {
        t.mul_(2.0);
    }
    for t in xs.iter_mut().step_by(2).take(n) {
        replace_scaled(t);
    }
    let mut s = Tensor::zeros(&[1]);
    for t in xs.iter().rev() {
        s.add_(t);
    }
    s
});

#[test]
fn regress_a_call_that_replaces_an_element_through_an_iterator_adaptor_leaves_the_callers_tensor_as_the_original()
 {
    type F = fn(&mut [Tensor], usize) -> Tensor;
    for n in 0..3 {
        let run = |f: F| {
            let mut out = Vec::new();
            let (kept, now) = kept_and_now(&[1.0, 2.0, 3.0], |xs| out = f(xs, n).to_vec());
            (kept, now, out)
        };
        let want = run(regress_adapted_loop);
        assert_eq!(run(regress_adapted_loop_f as F), want, "n = {n}");
        assert_eq!(run(regress_adapted_loop_fv as F), want, "n = {n}");
        if n == 2 {
            // Elements 0 and 2 replaced: the caller's keep 4 and 3.
            assert_eq!(
                want,
                (
                    vec![vec![4.0], vec![4.0], vec![3.0]],
                    vec![vec![40.0], vec![4.0], vec![30.0]],
                    vec![74.0]
                )
            );
        }
    }
}

// `select` windows written through the runtime's direct path (a window of
// a root no one else holds, made without `Tensor::select`): negative
// indices, a middle dimension of a 3-d root, a 1-d root's 0-d element, an
// input and a local, in a loop and once.
variants!(select_windows, select_windows_f, select_windows_fv; fn (x: &mut Tensor, y: &Tensor, n: i64) -> Tensor {
    let b = y.mul(1.0);
    for i in 0..n {
        b.select(1, i).mul_(2.0);
        x.select(0, -1 - i).add_(b.select(1, i).select(0, 1));
    }
    b.select(-1, -2).sub_(0.5);
    let v = x.flatten();
    v.select(0, 3).fill_(-7.0);
    x.select(0, 0).select(0, 1).copy_(&b.select(0, 1).select(0, 0).select(0, 2));
    b
});

#[test]
fn select_windows_direct_path() {
    // With a trace recording (as `check` runs them) windows take the
    // traced path; without one, the direct path. Both against the original.
    check(
        "select_windows",
        &[iota(&[3, 4]), iota(&[2, 3, 4])],
        |v, x| {
            let (a, b) = x.split_at_mut(1);
            vec![[select_windows, select_windows_f, select_windows_fv][v](
                &mut a[0], &b[0], 3,
            )]
        },
    );
    let y = iota(&[2, 3, 4]);
    let run = |f: fn(&mut Tensor, &Tensor, i64) -> Tensor| {
        let mut x = iota(&[3, 4]);
        let out = f(&mut x, &y, 3);
        (x.to_vec(), out.shape().to_vec(), out.to_vec())
    };
    let want = run(select_windows);
    assert_eq!(run(select_windows_f), want, "views mode");
    assert_eq!(run(select_windows_fv), want, "copies mode");
}
