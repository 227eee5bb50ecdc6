//! The single declarative table of tensor methods: which are functional,
//! which mutate (and their functional twin), which are views (and their
//! `_copy` form and inverse). The `#[functionalize]` macro reads this table
//! to classify calls, and the trace reads it to classify graph nodes, so the
//! two cannot drift. A trailing `_` is never used as a rule on its own.

/// How a method behaves with respect to aliasing and mutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// Returns a fresh tensor; reads its operands.
    Functional,
    /// Mutates the receiver's data in place and returns it; `functional`
    /// is the method with the same arguments that returns a fresh result.
    Inplace {
        /// The out-of-place twin (same arguments).
        functional: &'static str,
    },
    /// Returns a tensor sharing the receiver's storage.
    View {
        /// The aten op name the method is recorded as (`narrow` is `slice`).
        aten: &'static str,
        /// The non-aliasing `*_copy` op.
        copy: &'static str,
        /// How a mutated view is written back into its base.
        inverse: Inverse,
    },
    /// Returns a view when the strides allow it, else a copy (`reshape`,
    /// `flatten`, `contiguous`), exactly as PyTorch.
    MaybeView {
        /// The aten op name recorded when it is a view.
        aten: &'static str,
    },
    /// Returns a `Vec` of views (`split`, `chunk`, `unbind`).
    MultiView {
        /// The aten op name recorded.
        aten: &'static str,
        /// The non-aliasing `*_copy` op.
        copy: &'static str,
        /// How one mutated output is written back into the base.
        inverse: Inverse,
    },
    /// Changes the receiver's own layout (`t_`, `transpose_`, ...); the
    /// data is untouched. `view` is the view method it applies.
    InplaceView {
        /// The view method this in-place form applies to the receiver.
        view: &'static str,
    },
    /// Changes the receiver's size and storage (`resize_`).
    Resize,
    /// Runs autograd; never allowed inside a functionalized body.
    Autograd,
}

/// How a view's mutated value is written back into its base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inverse {
    /// The reverse view (`view` back to the base shape, inverse permute, ...).
    Reshape,
    /// `slice_scatter`.
    SliceScatter,
    /// `select_scatter`.
    SelectScatter,
    /// `diagonal_scatter`.
    DiagonalScatter,
    /// `as_strided_scatter`.
    AsStridedScatter,
    /// Windows written back into the base (non-overlapping `unfold` only).
    UnfoldScatter,
    /// Identity (`alias`, `detach`).
    Identity,
    /// No valid inverse: mutation through it is an error (`expand`).
    Refuse,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    /// The Rust method name on `Tensor`.
    pub name: &'static str,
    /// Its behaviour.
    pub kind: OpKind,
}

use Inverse::*;
use OpKind::*;

const fn f(name: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: Functional,
    }
}
const fn ip(name: &'static str, functional: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: Inplace { functional },
    }
}
const fn v(name: &'static str, aten: &'static str, copy: &'static str, inverse: Inverse) -> OpInfo {
    OpInfo {
        name,
        kind: View {
            aten,
            copy,
            inverse,
        },
    }
}
const fn mv(
    name: &'static str,
    aten: &'static str,
    copy: &'static str,
    inverse: Inverse,
) -> OpInfo {
    OpInfo {
        name,
        kind: MultiView {
            aten,
            copy,
            inverse,
        },
    }
}
const fn iv(name: &'static str, view: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: InplaceView { view },
    }
}
const fn maybe(name: &'static str, aten: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: MaybeView { aten },
    }
}

