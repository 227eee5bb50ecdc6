//! Bad input is an error, never a wrong number (issue 12, item 8).
//!
//! A property test feeds random shapes, dims, indices and sizes, many of
//! them bad (out of range, negative, near `usize::MAX`, `i64::MAX` and
//! `i64::MIN`), to every op family. A small reference implementation in
//! this file, written from PyTorch's rules, says for each case whether
//! PyTorch accepts it and, if so, what it returns. The op must then either
//! return exactly that (for results too big to read here: that shape), or
//! panic with a message that starts with `funcz: ` and names the op: never
//! a wrong value, never a panic such as "attempt to multiply with
//! overflow", "index out of bounds" or "capacity overflow", never an
//! abort. A refused case must panic (PyTorch raises). A valid but absurd
//! request (an expand to 2^62 elements, a chunk into 2^62 empty pieces)
//! may also panic with a message naming the op.
//!
//! The repros named in the issue are tests of their own below.

use funcz_runtime::Tensor;
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// running a case

#[path = "support/outcome.rs"]
mod outcome;
use outcome::outcome;

/// A row-major array: the reference's value and what a result is read into.
#[derive(Clone, Debug, PartialEq)]
struct Nd {
    shape: Vec<usize>,
    data: Vec<f64>,
}

/// Results with more elements than this are compared by shape only.
const READ_LIMIT: usize = 4096;

impl Nd {
    fn arange(shape: &[usize]) -> Nd {
        let n = shape.iter().product::<usize>();
        Nd {
            shape: shape.to_vec(),
            data: (0..n).map(|i| i as f64).collect(),
        }
    }

    fn numel(&self) -> usize {
        self.shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(usize::MAX)
    }

    fn strides(shape: &[usize]) -> Vec<usize> {
        let mut s = vec![1; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1].max(1);
        }
        s
    }

    fn at(&self, idx: &[usize]) -> f64 {
        let st = Nd::strides(&self.shape);
        self.data[idx.iter().zip(&st).map(|(i, s)| i * s).sum::<usize>()]
    }

    /// The array of `shape` whose element at `idx` is `f(idx)`; only its
    /// shape if it has more than [`READ_LIMIT`] elements.
    fn from_fn(shape: &[usize], f: impl Fn(&[usize]) -> f64) -> Nd {
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(usize::MAX);
        if n > READ_LIMIT {
            return Nd {
                shape: shape.to_vec(),
                data: Vec::new(),
            };
        }
        let mut data = Vec::with_capacity(n);
        let mut idx = vec![0usize; shape.len()];
        for _ in 0..n {
            data.push(f(&idx));
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        Nd {
            shape: shape.to_vec(),
            data,
        }
    }

    fn tensor(&self) -> Tensor<f64> {
        Tensor::from_vec(self.data.clone(), &self.shape)
    }
}

/// What PyTorch does with a case.
#[derive(Debug)]
enum Want {
    /// It raises.
    Refused,
    /// It returns this.
    Value(Nd),
    /// It returns a result of this shape, or several of them (too big to
    /// read, or a list of results); a panic naming the op is allowed too if
    /// `absurd` (PyTorch would spend days or all memory on it).
    Shapes(Vec<Vec<usize>>, bool),
}

fn read(t: &Tensor<f64>) -> Nd {
    Nd {
        shape: t.shape().to_vec(),
        data: if t.numel() <= READ_LIMIT {
            t.to_vec()
        } else {
            Vec::new()
        },
    }
}

/// Checks one case: `name` must appear in a panic's message.
#[track_caller]
fn check(name: &str, what: &str, want: Want, f: impl FnOnce() -> Vec<Nd>) {
    let got = outcome(f);
    match (&want, got) {
        (_, Err(msg)) => {
            assert!(
                msg.starts_with("funcz: ") && msg.contains(name),
                "{what}: panic without the op name `{name}`: {msg}"
            );
            match want {
                Want::Refused | Want::Shapes(_, true) => {}
                _ => panic!("{what}: PyTorch gives {want:?}, funcz panicked: {msg}"),
            }
        }
        (Want::Refused, Ok(v)) => {
            panic!(
                "{what}: PyTorch refuses, funcz returned shapes {:?}",
                v.iter().map(|n| &n.shape).collect::<Vec<_>>()
            )
        }
        (Want::Value(w), Ok(v)) => {
            assert_eq!(v.len(), 1, "{what}");
            assert_eq!(&v[0], w, "{what}: wrong value");
        }
        (Want::Shapes(ws, _), Ok(v)) => {
            let shapes: Vec<_> = v.iter().map(|n| n.shape.clone()).collect();
            assert_eq!(&shapes, ws, "{what}: wrong shapes");
        }
    }
}

/// A single result as a `Want`: its value if small enough to read.
fn value(n: Nd, absurd: bool) -> Want {
    if n.numel() <= READ_LIMIT {
        Want::Value(n)
    } else {
        Want::Shapes(vec![n.shape], absurd)
    }
}

// ---------------------------------------------------------------------------
// the reference (PyTorch's rules)

/// `dim` wrapped into a tensor of rank `rank` (a 0-d tensor takes 0 and -1).
fn wrap(dim: i64, rank: usize) -> Option<usize> {
    let n = rank.max(1) as i64;
    if dim < -n || dim >= n {
        None
    } else if dim < 0 {
        Some((dim + n) as usize)
    } else {
        Some(dim as usize)
    }
}

/// The number of elements, if it fits PyTorch's int64.
fn numel_i64(shape: &[usize]) -> Option<usize> {
    shape
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .filter(|&n| n <= i64::MAX as usize)
}

/// Whether PyTorch makes a new contiguous tensor of `shape`: every size
/// and the product (taken left to right, an overflow on the way counts)
/// fit int64, and so do the strides.
fn new_fits(shape: &[usize]) -> bool {
    shape.iter().all(|&d| d <= i64::MAX as usize)
        && numel_i64(shape).is_some()
        && shape
            .iter()
            .skip(1)
            .try_fold(1usize, |a, &d| a.checked_mul(d.max(1)))
            .is_some_and(|s| s <= i64::MAX as usize)
}

