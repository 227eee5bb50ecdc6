//! Bad shapes, dims, indices and sizes against PyTorch: every case of
//! `fixtures/bad_input.json` (recorded by `scripts/record_bad_input.py`) is
//! one op on `arange` inputs with arguments from a list of troublemakers
//! (out of range, negative, near int64's ends). Where PyTorch raised, the
//! op must panic with a message naming it; otherwise it must return
//! PyTorch's shape and values. The one allowed difference: a result PyTorch
//! makes as a view of more than 2^40 elements may be refused by funcz with
//! a message naming the op (such a view cannot be copied nor walked here).
#![cfg(feature = "serde")]

use funcz_runtime::Tensor;
use serde_json::Value;

#[path = "support/outcome.rs"]
mod outcome;
use outcome::outcome;

fn x_of(shape: &[usize]) -> Tensor<f64> {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n).map(|i| i as f64).collect(), shape)
}

fn int(v: &Value) -> i64 {
    v.as_i64().expect("an int64 argument")
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_array().expect("a list").iter().map(int).collect()
}

fn sizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a shape")
        .iter()
        .map(|d| d.as_u64().expect("a size") as usize)
        .collect()
}

/// What funcz returned: one tensor, or a list of shapes.
enum Got {
    One(Vec<usize>, Option<Vec<f64>>),
    Many(Vec<Vec<usize>>),
}

fn one(t: Tensor<f64>) -> Got {
    let values = (t.numel() <= 4096).then(|| t.to_vec());
    Got::One(t.shape().to_vec(), values)
}

fn many(ts: Vec<Tensor<f64>>) -> Got {
    Got::Many(ts.iter().map(|t| t.shape().to_vec()).collect())
}

/// Runs one case; the name its panic must contain is the op's (`sum_dim`
/// panics as `sum`, `squeeze_dim` as `squeeze_dim`).
fn run(op: &str, xs: &[Tensor<f64>], a: &[Value]) -> Got {
    let x = || &xs[0];
    match op {
        "transpose" => one(x().transpose(int(&a[0]), int(&a[1]))),
        "unsqueeze" => one(x().unsqueeze(int(&a[0]))),
        "squeeze_dim" => one(x().squeeze_dim(int(&a[0]))),
        "sum_dim" => one(x().sum_dims(ints(&Value::Array(vec![a[0].clone()])), false)),
        "flip" => one(x().flip([int(&a[0])])),
        "roll" => one(x().roll([int(&a[0])], [int(&a[1])])),
        "select" => one(x().select(int(&a[0]), int(&a[1]))),
        "narrow" => one(x().narrow(int(&a[0]), int(&a[1]), int(&a[2]))),
        "slice" => one(x().slice(int(&a[0]), int(&a[1]), int(&a[2]), int(&a[3]))),
        "diagonal" => one(x().diagonal(int(&a[0]), int(&a[1]), int(&a[2]))),
        "unfold" => one(x().unfold(int(&a[0]), int(&a[1]), int(&a[2]))),
        "split" => many(x().split(int(&a[0]), int(&a[1]))),
        "chunk" => many(x().chunk(int(&a[0]), int(&a[1]))),
        "index_select" => {
            let i = ints(&a[1]);
            one(x().index_select(int(&a[0]), &Tensor::from_vec(i.clone(), &[i.len()])))
        }
        "take" => {
            let i = ints(&a[0]);
            one(x().take(&Tensor::from_vec(i.clone(), &[i.len()])))
        }
        "permute" => one(x().permute(ints(&a[0]))),
        "view" => one(x().view(ints(&a[0]))),
        "reshape" => one(x().reshape(ints(&a[0]))),
        "expand" => one(x().expand(ints(&a[0]))),
        "repeat" => one(x().repeat(ints(&a[0]))),
        "as_strided" => one(x().as_strided(ints(&a[0]), ints(&a[1]), int(&a[2]))),
        "zeros" => {
            // Negative sizes cannot be passed as usize: PyTorch refuses
            // them, and so does the type system.
            let s = ints(&a[0]);
            if s.iter().any(|&d| d < 0) {
                panic!("funcz: zeros: negative size in {s:?} (not a usize)");
            }
            one(Tensor::zeros(
                &s.iter().map(|&d| d as usize).collect::<Vec<_>>(),
            ))
        }
        "cat" => one(Tensor::cat(&[&xs[0], &xs[1]], int(&a[0]))),
        "stack" => one(Tensor::stack(&[&xs[0], &xs[1]], int(&a[0]))),
        "matmul" => one(xs[0].matmul(&xs[1])),
        "add" => one(xs[0].add(&xs[1])),
        other => panic!("unknown op {other}"),
    }
}

