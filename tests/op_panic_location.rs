//! An in-place op's or a view's panic in a functionalized function points
//! at the user's line, as it does in the original: the generated call
//! passes the user's arguments in the user's own parentheses (a
//! `#[track_caller]` op's location is the span from the method's name to
//! the closing parenthesis; parentheses the macro made put it at the
//! attribute), a runtime call that makes a view is spanned at the user's
//! view method and `#[track_caller]` down to the view op, and an operand
//! the lowering rewrites keeps the user's span on parentheses around it. A
//! fused run of in-place ops reports its first op's line (one call runs
//! them all; its steps repeat their ops' shape checks from
//! `#[track_caller]` code).
//!
//! Each op that panics below ends its line with a `// at: NAME` marker
//! (or follows a `// at the next line: NAME` line, where rustfmt would
//! move the marker); the test finds that line in this file's source.

#[path = "support/panic_at.rs"]
mod panic_at;

use funcz::Tensor;
use panic_at::panic_of;

/// The line of this file that ends with `// at: {name}`, or follows the
/// line `// at the next line: {name}`.
fn marked_line(name: &str) -> u32 {
    let marker = format!("// at: {name}");
    let before = format!("// at the next line: {name}");
    let lines: Vec<usize> = include_str!("op_panic_location.rs")
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let l = l.trim_end();
            if l.ends_with(&marker) {
                Some(i + 1)
            } else if l.trim_start() == before {
                Some(i + 2)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(lines.len(), 1, "one line is marked `{marker}`");
    lines[0] as u32
}

/// Asserts that `f` panics with a message containing each of `msgs`, at
/// the line marked `name` in this file.
fn assert_panics_at(name: &str, msgs: &[&str], f: impl FnOnce()) {
    let (msg, file, line) = panic_of(f);
    for m in msgs {
        assert!(msg.contains(m), "{name}: the message {msg:?} lacks {m:?}");
    }
    assert!(
        file.ends_with("op_panic_location.rs"),
        "{name}: the panic points at {file}:{line}, not at the user's function"
    );
    assert_eq!(line, marked_line(name), "{name}: {file}:{line}");
}

fn bad() -> Tensor {
    Tensor::ones(&[4])
}

#[funcz::functionalize]
fn local_root(x: &Tensor, bad: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.add_(bad); // at: local_root
    b
}

#[funcz::functionalize]
fn compound(x: &Tensor, bad: &Tensor) -> Tensor {
    let mut b = x.mul(1.0);
    b -= bad; // at: compound
    b
}

#[funcz::functionalize]
fn input_root(x: &mut Tensor, bad: &Tensor) {
    x.sub_(bad); // at: input_root
}

#[funcz::functionalize]
fn alias(x: &Tensor, bad: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    let r = b.select(0, 0);
    r.mul_(bad); // at: alias
    b
}

#[funcz::functionalize(remove = "mutations_and_views")]
fn alias_copies(x: &Tensor, bad: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    let r = b.select(0, 1);
    r.div_(bad); // at: alias_copies
    b
}

#[funcz::functionalize]
fn elements(ps: &mut [Tensor], bad: &Tensor) {
    for p in ps.iter_mut() {
        p.lerp_(bad, 0.5); // at: elements
    }
}

#[funcz::functionalize]
fn window(cache: &mut Tensor, row: &Tensor, pos: usize) {
    cache.narrow(0, pos, 1).copy_(row); // at: window
}

#[funcz::functionalize(remove = "mutations_and_views")]
fn window_copies(x: &Tensor, bad: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.select(0, 1).add_(bad); // at: window_copies
    b
}

#[funcz::functionalize]
fn window_other_op(cache: &mut Tensor, index: &Tensor<i64>, src: &Tensor) {
    cache.narrow(0, 0, 1).index_add_(1, index, src); // at: window_other_op
}

#[funcz::functionalize]
fn reads_itself(x: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.add_(&b.t()); // at: reads_itself
    b
}

#[funcz::functionalize]
fn view_reads_root(x: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.narrow(0, 0, 1).add_(&b.t()); // at: view_reads_root
    b
}

#[funcz::functionalize]
fn view_chain(x: &Tensor, bad: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.t().select(0, 1).clamp_min_(0.0).mul_(bad); // at: view_chain
    b
}

#[funcz::functionalize]
fn temporary(x: &Tensor, bad: &Tensor) -> Tensor {
    x.mul(2.0).add_(bad) // at: temporary
}

#[funcz::functionalize]
fn bound_view(x: &Tensor, i: i64) -> Tensor {
    let b = x.mul(1.0);
    let r = b.select(0, i); // at: bound_view
    r.add_(1.0);
    b
}

#[funcz::functionalize(remove = "mutations_and_views")]
fn chain_view(x: &Tensor, i: i64) -> Tensor {
    let b = x.mul(1.0);
    b.t().select(0, i).add_(1.0); // at: chain_view
    b
}

// A `select` window of a root no one else holds: the runtime's direct
// path, which checks the index itself.
#[funcz::functionalize]
fn select_window(x: &Tensor, i: i64) -> Tensor {
    let b = x.mul(1.0);
    b.select(0, i).add_(1.0); // at: select_window
    b
}

#[funcz::functionalize(remove = "mutations_and_views")]
fn select_window_copies(x: &Tensor, i: i64) -> Tensor {
    let b = x.mul(1.0);
    b.select(1, i).mul_(2.0); // at: select_window_copies
    b
}

#[funcz::functionalize(remove = "mutations_and_views")]
fn read_view(x: &Tensor, i: i64) -> Tensor {
    let b = x.mul(1.0);
    b.add_(1.0);
    b.select(1, i).sum() // at: read_view
}

#[funcz::functionalize]
fn meta_view(x: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.add_(1.0);
    b.transpose_(0, 5); // at: meta_view
    b
}

#[funcz::functionalize]
fn multi_view(x: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    // at the next line: multi_view
    for r in b.unbind(4) {
        r.add_(1.0);
    }
    b
}

#[funcz::functionalize]
fn fused_chain(x: &mut Tensor, bad: &Tensor) {
    x.mul_(1.5).add_(bad).sub_(0.5); // at: fused_chain
}

#[funcz::functionalize]
fn fused_scaled(p: &mut Tensor, g: &Tensor, m: &mut Tensor) {
    m.mul_(0.9).add_scaled_(g, 0.1); // at: fused_scaled
    p.sub_(&m.mul(0.01));
}

#[funcz::functionalize]
fn fused_lerp(p: &mut Tensor, g: &Tensor) {
    p.mul_(0.5).lerp_(g, 0.3).relu_(); // at: fused_lerp
}

#[test]
fn fused_runs_panic_at_the_users_line() {
    let mut x = Tensor::zeros(&[4, 3]);
    assert_panics_at("fused_chain", &["funcz: add_:", "[4, 3]", "[4]"], || {
        fused_chain(&mut x, &bad())
    });
    let mut m = Tensor::zeros(&[4, 3]);
    assert_panics_at(
        "fused_scaled",
        &["funcz: add_:", "[4, 3]", "[4]", "'other'"],
        || fused_scaled(&mut x, &bad(), &mut m),
    );
    assert_panics_at("fused_lerp", &["funcz: lerp_:", "[4, 3]", "[4]"], || {
        fused_lerp(&mut x, &bad())
    });
}

#[funcz::functionalize]
fn operator(x: &Tensor, bad: &Tensor) -> Tensor {
    let b = x.mul(1.0);
    b.add_(1.0);
    &b + bad // at: operator
}

#[funcz::functionalize]
fn operator_on_input(x: &mut Tensor, bad: &Tensor) -> Tensor {
    x.add_(1.0);
    let y = bad * &*x; // at: operator_on_input
    y
}

#[test]
fn operators_on_tracked_tensors_panic_at_the_users_line() {
    let x = Tensor::ones(&[2, 3]);
    assert_panics_at("operator", &["funcz: add:", "[2, 3]", "[4]"], || {
        drop(operator(&x, &bad()))
    });
    let mut y = x.mul(1.0);
    assert_panics_at(
        "operator_on_input",
        &["funcz: mul:", "[4]", "[2, 3]"],
        || drop(operator_on_input(&mut y, &bad())),
    );
}

#[test]
fn views_panic_at_the_users_line() {
    let x = Tensor::ones(&[2, 3]);
    let mut cache = Tensor::zeros(&[4, 3]);
    let row = Tensor::ones(&[1, 3]);
    assert_panics_at(
        "window",
        &["funcz: narrow:", "start out of range", "9"],
        || window(&mut cache, &row, 9),
    );
    assert_panics_at(
        "bound_view",
        &["funcz: select:", "index 7", "[2, 3]"],
        || drop(bound_view(&x, 7)),
    );
    assert_panics_at(
        "chain_view",
        &["funcz: select", "index 7", "[3, 2]"],
        || drop(chain_view(&x, 7)),
    );
    assert_panics_at(
        "select_window",
        &["funcz: select:", "index 7", "[2, 3]"],
        || drop(select_window(&x, 7)),
    );
    assert_panics_at(
        "select_window_copies",
        &["funcz: select:", "index -4", "[2, 3]"],
        || drop(select_window_copies(&x, -4)),
    );
    assert_panics_at("read_view", &["funcz: select", "index 7", "[2, 3]"], || {
        drop(read_view(&x, 7))
    });
    assert_panics_at("meta_view", &["funcz: transpose", "got 5"], || {
        drop(meta_view(&x))
    });
    assert_panics_at("multi_view", &["funcz: unbind", "4"], || {
        drop(multi_view(&x))
    });
}

#[test]
fn in_place_ops_on_tracked_tensors_panic_at_the_users_line() {
    let x = Tensor::ones(&[2, 3]);
    assert_panics_at("local_root", &["funcz: add_:", "[2, 3]", "[4]"], || {
        drop(local_root(&x, &bad()))
    });
    assert_panics_at("compound", &["funcz: sub_:", "[2, 3]", "[4]"], || {
        drop(compound(&x, &bad()))
    });
    let mut y = x.mul(1.0);
    assert_panics_at("input_root", &["funcz: sub_:", "[2, 3]", "[4]"], || {
        input_root(&mut y, &bad())
    });
    assert_eq!(y.to_vec(), vec![1.0; 6], "the input is left as it was");
    assert_panics_at("alias", &["funcz: mul_:", "[3]", "[4]"], || {
        drop(alias(&x, &bad()))
    });
    assert_panics_at("alias_copies", &["funcz: div_:", "[3]", "[4]"], || {
        drop(alias_copies(&x, &bad()))
    });
    let mut ps = vec![x.mul(1.0)];
    assert_panics_at("elements", &["funcz: lerp_:", "[2, 3]", "[4]"], || {
        elements(&mut ps, &bad())
    });
}

#[test]
fn in_place_ops_on_temporary_views_panic_at_the_users_line() {
    let x = Tensor::ones(&[2, 3]);
    let mut cache = Tensor::zeros(&[4, 3]);
    assert_panics_at("window", &["funcz: copy_:", "[1, 3]", "[4]"], || {
        window(&mut cache, &bad(), 1)
    });
    assert_panics_at("window_copies", &["funcz: add_:", "[3]", "[4]"], || {
        drop(window_copies(&x, &bad()))
    });
    let index = Tensor::<i64>::from_vec(vec![0, 7], &[2]);
    let src = Tensor::ones(&[1, 2]);
    assert_panics_at("window_other_op", &["funcz: index_add_:", "7"], || {
        window_other_op(&mut cache, &index, &src)
    });
    assert_panics_at("view_chain", &["funcz: mul_:", "[2]", "[4]"], || {
        drop(view_chain(&x, &bad()))
    });
}

#[test]
fn in_place_ops_whose_arguments_read_their_target_panic_at_the_users_line() {
    let x = Tensor::ones(&[2, 3]);
    // (Here, and for a temporary, the functional twin runs and names
    // itself: `add`.)
    assert_panics_at("reads_itself", &["funcz: add", "[2, 3]", "[3, 2]"], || {
        drop(reads_itself(&x))
    });
    assert_panics_at(
        "view_reads_root",
        &["funcz: add", "[1, 3]", "[3, 2]"],
        || drop(view_reads_root(&x)),
    );
    assert_panics_at("temporary", &["funcz: add", "[2, 3]", "[4]"], || {
        drop(temporary(&x, &bad()))
    });
}
