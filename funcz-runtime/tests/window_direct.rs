//! The direct window of a uniquely held root (`rt::window`'s fast path,
//! issue 14 item 3): its own bounds test for plain `narrow` arguments
//! agrees with `Tensor::narrow` (layout, values, panics) on every window of
//! a few shapes, negative arguments included; the window's own in-place
//! ops (no returned handle) leave what the view's `Tensor` ops leave and
//! record the same trace; the two-input disjointness test still refuses
//! shared storage with its message; field-by-field layout copies are
//! exact.

use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz_runtime::rt::{self, InputKey, Mode, Tracked, ViewMeta};
use funcz_runtime::trace::Tracer;
use funcz_runtime::{Layout, Tensor};

#[path = "support/outcome.rs"]
mod outcome;

/// The panic message of `f`, or `None` if it returns.
fn panic_message(f: impl FnOnce()) -> Option<String> {
    outcome::outcome(f).err()
}

fn iota(shape: &[usize]) -> Tensor<f32> {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape)
}

/// The view the window makes (and its layout) for `narrow(dim, start,
/// length)` on a fresh root of `shape`, or the panic message.
fn window_view(shape: &[usize], dim: i64, start: i64, length: i64) -> Result<Tensor<f32>, String> {
    let mut root = iota(shape);
    let mut s = Tracked::root(&root);
    let mut out = None;
    let msg = panic_message(|| {
        let w = rt::window(
            &mut root,
            &mut s,
            ViewMeta::narrow(dim, start, length),
            Mode::Views,
        );
        out = Some(w.shallow_clone());
    });
    match msg {
        Some(m) => Err(m),
        None => Ok(out.expect("a view")),
    }
}

/// Every (dim, start, length) around the bounds of a few shapes: the
/// window's view is `Tensor::narrow`'s (shape, strides, offset, values),
/// and where `narrow` panics the window panics with the same message.
#[test]
fn direct_narrow_agrees_with_tensor_narrow_everywhere() {
    let mut checked = (0, 0);
    for shape in [&[5][..], &[3, 4], &[2, 1, 3], &[0, 3], &[4, 0]] {
        let rank = shape.len() as i64;
        for dim in -rank - 1..=rank {
            let size = if (-rank..rank).contains(&dim) {
                shape[if dim < 0 { dim + rank } else { dim } as usize] as i64
            } else {
                2
            };
            for start in -size - 2..=size + 2 {
                for length in -2..=size + 2 {
                    let t = iota(shape);
                    let want = catch_unwind(AssertUnwindSafe(|| t.narrow(dim, start, length)));
                    let want_msg = panic_message(|| {
                        let _ = t.narrow(dim, start, length);
                    });
                    let got = window_view(shape, dim, start, length);
                    let what = format!("{shape:?}.narrow({dim}, {start}, {length})");
                    match (want, got) {
                        (Ok(n), Ok(v)) => {
                            assert_eq!(v.shape(), n.shape(), "{what}");
                            assert_eq!(v.strides(), n.strides(), "{what}");
                            assert_eq!(v.storage_offset(), n.storage_offset(), "{what}");
                            assert_eq!(v.to_vec(), n.to_vec(), "{what}");
                            checked.0 += 1;
                        }
                        (Err(_), Err(m)) => {
                            assert_eq!(Some(m), want_msg, "{what}");
                            checked.1 += 1;
                        }
                        (Ok(_), Err(m)) => {
                            panic!("{what}: the window panics ({m}), narrow does not")
                        }
                        (Err(_), Ok(_)) => panic!("{what}: narrow panics, the window does not"),
                    }
                }
            }
        }
    }
    assert!(checked.0 > 100 && checked.1 > 100, "{checked:?}");
}

/// A 0-d root refuses `narrow` with `narrow`'s message.
#[test]
fn direct_narrow_of_a_scalar_panics_as_narrow() {
    let mut root = Tensor::<f32>::scalar(1.0);
    let want = panic_message(|| {
        let _ = root.narrow(0, 0, 1);
    })
    .expect("narrow of a 0-d tensor panics");
    let mut s = Tracked::root(&root);
    let got = panic_message(|| {
        let _ = rt::window(&mut root, &mut s, ViewMeta::narrow(0, 0, 1), Mode::Views);
    });
    assert_eq!(got, Some(want));
}

type WindowOp = fn(&rt::Window<f32>);
type TensorOp = fn(&Tensor<f32>);