/// Known differences: none (`index_select` of a 0-d tensor, once `[1]`,
/// is now 0-d as in PyTorch).
fn known(_op: &str, _shapes: &[Vec<usize>], _error: Option<&str>) -> bool {
    false
}

fn panic_name(op: &str) -> &str {
    match op {
        "sum_dim" => "sum",
        o => o,
    }
}

#[test]
fn bad_inputs_match_pytorch() {
    let text = include_str!("fixtures/bad_input.json");
    let cases: Vec<Value> = serde_json::from_str(text).expect("the fixture parses");
    assert!(cases.len() > 2000, "{} cases", cases.len());
    let mut failures = Vec::new();
    let (mut refused, mut accepted, mut absurd, mut n_known) = (0, 0, 0, 0);
    for c in &cases {
        let op = c["op"].as_str().unwrap();
        let shapes: Vec<Vec<usize>> = c["shapes"].as_array().unwrap().iter().map(sizes).collect();
        let args = c["args"].as_array().unwrap();
        let what = format!("{op} on {shapes:?} with {args:?}");
        let xs: Vec<Tensor<f64>> = shapes.iter().map(|s| x_of(s)).collect();
        let got = outcome(|| run(op, &xs, args));
        let error = c["error"].as_str();
        if c.get("torch_wraps").is_some() {
            // PyTorch's int64 arithmetic wrapped into a wrong shape: funcz
            // must refuse.
            match got {
                Err(m) if m.starts_with("funcz: ") && m.contains(panic_name(op)) => refused += 1,
                Err(m) => failures.push(format!("{what}: panic without the op name: {m}")),
                Ok(_) => failures.push(format!("{what}: PyTorch wraps, funcz accepts")),
            }
            continue;
        }
        if known(op, &shapes, error) {
            n_known += 1;
            continue;
        }
        match (error, got) {
            (Some(_), Err(m)) => {
                refused += 1;
                if !(m.starts_with("funcz: ") && m.contains(panic_name(op))) {
                    failures.push(format!("{what}: panic without the op name: {m}"));
                }
            }
            (Some(e), Ok(_)) => {
                failures.push(format!("{what}: PyTorch raises ({e}), funcz accepts"))
            }
            (None, Err(m)) => {
                let r = &c["result"];
                let big = r["shape"].as_array().is_some_and(|s| {
                    s.iter()
                        .map(|d| d.as_u64().unwrap() as u128)
                        .product::<u128>()
                        > 1 << 40
                });
                if big && m.starts_with("funcz: ") && m.contains(panic_name(op)) {
                    absurd += 1;
                } else {
                    failures.push(format!("{what}: PyTorch gives {r}, funcz panics: {m}"));
                }
            }
            (None, Ok(g)) => {
                accepted += 1;
                let r = &c["result"];
                match g {
                    Got::One(shape, values) => {
                        let want_shape = sizes(&r["shape"]);
                        if shape != want_shape {
                            failures
                                .push(format!("{what}: shape {shape:?}, PyTorch {want_shape:?}"));
                        } else if let (Some(v), Some(w)) = (values, r.get("values")) {
                            let w: Vec<f64> = w
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|x| x.as_f64().unwrap())
                                .collect();
                            if v != w {
                                failures.push(format!("{what}: values {v:?}, PyTorch {w:?}"));
                            }
                        }
                    }
                    Got::Many(ss) => {
                        let ws: Vec<Vec<usize>> =
                            r["shapes"].as_array().unwrap().iter().map(sizes).collect();
                        if ss != ws {
                            failures.push(format!("{what}: shapes {ss:?}, PyTorch {ws:?}"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from PyTorch:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The fixture exercises both sides.
    assert!(
        refused > 1000 && accepted > 500,
        "{refused} refused, {accepted} accepted"
    );
    assert!(absurd < 20, "{absurd} absurd");
    assert_eq!(n_known, 0, "no known differences");
}
