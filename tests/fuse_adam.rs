//! Multi-root fusion (`rt::fused_elems`): the Adam step's updates of
//! `m[i]`, `v[i]` and `params[i]`, with its temporaries folded in, run as
//! one pass in functionalized code when the elements allow it, and as
//! written otherwise. Either way the bits are the original program's
//! (checked on the raw bits, NaN payloads included), the traces are the
//! unfused code's, and the fast path is checked to have run (or not).

mod common;

use common::check;
use funcz::Tensor;

// The benchmark's Adam step.
variants!(adam, adam_f, adam_fv; fn (params: &mut [Tensor], grads: &[Tensor], m: &mut [Tensor], v: &mut [Tensor], lr: f32, step: i32) {
    let b1 = 0.9f32;
    let b2 = 0.999f32;
    let bc1 = 1.0 - b1.powi(step);
    let bc2 = 1.0 - b2.powi(step);
    for i in 0..params.len() {
        m[i].mul_(b1).add_(&(&grads[i] * (1.0 - b1)));
        v[i].mul_(b2).addcmul_(&grads[i], &grads[i], 1.0 - b2);
        let denom = (&v[i] / bc2).sqrt();
        denom.add_(1e-8);
        params[i].addcdiv_(&m[i], &denom, -lr / bc1);
    }
});

type Step = fn(&mut [Tensor], &[Tensor], &mut [Tensor], &mut [Tensor], f32, i32);

/// The state of one parameter list: params, grads, m, v.
#[derive(Clone)]
struct State {
    p: Vec<Tensor>,
    g: Vec<Tensor>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
}

impl State {
    /// Deep copies (a fresh buffer per tensor, same layout).
    fn deep(&self) -> State {
        let d = |ts: &[Tensor]| ts.iter().map(copy_layout).collect();
        State {
            p: d(&self.p),
            g: d(&self.g),
            m: d(&self.m),
            v: d(&self.v),
        }
    }

    fn bits(&self) -> Vec<Vec<u32>> {
        [&self.p, &self.m, &self.v]
            .into_iter()
            .flatten()
            .map(|t| t.to_vec().iter().map(|x| x.to_bits()).collect())
            .collect()
    }

    fn versions(&self) -> Vec<u64> {
        [&self.p, &self.m, &self.v]
            .into_iter()
            .flatten()
            .map(|t| t.version())
            .collect()
    }
}

/// A copy of `t` with its own buffer and, for a transposed 2-d tensor,
/// the same strides.
fn copy_layout(t: &Tensor) -> Tensor {
    if t.dim() == 2 && !t.is_contiguous() {
        t.t().clone().t()
    } else if t.storage_offset() > 0 {
        let n = t.numel();
        let c = Tensor::zeros(&[n + 100])
            .narrow(0, 100, n)
            .reshape(t.shape());
        c.copy_(t);
        c
    } else {
        t.contiguous().clone()
    }
}

/// Values with NaN, infinities, zeros and negative zeros sprinkled in.
fn values(n: usize, seed: u64, special: bool) -> Vec<f32> {
    let base = Tensor::randn(&[n], seed).to_vec();
    base.into_iter()
        .enumerate()
        .map(|(i, x)| match (special, i % 97) {
            (true, 3) => f32::NAN,
            (true, 11) => f32::INFINITY,
            (true, 17) => f32::NEG_INFINITY,
            (true, 29) => 0.0,
            (true, 31) => -0.0,
            (true, 43) => f32::from_bits(0x7fc0_1234), // a NaN with a payload
            _ => x,
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64, special: bool) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(values(n, seed, special), shape)
}

/// One parameter per shape; `v` is made non-negative (a second moment).
fn state(shapes: &[&[usize]], grad_shapes: &[&[usize]], special: bool) -> State {
    let mut s = State {
        p: vec![],
        g: vec![],
        m: vec![],
        v: vec![],
    };
    for (k, (shape, gshape)) in shapes.iter().zip(grad_shapes).enumerate() {
        let seed = 10 * k as u64;
        s.p.push(tensor(shape, seed + 1, false));
        s.g.push(tensor(gshape, seed + 2, special));
        s.m.push(tensor(shape, seed + 3, special));
        s.v.push(tensor(shape, seed + 4, false).abs());
    }
    s
}

/// Runs `steps` Adam steps with `f` on a deep copy of `s`; returns the
/// final state and how many fused passes ran.
fn run(f: Step, s: &State, steps: i32) -> (State, u64) {
    let mut s = s.deep();
    let before = funcz::rt::multi_passes();
    for step in 1..=steps {
        f(&mut s.p, &s.g, &mut s.m, &mut s.v, 1e-3, step);
    }
    (s, funcz::rt::multi_passes() - before)
}

/// Panics naming the first tensor and element whose bits differ.
fn same_bits(got: &State, want: &State, what: &str) {
    for (t, (a, b)) in got.bits().iter().zip(want.bits()).enumerate() {
        if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
            panic!(
                "{what}: tensor {t} (p, m, v per parameter) element {i}: {:#x} != {:#x}",
                a[i], b[i]
            );
        }
    }
}

