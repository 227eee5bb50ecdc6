//! The math, reduction, shape and sorting ops of issue 12 (part 3) against
//! values recorded from PyTorch by `scripts/record_math_ops.py`
//! (`tests/fixtures/math_ops.json`), for f32, f64 and i64, with negative
//! dims, keepdim, broadcasting, ties, NaN, `correction` 0/1/2 and empty
//! dims. Every op with an in-place form is also run in place on a copy of
//! its input and must give the same values (and bump the version once).
#![cfg(feature = "serde")]

use funcz_runtime::{Element, FloatElement, Tensor};
use serde_json::Value as J;

/// A result: shape and values as f64.
#[derive(Debug, Clone)]
struct Res {
    shape: Vec<usize>,
    vals: Vec<f64>,
}

fn res<T: Element>(t: &Tensor<T>) -> Res {
    Res {
        shape: t.shape().to_vec(),
        vals: t.to_vec().into_iter().map(Element::to_f64).collect(),
    }
}

fn num(v: &J) -> f64 {
    match v {
        J::String(s) if s == "nan" => f64::NAN,
        J::String(s) if s == "inf" => f64::INFINITY,
        J::String(s) if s == "-inf" => f64::NEG_INFINITY,
        J::Number(n) => n.as_f64().unwrap(),
        J::Bool(b) => *b as i64 as f64,
        _ => panic!("not a number: {v}"),
    }
}

fn ints(v: &J) -> Vec<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

fn shape_of(v: &J) -> Vec<usize> {
    v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

fn tensor<T: Element>(v: &J) -> Tensor<T> {
    let data: Vec<T> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| T::from_f64(num(x)))
        .collect();
    Tensor::from_vec(data, &shape_of(v))
}

struct Case<'a, T: Element> {
    x: Vec<Tensor<T>>,
    a: &'a [J],
}

impl<T: Element> Case<'_, T> {
    fn s(&self, i: usize) -> T {
        T::from_f64(num(&self.a[i]))
    }
    fn i(&self, i: usize) -> i64 {
        self.a[i].as_i64().unwrap()
    }
    fn b(&self, i: usize) -> bool {
        self.a[i].as_bool().unwrap()
    }
    fn f(&self, i: usize) -> f64 {
        num(&self.a[i])
    }
    fn dims(&self, i: usize) -> Vec<i64> {
        ints(&self.a[i])
    }
    fn opt_dim(&self, i: usize) -> Option<i64> {
        self.a[i].as_i64()
    }
}

/// Ops defined for every element type: `Some(outputs)` or `None` if `op`
/// is not one of them. In-place twins are checked along the way.
fn run_common<T: Element>(op: &str, c: &Case<T>) -> Option<Vec<Res>> {
    let x = &c.x[0];
    let one = |t: Tensor<T>| Some(vec![res(&t)]);
    let pair = |(a, b): (Tensor<T>, Tensor<i64>)| Some(vec![res(&a), res(&b)]);
    match op {
        "clamp_min" => {
            inplace_matches(x, |y| y.clamp_min_(c.s(0)), &x.clamp_min(c.s(0)));
            one(x.clamp_min(c.s(0)))
        }
        "clamp_max" => {
            inplace_matches(x, |y| y.clamp_max_(c.s(0)), &x.clamp_max(c.s(0)));
            one(x.clamp_max(c.s(0)))
        }
        "sign" => {
            inplace_matches(x, |y| y.sign_(), &x.sign());
            one(x.sign())
        }
        "maximum" => one(x.maximum(&c.x[1])),
        "minimum" => one(x.minimum(&c.x[1])),
        "add_scaled" => {
            let want = x.add_scaled(&c.x[1], c.s(0));
            if want.shape() == x.shape() {
                inplace_matches(x, |y| y.add_scaled_(&c.x[1], c.s(0)), &want);
            }
            one(want)
        }
        "sub_scaled" => {
            let want = x.sub_scaled(&c.x[1], c.s(0));
            if want.shape() == x.shape() {
                inplace_matches(x, |y| y.sub_scaled_(&c.x[1], c.s(0)), &want);
            }
            one(want)
        }
        "max" => one(x.max()),
        "min" => one(x.min()),
        "max_dim" => pair(x.max_dim(c.i(0), c.b(1))),
        "min_dim" => pair(x.min_dim(c.i(0), c.b(1))),
        "argmax" => Some(vec![res(&x.argmax(c.opt_dim(0), c.b(1)))]),
        "argmin" => Some(vec![res(&x.argmin(c.opt_dim(0), c.b(1)))]),
        "amax" => one(x.amax(c.dims(0), c.b(1))),
        "amin" => one(x.amin(c.dims(0), c.b(1))),
        "sum_dims" => one(x.sum_dims(c.dims(0), c.b(1))),
        "cumsum" => {
            inplace_matches(x, |y| y.cumsum_(c.i(0)), &x.cumsum(c.i(0)));
            one(x.cumsum(c.i(0)))
        }
        "cat" => one(Tensor::cat(&c.x, c.i(0))),
        "stack" => {
            let refs: Vec<&Tensor<T>> = c.x.iter().collect();
            one(Tensor::stack(&refs, c.i(0)))
        }
        "roll" => one(x.roll(c.dims(0), c.dims(1))),
        "flip" => one(x.flip(c.dims(0))),
        "repeat" => one(x.repeat(c.dims(0))),
        "tril" => {
            inplace_matches(x, |y| y.tril_(c.i(0)), &x.tril(c.i(0)));
            one(x.tril(c.i(0)))
        }
        "triu" => {
            inplace_matches(x, |y| y.triu_(c.i(0)), &x.triu(c.i(0)));
            one(x.triu(c.i(0)))
        }
        "squeeze_dims" => {
            let v = x.squeeze_dims(c.dims(0));
            assert!(v.same_storage(x), "squeeze_dims is a view");
            let copy = x.squeeze_dims_copy(c.dims(0));
            assert!(!copy.same_storage(x));
            assert_eq!(res(&copy).vals, res(&v).vals);
            one(v)
        }
        "sort" => pair(x.sort(c.i(0), c.b(1))),
        "topk" => pair(x.topk(c.i(0), c.i(1), c.b(2), c.b(3))),
        _ => None,
    }
}