fn r_select(x: &Nd, dim: i64, index: i64) -> Option<Nd> {
    if x.shape.is_empty() {
        return None;
    }
    let d = wrap(dim, x.shape.len())?;
    let n = x.shape[d] as i64;
    if index < -n || index >= n {
        return None;
    }
    let i = if index < 0 { index + n } else { index } as usize;
    let mut shape = x.shape.clone();
    shape.remove(d);
    Some(Nd::from_fn(&shape, |idx| {
        let mut full = idx.to_vec();
        full.insert(d, i);
        x.at(&full)
    }))
}

fn r_slice(x: &Nd, dim: i64, start: i64, end: i64, step: i64) -> Option<Nd> {
    if x.shape.is_empty() || step < 1 {
        return None;
    }
    let d = wrap(dim, x.shape.len())?;
    let n = x.shape[d] as i64;
    let fix = |v: i64| if v < 0 { v.saturating_add(n) } else { v }.clamp(0, n);
    let s = fix(start);
    let e = fix(end).max(s);
    let len = ((e - s) as u64).div_ceil(step as u64) as usize;
    let mut shape = x.shape.clone();
    shape[d] = len;
    Some(Nd::from_fn(&shape, |idx| {
        let mut full = idx.to_vec();
        full[d] = s as usize + idx[d] * step as usize;
        x.at(&full)
    }))
}

fn r_narrow(x: &Nd, dim: i64, start: i64, length: i64) -> Option<Nd> {
    if x.shape.is_empty() {
        return None;
    }
    let d = wrap(dim, x.shape.len())?;
    let n = x.shape[d] as i64;
    if length < 0 || start < -n || start > n {
        return None;
    }
    let s = if start < 0 { start + n } else { start };
    if s > n - length {
        return None;
    }
    r_slice(x, d as i64, s, s + length, 1)
}

fn r_transpose(x: &Nd, d0: i64, d1: i64) -> Option<Nd> {
    let a = wrap(d0, x.shape.len())?;
    let b = wrap(d1, x.shape.len())?;
    if x.shape.is_empty() {
        return Some(x.clone());
    }
    let mut shape = x.shape.clone();
    shape.swap(a, b);
    Some(Nd::from_fn(&shape, |idx| {
        let mut full = idx.to_vec();
        full.swap(a, b);
        x.at(&full)
    }))
}

fn r_permute(x: &Nd, dims: &[i64]) -> Option<Nd> {
    if dims.len() != x.shape.len() {
        return None;
    }
    let ds: Vec<usize> = dims
        .iter()
        .map(|&d| wrap(d, x.shape.len()))
        .collect::<Option<_>>()?;
    for (i, a) in ds.iter().enumerate() {
        if ds[..i].contains(a) {
            return None;
        }
    }
    let shape: Vec<usize> = ds.iter().map(|&d| x.shape[d]).collect();
    Some(Nd::from_fn(&shape, |idx| {
        let mut full = vec![0; idx.len()];
        for (i, &d) in ds.iter().enumerate() {
            full[d] = idx[i];
        }
        x.at(&full)
    }))
}

fn r_unsqueeze(x: &Nd, dim: i64) -> Option<Nd> {
    let d = wrap(dim, x.shape.len() + 1)?;
    if x.shape.len() + 1 > 8 {
        return None;
    }
    let mut shape = x.shape.clone();
    shape.insert(d, 1);
    Some(Nd {
        shape,
        data: x.data.clone(),
    })
}

fn r_squeeze_dim(x: &Nd, dim: i64) -> Option<Nd> {
    let d = wrap(dim, x.shape.len())?;
    let mut shape = x.shape.clone();
    if !shape.is_empty() && shape[d] == 1 {
        shape.remove(d);
    }
    Some(Nd {
        shape,
        data: x.data.clone(),
    })
}

/// `expand`: the result's shape and, per result dim, the input dim it reads
/// (`None` for new or expanded dims).
fn r_expand(x: &Nd, sizes: &[i64]) -> Option<(Vec<usize>, Vec<Option<usize>>)> {
    let (nd, td) = (sizes.len(), x.shape.len());
    if nd < td || nd > 8 {
        return None;
    }
    let mut shape = vec![0usize; nd];
    let mut src = vec![None; nd];
    for i in 0..nd {
        let existing = (i + td).checked_sub(nd);
        let size = existing.map_or(1, |d| x.shape[d]);
        let target = match sizes[i] {
            -1 if existing.is_none() => return None,
            -1 => size as i64,
            t if t < 0 => return None,
            t => t,
        } as usize;
        if size != target && size != 1 {
            return None;
        }
        shape[i] = target;
        src[i] = existing.filter(|_| size == target && size != 1);
    }
    numel_i64(&shape)?;
    Some((shape, src))
}

fn r_diagonal(x: &Nd, offset: i64, d1: i64, d2: i64) -> Option<Nd> {
    let a = wrap(d1, x.shape.len())?;
    let b = wrap(d2, x.shape.len())?;
    if a == b || x.shape.is_empty() {
        return None;
    }
    let (n1, n2) = (x.shape[a] as i64, x.shape[b] as i64);
    let len = if offset >= 0 {
        n1.min(n2.saturating_sub(offset)).max(0)
    } else {
        n1.saturating_add(offset).min(n2).max(0)
    } as usize;
    let mut shape: Vec<usize> = (0..x.shape.len())
        .filter(|&k| k != a && k != b)
        .map(|k| x.shape[k])
        .collect();
    shape.push(len);
    Some(Nd::from_fn(&shape, |idx| {
        let k = idx[idx.len() - 1];
        let (i, j) = if offset >= 0 {
            (k, k + offset as usize)
        } else {
            (k + offset.unsigned_abs() as usize, k)
        };
        let mut full = Vec::with_capacity(x.shape.len());
        let mut rest = idx[..idx.len() - 1].iter();
        for q in 0..x.shape.len() {
            full.push(if q == a {
                i
            } else if q == b {
                j
            } else {
                *rest.next().unwrap()
            });
        }
        x.at(&full)
    }))
}