/// The original, and both functionalized modes fused where possible and
/// never fused, give the same bits; returns the fused passes of each
/// functionalized mode.
fn agree(s: &State, steps: i32) -> [u64; 2] {
    let (want, none) = run(adam, s, steps);
    assert_eq!(none, 0);
    let mut passes = [0; 2];
    for (k, f) in [adam_f as Step, adam_fv].into_iter().enumerate() {
        let prev = funcz::rt::set_min_fused(usize::MAX);
        let (unfused, zero) = run(f, s, steps);
        funcz::rt::set_min_fused(prev);
        let (got, n) = run(f, s, steps);
        same_bits(&got, &want, &format!("variant {k}"));
        assert_eq!(zero, 0, "never fused when the threshold is never reached");
        same_bits(&unfused, &want, &format!("variant {k} unfused"));
        assert_eq!(got.versions(), unfused.versions(), "variant {k}: versions");
        passes[k] = n;
    }
    passes
}

#[test]
fn adam_fuses_into_one_pass_per_parameter_with_the_original_bits() {
    funcz::rt::set_min_fused(2048);
    let shapes: &[&[usize]] = &[&[5000], &[64, 100], &[2048], &[3, 5, 7, 20]];
    for special in [false, true] {
        let s = state(shapes, shapes, special);
        // Four parameters, three steps: twelve passes per mode.
        assert_eq!(agree(&s, 3), [12, 12], "special values: {special}");
    }
}

#[test]
fn small_parameters_run_as_written() {
    funcz::rt::set_min_fused(2048);
    let shapes: &[&[usize]] = &[&[1], &[3], &[7, 9], &[2047], &[2048]];
    let s = state(shapes, shapes, true);
    // Only the 2048-element parameter reaches the threshold.
    assert_eq!(agree(&s, 2), [2, 2]);
    // An empty parameter never fuses.
    let e: &[&[usize]] = &[&[0], &[4, 0]];
    funcz::rt::set_min_fused(0);
    assert_eq!(agree(&state(e, e, false), 2), [0, 0]);
    // With no threshold, tiny ones fuse too (and still agree).
    assert_eq!(agree(&state(&[&[1], &[3]], &[&[1], &[3]], true), 2), [4, 4]);
}

#[test]
fn broadcast_or_strided_operands_fall_back_to_the_ops() {
    funcz::rt::set_min_fused(2048);
    // Gradients that broadcast (a row, one element, a column): op by op.
    let shapes: &[&[usize]] = &[&[64, 100], &[64, 100], &[64, 100], &[64, 100]];
    let grads: &[&[usize]] = &[&[100], &[1], &[64, 1], &[64, 100]];
    let s = state(shapes, grads, true);
    assert_eq!(agree(&s, 2), [2, 2], "only the same-shape gradient fuses");
    // A non-contiguous element (transposed m, then grads, then params).
    for which in 0..3 {
        let mut s = state(&[&[64, 100]], &[&[64, 100]], true);
        let t = |x: &Tensor| x.t().contiguous().t();
        match which {
            0 => s.m[0] = t(&s.m[0]),
            1 => s.g[0] = t(&s.g[0]),
            _ => s.p[0] = t(&s.p[0]),
        }
        assert!(![&s.m[0], &s.g[0], &s.p[0]][which].is_contiguous());
        assert_eq!(agree(&s, 2), [0, 0], "strided tensor {which}");
    }
    // An element that is a view into a larger buffer (offset): not
    // donatable, op by op.
    let mut s = state(&[&[4096]], &[&[4096]], false);
    s.v[0] = Tensor::rand(&[5000], 9).narrow(0, 100, 4096);
    assert!(s.deep().v[0].storage_offset() > 0);
    assert_eq!(agree(&s, 2), [0, 0]);
}

