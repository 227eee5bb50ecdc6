//! Calls and macros `#[functionalize]` cannot see into, handed a tensor it
//! tracks: each is watched (the storage's version says whether it wrote
//! the tensor, its use count whether it kept a handle), against the
//! unannotated original (`common::check_values`).
//!
//! Each shape here gave a silently different value before (found probing
//! the external-macro hole left open in the previous closing note).

mod common;

use common::{check_values, iota};
use funcz::Tensor;

fn bump_ref(t: &Tensor) {
    t.add_(1.0);
}

fn bump_owned(t: Tensor) {
    t.add_(1.0);
}

fn bump_mut(t: &mut Tensor) {
    t.add_(1.0);
}

fn pick<'a>(a: &'a Tensor, _b: &'a Tensor) -> &'a Tensor {
    a
}

fn first_two(t: &Tensor) -> Tensor {
    t.narrow(0, 0, 2)
}

macro_rules! bump {
    ($t:expr) => {
        $t.add_(1.0)
    };
}

macro_rules! bump_via_helper {
    ($t:expr) => {
        bump_ref(&$t)
    };
}

macro_rules! reset {
    ($t:ident) => {
        $t = Tensor::zeros(&[4])
    };
}

macro_rules! view_of {
    ($y:ident, $x:expr) => {
        let $y = $x.narrow(0, 0, 2);
    };
}

fn run(name: &str, f: [fn(&Tensor) -> Tensor; 3]) {
    check_values(name, &[iota(&[4])], |v, x| vec![f[v](&x[0])]);
}

/// Runs the functionalized variants of `f`, which must panic with a
/// message containing `expected` (the original runs).
fn panics(f: [fn(&Tensor) -> Tensor; 3], expected: &str) {
    f[0](&iota(&[4]));
    for g in &f[1..] {
        let err = std::panic::catch_unwind(|| g(&iota(&[4]))).expect_err("panics");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains(expected), "{msg}");
    }
}

variants!(macro_local, macro_local_f, macro_local_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    bump!(b);
    &v + 0.0
});

#[test]
fn a_macro_that_writes_a_local_its_view_sees_it() {
    run("macro_local", [macro_local, macro_local_f, macro_local_fv]);
}

variants!(macro_input, macro_input_f, macro_input_fv; fn (x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2);
    bump!(x);
    &v + 0.0
});

#[test]
fn a_macro_that_writes_an_input_its_view_and_the_caller_see_it() {
    run("macro_input", [macro_input, macro_input_f, macro_input_fv]);
}

variants!(macro_helper, macro_helper_f, macro_helper_fv; fn (x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2);
    bump_via_helper!(x);
    let w = x.narrow(0, 1, 2);
    bump_via_helper!(w);
    &v + 0.0
});

#[test]
fn a_macro_that_writes_its_argument_through_a_helper() {
    run(
        "macro_helper",
        [macro_helper, macro_helper_f, macro_helper_fv],
    );
}

variants!(macro_view, macro_view_f, macro_view_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    bump!(v);
    bump!(b.narrow(0, 2, 2));
    let s = bump!(b.narrow(0, 1, 1)).sum();
    &b + &s
});

#[test]
fn a_macro_that_writes_a_view_reaches_its_root() {
    run("macro_view", [macro_view, macro_view_f, macro_view_fv]);
}

variants!(moved_view, moved_view_f, moved_view_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    bump_owned(b.narrow(0, 0, 2));
    bump_owned(b.shallow_clone());
    &b + 0.0
});

#[test]
fn a_view_moved_into_a_helper_is_written_back() {
    run("moved_view", [moved_view, moved_view_f, moved_view_fv]);
}

variants!(moved_root, moved_root_f, moved_root_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    bump_owned(b);
    &v + 0.0
});

#[test]
fn a_root_moved_into_a_helper_its_views_see_the_write() {
    run("moved_root", [moved_root, moved_root_f, moved_root_fv]);
}

// Panics: the original's later reads of a handle the macro cannot follow.

variants!(kept_view, kept_view_f, kept_view_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let y = first_two(&b);
    b.add_(1.0);
    &y + 0.0
});

#[test]
fn a_helper_that_returns_a_view_of_a_tensor_written_later_panics() {
    panics(
        [kept_view, kept_view_f, kept_view_fv],
        "`first_two(..)` kept a handle on `b`",
    );
}

variants!(macro_let, macro_let_f, macro_let_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    view_of!(y, b);
    b.add_(1.0);
    &y + 0.0
});

#[test]
fn a_macro_that_binds_a_view_of_a_tensor_written_later_panics() {
    panics(
        [macro_let, macro_let_f, macro_let_fv],
        "`view_of!(..)` kept a handle on `b`",
    );
}

variants!(macro_reset, macro_reset_f, macro_reset_fv; fn (x: &Tensor) -> Tensor {
    let mut b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    b.add_(1.0);
    reset!(b);
    b.add_(1.0);
    &v + &b.sum()
});

