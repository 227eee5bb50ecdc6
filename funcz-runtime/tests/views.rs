//! Views, `*_copy` ops, scatters and metadata in-place ops. Expected
//! layouts and values are worked out by hand from PyTorch's rules.

use funcz_runtime::Tensor;
use funcz_runtime::trace::{Arg, start_recording, stop_recording};

fn arange(n: usize, shape: &[usize]) -> Tensor<f32> {
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape)
}

fn f(v: &[i32]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// (shape, strides, storage offset)
fn lay<T: funcz_runtime::Element>(t: &Tensor<T>) -> (Vec<usize>, Vec<usize>, usize) {
    (t.shape().to_vec(), t.strides().to_vec(), t.storage_offset())
}

fn l(shape: &[usize], strides: &[usize], off: usize) -> (Vec<usize>, Vec<usize>, usize) {
    (shape.to_vec(), strides.to_vec(), off)
}

// ---------------------------------------------------------------- view

#[test]
fn view_infers_minus_one_and_shares_storage() {
    let a = arange(24, &[2, 3, 4]);
    let v = a.view([4, -1]);
    assert_eq!(lay(&v), l(&[4, 6], &[6, 1], 0));
    assert!(v.same_storage(&a));
    assert_eq!(
        lay(&a.view([2, 1, 3, 4])),
        l(&[2, 1, 3, 4], &[12, 12, 4, 1], 0)
    );
    assert_eq!(lay(&a.view(vec![24i64])), l(&[24], &[1], 0));
    let one = arange(1, &[1, 1]);
    assert_eq!(lay(&one.view([0usize; 0])), l(&[], &[], 0));
    assert_eq!(
        lay(&Tensor::scalar(3.0f32).view([1, 1])),
        l(&[1, 1], &[1, 1], 0)
    );
}

#[test]
fn view_of_non_contiguous_follows_compute_stride() {
    let b = arange(6, &[2, 3]).t(); // [3, 2] strides [1, 3]
    assert_eq!(lay(&b.view([3, 2, 1])), l(&[3, 2, 1], &[1, 3, 3], 0));
    assert_eq!(lay(&b.view([1, 3, 2])), l(&[1, 3, 2], &[3, 1, 3], 0));
    // a row-sliced matrix can merge its rows only if they are adjacent
    let s = arange(12, &[3, 4]).narrow(1, 0, 2); // [3, 2] strides [4, 1]
    assert_eq!(lay(&s.view([3, 2, 1])), l(&[3, 2, 1], &[4, 1, 1], 0));
    assert_eq!(lay(&s.view([3, 1, 2])), l(&[3, 1, 2], &[4, 2, 1], 0));
    // empty tensors: same shape keeps strides, else contiguous strides
    let e = arange(12, &[3, 4]).narrow(1, 1, 0);
    assert_eq!(lay(&e.view([0, 3])), l(&[0, 3], &[3, 1], 1));
}

#[test]
#[should_panic(
    expected = "funcz: view: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."
)]
fn view_of_transpose_as_flat_fails_like_pytorch() {
    arange(6, &[2, 3]).t().view([6]);
}

#[test]
#[should_panic(expected = "funcz: view: shape [4, 4] is invalid for input of size 6")]
fn view_with_wrong_numel() {
    arange(6, &[2, 3]).view([4, 4]);
}

#[test]
#[should_panic(expected = "funcz: view: only one dimension can be inferred")]
fn view_with_two_minus_ones() {
    arange(6, &[2, 3]).view([-1, -1]);
}

#[test]
#[should_panic(expected = "funcz: view: cannot reshape tensor of 0 elements into shape [-1, 0]")]
fn view_ambiguous_empty() {
    arange(0, &[0, 3]).view([-1, 0]);
}

// ---------------------------------------------------- reshape & friends

#[test]
fn reshape_views_when_possible_and_copies_otherwise() {
    let a = arange(6, &[2, 3]);
    let r = a.reshape([3, 2]);
    assert!(r.same_storage(&a));
    assert_eq!(lay(&r), l(&[3, 2], &[2, 1], 0));
    let b = a.t();
    let c = b.reshape([-1]);
    assert!(!c.same_storage(&a));
    assert!(c.is_contiguous());
    assert_eq!(c.to_vec(), f(&[0, 3, 1, 4, 2, 5]));
    assert!(b.reshape([3, 2, 1]).same_storage(&a));
}

#[test]
fn flatten_and_contiguous() {
    let a = arange(24, &[2, 3, 4]);
    let fl = a.flatten();
    assert_eq!(lay(&fl), l(&[24], &[1], 0));
    assert!(fl.same_storage(&a));
    assert_eq!(Tensor::scalar(5.0f32).flatten().shape(), &[1]);
    let ft = a.transpose(0, 2).flatten();
    assert!(!ft.same_storage(&a));
    assert_eq!(&ft.to_vec()[..4], &f(&[0, 12, 4, 16])[..]);

    let c = a.contiguous();
    assert!(c.same_storage(&a));
    assert_eq!(lay(&c), lay(&a));
    let n = a.narrow(2, 1, 2).contiguous();
    assert!(!n.same_storage(&a));
    assert_eq!(lay(&n), l(&[2, 3, 2], &[6, 2, 1], 0));
    assert_eq!(&n.to_vec()[..4], &f(&[1, 2, 5, 6])[..]);
}

