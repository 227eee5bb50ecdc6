//! Lists of tensors held in struct fields (`opt.m[i].mul_(..)`, an
//! optimizer's per-parameter state, a `Vec` of KV caches in a module):
//! tracked like a collection input, read at entry, written back at every
//! exit, against the unannotated original in both modes.
//!
//! Before, `opt.m[i].mul_(..)` was refused ("a value #[functionalize]
//! cannot track", help: pass the list as a slice parameter).

// The bodies keep the shapes ports write (index loops, `&` on every tensor
// argument), which are what is tested.
#![allow(
    clippy::needless_range_loop,
    clippy::needless_borrows_for_generic_args,
    clippy::type_complexity
)]

mod common;

use common::iota;
use funcz::Tensor;

pub struct Momentum {
    pub m: Vec<Tensor>,
    pub beta: f32,
    pub steps: usize,
}

pub struct Adam {
    pub m: Vec<Tensor>,
    pub v: Vec<Tensor>,
    pub t: i32,
    pub lr: f32,
}

pub struct Pair {
    pub bufs: [Tensor; 2],
}

pub struct Outer {
    pub state: Momentum,
}

/// The values of a list of tensors.
fn vals(ts: &[Tensor]) -> Vec<Vec<f32>> {
    ts.iter().map(|t| t.to_vec()).collect()
}

fn momentum(lens: &[usize]) -> Momentum {
    Momentum {
        m: lens.iter().map(|&n| iota(&[n])).collect(),
        beta: 0.9,
        steps: 0,
    }
}

fn params(lens: &[usize]) -> Vec<Tensor> {
    lens.iter().map(|&n| iota(&[n]).mul(0.5)).collect()
}

fn grads(lens: &[usize]) -> Vec<Tensor> {
    lens.iter().map(|&n| iota(&[n]).add(1.0)).collect()
}

/// Runs the three variants of a step on fresh state and checks the state,
/// the parameters, the other fields and the result agree with the
/// original's (and that the original changed the state).
fn check_step<R: PartialEq + std::fmt::Debug>(
    name: &str,
    lens: &[usize],
    f: [fn(&mut Momentum, &mut [Tensor], &[Tensor]) -> R; 3],
) {
    let run = |f: fn(&mut Momentum, &mut [Tensor], &[Tensor]) -> R| {
        let mut opt = momentum(lens);
        let caller_m: Vec<Tensor> = opt.m.iter().map(|t| t.shallow_clone()).collect();
        let mut p = params(lens);
        let g = grads(lens);
        let r = f(&mut opt, &mut p, &g);
        // The caller's handles to the state see the update (the same
        // tensors were updated, not replaced).
        let shared = vals(&caller_m[..caller_m.len().min(opt.m.len())]);
        (vals(&opt.m), vals(&p), opt.steps, opt.m.len(), shared, r)
    };
    let want = run(f[0]);
    assert_ne!(
        want.0,
        vals(&momentum(lens).m),
        "{name}: the original updates the state"
    );
    assert_eq!(run(f[1]), want, "{name}: mutations mode");
    assert_eq!(run(f[2]), want, "{name}: mutations_and_views mode");
}

// The repro of the refusal: SGD with momentum on a `Vec<Tensor>` field.
variants!(sgd, sgd_f, sgd_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    opt.steps += 1;
    for i in 0..p.len() {
        opt.m[i].mul_(opt.beta).add_(&g[i]);
        p[i].sub_(&opt.m[i]);
    }
});

#[test]
fn momentum_state_in_a_vec_field() {
    check_step("sgd", &[3, 2, 4], [sgd, sgd_f, sgd_fv]);
}

// Iterating the field's elements, zipped with the parameters.
variants!(zipped, zipped_f, zipped_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    for (m, gi) in opt.m.iter().zip(g.iter()) {
        m.mul_(opt.beta).add_(gi);
    }
    for (pi, m) in p.iter().zip(opt.m.iter()) {
        pi.sub_(m);
    }
});

#[test]
fn iterating_the_field() {
    check_step("zipped", &[3, 2], [zipped, zipped_f, zipped_fv]);
}

// `for (i, m) in opt.m.iter_mut().enumerate()` and a reference name.
variants!(enumerated, enumerated_f, enumerated_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    for (i, m) in opt.m.iter_mut().enumerate() {
        m.add_(&g[i]);
    }
    let first = &opt.m[0];
    first.mul_(2.0);
    p[0].copy_(&opt.m[0]);
});

#[test]
fn enumerating_the_field_and_naming_an_element() {
    check_step(
        "enumerated",
        &[3, 2],
        [enumerated, enumerated_f, enumerated_fv],
    );
}

