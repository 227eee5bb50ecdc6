//! Returned aliases keep the original's layout.

use crate::element::Element;
use crate::tensor::Tensor;

use super::apply::{cast_ref, dispatch_f32, same};
use super::{Mode, Tracked, replay};

dispatch_f32! {
    /// The value a function returns for the alias `value` (state `state`) of
    /// `root` (state `rstate`), as `return y;` or the tail `(y, z)`.
    ///
    /// In the original program a returned view is a view of its base, laid
    /// out as the view op lays it out (`zeros(2, 5).narrow(1, 0, 2)` has
    /// strides `[5, 1]`). A commit through the alias makes it that view
    /// again where it can (see `rt::commit`); where it could not, the alias
    /// holds the functional op's result, laid out row-major. In
    /// [`Mode::Views`] this regenerates such an alias from its root, so the
    /// returned tensor is again a view of the root with the original's
    /// strides (and two returned views of one root share its storage, as in
    /// the original). [`Mode::Copies`] returns copies by contract; a value
    /// that is already a view of the root, or that no longer follows it, is
    /// returned as it is.
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Mode, Tracked, ViewMeta};
    /// use funcz_runtime::Tensor;
    /// let mut root = Tensor::<f32>::zeros(&[2, 5]);
    /// let mut rs = Tracked::root(&root);
    /// let (mut y, mut ys) = rt::view(&root, &rs, ViewMeta::narrow(1, 0, 2), Mode::Views);
    /// let new = y.add(1.0);
    /// rt::commit("add_", &mut root, &mut rs, &mut y, &mut ys, new, Mode::Views);
    /// assert!(y.same_storage(&root), "the view again");
    /// let out = rt::output(&y, &ys, &root, &rs, Mode::Views);
    /// assert_eq!(out.strides(), &[5, 1]);
    /// assert!(out.same_storage(&root));
    /// assert_eq!(out.to_vec(), vec![1.0; 4]);
    /// ```
    pub fn output<T: Element>(
        value: &Tensor<T> => cast_ref,
        state: &Tracked => same,
        root: &Tensor<T> => cast_ref,
        rstate: &Tracked => same,
        mode: Mode => same,
    ) -> Tensor<T> = output_any, output_f32;
}

/// The generic body of [`output`].
fn output_any<T: Element>(
    value: &Tensor<T>,
    state: &Tracked,
    root: &Tensor<T>,
    rstate: &Tracked,
    mode: Mode,
) -> Tensor<T> {
    let orig = state.original_layout();
    let as_orig = |t: &Tensor<T>| t.shape() == &orig.shape[..] && t.strides() == &orig.strides[..];
    if mode == Mode::Views
        && !state.chain().is_empty()
        && state.is_current(rstate)
        && !value.same_storage(root)
    {
        let probe = crate::trace::untraced(|| replay(root, state.chain(), mode));
        if as_orig(&probe) {
            return replay(root, state.chain(), mode);
        }
    }
    value.handle()
}

dispatch_f32! {
    /// The value a function returns for the root `value` (state `state`), as
    /// `return y;`: when the original program laid it out with gaps (`y` made
    /// as `zeros(2, 5).narrow(1, 0, 2)`, a view of a buffer nobody else
    /// names) and the functional value was laid out row-major by a functional
    /// op, the same values are returned laid out as the original's, in a
    /// buffer of their own. The trace is unchanged (same value, same
    /// identity: only its layout differs).
    ///
    /// ```
    /// use funcz_runtime::rt::{self, Tracked};
    /// use funcz_runtime::Tensor;
    /// let mut y = Tensor::<f32>::zeros(&[2, 5]).narrow(1, 0, 2);
    /// let mut s = Tracked::root(&y);
    /// let new = y.add(1.0);
    /// rt::commit_root("add_", &mut y, &mut s, new);
    /// assert_eq!(y.strides(), &[2, 1]);
    /// let out = rt::output_root(&y, &s);
    /// assert_eq!(out.strides(), &[5, 1]);
    /// assert_eq!(out.to_vec(), vec![1.0; 4]);
    /// ```
    pub fn output_root<T: Element>(
        value: &Tensor<T> => cast_ref,
        state: &Tracked => same,
    ) -> Tensor<T> = output_root_any, output_root_f32;
}

/// The generic body of [`output_root`].
fn output_root_any<T: Element>(value: &Tensor<T>, state: &Tracked) -> Tensor<T> {
    let orig = state.original_layout();
    let relaid = state.chain().is_empty()
        && value.shape() == &orig.shape[..]
        && value.strides() != &orig.strides[..]
        && value.is_contiguous()
        && !orig.is_contiguous()
        && !orig.has_internal_overlap();
    if !relaid {
        return value.handle();
    }
    crate::trace::untraced(|| {
        let size: Vec<i64> = orig.shape.iter().map(|&n| n as i64).collect();
        let stride: Vec<i64> = orig.strides.iter().map(|&n| n as i64).collect();
        let buf = Tensor::<T>::zeros(&[orig.storage_end()]);
        let mut out = buf.as_strided(size, stride, orig.offset as i64);
        out.copy_(value);
        out.id = value.id;
        out
    })
}