#[test]
fn aliased_elements_are_refused_as_before() {
    funcz::rt::set_min_fused(0);
    // params[0] sharing m[1]'s buffer, an element in two lists: the
    // functionalized function refuses aliased inputs (before any run).
    let s = state(&[&[3000], &[3000]], &[&[3000], &[3000]], false);
    let mut p = s.p.clone();
    let mut m = s.m.clone();
    p[0] = m[1].shallow_clone();
    let mut v = s.v.clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        adam_f(&mut p, &s.g, &mut m, &mut v, 1e-3, 1)
    }));
    assert!(r.is_err(), "aliased params and m");
    let mut m = s.m.clone();
    let mut v = m.clone();
    v[0] = m[0].shallow_clone();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        adam_f(&mut s.p.clone(), &s.g, &mut m, &mut v, 1e-3, 1)
    }));
    assert!(r.is_err(), "one element in m and v");
}

#[test]
fn a_traced_adam_step_records_every_op_unfused() {
    funcz::rt::set_min_fused(0);
    let s = state(&[&[4096], &[16, 256]], &[&[4096], &[16, 256]], false);
    let ins: Vec<Tensor> = [&s.p, &s.g, &s.m, &s.v]
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let before = funcz::rt::multi_passes();
    let [g1, g2] = check("adam", &ins, |variant, x| {
        let (p, rest) = x.split_at_mut(2);
        let (g, rest) = rest.split_at_mut(2);
        let (m, v) = rest.split_at_mut(2);
        [adam, adam_f, adam_fv][variant](p, g, m, v, 1e-3, 1);
        vec![]
    });
    // The trace records each functional op; the fused pass never runs
    // while a trace records.
    assert_eq!(
        funcz::rt::multi_passes(),
        before,
        "no fused pass under a trace"
    );
    let per = "mul mul add mul addcmul div sqrt add addcdiv";
    for g in [&g1, &g2] {
        let ops = g.ops().join(" ");
        assert_eq!(ops.matches(per).count(), 2, "{g}");
    }
}

// Reads of a run's element see the earlier ops' result; an update of the
// same collection at another index, or a temporary used after the run,
// keep the statements as written (with the same values).
variants!(shapes_of_runs, shapes_of_runs_f, shapes_of_runs_fv; fn (a: &mut [Tensor], b: &mut [Tensor], g: &[Tensor], c: f32) -> Tensor {
    a[0].mul_(c).sub_(&g[0]);
    b[0].add_(&(&a[0] * 2.0)).div_((-&a[0]).exp());
    let t = (&b[0] - &g[0]).abs();
    t.mul_(0.5);
    a[0].addcmul_(&t, &g[0], -c);
    a[1].add_(1.0);
    b[0].sub_(&a[1]);
    let u = &a[0] + 1.0;
    u.relu_();
    b[0].clamp_min_(-1.0).hardtanh_(-2.0, 2.0).sigmoid_();
    u
});

