//! Helpers the generated programs call, which `#[functionalize]` cannot
//! see into. Their own ops run untraced, so that the purity check of a
//! functionalized trace applies to everything else: a helper's mutation
//! is allowed, but the code around it must stay functional.

use funcz::Tensor;
use funcz::trace::untraced;

/// State in a struct, as `nn.Module` buffers or optimizer state: programs
/// take `s: &mut Pair` and mutate `s.a` and `s.b` directly and through
/// views (issue 11: field places were not written back).
pub struct Pair {
    /// The first field.
    pub a: Tensor,
    /// The second field.
    pub b: Tensor,
    /// A number beside them (a step counter).
    pub n: f32,
}

/// A list of tensors in a struct field (`l.xs`), as an optimizer keeps
/// per-parameter state.
pub struct Lists {
    /// The tensors.
    pub xs: Vec<Tensor>,
    /// Numbers beside them (per-tensor step counts).
    pub counts: Vec<f32>,
}

/// Mutates its argument through `&mut` (the macro assumes it did).
pub fn scale_mut(t: &mut Tensor) {
    untraced(|| {
        t.mul_(1.5);
    });
}

/// Replaces its argument by a new tensor with the values `scale_mut`
/// gives (`*t = t.mul(1.5)`): an element handed as `&mut d[k]` is then a
/// new tensor, which the caller's slot must get.
pub fn replace_scaled(t: &mut Tensor) {
    untraced(|| {
        *t = t.mul(1.5);
    });
}

/// Scales every tensor of a collection in place (the macro cannot see it).
pub fn scale_all(ts: &mut [Tensor]) {
    untraced(|| {
        for t in ts.iter_mut() {
            t.mul_(1.5);
        }
    });
}

/// Puts a new tensor in the first slot of a collection (the old one leaves
/// it with the value it has).
pub fn replace_first(ts: &mut [Tensor]) {
    untraced(|| {
        if let Some(t) = ts.first_mut() {
            *t = t.mul(1.5);
        }
    });
}

/// Swaps the first and the last tensor of a collection: each goes on
/// being updated in its new slot.
pub fn swap_ends(ts: &mut [Tensor]) {
    let n = ts.len();
    if n > 1 {
        ts.swap(0, n - 1);
    }
}

/// Mutates its argument through a view of a `&` (the macro sees it by the
/// storage version counter).
pub fn fill_first(t: &Tensor) {
    untraced(|| {
        if t.dim() > 0 && t.size(0) > 0 {
            t.narrow(0, 0, 1).fill_(0.125);
        } else {
            t.fill_(0.125);
        }
    });
}

/// Mutates its argument only when `really` is true.
pub fn bump_if(t: &Tensor, really: bool) {
    untraced(|| {
        if really {
            t.sub_(0.5);
        }
    });
}

/// Mutates its argument through a `&` and returns a scalar: an operand of
/// an in-place op that changes the op's root before the op runs
/// (`v.add_(helpers::bump_one(&x))`, `v` a view of `x`).
pub fn bump_one(t: &Tensor) -> f32 {
    untraced(|| {
        t.add_(1.0);
    });
    0.5
}

/// Takes its argument by value and mutates it: given a temporary view
/// (`helpers::fill_owned(x.narrow(0, 0, 2))`), the mutation must reach `x`
/// (it was lost in copies mode: `a_view_moved_into_a_helper_is_written_back`).
pub fn fill_owned(t: Tensor) {
    fill_first(&t);
}

/// A macro the functionalized function cannot see into, which mutates the
/// tensor it is given (`funcz_difftest::bump_arg!(x)`): its write must reach
/// `x`'s views (it did not: `a_macro_that_writes_its_argument`).
#[macro_export]
macro_rules! bump_arg {
    ($t:expr) => {
        $crate::helpers::bump_if(&$t, true)
    };
}

/// [`bump_arg!`] whose pattern takes a name (`$t:ident`): the function's
/// tensor must reach it as the name, not as an expression the macro's
/// patterns refuse (a tracked root held in an `rt::Var` is `v.value`).
#[macro_export]
macro_rules! bump_name {
    ($t:ident) => {
        $crate::helpers::bump_if(&$t, true)
    };
}

/// Reads its argument: a fresh tensor, no mutation.
pub fn double(t: &Tensor) -> Tensor {
    untraced(|| t * 2.0)
}

/// A method outside the op table that mutates its receiver.
pub trait HelperExt {
    /// Adds 1 in place.
    fn bump(&self);
    /// Replaces itself with a new tensor, 1.5 times itself (`*self = ..`).
    fn reset_scaled(&mut self);
}

impl HelperExt for Tensor {
    fn bump(&self) {
        untraced(|| {
            self.add_(1.0);
        });
    }
    fn reset_scaled(&mut self) {
        untraced(|| {
            *self = self.mul(1.5);
        });
    }
}

/// A fallible helper for `?`: a copy of its argument, or an error when
/// its first element exceeds 1 (about one call in six on random inputs).
pub fn checked(t: &Tensor) -> Result<Tensor, String> {
    untraced(|| {
        let first = t.to_vec().first().copied().unwrap_or(0.0);
        if first > 1.0 {
            Err(format!("too large: {first}"))
        } else {
            Ok(t.clone())
        }
    })
}
