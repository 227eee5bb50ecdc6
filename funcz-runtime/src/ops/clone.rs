//! `Clone`: a deep copy, as PyTorch's `clone()`.

use crate::element::Scalar;
use crate::tensor::Tensor;
use crate::trace::{self, ToArg};

use crate::view::gather::materialize;

impl<T: Scalar> Clone for Tensor<T> {
    /// A deep copy into fresh contiguous storage (aten `clone`): writes to
    /// the copy are not seen by the original. Use `alias()` for a second
    /// handle on the same storage.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    /// let b = a.clone();
    /// b.add_(1.0);
    /// assert_eq!(a.to_vec(), vec![1.0, 2.0]);
    /// assert!(!a.same_storage(&b));
    /// ```
    #[track_caller]
    fn clone(&self) -> Self {
        trace::op(
            "clone",
            || vec![self.to_arg()],
            || materialize(self, &self.layout),
        )
    }
}
