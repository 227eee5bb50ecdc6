//! Property tests for views: every `*_copy` equals its view materialized,
//! every scatter is the inverse of its view (the window holds `src`, every
//! other element is the base's), on random shapes of up to 4 dims and
//! random valid arguments, over contiguous and strided bases.

use ndarray::{Axis, Slice};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use funcz_runtime::view::shape::reshape_layout;
use funcz_runtime::{Layout, Tensor};

type R = Result<(), TestCaseError>;

/// Deterministic argument picker driven by one proptest seed.
struct Pick(u64);

impl Pick {
    fn below(&mut self, n: usize) -> usize {
        assert!(n > 0);
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as usize) as i64
    }
    fn flip(&mut self) -> bool {
        self.below(2) == 0
    }
    /// A dim of a rank-`ndim` tensor, negative half of the time.
    fn dim(&mut self, ndim: usize) -> i64 {
        let d = self.below(ndim.max(1)) as i64;
        if self.flip() {
            d - ndim.max(1) as i64
        } else {
            d
        }
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

fn arange(shape: &[usize]) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|x| x as f64).collect(), shape)
}

/// A tensor of `shape` with distinct values: contiguous (mode 0), a
/// reversed permutation of a contiguous tensor (mode 1), or every other
/// element of a wider tensor, at offset 1 (mode 2).
fn make_base(shape: &[usize], mode: u8) -> Tensor<f64> {
    let k = shape.len();
    match if k == 0 { 0 } else { mode } {
        0 => arange(shape),
        1 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let perm: Vec<i64> = (0..k as i64).rev().collect();
            arange(&rev).permute(perm)
        }
        _ => {
            let mut big = shape.to_vec();
            big[k - 1] = 2 * shape[k - 1] + 1;
            arange(&big).slice(-1, 1, i64::MAX, 2)
        }
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![9 => 1usize..5, 1 => Just(0usize)], 0..=4)
}

fn case() -> impl Strategy<Value = (Vec<usize>, u8, u64)> {
    (shape_strategy(), 0u8..3, any::<u64>())
}

fn check_copy(base: &Tensor<f64>, v: &Tensor<f64>, c: &Tensor<f64>, what: &str) -> R {
    prop_assert_eq!(c.shape(), v.shape(), "{}", what);
    prop_assert_eq!(c.layout(), &Layout::contiguous(v.shape()), "{}", what);
    prop_assert_eq!(c.to_vec(), v.to_vec(), "{}", what);
    prop_assert!(v.same_storage(base), "{} is not a view", what);
    prop_assert!(!c.same_storage(base), "{}_copy shares storage", what);
    Ok(())
}

fn check_copies(base: &Tensor<f64>, vs: &[Tensor<f64>], cs: &[Tensor<f64>], what: &str) -> R {
    prop_assert_eq!(vs.len(), cs.len(), "{}", what);
    for (v, c) in vs.iter().zip(cs) {
        check_copy(base, v, c, what)?;
    }
    Ok(())
}

/// A random shape with the same number of elements as `shape`, maybe with
/// one `-1`.
fn regroup(shape: &[usize], p: &mut Pick) -> Vec<i64> {
    let numel: usize = shape.iter().product();
    let mut out: Vec<i64> = if numel == 0 {
        let mut s: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
        p.shuffle(&mut s);
        s
    } else {
        let mut factors = Vec::new();
        for &n in shape {
            let mut n = n;
            let mut f = 2;
            while n > 1 {
                while n % f == 0 {
                    factors.push(f);
                    n /= f;
                }
                f += 1;
            }
        }
        p.shuffle(&mut factors);
        let m = 1 + p.below(4);
        let mut out = vec![1i64; m];
        for f in factors {
            out[p.below(m)] *= f as i64;
        }
        out
    };
    if numel != 0 && !out.is_empty() && p.flip() {
        let i = p.below(out.len());
        out[i] = -1;
    }
    out
}