// Views of elements, written and read. (A view of an element kept across
// the element's mutation is refused, as for a collection input:
// funcz-ui/tests/ui/regress_elem_view_stale.rs.)
variants!(element_views, element_views_f, element_views_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) -> Vec<f32> {
    opt.m[0].narrow(0, 1, 2).mul_(10.0);
    opt.m[1].select(0, 0).add_(&g[1].select(0, 1));
    let head = opt.m[0].narrow(0, 0, 2);
    head.sum().to_vec()
});

#[test]
fn views_of_field_elements() {
    check_step(
        "element_views",
        &[3, 2],
        [element_views, element_views_f, element_views_fv],
    );
}

// Lazy state: the list is filled on the first step (PyTorch's
// `if len(state) == 0`), then updated; the caller's `Vec` gets the length.
variants!(lazy, lazy_f, lazy_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    if opt.m.len() < p.len() {
        opt.m.clear();
        for t in p.iter() {
            opt.m.push(Tensor::zeros_like(t));
        }
    }
    for i in 0..p.len() {
        opt.m[i].mul_(0.5).add_(&g[i]);
    }
});

#[test]
fn a_list_filled_in_the_body() {
    // `momentum(lens)` has the full length: the update path.
    check_step("lazy", &[3, 2], [lazy, lazy_f, lazy_fv]);
    // An empty state: the fill path.
    let run = |f: fn(&mut Momentum, &mut [Tensor], &[Tensor])| {
        let mut opt = Momentum {
            m: Vec::new(),
            beta: 0.9,
            steps: 0,
        };
        let mut p = params(&[3, 2]);
        f(&mut opt, &mut p, &grads(&[3, 2]));
        vals(&opt.m)
    };
    let want = run(lazy);
    assert_eq!(want.len(), 2);
    assert_eq!(run(lazy_f), want);
    assert_eq!(run(lazy_fv), want);
}

// An early return: the state is written back there too.
variants!(early, early_f, early_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) -> usize {
    for i in 0..p.len() {
        opt.m[i].add_(&g[i]);
        if i == 0 && opt.beta < 1.0 {
            return i;
        }
        p[i].sub_(&opt.m[i]);
    }
    p.len()
});

#[test]
fn an_early_return_writes_the_list_back() {
    check_step("early", &[3, 2], [early, early_f, early_fv]);
}

// Adam, as a method on its state struct.
impl Adam {
    variants!(step_orig, step_f, step_fv; fn (&mut self, params: &mut [Tensor], grads: &[Tensor]) {
        self.t += 1;
        let (b1, b2) = (0.9f32, 0.999f32);
        let bc1 = 1.0 - b1.powi(self.t);
        let bc2 = 1.0 - b2.powi(self.t);
        for i in 0..params.len() {
            self.m[i].mul_(b1).add_(&(&grads[i] * (1.0 - b1)));
            self.v[i].mul_(b2).addcmul_(&grads[i], &grads[i], 1.0 - b2);
            let denom = (&self.v[i] / bc2).sqrt();
            denom.add_(1e-8);
            params[i].addcdiv_(&self.m[i], &denom, -self.lr / bc1);
        }
    });
}

#[test]
fn adam_as_a_method_on_its_state() {
    let lens = [4, 3];
    let run = |f: fn(&mut Adam, &mut [Tensor], &[Tensor])| {
        let mut s = Adam {
            m: params(&lens),
            v: grads(&lens),
            t: 0,
            lr: 0.01,
        };
        let mut p = params(&lens);
        for _ in 0..3 {
            f(&mut s, &mut p, &grads(&lens));
        }
        (vals(&s.m), vals(&s.v), vals(&p), s.t)
    };
    let want = run(Adam::step_orig);
    assert_eq!(want.3, 3);
    assert_eq!(run(Adam::step_f), want);
    assert_eq!(run(Adam::step_fv), want);
}

// A struct reached through a shared reference: its tensors are updated
// through their shared storage, the list itself cannot change.

variants!(shared, shared_f, shared_fv; fn (opt: &Momentum, g: &[Tensor]) -> Tensor {
    opt.m[0].add_(&g[0]);
    opt.m[1].mul_(3.0);
    opt.m[0].narrow(0, 0, 2).add(0.0)
});

#[test]
fn a_list_behind_a_shared_reference() {
    let run = |f: fn(&Momentum, &[Tensor]) -> Tensor| {
        let opt = momentum(&[3, 2]);
        let out = f(&opt, &grads(&[3, 2]));
        (vals(&opt.m), out.to_vec())
    };
    let want = run(shared);
    assert_eq!(want.1, vec![1.0, 3.0]);
    assert_eq!(run(shared_f), want);
    assert_eq!(run(shared_fv), want);
}

// A fixed-size array field and a nested field.

variants!(arrays, arrays_f, arrays_fv; fn (pair: &mut Pair, o: &mut Outer, x: &Tensor) {
    pair.bufs[0].add_(x);
    pair.bufs[1].narrow(0, 0, 1).copy_(&pair.bufs[0].narrow(0, 2, 1));
    o.state.m[1].mul_(2.0).add_(&pair.bufs[1]);
    o.state.steps += 1;
});

