//! Buffer donation in functionalized code: updates whose old value nobody
//! else can observe reuse its buffer (and windows are written in place),
//! while the traces still show only functional ops and the results equal
//! the non-donating path's.

// Indexing a slice input in a loop is the pattern under test.
#![allow(clippy::needless_range_loop)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::{check, iota};
use funcz::Tensor;
use funcz::trace::{Graph, Tracer};

// Allocations made by this thread (tests run on several threads).
thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; only
// counts (in a const-initialized thread-local, which never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocs<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = ALLOCS.with(Cell::get);
    let r = f();
    (r, ALLOCS.with(Cell::get) - before)
}

thread_local! {
    static STASH: std::cell::RefCell<Vec<Tensor>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `s`, after keeping a handle to `t` where the caller can read it later: a
/// user function in an in-place op's arguments that makes the buffer
/// observable after the macro's code started the update.
fn stash(t: &Tensor, s: f32) -> f32 {
    STASH.with(|v| v.borrow_mut().push(t.shallow_clone()));
    s
}

variants!(chain, chain_f, chain_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    y.mul_(2.0).add_(1.0);
    y.relu_();
    y.sub_(x);
    y
});

variants!(chain_nd, chain_nd_f, chain_nd_fv; fn (x: &Tensor) -> Tensor {
    let y = x.clone();
    y.mul_(stash(&y, 2.0)).add_(1.0);
    y.relu_();
    y.sub_(x);
    y
});

variants!(on_input, on_input_f, on_input_fv; fn (x: &mut Tensor) {
    x.mul_(2.0);
    x.add_(1.0);
});

variants!(kv, kv_f, kv_fv; fn (new: &Tensor, steps: usize) -> Tensor {
    let cache = Tensor::zeros(&[6, 3]);
    for s in 0..steps {
        cache.narrow(0, s % 6, 1).copy_(new).mul_(s as f32);
    }
    cache
});

variants!(rows, rows_f, rows_fv; fn (b: &mut Tensor, n: usize) {
    for i in 0..n {
        b.select(0, i).mul_(2.0);
    }
});

variants!(escaped, escaped_f, escaped_fv; fn (x: &Tensor) -> (Tensor, Tensor) {
    let y = x.add(1.0);
    let keep = y.shallow_clone();
    y.mul_(10.0);
    (keep, y)
});

/// Asserts that every node of `g` has its own output identities (values
/// are never reused under the same name) and that no node mutates except
/// the final write-back of inputs.
fn assert_pure(g: &Graph) {
    let mut outs: Vec<_> = g.nodes().iter().flat_map(|n| n.outputs.clone()).collect();
    let n = outs.len();
    outs.sort_unstable();
    outs.dedup();
    assert_eq!(outs.len(), n, "an output identity is reused\n{g}");
    assert!(g.mutations_except_input_writeback().is_empty(), "{g}");
}

#[test]
fn chains_show_functional_ops_and_equal_the_non_donating_path() {
    let x = Tensor::<f32>::randn(&[3, 4], 1);
    let [g1, g2] = check("chain", std::slice::from_ref(&x), |v, xs| {
        vec![[chain, chain_f, chain_fv][v](&xs[0])]
    });
    for g in [&g1, &g2] {
        assert_eq!(g.ops(), vec!["clone", "mul", "add", "relu", "sub"], "{g}");
        assert_pure(g);
    }
    // The same program whose first update's arguments keep a handle to the
    // buffer where the caller can read it (a thread-local): the original
    // mutates the buffer the stash holds; the functionalized code cannot
    // make that handle follow the later updates, so it panics, naming the
    // call, instead of leaving a different value in the stash (it used to:
    // the stash kept the value before the update).
    STASH.with(|v| v.borrow_mut().clear());
    let out = chain_nd(&x);
    let kept = STASH.with(|v| v.borrow_mut().pop()).unwrap();
    assert!(kept.same_storage(&out));
    for f in [chain_nd_f, chain_nd_fv] {
        STASH.with(|v| v.borrow_mut().clear());
        let err = std::panic::catch_unwind(|| f(&x)).expect_err("a kept handle panics");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("`stash(..)` kept a handle on `y`"), "{msg}");
    }
    // Donation is what makes the difference in allocations: the original
    // and the donating version allocate the clone (a buffer and its
    // shared header) and nothing else (the fused run's steps are an array
    // on the stack, `rt::fused_run`).
    let (_, orig) = allocs(|| chain(&x));
    let (_, donating) = allocs(|| chain_f(&x));
    let (_, copies) = allocs(|| chain_fv(&x));
    assert_eq!(orig, 2);
    assert_eq!(donating, orig);
    assert_eq!(copies, orig);
}

