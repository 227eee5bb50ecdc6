//! Aliasing tests that need to write through a view. The in-place data ops
//! live elsewhere, so a tiny test-only writer is defined here on top of
//! `with_array_mut`.

use crate::Tensor;

/// Test-only `fill_`: writes `v` to every element of `t` (through its
/// layout, so the storage shared with other aliases changes).
fn fill_through(t: &Tensor<f32>, v: f32) {
    assert!(!t.layout().has_internal_overlap(), "test helper: overlap");
    t.with_array_mut(|mut a| a.fill(v));
}

/// Test-only indexed write.
fn set_at(t: &Tensor<f32>, index: &[usize], v: f32) {
    t.with_array_mut(|mut a| a[index] = v);
}

fn arange(n: usize, shape: &[usize]) -> Tensor<f32> {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape)
}

#[test]
fn write_through_narrow_is_seen_by_base_and_siblings() {
    let a = arange(12, &[3, 4]);
    let n = a.narrow(1, 1, 2); // columns 1..3
    let row = a.select(0, 1); // [4, 5, 6, 7]
    let col = a.t().select(0, 2); // column 2: [2, 6, 10]
    fill_through(&n, -1.0);
    assert_eq!(
        a.to_vec(),
        vec![
            0.0, -1.0, -1.0, 3.0, 4.0, -1.0, -1.0, 7.0, 8.0, -1.0, -1.0, 11.0
        ]
    );
    assert_eq!(row.to_vec(), vec![4.0, -1.0, -1.0, 7.0]);
    assert_eq!(col.to_vec(), vec![-1.0, -1.0, -1.0]);
    assert_eq!(a.version(), 1);
    assert_eq!(n.version(), 1);
}

#[test]
fn write_through_chain_of_views() {
    let a = arange(24, &[2, 3, 4]);
    // permute -> [4, 2, 3] strides [1, 12, 4]; slice step 2 on dim 0 -> rows 0, 2
    let v = a.permute([2, 0, 1]).slice(0, 0, 4, 2).select(1, -1);
    assert_eq!(v.shape(), &[2, 3]);
    assert_eq!(v.strides(), &[2, 4]);
    assert_eq!(v.storage_offset(), 12);
    set_at(&v, &[1, 2], 100.0); // storage 12 + 2 + 8 = 22
    assert_eq!(a.to_vec()[22], 100.0);
    assert_eq!(a.select(0, 1).select(0, 2).to_vec()[2], 100.0);
}

#[test]
fn writes_through_split_chunk_and_unbind_pieces() {
    let a = arange(10, &[5, 2]);
    let parts = a.split(2, 0);
    fill_through(&parts[2], 7.0); // last row
    let chunks = a.chunk(2, 1);
    assert_eq!(chunks[1].to_vec(), vec![1.0, 3.0, 5.0, 7.0, 7.0]);
    let rows = a.unbind(0);
    set_at(&rows[0], &[1], -3.0);
    assert_eq!(chunks[1].to_vec(), vec![-3.0, 3.0, 5.0, 7.0, 7.0]);
    assert_eq!(parts[0].to_vec(), vec![0.0, -3.0, 2.0, 3.0]);
}

#[test]
fn diagonal_and_unfold_and_expand_share_storage() {
    let a = arange(9, &[3, 3]);
    let d = a.diagonal(1, 0, 1); // (0,1), (1,2)
    fill_through(&d, 0.5);
    assert_eq!(
        a.to_vec(),
        vec![0.0, 0.5, 2.0, 3.0, 4.0, 0.5, 6.0, 7.0, 8.0]
    );
    // overlapping windows see each other's writes
    let flat = a.view([-1]);
    let w = flat.unfold(0, 3, 2); // windows [0..3], [2..5], [4..7], [6..9]
    set_at(&flat, &[2], 42.0);
    assert_eq!(w.select(0, 0).to_vec(), vec![0.0, 0.5, 42.0]);
    assert_eq!(w.select(0, 1).to_vec(), vec![42.0, 3.0, 4.0]);
    let e = a.select(0, 0).expand([2, 3]);
    assert_eq!(e.to_vec(), vec![0.0, 0.5, 42.0, 0.0, 0.5, 42.0]);
    assert!(e.layout().has_internal_overlap());
}

