//! Roots held in an `rt::Var` (a root's value and state in one local of
//! the generated code) and the roots kept out of one: each form runs the
//! original and both functionalized variants and compares values, final
//! inputs and trace purity (`common::check`).

mod common;

use common::{check, check_values, iota};
use funcz::Tensor;

// A `&mut` input the body mutates, then reads as the receiver of a `&self`
// op whose argument reads it again: the receiver is `v.value`, not a
// mutable borrow of it (`(&mut v.value).mul(&v.value)` does not compile).
variants!(recv_orig, recv_f, recv_fv; fn (x: &mut Tensor) -> Tensor {
    x.add_(1.0);
    let y = x.mul(&*x);
    x.narrow(0, 0, 2).mul_(3.0);
    y.add(&*x)
});

#[test]
fn a_mutated_mut_input_read_as_a_receiver_with_itself_as_argument() {
    check("recv", &[iota(&[4])], |v, ins| {
        let f = [recv_orig, recv_f, recv_fv][v];
        vec![f(&mut ins[0])]
    });
}

// A root a macro assigns by name (`$t:ident` patterns want a name, not
// `b.value`): kept as two locals.
macro_rules! reset {
    ($t:ident) => {
        $t = Tensor::zeros(&[4])
    };
}

variants!(named_orig, named_f, named_fv; fn (x: &Tensor) -> Tensor {
    let mut b = x.add(1.0);
    b.mul_(2.0);
    let before = b.sum();
    reset!(b);
    b.add_(5.0);
    &b + &before
});

#[test]
fn a_root_a_macro_assigns_by_name_keeps_its_name() {
    check("named", &[iota(&[4])], |v, ins| {
        let f = [named_orig, named_f, named_fv][v];
        vec![f(&ins[0])]
    });
}

// A root passed by value, mutated through a view and re-laid-out in
// place (its hidden base and the `Var`'s state as a view of it).
variants!(owned_orig, owned_f, owned_fv; fn (mut x: Tensor, w: &Tensor) -> Tensor {
    let r = x.select(0, 1);
    r.add_(w);
    x.t_();
    x.select(0, 0).mul_(-1.0);
    x.add_(0.5);
    &x.sum() + &r
});

#[test]
fn a_by_value_input_mutated_through_a_view_and_transposed() {
    check("owned", &[iota(&[3, 2]), iota(&[2])], |v, ins| {
        let f = [owned_orig, owned_f, owned_fv][v];
        vec![f(ins[0].clone(), &ins[1])]
    });
}

// A local root assigned a new value after its views were made, then
// mutated through a fresh view: the `Var` is rebound in place
// (`b.value = ..; b.state.rebind(..)`).
variants!(assign_orig, assign_f, assign_fv; fn (x: &Tensor) -> Tensor {
    let mut b = x.mul(2.0);
    let v = b.narrow(0, 0, 2);
    v.add_(1.0);
    let kept = v.sum();
    b = x.add(10.0);
    let u = b.narrow(0, 2, 2);
    u.sub_(3.0);
    &(&b + &kept) + &v.sum()
});

#[test]
fn a_root_reassigned_after_its_views_then_mutated_again() {
    check("assign", &[iota(&[4])], |v, ins| {
        let f = [assign_orig, assign_f, assign_fv][v];
        vec![f(&ins[0])]
    });
}

// Aliases bound by a `let` with a state are `rt::Var`s too: a view read
// by a format capture (`{v:?}`: passed as `v = v.value`), an in-place
// op's result bound by a `let` and mutated again, and a view named in a
// macro that may write it (kept as two locals).
macro_rules! bump {
    ($t:ident) => {
        $t.add_(100.0)
    };
}

variants!(alias_orig, alias_f, alias_fv; fn (x: &Tensor) -> (Tensor, String) {
    let b = x.mul(1.0);
    let v = b.narrow(0, 0, 2);
    v.add_(1.0);
    let shown = format!("{v:?}");
    let c = b.narrow(0, 2, 2).mul_(3.0);
    c.sub_(1.0);
    let w = b.narrow(0, 1, 2);
    bump!(w);
    w.mul_(-1.0);
    (&(&b + &c.sum()) + &v.sum(), shown)
});

#[test]
fn aliases_bound_as_vars_read_written_and_named_in_macros() {
    let x = iota(&[4]);
    let (o, so) = alias_orig(&x);
    for (f, name) in [
        (alias_f as fn(&Tensor) -> (Tensor, String), "f"),
        (alias_fv, "fv"),
    ] {
        let (t, s) = f(&x);
        assert_eq!(
            (t.to_vec(), t.shape().to_vec()),
            (o.to_vec(), o.shape().to_vec()),
            "{name}"
        );
        assert_eq!(s, so, "{name}: the format capture shows the view");
    }
    // (`bump!`'s own `add_` stays in the trace: values only.)
    check_values("alias", &[iota(&[4])], |v, ins| {
        let f = [alias_orig, alias_f, alias_fv][v];
        vec![f(&ins[0]).0]
    });
}