// ---------------------------------------------------- dimension shuffles

#[test]
fn t_transpose_permute() {
    let a = arange(24, &[2, 3, 4]);
    assert_eq!(lay(&a.transpose(0, -1)), l(&[4, 3, 2], &[1, 4, 12], 0));
    assert_eq!(lay(&a.transpose(-2, -2)), lay(&a));
    assert_eq!(lay(&a.permute([1, -1, 0])), l(&[3, 4, 2], &[4, 1, 12], 0));
    let m = arange(6, &[2, 3]);
    assert_eq!(lay(&m.t()), l(&[3, 2], &[1, 3], 0));
    assert_eq!(m.t().to_vec(), f(&[0, 3, 1, 4, 2, 5]));
    let v = arange(4, &[4]);
    assert_eq!(lay(&v.t()), l(&[4], &[1], 0));
    assert_eq!(Tensor::scalar(1.0f32).t().shape(), &[] as &[usize]);
    assert!(a.permute([0, 1, 2]).same_storage(&a));
}

#[test]
#[should_panic(expected = "funcz: t: t() expects a tensor with <= 2 dimensions, but self is 3D")]
fn t_of_3d() {
    arange(24, &[2, 3, 4]).t();
}

#[test]
#[should_panic(expected = "funcz: permute: duplicate dims are not allowed")]
fn permute_duplicate() {
    arange(24, &[2, 3, 4]).permute([0, 1, -3]);
}

#[test]
#[should_panic(expected = "funcz: permute: number of dims don't match")]
fn permute_wrong_len() {
    arange(24, &[2, 3, 4]).permute([0, 1]);
}

#[test]
#[should_panic(
    expected = "funcz: transpose: dimension out of range (expected to be in range of [-3, 2], but got 3) for a tensor of shape [2, 3, 4]"
)]
fn transpose_dim_out_of_range() {
    arange(24, &[2, 3, 4]).transpose(0, 3);
}

// ---------------------------------------------------- narrowing views

#[test]
fn narrow_and_slice() {
    let a = arange(24, &[2, 3, 4]);
    assert_eq!(lay(&a.narrow(-1, 1, 2)), l(&[2, 3, 2], &[12, 4, 1], 1));
    assert_eq!(lay(&a.narrow(1, -2, 2)), l(&[2, 2, 4], &[12, 4, 1], 4));
    assert_eq!(lay(&a.narrow(0, 2, 0)), l(&[0, 3, 4], &[12, 4, 1], 24));
    // Python clamping
    assert_eq!(lay(&a.slice(1, -2, 100, 1)), l(&[2, 2, 4], &[12, 4, 1], 4));
    assert_eq!(lay(&a.slice(0, -100, 1, 1)), l(&[1, 3, 4], &[12, 4, 1], 0));
    assert_eq!(lay(&a.slice(2, 3, 1, 1)), l(&[2, 3, 0], &[12, 4, 1], 3));
    assert_eq!(lay(&a.slice(2, 0, 4, 3)), l(&[2, 3, 2], &[12, 4, 3], 0));
    assert_eq!(
        lay(&a.slice(2, 1, i64::MAX, 2)),
        l(&[2, 3, 2], &[12, 4, 2], 1)
    );
    assert_eq!(
        lay(&a.slice(-1, -1, i64::MAX, 5)),
        l(&[2, 3, 1], &[12, 4, 5], 3)
    );
    let v = arange(10, &[10]);
    assert_eq!(v.slice(0, -8, 100, 3).to_vec(), f(&[2, 5, 8]));
    assert_eq!(v.slice(0, 1, -1, 4).to_vec(), f(&[1, 5]));
    assert_eq!(v.slice(0, 20, 30, 1).numel(), 0);
    // an empty slice may start past the end of the storage
    let e = arange(6, &[2, 3]).slice(0, 2, 2, 1).slice(1, 3, 3, 1);
    assert_eq!(lay(&e), l(&[0, 0], &[3, 1], 9));
    assert_eq!(e.to_vec(), Vec::<f32>::new());
}

#[test]
#[should_panic(expected = "funcz: narrow: start (2) + length (3) exceeds dimension size (4)")]
fn narrow_too_long() {
    arange(12, &[3, 4]).narrow(1, 2, 3);
}

#[test]
#[should_panic(
    expected = "funcz: narrow: start out of range (expected to be in range of [-4, 4], but got -5)"
)]
fn narrow_start_out_of_range() {
    arange(12, &[3, 4]).narrow(1, -5, 1);
}