/// Float-only ops.
fn run_float<T: FloatElement>(op: &str, c: &Case<T>) -> Option<Vec<Res>> {
    let x = &c.x[0];
    let one = |t: Tensor<T>| Some(vec![res(&t)]);
    macro_rules! unary_ip {
        ($f:ident, $f_:ident) => {{
            inplace_matches(x, |y| y.$f_(), &x.$f());
            one(x.$f())
        }};
    }
    match op {
        "rsqrt" => unary_ip!(rsqrt, rsqrt_),
        "reciprocal" => unary_ip!(reciprocal, reciprocal_),
        "sin" => unary_ip!(sin, sin_),
        "cos" => unary_ip!(cos, cos_),
        "erf" => unary_ip!(erf, erf_),
        "floor" => unary_ip!(floor, floor_),
        "round" => unary_ip!(round, round_),
        "silu" => one(x.silu()),
        "relu6" => one(x.relu6()),
        "gelu" => one(x.gelu(c.a[0].as_str().unwrap())),
        "softplus" => one(x.softplus(c.s(0), c.s(1))),
        "hardtanh" => {
            inplace_matches(
                x,
                |y| y.hardtanh_(c.s(0), c.s(1)),
                &x.hardtanh(c.s(0), c.s(1)),
            );
            one(x.hardtanh(c.s(0), c.s(1)))
        }
        "addcmul1" => one(x.addcmul1(&c.x[1], &c.x[2])),
        "addcdiv1" => one(x.addcdiv1(&c.x[1], &c.x[2])),
        "rsub_scalar" | "rdiv_scalar" => {
            let s = c.f(0);
            // Scalar-left operators exist for f32 and f64 only.
            let any: &dyn std::any::Any = x;
            let r = if let Some(x) = any.downcast_ref::<Tensor<f32>>() {
                let s = s as f32;
                res(&if op == "rsub_scalar" { s - x } else { s / x })
            } else {
                let x = any.downcast_ref::<Tensor<f64>>().unwrap();
                res(&if op == "rsub_scalar" { s - x } else { s / x })
            };
            Some(vec![r])
        }
        "mean_dims" => one(x.mean_dims(c.dims(0), c.b(1))),
        "var" => one(x.var(c.i(0))),
        "std" => one(x.std(c.i(0))),
        "var_dims" => one(x.var_dims(c.dims(0), c.i(1), c.b(2))),
        "std_dims" => one(x.std_dims(c.dims(0), c.i(1), c.b(2))),
        "var_mean" => {
            let (v, m) = x.var_mean(c.dims(0), c.i(1), c.b(2));
            Some(vec![res(&v), res(&m)])
        }
        "vector_norm" => one(x.vector_norm(c.f(0), c.dims(1), c.b(2))),
        "norm" => one(x.norm(c.f(0))),
        "softmax" => one(x.softmax(c.i(0))),
        "log_softmax" => one(x.log_softmax(c.i(0))),
        _ => None,
    }
}

