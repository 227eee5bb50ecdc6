//! The mask, cast and indexed ops against PyTorch: every case of
//! `fixtures/indexed_ops.json` (recorded by `scripts/record_indexed_ops.py`)
//! is replayed: same result dtype, shape and values (NaN matches NaN), the
//! receiver of an in-place op afterwards, and a panic where PyTorch raised.
#![cfg(feature = "serde")]

use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz_runtime::{Scalar, Tensor};
use serde_json::Value;

/// A tensor of any dtype the fixture uses.
#[derive(Debug)]
enum Any {
    F32(Tensor<f32>),
    F64(Tensor<f64>),
    I64(Tensor<i64>),
    I32(Tensor<i32>),
    Bool(Tensor<bool>),
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            _ => panic!("bad number {s}"),
        },
        Value::Bool(b) => *b as u8 as f64,
        _ => panic!("bad value {v}"),
    }
}

fn tensor(v: &Value) -> Any {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let vals = v["values"].as_array().unwrap();
    match v["dtype"].as_str().unwrap() {
        "float32" => Any::F32(Tensor::from_vec(
            vals.iter().map(|x| num(x) as f32).collect(),
            &shape,
        )),
        "float64" => Any::F64(Tensor::from_vec(vals.iter().map(num).collect(), &shape)),
        "int64" => Any::I64(Tensor::from_vec(
            vals.iter().map(|x| x.as_i64().unwrap()).collect(),
            &shape,
        )),
        "int32" => Any::I32(Tensor::from_vec(
            vals.iter().map(|x| x.as_i64().unwrap() as i32).collect(),
            &shape,
        )),
        "bool" => Any::Bool(Tensor::from_vec(
            vals.iter().map(|x| x.as_bool().unwrap()).collect(),
            &shape,
        )),
        d => panic!("dtype {d}"),
    }
}

