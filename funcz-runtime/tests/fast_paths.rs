//! The layouts that the fast kernels of `softmax`/`log_softmax`,
//! `masked_fill_`, `index_put(_)` and `cat`/`stack` treat apart, against
//! PyTorch: `fixtures/fast_paths.json`, recorded by
//! `scripts/record_fast_paths.py`, which builds the same inputs and runs
//! the same ops under the same case names.

#![cfg(feature = "serde")]

use std::collections::HashMap;

use funcz_runtime::Tensor;
use serde_json::Value;

/// Element `i` is `start + step * i` (in f64, rounded to f32), row-major:
/// the script's `seq`.
fn seq(shape: &[usize], start: f64, step: f64) -> Tensor<f32> {
    let n: usize = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|i| (start + step * i as f64) as f32).collect(),
        shape,
    )
}

fn i64s(v: &[i64]) -> Tensor<i64> {
    Tensor::from_vec(v.to_vec(), &[v.len()])
}

fn mask(v: &[bool], shape: &[usize]) -> Tensor<bool> {
    Tensor::from_vec(v.to_vec(), shape)
}

fn num(v: &Value) -> f32 {
    match v {
        Value::Number(n) => n.as_f64().expect("a number") as f32,
        Value::String(s) => match s.as_str() {
            "nan" => f32::NAN,
            "inf" => f32::INFINITY,
            "-inf" => f32::NEG_INFINITY,
            _ => panic!("bad number {s}"),
        },
        _ => panic!("bad value {v}"),
    }
}

fn fixtures() -> HashMap<String, Value> {
    serde_json::from_str(include_str!("fixtures/fast_paths.json")).expect("valid fixture file")
}

/// Asserts that `got` are the recorded results of case `name`: same
/// shapes, values within `tol` relative (0 = exactly; NaN matches NaN,
/// infinities must match).
fn check(fx: &HashMap<String, Value>, name: &str, got: &[Tensor<f32>], tol: f32) {
    let want = fx[name].as_array().expect("a list of results");
    assert_eq!(got.len(), want.len(), "{name}: number of results");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let shape: Vec<usize> = w["shape"]
            .as_array()
            .expect("a shape")
            .iter()
            .map(|d| d.as_u64().expect("a size") as usize)
            .collect();
        assert_eq!(g.shape(), &shape[..], "{name}: result {k}: shape");
        let wv: Vec<f32> = w["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(num)
            .collect();
        for (i, (&a, &b)) in g.to_vec().iter().zip(&wv).enumerate() {
            let ok = a == b
                || (a.is_nan() && b.is_nan())
                || (a.is_finite() && b.is_finite() && (a - b).abs() <= tol * a.abs().max(b.abs()));
            assert!(
                ok,
                "{name}: result {k}, element {i}: funcz {a}, PyTorch {b}"
            );
        }
    }
}

/// exp and the f64 sum round differently from PyTorch's vectorized code.
const SOFTMAX_TOL: f32 = 2e-6;

#[test]
fn softmax_layouts_match_pytorch() {
    let fx = fixtures();
    let x = seq(&[3, 17], -4.0, 0.37);
    x.select(0, 1).narrow(0, 5, 1).fill_(f32::NAN);
    x.select(0, 2).fill_(f32::NEG_INFINITY);
    check(
        &fx,
        "softmax_last_nan_neginf",
        &[x.softmax(-1)],
        SOFTMAX_TOL,
    );
    let x = seq(&[2, 9], -3.0, 250.0);
    check(
        &fx,
        "softmax_last_spread",
        &[x.softmax(-1), x.log_softmax(-1)],
        SOFTMAX_TOL,
    );
    let x = seq(&[4, 3], 1.0, -0.5);
    check(
        &fx,
        "softmax_dim0",
        &[x.softmax(0), x.log_softmax(0)],
        SOFTMAX_TOL,
    );
    let x = seq(&[5, 3], 0.25, 0.75);
    check(
        &fx,
        "softmax_transposed",
        &[x.t().softmax(-1), x.t().log_softmax(-1)],
        SOFTMAX_TOL,
    );
    let x = seq(&[2, 3, 4], -1.0, 0.3);
    check(
        &fx,
        "softmax_3d_middle",
        &[x.softmax(1), x.log_softmax(-2)],
        SOFTMAX_TOL,
    );
    let x = seq(&[2, 6], -1.0, 0.5);
    check(
        &fx,
        "softmax_narrow",
        &[x.narrow(1, 1, 4).softmax(-1)],
        SOFTMAX_TOL,
    );
    check(
        &fx,
        "softmax_0d",
        &[Tensor::scalar(2.5f32).softmax(0)],
        SOFTMAX_TOL,
    );
    check(
        &fx,
        "softmax_empty",
        &[
            Tensor::<f32>::zeros(&[0, 4]).softmax(-1),
            Tensor::<f32>::zeros(&[3, 0]).softmax(-1),
        ],
        0.0,
    );
}

