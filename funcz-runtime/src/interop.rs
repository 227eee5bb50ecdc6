//! ndarray interop: tensors from arrays and views of any rank, arrays of a
//! fixed or dynamic rank from tensors, and zero-copy read access.
//!
//! The ndarray version is the one re-exported as [`crate::ndarray`].

use ndarray::{
    Array, ArrayBase, ArrayD, ArrayView, ArrayViewD, Data, Dimension, Ix0, Ix1, Ix2, Ix3, Ix4, Ix5,
    Ix6, IxDyn,
};

use crate::element::Element;
use crate::fallible::Error;
use crate::tensor::Tensor;

/// # ndarray interop
///
/// Conversions in both directions, for any rank and for views on either
/// side: [`from_ndarray`](Tensor::from_ndarray) and the `From` impls take
/// any `&ArrayBase` (owned arrays, `ArrayView`s, slices of them), an owned
/// standard-layout `Array` is taken without copying, and
/// [`with_array_view`](Tensor::with_array_view) reads a tensor (a view, a
/// transpose, an `expand`) in place.
///
/// ```
/// use funcz_runtime::Tensor;
/// use funcz_runtime::ndarray::{Array2, array, s};
///
/// let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
/// let t = Tensor::from(&a.slice(s![.., 1..])); // a view of an array
/// assert_eq!((t.shape(), t.to_vec()), (&[2, 2][..], vec![2.0, 3.0, 5.0, 6.0]));
///
/// let back = Array2::try_from(&t.t()).unwrap(); // a fixed-rank array
/// assert_eq!(back, array![[2.0, 5.0], [3.0, 6.0]]);
///
/// let total = t.t().with_array_view(|v| v.sum()); // no copy
/// assert_eq!(total, 16.0);
/// ```
impl<T: Element> Tensor<T> {
    /// Copies an ndarray array or view of any rank and layout into a new
    /// contiguous tensor (elements in logical, row-major order).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// use funcz_runtime::ndarray::array;
    /// let a = array![[1i64, 2], [3, 4]];
    /// let t = Tensor::from_ndarray(&a.t());
    /// assert_eq!(t.to_vec(), vec![1, 3, 2, 4]);
    /// ```
    pub fn from_ndarray<S, D>(a: &ArrayBase<S, D>) -> Self
    where
        S: Data<Elem = T>,
        D: Dimension,
    {
        Tensor::from_contiguous(a.iter().copied().collect(), a.shape())
    }

    /// Copies the elements into a new dynamic-rank ndarray array (use
    /// `ArrayN::try_from(&tensor)` for a fixed rank, and
    /// [`with_array_view`](Tensor::with_array_view) to read without a
    /// copy).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let t = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let a = t.t().to_ndarray();
    /// assert_eq!(a.iter().copied().collect::<Vec<_>>(), vec![1.0, 3.0, 2.0, 4.0]);
    /// ```
    pub fn to_ndarray(&self) -> ArrayD<T> {
        ArrayD::from_shape_vec(IxDyn(self.shape()), self.to_vec())
            .expect("funcz: to_ndarray: shape and element count agree")
    }

    /// Runs `f` on an ndarray view of the tensor's elements, borrowed from
    /// its storage: no copy, whatever the layout (a transpose, a narrowed
    /// or `expand`ed view are strided views). Not an op: nothing is
    /// traced.
    ///
    /// The storage stays locked for reading while `f` runs, so `f` must not
    /// run an in-place op on this tensor or on anything sharing its storage
    /// (that would wait on the lock forever).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    /// let col = a.select(1, 2); // strided: [3.0, 6.0]
    /// let vals: Vec<f32> = col.with_array_view(|v| v.iter().copied().collect());
    /// assert_eq!(vals, vec![3.0, 6.0]);
    /// let b = a.narrow(0, 1, 1).expand([4, 3]); // stride 0 on the first dim
    /// assert_eq!(b.with_array_view(|v| (v.shape().to_vec(), v.sum())), (vec![4, 3], 60.0));
    /// ```
    pub fn with_array_view<R>(&self, f: impl FnOnce(ArrayViewD<'_, T>) -> R) -> R {
        self.with_array(f)
    }
}

impl<T, S, D> From<&ArrayBase<S, D>> for Tensor<T>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    /// Copies an array or a view of any rank (see [`Tensor::from_ndarray`]).
    fn from(a: &ArrayBase<S, D>) -> Self {
        Tensor::from_ndarray(a)
    }
}