#[test]
fn a_macro_that_replaces_a_tensor_with_live_views_panics() {
    panics(
        [macro_reset, macro_reset_f, macro_reset_fv],
        "replaced the tensor `b` holds",
    );
}

variants!(macro_reset_alone, macro_reset_alone_f, macro_reset_alone_fv; fn (x: &Tensor) -> Tensor {
    let mut b = x.add(0.0);
    b.add_(1.0);
    reset!(b);
    b.add_(1.0);
    b
});

#[test]
fn a_macro_that_replaces_a_tensor_without_views() {
    run(
        "macro_reset_alone",
        [macro_reset_alone, macro_reset_alone_f, macro_reset_alone_fv],
    );
}

// A kept handle on a tensor nothing writes afterwards is harmless, and a
// handle in a discarded result is not kept.
variants!(kept_harmless, kept_harmless_f, kept_harmless_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    b.add_(1.0);
    let y = first_two(&b);
    first_two(&b);
    &y + &b.sum()
});

#[test]
fn a_kept_handle_nothing_writes_afterwards_is_allowed() {
    run(
        "kept_harmless",
        [kept_harmless, kept_harmless_f, kept_harmless_fv],
    );
}

// A name bound to a reference (`let w = &v;`) handed on to a helper: copies
// mode lost the helper's write to the view (the name was not seen as a
// borrow of `v`). (`let e = &mut c;` is refused: funcz-ui's
// mut_ref_binding, whose help is the `bump_mut(&mut c)` here.)
variants!(ref_name, ref_name_f, ref_name_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    let w = &v;
    bump_ref(w);
    let mut c = x.add(0.0);
    let d = c.narrow(0, 1, 2);
    bump_mut(&mut c);
    &b + &(&d + 0.0).sum()
});

#[test]
fn a_reference_name_passed_on() {
    run("ref_name", [ref_name, ref_name_f, ref_name_fv]);
}

// A call returning a reference (`-> &Tensor`) to a tensor of the function,
// then mutated: E0596 at the attribute before; now the variable holds its
// own handle, which the freshness check refuses (it is `b`'s storage).
variants!(returned_ref, returned_ref_f, returned_ref_fv; fn (x: &Tensor) -> Tensor {
    let b = x.add(0.0);
    let v = b.narrow(0, 0, 2);
    let r = pick(&b, x);
    r.add_(1.0);
    &v + 0.0
});

#[test]
fn a_returned_reference_mutated_panics_instead_of_failing_to_compile() {
    panics(
        [returned_ref, returned_ref_f, returned_ref_fv],
        "`r` comes from a call #[functionalize] cannot see into",
    );
}

macro_rules! note {
    ($fmt:literal) => {
        format!($fmt)
    };
}

// A format string inside an unknown macro capturing a mutated input is
// refused (funcz-ui/tests/ui/capture_in_opaque_macro.rs); its help's form
// reads the current value.
variants!(captured, captured_f, captured_fv; fn (x: &Tensor) -> Tensor {
    let v = x.narrow(0, 0, 2);
    v.add_(1.0);
    let x_now = x.clone();
    let text = note!("{x_now:?}");
    Tensor::from_vec(vec![text.len() as f32], &[1]) + &x.sum()
});

#[test]
fn the_help_for_a_captured_tensor_works() {
    run("captured", [captured, captured_f, captured_fv]);
}

// An element removed from an input collection and then mutated: the
// caller's other handle of it sees the mutation in the original, which the
// functionalized function cannot write back, so the freshness check
// refuses it at run time, pointing at the function (`#[track_caller]`),
// and its help names the forms that work.
#[funcz::functionalize]
fn removed_then_mutated(xs: &mut Vec<Tensor>) -> Tensor {
    let x = xs.remove(0);
    x.add_(1.0);
    x
}

#[test]
fn a_removed_element_mutated_panics_at_the_function_with_a_help() {
    let a = iota(&[2]);
    let mut xs = vec![a.shallow_clone(), iota(&[2])];
    let location = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = location.clone();
    let me = std::thread::current().id();
    let old = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // (Only this test's thread: the others run beside it.)
        if std::thread::current().id() == me
            && let Some(l) = info.location()
        {
            *seen.lock().unwrap() = l.file().to_string();
        }
    }));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        removed_then_mutated(&mut xs)
    }));
    std::panic::set_hook(old);
    let msg = r.expect_err("refused at run time");
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("`x` comes from a call #[functionalize] cannot see into"),
        "{msg}"
    );
    assert!(
        msg.contains("`x: &mut Tensor`") && msg.contains("`.clone()`"),
        "{msg}"
    );
    assert_eq!(*location.lock().unwrap(), file!());
    // Without another handle, the original's values.
    let mut xs = vec![iota(&[2]), iota(&[2])];
    assert_eq!(removed_then_mutated(&mut xs).to_vec(), vec![1.0, 2.0]);
    assert_eq!(xs.len(), 1);
}
