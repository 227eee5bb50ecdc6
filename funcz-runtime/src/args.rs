//! Argument conversions shared by the tensor methods, so that user code can
//! pass `usize` loop variables, `i64` dims and integer literals alike.

/// An integer argument (a dim, an index, a length). Negative values mean
/// "from the end" where PyTorch allows it.
///
/// Unsigned values above `i64::MAX` become `i64::MAX` (never a negative
/// number, which would count from the end): every op refuses it as out of
/// range, except slice bounds, which clamp it to the size as Python does.
///
/// ```
/// use funcz_runtime::args::AsI64;
/// assert_eq!(3usize.as_i64(), 3);
/// assert_eq!((-1i32).as_i64(), -1);
/// assert_eq!(usize::MAX.as_i64(), i64::MAX);
/// ```
pub trait AsI64: Copy {
    /// The value as `i64`.
    fn as_i64(self) -> i64;
}

macro_rules! as_i64 {
    ($($t:ty),*) => {$(
        impl AsI64 for $t {
            #[inline]
            fn as_i64(self) -> i64 {
                self as i64
            }
        }
    )*};
}
as_i64!(i32, i64, isize, u32);

macro_rules! as_i64_saturating {
    ($($t:ty),*) => {$(
        impl AsI64 for $t {
            #[inline]
            fn as_i64(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
as_i64_saturating!(usize, u64);

/// A list of integers (a shape that may contain `-1`, a list of dims).
///
/// ```
/// use funcz_runtime::args::IntoShape;
/// assert_eq!([2, -1].into_shape(), vec![2, -1]);
/// assert_eq!(vec![3usize, 4].into_shape(), vec![3, 4]);
/// assert_eq!((&[5i64][..]).into_shape(), vec![5]);
/// ```
pub trait IntoShape {
    /// The integers as `i64`.
    fn into_shape(self) -> Vec<i64>;
}

impl<A: AsI64, const N: usize> IntoShape for [A; N] {
    fn into_shape(self) -> Vec<i64> {
        self.iter().map(|x| x.as_i64()).collect()
    }
}
impl<A: AsI64, const N: usize> IntoShape for &[A; N] {
    fn into_shape(self) -> Vec<i64> {
        self.iter().map(|x| x.as_i64()).collect()
    }
}
impl<A: AsI64> IntoShape for &[A] {
    fn into_shape(self) -> Vec<i64> {
        self.iter().map(|x| x.as_i64()).collect()
    }
}
impl<A: AsI64> IntoShape for Vec<A> {
    fn into_shape(self) -> Vec<i64> {
        self.iter().map(|x| x.as_i64()).collect()
    }
}
impl<A: AsI64> IntoShape for &Vec<A> {
    fn into_shape(self) -> Vec<i64> {
        self.iter().map(|x| x.as_i64()).collect()
    }
}

/// The index list of [`index_put`](crate::Tensor::index_put) and
/// [`index_put_`](crate::Tensor::index_put_): one `i64` tensor per indexed
/// dimension, from the first, or `None` for a dimension taken whole
/// (PyTorch's `x[:, i] = v` is `x.index_put_(&[None, Some(&i)], &v,
/// false)`). Implemented for slices, arrays and `Vec`s of `&Tensor<i64>`
/// and of `Option<&Tensor<i64>>`.
///
/// ```
/// use funcz_runtime::Tensor;
/// let x = Tensor::<f32>::zeros(&[2, 3]);
/// let i = Tensor::<i64>::from_vec(vec![2, 0], &[2]);
/// x.index_put_(&[None, Some(&i)], 1.0, false); // x[:, [2, 0]] = 1
/// assert_eq!(x.to_vec(), vec![1.0, 0.0, 1.0, 1.0, 0.0, 1.0]);
/// ```
pub trait IntoIndices<'a> {
    /// The entries, `None` for a dimension taken whole.
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>>;
}

impl<'a> IntoIndices<'a> for &[&'a crate::Tensor<i64>] {
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>> {
        self.iter().map(|t| Some(*t)).collect()
    }
}

impl<'a, const N: usize> IntoIndices<'a> for &[&'a crate::Tensor<i64>; N] {
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>> {
        self.iter().map(|t| Some(*t)).collect()
    }
}

impl<'a> IntoIndices<'a> for &Vec<&'a crate::Tensor<i64>> {
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>> {
        self.iter().map(|t| Some(*t)).collect()
    }
}

impl<'a> IntoIndices<'a> for &[Option<&'a crate::Tensor<i64>>] {
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>> {
        self.to_vec()
    }
}

impl<'a, const N: usize> IntoIndices<'a> for &[Option<&'a crate::Tensor<i64>>; N] {
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>> {
        self.to_vec()
    }
}

impl<'a> IntoIndices<'a> for &Vec<Option<&'a crate::Tensor<i64>>> {
    fn into_indices(self) -> Vec<Option<&'a crate::Tensor<i64>>> {
        self.clone()
    }
}