impl<T: Element, D: Dimension> From<Array<T, D>> for Tensor<T> {
    /// Takes an owned array of any rank. A standard-layout (row-major)
    /// array hands its buffer over without copying; any other layout is
    /// copied in logical order.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// use funcz_runtime::ndarray::array;
    /// let t: Tensor<f32> = array![[1.0f32, 2.0], [3.0, 4.0]].into();
    /// assert_eq!((t.shape(), t.to_vec()), (&[2, 2][..], vec![1.0, 2.0, 3.0, 4.0]));
    /// let u: Tensor<f32> = array![[1.0f32, 2.0], [3.0, 4.0]].reversed_axes().into();
    /// assert_eq!(u.to_vec(), vec![1.0, 3.0, 2.0, 4.0]);
    /// ```
    fn from(a: Array<T, D>) -> Self {
        if !a.is_standard_layout() {
            return Tensor::from_ndarray(&a);
        }
        let shape = a.shape().to_vec();
        let n = a.len();
        let (mut data, offset) = a.into_raw_vec_and_offset();
        let start = offset.unwrap_or(0);
        if start != 0 || data.len() != n {
            // The array's elements are a window of its buffer.
            data = data[start..start + n].to_vec();
        }
        Tensor::from_contiguous(data, &shape)
    }
}

impl<'a, T: Element, D: Dimension> From<ArrayView<'a, T, D>> for Tensor<T> {
    /// Copies a view of any rank and layout (see [`Tensor::from_ndarray`]).
    fn from(a: ArrayView<'a, T, D>) -> Self {
        Tensor::from_ndarray(&a)
    }
}

impl<T: Element> From<&Tensor<T>> for ArrayD<T> {
    /// Copies a tensor's elements into an ndarray array.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let t = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let a: funcz_runtime::ndarray::ArrayD<f32> = (&t.t()).into();
    /// assert_eq!(a.iter().copied().collect::<Vec<_>>(), vec![1.0, 3.0, 2.0, 4.0]);
    /// let back: Tensor<f32> = a.into();
    /// assert_eq!(back.shape(), &[2, 2]);
    /// ```
    fn from(t: &Tensor<T>) -> Self {
        t.to_ndarray()
    }
}

impl<T: Element> From<Tensor<T>> for ArrayD<T> {
    /// Copies a tensor's elements into an ndarray array.
    fn from(t: Tensor<T>) -> Self {
        t.to_ndarray()
    }
}

/// A copy of `t` as an array of rank `D`, or an error naming both ranks.
fn to_fixed<T: Element, D: Dimension>(t: &Tensor<T>) -> Result<Array<T, D>, Error> {
    let want = D::NDIM.unwrap_or(t.dim());
    if want != t.dim() {
        return Err(Error::new(
            "to_ndarray",
            format!(
                "cannot convert a tensor of shape {:?} ({} dims) into an array of {want} dims",
                t.shape(),
                t.dim()
            ),
        ));
    }
    Ok(t.to_ndarray()
        .into_dimensionality::<D>()
        .expect("funcz: to_ndarray: ranks agree"))
}

macro_rules! fixed_rank {
    ($($ix:ident),*) => {$(
        impl<T: Element> TryFrom<&Tensor<T>> for Array<T, $ix> {
            type Error = Error;
            /// Copies the elements into an array of this fixed rank; fails
            /// (naming both ranks) if the tensor has another rank.
            fn try_from(t: &Tensor<T>) -> Result<Self, Error> {
                to_fixed(t)
            }
        }

        impl<T: Element> TryFrom<Tensor<T>> for Array<T, $ix> {
            type Error = Error;
            /// Copies the elements into an array of this fixed rank; fails
            /// (naming both ranks) if the tensor has another rank.
            fn try_from(t: Tensor<T>) -> Result<Self, Error> {
                to_fixed(&t)
            }
        }
    )*};
}
fixed_rank!(Ix0, Ix1, Ix2, Ix3, Ix4, Ix5, Ix6);