fn python_bounds(n: usize, start: i64, end: i64) -> (usize, usize) {
    let n = n as i64;
    let s = if start < 0 { start + n } else { start }.clamp(0, n);
    let e = if end < 0 { end + n } else { end }.clamp(s, n);
    (s as usize, e as usize)
}

fn copies_match_views(shape: &[usize], mode: u8, seed: u64) -> R {
    let base = make_base(shape, mode);
    let before = base.to_vec();
    let nd = shape.len();
    let mut p = Pick(seed);
    let arr = base.to_ndarray();

    // view / reshape
    let target = regroup(shape, &mut p);
    let r = base.reshape(target.clone());
    prop_assert_eq!(r.to_vec(), before.clone());
    if reshape_layout("view", base.layout(), &target).is_some() {
        prop_assert!(r.same_storage(&base));
        check_copy(
            &base,
            &base.view(target.clone()),
            &base.view_copy(target.clone()),
            "view",
        )?;
    } else {
        prop_assert!(!r.same_storage(&base));
        prop_assert_eq!(base.view_copy(target.clone()).to_vec(), before.clone());
    }
    let fl = base.flatten();
    prop_assert_eq!(fl.to_vec(), before.clone());
    check_copy(&base, &base.alias(), &base.alias_copy(), "alias")?;
    check_copy(&base, &base.detach(), &base.detach_copy(), "detach")?;
    prop_assert_eq!(base.contiguous().to_vec(), before.clone());

    if nd <= 2 {
        check_copy(&base, &base.t(), &base.t_copy(), "t")?;
    }
    let (d0, d1) = (p.dim(nd), p.dim(nd));
    let v = base.transpose(d0, d1);
    check_copy(&base, &v, &base.transpose_copy(d0, d1), "transpose")?;
    if nd > 0 {
        let (a, b) = (
            (d0 + nd as i64) as usize % nd,
            (d1 + nd as i64) as usize % nd,
        );
        let mut perm: Vec<usize> = (0..nd).collect();
        perm.swap(a, b);
        prop_assert_eq!(v.to_ndarray(), arr.clone().permuted_axes(perm));
    }

    let mut perm: Vec<usize> = (0..nd).collect();
    p.shuffle(&mut perm);
    let dims: Vec<i64> = perm
        .iter()
        .map(|&d| {
            if p.flip() {
                d as i64 - nd as i64
            } else {
                d as i64
            }
        })
        .collect();
    let v = base.permute(dims.clone());
    check_copy(&base, &v, &base.permute_copy(dims.clone()), "permute")?;
    prop_assert_eq!(v.to_ndarray(), arr.clone().permuted_axes(perm));

    check_copy(&base, &base.squeeze(), &base.squeeze_copy(), "squeeze")?;
    let d = p.dim(nd);
    check_copy(
        &base,
        &base.squeeze_dim(d),
        &base.squeeze_dim_copy(d),
        "squeeze_dim",
    )?;
    let d = p.range(-(nd as i64) - 1, nd as i64);
    check_copy(
        &base,
        &base.unsqueeze(d),
        &base.unsqueeze_copy(d),
        "unsqueeze",
    )?;

    // expand: -1 or the size on existing dims, any size on size-1 dims,
    // up to two new leading dims
    let mut target: Vec<i64> = (0..p.below(3)).map(|_| p.range(0, 3)).collect();
    for &n in shape {
        target.push(match (n, p.below(3)) {
            (_, 0) => -1,
            (1, _) => p.range(0, 3),
            (n, _) => n as i64,
        });
    }
    check_copy(
        &base,
        &base.expand(target.clone()),
        &base.expand_copy(target),
        "expand",
    )?;

    // unfold
    let d = p.dim(nd);
    let n = if nd == 0 {
        1
    } else {
        shape[(d + nd as i64) as usize % nd]
    } as i64;
    let (size, step) = (p.range(0, n), p.range(1, 3));
    check_copy(
        &base,
        &base.unfold(d, size, step),
        &base.unfold_copy(d, size, step),
        "unfold",
    )?;

    if nd >= 1 {
        let d = p.dim(nd);
        let du = (d + nd as i64) as usize % nd;
        let n = shape[du];
        let ni = n as i64;

        // narrow
        let start = p.range(-ni, ni);
        let s = if start < 0 { start + ni } else { start };
        let len = p.range(0, ni - s);
        let v = base.narrow(d, start, len);
        check_copy(&base, &v, &base.narrow_copy(d, start, len), "narrow")?;
        let sl = Slice::from(s as usize..(s + len) as usize);
        prop_assert_eq!(v.to_ndarray(), arr.slice_axis(Axis(du), sl).to_owned());

        // slice with Python clamping
        let (start, end, step) = (
            p.range(-ni - 2, ni + 2),
            p.range(-ni - 2, ni + 2),
            p.range(1, 3),
        );
        let v = base.slice(d, start, end, step);
        check_copy(&base, &v, &base.slice_copy(d, start, end, step), "slice")?;
        let (s, e) = python_bounds(n, start, end);
        let sl = Slice::new(s as isize, Some(e as isize), step as isize);
        prop_assert_eq!(v.to_ndarray(), arr.slice_axis(Axis(du), sl).to_owned());

        // select
        if n > 0 {
            let i = p.range(-ni, ni - 1);
            let v = base.select(d, i);
            check_copy(&base, &v, &base.select_copy(d, i), "select")?;
            let iu = if i < 0 { i + ni } else { i } as usize;
            prop_assert_eq!(v.to_ndarray(), arr.index_axis(Axis(du), iu).to_owned());
        }

        // split / chunk / unbind
        let ss = if n == 0 {
            p.range(0, 2)
        } else {
            p.range(1, ni + 1)
        };
        check_copies(&base, &base.split(ss, d), &base.split_copy(ss, d), "split")?;
        let chunks = p.range(1, ni + 2);
        let c = base.chunk(chunks, d);
        prop_assert!(c.len() <= chunks as usize);
        check_copies(&base, &c, &base.chunk_copy(chunks, d), "chunk")?;
        check_copies(&base, &base.unbind(d), &base.unbind_copy(d), "unbind")?;
    }

    if nd >= 2 {
        let d1 = p.below(nd);
        let d2 = (d1 + 1 + p.below(nd - 1)) % nd;
        let (n1, n2) = (shape[d1] as i64, shape[d2] as i64);
        let off = p.range(-n1 - 1, n2 + 1);
        let (a, b) = (d1 as i64 - nd as i64, d2 as i64);
        check_copy(
            &base,
            &base.diagonal(off, a, b),
            &base.diagonal_copy(off, a, b),
            "diagonal",
        )?;
    }

    prop_assert_eq!(base.to_vec(), before);
    prop_assert_eq!(base.version(), 0);
    Ok(())
}