/// Every tensor method funcz knows, by Rust method name.
pub const OPS: &[OpInfo] = &[
    // out-of-place
    f("add"),
    f("sub"),
    f("mul"),
    f("div"),
    f("neg"),
    f("abs"),
    f("exp"),
    f("log"),
    f("sqrt"),
    f("pow"),
    f("relu"),
    f("sigmoid"),
    f("tanh"),
    f("clamp"),
    f("addcmul"),
    f("addcdiv"),
    f("lerp"),
    f("matmul"),
    f("sum"),
    f("sum_dim"),
    f("mean"),
    f("mean_dim"),
    f("fill"),
    f("zero"),
    f("copy"),
    f("clone"),
    f("view_copy"),
    f("t_copy"),
    f("transpose_copy"),
    f("permute_copy"),
    f("slice_copy"),
    f("narrow_copy"),
    f("select_copy"),
    f("diagonal_copy"),
    f("squeeze_copy"),
    f("squeeze_dim_copy"),
    f("unsqueeze_copy"),
    f("expand_copy"),
    f("unfold_copy"),
    f("as_strided_copy"),
    f("alias_copy"),
    f("detach_copy"),
    f("split_copy"),
    f("chunk_copy"),
    f("unbind_copy"),
    f("slice_scatter"),
    f("select_scatter"),
    f("diagonal_scatter"),
    f("as_strided_scatter"),
    // in-place data mutation
    ip("add_", "add"),
    ip("sub_", "sub"),
    ip("mul_", "mul"),
    ip("div_", "div"),
    ip("neg_", "neg"),
    ip("abs_", "abs"),
    ip("exp_", "exp"),
    ip("log_", "log"),
    ip("sqrt_", "sqrt"),
    ip("pow_", "pow"),
    ip("relu_", "relu"),
    ip("sigmoid_", "sigmoid"),
    ip("tanh_", "tanh"),
    ip("clamp_", "clamp"),
    ip("addcmul_", "addcmul"),
    ip("addcdiv_", "addcdiv"),
    ip("lerp_", "lerp"),
    ip("fill_", "fill"),
    ip("zero_", "zero"),
    ip("copy_", "copy"),
    // views
    v("view", "view", "view_copy", Reshape),
    v("t", "t", "t_copy", Reshape),
    v("transpose", "transpose", "transpose_copy", Reshape),
    v("permute", "permute", "permute_copy", Reshape),
    v("narrow", "slice", "slice_copy", SliceScatter),
    v("slice", "slice", "slice_copy", SliceScatter),
    v("select", "select", "select_copy", SelectScatter),
    v("diagonal", "diagonal", "diagonal_copy", DiagonalScatter),
    v("squeeze", "squeeze", "squeeze_copy", Reshape),
    v("squeeze_dim", "squeeze", "squeeze_copy", Reshape),
    v("unsqueeze", "unsqueeze", "unsqueeze_copy", Reshape),
    v("expand", "expand", "expand_copy", Refuse),
    v("unfold", "unfold", "unfold_copy", UnfoldScatter),
    v(
        "as_strided",
        "as_strided",
        "as_strided_copy",
        AsStridedScatter,
    ),
    v("alias", "alias", "alias_copy", Identity),
    v("detach", "detach", "detach_copy", Identity),
    maybe("reshape", "view"),
    maybe("flatten", "view"),
    maybe("contiguous", "contiguous"),
    mv("split", "split", "split_copy", SliceScatter),
    mv("chunk", "split", "split_copy", SliceScatter),
    mv("unbind", "unbind", "unbind_copy", SelectScatter),
    // in-place views (metadata only)
    iv("t_", "t"),
    iv("transpose_", "transpose"),
    iv("squeeze_", "squeeze"),
    iv("squeeze_dim_", "squeeze_dim"),
    iv("unsqueeze_", "unsqueeze"),
    iv("as_strided_", "as_strided"),
    OpInfo {
        name: "resize_",
        kind: Resize,
    },
    OpInfo {
        name: "backward",
        kind: Autograd,
    },
    OpInfo {
        name: "grad",
        kind: Autograd,
    },
];

/// Looks a method up by its Rust name.
///
/// ```
/// use funcz_runtime::optable::{lookup, OpKind};
/// assert_eq!(lookup("add_").unwrap().kind, OpKind::Inplace { functional: "add" });
/// assert!(lookup("len").is_none());
/// ```
pub fn lookup(name: &str) -> Option<&'static OpInfo> {
    OPS.iter().find(|o| o.name == name)
}

/// Aten names that mutate their first argument when they appear in a trace.
pub fn aten_is_mutation(aten: &str) -> bool {
    OPS.iter().any(|o| match o.kind {
        Inplace { .. } | InplaceView { .. } | Resize => o.name == aten,
        _ => false,
    })
}

/// Aten names that return an alias of their input when they appear in a
/// trace (`view`, `slice`, `split`, `reshape`-as-view, ...).
pub fn aten_is_view(aten: &str) -> bool {
    OPS.iter().any(|o| match o.kind {
        View { aten: a, .. } | MultiView { aten: a, .. } | MaybeView { aten: a } => a == aten,
        _ => false,
    }) || aten == "as_strided"
        || aten == "reshape"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, a) in OPS.iter().enumerate() {
            for b in &OPS[i + 1..] {
                assert_ne!(a.name, b.name, "duplicate op table row");
            }
        }
    }

    #[test]
    fn every_inplace_twin_and_copy_is_in_the_table() {
        for o in OPS {
            match o.kind {
                Inplace { functional } => {
                    assert_eq!(
                        lookup(functional).map(|x| x.kind),
                        Some(Functional),
                        "{}",
                        o.name
                    )
                }
                InplaceView { view } => assert!(
                    matches!(lookup(view).map(|x| x.kind), Some(View { .. })),
                    "{}",
                    o.name
                ),
                _ => {}
            }
        }
    }

    #[test]
    fn classification_of_aten_names() {
        assert!(aten_is_mutation("add_"));
        assert!(aten_is_mutation("t_"));
        assert!(!aten_is_mutation("add"));
        assert!(aten_is_view("view"));
        assert!(aten_is_view("slice"));
        assert!(!aten_is_view("view_copy"));
        assert!(!aten_is_view("slice_scatter"));
    }
}