#[test]
#[should_panic(
    expected = "funcz: narrow: dimension out of range (expected to be in range of [-2, 1], but got 2) for a tensor of shape [3, 4]"
)]
fn narrow_dim_out_of_range() {
    arange(12, &[3, 4]).narrow(2, 0, 1);
}

#[test]
#[should_panic(expected = "funcz: narrow: length must be non-negative")]
fn narrow_negative_length() {
    arange(12, &[3, 4]).narrow(0, 0, -1);
}

#[test]
#[should_panic(expected = "funcz: narrow_copy: start (2) + length (3) exceeds")]
fn narrow_copy_names_itself() {
    arange(12, &[3, 4]).narrow_copy(1, 2, 3);
}

#[test]
#[should_panic(expected = "funcz: slice: slice step must be positive, got step 0")]
fn slice_zero_step() {
    arange(12, &[3, 4]).slice(0, 0, 3, 0);
}

#[test]
#[should_panic(expected = "funcz: slice: cannot be applied to a 0-dim tensor")]
fn slice_scalar() {
    Tensor::scalar(1.0f32).slice(0, 0, 1, 1);
}

#[test]
fn select_and_chain() {
    let a = arange(24, &[2, 3, 4]);
    assert_eq!(lay(&a.select(1, -1)), l(&[2, 4], &[12, 1], 8));
    assert_eq!(lay(&a.select(-3, 1)), l(&[3, 4], &[4, 1], 12));
    assert_eq!(a.select(2, 3).to_vec(), f(&[3, 7, 11, 15, 19, 23]));
    let s = a.select(0, 1).select(0, 2).select(0, 3);
    assert_eq!(lay(&s), l(&[], &[], 23));
    assert_eq!(s.item(), 23.0);
    // t().narrow().select()
    let m = arange(12, &[3, 4]);
    let c = m.t().narrow(0, 1, 2).select(1, -1);
    assert_eq!(lay(&c), l(&[2], &[1], 9));
    assert_eq!(c.to_vec(), f(&[9, 10]));
    assert!(c.same_storage(&m));
    let c2 = m.t().narrow(1, 1, 2).select(0, 3);
    assert_eq!(lay(&c2), l(&[2], &[4], 7));
    assert_eq!(c2.to_vec(), f(&[7, 11]));
}

#[test]
#[should_panic(
    expected = "funcz: select: index 3 out of range for tensor of size [3, 4] at dimension 0"
)]
fn select_out_of_range() {
    arange(12, &[3, 4]).select(0, 3);
}

#[test]
#[should_panic(
    expected = "funcz: select: index -4 out of range for tensor of size [3, 4] at dimension 0"
)]
fn select_negative_out_of_range() {
    arange(12, &[3, 4]).select(0, -4);
}

#[test]
#[should_panic(expected = "funcz: select: cannot be applied to a 0-dim tensor")]
fn select_scalar() {
    Tensor::scalar(1.0f32).select(0, 0);
}

#[test]
fn diagonal_offsets() {
    let m = arange(12, &[3, 4]);
    assert_eq!(lay(&m.diagonal(0, 0, 1)), l(&[3], &[5], 0));
    assert_eq!(m.diagonal(0, 0, 1).to_vec(), f(&[0, 5, 10]));
    assert_eq!(lay(&m.diagonal(1, 0, 1)), l(&[3], &[5], 1));
    assert_eq!(m.diagonal(1, 0, 1).to_vec(), f(&[1, 6, 11]));
    assert_eq!(lay(&m.diagonal(2, 0, 1)), l(&[2], &[5], 2));
    assert_eq!(lay(&m.diagonal(-1, 0, 1)), l(&[2], &[5], 4));
    assert_eq!(m.diagonal(-1, 0, 1).to_vec(), f(&[4, 9]));
    assert_eq!(m.diagonal(-2, -2, -1).to_vec(), f(&[8]));
    // dims swapped: offset counts along dim2 = 0
    assert_eq!(m.diagonal(1, 1, 0).to_vec(), f(&[4, 9]));
    assert_eq!(m.diagonal(-1, 1, 0).to_vec(), f(&[1, 6, 11]));
    // off the edge: empty, storage offset unchanged
    assert_eq!(lay(&m.diagonal(4, 0, 1)), l(&[0], &[5], 0));
    assert_eq!(lay(&m.diagonal(-3, 0, 1)), l(&[0], &[5], 0));
    assert_eq!(lay(&m.diagonal(i64::MIN, 0, 1)), l(&[0], &[5], 0));
    // 3-d: both dims removed, diagonal appended
    let a = arange(24, &[2, 3, 4]);
    assert_eq!(lay(&a.diagonal(0, 0, 2)), l(&[3, 2], &[4, 13], 0));
    assert_eq!(a.diagonal(0, 0, 2).to_vec(), f(&[0, 13, 4, 17, 8, 21]));
    assert_eq!(lay(&a.diagonal(1, 2, 1)), l(&[2, 2], &[12, 5], 4));
    assert_eq!(a.diagonal(1, 2, 1).to_vec(), f(&[4, 9, 16, 21]));
}

