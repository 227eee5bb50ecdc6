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

use OpKind::*;

mod fusible;
mod inplace_target;
mod rows;

pub use fusible::{FUSIBLE, KERNELS, STEP_OPERANDS};
pub use inplace_target::{INPLACE_TARGET_OPS, OVERLAP_CHECKED_OPS};

/// The row groups of the table, one file each under `rows/`.
pub const TABLES: &[&[OpInfo]] = &[rows::core::OPS, rows::indexed::OPS, rows::math::OPS];

/// Every row of the table, in order.
///
/// ```
/// assert!(funcz_optable::all().any(|o| o.name == "add_"));
/// ```
pub fn all() -> impl Iterator<Item = &'static OpInfo> {
    TABLES.iter().flat_map(|t| t.iter())
}

/// Looks a method up by its Rust name.
///
/// ```
/// use funcz_optable::{lookup, OpKind};
/// assert_eq!(lookup("add_").unwrap().kind, OpKind::Inplace { functional: "add" });
/// assert!(lookup("len").is_none());
/// ```
pub fn lookup(name: &str) -> Option<&'static OpInfo> {
    // An index built once: the macro asks for every method call it meets
    // (a 1,000-op chain asked hundreds of thousands of times), and the
    // table has hundreds of rows. The first row of a name wins, as a scan
    // in table order would find. Keyed by the name's length and its first
    // and last bytes, not a hash of all of it: cargo builds proc macros
    // unoptimized in a debug build, where SipHash was most of a lookup.
    static INDEX: std::sync::OnceLock<Vec<Vec<&'static OpInfo>>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut buckets: Vec<Vec<&'static OpInfo>> = vec![Vec::new(); BUCKETS];
        for o in all() {
            let b = &mut buckets[bucket(o.name)];
            if !b.iter().any(|p| p.name == o.name) {
                b.push(o);
            }
        }
        buckets
    });
    index[bucket(name)].iter().find(|o| o.name == name).copied()
}

/// The number of buckets of [`lookup`]'s index (a prime).
const BUCKETS: usize = 1021;

/// The bucket of `name` in [`lookup`]'s index.
fn bucket(name: &str) -> usize {
    let b = name.as_bytes();
    let (first, last) = match b {
        [] => (0, 0),
        [f, .., l] => (*f as usize, *l as usize),
        [f] => (*f as usize, *f as usize),
    };
    let mid = b.get(b.len() / 2).map_or(0, |m| *m as usize);
    (b.len() * 131 + first * 31 + mid * 7 + last) % BUCKETS
}

/// Methods recorded under another aten name than their own (their extra
/// arguments are aten's: `add_scaled(y, a)` is `add(x, y, alpha=a)`).
/// Every other functional or in-place row is recorded under its own name,
/// and a view row under its `aten` name.
pub const TRACED_AS: &[(&str, &str)] = &[
    ("sum_dim", "sum"),
    ("mean_dim", "mean"),
    ("narrow_copy", "slice_copy"),
    ("squeeze_dim_copy", "squeeze_copy"),
    ("chunk_copy", "split_copy"),
    ("add_scaled", "add"),
    ("sub_scaled", "sub"),
    ("addcmul1", "addcmul"),
    ("addcdiv1", "addcdiv"),
    ("max_dim", "max"),
    ("min_dim", "min"),
    ("sum_dims", "sum"),
    ("mean_dims", "mean"),
    ("var_dims", "var"),
    ("std_dims", "std"),
    ("vector_norm", "linalg_vector_norm"),
    ("squeeze_dims_copy", "squeeze_copy"),
    ("index_add_scaled", "index_add"),
    ("add_scaled_", "add_"),
    ("sub_scaled_", "sub_"),
    ("addcmul1_", "addcmul_"),
    ("addcdiv1_", "addcdiv_"),
    ("index_add_scaled_", "index_add_"),
    ("to_dtype", "_to_copy"),
    ("float", "_to_copy"),
    ("double", "_to_copy"),
    ("long", "_to_copy"),
    ("int", "_to_copy"),
    ("bool", "_to_copy"),
    ("where_self", "where"),
];

/// The aten name a row's method is recorded under in a trace.
///
/// ```
/// use funcz_optable::traced_name;
/// assert_eq!(traced_name("add_scaled_"), Some("add_"));
/// assert_eq!(traced_name("narrow"), Some("slice"));
/// assert_eq!(traced_name("exp"), Some("exp"));
/// assert_eq!(traced_name("len"), None);
/// ```
pub fn traced_name(method: &str) -> Option<&'static str> {
    let row = lookup(method)?;
    Some(match row.kind {
        View { aten, .. } | MultiView { aten, .. } | MaybeView { aten } => aten,
        _ => TRACED_AS
            .iter()
            .find(|(m, _)| *m == method)
            .map_or(row.name, |(_, aten)| aten),
    })
}

/// Aten names that mutate their first argument when they appear in a trace.
pub fn aten_is_mutation(aten: &str) -> bool {
    all().any(|o| match o.kind {
        Inplace { .. } | InplaceView { .. } | Resize => o.name == aten,
        _ => false,
    })
}

/// Aten names that return an alias of their input when they appear in a
/// trace (`view`, `slice`, `split`, `reshape`-as-view, ...).
pub fn aten_is_view(aten: &str) -> bool {
    all().any(|o| match o.kind {
        View { aten: a, .. } | MultiView { aten: a, .. } | MaybeView { aten: a } => a == aten,
        _ => false,
    }) || aten == "as_strided"
        || aten == "reshape"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_the_first_row_of_each_name_as_a_scan_would() {
        for o in all() {
            let first = all().find(|p| p.name == o.name).unwrap();
            assert!(std::ptr::eq(lookup(o.name).unwrap(), first), "{}", o.name);
        }
        for missing in ["", "x", "len", "add__", "_add", "narrow_copy_", "zz"] {
            assert!(lookup(missing).is_none(), "{missing}");
        }
        // The index stays an index: no bucket holds more than a few rows.
        let mut sizes = vec![0usize; BUCKETS];
        for o in all() {
            if std::ptr::eq(lookup(o.name).unwrap(), o) {
                sizes[bucket(o.name)] += 1;
            }
        }
        assert!(
            sizes.iter().all(|&n| n <= 4),
            "largest bucket {:?}",
            sizes.iter().max()
        );
    }

    #[test]
    fn names_are_unique() {
        let ops: Vec<_> = all().collect();
        for (i, a) in ops.iter().enumerate() {
            for b in &ops[i + 1..] {
                assert_ne!(a.name, b.name, "duplicate op table row");
            }
        }
    }

    /// Every in-place row is its functional twin's name plus `_`, as
    /// PyTorch's ops are: generated code names the in-place op alone, and
    /// the trace names the functional node from this table.
    #[test]
    fn every_inplace_twin_is_its_name_without_the_underscore() {
        let mut n = 0;
        for o in all() {
            if let Inplace { functional } = o.kind {
                assert_eq!(o.name.strip_suffix('_'), Some(functional), "{}", o.name);
                n += 1;
            }
        }
        assert!(n > 40, "{n} in-place rows");
    }

    #[test]
    fn every_inplace_twin_and_copy_is_in_the_table() {
        for o in all() {
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
