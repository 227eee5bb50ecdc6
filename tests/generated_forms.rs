//! The shapes of generated code that keep expansions small (issue 11,
//! item 9), each against the unannotated original (`common::check`):
//!
//! - an in-place op on a tracked tensor is the user's own call between
//!   `rt::own_*` and the commit; when another handle shares the buffer,
//!   `own_*` makes a private copy first, and the other handle must not see
//!   the write;
//! - a view bound by a plain `let` is not synced before a use that no
//!   statement since its `let` could have made stale; every way a root can
//!   change in between must still sync it.

mod common;

use common::{check, check_values, iota};
use funcz::Tensor;

// A shallow clone (another handle on the root's buffer) held while the
// root is updated in place: the update goes to a private copy.
variants!(shared_root, shared_root_f, shared_root_fv; fn (x: &Tensor) -> Tensor {
    let y = x.add(1.0);
    let keep = y.shallow_clone();
    y.mul_(2.0);
    let k = keep.sum();
    &y + &k
});

#[test]
fn an_update_of_a_shared_root_leaves_the_other_handle_as_the_original_does() {
    check("shared_root", &[iota(&[2, 3])], |v, x| {
        vec![[shared_root, shared_root_f, shared_root_fv][v](&x[0])]
    });
}

// A view written while a second view of the same root is alive: the first
// write cannot go through the shared buffer (the second view would see it
// early in views mode), so the view is made private and scattered back.
variants!(two_views, two_views_f, two_views_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    let w = b.narrow(0, 1, 2);
    v.mul_(10.0);
    w.add_(1.0);
    let r = &v + &w;
    r.add_(b.sum())
});

#[test]
fn a_view_updated_while_another_view_shares_the_root() {
    check("two_views", &[iota(&[4, 2])], |v, x| {
        vec![[two_views, two_views_f, two_views_fv][v](&x[0])]
    });
}

// An element of a collection input shared with another element (the same
// storage twice in the caller's Vec): each update goes to a private copy.
variants!(shared_elems, shared_elems_f, shared_elems_fv; fn (xs: &mut [Tensor]) {
    xs[0].add_(1.0);
    xs[1].mul_(3.0);
});

#[test]
fn elements_of_a_collection_input_updated_in_place() {
    check("shared_elems", &[iota(&[3]), iota(&[3])], |v, x| {
        [shared_elems, shared_elems_f, shared_elems_fv][v](x);
        vec![]
    });
    // The caller's two elements are one storage: refused at entry, before
    // anything is written (updating private copies would lose one write).
    for v in [1, 2] {
        let a = iota(&[3]);
        let mut xs = vec![a.shallow_clone(), a.shallow_clone()];
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            [shared_elems, shared_elems_f, shared_elems_fv][v](&mut xs)
        }))
        .expect_err("refused");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("`xs[0]` and `xs[1]` share storage"), "{msg}");
        assert_eq!(a.to_vec(), iota(&[3]).to_vec(), "nothing written");
    }
}

// An argument that reads the receiver (`x.mul_(&x)`-like) keeps the old
// form: its arguments are evaluated before the update.
variants!(self_arg, self_arg_f, self_arg_fv; fn (x: &mut Tensor) -> Tensor {
    x.add_(x.mean());
    x.mul_(&*x);
    let v = x.narrow(0, 0, 1);
    v.sub_(v.sum());
    x.clone()
});

#[test]
fn arguments_that_read_the_receiver_see_its_value_before_the_op() {
    check("self_arg", &[iota(&[3, 2])], |v, x| {
        vec![[self_arg, self_arg_f, self_arg_fv][v](&mut x[0])]
    });
}

/// Changes `t` through a reference the macro does not see into.
fn helper_add(t: &Tensor) {
    t.add_(100.0);
}

// The root changes between the view's `let` and its use in each of the
// ways a statement can change it: an in-place op on the root, through
// another view, in a nested block, in a loop, through a helper, by
// assignment. Every use must see the change.
variants!(stale_views, stale_views_f, stale_views_fv; fn (x: &Tensor, n: usize) -> Tensor {
    let b = x.add(0.0);
    let v1 = b.narrow(0, 0, 1);
    b.mul_(2.0);
    let s1 = v1.sum();
    let v2 = b.select(0, 1);
    let other = b.narrow(0, 1, 1);
    other.add_(5.0);
    let s2 = v2.sum();
    let v3 = b.narrow(0, 2, 1);
    {
        b.sub_(1.0);
    }
    let s3 = v3.sum();
    let v4 = b.narrow(1, 0, 1);
    for _ in 0..n {
        b.add_(0.5);
    }
    let s4 = v4.sum();
    let v5 = b.narrow(1, 1, 1);
    helper_add(&b);
    let s5 = v5.sum();
    let v6 = b.narrow(0, 0, 2);
    if n > 1 {
        b.neg_();
    }
    v6.mul_(3.0);
    let s6 = v6.sum();
    let mut c = x.add(1.0);
    let v7 = c.narrow(0, 0, 1);
    c = x.add(2.0);
    let s7 = v7.sum() + c.sum();
    Tensor::stack(&[s1, s2, s3, s4, s5, s6, s7], 0).add(b.sum())
});

#[test]
fn views_bound_by_let_see_every_later_change_of_their_root() {
    for n in [0, 3] {
        // (The helper's own `add_` stays in the trace: values only.)
        check_values("stale_views", &[iota(&[3, 2])], |v, x| {
            vec![[stale_views, stale_views_f, stale_views_fv][v](&x[0], n)]
        });
    }
}

