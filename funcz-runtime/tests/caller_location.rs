//! A bad argument to a public op panics at the caller's line (the ops are
//! `#[track_caller]` and check their arguments before the traced body
//! runs), with a message naming the op and the shapes involved.
//!
//! A panic hook records `PanicHookInfo::location()` per thread; each case
//! asserts that the location is this file at the line of the call.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use funcz_runtime::Tensor;

thread_local! {
    static LAST: RefCell<Option<(String, u32)>> = const { RefCell::new(None) };
    static EXPECTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if EXPECTING.with(|e| e.get()) {
                let loc = info.location().map(|l| (l.file().to_string(), l.line()));
                LAST.with(|c| *c.borrow_mut() = loc);
            } else {
                default(info);
            }
        }));
    });
}

/// Runs `f`, which must panic; returns the message and the line of the
/// panic's location (asserting it is in this file).
fn panic_of<R>(what: &str, f: impl FnOnce() -> R) -> (String, u32) {
    install_hook();
    LAST.with(|c| *c.borrow_mut() = None);
    EXPECTING.with(|e| e.set(true));
    let res = catch_unwind(AssertUnwindSafe(f));
    EXPECTING.with(|e| e.set(false));
    let err = match res {
        Ok(_) => panic!("expected `{what}` to panic"),
        Err(e) => e,
    };
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    let (file, line) = LAST
        .with(|c| c.borrow_mut().take())
        .expect("the hook saw the panic");
    assert!(
        file.ends_with("caller_location.rs"),
        "panic located in {file}:{line}, not at the caller: {msg}"
    );
    (msg, line)
}

/// Asserts that `$e` panics at this line with a message containing every
/// one of the needles. Written `at_caller!(expr => needles)`, which rustfmt
/// leaves on one line, so `line!()` is the line of `expr`.
macro_rules! at_caller {
    ($e:expr => $($needle:expr),+ $(,)?) => {{
        let want = line!();
        let (msg, line) = panic_of(stringify!($e), || $e);
        assert_eq!(line, want, "wrong line for `{}`: {msg}", stringify!($e));
        $(assert!(msg.contains($needle), "`{}`: {msg:?} lacks {:?}", stringify!($e), $needle);)+
    }};
}

fn f(shape: &[usize]) -> Tensor<f32> {
    Tensor::zeros(shape)
}

#[test]
fn elementwise_ops_and_operators() {
    let (a, b) = (f(&[2, 3]), f(&[4]));
    at_caller!(a.add(&b) => "funcz: add:", "[2, 3]", "[4]");
    at_caller!(a.sub(&b) => "funcz: sub:", "[2, 3]", "[4]");
    at_caller!(a.mul(&b) => "funcz: mul:", "[2, 3]", "[4]");
    at_caller!(a.div(&b) => "funcz: div:", "[2, 3]", "[4]");
    at_caller!(a.pow(&b) => "funcz: pow:", "[2, 3]", "[4]");
    at_caller!(&a + &b => "funcz: add:", "[2, 3]", "[4]");
    at_caller!(a.clone() * &b => "funcz: mul:", "[2, 3]", "[4]");
    at_caller!(&a - b.clone() => "funcz: sub:", "[2, 3]", "[4]");
    at_caller!(a.clone() / b.clone() => "funcz: div:", "[2, 3]", "[4]");
    at_caller!(a.addcmul(&b, &a, 1.0) => "funcz: addcmul:", "[2, 3]", "[4]");
    at_caller!(a.lerp(&b, 0.5) => "funcz: lerp:", "[2, 3]", "[4]");
    at_caller!(a.clamp(None, None) => "funcz: clamp:", "'min' or 'max'");
    let i = Tensor::<i64>::from_vec(vec![1, 2], &[2]);
    let z = Tensor::<i64>::from_vec(vec![1, 0], &[2]);
    at_caller!(i.div(&z) => "funcz: div:", "division by zero", "[2]");
    at_caller!(i.clone() / &z => "funcz: div:", "division by zero", "[2]");
    at_caller!(a.lt(&b) => "funcz: lt:", "[2, 3]", "[4]");
    at_caller!(a.allclose(&b, 1e-5, 1e-8) => "funcz: allclose:", "[2, 3]");
}

#[test]
fn inplace_ops() {
    let (a, b) = (f(&[2, 3]), f(&[4]));
    at_caller!(a.add_(&b) => "funcz: add_:", "[2, 3]", "[4]");
    at_caller!(a.mul_(f(&[2, 2, 3])) => "funcz: mul_:", "[2, 3]", "[2, 2, 3]");
    at_caller!(a.copy_(&b) => "funcz: copy_:", "[2, 3]", "[4]");
    at_caller!(a.copy(&b) => "funcz: copy:", "[2, 3]", "[4]");
    at_caller!(a.addcdiv_(&a, &f(&[3, 1, 1]), 1.0) => "funcz: addcdiv_:", "[2, 3]");
    at_caller!(a.lerp_(&b, 0.5) => "funcz: lerp_:", "[2, 3]", "[4]");
    at_caller!(a.clamp_(None, None) => "funcz: clamp_:");
    let mut a2 = a.clone();
    at_caller!(a2 += &b => "funcz: add_:", "[2, 3]", "[4]");
    // A written-to tensor whose elements overlap (expanded).
    let e = f(&[3]).expand([2, 3]);
    at_caller!(e.fill_(1.0) => "funcz: fill_:", "[2, 3]", "strides [0, 1]");
    at_caller!(e.exp_() => "funcz: exp_:", "[2, 3]");
    let i = Tensor::<i64>::from_vec(vec![1, 2], &[2]);
    at_caller!(i.div_(Tensor::from_vec(vec![0, 1], &[2])) => "funcz: div_:", "division by zero");
}