#[test]
fn an_array_field_and_a_nested_field() {
    let run = |f: fn(&mut Pair, &mut Outer, &Tensor)| {
        let mut pair = Pair {
            bufs: [iota(&[3]), iota(&[3]).neg()],
        };
        let mut o = Outer {
            state: momentum(&[2, 3]),
        };
        f(&mut pair, &mut o, &iota(&[3]).add(1.0));
        (vals(&pair.bufs), vals(&o.state.m), o.state.steps)
    };
    let want = run(arrays);
    assert_eq!(want.0[1][0], 5.0);
    assert_eq!(run(arrays_f), want);
    assert_eq!(run(arrays_fv), want);
}

// A parameter that shares storage with an element of the list: the entry
// check refuses it (the write-back would not be the original's order).
variants!(aliased, aliased_f, aliased_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    opt.m[0].add_(1.0);
    p[0].mul_(2.0);
});

#[test]
fn a_parameter_aliasing_a_list_element_is_refused_at_entry() {
    let mut opt = momentum(&[3]);
    let mut p = vec![opt.m[0].shallow_clone()];
    aliased(&mut opt, &mut p, &[]);
    assert_eq!(p[0].to_vec(), vec![2.0, 4.0, 6.0], "the original runs");
    for f in [aliased_f, aliased_fv] {
        let mut opt = momentum(&[3]);
        let mut p = vec![opt.m[0].shallow_clone()];
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            f(&mut opt, &mut p, &[]);
        }));
        let msg = r.expect_err("aliasing refused");
        let msg = msg
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| msg.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        assert!(msg.contains("opt.m"), "{msg}");
    }
}

// Replacing an element of a collection input (found writing these tests:
// before, the exit copied the new element's data into the tensor the slot
// held before, so the caller's other handles to it saw data the original
// never wrote there; and an element assigned a handle of another tensor,
// then updated, left that tensor unchanged).
variants!(replace_param, replace_param_f, replace_param_fv; fn (xs: &mut [Tensor], g: &Tensor) {
    xs[0].add_(1.0);
    xs[1].mul_(-1.0);
    xs[1] = g.mul(2.0);
    xs[1].add_(1.0);
});

variants!(replace_field, replace_field_f, replace_field_fv; fn (opt: &mut Momentum, p: &mut [Tensor], g: &[Tensor]) {
    opt.m[1] = g[1].mul(2.0);
    opt.m[1].add_(1.0);
    opt.m[0].sub_(&opt.m[1].sum());
});

variants!(replace_by_value, replace_by_value_f, replace_by_value_fv; fn (mut xs: Vec<Tensor>, g: &Tensor) -> Vec<Tensor> {
    xs[0].add_(1.0);
    xs[1] = g.mul(3.0);
    xs[1].add_(1.0);
    xs
});

#[test]
fn regress_replaced_element_leaves_the_old_tensor() {
    let run = |f: fn(&mut [Tensor], &Tensor)| {
        let mut xs = vec![iota(&[2]), iota(&[2])];
        let old = xs[1].shallow_clone();
        let g = iota(&[2]).add(5.0);
        f(&mut xs, &g);
        (vals(&xs), old.to_vec(), g.to_vec())
    };
    let want = run(replace_param);
    assert_eq!(
        want.1,
        vec![0.0, -1.0],
        "the old element keeps the update before the assignment"
    );
    assert_eq!(run(replace_param_f), want);
    assert_eq!(run(replace_param_fv), want);

    let run = |f: fn(&mut Momentum, &mut [Tensor], &[Tensor])| {
        let mut opt = momentum(&[3, 2]);
        let old = opt.m[1].shallow_clone();
        f(&mut opt, &mut params(&[3, 2]), &grads(&[3, 2]));
        (vals(&opt.m), old.to_vec())
    };
    let want = run(replace_field);
    assert_eq!(want.1, vec![0.0, 1.0]);
    assert_eq!(run(replace_field_f), want);
    assert_eq!(run(replace_field_fv), want);

    let run = |f: fn(Vec<Tensor>, &Tensor) -> Vec<Tensor>| {
        let xs = vec![iota(&[2]), iota(&[2])];
        let (old0, old1) = (xs[0].shallow_clone(), xs[1].shallow_clone());
        let out = f(xs, &iota(&[2]));
        (vals(&out), old0.to_vec(), old1.to_vec())
    };
    let want = run(replace_by_value);
    assert_eq!(want.2, vec![0.0, 1.0]);
    assert_eq!(run(replace_by_value_f), want);
    assert_eq!(run(replace_by_value_fv), want);
}