#[test]
#[should_panic(expected = "funcz: diagonal: diagonal dimensions cannot be identical 0, -2")]
fn diagonal_same_dims() {
    arange(12, &[3, 4]).diagonal(0, 0, -2);
}

// ---------------------------------------------------- size-1 dims

#[test]
fn squeeze_unsqueeze() {
    let x = arange(6, &[1, 3, 1, 2]);
    assert_eq!(lay(&x.squeeze()), l(&[3, 2], &[2, 1], 0));
    assert_eq!(lay(&x.squeeze_dim(2)), l(&[1, 3, 2], &[6, 2, 1], 0));
    assert_eq!(lay(&x.squeeze_dim(-4)), l(&[3, 1, 2], &[2, 2, 1], 0));
    assert_eq!(lay(&x.squeeze_dim(1)), lay(&x));
    assert_eq!(lay(&arange(1, &[1, 1]).squeeze()), l(&[], &[], 0));
    assert_eq!(lay(&Tensor::scalar(1.0f32).squeeze_dim(-1)), l(&[], &[], 0));

    let a = arange(24, &[2, 3, 4]);
    assert_eq!(lay(&a.unsqueeze(-1)), l(&[2, 3, 4, 1], &[12, 4, 1, 1], 0));
    assert_eq!(lay(&a.unsqueeze(3)), l(&[2, 3, 4, 1], &[12, 4, 1, 1], 0));
    assert_eq!(lay(&a.unsqueeze(1)), l(&[2, 1, 3, 4], &[12, 12, 4, 1], 0));
    assert_eq!(lay(&a.unsqueeze(-4)), l(&[1, 2, 3, 4], &[24, 12, 4, 1], 0));
    let p = a.permute([2, 1, 0]);
    assert_eq!(lay(&p), l(&[4, 3, 2], &[1, 4, 12], 0));
    assert_eq!(lay(&p.unsqueeze(1)), l(&[4, 1, 3, 2], &[1, 12, 4, 12], 0));
    assert_eq!(lay(&Tensor::scalar(1.0f32).unsqueeze(0)), l(&[1], &[1], 0));
}

#[test]
#[should_panic(
    expected = "funcz: unsqueeze: dimension out of range (expected to be in range of [-4, 3], but got 4)"
)]
fn unsqueeze_out_of_range() {
    arange(24, &[2, 3, 4]).unsqueeze(4);
}

// ---------------------------------------------------- expand, unfold, as_strided

#[test]
fn expand_layouts() {
    let c = arange(3, &[3, 1]);
    let e = c.expand([2, -1, 4]);
    assert_eq!(lay(&e), l(&[2, 3, 4], &[0, 1, 0], 0));
    assert!(e.same_storage(&c));
    assert_eq!(&e.to_vec()[..8], &f(&[0, 0, 0, 0, 1, 1, 1, 1])[..]);
    assert_eq!(lay(&arange(3, &[3]).expand([1, 3])), l(&[1, 3], &[3, 1], 0));
    assert_eq!(lay(&c.expand([1, 3, 1])), l(&[1, 3, 1], &[3, 1, 1], 0));
    assert_eq!(lay(&c.expand([3, 1])), lay(&c));
    assert_eq!(
        lay(&Tensor::scalar(2.0f32).expand([2, 3])),
        l(&[2, 3], &[0, 0], 0)
    );
    assert_eq!(lay(&arange(3, &[3]).expand([0, 3])), l(&[0, 3], &[0, 1], 0));
}

#[test]
#[should_panic(
    expected = "funcz: expand: the expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1. Target sizes: [2, 4]. Tensor sizes: [3]"
)]
fn expand_mismatch() {
    arange(3, &[3]).expand([2, 4]);
}

#[test]
#[should_panic(
    expected = "funcz: expand: the expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"
)]
fn expand_minus_one_in_new_dim() {
    arange(3, &[3]).expand([-1, 3]);
}

#[test]
#[should_panic(
    expected = "funcz: expand: the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"
)]
fn expand_too_few_sizes() {
    arange(6, &[2, 3]).expand([3]);
}

#[test]
fn unfold_layouts() {
    let x = arange(7, &[7]);
    let w = x.unfold(0, 3, 2);
    assert_eq!(lay(&w), l(&[3, 3], &[2, 1], 0));
    assert_eq!(w.to_vec(), f(&[0, 1, 2, 2, 3, 4, 4, 5, 6]));
    assert_eq!(lay(&x.unfold(0, 2, 3)), l(&[2, 2], &[3, 1], 0));
    assert_eq!(lay(&x.unfold(-1, 7, 1)), l(&[1, 7], &[1, 1], 0));
    assert_eq!(lay(&x.unfold(0, 0, 1)), l(&[8, 0], &[1, 1], 0));
    let a = arange(24, &[2, 3, 4]);
    assert_eq!(lay(&a.unfold(1, 2, 1)), l(&[2, 2, 4, 2], &[12, 4, 1, 4], 0));
    assert_eq!(
        lay(&Tensor::scalar(1.0f32).unfold(0, 1, 1)),
        l(&[1], &[1], 0)
    );
}