/// Checks `t` against a recorded tensor: dtype, shape, values.
fn assert_matches<T: Scalar>(name: &str, what: &str, t: &Tensor<T>, want: &Value) {
    assert_eq!(
        T::DTYPE,
        want["dtype"].as_str().unwrap(),
        "{name}: {what} dtype"
    );
    let shape: Vec<usize> = want["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(t.shape(), &shape[..], "{name}: {what} shape");
    let got: Vec<f64> = t.to_vec().into_iter().map(Scalar::as_f64).collect();
    let exp: Vec<f64> = want["values"].as_array().unwrap().iter().map(num).collect();
    for (k, (g, e)) in got.iter().zip(&exp).enumerate() {
        assert!(
            g == e || (g.is_nan() && e.is_nan()),
            "{name}: {what}[{k}] = {g}, PyTorch {e}\ngot {got:?}\nwant {exp:?}"
        );
    }
}

fn check_any(name: &str, what: &str, t: &Any, want: &Value) {
    match t {
        Any::F32(t) => assert_matches(name, what, t, want),
        Any::F64(t) => assert_matches(name, what, t, want),
        Any::I64(t) => assert_matches(name, what, t, want),
        Any::I32(t) => assert_matches(name, what, t, want),
        Any::Bool(t) => assert_matches(name, what, t, want),
    }
}

/// Runs one case; returns the result (and the receiver is checked by the
/// caller through `inputs["x"]`).
fn run(op: &str, ins: &std::collections::HashMap<String, Any>, args: &Value) -> Any {
    let arg_i = |k: &str| args[k].as_i64().unwrap();
    let arg_f = |k: &str| num(&args[k]);
    let arg_b = |k: &str| args[k].as_bool().unwrap();
    let f = |k: &str| match &ins[k] {
        Any::F32(t) => t,
        other => panic!("{k} is {other:?}"),
    };
    let i = |k: &str| match &ins[k] {
        Any::I64(t) => t,
        other => panic!("{k} is {other:?}"),
    };
    let b = |k: &str| match &ins[k] {
        Any::Bool(t) => t,
        other => panic!("{k} is {other:?}"),
    };
    macro_rules! cmp {
        ($m:ident) => {
            match (&ins["x"], ins.get("y")) {
                (Any::F32(x), Some(Any::F32(y))) => Any::Bool(x.$m(y)),
                (Any::F32(x), None) => Any::Bool(x.$m(arg_f("scalar") as f32)),
                (Any::I64(x), Some(Any::I64(y))) => Any::Bool(x.$m(y)),
                other => panic!("{other:?}"),
            }
        };
    }
    macro_rules! each {
        ($x:expr, |$t:ident| $body:expr) => {
            match $x {
                Any::F32($t) => $body,
                Any::F64($t) => $body,
                Any::I64($t) => $body,
                Any::I32($t) => $body,
                Any::Bool($t) => $body,
            }
        };
    }
    match op {
        "lt" => cmp!(lt),
        "le" => cmp!(le),
        "gt" => cmp!(gt),
        "ge" => cmp!(ge),
        "eq" => cmp!(eq),
        "ne" => cmp!(ne),
        "logical_and" => Any::Bool(each!(&ins["x"], |x| each!(&ins["y"], |y| x.logical_and(y)))),
        "logical_or" => Any::Bool(each!(&ins["x"], |x| each!(&ins["y"], |y| x.logical_or(y)))),
        "logical_xor" => Any::Bool(each!(&ins["x"], |x| each!(&ins["y"], |y| x.logical_xor(y)))),
        "logical_not" => Any::Bool(each!(&ins["x"], |x| x.logical_not())),
        "any" => Any::Bool(each!(&ins["x"], |x| x.any())),
        "all" => Any::Bool(each!(&ins["x"], |x| x.all())),
        "any_dim" => Any::Bool(each!(&ins["x"], |x| x.any_dim(arg_i("dim"), arg_b("keepdim")))),
        "all_dim" => Any::Bool(each!(&ins["x"], |x| x.all_dim(arg_i("dim"), arg_b("keepdim")))),
        "where_self" => match ins.get("y") {
            Some(_) => Any::F32(f("x").where_self(b("c"), f("y"))),
            None => Any::F32(f("x").where_self(b("c"), arg_f("scalar") as f32)),
        },
        "to_dtype" => {
            let to = args["to"].as_str().unwrap();
            each!(&ins["x"], |x| match to {
                "float32" => Any::F32(x.float()),
                "float64" => Any::F64(x.double()),
                "int64" => Any::I64(x.long()),
                "int32" => Any::I32(x.int()),
                "bool" => Any::Bool(x.bool()),
                _ => panic!("{to}"),
            })
        }
        "masked_fill_" => Any::F32(f("x").masked_fill_(b("mask"), arg_f("scalar") as f32)),
        "masked_fill" => Any::F32(f("x").masked_fill(b("mask"), arg_f("scalar") as f32)),
        "masked_scatter_" => Any::F32(f("x").masked_scatter_(b("mask"), f("src"))),
        "masked_scatter" => Any::I64(i("x").masked_scatter(b("mask"), i("src"))),
        "index_select" => Any::F32(f("x").index_select(arg_i("dim"), i("index"))),
        "take" => Any::F32(f("x").take(i("index"))),
        "nonzero" => Any::I64(each!(&ins["x"], |x| x.nonzero())),
        "gather" => Any::F32(f("x").gather(arg_i("dim"), i("index"))),
        "scatter_" => match ins.get("src") {
            Some(_) => Any::F32(f("x").scatter_(arg_i("dim"), i("index"), f("src"))),
            None => Any::F32(f("x").scatter_(arg_i("dim"), i("index"), arg_f("scalar") as f32)),
        },
        "scatter" => Any::F32(f("x").scatter(arg_i("dim"), i("index"), f("src"))),
        "scatter_add_" => Any::F32(f("x").scatter_add_(arg_i("dim"), i("index"), f("src"))),
        "scatter_add" => Any::F32(f("x").scatter_add(arg_i("dim"), i("index"), f("src"))),
        "index_copy_" => Any::F32(f("x").index_copy_(arg_i("dim"), i("index"), f("src"))),
        "index_copy" => Any::F32(f("x").index_copy(arg_i("dim"), i("index"), f("src"))),
        "index_add_" => Any::F32(f("x").index_add_(arg_i("dim"), i("index"), f("src"))),
        "index_add" => Any::I64(i("x").index_add(arg_i("dim"), i("index"), i("src"))),
        "index_fill_" => {
            Any::F32(f("x").index_fill_(arg_i("dim"), i("index"), arg_f("scalar") as f32))
        }
        "index_fill" => {
            Any::F32(f("x").index_fill(arg_i("dim"), i("index"), arg_f("scalar") as f32))
        }
        "index_put_" | "index_put" if args.get("pattern").is_some() => {
            // `None` entries: "-" is None, "i" the next of i0, i1, ...
            let mut k = 0;
            let idx: Vec<Option<&Tensor<i64>>> = args["pattern"]
                .as_str()
                .unwrap()
                .chars()
                .map(|p| {
                    (p == 'i').then(|| {
                        k += 1;
                        i(&format!("i{}", k - 1))
                    })
                })
                .collect();
            let acc = arg_b("accumulate");
            if op == "index_put_" {
                Any::F32(f("x").index_put_(&idx, f("values"), acc))
            } else {
                Any::F32(f("x").index_put(&idx, f("values"), acc))
            }
        }
        "index_add_scaled_" => Any::F32(f("x").index_add_scaled_(
            arg_i("dim"),
            i("index"),
            f("src"),
            arg_f("alpha") as f32,
        )),
        "index_add_scaled" => Any::F32(f("x").index_add_scaled(
            arg_i("dim"),
            i("index"),
            f("src"),
            arg_f("alpha") as f32,
        )),
        "index_put_" | "index_put" => {
            let mut idx: Vec<&Tensor<i64>> = vec![i("i0")];
            if ins.contains_key("i1") {
                idx.push(i("i1"));
            }
            let acc = arg_b("accumulate");
            match &ins["x"] {
                Any::F32(x) if op == "index_put_" => Any::F32(x.index_put_(&idx, f("values"), acc)),
                Any::F32(x) => Any::F32(x.index_put(&idx, f("values"), acc)),
                Any::I64(x) => Any::I64(x.index_put_(&idx, i("values"), acc)),
                other => panic!("{other:?}"),
            }
        }
        // Across dtypes, `copy_` is written `x.copy_(&src.to_dtype())`.
        "copy_" | "copy" => {
            macro_rules! into {
                ($x:expr, $V:ident) => {
                    each!(&ins["src"], |s| if op == "copy_" {
                        Any::$V($x.copy_(&s.to_dtype()))
                    } else {
                        Any::$V($x.copy(&s.to_dtype()))
                    })
                };
            }
            match &ins["x"] {
                Any::F32(x) => into!(x, F32),
                Any::F64(x) => into!(x, F64),
                Any::I64(x) => into!(x, I64),
                Any::I32(x) => into!(x, I32),
                Any::Bool(x) => into!(x, Bool),
            }
        }
        _ => panic!("no replay for op {op}"),
    }
}

#[test]
fn every_recorded_case_matches_pytorch() {
    let text = include_str!("fixtures/indexed_ops.json");
    let doc: Value = serde_json::from_str(text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 131, "fixture has {} cases", cases.len());
    let mut errors = 0;
    // The expected panics are checked below, not printed; a panic's
    // location must be the caller's line (this file), not funcz's.
    let hook = std::panic::take_hook();
    let loc = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = loc.clone();
    std::panic::set_hook(Box::new(move |info| {
        let file = info
            .location()
            .map(|l| l.file().to_string())
            .unwrap_or_default();
        seen.lock().unwrap().push(file);
    }));
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let op = c["op"].as_str().unwrap();
        let ins: std::collections::HashMap<String, Any> = c["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), tensor(v)))
            .collect();
        let out = catch_unwind(AssertUnwindSafe(|| run(op, &ins, &c["args"])));
        // Messages name the aten op (`index_add_scaled_` is `index_add_`).
        let traced = funcz_runtime::optable::traced_name(op).unwrap_or(op);
        if c.get("error").is_some() {
            let msg = out.expect_err(&format!("{name}: PyTorch raised, funcz did not"));
            let msg = msg
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| msg.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            assert!(
                msg.starts_with("funcz: ") && msg.contains(traced.trim_end_matches('_')),
                "{name}: the panic must name the op: {msg}"
            );
            errors += 1;
            continue;
        }
        let out = out.unwrap_or_else(|_| panic!("{name}: funcz panicked, PyTorch did not"));
        check_any(name, "result", &out, &c["result"]);
        if let Some(after) = c.get("self_after") {
            check_any(name, "self after", &ins["x"], after);
        }
    }
    std::panic::set_hook(hook);
    assert_eq!(errors, 20, "error cases replayed");
    let files = loc.lock().unwrap().clone();
    assert_eq!(files.len(), 20);
    for f in files {
        assert!(f.ends_with("indexed_torch.rs"), "a panic points into {f}");
    }
}