// Traced: the graphs stay pure, values as the original (check_values).
#[test]
fn regress_replaced_element_traced() {
    common::check_values(
        "replace_param",
        &[iota(&[2]), iota(&[2]), iota(&[2])],
        |v, x| {
            let mut xs = vec![x[0].shallow_clone(), x[1].shallow_clone()];
            [replace_param, replace_param_f, replace_param_fv][v](&mut xs, &x[2]);
            xs
        },
    );
}

variants!(alias_element, alias_element_f, alias_element_fv; fn (xs: &mut [Tensor], g: &Tensor) -> f32 {
    xs[1] = g.shallow_clone();
    xs[1].add_(1.0);
    g.sum().item()
});

#[test]
fn regress_element_assigned_a_shared_handle_panics() {
    let mut xs = vec![iota(&[2]), iota(&[2])];
    let g = iota(&[2]);
    assert_eq!(
        alias_element(&mut xs, &g),
        3.0,
        "the original updates g through xs[1]"
    );
    for f in [alias_element_f, alias_element_fv] {
        let mut xs = vec![iota(&[2]), iota(&[2])];
        let g = iota(&[2]);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut xs, &g)));
        let msg = r.expect_err("refused at run time");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("an element of `xs`") && msg.contains("clone()"),
            "{msg}"
        );
        assert_eq!(g.to_vec(), vec![0.0, 1.0]);
    }
}

// A handle of another tensor stored in a slot and not updated: the
// caller's slot holds it, as the original's does.
variants!(store_handle, store_handle_f, store_handle_fv; fn (xs: &mut [Tensor], g: &Tensor) {
    xs[0].add_(1.0);
    xs[1] = g.shallow_clone();
});

#[test]
fn regress_stored_handle_reaches_the_callers_slot() {
    for f in [store_handle, store_handle_f, store_handle_fv] {
        let mut xs = vec![iota(&[2]), iota(&[2])];
        let old = xs[1].shallow_clone();
        let g = iota(&[2]).add(5.0);
        f(&mut xs, &g);
        assert!(xs[1].same_storage(&g));
        assert_eq!(old.to_vec(), vec![0.0, 1.0]);
        assert_eq!(xs[0].to_vec(), vec![1.0, 2.0]);
    }
}

// The help of `elem_ref_replaced` (funcz-ui/tests/ui/elem_ref_replaced.rs):
// index the element.
variants!(reset_indexed, reset_indexed_f, reset_indexed_fv; fn (xs: &mut [Tensor], g: &Tensor) {
    xs[0].add_(1.0);
    for i in 0..xs.len() {
        xs[i] = g.mul(2.0);
    }
});

#[test]
fn the_help_for_an_element_replaced_in_a_loop_works() {
    let run = |f: fn(&mut [Tensor], &Tensor)| {
        let mut xs = vec![iota(&[2]), iota(&[2])];
        let old: Vec<Tensor> = xs.iter().map(|t| t.shallow_clone()).collect();
        f(&mut xs, &iota(&[2]).add(5.0));
        (vals(&xs), vals(&old))
    };
    let want = run(reset_indexed);
    assert_eq!(want.1, vec![vec![1.0, 2.0], vec![0.0, 1.0]]);
    assert_eq!(run(reset_indexed_f), want);
    assert_eq!(run(reset_indexed_fv), want);
}

// Reordering methods: positions no longer name the caller's tensors, so
// the caller's slots are handed the body's elements (the probe of
// `xs.swap`, `xs.remove` + `push`: before, the caller's tensors got each
// other's data).
variants!(swap_then_update, swap_then_update_f, swap_then_update_fv; fn (xs: &mut Vec<Tensor>, g: &Tensor) -> Tensor {
    xs[0].add_(1.0);
    xs.swap(0, 1);
    xs[1].add_(10.0);
    let first = xs.remove(0);
    xs.push(first.mul(2.0));
    xs[0].add_(g);
    first
});

#[test]
fn regress_reordered_collection() {
    let run = |f: fn(&mut Vec<Tensor>, &Tensor) -> Tensor| {
        let mut xs = vec![iota(&[2]), iota(&[2]).add(10.0)];
        let out = f(&mut xs, &iota(&[2]));
        (vals(&xs), out.to_vec())
    };
    let want = run(swap_then_update);
    assert_eq!(run(swap_then_update_f), want);
    assert_eq!(run(swap_then_update_fv), want);
    // A caller's handle kept elsewhere: refused at the reorder.
    for f in [swap_then_update_f, swap_then_update_fv] {
        let mut xs = vec![iota(&[2]), iota(&[2]).add(10.0)];
        let kept = xs[0].shallow_clone();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut xs, &iota(&[2]))));
        let msg = r.expect_err("refused");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("`xs.swap(..)`"), "{msg}");
        drop(kept);
    }
}

fn replace_doubled(t: &mut Tensor, g: &Tensor) {
    *t = g.mul(2.0);
}

