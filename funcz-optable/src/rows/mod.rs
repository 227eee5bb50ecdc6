//! The rows of the op table, grouped by file so each group can grow on its
//! own, and the `const fn` row builders they share.

use crate::Inverse::{self, *};
use crate::OpInfo;
use crate::OpKind::*;

pub mod core;
pub mod indexed;
pub mod math;

pub(crate) const fn f(name: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: Functional,
    }
}
pub(crate) const fn ip(name: &'static str, functional: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: Inplace { functional },
    }
}
pub(crate) const fn v(
    name: &'static str,
    aten: &'static str,
    copy: &'static str,
    inverse: Inverse,
) -> OpInfo {
    OpInfo {
        name,
        kind: View {
            aten,
            copy,
            inverse,
        },
    }
}
pub(crate) const fn mv(
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
pub(crate) const fn iv(name: &'static str, view: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: InplaceView { view },
    }
}
pub(crate) const fn maybe(name: &'static str, aten: &'static str) -> OpInfo {
    OpInfo {
        name,
        kind: MaybeView { aten },
    }
}