#[test]
fn masked_fill_layouts_match_pytorch() {
    let fx = fixtures();
    let x = seq(&[3, 4], 0.0, 1.0);
    let m = [
        false, true, true, false, true, false, false, false, false, false, false, true,
    ];
    x.masked_fill_(&mask(&m, &[3, 4]), f32::NEG_INFINITY);
    check(&fx, "mask_same_shape", &[x], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    x.masked_fill_(&mask(&[true, false, false, true], &[4]), 9.0);
    check(&fx, "mask_row_bcast", &[x], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    x.masked_fill_(&mask(&[true, false, true], &[3, 1]), -1.0);
    check(&fx, "mask_col_bcast", &[x], 0.0);
    let x = seq(&[2, 3, 4], 0.0, 1.0);
    let m: Vec<bool> = (0..12).map(|i| i % 3 == 0).collect();
    x.masked_fill_(&mask(&m, &[3, 4]), 7.0);
    check(&fx, "mask_3d_bcast", &[x], 0.0);
    let base = seq(&[4, 3], 0.0, 1.0);
    base.t().masked_fill_(&seq(&[3, 4], 0.0, 1.0).gt(5.0), 0.5);
    check(&fx, "mask_self_transposed", &[base], 0.0);
    let base = seq(&[4, 5], 0.0, 1.0);
    base.narrow(1, 1, 3).narrow(0, 1, 2).masked_fill_(
        &mask(&[true, false, true, false, true, true], &[2, 3]),
        -2.0,
    );
    check(&fx, "mask_self_window", &[base], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    x.masked_fill_(&seq(&[4, 3], 0.0, 1.0).gt(4.0).t(), 3.0);
    check(&fx, "mask_mask_transposed", &[x], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    let v0 = x.version();
    x.masked_fill_(&mask(&[false; 12], &[3, 4]), 3.0);
    assert_eq!(
        x.version(),
        v0,
        "no element written: not locked for writing"
    );
    check(&fx, "mask_none_true", &[x], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    x.masked_fill_(&Tensor::scalar(true), 1.5);
    check(&fx, "mask_0d_mask", &[x], 0.0);
}

#[test]
fn index_put_layouts_match_pytorch() {
    let fx = fixtures();
    let x = seq(&[6, 4], 0.0, 1.0);
    x.index_put_(&[&i64s(&[4, 0, -1])], seq(&[3, 4], 100.0, 1.0), false);
    check(&fx, "put_rows", &[x], 0.0);
    let x = seq(&[6, 4], 0.0, 1.0);
    x.index_put_(&[&i64s(&[1, 1, 3, 1])], seq(&[4, 4], 10.0, 1.0), true);
    check(&fx, "put_rows_accumulate_dup", &[x], 0.0);
    let x = seq(&[6, 4], 0.0, 1.0);
    x.index_put_(&[&i64s(&[0, 2])], seq(&[4], -10.0, 1.0), false);
    check(&fx, "put_rows_row_bcast", &[x], 0.0);
    let x = seq(&[6, 4], 0.0, 1.0);
    x.index_put_(&[&i64s(&[5, 2, 3])], seq(&[3, 1], 50.0, 1.0), false);
    check(&fx, "put_rows_col_bcast", &[x], 0.0);
    let x = seq(&[6, 4], 0.0, 1.0);
    x.index_put_(&[&i64s(&[5, 1])], Tensor::scalar(-3.0f32), false);
    check(&fx, "put_rows_scalar", &[x], 0.0);
    let base = seq(&[4, 6], 0.0, 1.0);
    base.t()
        .index_put_(&[&i64s(&[1, 4])], seq(&[2, 4], 20.0, 1.0), false);
    check(&fx, "put_self_transposed", &[base], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    x.index_put_(
        &[&i64s(&[0, 2, 1]), &i64s(&[3, 0, 1])],
        seq(&[3], -7.0, 1.0),
        false,
    );
    check(&fx, "put_elements", &[x], 0.0);
    let x = seq(&[3, 4], 0.0, 1.0);
    x.index_put_(
        &[&i64s(&[0, 0, 2]), &i64s(&[1, 1, 3])],
        seq(&[3], 1.0, 1.0),
        true,
    );
    check(&fx, "put_elements_accumulate_dup", &[x], 0.0);
    let base = seq(&[5, 3], 0.0, 1.0);
    base.narrow(0, 0, 3)
        .index_put_(&[&i64s(&[2, 0])], base.narrow(0, 3, 2), false);
    check(&fx, "put_values_own_storage", &[base], 0.0);
    let x = seq(&[3, 2, 4], 0.0, 1.0);
    let rows = Tensor::from_vec(vec![2i64, 0], &[2, 1]);
    x.index_put_(&[&rows], seq(&[2, 1, 2, 4], -20.0, 1.0), false);
    check(&fx, "put_3d_index_2d", &[x], 0.0);
    let x = seq(&[4, 3], 0.0, 1.0);
    let y = x.index_put(&[&i64s(&[3, 1])], seq(&[2, 3], 40.0, 1.0), false);
    check(&fx, "put_functional", &[y, x], 0.0);
}

#[test]
fn cat_and_stack_layouts_match_pytorch() {
    let fx = fixtures();
    let (a, c) = (seq(&[5], 1.0, 1.0), seq(&[3], -1.0, 1.0));
    check(&fx, "cat_1d", &[Tensor::cat(&[&a, &c, &a], 0)], 0.0);
    let (a, c) = (seq(&[2, 3], 0.0, 1.0), seq(&[2, 2], 10.0, 1.0));
    check(&fx, "cat_dim1", &[Tensor::cat(&[&a, &c], 1)], 0.0);
    let a = seq(&[2, 3], 0.0, 1.0);
    check(
        &fx,
        "cat_shared_storage",
        &[Tensor::cat(
            &[a.clone(), a.shallow_clone(), a.narrow(1, 1, 2)],
            1,
        )],
        0.0,
    );
    let (a, c) = (seq(&[3, 2], 0.0, 1.0), seq(&[2, 3], 20.0, 1.0));
    check(
        &fx,
        "cat_strided",
        &[Tensor::cat(&[&a.t(), &c], 0), Tensor::cat(&[&c, &a.t()], 1)],
        0.0,
    );
    let a = seq(&[2, 3], 0.0, 1.0);
    let e = Tensor::<f32>::zeros(&[0]);
    check(
        &fx,
        "cat_legacy_empty",
        &[Tensor::cat(&[&e, &a, &e], 0)],
        0.0,
    );
    let e = Tensor::<f32>::zeros(&[2, 0]);
    check(
        &fx,
        "cat_empty_parts",
        &[Tensor::cat(&[&e, &a, &e], 1)],
        0.0,
    );
    let (a, c) = (seq(&[2, 3], 0.0, 1.0), seq(&[3, 2], 10.0, 1.0));
    check(
        &fx,
        "stack",
        &[
            Tensor::stack(&[&a, &c.t()], 0),
            Tensor::stack(&[&a, &c.t()], 1),
            Tensor::stack(&[&a, &a], 2),
        ],
        0.0,
    );
}