#[test]
fn alias_detach_contiguous_and_reshape_views_share_writes() {
    let a = arange(6, &[2, 3]);
    let al = a.alias();
    let de = a.detach();
    let co = a.contiguous();
    let re = a.reshape([3, 2]);
    let fl = a.flatten();
    set_at(&al, &[1, 2], 9.5);
    for t in [&de, &co, &a] {
        assert_eq!(t.to_vec()[5], 9.5);
    }
    assert_eq!(re.to_vec()[5], 9.5);
    assert_eq!(fl.to_vec()[5], 9.5);
    // a non-viewable reshape copies: later writes are not seen
    let copied = a.t().reshape([6]);
    set_at(&a, &[0, 0], -7.0);
    assert_eq!(copied.to_vec()[0], 0.0);
    assert_eq!(a.t().contiguous().to_vec()[0], -7.0);
}

#[test]
fn metadata_ops_change_only_this_handle() {
    let base = arange(6, &[2, 3]);
    let mut h = base.alias();
    let r = h.t_();
    assert_eq!(r.id(), h.id());
    assert_eq!(h.shape(), &[3, 2]);
    assert_eq!(base.shape(), &[2, 3]);
    set_at(&h, &[2, 0], 50.0); // element (0, 2) of base
    assert_eq!(base.to_vec()[2], 50.0);
    h.unsqueeze_(0);
    assert_eq!((h.shape(), h.strides()), (&[1, 3, 2][..], &[3, 1, 3][..]));
    h.squeeze_();
    h.transpose_(0, -1);
    assert_eq!((h.shape(), h.strides()), (&[2, 3][..], &[3, 1][..]));
    h.as_strided_([2], [4], 1);
    set_at(&h, &[1], 11.0);
    assert_eq!(base.to_vec(), vec![0.0, 1.0, 50.0, 3.0, 4.0, 11.0]);
    assert_eq!(base.version(), 2);
}

#[test]
fn resize_grows_the_shared_storage() {
    let mut a = arange(4, &[4]);
    let b = a.narrow(0, 1, 2);
    let v0 = a.version();
    a.resize_([2, 3]);
    assert_eq!((a.shape(), a.strides()), (&[2, 3][..], &[3, 1][..]));
    assert!(a.same_storage(&b));
    assert_eq!(a.to_vec(), vec![0.0, 1.0, 2.0, 3.0, 0.0, 0.0]);
    assert!(a.version() > v0);
    set_at(&a, &[0, 2], 8.0);
    assert_eq!(b.to_vec(), vec![1.0, 8.0]);
    // shrinking keeps the buffer and does not bump the version
    let v1 = a.version();
    a.resize_([1]);
    assert_eq!(a.to_vec(), vec![0.0]);
    assert_eq!(a.version(), v1);
    assert_eq!(b.to_vec(), vec![1.0, 8.0]);
    // a view resized past the end grows the buffer behind its offset
    let mut c = b.alias();
    c.resize_([6]);
    assert_eq!(c.storage_offset(), 1);
    assert_eq!(c.to_vec(), vec![1.0, 8.0, 3.0, 0.0, 0.0, 0.0]);
}

#[test]
fn views_do_not_bump_the_version_and_copies_do_not_share() {
    let a = arange(6, &[2, 3]);
    let _ = (
        a.t(),
        a.view([3, 2]),
        a.narrow(0, 0, 1),
        a.expand([4, 2, 3]),
    );
    assert_eq!(a.version(), 0);
    let c = a.t_copy();
    fill_through(&c, 1.0);
    assert_eq!(a.to_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
}

#[test]
fn scatter_leaves_inputs_alone_even_when_src_aliases_self() {
    let a = arange(6, &[2, 3]);
    let src = a.select(0, 1); // [3, 4, 5]
    let out = a.select_scatter(&src, 0, 0);
    assert_eq!(out.to_vec(), vec![3.0, 4.0, 5.0, 3.0, 4.0, 5.0]);
    assert_eq!(a.to_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(a.version(), 0);
    assert!(!out.same_storage(&a));
    fill_through(&out, 0.0);
    assert_eq!(src.to_vec(), vec![3.0, 4.0, 5.0]);
}

#[test]
fn resize_to_the_same_sizes_keeps_the_strides() {
    // PyTorch: x.t_(); x.resize_(2, 2) leaves the strides (1, 2).
    let mut a = Tensor::<f32>::from_vec(vec![0.0, 1.0, 2.0, 3.0], &[2, 2]);
    a.t_();
    a.resize_([2, 2]);
    assert_eq!(a.strides(), &[1, 2]);
    assert_eq!(a.to_vec(), vec![0.0, 2.0, 1.0, 3.0]);
    a.resize_([4]);
    assert_eq!(a.strides(), &[1]);
    assert_eq!(a.to_vec(), vec![0.0, 1.0, 2.0, 3.0]);
}
