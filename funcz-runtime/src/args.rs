//! Argument conversions shared by the tensor methods, so that user code can
//! pass `usize` loop variables, `i64` dims and integer literals alike.

/// An integer argument (a dim, an index, a length). Negative values mean
/// "from the end" where PyTorch allows it.
///
/// ```
/// use funcz_runtime::args::AsI64;
/// assert_eq!(3usize.as_i64(), 3);
/// assert_eq!((-1i32).as_i64(), -1);
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
as_i64!(i32, i64, isize, usize, u32, u64);

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