/// `src` for a window of shape `shape`, with values unlike any base value.
fn src_for(shape: &[usize]) -> Tensor<f64> {
    let n: usize = shape.iter().product();
    Tensor::from_vec((0..n).map(|x| 10_000.0 + x as f64).collect(), shape)
}

/// `out` is `base` with the window `window_of_out` (a view of `out`)
/// replaced by `src`; `window_of_base` is the same view applied to `base`.
fn check_scatter(
    base: &Tensor<f64>,
    src: &Tensor<f64>,
    out: &Tensor<f64>,
    window_of_out: &Tensor<f64>,
    window_of_base: Option<&Tensor<f64>>,
    what: &str,
) -> R {
    prop_assert_eq!(out.layout(), &Layout::contiguous(base.shape()), "{}", what);
    prop_assert!(!out.same_storage(base), "{}", what);
    prop_assert!(window_of_out.same_storage(out), "{}", what);
    prop_assert_eq!(window_of_out.shape(), src.shape(), "{}", what);
    prop_assert_eq!(window_of_out.to_vec(), src.to_vec(), "{}", what);
    let mut mask = vec![false; base.numel()];
    for o in window_of_out.layout().offsets() {
        mask[o] = true;
    }
    // on a contiguous base the window sits at the same storage offsets
    if let Some(w) = window_of_base
        && base.layout() == &Layout::contiguous(base.shape())
    {
        let a: Vec<usize> = w.layout().offsets().collect();
        let b: Vec<usize> = window_of_out.layout().offsets().collect();
        prop_assert_eq!(a, b, "{}", what);
    }
    let (bv, ov) = (base.to_vec(), out.to_vec());
    for i in 0..bv.len() {
        if !mask[i] {
            prop_assert_eq!(ov[i], bv[i], "{} at {}", what, i);
        }
    }
    Ok(())
}