#[test]
fn runs_read_their_own_updates_and_stop_where_they_must() {
    for min in [0, usize::MAX] {
        funcz::rt::set_min_fused(min);
        let n = 3000;
        let a = [tensor(&[n], 1, true), tensor(&[n], 2, false)];
        let b = [tensor(&[n], 3, true)];
        let g = vec![tensor(&[n], 4, true)];
        let mut want: Option<Vec<Vec<u32>>> = None;
        for f in [shapes_of_runs, shapes_of_runs_f, shapes_of_runs_fv] {
            let (mut a, mut b) = (
                a.iter().map(copy_layout).collect::<Vec<_>>(),
                b.iter().map(copy_layout).collect::<Vec<_>>(),
            );
            let before = funcz::rt::multi_passes();
            let u = f(&mut a, &mut b, &g, 0.75);
            let passes = funcz::rt::multi_passes() - before;
            let bits: Vec<Vec<u32>> = [&a[..], &b[..], &[u][..]]
                .concat()
                .iter()
                .map(|t| t.to_vec().iter().map(|x| x.to_bits()).collect())
                .collect();
            match &want {
                None => {
                    want = Some(bits);
                    assert_eq!(passes, 0);
                }
                Some(w) => {
                    assert_eq!(&bits, w);
                    // The first five statements, `a[1]`/`b[0]`'s pair and
                    // `b[0]`'s chain are runs (`u` is used after: not).
                    let expect = if min == 0 { 3 } else { 0 };
                    assert_eq!(passes, expect, "min_fused {min}");
                }
            }
        }
    }
}

// The Adam step of examples/adam.rs (bias-corrected moments as
// temporaries, a scalar power in an operand): one run too.
variants!(adam_hat, adam_hat_f, adam_hat_fv; fn (params: &mut [Tensor], grads: &[Tensor], m: &mut [Tensor], v: &mut [Tensor], lr: f32, step: i32) {
    let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
    for i in 0..params.len() {
        m[i].mul_(b1).add_(&(&grads[i] * (1.0 - b1)));
        v[i].mul_(b2).addcmul_(&grads[i], &grads[i], 1.0 - b2);
        let m_hat = &m[i] / (1.0 - b1.powi(step));
        let v_hat = &v[i] / (1.0 - b2.powi(step));
        params[i].addcdiv_(&m_hat, &(&v_hat.sqrt() + eps), -lr);
    }
});

#[test]
fn the_example_adam_step_fuses_with_its_temporaries() {
    funcz::rt::set_min_fused(2048);
    let shapes: &[&[usize]] = &[&[5000], &[64, 100], &[10]];
    let s = state(shapes, shapes, true);
    let (want, _) = run(adam_hat, &s, 3);
    for f in [adam_hat_f as Step, adam_hat_fv] {
        let (got, passes) = run(f, &s, 3);
        same_bits(&got, &want, "adam_hat");
        // Two parameters above the threshold, three steps.
        assert_eq!(passes, 6);
    }
}

fn doubled(x: &Tensor) -> Tensor {
    x * 2.0
}

// A name the macro cannot tell is a tensor (an unknown call's result),
// moved into an op: the fast path reads a clone, the statements move it.
variants!(moved_leaf, moved_leaf_f, moved_leaf_fv; fn (a: &mut [Tensor], b: &mut [Tensor], g: &Tensor) {
    let t = doubled(g);
    a[0].mul_(0.5).add_(t);
    b[0].sub_(&a[0]);
});

#[test]
fn a_moved_operand_is_read_through_a_clone() {
    funcz::rt::set_min_fused(2048);
    let g = tensor(&[3000], 7, true);
    let mut want: Option<Vec<Vec<u32>>> = None;
    for (k, f) in [moved_leaf, moved_leaf_f, moved_leaf_fv]
        .into_iter()
        .enumerate()
    {
        let mut a = [tensor(&[3000], 8, true)];
        let mut b = [tensor(&[3000], 9, false)];
        let before = funcz::rt::multi_passes();
        f(&mut a, &mut b, &g);
        assert_eq!(funcz::rt::multi_passes() - before, u64::from(k > 0));
        let bits: Vec<Vec<u32>> = [&a[0], &b[0]]
            .iter()
            .map(|t| t.to_vec().iter().map(|x| x.to_bits()).collect())
            .collect();
        match &want {
            None => want = Some(bits),
            Some(w) => assert!(&bits == w, "variant {k}"),
        }
    }
}