// An element handed `&mut` to a call that replaces it (probe after
// ccb7b6d: the caller's old tensor got the new element's data).
variants!(replaced_by_helper, replaced_by_helper_f, replaced_by_helper_fv; fn (xs: &mut [Tensor], g: &Tensor) {
    xs[0].add_(1.0);
    replace_doubled(&mut xs[0], g);
    xs[0].add_(1.0);
});

variants!(replaced_by_swap, replaced_by_swap_f, replaced_by_swap_fv; fn (xs: &mut [Tensor], g: &Tensor) {
    let mut t = g.mul(2.0);
    xs[0].add_(1.0);
    std::mem::swap(&mut xs[0], &mut t);
    xs[0].add_(1.0);
});

#[test]
fn regress_element_replaced_by_a_call() {
    for f in [
        [
            replaced_by_helper,
            replaced_by_helper_f,
            replaced_by_helper_fv,
        ],
        [replaced_by_swap, replaced_by_swap_f, replaced_by_swap_fv],
    ] {
        let run = |f: fn(&mut [Tensor], &Tensor)| {
            let mut xs = vec![iota(&[2]), iota(&[2]).add(10.0)];
            let old: Vec<Tensor> = xs.iter().map(|t| t.shallow_clone()).collect();
            f(&mut xs, &iota(&[2]).add(5.0));
            (vals(&xs), vals(&old))
        };
        let want = run(f[0]);
        assert_eq!(
            want.1[0],
            vec![1.0, 2.0],
            "the old tensor keeps the update before the call"
        );
        assert_eq!(run(f[1]), want);
        assert_eq!(run(f[2]), want);
    }
}

pub struct Cfg {
    pub w: Tensor,
    pub tied: Tensor,
    pub ws: Vec<Tensor>,
    pub scale: f32,
}

// A field the body only reads, sharing storage with an input it mutates
// (probe after ae87208: the read saw the input's value at entry, in both
// modes): refused at entry. Fields sharing storage with each other only
// (tied weights) are fine.
variants!(reads_field, reads_field_f, reads_field_fv; fn (x: &mut Tensor, cfg: &Cfg) -> Vec<f32> {
    x.add_(1.0);
    let a = cfg.w.mul(cfg.scale);
    let b = cfg.ws[0].add(&cfg.tied);
    a.add(&b).to_vec()
});

#[test]
fn regress_read_field_aliasing_a_mutated_input_is_refused() {
    let x = iota(&[2]);
    let cfg = |w: &Tensor| Cfg {
        w: w.shallow_clone(),
        tied: w.shallow_clone(),
        ws: vec![iota(&[2])],
        scale: 2.0,
    };
    // Tied weights, no aliasing with `x`: as the original.
    let w = iota(&[2]).add(3.0);
    let want = reads_field(&mut x.clone(), &cfg(&w));
    assert_eq!(reads_field_f(&mut x.clone(), &cfg(&w)), want);
    assert_eq!(reads_field_fv(&mut x.clone(), &cfg(&w)), want);
    // `cfg.w` is `x`: refused, naming both.
    for f in [reads_field_f, reads_field_fv] {
        let mut x = iota(&[2]);
        let c = cfg(&x);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut x, &c)));
        let msg = r.expect_err("refused");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("`cfg.w`") && msg.contains("`x`"), "{msg}");
    }
}

/// A decoder's KV cache: one cache tensor per layer in `Vec` fields, a
/// one-row window written per step, the filled prefix read back.
pub struct LayerCache {
    pub k: Vec<Tensor>,
    pub v: Vec<Tensor>,
    pub len: usize,
}

impl LayerCache {
    variants!(append, append_f, append_fv; fn (&mut self, layer: usize, k: &Tensor, v: &Tensor) -> Tensor {
        let pos = self.len;
        self.k[layer].narrow(0, pos as i64, 1).copy_(k);
        self.v[layer].narrow(0, pos as i64, 1).copy_(v);
        if layer + 1 == self.k.len() {
            self.len += 1;
        }
        let keys = self.k[layer].narrow(0, 0, pos as i64 + 1);
        let scores = keys.matmul(&k.t());
        scores.softmax(0).t().matmul(&self.v[layer].narrow(0, 0, pos as i64 + 1))
    });
}

#[test]
fn a_per_layer_kv_cache_in_vec_fields() {
    let run = |f: fn(&mut LayerCache, usize, &Tensor, &Tensor) -> Tensor| {
        let mut c = LayerCache {
            k: vec![Tensor::zeros(&[4, 3]), Tensor::zeros(&[4, 3])],
            v: vec![Tensor::zeros(&[4, 3]), Tensor::zeros(&[4, 3])],
            len: 0,
        };
        let caller_k0 = c.k[0].shallow_clone();
        let mut outs = Vec::new();
        for step in 0..3 {
            for layer in 0..2 {
                let k = iota(&[1, 3]).add((step * 2 + layer) as f32);
                let v = iota(&[1, 3]).mul(0.5).add(layer as f32);
                outs.push(f(&mut c, layer, &k, &v).to_vec());
            }
        }
        (outs, vals(&c.k), vals(&c.v), c.len, caller_k0.to_vec())
    };
    let want = run(LayerCache::append);
    assert_eq!(want.3, 3);
    assert_eq!(want.4, want.1[0], "the caller's handle sees the cache rows");
    assert_eq!(run(LayerCache::append_f), want);
    assert_eq!(run(LayerCache::append_fv), want);
}