fn r_unfold(x: &Nd, dim: i64, size: i64, step: i64) -> Option<Nd> {
    let d = wrap(dim, x.shape.len())?;
    if x.shape.len() + 1 > 8 {
        return None;
    }
    let max = if x.shape.is_empty() { 1 } else { x.shape[d] } as i64;
    if size < 0 || size > max || step < 1 {
        return None;
    }
    if x.shape.is_empty() {
        return Some(Nd {
            shape: vec![size as usize],
            data: x.data.iter().copied().take(size as usize).collect(),
        });
    }
    // The window stride step * stride is int64 arithmetic in PyTorch: a
    // product that wraps negative is refused.
    if step.wrapping_mul(Nd::strides(&x.shape)[d] as i64) < 0 {
        return None;
    }
    let windows = ((max - size) / step + 1) as usize;
    let mut shape = x.shape.clone();
    shape[d] = windows;
    shape.push(size as usize);
    Some(Nd::from_fn(&shape, |idx| {
        let mut full = idx[..idx.len() - 1].to_vec();
        full[d] = idx[d] * step as usize + idx[idx.len() - 1];
        x.at(&full)
    }))
}

/// `view`/`reshape`'s `infer_size`.
fn r_infer(shape: &[i64], numel: usize) -> Option<Vec<usize>> {
    if shape.len() > 8 {
        return None;
    }
    let mut infer = None;
    let mut known = Some(1usize);
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                return None;
            }
            infer = Some(i);
        } else if d < 0 {
            return None;
        } else {
            known = known.and_then(|k| k.checked_mul(d as usize));
        }
    }
    let k = known?;
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(1) as usize).collect();
    match infer {
        None if k == numel => {}
        Some(i) if k > 0 && numel.is_multiple_of(k) => out[i] = numel / k,
        _ => return None,
    }
    for (o, &d) in out.iter_mut().zip(shape) {
        if d >= 0 {
            *o = d as usize;
        }
    }
    Some(out)
}

/// `split(split_size, dim)`'s piece lengths along the wrapped dim.
fn r_split(x: &Nd, split_size: i64, dim: i64) -> Option<(usize, Vec<usize>)> {
    if x.shape.is_empty() || split_size < 0 {
        return None;
    }
    let d = wrap(dim, x.shape.len())?;
    let n = x.shape[d];
    let s = split_size as u64;
    if s == 0 && n != 0 {
        return None;
    }
    if s == 0 || n == 0 {
        return Some((d, vec![0]));
    }
    let count = (n as u64).div_ceil(s) as usize;
    Some((
        d,
        (0..count)
            .map(|k| (n as u64 - k as u64 * s).min(s) as usize)
            .collect(),
    ))
}

// ---------------------------------------------------------------------------
// strategies

/// A small shape: rank 0 to 3, sizes 0 to 3.
fn small_shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 0..4)
}

/// An integer argument: mostly small (in and out of range), sometimes a
/// value at the edge of `i64`.
fn int_arg() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => -5i64..6,
        1 => prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            i64::MAX,
            i64::MAX - 1,
            1 << 32,
            -(1 << 32),
            1 << 62,
            -(1 << 62),
            (1 << 31) - 1,
            -(1 << 31),
        ]),
    ]
}

/// An index passed as `usize`: small, or near `usize::MAX` (which must
/// never be read as a negative index).
fn usize_arg() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0usize..6,
        1 => prop::sample::select(vec![
            usize::MAX,
            usize::MAX - 1,
            1 << 63,
            (1 << 63) + 1,
            i64::MAX as usize,
            1 << 32,
        ]),
    ]
}

/// A size list: small entries, `-1`, bad negatives and huge values.
fn sizes_arg() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(
        prop_oneof![
            6 => -1i64..5,
            1 => prop::sample::select(vec![
                -2,
                i64::MIN,
                i64::MAX,
                1 << 32,
                1 << 31,
                1 << 62,
                (1 << 62) + 1,
            ]),
        ],
        0..5,
    )
}