fn scatters_invert_views(shape: &[usize], mode: u8, seed: u64) -> R {
    let base = make_base(shape, mode);
    let before = base.to_vec();
    let nd = shape.len();
    let mut p = Pick(seed);

    if nd >= 1 {
        let d = p.dim(nd);
        let du = (d + nd as i64) as usize % nd;
        let n = shape[du];
        let ni = n as i64;

        let (start, end, step) = (
            p.range(-ni - 2, ni + 2),
            p.range(-ni - 2, ni + 2),
            p.range(1, 3),
        );
        let src = src_for(base.slice(d, start, end, step).shape());
        let out = base.slice_scatter(&src, d, start, end, step);
        check_scatter(
            &base,
            &src,
            &out,
            &out.slice(d, start, end, step),
            Some(&base.slice(d, start, end, step)),
            "slice_scatter",
        )?;

        if n > 0 {
            let i = p.range(-ni, ni - 1);
            let src = src_for(base.select(d, i).shape());
            let out = base.select_scatter(&src, d, i);
            check_scatter(
                &base,
                &src,
                &out,
                &out.select(d, i),
                Some(&base.select(d, i)),
                "select_scatter",
            )?;
        }

        // split: piece k is slice(dim, k*s, min((k+1)*s, n), 1)
        let ss = if n == 0 {
            0
        } else {
            p.range(1, ni + 1) as usize
        };
        let pieces = base.split(ss as i64, d);
        let k = p.below(pieces.len());
        let (s, e) = (k * ss, ((k + 1) * ss).min(n));
        let same = base.slice(d, s, e, 1);
        prop_assert_eq!(pieces[k].layout(), same.layout());
        let src = src_for(pieces[k].shape());
        let out = base.slice_scatter(&src, d, s, e, 1);
        check_scatter(
            &base,
            &src,
            &out,
            &out.split(ss as i64, d)[k],
            Some(&pieces[k]),
            "split",
        )?;

        // chunk: split with ceil(n / chunks)
        let chunks = p.range(1, ni + 2);
        let pieces = base.chunk(chunks, d);
        let cs = n.div_ceil(chunks as usize);
        let k = p.below(pieces.len());
        let (s, e) = if n == 0 {
            (0, 0)
        } else {
            (k * cs, ((k + 1) * cs).min(n))
        };
        let same = base.slice(d, s, e, 1);
        prop_assert_eq!(pieces[k].layout(), same.layout());
        let src = src_for(pieces[k].shape());
        let out = base.slice_scatter(&src, d, s, e, 1);
        check_scatter(
            &base,
            &src,
            &out,
            &out.chunk(chunks, d)[k],
            Some(&pieces[k]),
            "chunk",
        )?;

        // unbind: piece k is select(dim, k)
        if n > 0 {
            let pieces = base.unbind(d);
            let k = p.below(n);
            let same = base.select(d, k);
            prop_assert_eq!(pieces[k].layout(), same.layout());
            let src = src_for(pieces[k].shape());
            let out = base.select_scatter(&src, d, k);
            check_scatter(
                &base,
                &src,
                &out,
                &out.unbind(d)[k],
                Some(&pieces[k]),
                "unbind",
            )?;
        }
    }

    if nd >= 2 {
        let d1 = p.below(nd);
        let d2 = (d1 + 1 + p.below(nd - 1)) % nd;
        let (n1, n2) = (shape[d1] as i64, shape[d2] as i64);
        let off = p.range(-n1 - 1, n2 + 1);
        let (a, b) = (d1 as i64, d2 as i64 - nd as i64);
        let src = src_for(base.diagonal(off, a, b).shape());
        let out = base.diagonal_scatter(&src, off, a, b);
        check_scatter(
            &base,
            &src,
            &out,
            &out.diagonal(off, a, b),
            Some(&base.diagonal(off, a, b)),
            "diagonal_scatter",
        )?;
    }

    prop_assert_eq!(base.to_vec(), before);
    prop_assert_eq!(base.version(), 0);
    Ok(())
}