// ---------- compound assignments on fields of unknown type ----------

pub struct Stats {
    pub counts: Vec<f32>,
    pub n: f32,
    pub w: Tensor,
    pub m: Vec<Tensor>,
}

fn stats(x: &[Tensor]) -> Stats {
    Stats {
        counts: vec![-3.0, 4.0],
        n: 0.0,
        w: x[0].shallow_clone(),
        m: vec![x[1].shallow_clone(), x[2].shallow_clone()],
    }
}

// Numbers in a struct beside tensors, compound-assigned and used with
// methods tensors also have (`abs`, `max`, `sqrt`): taken for tensors, they
// failed to compile (E0277 "tracks `Vec<f32>` as a list of tensors" and
// E0308, at the attribute).
variants!(counters, counters_f, counters_fv; fn (s: &mut Stats, x: &Tensor) -> f32 {
    s.n += 1.0;
    s.counts[0] += 1.0;
    s.counts[1] -= s.counts[0].abs();
    s.w.add_(x);
    x.mul_(s.n.max(1.0).sqrt());
    s.counts[1].max(s.n)
});

#[test]
fn regress_numbers_compound_assigned_beside_tensors() {
    common::check(
        "counters",
        &[iota(&[3]), iota(&[3]), iota(&[3]), iota(&[3])],
        |v, x| {
            let mut s = stats(x);
            let r = [counters, counters_f, counters_fv][v](&mut s, &x[3]);
            assert_eq!((s.n, s.counts.clone(), r), (1.0, vec![-2.0, 2.0], 2.0));
            vec![s.w.shallow_clone()]
        },
    );
}

// The help of `untracked_compound_tensor` (funcz-ui): the refused
// `s.w *= 0.9` written as the in-place method.
fn norm(t: &Tensor) -> Tensor {
    t.mul(t).sum()
}

variants!(compound_help, compound_help_f, compound_help_fv; fn (s: &mut Stats, g: &Tensor) -> Tensor {
    s.n += 1.0;
    s.w.mul_(0.9);
    norm(&s.w) + g
});

#[test]
fn the_help_for_an_untracked_compound_works() {
    let [g, _] = common::check(
        "compound_help",
        &[iota(&[3]), iota(&[3]), iota(&[3]), iota(&[3]).add(1.0)],
        |v, x| {
            let mut s = stats(x);
            vec![[compound_help, compound_help_f, compound_help_fv][v](
                &mut s, &x[3],
            )]
        },
    );
    assert!(g.ops().contains(&"mul"), "{g}");
}

// Tensor fields only compound-assigned, proven tensors by a use numbers do
// not have: `.clone()`, a reference combined by an operator.
variants!(compound_proven, compound_proven_f, compound_proven_fv; fn (s: &mut Stats, g: &Tensor) -> Tensor {
    s.w += 1.0;
    let c = s.w.clone();
    s.w *= g;
    s.m[1] -= g;
    let h = &s.m[1] * 2.0;
    c + h
});

#[test]
fn compound_assigned_fields_used_as_only_tensors_are_tracked() {
    let [g, _] = common::check(
        "compound_proven",
        &[iota(&[3]), iota(&[3]), iota(&[3]), iota(&[3]).add(1.0)],
        |v, x| {
            let mut s = stats(x);
            vec![[compound_proven, compound_proven_f, compound_proven_fv][v](
                &mut s, &x[3],
            )]
        },
    );
    // Both fields are written back to the caller's tensors.
    assert_eq!(g.ops().iter().filter(|o| **o == "copy_").count(), 2, "{g}");
}

// Tensor fields only compound-assigned, proven tensors by what is assigned:
// a tensor parameter, a local bound to a tensor, a reference.
variants!(compound_rhs, compound_rhs_f, compound_rhs_fv; fn (s: &mut Stats, g: &Tensor) {
    let u = g.mul(0.5);
    s.w -= &u * 2.0;
    s.m[0] += g;
    s.m[1] *= &s.w;
});

#[test]
fn compound_assigned_fields_given_tensors_are_tracked() {
    let [g, _] = common::check(
        "compound_rhs",
        &[iota(&[3]), iota(&[3]), iota(&[3]), iota(&[3]).add(1.0)],
        |v, x| {
            let mut s = stats(x);
            [compound_rhs, compound_rhs_f, compound_rhs_fv][v](&mut s, &x[3]);
            vec![]
        },
    );
    assert_eq!(g.ops().iter().filter(|o| **o == "copy_").count(), 3, "{g}");
}

