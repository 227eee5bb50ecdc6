//! PyTorch's eager aliasing semantics through the public API, with values
//! worked out by hand from PyTorch's rules.

use funcz_runtime::Tensor;

fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|i| i as f32).collect(), shape)
}

#[test]
fn a_write_through_a_view_is_seen_by_the_base_and_siblings() {
    let base = iota(&[2, 3]);
    let row = base.select(0, 1); // [3, 4, 5]
    let col = base.select(1, 2); // [2, 5]
    let flat = base.view([-1]);
    row.add_(10.0);
    assert_eq!(base.to_vec(), vec![0.0, 1.0, 2.0, 13.0, 14.0, 15.0]);
    assert_eq!(col.to_vec(), vec![2.0, 15.0]);
    assert_eq!(flat.to_vec()[3..].to_vec(), vec![13.0, 14.0, 15.0]);
    // and the other way round: the base written, a view made earlier reads it
    base.mul_(2.0);
    assert_eq!(row.to_vec(), vec![26.0, 28.0, 30.0]);
}

#[test]
fn chains_of_views() {
    let base = iota(&[3, 4]);
    // t() is 4x3; narrow rows 1..3 of it; select the second of those: column 2 of base.
    let v = base.t().narrow(0, 1, 2).select(0, 1);
    assert_eq!(v.to_vec(), vec![2.0, 6.0, 10.0]);
    v.fill_(-1.0);
    assert_eq!(
        base.to_vec(),
        vec![
            0.0, 1.0, -1.0, 3.0, 4.0, 5.0, -1.0, 7.0, 8.0, 9.0, -1.0, 11.0
        ]
    );
    base.t().select(0, 1).fill_(7.0);
    assert_eq!(base.select(1, 1).to_vec(), vec![7.0, 7.0, 7.0]);
}

#[test]
fn writes_through_split_chunk_and_unbind_outputs() {
    let base = iota(&[4, 2]);
    let halves = base.split(3, 0); // rows 0..3 and 3..4
    halves[1].fill_(9.0);
    let cols = base.chunk(2, 1);
    cols[0].mul_(-1.0);
    for (i, r) in base.unbind(0).into_iter().enumerate() {
        r.add_(i as f32 * 100.0);
    }
    assert_eq!(
        base.to_vec(),
        vec![0.0, 1.0, 98.0, 103.0, 196.0, 205.0, 291.0, 309.0]
    );
}

#[test]
fn metadata_ops_change_only_the_handle() {
    let mut x = iota(&[2, 3]);
    let alias = x.alias();
    x.t_();
    assert_eq!(x.shape(), &[3, 2]);
    assert_eq!(alias.shape(), &[2, 3]);
    x.select(0, 2).fill_(0.0); // column 2 of the original
    assert_eq!(alias.to_vec(), vec![0.0, 1.0, 0.0, 3.0, 4.0, 0.0]);
    x.unsqueeze_(0);
    x.squeeze_();
    x.transpose_(0, 1);
    assert_eq!(x.shape(), &[2, 3]);
    assert_eq!(x.to_vec(), alias.to_vec());
}

#[test]
fn partially_overlapping_operands_are_refused_as_in_pytorch() {
    // PyTorch raises "unsupported operation: some elements of the input
    // tensor and the written-to tensor refer to a single memory location"
    // for both (see also tests/overlap_torch.rs).
    let partial = |f: &dyn Fn()| {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("panic");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("some elements of the input tensor and the written-to tensor refer"),
            "{msg}"
        );
    };
    let x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    partial(&|| drop(x.add_(x.t())));
    // a shifted window of the same storage
    let y = iota(&[5]);
    partial(&|| drop(y.narrow(0, 1, 4).copy_(&y.narrow(0, 0, 4))));
    assert_eq!(
        (x.version(), y.version()),
        (0, 0),
        "a refused op writes nothing"
    );
    // The same operands cloned first, and the full overlap x.add_(&x).
    x.add_(x.t().clone());
    assert_eq!(x.to_vec(), vec![2.0, 5.0, 5.0, 8.0]);
    x.add_(&x);
    assert_eq!(x.to_vec(), vec![4.0, 10.0, 10.0, 16.0]);
    y.narrow(0, 1, 4).copy_(&y.narrow(0, 0, 4).clone());
    assert_eq!(y.to_vec(), vec![0.0, 0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn in_place_into_overlapping_views_is_an_error() {
    let base = Tensor::<f32>::zeros(&[3]);
    for (what, view) in [
        ("expand", base.unsqueeze(0).expand([2, 3])),
        ("as_strided", base.as_strided([2, 2], [1, 1], 0)),
        ("unfold", base.unfold(0, 2, 1)),
    ] {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            view.add_(1.0);
        }))
        .expect_err(what);
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains(
                "more than one element of the written-to tensor refers to a single memory location"
            ),
            "{what}: {msg}"
        );
    }
    assert_eq!(base.to_vec(), vec![0.0; 3], "a refused op writes nothing");
}

#[test]
fn version_counters_count_in_place_writes_per_storage() {
    let base = iota(&[4]);
    let v = base.narrow(0, 1, 2);
    let other = base.clone();
    assert_eq!(base.version(), 0);
    v.mul_(2.0).add_(1.0);
    assert_eq!(base.version(), 2);
    assert_eq!(other.version(), 0, "clone() is a deep copy");
}