/// The window's own in-place ops leave, in the root, the values the view's
/// `Tensor` ops leave, in the direct path (a uniquely held root) and the
/// general one (a shared root), and record the same ops in a trace.
#[test]
fn window_ops_match_the_tensor_ops() {
    let cases: [(&str, &str, WindowOp, TensorOp); 7] = [
        (
            "copy_",
            "copy",
            |w| w.copy_(&Tensor::from_vec(vec![-1.0, -2.0, -3.0], &[1, 3])),
            |t| drop(t.copy_(&Tensor::from_vec(vec![-1.0, -2.0, -3.0], &[1, 3]))),
        ),
        ("add_", "add", |w| w.add_(2.5), |t| drop(t.add_(2.5))),
        (
            "sub_",
            "sub",
            |w| w.sub_(Tensor::ones(&[3])),
            |t| drop(t.sub_(Tensor::ones(&[3]))),
        ),
        ("mul_", "mul", |w| w.mul_(-3.0), |t| drop(t.mul_(-3.0))),
        ("div_", "div", |w| w.div_(4.0), |t| drop(t.div_(4.0))),
        ("fill_", "fill", |w| w.fill_(9.0), |t| drop(t.fill_(9.0))),
        ("zero_", "zero", |w| w.zero_(), |t| drop(t.zero_())),
    ];
    for (op, functional, on_window, on_tensor) in cases {
        for shared in [false, true] {
            for mode in [Mode::Views, Mode::Copies] {
                let x = iota(&[3, 3]).add(1.0);
                let expected = x.clone();
                on_tensor(&expected.narrow(0, 1, 1));
                let run = || {
                    let mut root = x.clone();
                    let keep = shared.then(|| root.shallow_clone());
                    let mut s = Tracked::root(&root);
                    let mut w = rt::window(&mut root, &mut s, ViewMeta::narrow(0, 1, 1), mode);
                    on_window(&w);
                    rt::window_done(op, &mut root, &mut s, &mut w);
                    drop(w);
                    if let Some(k) = keep {
                        assert_eq!(
                            k.to_vec(),
                            x.to_vec(),
                            "{op}: another handle saw the update"
                        );
                    }
                    root
                };
                let what = format!("{op} shared={shared} {mode:?}");
                assert_eq!(run().to_vec(), expected.to_vec(), "{what}");
                let (out, g) = Tracer::new("f").input("x", &x).run(run);
                assert_eq!(out.to_vec(), expected.to_vec(), "{what} traced");
                assert!(g.ops().contains(&functional), "{what}: {:?}", g.ops());
                assert!(g.is_functional(), "{what}: {g}");
            }
        }
    }
}

/// The window's ops keep the ops' messages: a `copy_` of a source that
/// does not broadcast names `copy_` and the shapes.
#[test]
fn window_op_panics_name_the_op_and_the_shapes() {
    let mut root = Tensor::<f32>::zeros(&[3, 3]);
    let mut s = Tracked::root(&root);
    let w = rt::window(&mut root, &mut s, ViewMeta::narrow(0, 0, 1), Mode::Views);
    let r = catch_unwind(AssertUnwindSafe(|| w.copy_(&Tensor::ones(&[2]))));
    let msg = r
        .expect_err("a [2] source does not broadcast to [1, 3]")
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(msg.contains("copy_"), "{msg}");
    assert!(msg.contains("[1, 3]") && msg.contains("[2]"), "{msg}");
}

/// Two inputs: disjoint storages pass; shared storage (either order, a
/// view of the other) panics naming the function and both inputs; a
/// collection input goes through the general test.
#[test]
fn two_input_disjointness() {
    let a = Tensor::<f32>::zeros(&[4]);
    let b = Tensor::<f32>::zeros(&[4]);
    rt::check_inputs_disjoint_of("f", "a,b", (&a, &b));
    let v = a.narrow(0, 1, 2);
    for (names, msg) in [
        ("a,v", "inputs `a` and `v` share storage"),
        ("v,a", "inputs `v` and `a` share storage"),
    ] {
        let got = panic_message(|| {
            if names.starts_with('a') {
                rt::check_inputs_disjoint_of("f", names, (&a, &v))
            } else {
                rt::check_inputs_disjoint_of("f", names, (&v, &a))
            }
        })
        .expect("shared storage is refused");
        assert!(got.starts_with("funcz: f: "), "{got}");
        assert!(got.contains(msg), "{got}");
    }
    // A collection and a tensor.
    let xs = vec![Tensor::<f32>::zeros(&[2]), b.shallow_clone()];
    let got = panic_message(|| rt::check_inputs_disjoint_of("g", "xs,b", (&xs, &b)))
        .expect("b is an element of xs");
    assert!(got.contains("inputs `xs` and `b` share storage"), "{got}");
    let ys = vec![Tensor::<f32>::zeros(&[2])];
    rt::check_inputs_disjoint_of("g", "ys,b", (&ys, &b));
    // The same check through the slice form.
    let keys: [(&str, &dyn InputKey); 2] = [("ys", &ys), ("b", &b)];
    rt::check_inputs_disjoint("g", &keys);
}

/// An input's state records the caller's layout exactly (every rank, with
/// strides and offsets), and whether it overlaps itself.
#[test]
fn input_state_records_the_layout() {
    let base = iota(&[64]);
    for (shape, strides, offset) in [
        (vec![], vec![], 3),
        (vec![4], vec![2], 1),
        (vec![2, 3], vec![1, 2], 0),
        (
            vec![2, 1, 2, 1, 2, 1, 2, 1],
            vec![16, 1, 8, 1, 4, 1, 2, 1],
            5,
        ),
        (vec![3, 2], vec![0, 1], 0),
    ] {
        let t = base.as_strided(shape.clone(), strides.clone(), offset);
        let s = Tracked::input(&t);
        let want = Layout::new(&shape, &strides, offset);
        assert_eq!(s.original_layout(), &want);
        assert_eq!(s.original_layout().shape.len(), shape.len());
        assert_eq!(t.shallow_clone().layout(), &want);
    }
    // Writing a window of the overlapping one that overlaps itself is
    // refused as in PyTorch.
    let mut t = base.as_strided(vec![3, 2], vec![0, 1], 0);
    let mut s = Tracked::input(&t);
    let msg = panic_message(|| {
        let mut w = rt::window(&mut t, &mut s, ViewMeta::narrow(0, 0, 2), Mode::Views);
        w.fill_(1.0);
        rt::window_done("fill_", &mut t, &mut s, &mut w);
    })
    .expect("an overlapping window cannot be written");
    assert!(
        msg.contains("fill_") && msg.contains("more than one element"),
        "{msg}"
    );
}
