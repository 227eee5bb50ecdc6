//! Reading `tests/fixtures/ported.json` (values recorded from PyTorch).

use funcz::Tensor;
use serde_json::Value;
use std::sync::OnceLock;

/// The whole fixture, parsed once.
pub fn fixture() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let text = include_str!("../fixtures/ported.json");
        serde_json::from_str(text).expect("tests/fixtures/ported.json parses")
    })
}

/// `fixture()[group][case]`.
pub fn case(group: &str, name: &str) -> &'static Value {
    let v = &fixture()[group][name];
    assert!(!v.is_null(), "no case {group}/{name} in the fixture");
    v
}

fn shape(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect()
}

/// A recorded float tensor as an f32 tensor.
pub fn f32s(v: &Value) -> Tensor {
    let data = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_f64().expect("number") as f32)
        .collect();
    Tensor::from_vec(data, &shape(v))
}

/// A recorded integer tensor as an i64 tensor.
pub fn i64s(v: &Value) -> Tensor<i64> {
    let data = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_i64().expect("integer"))
        .collect();
    Tensor::from_vec(data, &shape(v))
}

/// A recorded scalar.
pub fn num(v: &Value) -> f64 {
    v.as_f64()
        .or_else(|| v["data"][0].as_f64())
        .expect("a number")
}

/// Asserts that `got` matches the recorded `want` in shape and, elementwise,
/// within `1e-5` relative plus `1e-6` absolute (float32 kernels may round
/// differently from PyTorch's vectorized ones).
#[track_caller]
pub fn assert_matches(what: &str, got: &Tensor, want: &Value) {
    let want = f32s(want);
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_vec(), want.to_vec());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let tol = 1e-6 + 1e-5 * b.abs();
        assert!(
            (a - b).abs() <= tol || (a.is_infinite() && a == b),
            "{what}: element {i}: funcz {a}, PyTorch {b}\nfuncz:   {g:?}\nPyTorch: {w:?}"
        );
    }
}
