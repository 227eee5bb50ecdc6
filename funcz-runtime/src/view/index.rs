//! Range indexing in the spirit of tch-rs's `.i(..)`: `x.i((.., 1..3))` is
//! PyTorch's `x[:, 1:3]`, a view (shares storage) recorded as the chain of
//! `slice`/`select` ops it is. `#[functionalize]` knows it as a view
//! (`rt::ViewMeta::I`), so `x.i((.., 1..3)).copy_(&y)` ports
//! `x[:, 1:3] = y`: the write goes back through the composed scatters.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use crate::element::Scalar;
use crate::layout::Layout;
use crate::tensor::Tensor;

use super::shape;

/// One entry of an [`i`](Tensor::i) index: an integer selects (and drops
/// the dimension), a range slices (keeps it), `..` keeps the whole
/// dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// `select(dim, index)` (negative counts from the end).
    Select(i64),
    /// `slice(dim, start, end, 1)` (negative bounds count from the end;
    /// `i64::MAX` as end means to the end).
    Slice(i64, i64),
    /// `..`: the whole dimension.
    Full,
}

/// One entry of an [`i`](Tensor::i) index: `i64`, `i32` or `usize`
/// integers, their ranges (`a..b`, `a..`, `..b`, `a..=b`, `..=b`) and `..`.
pub trait IntoIndexItem {
    /// The entry.
    fn into_item(self) -> IndexItem;
}

/// An index for [`i`](Tensor::i): one entry or a tuple of up to six.
///
/// ```
/// use funcz_runtime::view::{IndexItem, TensorIndex};
/// assert_eq!((.., 1..3).items(), vec![IndexItem::Full, IndexItem::Slice(1, 3)]);
/// assert_eq!(2.items(), vec![IndexItem::Select(2)]);
/// ```
pub trait TensorIndex {
    /// The entries, one per leading dimension.
    fn items(self) -> Vec<IndexItem>;
}

impl IntoIndexItem for RangeFull {
    fn into_item(self) -> IndexItem {
        IndexItem::Full
    }
}

macro_rules! int_items {
    ($($t:ty),*) => {$(
        impl IntoIndexItem for $t {
            fn into_item(self) -> IndexItem {
                IndexItem::Select(crate::args::AsI64::as_i64(self))
            }
        }
        impl IntoIndexItem for Range<$t> {
            fn into_item(self) -> IndexItem {
                IndexItem::Slice(crate::args::AsI64::as_i64(self.start), crate::args::AsI64::as_i64(self.end))
            }
        }
        impl IntoIndexItem for RangeFrom<$t> {
            fn into_item(self) -> IndexItem {
                IndexItem::Slice(crate::args::AsI64::as_i64(self.start), i64::MAX)
            }
        }
        impl IntoIndexItem for RangeTo<$t> {
            fn into_item(self) -> IndexItem {
                IndexItem::Slice(0, crate::args::AsI64::as_i64(self.end))
            }
        }
        impl IntoIndexItem for RangeInclusive<$t> {
            fn into_item(self) -> IndexItem {
                let end = crate::args::AsI64::as_i64(*self.end());
                IndexItem::Slice(crate::args::AsI64::as_i64(*self.start()), if end == -1 { i64::MAX } else { end.saturating_add(1) })
            }
        }
        impl IntoIndexItem for RangeToInclusive<$t> {
            fn into_item(self) -> IndexItem {
                let end = crate::args::AsI64::as_i64(self.end);
                IndexItem::Slice(0, if end == -1 { i64::MAX } else { end.saturating_add(1) })
            }
        }
        impl TensorIndex for $t {
            fn items(self) -> Vec<IndexItem> {
                vec![self.into_item()]
            }
        }
        impl TensorIndex for Range<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![self.into_item()]
            }
        }
        impl TensorIndex for RangeFrom<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![self.into_item()]
            }
        }
        impl TensorIndex for RangeTo<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![self.into_item()]
            }
        }
        impl TensorIndex for RangeInclusive<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![self.into_item()]
            }
        }
        impl TensorIndex for RangeToInclusive<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![self.into_item()]
            }
        }
    )*};
}
int_items!(i64, i32, usize);

impl IntoIndexItem for IndexItem {
    fn into_item(self) -> IndexItem {
        self
    }
}

impl TensorIndex for RangeFull {
    fn items(self) -> Vec<IndexItem> {
        vec![IndexItem::Full]
    }
}

impl TensorIndex for IndexItem {
    fn items(self) -> Vec<IndexItem> {
        vec![self]
    }
}

impl TensorIndex for Vec<IndexItem> {
    fn items(self) -> Vec<IndexItem> {
        self
    }
}

impl TensorIndex for &[IndexItem] {
    fn items(self) -> Vec<IndexItem> {
        self.to_vec()
    }
}

