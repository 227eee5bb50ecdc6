//! ndarray interop: any rank, views on both sides, fixed-rank arrays back,
//! zero-copy reads.

use funcz_runtime::Tensor;
use funcz_runtime::ndarray::{
    Array, Array0, Array1, Array2, Array3, ArrayD, ArrayView2, Axis, IxDyn, ShapeBuilder, array, s,
};

#[test]
fn owned_arrays_of_any_rank_convert() {
    let t: Tensor<f32> = array![[1.0f32, 2.0], [3.0, 4.0]].into();
    assert_eq!(
        (t.shape(), t.to_vec()),
        (&[2, 2][..], vec![1.0, 2.0, 3.0, 4.0])
    );
    let t: Tensor<i64> = array![1i64, 2, 3].into();
    assert_eq!(t.shape(), &[3]);
    let t: Tensor<f64> = Array0::from_elem((), 5.0).into();
    assert_eq!((t.dim(), t.item()), (0, 5.0));
    let a3 = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as i32);
    let t = Tensor::from(a3.clone());
    assert_eq!(t.shape(), &[2, 3, 4]);
    assert_eq!(t.to_vec(), a3.iter().copied().collect::<Vec<_>>());
    let d = ArrayD::from_shape_vec(IxDyn(&[2, 1, 2]), vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(Tensor::from(d).shape(), &[2, 1, 2]);
}

#[test]
fn non_standard_owned_arrays_keep_their_logical_order() {
    // Column-major, transposed and offset (sliced in place) owned arrays.
    let f = Array2::from_shape_vec((2, 3).f(), vec![1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0]).unwrap();
    assert_eq!(Tensor::from(f).to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let t = Array2::from_shape_vec((2, 3), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    assert_eq!(
        Tensor::from(t.clone().reversed_axes()).to_vec(),
        vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    let mut sliced = t.clone();
    sliced.slice_collapse(s![1.., 1..]);
    let u = Tensor::from(sliced);
    assert_eq!((u.shape(), u.to_vec()), (&[1, 2][..], vec![5.0, 6.0]));
    let mut row = Array1::from_vec(vec![0.0f32, 1.0, 2.0, 3.0]);
    row.slice_collapse(s![1..3]); // standard layout, offset 1 in its buffer
    assert_eq!(Tensor::from(row).to_vec(), vec![1.0, 2.0]);
}

#[test]
fn views_and_references_of_arrays_convert() {
    let a = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32);
    let v: ArrayView2<f32> = a.slice(s![..;2, 1..3]);
    let t = Tensor::from(v);
    assert_eq!(
        (t.shape(), t.to_vec()),
        (&[2, 2][..], vec![1.0, 2.0, 9.0, 10.0])
    );
    let t = Tensor::from(&a.slice(s![.., 3]));
    assert_eq!(t.to_vec(), vec![3.0, 7.0, 11.0]);
    let t = Tensor::from(&a.t());
    assert_eq!(t.to_vec(), a.t().iter().copied().collect::<Vec<_>>());
    let t = Tensor::from(&a.index_axis(Axis(0), 1).insert_axis(Axis(1)));
    assert_eq!(t.shape(), &[4, 1]);
    // A reference to an owned array copies; the array stays usable.
    let t = Tensor::from(&a);
    t.add_(1.0);
    assert_eq!(a[[0, 0]], 0.0);
    assert_eq!(t.to_vec()[0], 1.0);
}

#[test]
fn tensors_convert_to_fixed_rank_arrays() {
    let t = Tensor::<f32>::from_vec((0..6).map(|x| x as f32).collect(), &[2, 3]);
    let a = Array2::try_from(&t).unwrap();
    assert_eq!(a, array![[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]);
    // Views of any layout come out in logical order.
    let at = Array2::try_from(&t.t()).unwrap();
    assert_eq!(at, a.t());
    let col = Array1::try_from(t.select(1, 2)).unwrap();
    assert_eq!(col, array![2.0, 5.0]);
    let e = Array3::<f32>::try_from(&t).unwrap_err();
    assert_eq!(
        e.to_string(),
        "funcz: to_ndarray: cannot convert a tensor of shape [2, 3] (2 dims) into an array of 3 dims"
    );
    let s = Array0::try_from(Tensor::<i32>::scalar(7)).unwrap();
    assert_eq!(s.into_scalar(), 7);
    let d: ArrayD<f32> = (&t.t()).into();
    assert_eq!(d.shape(), &[3, 2]);
    let d: ArrayD<f32> = t.into();
    assert_eq!(d.ndim(), 2);
}

#[test]
fn with_array_view_reads_any_layout_in_place() {
    let t = Tensor::<f64>::from_vec((0..12).map(|x| x as f64).collect(), &[3, 4]);
    let v = t.t().narrow(0, 1, 2);
    let (shape, strides, vals) =
        v.with_array_view(|a| (a.shape().to_vec(), a.strides().to_vec(), a.to_owned()));
    assert_eq!((shape, strides), (vec![2, 3], vec![1, 4]));
    assert_eq!(
        vals,
        Array::from_shape_vec(IxDyn(&[2, 3]), v.to_vec()).unwrap()
    );
    // An expanded view has stride 0 and is read without materializing it.
    let e = t.select(0, 0).unsqueeze(0).expand([5, 4]);
    assert_eq!(e.with_array_view(|a| a.sum()), 5.0 * 6.0);
    // It reads the current values, through aliases.
    t.narrow(1, 0, 1).fill_(100.0);
    assert_eq!(e.with_array_view(|a| a[[3, 0]]), 100.0);
    // Empty tensors give empty views.
    let z = Tensor::<f32>::zeros(&[0, 3]);
    assert_eq!(z.with_array_view(|a| a.len()), 0);
}

#[test]
fn round_trip_through_ndarray_is_exact() {
    let a = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| {
        (i as f32) - (j as f32) * 0.5 + k as f32
    });
    let t = Tensor::from(&a.view().permuted_axes([2, 0, 1]));
    let back = Array3::try_from(&t.permute([1, 2, 0])).unwrap();
    assert_eq!(back, a);
}