/// Runs `ip` on a copy of `x`: it must return the receiver, bump the
/// version once and leave the same values as the functional `want`.
fn inplace_matches<T: Element>(
    x: &Tensor<T>,
    ip: impl Fn(&Tensor<T>) -> Tensor<T>,
    want: &Tensor<T>,
) {
    let y = x.clone();
    let v0 = y.version();
    let r = ip(&y);
    assert_eq!(r.id(), y.id(), "an in-place op returns its receiver");
    assert_eq!(y.version(), v0 + 1, "an in-place op bumps the version once");
    let (a, b) = (res(&y), res(want));
    assert_eq!(a.shape, b.shape);
    for (p, q) in a.vals.iter().zip(&b.vals) {
        assert!(p == q || (p.is_nan() && q.is_nan()), "in place {p} vs {q}");
    }
}

fn close(got: f64, want: f64, dtype: &str) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    let (abs, rel) = match dtype {
        "float32" => (2e-6, 2e-6),
        "float64" => (1e-12, 1e-12),
        _ => (0.0, 0.0),
    };
    (got - want).abs() <= abs + rel * want.abs()
}

/// Row-major index of `input` holding element `j` of lane `lane` of an
/// output whose dim `d` has size `k`.
fn lane_index(shape: &[usize], d: usize, k: usize, flat_out: usize, along: usize) -> usize {
    let inner: usize = shape[d + 1..].iter().product();
    let o = flat_out / (k * inner).max(1);
    let i = flat_out % inner.max(1);
    o * shape[d] * inner + along * inner + i
}