macro_rules! tuple_index {
    ($($n:ident),*) => {
        impl<$($n: IntoIndexItem),*> TensorIndex for ($($n,)*) {
            #[allow(non_snake_case)]
            fn items(self) -> Vec<IndexItem> {
                let ($($n,)*) = self;
                vec![$($n.into_item()),*]
            }
        }
    };
}
tuple_index!(A);
tuple_index!(A, B);
tuple_index!(A, B, C);
tuple_index!(A, B, C, D);
tuple_index!(A, B, C, D, E);
tuple_index!(A, B, C, D, E, F);

/// One step of an index: the view op it is, at the dimension it applies
/// to after the earlier steps (`select`s drop their dimension).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// `select(dim, index)`.
    Select(i64, i64),
    /// `slice(dim, start, end, 1)`.
    Slice(i64, i64, i64),
}

/// The chain of view steps of `items` on a tensor of rank `ndim` (full
/// dims and whole-dimension slices are no step), checking the count.
#[track_caller]
pub(crate) fn steps(items: &[IndexItem], ndim: usize) -> Vec<Step> {
    if items.len() > ndim {
        panic!(
            "funcz: i: too many indices for tensor of dimension {ndim} (got {})",
            items.len()
        );
    }
    let mut out = Vec::new();
    let mut dim = 0i64;
    for it in items {
        match *it {
            IndexItem::Select(i) => out.push(Step::Select(dim, i)),
            IndexItem::Slice(s, e) => {
                out.push(Step::Slice(dim, s, e));
                dim += 1;
            }
            IndexItem::Full => dim += 1,
        }
    }
    out
}

impl Step {
    /// The layout of this step applied to `l`.
    #[track_caller]
    pub(crate) fn layout(&self, l: &Layout) -> Layout {
        match *self {
            Step::Select(d, i) => shape::select_layout("i", l, d, i),
            Step::Slice(d, s, e) => shape::slice_layout("i", l, d, s, e, 1),
        }
    }
}

/// The layout `.i(items)` has on a tensor laid out as `l` (panics where
/// the view would).
#[track_caller]
pub(crate) fn index_layout(items: &[IndexItem], l: &Layout) -> Layout {
    // A loop, not a fold: a closure would hide the caller's location.
    let mut acc = *l;
    for s in steps(items, l.ndim()) {
        acc = s.layout(&acc);
    }
    acc
}

impl<T: Scalar> Tensor<T> {
    /// Range indexing, as tch-rs's `.i(..)` and Python's `x[...]` with
    /// integers and slices: `x.i((.., 1..3))` is `x[:, 1:3]`, `x.i(2)` is
    /// `x[2]`, `x.i((0, .., 1..))` is `x[0, :, 1:]`, `x.i(..-1)` is
    /// `x[:-1]`. An integer selects (drops the dimension), a range slices,
    /// `..` keeps the whole dimension; negative values count from the end;
    /// entries apply to the leading dimensions. The result is a view
    /// (shares storage), recorded as its `select`/`slice` ops (an index of
    /// only `..` is an `alias`), so writing through it writes `self`:
    /// `x.i((.., 1..3)).copy_(&y)` is `x[:, 1:3] = y`.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<f32>::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]);
    /// assert_eq!(x.i((.., 1..3)).to_vec(), vec![1.0, 2.0, 5.0, 6.0, 9.0, 10.0]);
    /// assert_eq!(x.i(2).to_vec(), vec![8.0, 9.0, 10.0, 11.0]);
    /// assert_eq!(x.i((-1, 1..)).to_vec(), vec![9.0, 10.0, 11.0]);
    /// x.i((.., 1..3)).fill_(0.0); // x[:, 1:3] = 0
    /// assert_eq!(x.i(0).to_vec(), vec![0.0, 0.0, 0.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn i(&self, index: impl TensorIndex) -> Tensor<T> {
        let items = index.items();
        let steps = steps(&items, self.dim());
        if steps.is_empty() {
            return self.alias();
        }
        // Check the whole chain first, so an error points at the caller.
        index_layout(&items, &self.layout);
        let mut t = self.shallow_clone();
        for s in steps {
            t = match s {
                Step::Select(d, i) => t.select(d, i),
                Step::Slice(d, a, b) => t.slice(d, a, b, 1),
            };
        }
        t
    }

    /// The non-aliasing form of [`i`](Tensor::i): a fresh copy of the
    /// indexed elements, recorded as its `select_copy`/`slice_copy` ops.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let x = Tensor::<i64>::from_vec(vec![1, 2, 3, 4], &[2, 2]);
    /// let c = x.i_copy((.., 1));
    /// assert_eq!(c.to_vec(), vec![2, 4]);
    /// assert!(!c.same_storage(&x));
    /// ```
    #[track_caller]
    pub fn i_copy(&self, index: impl TensorIndex) -> Tensor<T> {
        let items = index.items();
        let steps = steps(&items, self.dim());
        if steps.is_empty() {
            return self.alias_copy();
        }
        index_layout(&items, &self.layout);
        let mut t = self.shallow_clone();
        for s in steps {
            t = match s {
                Step::Select(d, i) => t.select_copy(d, i),
                Step::Slice(d, a, b) => t.slice_copy(d, a, b, 1),
            };
        }
        t
    }
}