// A list of numbers updated through loop variables and element references,
// with methods tensors have too: its loop variable's `*c += 1.0` made the
// list a tensor list (E0277 "tracks `Vec<f32>` as a list of tensors").
variants!(number_list, number_list_f, number_list_fv; fn (s: &mut Stats, x: &Tensor) -> f32 {
    for c in s.counts.iter_mut() {
        *c += 1.0;
    }
    let e = &s.counts[0];
    let a = e.abs();
    for c in s.counts.iter() {
        x.add_(c.sqrt());
    }
    s.w.add_(a);
    a + s.counts.iter().map(|c| c.abs()).sum::<f32>()
});

#[test]
fn regress_a_list_of_numbers_updated_through_loop_variables() {
    common::check(
        "number_list",
        &[iota(&[3]), iota(&[3]), iota(&[3]), iota(&[3])],
        |v, x| {
            let mut s = stats(x);
            s.counts = vec![3.0, 8.0];
            let r = [number_list, number_list_f, number_list_fv][v](&mut s, &x[3]);
            assert_eq!((r, s.counts.clone()), (4.0 + 4.0 + 9.0, vec![4.0, 9.0]));
            vec![s.w.shallow_clone()]
        },
    );
}

// The help of `untracked_compound_tensor`'s loop (`*a *= 0.9` refused):
// the in-place method; and the loop variable proven a tensor by a use.
variants!(list_loops, list_loops_f, list_loops_fv; fn (s: &mut Stats, x: &Tensor) {
    for a in s.m.iter_mut() {
        a.mul_(0.9);
    }
    for (a, c) in s.m.iter_mut().zip(s.counts.iter_mut()) {
        *a += 1.0;
        *c += 1.0;
        x.add_(&*a);
    }
});

#[test]
fn compound_assigned_loop_variables_of_a_tensor_list() {
    let [g, _] = common::check(
        "list_loops",
        &[iota(&[3]), iota(&[3]), iota(&[3]), iota(&[3])],
        |v, x| {
            let mut s = stats(x);
            [list_loops, list_loops_f, list_loops_fv][v](&mut s, &x[3]);
            assert_eq!(s.counts, vec![-2.0, 5.0]);
            vec![]
        },
    );
    assert_eq!(g.ops().iter().filter(|o| **o == "copy_").count(), 3, "{g}");
}

// A struct parameter's name bound again to another struct, whose number
// field is compound-assigned: the entry's not-a-tensor check named the
// field on the parameter, which has no such field (E0609 at the user's
// line, for code the original compiles).
pub struct Weights {
    pub w: Tensor,
}

variants!(shadowed_base, shadowed_base_f, shadowed_base_fv; fn (s: &Weights, x: &Tensor) -> f32 {
    x.add_(&s.w);
    let mut s = Stats { counts: vec![], n: 1.0, w: x.clone(), m: vec![] };
    s.n += 2.0;
    s.n
});

#[test]
fn regress_a_shadowed_struct_parameter_with_a_number_field() {
    common::check("shadowed_base", &[iota(&[2]), iota(&[2])], |v, x| {
        let s = Weights {
            w: x[0].shallow_clone(),
        };
        let r = [shadowed_base, shadowed_base_f, shadowed_base_fv][v](&s, &x[1]);
        assert_eq!(r, 3.0);
        vec![]
    });
}

// A block binds a mutated struct parameter's name again, then moves the
// new binding (`let mut s = s;`): the move named the local, but the check
// of whole uses took it for the parameter and refused the function ("`s`
// is used as a whole", for code the original compiles). Found by the
// differential generator (seed 6109). After the block `s` is the parameter
// again: its fields are tracked and written back.
variants!(shadowed_in_block, shadowed_in_block_f, shadowed_in_block_fv; fn (s: &mut Weights, x: &Tensor, y: &mut Tensor) -> Tensor {
    s.w.mul_(2.0);
    {
        let s = Stats { counts: vec![], n: 0.5, w: x.clone(), m: vec![] };
        let mut s = s;
        s.n += 2.0;
        y.add_(&s.w.mul(s.n).sum());
    }
    s.w.add_(&*y);
    s.w.clone()
});

#[test]
fn regress_a_struct_parameter_shadowed_in_a_block_and_moved() {
    common::check(
        "shadowed_in_block",
        &[iota(&[2]), iota(&[2]).add(1.0), iota(&[2])],
        |v, t| {
            let (a, b) = t.split_at_mut(1);
            let (b, c) = b.split_at_mut(1);
            let mut s = Weights {
                w: a[0].shallow_clone(),
            };
            let r = [shadowed_in_block, shadowed_in_block_f, shadowed_in_block_fv][v](
                &mut s, &b[0], &mut c[0],
            );
            vec![r]
        },
    );
}