#[test]
#[should_panic(
    expected = "funcz: unfold: maximum size for tensor at dimension 0 is 7 but size is 8"
)]
fn unfold_too_big() {
    arange(7, &[7]).unfold(0, 8, 1);
}

#[test]
#[should_panic(expected = "funcz: unfold: step is 0 but must be > 0")]
fn unfold_zero_step() {
    arange(7, &[7]).unfold(0, 2, 0);
}

#[test]
fn as_strided_uses_absolute_offsets() {
    let a = arange(9, &[9]);
    let s = a.as_strided([2, 2], [3, 1], 1);
    assert_eq!(lay(&s), l(&[2, 2], &[3, 1], 1));
    assert_eq!(s.to_vec(), f(&[1, 2, 4, 5]));
    let n = a.narrow(0, 3, 4);
    assert_eq!(n.as_strided([2], [1], 0).to_vec(), f(&[0, 1]));
    let o = a.as_strided([3, 3], [1, 1], 0); // overlapping is a valid view
    assert_eq!(o.to_vec(), f(&[0, 1, 2, 1, 2, 3, 2, 3, 4]));
    assert_eq!(lay(&a.as_strided([0], [1], 9)), l(&[0], &[1], 9));
    assert!(s.same_storage(&a));
}

#[test]
#[should_panic(
    expected = "funcz: as_strided: size [3], stride [4] and storage offset 1 need a storage of 10 elements, out of bounds for a storage of 9 elements"
)]
fn as_strided_out_of_bounds() {
    arange(9, &[9]).as_strided([3], [4], 1);
}

#[test]
#[should_panic(expected = "funcz: as_strided: mismatch in length of strides and shape")]
fn as_strided_length_mismatch() {
    arange(9, &[9]).as_strided([3], [1, 1], 0);
}

#[test]
#[should_panic(expected = "funcz: as_strided: negative strides are not supported")]
fn as_strided_negative_stride() {
    arange(9, &[9]).as_strided([3], [-1], 4);
}

// ---------------------------------------------------- multi-output views

#[test]
fn split_chunk_unbind() {
    let v = arange(5, &[5]);
    let parts = v.split(2, 0);
    let lays: Vec<_> = parts.iter().map(lay).collect();
    assert_eq!(
        lays,
        vec![l(&[2], &[1], 0), l(&[2], &[1], 2), l(&[1], &[1], 4)]
    );
    assert!(parts.iter().all(|p| p.same_storage(&v)));
    assert_eq!(v.split(10, 0).len(), 1);
    assert_eq!(v.split(5, -1).len(), 1);

    let a = arange(24, &[2, 3, 4]);
    let s = a.split(2, 1);
    assert_eq!(lay(&s[0]), l(&[2, 2, 4], &[12, 4, 1], 0));
    assert_eq!(lay(&s[1]), l(&[2, 1, 4], &[12, 4, 1], 8));

    let c = v.chunk(3, 0);
    assert_eq!(
        c.iter().map(|t| t.numel()).collect::<Vec<_>>(),
        vec![2, 2, 1]
    );
    // PyTorch: split size ceil(6/4) = 2, so only 3 chunks come back
    assert_eq!(arange(6, &[6]).chunk(4, 0).len(), 3);
    assert_eq!(arange(4, &[4]).chunk(3, 0).len(), 2);
    assert_eq!(arange(2, &[2]).chunk(5, 0).len(), 2);
    // a dimension of size 0 gives `chunks` empty pieces
    let z = arange(0, &[0, 2]).chunk(3, 0);
    assert_eq!(z.len(), 3);
    assert!(z.iter().all(|t| t.shape() == [0, 2]));
    assert_eq!(arange(0, &[0]).split(0, 0).len(), 1);

    let u = a.unbind(1);
    assert_eq!(u.len(), 3);
    assert_eq!(lay(&u[2]), l(&[2, 4], &[12, 1], 8));
    assert_eq!(a.unbind(-1)[3].to_vec(), f(&[3, 7, 11, 15, 19, 23]));
    assert_eq!(arange(0, &[0, 3]).unbind(0).len(), 0);
}

#[test]
#[should_panic(expected = "funcz: chunk: chunk expects `chunks` to be greater than 0, got: 0")]
fn chunk_zero() {
    arange(4, &[4]).chunk(0, 0);
}

#[test]
#[should_panic(
    expected = "funcz: split: split_size can only be 0 if dimension size is 0, but got dimension size of 4"
)]
fn split_zero() {
    arange(4, &[4]).split(0, 0);
}

#[test]
#[should_panic(
    expected = "funcz: split: split expects split_size be non-negative, but got split_size=-1"
)]
fn split_negative() {
    arange(4, &[4]).split(-1, 0);
}

#[test]
#[should_panic(expected = "funcz: unbind: dimension specified as 0 but tensor has no dimensions")]
fn unbind_scalar() {
    Tensor::scalar(1.0f32).unbind(0);
}