/// A size for a constructor: small, or so large that no machine can hold
/// the tensor (at least 2^46 elements: more than a 64-bit address space
/// has bytes for, whatever the overcommit policy), or past `i64`.
fn new_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..4,
        1 => prop::sample::select(vec![
            usize::MAX,
            usize::MAX - 1,
            1 << 63,
            (1 << 63) + 1,
            i64::MAX as usize,
            1 << 62,
            1 << 46,
        ]),
    ]
}

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------
// view ops

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn select_narrow_slice(
        shape in small_shape(),
        dim in int_arg(),
        a in int_arg(),
        b in int_arg(),
        step in int_arg(),
        u in usize_arg(),
    ) {
        let x = Nd::arange(&shape);
        let t = x.tensor();
        let what = format!("shape {shape:?}, dim {dim}, a {a}, b {b}, step {step}, u {u}");
        let w = |r: Option<Nd>| r.map_or(Want::Refused, |n| value(n, false));
        check("select", &what, w(r_select(&x, dim, a)), || vec![read(&t.select(dim, a))]);
        check("select_copy", &what, w(r_select(&x, dim, a)), || vec![read(&t.select_copy(dim, a))]);
        let ui = i64::try_from(u).unwrap_or(i64::MAX);
        check("select", &what, w(r_select(&x, dim, ui)), || vec![read(&t.select(dim, u))]);
        check("narrow", &what, w(r_narrow(&x, dim, a, b)), || vec![read(&t.narrow(dim, a, b))]);
        check("narrow", &what, w(r_narrow(&x, dim, ui, 1)), || vec![read(&t.narrow(dim, u, 1usize))]);
        check("narrow_copy", &what, w(r_narrow(&x, dim, a, b)), || {
            vec![read(&t.narrow_copy(dim, a, b))]
        });
        check("slice", &what, w(r_slice(&x, dim, a, b, step)), || {
            vec![read(&t.slice(dim, a, b, step))]
        });
        check("slice", &what, w(r_slice(&x, dim, 0, ui, 1)), || {
            vec![read(&t.slice(dim, 0, u, 1))]
        });
        check("slice_copy", &what, w(r_slice(&x, dim, a, b, step)), || {
            vec![read(&t.slice_copy(dim, a, b, step))]
        });
        // `i` takes a range: `a..b` on the first dim.
        if !shape.is_empty() {
            check("i", &what, w(r_slice(&x, 0, a, b, 1)), || vec![read(&t.i(a..b))]);
            check("i", &what, w(r_select(&x, 0, ui)), || vec![read(&t.i(u))]);
        }
    }

    #[test]
    fn dim_shuffles(
        shape in small_shape(),
        d0 in int_arg(),
        d1 in int_arg(),
        dims in prop::collection::vec(int_arg(), 0..5),
    ) {
        let x = Nd::arange(&shape);
        let t = x.tensor();
        let what = format!("shape {shape:?}, d0 {d0}, d1 {d1}, dims {dims:?}");
        let w = |r: Option<Nd>| r.map_or(Want::Refused, |n| value(n, false));
        check("transpose", &what, w(r_transpose(&x, d0, d1)), || {
            vec![read(&t.transpose(d0, d1))]
        });
        check("permute", &what, w(r_permute(&x, &dims)), || vec![read(&t.permute(dims.clone()))]);
        check("permute_copy", &what, w(r_permute(&x, &dims)), || {
            vec![read(&t.permute_copy(dims.clone()))]
        });
        check("unsqueeze", &what, w(r_unsqueeze(&x, d0)), || vec![read(&t.unsqueeze(d0))]);
        check("squeeze", &what, w(r_squeeze_dim(&x, d0)), || vec![read(&t.squeeze_dim(d0))]);
        let flip = || {
            let ds: Vec<usize> =
                dims.iter().map(|&d| wrap(d, shape.len())).collect::<Option<_>>()?;
            for (i, a) in ds.iter().enumerate() {
                if ds[..i].contains(a) {
                    return None;
                }
            }
            Some(Nd::from_fn(&shape, |idx| {
                let mut full = idx.to_vec();
                for &d in &ds {
                    if !shape.is_empty() {
                        full[d] = shape[d] - 1 - idx[d];
                    }
                }
                x.at(&full)
            }))
        };
        check("flip", &what, w(flip()), || vec![read(&t.flip(dims.clone()))]);
        check("diagonal", &what, w(r_diagonal(&x, d0, d1, dims.first().copied().unwrap_or(0))), || {
            vec![read(&t.diagonal(d0, d1, dims.first().copied().unwrap_or(0)))]
        });
    }

    #[test]
    fn expand_and_reshape(shape in small_shape(), sizes in sizes_arg()) {
        let x = Nd::arange(&shape);
        let t = x.tensor();
        let what = format!("shape {shape:?}, sizes {sizes:?}");
        let want = match r_expand(&x, &sizes) {
            None => Want::Refused,
            Some((s, _)) if numel_i64(&s).is_none_or(|n| n > READ_LIMIT) => {
                // Views of more than 2^40 elements are absurd here.
                let absurd = numel_i64(&s).is_none_or(|n| n > 1 << 40);
                Want::Shapes(vec![s], absurd)
            }
            Some((s, src)) => {
                let n = Nd::from_fn(&s, |idx| {
                    let mut full = Vec::new();
                    for (i, m) in src.iter().enumerate() {
                        if i + x.shape.len() >= s.len() {
                            full.push(m.map_or(0, |_| idx[i]));
                        }
                    }
                    x.at(&full)
                });
                Want::Value(n)
            }
        };
        // Reading an expand of 2^40 elements would take too long: sum only
        // small ones (the sum checks the kernel walks the right count).
        check("expand", &what, want, || {
            let e = t.expand(sizes.clone());
            if e.numel() <= READ_LIMIT {
                assert_eq!(e.sum().item(), e.to_vec().iter().sum::<f64>());
            }
            vec![read(&e)]
        });
        let want = || match r_infer(&sizes, x.numel()) {
            None => Want::Refused,
            Some(s) => value(Nd { shape: s, data: x.data.clone() }, false),
        };
        check("view", &what, want(), || vec![read(&t.view(sizes.clone()))]);
        check("reshape", &what, want(), || vec![read(&t.reshape(sizes.clone()))]);
        // reshape of a transposed input copies (when the strides do not
        // allow a view): the values come in the transposed order.
        if shape.len() >= 2 {
            let xt = r_transpose(&x, 0, 1).unwrap();
            let want = match r_infer(&sizes, x.numel()) {
                None => Want::Refused,
                Some(s) => value(Nd { shape: s, data: xt.data.clone() }, false),
            };
            let tt = t.transpose(0, 1);
            check("reshape", &what, want, || vec![read(&tt.reshape(sizes.clone()))]);
        }
        let f = funcz_runtime::Tensor::<f64>::try_view(&t, sizes.clone());
        let v = outcome(|| t.view(sizes.clone()));
        match (f, v) {
            (Ok(a), Ok(b)) => prop_assert_eq!(a.to_vec(), b.to_vec()),
            (Err(e), Err(m)) => prop_assert_eq!(e.to_string(), m),
            (a, b) => prop_assert!(false, "try_view and view disagree: {:?} vs {:?}", a.err(), b.err()),
        }
    }

    #[test]
    fn unfold_split_chunk(
        shape in small_shape(),
        dim in int_arg(),
        size in int_arg(),
        step in int_arg(),
    ) {
        let x = Nd::arange(&shape);
        let t = x.tensor();
        let what = format!("shape {shape:?}, dim {dim}, size {size}, step {step}");
        let w = |r: Option<Nd>| r.map_or(Want::Refused, |n| value(n, false));
        check("unfold", &what, w(r_unfold(&x, dim, size, step)), || {
            vec![read(&t.unfold(dim, size, step))]
        });
        check("unfold_copy", &what, w(r_unfold(&x, dim, size, step)), || {
            vec![read(&t.unfold_copy(dim, size, step))]
        });
        let want = match r_split(&x, size, dim) {
            None => Want::Refused,
            Some((d, lens)) => Want::Shapes(
                lens.iter()
                    .map(|&l| {
                        let mut s = x.shape.clone();
                        s[d] = l;
                        s
                    })
                    .collect(),
                false,
            ),
        };
        check("split", &what, want, || t.split(size, dim).iter().map(read).collect());
        // chunk(c) is split(ceil(n / c)), except that a size-0 dim gives c
        // empty pieces (absurd for huge c).
        let want = if x.shape.is_empty() || size <= 0 {
            Want::Refused
        } else {
            match wrap(dim, x.shape.len()) {
                None => Want::Refused,
                Some(d) if x.shape[d] == 0 => {
                    if size > 64 {
                        Want::Shapes(Vec::new(), true)
                    } else {
                        Want::Shapes(vec![x.shape.clone(); size as usize], false)
                    }
                }
                Some(d) => {
                    let s = (x.shape[d] as u64).div_ceil(size as u64) as i64;
                    let (d, lens) = r_split(&x, s, d as i64).unwrap();
                    Want::Shapes(
                        lens.iter()
                            .map(|&l| {
                                let mut s = x.shape.clone();
                                s[d] = l;
                                s
                            })
                            .collect(),
                        false,
                    )
                }
            }
        };
        let absurd_ok = matches!(want, Want::Shapes(ref v, true) if v.is_empty());
        let got = outcome(|| t.chunk(size, dim).iter().map(|p| p.shape().to_vec()).collect::<Vec<_>>());
        match (want, got) {
            (_, Err(m)) => prop_assert!(
                m.starts_with("funcz: chunk") && (absurd_ok || r_split(&x, 1, dim).is_none() || size <= 0 || x.shape.is_empty()),
                "{what}: chunk panicked: {m}"
            ),
            (Want::Refused, Ok(v)) => prop_assert!(false, "{what}: chunk accepted: {v:?}"),
            (Want::Shapes(ws, _), Ok(v)) => prop_assert!(absurd_ok || v == ws, "{what}: {v:?} vs {ws:?}"),
            (Want::Value(_), _) => unreachable!(),
        }
    }

    #[test]
    fn as_strided_bounds(
        sizes in prop::collection::vec(int_arg(), 0..3),
        strides in prop::collection::vec(int_arg(), 0..3),
        offset in int_arg(),
    ) {
        let x = Nd::arange(&[6]);
        let t = x.tensor();
        let what = format!("sizes {sizes:?}, strides {strides:?}, offset {offset}");
        // PyTorch: same lengths, sizes and strides >= 0, offset >= 0, and
        // the last element inside the storage (unless empty).
        let want = (|| {
            if sizes.len() != strides.len() || offset < 0 {
                return None;
            }
            if sizes.iter().chain(&strides).any(|&v| v < 0) {
                return None;
            }
            let shape: Vec<usize> = sizes.iter().map(|&n| n as usize).collect();
            numel_i64(&shape)?;
            if shape.contains(&0) {
                return Some(Nd { shape, data: Vec::new() });
            }
            let mut end = offset as u128;
            for (&n, &s) in sizes.iter().zip(&strides) {
                end += (n as u128 - 1) * s as u128;
            }
            if end >= 6 {
                return None;
            }
            let st: Vec<usize> = strides.iter().map(|&s| s as usize).collect();
            Some(Nd::from_fn(&shape, |idx| {
                (offset as usize + idx.iter().zip(&st).map(|(i, s)| i * s).sum::<usize>()) as f64
            }))
        })();
        let w = want.map_or(Want::Refused, |n| value(n, true));
        check("as_strided", &what, w, || {
            vec![read(&t.as_strided(sizes.clone(), strides.clone(), offset))]
        });
    }
}