// The help of an in-place op on a field of a struct made in the function
// (funcz-ui/tests/ui/untracked_local_struct_field.rs): the out-of-place op,
// assigned, compiles and gives the original's values.
pub struct Scaled {
    pub a: Tensor,
    pub n: f32,
}

variants!(local_struct_field, local_struct_field_f, local_struct_field_fv; fn (x: &Tensor, y: &mut Tensor) {
    let mut s = Scaled { a: x.clone(), n: 0.5 };
    s.n += 2.0;
    s.a = s.a.mul(s.n);
    y.add_(&s.a.sum());
});

#[test]
fn the_help_for_an_in_place_op_on_a_local_struct_field_works() {
    let [g, _] = common::check("local_struct_field", &[iota(&[3]), iota(&[3])], |v, t| {
        let (a, b) = t.split_at_mut(1);
        [
            local_struct_field,
            local_struct_field_f,
            local_struct_field_fv,
        ][v](&a[0], &mut b[0]);
        vec![]
    });
    assert!(g.is_functional(), "{g}");
    let (x, mut y) = (iota(&[3]), iota(&[3]));
    local_struct_field_f(&x, &mut y);
    assert_eq!(y.to_vec(), vec![7.5, 8.5, 9.5]);
}

// The same for a field the body only reads: `cfg.v` of the new binding was
// checked on the parameter (E0609); `cfg.w`, read from the parameter in the
// new binding's initializer, is still checked.
pub struct Holder {
    pub v: Tensor,
}

variants!(shadowed_reader, shadowed_reader_f, shadowed_reader_fv; fn (cfg: &Weights, x: &Tensor) -> Tensor {
    x.add_(1.0);
    let cfg = Holder { v: cfg.w.mul(2.0) };
    cfg.v.sum()
});

#[test]
fn regress_a_shadowed_struct_parameter_read_as_tensors() {
    let w = iota(&[2]).add(3.0);
    let run = |f: fn(&Weights, &Tensor) -> Tensor| {
        f(
            &Weights {
                w: w.shallow_clone(),
            },
            &iota(&[2]),
        )
        .to_vec()
    };
    let want = run(shadowed_reader);
    assert_eq!(run(shadowed_reader_f), want);
    assert_eq!(run(shadowed_reader_fv), want);
    // `cfg.w` is `x`: refused at entry, as before the shadowing.
    for f in [shadowed_reader_f, shadowed_reader_fv] {
        let x = iota(&[2]);
        let cfg = Weights {
            w: x.shallow_clone(),
        };
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&cfg, &x)));
        let msg = r.expect_err("refused");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("`cfg.w`") && msg.contains("`x`"), "{msg}");
    }
}

// Proven tensors by methods whose number twins take another argument
// (`x.max()`; a number's `max(other)`) or need `std::ops` imported
// (`x.mul(2.0)`).
variants!(proven_by_methods, proven_by_methods_f, proven_by_methods_fv; fn (s: &mut Stats) -> Tensor {
    s.w *= 0.5;
    s.w.mul(2.0) + s.w.max()
});

#[test]
fn compound_assigned_fields_proven_by_tensor_only_arities() {
    let [g, _] = common::check(
        "proven_by_methods",
        &[iota(&[3]), iota(&[3]), iota(&[3])],
        |v, x| {
            let mut s = stats(x);
            vec![[
                proven_by_methods,
                proven_by_methods_f,
                proven_by_methods_fv,
            ][v](&mut s)]
        },
    );
    assert_eq!(g.ops().iter().filter(|o| **o == "copy_").count(), 1, "{g}");
}

// A number field updated through a reference to it, beside the help for a
// tensor field updated so (`untracked_compound_tensor`'s
// `decay_through_a_reference`: `*v *= 0.9` refused; the field's own
// in-place method, `s.w.mul_(0.9)`, works: `v.mul_(..)` is refused as a
// `&mut` borrow of a tracked tensor, whose help is the same).
// Before the refusal, the tensor's `*v -= ..` stayed in the functional
// graph as `sub_`.
variants!(through_references, through_references_f, through_references_fv; fn (s: &mut Stats) {
    let c = &mut s.n;
    *c += 1.5;
    s.w.mul_(0.9);
});

#[test]
fn fields_updated_through_references() {
    let [g, _] = common::check(
        "through_references",
        &[iota(&[3]), iota(&[3]), iota(&[3])],
        |v, x| {
            let mut s = stats(x);
            [
                through_references,
                through_references_f,
                through_references_fv,
            ][v](&mut s);
            assert_eq!(s.n, 1.5);
            vec![]
        },
    );
    assert_eq!(g.ops().iter().filter(|o| **o == "copy_").count(), 1, "{g}");
}