// A `while` condition reads a view the body changes through its root:
// the condition runs before every iteration and must see each change.
variants!(while_view, while_view_f, while_view_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 1);
    while v.sum().item() < 40.0 {
        b.add_(3.0);
    }
    b
});

#[test]
fn a_while_condition_sees_the_changes_of_the_loop_body() {
    check("while_view", &[iota(&[2, 2])], |v, x| {
        vec![[while_view, while_view_f, while_view_fv][v](&x[0])]
    });
}

// A closure that changes the root when it is called (after the view's
// `let`, from a statement that does not name the root): with a closure in
// the body, every use is synced.
variants!(closure_root, closure_root_f, closure_root_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let bump = |t: &Tensor| helper_add(t);
    let v = b.narrow(0, 0, 1);
    bump(&b);
    v.sum()
});

#[test]
fn a_closure_called_between_let_and_use() {
    check_values("closure_root", &[iota(&[2, 2])], |v, x| {
        vec![[closure_root, closure_root_f, closure_root_fv][v](&x[0])]
    });
}

// A long chain of in-place ops on an input (split into statements and
// fused in runs by both passes): the values are the original's.
variants!(long_chain, long_chain_f, long_chain_fv; fn (x: &mut Tensor, w: &Tensor) -> Tensor {
    x.add_(1.0).mul_(0.5).sub_(w).div_(2.0).add_(1.0).mul_(0.5).sub_(w).div_(2.0)
        .add_(1.0).mul_(0.5).sub_(w).div_(2.0).add_(1.0).mul_(0.5).sub_(w).div_(2.0)
        .add_(1.0).mul_(0.5).sub_(w).div_(2.0).add_(1.0).mul_(0.5).sub_(w).div_(2.0)
        .add_(1.0).mul_(0.5).sub_(w).div_(2.0).add_(1.0).mul_(0.5).sub_(w).div_(2.0)
        .add_(1.0).mul_(0.5).sub_(w).div_(2.0).add_(1.0).mul_(0.5).sub_(w).div_(2.0);
    x.sum()
});

#[test]
fn a_chain_longer_than_a_fused_run() {
    check("long_chain", &[iota(&[2, 3]), iota(&[3])], |v, x| {
        let (a, b) = x.split_at_mut(1);
        vec![[long_chain, long_chain_f, long_chain_fv][v](
            &mut a[0], &b[0],
        )]
    });
}

/// Changes `t` through a shared reference and returns a scalar.
fn bump_and_one(t: &Tensor) -> f32 {
    t.add_(10.0);
    1.0
}

// An argument of an in-place op on a view changes the view's root through
// a helper (the op must see the change, as the original's view does). In
// copies mode the op ran on the view's value from before the call: the
// helper's write to the window was lost (found while checking sync
// elision; the code before it did the same).
variants!(arg_changes_root, arg_changes_root_f, arg_changes_root_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    v.add_(bump_and_one(&b));
    v.mul_(2.0);
    // Through another view of the same root.
    let w = b.narrow(0, 1, 2);
    v.add_(bump_and_one(&w));
    v.sub_(1.0);
    b
});

#[test]
fn an_argument_that_changes_the_root_of_the_view_it_updates() {
    check_values("arg_changes_root", &[iota(&[3, 2])], |v, x| {
        vec![[arg_changes_root, arg_changes_root_f, arg_changes_root_fv][v](&x[0])]
    });
}

// The same through an argument that also names the receiver's collection
// (`p[1].add_(f(&p[0]))`): the macro cannot evaluate it first (a borrow of
// the collection may be alive), so a receiver that went stale is a panic
// naming the op, never a stale value (a view that still shows the root's
// buffer runs the op).
variants!(arg_names_receiver, arg_names_receiver_f, arg_names_receiver_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let p = b.chunk(2, 0);
    p[1].add_(bump_and_one(&p[0]));
    b
});

#[test]
fn an_argument_that_changes_the_receivers_root_and_names_it() {
    let x = iota(&[4, 2]);
    let want = arg_names_receiver(&x).to_vec();
    let mut refused = 0;
    for f in [arg_names_receiver_f, arg_names_receiver_fv] {
        match std::panic::catch_unwind(|| f(&x)) {
            Ok(got) => assert_eq!(got.to_vec(), want),
            Err(err) => {
                let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
                assert!(
                    msg.contains("funcz: add_: an argument of this in-place op changed"),
                    "{msg}"
                );
                refused += 1;
            }
        }
    }
    // Copies mode always refuses: its chunk is a copy.
    assert!(refused >= 1);
}

/// The `help:` of the refusal `tensor_in_local_macro`
/// (funcz-ui/tests/ui/tensor_in_local_macro.rs): the macro's tensor code
/// in a helper function given the tensor.
fn bump_by_one(t: &Tensor) {
    t.add_(1.0);
}

variants!(local_macro_help, local_macro_help_f, local_macro_help_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 1);
    bump_by_one(&b);
    v.sum()
});

#[test]
fn the_help_of_a_refused_local_macro_works() {
    check_values("local_macro_help", &[iota(&[3, 2])], |v, x| {
        vec![[local_macro_help, local_macro_help_f, local_macro_help_fv][v](&x[0])]
    });
}