// ---------------------------------------------------------------------------
// reductions, indexed ops, joins, matmul, broadcasting

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn reductions_with_dims(shape in small_shape(), dim in int_arg(), keep in any::<bool>()) {
        let x = Nd::arange(&shape);
        let t = x.tensor();
        let what = format!("shape {shape:?}, dim {dim}, keepdim {keep}");
        let want = wrap(dim, shape.len()).map(|d| {
            let mut out = shape.clone();
            if !shape.is_empty() {
                out[d] = 1;
            }
            let n = Nd::from_fn(&out, |idx| {
                let len = if shape.is_empty() { 1 } else { shape[d] };
                (0..len)
                    .map(|k| {
                        let mut full = idx.to_vec();
                        if !shape.is_empty() {
                            full[d] = k;
                        }
                        x.at(&full)
                    })
                    .sum()
            });
            if !keep && !shape.is_empty() {
                out.remove(d);
            }
            Nd { shape: out, data: n.data }
        });
        let w = want.map_or(Want::Refused, |n| value(n, false));
        check("sum", &what, w, || vec![read(&t.sum_dim(dim, keep))]);
        let ok = wrap(dim, shape.len()).is_some();
        for (name, r) in [
            ("mean", outcome(|| t.mean_dim(dim, keep).shape().to_vec())),
            ("amax", outcome(|| t.amax([dim], keep).shape().to_vec())),
            ("cumsum", outcome(|| t.cumsum(dim).shape().to_vec())),
            ("softmax", outcome(|| t.softmax(dim).shape().to_vec())),
            ("var", outcome(|| t.var_dims([dim], 1, keep).shape().to_vec())),
        ] {
            match r {
                Ok(_) => prop_assert!(ok, "{what}: {name} accepted a bad dim"),
                // amax of an empty dim raises in PyTorch too.
                Err(m) => prop_assert!(
                    m.starts_with("funcz: ")
                        && m.contains(name)
                        && (!ok || (name == "amax" && m.contains("non-zero size"))),
                    "{what}: {name}: {m}"
                ),
            }
        }
    }

    #[test]
    fn indexed_ops(
        shape in small_shape(),
        dim in int_arg(),
        idx in prop::collection::vec(int_arg(), 0..4),
    ) {
        let x = Nd::arange(&shape);
        let t = x.tensor();
        let what = format!("shape {shape:?}, dim {dim}, index {idx:?}");
        let it = Tensor::<i64>::from_vec(idx.clone(), &[idx.len()]);
        // index_select: each index in [-n, n) is not enough, PyTorch wants
        // [0, n) (negative indices are refused).
        let want = wrap(dim, shape.len()).and_then(|d| {
            let n = if shape.is_empty() { 1 } else { shape[d] } as i64;
            if idx.iter().any(|&i| i < 0 || i >= n) {
                return None;
            }
            let mut out = shape.clone();
            if shape.is_empty() {
                return (idx.len() == 1).then(|| x.clone());
            }
            out[d] = idx.len();
            Some(Nd::from_fn(&out, |p| {
                let mut full = p.to_vec();
                full[d] = idx[p[d]] as usize;
                x.at(&full)
            }))
        });
        let ok = want.is_some();
        let got = outcome(|| read(&t.index_select(dim, &it)));
        match got {
            Ok(v) => prop_assert!(ok && Some(&v) == want.as_ref() || shape.is_empty(), "{what}: index_select {v:?} vs {want:?}"),
            Err(m) => prop_assert!(m.starts_with("funcz: index_select") && (!ok || shape.is_empty()), "{what}: {m}"),
        }
        // take: indices in [-numel, numel) of the flattened input.
        let n = x.numel() as i64;
        let want = if idx.iter().all(|&i| i >= -n && i < n) {
            let data = idx.iter().map(|&i| x.data[(if i < 0 { i + n } else { i }) as usize]).collect();
            Want::Value(Nd { shape: vec![idx.len()], data })
        } else {
            Want::Refused
        };
        check("take", &what, want, || vec![read(&t.take(&it))]);
        // gather along dim with an index of the input's rank.
        if !shape.is_empty() && !idx.is_empty() {
            let mut ishape = vec![1usize; shape.len()];
            ishape[shape.len() - 1] = idx.len();
            let gi = Tensor::<i64>::from_vec(idx.clone(), &ishape);
            let want = wrap(dim, shape.len()).and_then(|d| {
                // index sizes <= input sizes except at dim; values in [0, n).
                for k in 0..shape.len() {
                    if k != d && ishape[k] > shape[k] {
                        return None;
                    }
                }
                if idx.iter().any(|&i| i < 0 || i >= shape[d] as i64) {
                    return None;
                }
                Some(Nd::from_fn(&ishape, |p| {
                    let mut full = p.to_vec();
                    full[d] = idx[p[shape.len() - 1]] as usize;
                    x.at(&full)
                }))
            });
            let w = want.map_or(Want::Refused, |n| value(n, false));
            check("gather", &what, w, || vec![read(&t.gather(dim, &gi))]);
            let src = Tensor::<f64>::full(&ishape, -1.0);
            let got = outcome(|| t.scatter(dim, &gi, &src).shape().to_vec());
            if let Err(m) = got {
                prop_assert!(m.starts_with("funcz: scatter"), "{what}: {m}");
            }
        }
        // masked_fill with a mask of another shape broadcasts or refuses.
        let mask = Tensor::<bool>::from_vec(vec![true; idx.len()], &[idx.len()]);
        let got = outcome(|| t.masked_fill(&mask, 7.0).shape().to_vec());
        if let Err(m) = got {
            prop_assert!(m.starts_with("funcz: masked_fill"), "{what}: {m}");
        }
        // index_put with the index on the first dim.
        if !shape.is_empty() {
            let got = outcome(|| t.index_put(&[&it], 5.0, false).to_vec());
            let n0 = shape[0] as i64;
            let valid = idx.iter().all(|&i| i >= -n0 && i < n0);
            match got {
                Ok(_) => prop_assert!(valid, "{what}: index_put accepted {idx:?}"),
                Err(m) => prop_assert!(m.starts_with("funcz: index_put") && !valid, "{what}: {m}"),
            }
        }
    }

    #[test]
    fn joins_and_repeats(
        a in small_shape(),
        b in small_shape(),
        dim in int_arg(),
        reps in sizes_arg(),
        shifts in int_arg(),
    ) {
        let (x, y) = (Nd::arange(&a), Nd::arange(&b));
        let (ta, tb) = (x.tensor(), y.tensor());
        let what = format!("shapes {a:?} {b:?}, dim {dim}, repeats {reps:?}, shifts {shifts}");
        // cat: same rank >= 1, sizes equal except at dim (or legacy [0]).
        let want = (|| {
            let legacy = |s: &[usize]| s == [0];
            if a.is_empty() || b.is_empty() {
                return None;
            }
            if legacy(&a) && legacy(&b) {
                // PyTorch checks no dim when every input is a legacy [0].
                return Some(Nd { shape: vec![0], data: vec![] });
            }
            if legacy(&a) || legacy(&b) {
                let r = if legacy(&a) { &y } else { &x };
                return wrap(dim, r.shape.len()).map(|_| r.clone());
            }
            let d = wrap(dim, a.len())?;
            if a.len() != b.len() || (0..a.len()).any(|k| k != d && a[k] != b[k]) {
                return None;
            }
            let mut s = a.clone();
            s[d] += b[d];
            Some(Nd::from_fn(&s, |p| {
                if p[d] < a[d] {
                    x.at(p)
                } else {
                    let mut q = p.to_vec();
                    q[d] -= a[d];
                    y.at(&q)
                }
            }))
        })();
        let w = want.map_or(Want::Refused, |n| value(n, false));
        check("cat", &what, w, || vec![read(&Tensor::cat(&[&ta, &tb], dim))]);
        let want = (|| {
            if a != b {
                return None;
            }
            let d = wrap(dim, a.len() + 1)?;
            let mut s = a.clone();
            s.insert(d, 2);
            (s.len() <= 8).then(|| Nd::from_fn(&s, |p| {
                let mut q = p.to_vec();
                let k = q.remove(d);
                if k == 0 { x.at(&q) } else { y.at(&q) }
            }))
        })();
        let w = want.map_or(Want::Refused, |n| value(n, false));
        check("stack", &what, w, || vec![read(&Tensor::stack(&[&ta, &tb], dim))]);
        // repeat: len >= rank, repeats >= 0, the result fits.
        let want = (|| {
            if reps.len() < a.len() || reps.iter().any(|&r| r < 0) || reps.len() > 8 {
                return None;
            }
            let pad = reps.len() - a.len();
            let ins: Vec<usize> = std::iter::repeat_n(1, pad).chain(a.iter().copied()).collect();
            let out: Vec<usize> = ins
                .iter()
                .zip(&reps)
                .map(|(&n, &r)| n.checked_mul(r as usize))
                .collect::<Option<_>>()?;
            new_fits(&out).then_some((ins, out))
        })();
        let w = match want {
            None => Want::Refused,
            Some((ins, out)) => {
                let n = numel_i64(&out).unwrap();
                if n <= READ_LIMIT {
                    Want::Value(Nd::from_fn(&out, |p| {
                        let q: Vec<usize> = p.iter().zip(&ins).skip(ins.len() - a.len()).map(|(i, n)| i % n).collect();
                        x.at(&q)
                    }))
                } else {
                    Want::Shapes(vec![out], true)
                }
            }
        };
        // A valid repeat too large to allocate in a test (`[1] x 2^31`
        // took 16 GB and minutes when proptest drew it) is not run; the
        // panic of an absurd one is `absurd_allocation_panics_instead_of_aborting`.
        let too_big = matches!(&w, Want::Shapes(out, _) if numel_i64(&out[0]).is_none_or(|n| n > 1 << 22));
        if !too_big {
            check("repeat", &what, w, || vec![read(&ta.repeat(reps.clone()))]);
        }
        // roll along one dim.
        // PyTorch: one shift of an empty tensor is a copy (its dim is not
        // checked); a 0-d tensor has no dim to roll ("Dimension specified
        // as 0 but tensor has no dimensions").
        let want = if x.numel() == 0 {
            Some(x.clone())
        } else if a.is_empty() {
            None
        } else {
            wrap(dim, a.len()).map(|d| {
                Nd::from_fn(&a, |p| {
                    let n = a[d] as i64;
                    let mut q = p.to_vec();
                    q[d] = ((p[d] as i128 - shifts as i128).rem_euclid(n.max(1) as i128)) as usize;
                    x.at(&q)
                })
            })
        };
        let w = want.map_or(Want::Refused, |n| value(n, false));
        check("roll", &what, w, || vec![read(&ta.roll([shifts], [dim]))]);
    }

    #[test]
    fn matmul_and_broadcasting(a in small_shape(), b in small_shape()) {
        let (x, y) = (Nd::arange(&a), Nd::arange(&b));
        let (ta, tb) = (x.tensor(), y.tensor());
        let what = format!("shapes {a:?} {b:?}");
        // broadcasting
        let n = a.len().max(b.len());
        let at = |s: &[usize], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
        let want = (0..n)
            .map(|i| {
                let (p, q) = (at(&a, i), at(&b, i));
                (p == q || p == 1 || q == 1).then_some(if p == 1 { q } else { p })
            })
            .collect::<Option<Vec<usize>>>()
            .map(|s| {
                Nd::from_fn(&s, |p| {
                    let pick = |sh: &[usize], nd: &Nd| {
                        let q: Vec<usize> = sh
                            .iter()
                            .enumerate()
                            .map(|(k, &m)| if m == 1 { 0 } else { p[k + n - sh.len()] })
                            .collect();
                        nd.at(&q)
                    };
                    pick(&a, &x) + pick(&b, &y)
                })
            });
        let w = want.map_or(Want::Refused, |n| value(n, false));
        check("add", &what, w, || vec![read(&ta.add(&tb))]);
        // matmul: both >= 1-D, inner sizes agree, batches broadcast.
        let ok = (|| {
            if a.is_empty() || b.is_empty() {
                return None;
            }
            let k1 = *a.last().unwrap();
            let k2 = if b.len() == 1 { b[0] } else { b[b.len() - 2] };
            if k1 != k2 {
                return None;
            }
            let ba = if a.len() > 2 { &a[..a.len() - 2] } else { &[][..] };
            let bb = if b.len() > 2 { &b[..b.len() - 2] } else { &[][..] };
            let m = ba.len().max(bb.len());
            let at = |s: &[usize], i: usize| if i + s.len() >= m { s[i + s.len() - m] } else { 1 };
            (0..m).all(|i| { let (p, q) = (at(ba, i), at(bb, i)); p == q || p == 1 || q == 1 }).then_some(())
        })();
        match outcome(|| ta.matmul(&tb).shape().to_vec()) {
            Ok(s) => prop_assert!(ok.is_some(), "{what}: matmul accepted, shape {s:?}"),
            Err(m) => prop_assert!(m.starts_with("funcz: matmul") && ok.is_none(), "{what}: {m}"),
        }
    }

    #[test]
    fn constructors(shape in prop::collection::vec(new_size(), 0..4)) {
        let what = format!("shape {shape:?}");
        // PyTorch: every size and the product (taken left to right, an
        // overflow on the way counts) fit int64, and so do the strides.
        let fits = new_fits(&shape);
        let n = numel_i64(&shape).unwrap_or(0);
        let want = if !fits {
            Want::Refused
        } else if n <= READ_LIMIT {
            Want::Value(Nd { shape: shape.clone(), data: vec![0.0; n] })
        } else {
            // Valid for PyTorch, but more than any machine holds.
            Want::Shapes(vec![shape.clone()], true)
        };
        check("zeros", &what, want, || vec![read(&Tensor::<f64>::zeros(&shape))]);
        // `ones` writes every element: only run it where it must refuse or
        // is small.
        if !fits || n <= READ_LIMIT {
            let want = if fits {
                Want::Value(Nd { shape: shape.clone(), data: vec![1.0; n] })
            } else {
                Want::Refused
            };
            check("ones", &what, want, || vec![read(&Tensor::<f64>::ones(&shape))]);
            let got = outcome(|| Tensor::<f32>::from_vec(vec![0.0; n], &shape).numel());
            match got {
                Ok(m) => prop_assert!(fits && m == n, "{what}: from_vec gave {m}"),
                Err(msg) => prop_assert!(msg.starts_with("funcz: from_vec") && !fits, "{what}: {msg}"),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// the repros, one by one

fn panics_naming(op: &str, r: Result<impl std::fmt::Debug, String>) -> String {
    match r {
        Ok(v) => panic!("expected {op} to panic, got {v:?}"),
        Err(m) => {
            assert!(m.starts_with(&format!("funcz: {op}")), "{m}");
            m
        }
    }
}

#[test]
fn expand_past_int64_is_refused_not_summed_to_zero() {
    let m = panics_naming(
        "expand",
        outcome(|| {
            Tensor::<f32>::ones(&[1, 1])
                .expand([1usize << 32, 1 << 32])
                .sum()
                .item()
        }),
    );
    assert!(m.contains("numel: integer multiplication overflow"), "{m}");
    assert!(m.contains("[4294967296, 4294967296]"), "{m}");
}

#[test]
fn zeros_past_int64_is_refused() {
    let m = panics_naming(
        "zeros",
        outcome(|| Tensor::<f32>::zeros(&[(1 << 63) + 1, 2]).numel()),
    );
    assert!(m.contains("9223372036854775809"), "{m}");
    // 2^62 x 2 = 2^63 fits usize but not int64 (PyTorch: "Storage size
    // calculation overflowed").
    let m = panics_naming(
        "zeros",
        outcome(|| Tensor::<f32>::zeros(&[1 << 62, 2]).numel()),
    );
    assert!(m.contains("Storage size calculation overflowed"), "{m}");
    // Strides of [0, 2^40, 2^40] overflow; [2^40, 2^40, 0] overflows on the
    // way to 0 (both refused by PyTorch); [0, 2^40, 2^20] is fine.
    let m = panics_naming(
        "zeros",
        outcome(|| Tensor::<f32>::zeros(&[0, 1 << 40, 1 << 40]).numel()),
    );
    assert!(m.contains("Stride calculation overflowed"), "{m}");
    panics_naming(
        "zeros",
        outcome(|| Tensor::<f32>::zeros(&[1 << 40, 1 << 40, 0]).numel()),
    );
    assert_eq!(Tensor::<f32>::zeros(&[0, 1 << 40, 1 << 20]).numel(), 0);
}

#[test]
fn huge_unsigned_index_is_not_a_negative_one() {
    let x = Tensor::<f32>::arange(6).view([3, 2]);
    let m = panics_naming("select", outcome(|| x.select(0, usize::MAX).to_vec()));
    assert!(
        m.contains("out of range for tensor of size [3, 2] at dimension 0"),
        "{m}"
    );
    panics_naming("select", outcome(|| x.select(0usize, u64::MAX).to_vec()));
    panics_naming("narrow", outcome(|| x.narrow(0, usize::MAX, 1).to_vec()));
    panics_naming("i", outcome(|| x.i(usize::MAX).to_vec()));
    // A slice end past i64 clamps to the size, as Python's x[0:2**64].
    assert_eq!(x.slice(0, 0, usize::MAX, 1).shape(), &[3, 2]);
    assert_eq!(x.i(1..usize::MAX).shape(), &[2, 2]);
}

#[test]
fn select_message_is_pytorchs() {
    let x = Tensor::<f32>::zeros(&[4, 3]);
    let m = panics_naming("select", outcome(|| x.select(0, 5).to_vec()));
    // PyTorch: "select(): index 5 out of range for tensor of size [4, 3] at
    // dimension 0".
    assert!(
        m.contains("index 5 out of range for tensor of size [4, 3] at dimension 0"),
        "{m}"
    );
}

#[test]
fn absurd_allocation_panics_instead_of_aborting() {
    // 4 TiB of f32: the process must survive. Where the system hands out
    // that much address space lazily (overcommit), zeros may succeed (its
    // pages are never touched); otherwise it panics naming the op.
    match outcome(|| Tensor::<f32>::zeros(&[1 << 40]).numel()) {
        Ok(n) => assert_eq!(n, 1 << 40),
        Err(m) => assert!(m.starts_with("funcz: zeros: can't allocate memory"), "{m}"),
    }
    // Past any address space: always a panic naming the op.
    let m = panics_naming("ones", outcome(|| Tensor::<f32>::ones(&[1 << 50]).numel()));
    assert!(
        m.contains("can't allocate memory") && m.contains("[1125899906842624]"),
        "{m}"
    );
    // Bytes past isize::MAX (elements within int64).
    let m = panics_naming(
        "full",
        outcome(|| Tensor::<f64>::full(&[1 << 61], 1.0).numel()),
    );
    assert!(m.contains("largest possible allocation"), "{m}");
    // Materializing an expanded view, a broadcast, a matmul, a cat, a repeat.
    let big = || Tensor::<f32>::ones(&[1, 1]).expand([1usize << 25, 1 << 25]);
    panics_naming("contiguous", outcome(|| big().contiguous().numel()));
    panics_naming("add", outcome(|| big().add(1.0).numel()));
    panics_naming(
        "mul",
        outcome(|| {
            let a = Tensor::<f32>::ones(&[1])
                .expand([1usize << 25])
                .view([1 << 25, 1]);
            a.mul(Tensor::<f32>::ones(&[1]).expand([1usize << 25]))
                .numel()
        }),
    );
    panics_naming(
        "matmul",
        outcome(|| {
            let a = Tensor::<f32>::ones(&[1, 1]).expand([1usize << 25, 1]);
            a.matmul(&Tensor::<f32>::ones(&[1, 1]).expand([1, 1usize << 25]))
                .numel()
        }),
    );
    panics_naming("cat", outcome(|| Tensor::cat(&[big(), big()], 0).numel()));
    panics_naming(
        "repeat",
        outcome(|| Tensor::<f32>::ones(&[1]).repeat([1i64 << 50]).numel()),
    );
    panics_naming(
        "expand_copy",
        outcome(|| {
            Tensor::<f32>::ones(&[1])
                .expand_copy([1usize << 50])
                .numel()
        }),
    );
    // An expand the kernels could never walk nor copy is refused when made.
    let m = panics_naming(
        "expand",
        outcome(|| Tensor::<f32>::ones(&[1]).expand([1usize << 62]).numel()),
    );
    assert!(m.contains("largest possible allocation"), "{m}");
}

#[test]
fn split_and_unbind_of_a_huge_expanded_dim_panic_naming_the_op() {
    let big = Tensor::<f32>::ones(&[1]).expand([1usize << 60]);
    panics_naming("split", outcome(|| big.split(1, 0).len()));
    panics_naming("unbind", outcome(|| big.unbind(0).len()));
    let empty = Tensor::<f32>::zeros(&[0]);
    panics_naming("chunk", outcome(|| empty.chunk(i64::MAX, 0).len()));
}

#[test]
fn clamp_with_a_nan_bound_is_nan_as_pytorch() {
    // torch.clamp(x, nan, 1.0), (0.0, nan), (nan, None), (None, nan):
    // every element NaN.
    let x = Tensor::<f32>::from_vec(vec![-2.0, 0.5, 3.0, f32::NAN], &[4]);
    for (lo, hi) in [
        (Some(f32::NAN), Some(1.0)),
        (Some(0.0), Some(f32::NAN)),
        (Some(f32::NAN), None),
        (None, Some(f32::NAN)),
    ] {
        assert!(
            x.clamp(lo, hi).to_vec().iter().all(|v| v.is_nan()),
            "{lo:?} {hi:?}"
        );
        let y = x.clone();
        y.clamp_(lo, hi);
        assert!(
            y.to_vec().iter().all(|v| v.is_nan()),
            "clamp_ {lo:?} {hi:?}"
        );
    }
    // min > max gives max; NaN elements stay NaN.
    let c = x.clamp(2.0, 1.0).to_vec();
    assert_eq!(&c[..3], &[1.0, 1.0, 1.0]);
    assert!(c[3].is_nan());
}

#[test]
fn equal_of_nan_tensors_is_false_as_pytorch() {
    // torch.equal(a, a) and torch.equal(a, a.clone()) are False when a
    // holds NaN.
    let a = Tensor::<f32>::from_vec(vec![f32::NAN, 1.0], &[2]);
    assert!(!a.equal(&a));
    assert!(!a.equal(&a.clone()));
    let b = Tensor::<f32>::from_vec(vec![0.0, 1.0], &[2]);
    assert!(b.equal(&b.clone()));
    assert!(!b.equal(&b.view([1, 2])));
}