/// A random non-overlapping strided window (sizes, strides, offset) and a
/// storage length that holds it.
fn strided_window(p: &mut Pick) -> (Vec<usize>, Vec<usize>, usize, usize) {
    let m = p.below(4);
    let sizes: Vec<usize> = (0..m)
        .map(|_| if p.below(10) == 0 { 0 } else { 1 + p.below(3) })
        .collect();
    let mut order: Vec<usize> = (0..m).collect();
    p.shuffle(&mut order);
    let mut strides = vec![0; m];
    let mut span = 0;
    for &d in &order {
        let st = span + 1 + p.below(3);
        strides[d] = st;
        span += st * sizes[d].saturating_sub(1);
    }
    let offset = p.below(4);
    let len = offset + span + 1 + p.below(4);
    (sizes, strides, offset, len)
}

fn as_strided_roundtrip(seed: u64, strided_base: bool) -> R {
    let mut p = Pick(seed);
    let (size, stride, off, len) = strided_window(&mut p);
    let base = if strided_base {
        // a length-`len` view with stride 2 into a longer storage
        arange(&[2 * len + 1]).slice(0, 1, i64::MAX, 2)
    } else {
        arange(&[len])
    };
    prop_assert_eq!(base.numel(), len);
    let storage_len = if strided_base { 2 * len + 1 } else { len };

    // copy == view materialized (offsets absolute in base's storage)
    let v = base.as_strided(size.clone(), stride.clone(), off);
    check_copy(
        &base,
        &v,
        &base.as_strided_copy(size.clone(), stride.clone(), off),
        "as_strided",
    )?;
    // an overlapping window reads fine too
    if storage_len >= 3 {
        let o = storage_len - 3;
        let ov = base.as_strided([2usize, 2], [1usize, 1], o);
        let oc = base.as_strided_copy([2usize, 2], [1usize, 1], o);
        check_copy(&base, &ov, &oc, "as_strided overlap")?;
    }

    // scatter: offsets index the contiguous copy of base
    let src = src_for(&size);
    let out = base.as_strided_scatter(&src, size.clone(), stride.clone(), off);
    let window = out.as_strided(size.clone(), stride.clone(), off);
    let on_base = (!strided_base).then(|| base.as_strided(size.clone(), stride.clone(), off));
    check_scatter(
        &base,
        &src,
        &out,
        &window,
        on_base.as_ref(),
        "as_strided_scatter",
    )?;
    prop_assert_eq!(base.version(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn prop_copies_match_views((shape, mode, seed) in case()) {
        copies_match_views(&shape, mode, seed)?;
    }

    #[test]
    fn prop_scatters_invert_views((shape, mode, seed) in case()) {
        scatters_invert_views(&shape, mode, seed)?;
    }

    #[test]
    fn prop_as_strided_roundtrip(seed in any::<u64>(), strided in any::<bool>()) {
        as_strided_roundtrip(seed, strided)?;
    }
}