#[test]
fn a_mutated_input_is_updated_in_the_callers_buffer() {
    let [g1, g2] = check("on_input", &[iota(&[2, 3])], |v, xs| {
        [on_input, on_input_f, on_input_fv][v](&mut xs[0]);
        vec![]
    });
    for g in [&g1, &g2] {
        assert_eq!(g.ops(), vec!["mul", "add", "copy_"], "{g}");
        assert_pure(g);
    }
    // The caller's tensor is its buffer's only handle: nobody can observe
    // it during the call, so the updates are computed in it, as the
    // original program does, with no copy at the exit and no allocation.
    let mut x = iota(&[2, 3]);
    let mut y = iota(&[2, 3]);
    let (_, a_orig) = allocs(|| on_input(&mut y));
    let (_, a_f) = allocs(|| on_input_f(&mut x));
    assert_eq!((a_orig, a_f), (0, 0));
    assert!(x.equal(&y));
    assert_eq!(x.version(), y.version());
    // With another handle to the buffer (a view the caller keeps), the
    // body computes in a new buffer and writes back once at the exit.
    let mut x = iota(&[2, 3]);
    let row = x.select(0, 1);
    let before = x.version();
    let (_, a) = allocs(|| on_input_f(&mut x));
    assert_eq!(x.version(), before + 1);
    assert!(a > 0);
    assert_eq!(row.to_vec(), vec![7.0, 9.0, 11.0]);
}

#[test]
fn kv_updates_of_a_local_cache_write_windows() {
    let new = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]);
    let [g1, g2] = check("kv", std::slice::from_ref(&new), |v, xs| {
        vec![[kv, kv_f, kv_fv][v](&xs[0], 8)]
    });
    for g in [&g1, &g2] {
        assert_eq!(g.count("slice_scatter"), 16, "{g}");
        assert_eq!(g.count("copy"), 8, "{g}");
        assert_eq!(g.count("mul"), 8, "{g}");
        assert_pure(g);
    }
    assert_eq!(g1.count("slice"), 16, "{g1}");
    assert_eq!(g2.count("slice_copy"), 16, "{g2}");
    // Views mode writes each row through its view: no allocation per step.
    let (_, a8) = allocs(|| kv_f(&new, 8));
    let (_, a16) = allocs(|| kv_f(&new, 16));
    assert_eq!(a8, a16);
}

#[test]
fn row_loop_on_an_input() {
    let [g1, g2] = check("rows", &[iota(&[4, 3])], |v, xs| {
        [rows, rows_f, rows_fv][v](&mut xs[0], 4);
        vec![]
    });
    for g in [&g1, &g2] {
        assert_eq!(g.count("select_scatter"), 4, "{g}");
        assert_eq!(g.count("mul"), 4, "{g}");
        assert_eq!(g.count("copy_"), 1, "{g}");
        assert_pure(g);
    }
}

#[test]
fn a_shallow_clone_sees_the_update_as_in_the_original() {
    // `keep` is a second handle of `y` (`shallow_clone` is an alias in the
    // op table): the original's `keep` sees `y.mul_(10.0)`, and so must the
    // functionalized one (it used to keep the old value: issue 11).
    let x = iota(&[3]);
    let (keep0, y0) = escaped(&x.clone());
    assert!(keep0.same_storage(&y0));
    for f in [escaped_f, escaped_fv] {
        let ((keep, y), g) = Tracer::new("escaped").input("x", &x).run(|| f(&x));
        assert_eq!(keep.to_vec(), keep0.to_vec());
        assert_eq!(y.to_vec(), vec![10.0, 20.0, 30.0]);
        assert_pure(&g);
    }
}

#[test]
fn views_of_a_local_value_see_its_donated_updates() {
    // Views mode: `v` aliases `y`; `y`'s update cannot reuse the buffer
    // `v` still sees, and `v` is regenerated from the new value.
    variants!(vw, vw_f, vw_fv; fn (x: &Tensor) -> Tensor {
        let y = x.add(1.0);
        let v = y.narrow(0, 1, 2);
        y.mul_(3.0);
        v.add_(100.0);
        &y + &v.sum()
    });
    let [g1, g2] = check("vw", &[iota(&[4])], |v, xs| {
        vec![[vw, vw_f, vw_fv][v](&xs[0])]
    });
    assert_pure(&g1);
    assert_pure(&g2);
}

variants!(kv_in, kv_in_f, kv_in_fv; fn (cache: &mut Tensor, new: &Tensor, pos: usize) {
    cache.narrow(0, pos, 1).copy_(new);
});

variants!(scale_all, scale_all_f, scale_all_fv; fn (xs: &mut [Tensor], s: f32) {
    for i in 0..xs.len() {
        xs[i].mul_(s).add_(1.0);
    }
});

