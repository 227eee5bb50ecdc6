//! Fields the body compound-assigns (`st.n += 1.0`) without using them as
//! only a tensor can be used: the macro leaves them as written, which is
//! right for a number, and checks at compile time that they are not
//! tensors (an untracked `st.w -= &g` on a tensor would leave the in-place
//! op in the functional graph).
//!
//! Input: `fn f(st: &mut St, x: &Tensor) { st.n += 1.0; x.add_(st.n.max(1.0)); }`.
//! Output (at entry, spanned at `st.n += 1.0`):
//! `(&rt::CompoundProbe(&st.n)).not_a_tensor();`

use super::InputKey;

/// A compound-assigned field whose type the macro cannot see: with
/// [`TensorCompound`] and [`OtherCompound`] in scope,
/// `(&CompoundProbe(&field)).not_a_tensor()` compiles for any type but a
/// tensor or a collection of tensors, and does nothing.
///
/// ```
/// use funcz_runtime::rt::{CompoundProbe, OtherCompound, TensorCompound};
/// (&CompoundProbe(&1.5f32)).not_a_tensor();
/// (&CompoundProbe(&vec![1i64, 2])).not_a_tensor();
/// ```
///
/// ```compile_fail
/// use funcz_runtime::{Tensor, rt::{CompoundProbe, OtherCompound, TensorCompound}};
/// let w = Tensor::<f32>::zeros(&[2]);
/// (&CompoundProbe(&w)).not_a_tensor();
/// ```
pub struct CompoundProbe<'a, T: ?Sized>(pub &'a T);

/// Why a compound-assigned tensor field is refused (the bound no tensor
/// meets, so that the error is this message at the user's statement).
#[diagnostic::on_unimplemented(
    message = "#[functionalize] cannot tell from the body that this compound-assigned `{Self}` is a tensor or holds tensors",
    label = "updated here with a compound assignment",
    note = "the body uses the field only as a number could be used (`.sqrt()`, `.abs()`, `.max(..)`, \
            `&field` given to a function), so #[functionalize] would leave its update out of the \
            functional graph",
    note = "help: update it with the in-place method (`s.w.mul_(0.9)` for `s.w *= 0.9`, \
            `s.m[i].add_(1.0)` for `s.m[i] += 1.0`), which #[functionalize] tracks"
)]
pub trait UntrackedCompound {}

/// See [`CompoundProbe`]: a tensor, or a collection of tensors.
pub trait TensorCompound<T: ?Sized> {
    /// Refused at compile time ([`UntrackedCompound`]).
    fn not_a_tensor(&self)
    where
        T: UntrackedCompound,
    {
    }
}

impl<T: InputKey + ?Sized> TensorCompound<T> for CompoundProbe<'_, T> {}

/// See [`CompoundProbe`]: any other value.
pub trait OtherCompound {
    /// Nothing.
    fn not_a_tensor(&self) {}
}

impl<T: ?Sized> OtherCompound for &CompoundProbe<'_, T> {}