#[test]
fn alias_and_detach_share_storage_with_new_identity() {
    let a = arange(4, &[2, 2]).t();
    for b in [a.alias(), a.detach()] {
        assert!(b.same_storage(&a));
        assert_eq!(lay(&b), lay(&a));
        assert_ne!(b.id(), a.id());
    }
}

// ---------------------------------------------------- *_copy

#[test]
fn copies_are_fresh_and_contiguous() {
    let m = arange(12, &[3, 4]);
    let checks: Vec<(Tensor<f32>, Vec<usize>, Vec<f32>)> = vec![
        (
            m.t_copy(),
            vec![4, 3],
            f(&[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]),
        ),
        (m.narrow_copy(1, 1, 2), vec![3, 2], f(&[1, 2, 5, 6, 9, 10])),
        (
            m.slice_copy(0, 0, 3, 2),
            vec![2, 4],
            f(&[0, 1, 2, 3, 8, 9, 10, 11]),
        ),
        (m.select_copy(1, -1), vec![3], f(&[3, 7, 11])),
        (m.diagonal_copy(1, 0, 1), vec![3], f(&[1, 6, 11])),
        (
            m.view_copy([2, -1]),
            vec![2, 6],
            (0..12).map(|x| x as f32).collect(),
        ),
        (
            m.t().view_copy([-1]),
            vec![12],
            f(&[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]),
        ),
        (
            m.transpose_copy(-1, 0),
            vec![4, 3],
            f(&[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]),
        ),
        (
            m.permute_copy([1, 0]),
            vec![4, 3],
            f(&[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]),
        ),
        (
            m.unsqueeze_copy(1).squeeze_copy(),
            vec![3, 4],
            (0..12).map(|x| x as f32).collect(),
        ),
        (
            m.select(0, 0).unsqueeze(0).squeeze_dim_copy(0),
            vec![4],
            f(&[0, 1, 2, 3]),
        ),
        (
            m.select(1, 0).expand_copy([2, 3]),
            vec![2, 3],
            f(&[0, 4, 8, 0, 4, 8]),
        ),
        (
            m.select(0, 1).unfold_copy(0, 2, 1),
            vec![3, 2],
            f(&[4, 5, 5, 6, 6, 7]),
        ),
        (
            m.as_strided_copy([2, 2], [1, 4], 5),
            vec![2, 2],
            f(&[5, 9, 6, 10]),
        ),
        (
            m.t().alias_copy(),
            vec![4, 3],
            f(&[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]),
        ),
        (
            m.detach_copy(),
            vec![3, 4],
            (0..12).map(|x| x as f32).collect(),
        ),
    ];
    for (i, (c, shape, vals)) in checks.into_iter().enumerate() {
        assert_eq!(c.shape(), &shape[..], "case {i}");
        assert_eq!(c.to_vec(), vals, "case {i}");
        assert!(c.is_contiguous(), "case {i}");
        assert_eq!(c.storage_offset(), 0, "case {i}");
        assert!(!c.same_storage(&m), "case {i}");
    }
    let s = m.split_copy(2, 0);
    assert_eq!(s[1].to_vec(), f(&[8, 9, 10, 11]));
    assert!(!s[0].same_storage(&m));
    let c = m.chunk_copy(2, 1);
    assert_eq!(c[1].to_vec(), f(&[2, 3, 6, 7, 10, 11]));
    assert!(c[1].is_contiguous());
    let u = m.unbind_copy(1);
    assert_eq!(u[0].to_vec(), f(&[0, 4, 8]));
    assert!(!u[0].same_storage(&m));
}

// ---------------------------------------------------- scatters

#[test]
fn slice_scatter_values() {
    let base = Tensor::<f32>::from_vec(vec![0.0; 8], &[2, 4]);
    let src = Tensor::from_vec(f(&[1, 2, 3, 4]), &[2, 2]);
    let out = base.slice_scatter(&src, 1, 0, 4, 2);
    assert_eq!(out.to_vec(), f(&[1, 0, 2, 0, 3, 0, 4, 0]));
    assert!(out.is_contiguous());
    let out = base.slice_scatter(&src, -1, -2, i64::MAX, 1);
    assert_eq!(out.to_vec(), f(&[0, 0, 1, 2, 0, 0, 3, 4]));
    assert_eq!(base.to_vec(), vec![0.0; 8]);
}