#[test]
fn math_ops_match_pytorch() {
    let text = include_str!("fixtures/math_ops.json");
    let root: J = serde_json::from_str(text).unwrap();
    let cases = root["cases"].as_array().unwrap();
    assert!(cases.len() > 300, "the fixture holds the recorded cases");
    let mut checked = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let op = case["op"].as_str().unwrap();
        let dtype = case["dtype"].as_str().unwrap();
        let inputs = case["inputs"].as_array().unwrap();
        let args = case["args"].as_array().unwrap();
        let got = match dtype {
            "float32" => {
                let c = Case::<f32> {
                    x: inputs.iter().map(tensor).collect(),
                    a: args,
                };
                run_common(op, &c).or_else(|| run_float(op, &c))
            }
            "float64" => {
                let c = Case::<f64> {
                    x: inputs.iter().map(tensor).collect(),
                    a: args,
                };
                run_common(op, &c).or_else(|| run_float(op, &c))
            }
            _ => {
                let c = Case::<i64> {
                    x: inputs.iter().map(tensor).collect(),
                    a: args,
                };
                run_common(op, &c)
            }
        }
        .unwrap_or_else(|| panic!("{name}: no Rust op `{op}` for {dtype}"));
        let outs = case["outputs"].as_array().unwrap();
        assert_eq!(got.len(), outs.len(), "{name}: number of outputs");
        for (k, (g, w)) in got.iter().zip(outs).enumerate() {
            let wshape = shape_of(w);
            assert_eq!(g.shape, wshape, "{name}: shape of output {k}");
            let wdt = w["dtype"].as_str().unwrap();
            let wvals: Vec<f64> = w["data"].as_array().unwrap().iter().map(num).collect();
            if op == "topk" && k == 1 {
                // PyTorch leaves the order of tied topk indices to
                // std::nth_element; check that each index points at its
                // value and that indices are distinct within a lane.
                let x = &inputs[0];
                let xs = shape_of(x);
                let xv: Vec<f64> = x["data"].as_array().unwrap().iter().map(num).collect();
                let d = if xs.is_empty() {
                    0
                } else {
                    args[1].as_i64().unwrap().rem_euclid(xs.len() as i64) as usize
                };
                let kk = args[0].as_u64().unwrap() as usize;
                let mut seen = std::collections::HashSet::new();
                for (f, &ix) in g.vals.iter().enumerate() {
                    let src = lane_index(&xs, d, kk, f, ix as usize);
                    let v = got[0].vals[f];
                    assert!(
                        xv[src] == v || (v.is_nan() && xv[src].is_nan()),
                        "{name}: index {ix} does not hold value {v}"
                    );
                    let lane = (
                        f / (kk * xs[d + 1..].iter().product::<usize>()).max(1),
                        f % xs[d + 1..].iter().product::<usize>().max(1),
                    );
                    assert!(
                        seen.insert((lane, ix as i64)),
                        "{name}: repeated index {ix}"
                    );
                }
                checked += 1;
                continue;
            }
            for (i, (&a, &b)) in g.vals.iter().zip(&wvals).enumerate() {
                assert!(
                    close(a, b, wdt),
                    "{name}: output {k} element {i}: got {a}, PyTorch {b} (dtype {wdt})"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 400);
}

#[test]
fn bad_arguments_panic_naming_the_op() {
    let _serial = PANICS.lock().unwrap_or_else(|e| e.into_inner());
    fn msg(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).unwrap_err();
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap()
    }
    let x = Tensor::<f32>::zeros(&[2, 3]);
    let m = msg(|| {
        x.softmax(2);
    });
    assert!(
        m.contains("softmax") && m.contains("[2, 3]") && m.contains("'dim'"),
        "{m}"
    );
    let m = msg(|| {
        Tensor::cat(&[&x, &Tensor::zeros(&[3, 3])], 1);
    });
    assert!(
        m.contains("cat") && m.contains("tensor number 1") && m.contains("[3, 3]"),
        "{m}"
    );
    let m = msg(|| {
        Tensor::stack(&[&x, &Tensor::zeros(&[3, 2])], 0);
    });
    assert!(m.contains("stack") && m.contains("[3, 2]"), "{m}");
    let m = msg(|| {
        x.topk(4, 1, true, true);
    });
    assert!(
        m.contains("topk") && m.contains("'k'") && m.contains("[2, 3]"),
        "{m}"
    );
    let m = msg(|| {
        x.maximum(&Tensor::zeros(&[4]));
    });
    assert!(
        m.contains("maximum") && m.contains("[4]") && m.contains("'other'"),
        "{m}"
    );
    let m = msg(|| {
        x.add_scaled_(Tensor::zeros(&[2, 2, 3]), 1.0);
    });
    assert!(m.contains("add_") && m.contains("[2, 2, 3]"), "{m}");
    let m = msg(|| {
        Tensor::<f32>::zeros(&[3]).tril(0);
    });
    assert!(
        m.contains("tril") && m.contains("at least 2 dimensions"),
        "{m}"
    );
    let m = msg(|| {
        x.amax([1, -1], false);
    });
    assert!(m.contains("amax") && m.contains("multiple times"), "{m}");
    let m = msg(|| {
        Tensor::<f32>::zeros(&[0, 2]).amax([0], false);
    });
    assert!(m.contains("amax") && m.contains("non-zero size"), "{m}");
    let m = msg(|| {
        Tensor::<f32>::zeros(&[0]).max();
    });
    assert!(m.contains("max") && m.contains("numel() == 0"), "{m}");
    let m = msg(|| {
        x.repeat([2]);
    });
    assert!(m.contains("repeat") && m.contains("[2, 3]"), "{m}");
    let m = msg(|| {
        x.roll([1, 2], [0]);
    });
    assert!(m.contains("roll") && m.contains("align"), "{m}");
    let m = msg(|| {
        x.gelu("fast");
    });
    assert!(m.contains("gelu") && m.contains("'fast'"), "{m}");
    let m = msg(|| {
        x.addcmul1_(&Tensor::zeros(&[3, 2, 3]), &x);
    });
    assert!(m.contains("addcmul_") && m.contains("[3, 2, 3]"), "{m}");
}

/// Serializes the tests that panic on purpose (the location test swaps
/// the process-wide panic hook).
static PANICS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn panics_are_reported_at_the_callers_line() {
    use std::sync::{Arc, Mutex};
    let _serial = PANICS.lock().unwrap_or_else(|e| e.into_inner());
    let loc: Arc<Mutex<Vec<(String, u32)>>> = Arc::new(Mutex::new(Vec::new()));
    let l2 = loc.clone();
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        if msg.contains("funcz: cumsum:")
            && let Some(l) = info.location()
        {
            l2.lock().unwrap().push((l.file().to_string(), l.line()));
        }
    }));
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let line = line!() + 1;
    let r = std::panic::catch_unwind(|| x.cumsum(5));
    std::panic::set_hook(prev);
    assert!(r.is_err());
    let seen = loc.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (file, l) = &seen[0];
    assert!(file.ends_with("math_values.rs"), "{file}");
    assert_eq!(*l, line);
}