#[test]
fn views_and_their_copies() {
    let a = f(&[2, 3]);
    at_caller!(a.view([4, -1]) => "funcz: view:", "[4, -1]", "size 6");
    at_caller!(a.reshape([4, 2]) => "funcz: reshape:");
    at_caller!(a.narrow(1, 2, 2) => "funcz: narrow:");
    at_caller!(a.select(0, 5) => "funcz: select:", "5");
    at_caller!(a.slice(2, 0, 1, 1) => "funcz: slice:", "dimension out of range");
    at_caller!(a.transpose(0, 2) => "funcz: transpose:");
    at_caller!(a.permute([0, 0]) => "funcz: permute:");
    at_caller!(a.expand([3, 3]) => "funcz: expand:", "[2, 3]");
    at_caller!(a.unsqueeze(4) => "funcz: unsqueeze:");
    at_caller!(a.squeeze_dim(3) => "funcz: squeeze_dim:");
    at_caller!(a.diagonal(0, 0, 0) => "funcz: diagonal:");
    at_caller!(a.unfold(1, 4, 1) => "funcz: unfold:");
    at_caller!(a.as_strided([2, 3], [3, 1], 1) => "funcz: as_strided:");
    at_caller!(a.split(0, 0) => "funcz: split:");
    at_caller!(a.chunk(0, 0) => "funcz: chunk:");
    at_caller!(a.unbind(2) => "funcz: unbind:");
    at_caller!(f(&[2, 2, 2]).t() => "funcz: t:", "[2, 2, 2]");
    at_caller!(a.i((.., 7)) => "funcz: i:");
    at_caller!(a.view_copy([5]) => "funcz: view_copy:");
    at_caller!(a.narrow_copy(0, 1, 5) => "funcz: narrow_copy:");
    at_caller!(a.select_copy(1, -4) => "funcz: select_copy:");
    at_caller!(a.expand_copy([4, 4]) => "funcz: expand_copy:");
    at_caller!(a.split_copy(1, 3) => "funcz: split_copy:");
    at_caller!(a.slice_scatter(&f(&[2, 2]), 1, 0, 3, 1) => "funcz: slice_scatter:", "[2, 2]", "[2, 3]");
    at_caller!(a.select_scatter(&f(&[3]), 1, 0) => "funcz: select_scatter:", "[3]", "[2]");
    at_caller!(a.diagonal_scatter(&f(&[3]), 0, 0, 1) => "funcz: diagonal_scatter:", "[3]");
    let mut m = f(&[2, 2, 2]);
    at_caller!(m.t_() => "funcz: t_:", "[2, 2, 2]");
    at_caller!(m.unsqueeze_(9) => "funcz: unsqueeze_:");
    at_caller!(m.resize_([-2]) => "funcz: resize_:");
}

#[test]
fn matmul_create_reduce() {
    at_caller!(f(&[2, 3]).matmul(&f(&[2, 3])) => "funcz: matmul:", "[2, 3]");
    at_caller!(f(&[]).matmul(&f(&[3])) => "funcz: matmul:", "0D");
    at_caller!(f(&[2, 2, 3]).matmul(&f(&[3, 3, 1])) => "funcz: matmul:", "[2, 2, 3]", "[3, 3, 1]");
    at_caller!(Tensor::<f32>::zeros(&[usize::MAX, 2]) => "funcz: zeros:", "larger than int64 max");
    at_caller!(Tensor::<f32>::full(&[usize::MAX, 3], 1.0) => "funcz: full:", "larger than int64 max");
    at_caller!(Tensor::<f32>::arange_step(0.0, 1.0, 0.0) => "funcz: arange:");
    at_caller!(Tensor::<i64>::arange_step(0, 5, -1) => "funcz: arange:");
    at_caller!(f(&[2, 3]).sum_dim(2, false) => "funcz: sum:", "[-2, 1]");
    at_caller!(f(&[2, 3]).mean_dim(-3, true) => "funcz: mean:", "[-2, 1]");
}

/// The one-call forms generated code gives an in-place op on a tracked
/// tensor (`rt::InPlace`) or on a temporary view of one
/// (`rt::InPlaceWindow`): the op's panic is at the user's line, as the
/// user's own call's was.
#[test]
fn inplace_ops_through_a_tracked_target() {
    use funcz_runtime::rt::{self, Mode, Tracked, Var, ViewMeta};
    let bad = f(&[4]);
    let mut b = Var::root(f(&[2, 3]));
    at_caller!(rt::inplace_var(&mut b).add_(&bad) => "funcz: add_:", "[2, 3]", "[4]");
    let mut r = rt::var_view(&b, ViewMeta::select(0, 1), Mode::Views);
    at_caller!(rt::inplace_alias(&mut b, &mut r, Mode::Views).mul_(&bad) => "funcz: mul_:", "[3]", "[4]");
    let mut x = f(&[2, 3]);
    let mut s = Tracked::root(&x);
    at_caller!(rt::inplace_root(&mut x, &mut s).lerp_(&bad, 0.5) => "funcz: lerp_:", "[2, 3]", "[4]");
    at_caller!(rt::inplace_value(&mut x).clamp_(None, None) => "funcz: clamp_:", "'min' or 'max'");
    let narrow = ViewMeta::narrow(0, 1, 1);
    at_caller!(rt::inplace_window(&mut x, &mut s, narrow, Mode::Views).copy_(&bad) => "funcz: copy_:", "[1, 3]", "[4]");
    let row = ViewMeta::select(0, 0);
    at_caller!(rt::inplace_window_var(&mut b, row, Mode::Copies).sub_(&bad) => "funcz: sub_:", "[3]", "[4]");
}