#[test]
fn one_row_update_of_an_input_cache_writes_only_the_row() {
    let new = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]);
    let [g1, g2] = check("kv_in", &[iota(&[6, 3]), new.clone()], |v, xs| {
        let (c, n) = xs.split_at_mut(1);
        [kv_in, kv_in_f, kv_in_fv][v](&mut c[0], &n[0], 4);
        vec![]
    });
    assert_eq!(g1.ops(), vec!["slice", "copy", "slice_scatter", "copy_"]);
    assert_eq!(
        g2.ops(),
        vec!["slice_copy", "copy", "slice_scatter", "copy_"]
    );
    // Views mode writes the row into the caller's buffer: the allocations
    // do not grow with the cache, and the buffer is the caller's.
    let mut small = iota(&[6, 3]);
    let mut big = iota(&[6000, 3]);
    let (_, a_small) = allocs(|| kv_in_f(&mut small, &new, 2));
    let (_, a_big) = allocs(|| kv_in_f(&mut big, &new, 5999));
    assert_eq!(a_small, a_big);
    assert_eq!(
        a_small, 0,
        "a one-row update of a uniquely held input allocates nothing"
    );
    assert_eq!(big.select(0, 5999).to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!(
        big.select(0, 5998).to_vec(),
        vec![17994.0, 17995.0, 17996.0]
    );
    // A view the caller keeps sees the row only through the write-back.
    let mut c = iota(&[6, 3]);
    let keep = c.narrow(0, 2, 2);
    kv_in_f(&mut c, &new, 2);
    assert_eq!(keep.to_vec(), vec![1.0, 2.0, 3.0, 9.0, 10.0, 11.0]);
}

#[test]
fn copies_mode_writes_the_row_in_place_when_no_trace_is_recorded() {
    // The trace shows `slice_copy` (checked above); untraced, the
    // temporary copy is never observable, so the row is written in place.
    let new = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]);
    let mut small = iota(&[6, 3]);
    let mut big = iota(&[6000, 3]);
    let (_, a_small) = allocs(|| kv_in_fv(&mut small, &new, 2));
    let (_, a_big) = allocs(|| kv_in_fv(&mut big, &new, 5999));
    assert_eq!((a_small, a_big), (0, 0));
    let mut want = iota(&[6000, 3]);
    kv_in(&mut want, &new, 5999);
    assert!(big.equal(&want));
    // A view the caller keeps sees the row, as in the original.
    let mut c = iota(&[6, 3]);
    let keep = c.narrow(0, 2, 2);
    kv_in_fv(&mut c, &new, 2);
    assert_eq!(keep.to_vec(), vec![1.0, 2.0, 3.0, 9.0, 10.0, 11.0]);
}

variants!(read_window, read_window_f, read_window_fv; fn (x: &Tensor, n: usize) -> Tensor {
    let y = x.mul(2.0);
    let total = y.narrow(0, 0, n).t().sum_dim(1, false);
    let first = y.select(0, 0).sum().item();
    total.add(first)
});

#[test]
fn copies_mode_reads_a_reduced_view_without_copying_it() {
    let x = iota(&[64, 8]);
    let [_, g2] = check("read_window", std::slice::from_ref(&x), |v, xs| {
        vec![[read_window, read_window_f, read_window_fv][v](&xs[0], 5)]
    });
    // The graph still has no view.
    let ops = g2.ops();
    assert!(
        ops.contains(&"narrow_copy") || ops.contains(&"slice_copy"),
        "{ops:?}"
    );
    assert!(
        ops.contains(&"t_copy") && ops.contains(&"select_copy"),
        "{ops:?}"
    );
    // Untraced, the reads are views: copies mode allocates what views
    // mode does, however large the window.
    let (r_v, a_views) = allocs(|| read_window_f(&x, 60));
    let (r_c, a_copies) = allocs(|| read_window_fv(&x, 60));
    assert!(r_v.equal(&r_c) && r_v.equal(&read_window(&x, 60)));
    assert_eq!(a_copies, a_views);
}

#[test]
fn elements_of_a_slice_input_are_updated_in_the_callers_buffers() {
    let xs = vec![iota(&[4]), iota(&[2, 2]).add(1.0)];
    let [g1, g2] = check("scale_all", &xs, |v, xs| {
        [scale_all, scale_all_f, scale_all_fv][v](xs, 3.0);
        vec![]
    });
    for g in [&g1, &g2] {
        assert_eq!(g.count("mul"), 2, "{g}");
        assert_eq!(g.count("copy_"), 2, "{g}");
        assert_pure(g);
    }
    let mut a = vec![iota(&[4]), iota(&[2, 2])];
    let mut b = vec![iota(&[4]), iota(&[2, 2])];
    let (_, n_orig) = allocs(|| scale_all(&mut a, 3.0));
    let (_, n_f) = allocs(|| scale_all_f(&mut b, 3.0));
    // One allocation: the body's `Vec` of handles to the elements; no
    // element buffer.
    assert_eq!(n_f, n_orig + 1);
    assert!(a.iter().zip(&b).all(|(x, y)| x.equal(y)));
    // An element the caller also holds elsewhere is computed anew.
    let mut c = vec![iota(&[4]), iota(&[2, 2])];
    let keep = c[1].shallow_clone();
    scale_all_f(&mut c, 3.0);
    assert!(c[1].equal(&b[1]));
    assert!(keep.equal(&b[1]), "the write-back reaches every handle");
}