#[test]
fn select_and_diagonal_scatter_values() {
    // a non-contiguous self: the output is a fresh contiguous tensor
    let base = arange(6, &[2, 3]).t(); // [[0,3],[1,4],[2,5]]
    let src = Tensor::from_vec(f(&[9, 8]), &[2]);
    let out = base.select_scatter(&src, 0, -2);
    assert_eq!(lay(&out), l(&[3, 2], &[2, 1], 0));
    assert_eq!(out.to_vec(), f(&[0, 3, 9, 8, 2, 5]));

    let z = Tensor::<f32>::from_vec(vec![0.0; 12], &[3, 4]);
    let d = Tensor::from_vec(f(&[10, 20]), &[2]);
    assert_eq!(
        z.diagonal_scatter(&d, -1, 0, 1).to_vec(),
        f(&[0, 0, 0, 0, 10, 0, 0, 0, 0, 20, 0, 0])
    );
    assert_eq!(
        z.diagonal_scatter(&d, 2, 0, 1).to_vec(),
        f(&[0, 0, 10, 0, 0, 0, 0, 20, 0, 0, 0, 0])
    );
    let empty = Tensor::<f32>::from_vec(vec![], &[0]);
    assert_eq!(z.diagonal_scatter(&empty, 5, 0, 1).to_vec(), vec![0.0; 12]);
}

#[test]
fn as_strided_scatter_values() {
    let base = Tensor::<f32>::from_vec(vec![0.0; 9], &[3, 3]);
    let src = Tensor::from_vec(f(&[1, 2, 3, 4]), &[2, 2]);
    let out = base.as_strided_scatter(&src, [2, 2], [3, 1], 1);
    assert_eq!(out.to_vec(), f(&[0, 1, 2, 0, 3, 4, 0, 0, 0]));
    // offsets index the row-major copy of self, even for a view with an offset
    let view = arange(12, &[12]).narrow(0, 3, 9).view([3, 3]);
    let out = view.as_strided_scatter(&src, [2, 2], [1, 3], 0);
    assert_eq!(out.to_vec(), f(&[1, 3, 5, 2, 4, 8, 9, 10, 11]));
}

#[test]
#[should_panic(
    expected = "funcz: slice_scatter: expected src to have a size equal to the slice of self: src shape [3], slice shape [2] (self shape [4])"
)]
fn slice_scatter_shape_mismatch() {
    let base = arange(4, &[4]);
    base.slice_scatter(&arange(3, &[3]), 0, 0, 4, 2);
}

#[test]
#[should_panic(
    expected = "funcz: as_strided_scatter: unsupported operation: more than one element of the written-to tensor refers to a single memory location"
)]
fn as_strided_scatter_overlap() {
    let base = arange(4, &[4]);
    base.as_strided_scatter(&arange(4, &[2, 2]), [2, 2], [1, 1], 0);
}

#[test]
#[should_panic(
    expected = "funcz: diagonal_scatter: expected src to have a size equal to the slice of self: src shape [3], slice shape [2]"
)]
fn diagonal_scatter_shape_mismatch() {
    arange(6, &[2, 3]).diagonal_scatter(&arange(3, &[3]), 0, 0, 1);
}

// ---------------------------------------------------- metadata in-place

#[test]
fn metadata_inplace_ops() {
    let mut a = arange(6, &[2, 3]);
    let other = a.alias();
    let r = a.t_();
    assert_eq!(r.id(), a.id());
    assert!(r.same_storage(&other));
    assert_eq!(lay(&a), l(&[3, 2], &[1, 3], 0));
    assert_eq!(lay(&other), l(&[2, 3], &[3, 1], 0));
    a.transpose_(0, 1).shape(); // back to [2, 3]
    assert_eq!(lay(&a), l(&[2, 3], &[3, 1], 0));
    a.unsqueeze_(-1);
    assert_eq!(lay(&a), l(&[2, 3, 1], &[3, 1, 1], 0));
    a.squeeze_dim_(0);
    assert_eq!(lay(&a), l(&[2, 3, 1], &[3, 1, 1], 0));
    a.squeeze_dim_(2);
    assert_eq!(lay(&a), l(&[2, 3], &[3, 1], 0));
    a.unsqueeze_(0).shape();
    a.squeeze_();
    assert_eq!(lay(&a), l(&[2, 3], &[3, 1], 0));
    a.as_strided_([2, 2], [1, 2], 1);
    assert_eq!(a.to_vec(), f(&[1, 3, 2, 4]));
    a.resize_([5]);
    assert_eq!(lay(&a), l(&[5], &[1], 1));
    assert_eq!(a.to_vec(), f(&[1, 2, 3, 4, 5]));
    a.resize_([2, 4]);
    assert_eq!(lay(&a), l(&[2, 4], &[4, 1], 1));
    assert_eq!(a.to_vec(), f(&[1, 2, 3, 4, 5, 0, 0, 0]));
    // the alias sees the same (grown) storage; its layout is untouched
    assert_eq!(other.to_vec(), f(&[0, 1, 2, 3, 4, 5]));
    assert_eq!(
        a.as_strided([9], [1], 0).to_vec(),
        f(&[0, 1, 2, 3, 4, 5, 0, 0, 0])
    );
}

#[test]
#[should_panic(expected = "funcz: t_: t() expects a tensor with <= 2 dimensions, but self is 3D")]
fn t_inplace_of_3d() {
    arange(8, &[2, 2, 2]).t_();
}

#[test]
#[should_panic(expected = "funcz: resize_: trying to create tensor with negative dimension -1")]
fn resize_negative() {
    arange(4, &[4]).resize_([-1, 2]);
}

