//! The memory-overlap checks of in-place ops against PyTorch: every case of
//! `fixtures/overlap.json` (recorded by `scripts/record_overlap.py`) is a
//! small program writing into a tensor `x` (or a view of it) with an
//! operand that is another view of `x`. Where PyTorch raised, the op must
//! panic with PyTorch's message after `funcz: <op>: ` and write nothing;
//! otherwise `x` afterwards must be PyTorch's result with every operand
//! cloned first (funcz reads operands before the first write), which is
//! PyTorch's own result except where its loop order shows through
//! (`order_dependent`, operands that are not dense: PyTorch does not check
//! those).
#![cfg(feature = "serde")]

use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz_runtime::{Scalar, Tensor};
use serde_json::Value;

type Program<T> = (&'static str, fn(&Tensor<T>));

fn idx(v: &[i64]) -> Tensor<i64> {
    Tensor::from_vec(v.to_vec(), &[v.len()])
}

/// The float programs, named as in the fixture (its `program` field is the
/// same code).
const F32: &[Program<f32>] = &[
    ("add_transposed", |x| drop(x.add_(x.t()))),
    ("add_transposed_into_transpose", |x| drop(x.t().add_(x))),
    ("add_self", |x| drop(x.add_(x))),
    ("add_same_layout_alias", |x| drop(x.add_(x.view([2, 2])))),
    ("add_unsqueeze_vs_view", |x| {
        drop(x.view([2, 1, 3]).add_(x.view([2, 3]).unsqueeze(1)))
    }),
    ("add_shifted_narrow", |x| {
        drop(x.narrow(0, 0, 4).add_(x.narrow(0, 1, 4)))
    }),
    ("sub_disjoint_halves", |x| {
        drop(x.narrow(0, 0, 2).sub_(x.narrow(0, 2, 2)))
    }),
    ("mul_adjacent_halves", |x| {
        drop(x.narrow(0, 3, 3).mul_(x.narrow(0, 0, 3)))
    }),
    ("add_expanded_row0", |x| {
        drop(x.add_(x.select(0, 0).expand([2, 2])))
    }),
    ("add_expanded_row1", |x| {
        drop(x.add_(x.select(0, 1).expand([2, 2])))
    }),
    ("add_0d_element", |x| drop(x.add_(x.select(0, 1)))),
    ("mul_0d_element_outside", |x| {
        drop(x.narrow(0, 0, 2).mul_(x.select(0, 3)))
    }),
    ("add_nondense_columns", |x| {
        drop(x.narrow(1, 0, 2).add_(x.narrow(1, 1, 2)))
    }),
    ("add_column_into_transpose", |x| {
        drop(x.t().add_(x.narrow(1, 0, 1)))
    }),
    ("div_transposed", |x| drop(x.div_(x.t()))),
    ("pow_shifted", |x| {
        drop(x.narrow(0, 0, 2).pow_(x.narrow(0, 1, 2)))
    }),
    ("add_alpha_transposed", |x| drop(x.add_scaled_(x.t(), 2.0))),
    ("sub_alpha_disjoint", |x| {
        drop(x.narrow(0, 0, 2).sub_scaled_(x.narrow(0, 2, 2), 0.5))
    }),
    ("empty_windows", |x| {
        drop(x.narrow(0, 0, 0).add_(x.narrow(0, 0, 0)))
    }),
    ("copy_transposed", |x| drop(x.copy_(&x.t()))),
    ("copy_shifted_up", |x| {
        drop(x.narrow(0, 1, 4).copy_(&x.narrow(0, 0, 4)))
    }),
    ("copy_shifted_down", |x| {
        drop(x.narrow(0, 0, 4).copy_(&x.narrow(0, 1, 4)))
    }),
    ("copy_same_layout_alias", |x| drop(x.copy_(&x.view([2, 3])))),
    ("copy_self", |x| drop(x.copy_(x))),
    ("copy_disjoint", |x| {
        drop(x.narrow(0, 0, 3).copy_(&x.narrow(0, 3, 3)))
    }),
    ("copy_expanded_row0", |x| {
        drop(x.copy_(&x.select(0, 0).expand([2, 2])))
    }),
    ("copy_expanded_row1", |x| {
        drop(x.copy_(&x.select(0, 1).expand([2, 2])))
    }),
    ("addcmul_transposed", |x| drop(x.addcmul1_(&x.t(), x))),
    ("addcmul_value_transposed_tensor2", |x| {
        drop(x.addcmul_(x, &x.t(), 0.5))
    }),
    ("addcmul_self", |x| drop(x.addcmul_(x, x, 2.0))),
    ("addcmul_disjoint", |x| {
        drop(
            x.narrow(0, 0, 3)
                .addcmul_(&x.narrow(0, 3, 3), &x.narrow(0, 3, 3), 0.5),
        )
    }),
    ("addcdiv_shifted", |x| {
        drop(
            x.narrow(0, 0, 3)
                .addcdiv1_(&x.narrow(0, 1, 3), &Tensor::ones(&[3])),
        )
    }),
    ("addcdiv_value_disjoint", |x| {
        drop(
            x.narrow(0, 0, 3)
                .addcdiv_(&x.narrow(0, 3, 3), &x.narrow(0, 3, 3), 2.0),
        )
    }),
    ("lerp_transposed_end", |x| drop(x.lerp_(&x.t(), 0.5))),
    ("lerp_shifted_weight", |x| {
        drop(
            x.narrow(0, 0, 3)
                .lerp_(&Tensor::ones(&[3]), x.narrow(0, 2, 3)),
        )
    }),
    ("lerp_disjoint", |x| {
        drop(x.narrow(0, 0, 2).lerp_(&x.narrow(0, 2, 2), 0.25))
    }),
    ("lerp_self_end", |x| drop(x.lerp_(x, 0.25))),
    ("masked_fill_value_is_own_element", |x| {
        drop(x.masked_fill_(&x.gt(2.0), x.select(0, 1)))
    }),
    ("masked_scatter_shifted_source", |x| {
        let m = Tensor::from_vec(vec![true, false, true, true], &[4]);
        drop(x.narrow(0, 0, 4).masked_scatter_(&m, &x.narrow(0, 1, 4)))
    }),
    ("masked_scatter_self_source", |x| {
        drop(x.masked_scatter_(&x.gt(2.0), &x.alias()))
    }),
    ("index_copy_shifted_source", |x| {
        drop(x.index_copy_(0, &idx(&[0, 2]), &x.narrow(0, 1, 2)))
    }),
    ("index_copy_self_source", |x| {
        drop(x.index_copy_(0, &idx(&[1, 0]), x))
    }),
    ("index_copy_disjoint_source", |x| {
        drop(
            x.narrow(0, 0, 3)
                .index_copy_(0, &idx(&[2, 0, 1]), &x.narrow(0, 3, 3)),
        )
    }),
    ("index_add_shifted_source", |x| {
        drop(x.index_add_(0, &idx(&[0, 2]), &x.narrow(0, 1, 2)))
    }),
    ("index_add_alpha_shifted_source", |x| {
        drop(
            x.narrow(0, 0, 4)
                .index_add_scaled_(0, &idx(&[0, 1]), &x.narrow(0, 1, 2), 2.0),
        )
    }),
    ("index_add_disjoint_source", |x| {
        drop(
            x.narrow(0, 0, 3)
                .index_add_(0, &idx(&[1, 1, 0]), &x.narrow(0, 3, 3)),
        )
    }),
    ("index_put_shifted_values", |x| {
        drop(
            x.narrow(0, 0, 4)
                .index_put_(&[&idx(&[0, 2])], x.narrow(0, 1, 2), false),
        )
    }),
    ("index_put_accumulate_shifted_values", |x| {
        drop(
            x.narrow(0, 0, 4)
                .index_put_(&[&idx(&[0, 1])], x.narrow(0, 2, 2), true),
        )
    }),
    ("index_put_self_values", |x| {
        drop(x.index_put_(&[&idx(&[1, 0, 2, 3, 4, 5])], x, false))
    }),
    ("index_put_0d_value_is_own_element", |x| {
        drop(x.index_put_(&[&idx(&[0, 1])], x.select(0, 5), false))
    }),
    ("index_put_disjoint_values", |x| {
        drop(
            x.narrow(0, 0, 3)
                .index_put_(&[&idx(&[2, 0])], x.narrow(0, 4, 2), false),
        )
    }),
    ("index_put_none_nondense_values", |x| {
        let i = idx(&[0, 1]);
        drop(x.index_put_(&[None, Some(&i)], x.narrow(1, 2, 2), false))
    }),
    ("scatter_shifted_src", |x| {
        drop(
            x.narrow(0, 0, 4)
                .scatter_(0, &idx(&[0, 2]), x.narrow(0, 1, 2)),
        )
    }),
    ("scatter_self_src", |x| {
        drop(x.scatter_(0, &Tensor::from_vec(vec![1, 0, 1], &[1, 3]), x))
    }),
    ("scatter_disjoint_src", |x| {
        drop(
            x.narrow(0, 0, 3)
                .scatter_(0, &idx(&[2, 0]), x.narrow(0, 4, 2)),
        )
    }),
    ("scatter_add_shifted_src", |x| {
        drop(
            x.narrow(0, 0, 4)
                .scatter_add_(0, &idx(&[0, 2]), &x.narrow(0, 1, 2)),
        )
    }),
    ("scatter_add_disjoint_src", |x| {
        drop(
            x.narrow(0, 0, 3)
                .scatter_add_(0, &idx(&[1, 1]), &x.narrow(0, 4, 2)),
        )
    }),
];

/// The programs on an `i64` tensor whose own elements serve as an index.
const I64: &[Program<i64>] = &[
    ("index_copy_index_aliases_self", |x| {
        drop(
            x.narrow(0, 0, 3)
                .index_copy_(0, &x.narrow(0, 0, 1), &idx(&[7])),
        )
    }),
    ("index_fill_index_aliases_self", |x| {
        drop(x.index_fill_(0, &x.narrow(0, 0, 2), -1))
    }),
    ("index_fill_index_is_self", |x| drop(x.index_fill_(0, x, 5))),
    ("index_fill_disjoint_index", |x| {
        drop(x.narrow(0, 0, 3).index_fill_(0, &x.narrow(0, 3, 2), -1))
    }),
    ("index_put_index_aliases_self", |x| {
        drop(x.index_put_(&[&x.narrow(0, 0, 2)], 9, false))
    }),
    ("scatter_scalar_index_aliases_self", |x| {
        drop(x.scatter_(0, &x.narrow(0, 0, 2), 9))
    }),
];

const BOOL: &[Program<bool>] = &[("copy_bool_transposed", |x| drop(x.copy_(&x.t())))];

fn shape(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn values_f64(v: &Value) -> Vec<f64> {
    v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x {
            Value::Bool(b) => *b as u8 as f64,
            x => x.as_f64().unwrap(),
        })
        .collect()
}

/// Replays one case on `x` (built from the fixture with `make`).
fn replay<T: Scalar>(case: &Value, programs: &[Program<T>], make: fn(&Value) -> Tensor<T>) {
    let name = case["name"].as_str().unwrap();
    let (_, program) = programs
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name}: no Rust program for this case"));
    let x = make(&case["x"]);
    let before = x.to_vec();
    let outcome = catch_unwind(AssertUnwindSafe(|| program(&x)));
    let op = case["op"].as_str().unwrap();
    if case["error"].as_bool().unwrap() {
        let err = outcome.expect_err(&format!("{name}: PyTorch raised, funcz must panic"));
        let msg = err
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| err.downcast_ref::<&str>().unwrap().to_string());
        let want = format!("funcz: {op}: {}", case["message"].as_str().unwrap());
        assert!(msg.starts_with(&want), "{name}: got\n{msg}\nwant\n{want}");
        assert_eq!(x.to_vec(), before, "{name}: a refused op writes nothing");
        assert_eq!(x.version(), 0, "{name}: a refused op keeps the version");
    } else {
        if let Err(e) = outcome {
            let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
            panic!("{name}: PyTorch ran, funcz panicked: {msg}");
        }
        let got: Vec<f64> = x.to_vec().into_iter().map(Scalar::as_f64).collect();
        let want = &case["clone_first"];
        assert_eq!(x.shape(), &shape(want)[..], "{name}");
        assert_eq!(got, values_f64(want), "{name}: x afterwards");
        if !case["order_dependent"].as_bool().unwrap() {
            assert_eq!(
                got,
                values_f64(&case["result"]),
                "{name}: PyTorch's own result"
            );
        }
    }
}

