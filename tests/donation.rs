//! Buffer donation in functionalized code: updates whose old value nobody
//! else can observe reuse its buffer (and windows are written in place),
//! while the traces still show only functional ops and the results equal
//! the non-donating path's.

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

/// `s`, after keeping a handle to `t` where the caller cannot see it: a
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
    // buffer: that update is not donated (the stashed handle keeps the old
    // value), the later ones are; values and ops are the same.
    let [n1, n2] = check("chain_nd", std::slice::from_ref(&x), |v, xs| {
        vec![[chain_nd, chain_nd_f, chain_nd_fv][v](&xs[0])]
    });
    assert_eq!(n1.ops(), g1.ops());
    assert_eq!(n2.ops(), g2.ops());
    for f in [chain_nd_f, chain_nd_fv] {
        STASH.with(|v| v.borrow_mut().clear());
        assert!(f(&x).equal(&chain_f(&x)));
        let kept = STASH.with(|v| v.borrow_mut().pop()).unwrap();
        assert!(kept.equal(&x), "the stashed handle saw a donated update");
    }
    // The original program mutates the buffer the stash holds.
    STASH.with(|v| v.borrow_mut().clear());
    let out = chain_nd(&x);
    let kept = STASH.with(|v| v.borrow_mut().pop()).unwrap();
    assert!(kept.same_storage(&out));
    // Donation is what makes the difference in allocations: the original
    // and the donating version allocate the clone only (a buffer and its
    // shared header); `chain_nd` allocates one new value (buffer and
    // header) for its one non-donated update.
    let (_, orig) = allocs(|| chain(&x));
    let (_, donating) = allocs(|| chain_f(&x));
    let (_, copies) = allocs(|| chain_fv(&x));
    STASH.with(|v| v.borrow_mut().reserve(4));
    let (_, not_donating) = allocs(|| chain_nd_f(&x));
    assert_eq!(orig, 2);
    assert_eq!(donating, orig);
    assert_eq!(copies, orig);
    assert_eq!(not_donating, orig + 2);
}

#[test]
fn a_mutated_input_is_computed_in_a_new_buffer_and_written_back_once() {
    let [g1, g2] = check("on_input", &[iota(&[2, 3])], |v, xs| {
        [on_input, on_input_f, on_input_fv][v](&mut xs[0]);
        vec![]
    });
    for g in [&g1, &g2] {
        assert_eq!(g.ops(), vec!["mul", "add", "copy_"], "{g}");
        assert_pure(g);
    }
    // The caller's tensor is not touched before the write-back: a handle
    // taken before the call sees the final value only through the storage
    // they share, written once (version 1).
    let mut x = iota(&[2, 3]);
    let before = x.version();
    on_input_f(&mut x);
    assert_eq!(x.version(), before + 1);
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
fn a_value_with_another_live_handle_is_not_written_in_place() {
    // `keep` holds the buffer of `y`'s old value (a handle the macro does
    // not track): the update of `y` must leave it alone.
    let x = iota(&[3]);
    for f in [escaped_f, escaped_fv] {
        let ((keep, y), g) = Tracer::new("escaped").input("x", &x).run(|| f(&x));
        assert_eq!(keep.to_vec(), vec![1.0, 2.0, 3.0]);
        assert_eq!(y.to_vec(), vec![10.0, 20.0, 30.0]);
        assert!(!keep.same_storage(&y));
        assert_pure(&g);
    }
    // The original program mutates through the alias.
    let (keep, y) = escaped(&x);
    assert!(keep.same_storage(&y));
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
