//! The cheaper paths of the fixed-cost work (issue 14, items 3 and 4)
//! give the results of the paths they replace: `narrow`'s one-pass
//! window against `slice`, the untraced window update against the traced
//! one, and the `f32` instances of the runtime helpers against the
//! generic bodies (the same calls on `f64`).

use std::panic::catch_unwind;

use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
use funcz_runtime::trace::Tracer;
use funcz_runtime::view::shape::{narrow_bounds, narrow_layout, slice_layout};
use funcz_runtime::{Dims, Layout, Tensor};

#[path = "support/outcome.rs"]
mod outcome;

/// The panic message of `f`, or `None` if it returns.
fn panic_message(f: impl FnOnce()) -> Option<String> {
    outcome::outcome(f).err()
}

/// `narrow(dim, start, length)` is `slice(dim, s, e, 1)` with the bounds
/// `narrow_bounds` gives, on every layout, dimension and window of a few
/// small shapes (transposed and offset ones too); out-of-range windows
/// panic with narrow's message.
#[test]
fn narrow_layout_is_the_slice_of_its_bounds() {
    let layouts = [
        Layout::contiguous(&[5]),
        Layout::contiguous(&[3, 4]),
        Layout::new(&[4, 3], &[1, 4], 2),
        Layout::new(&[2, 1, 3], &[3, 100, 1], 7),
        Layout::new(&[0, 3], &[3, 1], 0),
    ];
    let mut checked = 0;
    for l in &layouts {
        let rank = l.ndim() as i64;
        for dim in -rank..rank {
            let d = if dim < 0 { dim + rank } else { dim } as usize;
            let size = l.shape[d] as i64;
            for start in -size - 1..=size + 1 {
                for length in -1..=size + 1 {
                    let got = panic_message(|| {
                        narrow_layout("narrow", l, dim, start, length);
                    });
                    let bounds = catch_unwind(|| narrow_bounds("narrow", l, dim, start, length));
                    match bounds {
                        Ok((s, e)) => {
                            assert_eq!(got, None, "{l:?} narrow({dim}, {start}, {length})");
                            let want = slice_layout("slice", l, dim, s as i64, e as i64, 1);
                            assert_eq!(
                                narrow_layout("narrow", l, dim, start, length),
                                want,
                                "{l:?} narrow({dim}, {start}, {length})"
                            );
                            checked += 1;
                        }
                        Err(_) => {
                            let msg = got.expect("narrow_layout panics where narrow_bounds does");
                            assert!(msg.starts_with("funcz: narrow: "), "{msg}");
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100, "{checked}");
}

/// A tensor's `narrow` and `narrow_copy` agree with `slice` (values,
/// strides, offset) and record the same trace node as before.
#[test]
fn narrow_and_narrow_copy_match_slice() {
    let t = Tensor::<f32>::arange(24).view([2, 3, 4]).transpose(0, 2);
    for (dim, start, len) in [(0, 1, 2), (1, -2, 2), (2, 0, 1), (-1, 1, 1), (0, 4, 0)] {
        let n = t.narrow(dim, start, len);
        let size = t.shape()[if dim < 0 { 2 } else { dim as usize }] as i64;
        let s = if start < 0 { start + size } else { start };
        let sl = t.slice(dim, s, s + len, 1);
        assert_eq!(n.shape(), sl.shape());
        assert_eq!(n.strides(), sl.strides());
        assert_eq!(n.storage_offset(), sl.storage_offset());
        assert_eq!(n.to_vec(), sl.to_vec());
        let c = t.narrow_copy(dim, start, len);
        assert_eq!(c.to_vec(), sl.to_vec());
        assert!(c.is_contiguous());
    }
    let (_, g) = Tracer::new("f").input("t", &t).run(|| {
        let a = t.narrow(1, -2, 2);
        let b = t.narrow_copy(0, 1, 2);
        (a, b)
    });
    assert_eq!(g.ops(), vec!["slice", "slice_copy"]);
    let msg = panic_message(|| {
        t.narrow(0, 3, 2);
    })
    .expect("out of range");
    assert!(
        msg.contains("narrow: start (3) + length (2) exceeds dimension size (4)"),
        "{msg}"
    );
}

/// `Dims` equality looks at the entries in use, by value.
#[test]
fn dims_equality() {
    let a = Dims::from_slice(&[2, 3]);
    assert_eq!(a, Dims::from_slice(&[2, 3]));
    assert_ne!(a, Dims::from_slice(&[2, 4]));
    assert_ne!(a, Dims::from_slice(&[2, 3, 1]));
    assert_ne!(a, Dims::from_slice(&[2]));
    let mut b = Dims::from_slice(&[2, 3, 9]);
    b.remove(2);
    assert_eq!(a, b);
    assert_eq!(Dims::new(), Dims::from_slice(&[]));
}

/// The KV update of a caller's tensor, untraced (the root keeps its
/// identity, the exit copies nothing) and traced (a fresh identity, the
/// scatter and the write-back `copy_` recorded), leaves the same values,
/// in the caller's buffer.
#[test]
fn window_update_of_an_input_traced_and_untraced() {
    fn step(caller: &mut Tensor<f32>, row: &Tensor<f32>, pos: usize) {
        let mut x = rt::input(caller);
        let mut s = Tracked::input(&x);
        let mut w = rt::window(&mut x, &mut s, ViewMeta::narrow(0, pos, 1), Mode::Views);
        w.copy_(row);
        rt::window_done("copy_", &mut x, &mut s, &mut w);
        drop(w);
        rt::write_back_mut(caller, &x);
    }
    let row = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]);
    let mut want = vec![0.0f32; 12];
    want[6..9].copy_from_slice(&[1.0, 2.0, 3.0]);

    let mut a = Tensor::<f32>::zeros(&[4, 3]);
    let (id, v0) = (a.id(), rt::version(&a));
    step(&mut a, &row, 2);
    assert_eq!(a.to_vec(), want);
    assert_eq!(a.id(), id, "the caller's tensor is the same tensor");
    assert_eq!(
        rt::version(&a),
        v0 + 1,
        "one write: the copy_ into the window"
    );

    let b = Tensor::<f32>::zeros(&[4, 3]);
    let (_, g) = Tracer::new("f").input("b", &b).run(|| {
        let mut b2 = b.shallow_clone();
        step(&mut b2, &row, 2);
    });
    assert_eq!(b.to_vec(), want);
    assert_eq!(g.ops(), vec!["slice", "copy", "slice_scatter", "copy_"]);
}

/// The dispatched helpers give the same results for `f32` (the shared
/// instance) as the generic bodies do for `f64`.
#[test]
fn f32_instances_agree_with_the_generic_bodies() {
    fn run<T: funcz_runtime::Element + From<f32>>() -> Vec<Vec<f64>>
    where
        f64: From<T>,
    {
        let vals = |t: &Tensor<T>| t.to_vec().into_iter().map(f64::from).collect::<Vec<f64>>();
        let mut out = Vec::new();
        let data: Vec<T> = (0..6).map(|i| <T as From<f32>>::from(i as f32)).collect();
        // write_back of a replaced value, and of the caller's own handle.
        let caller = Tensor::<T>::from_vec(data.clone(), &[2, 3]);
        rt::write_back(&caller, &caller.add(<T as From<f32>>::from(1.0)));
        out.push(vals(&caller));
        rt::write_back(&caller, &rt::input(&caller));
        out.push(vals(&caller));
        // write_back_mut: same shape copies, another shape replaces.
        let mut m = Tensor::<T>::from_vec(data.clone(), &[2, 3]);
        rt::write_back_mut(&mut m, &Tensor::from_vec(data.clone(), &[3, 2]).t());
        out.push(vals(&m));
        rt::write_back_mut(&mut m, &Tensor::<T>::ones(&[4]));
        out.push(vals(&m));
        out.push(m.shape().iter().map(|&n| n as f64).collect());
        // write_back_owned into a caller's handle that survives.
        let x = Tensor::<T>::from_vec(data.clone(), &[6]);
        let keep = x.shallow_clone();
        rt::write_back_owned(&x, &Tensor::<T>::ones(&[2]));
        out.push(vals(&keep));
        // write_back_layout after a t_().
        let mut y = Tensor::<T>::from_vec(data.clone(), &[2, 3]);
        let (_, ys) = rt::view(&y, &Tracked::root(&y), ViewMeta::T, Mode::Views);
        let base = y.add(<T as From<f32>>::from(10.0));
        rt::write_back_layout(&mut y, &base, &ys);
        out.push(vals(&y));
        out.push(y.strides().iter().map(|&n| n as f64).collect());
        // output of a mutated view, output_root of a relaid root.
        let mut root = Tensor::<T>::zeros(&[2, 5]);
        let mut rs = Tracked::root(&root);
        let (mut v, mut vs) = rt::view(&root, &rs, ViewMeta::narrow(1, 0, 2), Mode::Views);
        let new = v.add(<T as From<f32>>::from(1.0));
        rt::commit(
            "add_",
            &mut root,
            &mut rs,
            &mut v,
            &mut vs,
            new,
            Mode::Views,
        );
        let o = rt::output(&v, &vs, &root, &rs, Mode::Views);
        out.push(vals(&o));
        out.push(o.strides().iter().map(|&n| n as f64).collect());
        let mut r = Tensor::<T>::zeros(&[2, 5]).narrow(1, 0, 2);
        let mut s = Tracked::root(&r);
        let new = r.add(<T as From<f32>>::from(2.0));
        rt::commit_root("add_", &mut r, &mut s, new);
        let o = rt::output_root(&r, &s);
        out.push(vals(&o));
        out.push(o.strides().iter().map(|&n| n as f64).collect());
        out
    }
    let a = run::<f32>();
    let b = run::<f64>();
    assert_eq!(a, b);
    assert_eq!(a[0], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(a[2], vec![0.0, 2.0, 4.0, 1.0, 3.0, 5.0]);
    assert_eq!(a[4], vec![4.0]);
    assert_eq!(a[5], vec![1.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(a[7], vec![1.0, 3.0]);
    assert_eq!(a[9], vec![5.0, 1.0]);
    assert_eq!(a[11], vec![5.0, 1.0]);
}

/// The window of a uniquely held root, with no trace recording, is made
/// in place (not through `Tensor::narrow`): it is the view `narrow` makes
/// (shape, strides, offset, values, a fresh identity on the root's
/// storage) for every dimension and start, negative ones too, of a few
/// shapes, in both modes and for `f32` and `f64`; a window out of range
/// panics with `narrow`'s message.
#[test]
fn an_untraced_narrow_window_is_the_narrow_view() {
    fn check<T: funcz_runtime::Element>() -> usize {
        let mut checked = 0;
        for shape in [&[5][..], &[4, 3], &[2, 3, 4], &[3, 1, 2]] {
            let n: usize = shape.iter().product();
            let rank = shape.len() as i64;
            for mode in [Mode::Views, Mode::Copies] {
                for dim in -rank..rank {
                    let d = if dim < 0 { dim + rank } else { dim } as usize;
                    let size = shape[d] as i64;
                    for start in -size - 1..=size + 1 {
                        for length in [0, 1, 2] {
                            let mut root = Tensor::<T>::arange(n).view(shape);
                            let want = panic_message(|| {
                                root.narrow(dim, start, length);
                            });
                            let mut s = Tracked::root(&root);
                            let got = panic_message(|| {
                                let w = rt::window(
                                    &mut root,
                                    &mut s,
                                    ViewMeta::narrow(dim, start, length),
                                    mode,
                                );
                                let v = root.narrow(dim, start, length);
                                assert_eq!(w.shape(), v.shape());
                                assert_eq!(w.strides(), v.strides());
                                assert_eq!(w.storage_offset(), v.storage_offset());
                                assert_eq!(w.to_vec(), v.to_vec());
                                assert!(w.same_storage(&root));
                                assert_ne!(w.id(), root.id());
                                assert_ne!(w.id(), v.id());
                            });
                            assert_eq!(got, want, "{shape:?} narrow({dim}, {start}, {length})");
                            checked += usize::from(got.is_none());
                        }
                    }
                }
            }
        }
        checked
    }
    assert!(check::<f32>() > 100);
    assert!(check::<f64>() > 100);
}

/// The other window views (`select`, `slice`, `diagonal`) take the same
/// direct path, untraced and traced; the update lands in the root's own
/// buffer, and the trace records the view, the functional op and the
/// scatter.
#[test]
fn other_window_views_update_the_root_in_place() {
    type Case = (ViewMeta, fn(&Tensor<f32>) -> Tensor<f32>, &'static str);
    let cases: [Case; 3] = [
        (ViewMeta::select(0, -1), |t| t.select(0, -1), "select"),
        (
            ViewMeta::slice(1, 0, 4, 2),
            |t| t.slice(1, 0, 4, 2),
            "slice",
        ),
        (
            ViewMeta::diagonal(0, 0, 1),
            |t| t.diagonal(0, 0, 1),
            "diagonal",
        ),
    ];
    for (meta, f, name) in cases {
        let key = |t: &Tensor<f32>| rt::InputKey::single_key(t);
        let base = Tensor::<f32>::arange(12).view([3, 4]);
        let want = base.clone();
        f(&want).mul_(-1.0);
        for traced in [false, true] {
            let x = base.clone();
            let run = || {
                let mut root = x.clone();
                let mut s = Tracked::root(&root);
                let p = key(&root);
                let mut w = rt::window(&mut root, &mut s, meta.clone(), Mode::Views);
                w.mul_(-1.0);
                rt::window_done("mul_", &mut root, &mut s, &mut w);
                drop(w);
                assert_eq!(key(&root), p, "{name}: the root's own buffer");
                root
            };
            let out = if traced {
                let (out, g) = Tracer::new("f").input("x", &x).run(run);
                let scatter = format!("{name}_scatter");
                assert_eq!(g.ops(), vec!["clone", name, "mul", scatter.as_str()]);
                out
            } else {
                run()
            };
            assert_eq!(out.to_vec(), want.to_vec(), "{name} traced={traced}");
        }
    }
}