#[test]
#[should_panic(
    expected = "funcz: as_strided_: size [4], stride [3] and storage offset 0 need a storage of 10 elements"
)]
fn as_strided_inplace_out_of_bounds() {
    arange(4, &[4]).as_strided_([4], [3], 0);
}

// ---------------------------------------------------- tracing

#[test]
fn recorded_aten_names_and_args() {
    let m = arange(12, &[3, 4]);
    let mut h = m.alias();
    start_recording();
    let n = m.narrow(1, -3, 2);
    let ch = m.chunk(3, 1);
    let sq = m.unsqueeze(0).squeeze_dim_copy(0);
    let nc = m.narrow_copy(0, 1, 1);
    let cc = m.chunk_copy(2, 0);
    let rv = m.reshape([4, 3]);
    let rc = m.t().reshape([-1]);
    let fv = m.flatten();
    let c1 = m.contiguous();
    let tr = h.t_();
    let sc = m.slice_scatter(&n, 1, 1, 3, 1);
    let nodes = stop_recording();
    let names: Vec<_> = nodes.iter().map(|n| n.op).collect();
    assert_eq!(
        names,
        vec![
            "slice",
            "split",
            "unsqueeze",
            "squeeze_copy",
            "slice_copy",
            "split_copy",
            "view",
            "t",
            "reshape",
            "view",
            "contiguous",
            "t_",
            "slice_scatter",
        ]
    );
    let id = m.id();
    assert_eq!(
        nodes[0].args,
        vec![
            Arg::Tensor(id),
            Arg::Int(1),
            Arg::Int(1),
            Arg::Int(3),
            Arg::Int(1)
        ]
    );
    assert_eq!(nodes[0].outputs, vec![n.id()]);
    assert_eq!(
        nodes[1].args,
        vec![Arg::Tensor(id), Arg::Int(2), Arg::Int(1)]
    );
    assert!(nodes[1].list);
    assert_eq!(
        nodes[1].outputs,
        ch.iter().map(|t| t.id()).collect::<Vec<_>>()
    );
    assert_eq!(nodes[3].args[1], Arg::Int(0));
    assert_eq!(nodes[3].outputs, vec![sq.id()]);
    assert_eq!(
        nodes[4].args,
        vec![
            Arg::Tensor(id),
            Arg::Int(0),
            Arg::Int(1),
            Arg::Int(2),
            Arg::Int(1)
        ]
    );
    assert_eq!(nodes[4].outputs, vec![nc.id()]);
    assert_eq!(
        nodes[5].args,
        vec![Arg::Tensor(id), Arg::Int(2), Arg::Int(0)]
    );
    assert_eq!(nodes[5].outputs.len(), cc.len());
    assert_eq!(nodes[6].args, vec![Arg::Tensor(id), Arg::Ints(vec![4, 3])]);
    assert_eq!(nodes[6].outputs, vec![rv.id()]);
    assert_eq!(nodes[8].args[1], Arg::Ints(vec![-1]));
    assert_eq!(nodes[8].outputs, vec![rc.id()]);
    assert_eq!(nodes[9].args, vec![Arg::Tensor(id), Arg::Ints(vec![-1])]);
    assert_eq!(nodes[9].outputs, vec![fv.id()]);
    assert_eq!(nodes[10].outputs, vec![c1.id()]);
    assert_eq!(nodes[11].args, vec![Arg::Tensor(h.id())]);
    assert_eq!(nodes[11].outputs, vec![tr.id()]);
    assert_eq!(nodes[11].outputs, vec![h.id()]);
    assert_eq!(
        nodes[12].args,
        vec![
            Arg::Tensor(id),
            Arg::Tensor(n.id()),
            Arg::Int(1),
            Arg::Int(1),
            Arg::Int(3),
            Arg::Int(1)
        ]
    );
    assert_eq!(nodes[12].outputs, vec![sc.id()]);
}

#[test]
fn works_for_integer_elements() {
    let a = Tensor::<i64>::from_vec((0..6).collect(), &[2, 3]);
    assert_eq!(a.t().to_vec(), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(a.diagonal_copy(0, 0, 1).to_vec(), vec![0, 4]);
    let src = Tensor::<i64>::from_vec(vec![7, 7], &[2]);
    assert_eq!(
        a.select_scatter(&src, 1, 1).to_vec(),
        vec![0, 7, 2, 3, 7, 5]
    );
}

#[test]
#[should_panic(expected = "funcz: unsqueeze: tensors of rank 9 are not supported (at most 8 dims)")]
fn unsqueeze_past_max_rank() {
    arange(1, &[1; 8]).unsqueeze(0);
}

#[test]
#[should_panic(
    expected = "funcz: as_strided: size [4611686018427387904, 2], stride [4, 4611686018427387904] and storage offset 0 need a storage of too many elements"
)]
fn as_strided_overflow_is_reported() {
    arange(4, &[4]).as_strided([1i64 << 62, 2], [4, 1i64 << 62], 0);
}