#[test]
fn overlap_checks_match_pytorch() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/overlap.json"
    ))
    .unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    let mut seen = Vec::new();
    let (mut errors, mut order_dependent) = (0, 0);
    for case in cases {
        let x = &case["x"];
        match x["dtype"].as_str().unwrap() {
            "float32" => replay(case, F32, |x| {
                Tensor::from_vec(values_f64(x).iter().map(|&v| v as f32).collect(), &shape(x))
            }),
            "int64" => replay(case, I64, |x| {
                Tensor::from_vec(values_f64(x).iter().map(|&v| v as i64).collect(), &shape(x))
            }),
            "bool" => replay(case, BOOL, |x| {
                Tensor::from_vec(values_f64(x).iter().map(|&v| v != 0.0).collect(), &shape(x))
            }),
            d => panic!("dtype {d}"),
        }
        errors += case["error"].as_bool().unwrap() as usize;
        order_dependent += case["order_dependent"].as_bool().unwrap_or(false) as usize;
        seen.push(case["name"].as_str().unwrap());
    }
    // Every program is a recorded case.
    let names = F32.iter().map(|p| p.0);
    let names = names
        .chain(I64.iter().map(|p| p.0))
        .chain(BOOL.iter().map(|p| p.0));
    for n in names {
        assert!(seen.contains(&n), "{n}: not in the fixture");
    }
    assert_eq!(cases.len(), 64);
    assert_eq!((errors, order_dependent), (32, 1));
}
