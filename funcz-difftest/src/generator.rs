//! The program generator: seeded, reproducible, well-formed random Rust
//! functions over funcz's op table.
//!
//! This file has no dependencies: `build.rs` includes it with `#[path]` to
//! write the programs, and the library exposes it (`funcz_difftest::gen`)
//! so that its own invariants are unit-tested.
//!
//! The generator keeps a model of every tensor the program can name: its
//! layout (shape, strides, storage offset, exactly as the runtime computes
//! them), whether it may be written to (not derived from `expand` or from a
//! view whose elements overlap), and how the program may refer to it. It
//! only emits operations that are valid for the modelled layouts, so the
//! original program never panics; and it only emits constructs whose
//! layout does not depend on the path taken through branches and loops
//! (metadata mutations of a variable happen in the block that declares it).
//!
//! Program `i` of seed `s` depends only on `(s, i)`, not on how many
//! programs are generated.

use std::fmt::Write as _;

// ---------------------------------------------------------------------------
// random numbers

/// SplitMix64: small, fast, and the same on every platform.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi, "empty range {lo}..={hi}");
        lo + (self.next_u64() % ((hi - lo) as u64 + 1)) as i64
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// A uniformly chosen element.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// An index chosen with the given weights (not all zero).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut r = self.below(total as usize) as u32;
        for (i, &w) in weights.iter().enumerate() {
            if r < w {
                return i;
            }
            r -= w;
        }
        unreachable!("weights sum to total")
    }
}

/// The seed of program `index` of run `seed`.
pub fn program_seed(seed: u64, index: usize) -> u64 {
    let mut r = Rng::new(seed ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    r.next_u64()
}

// ---------------------------------------------------------------------------
// layouts (the runtime's rules, re-derived independently)

/// A strided layout: what a tensor handle sees of its storage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lay {
    /// Sizes.
    pub shape: Vec<usize>,
    /// Strides, in elements.
    pub strides: Vec<usize>,
    /// Storage offset, in elements.
    pub offset: usize,
}

impl Lay {
    /// Row-major strides for `shape`, offset 0.
    pub fn contiguous(shape: &[usize]) -> Lay {
        let mut strides = vec![0; shape.len()];
        let mut acc = 1;
        for d in (0..shape.len()).rev() {
            strides[d] = acc;
            acc *= shape[d].max(1);
        }
        Lay {
            shape: shape.to_vec(),
            strides,
            offset: 0,
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// PyTorch's `is_contiguous` (strides of size-1 dims are ignored).
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected = 1;
        for d in (0..self.ndim()).rev() {
            if self.shape[d] == 1 {
                continue;
            }
            if self.strides[d] != expected {
                return false;
            }
            expected *= self.shape[d];
        }
        true
    }

    /// True if two elements share a storage location.
    pub fn overlaps(&self) -> bool {
        if self.numel() <= 1 {
            return false;
        }
        let mut seen = std::collections::HashSet::new();
        let mut idx = vec![0usize; self.ndim()];
        loop {
            let pos: usize = idx.iter().zip(&self.strides).map(|(i, s)| i * s).sum();
            if !seen.insert(pos) {
                return true;
            }
            let mut d = self.ndim();
            loop {
                if d == 0 {
                    return false;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < self.shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }

    /// PyTorch's `is_non_overlapping_and_dense`: the dims of size > 1,
    /// sorted by stride, have strides 1, n0, n0*n1, ...
    pub fn is_dense(&self) -> bool {
        let mut dims: Vec<(usize, usize)> = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(n, _)| **n >= 2)
            .map(|(&n, &s)| (s, n))
            .collect();
        dims.sort_unstable();
        let mut want = 1;
        for (s, n) in dims {
            if s != want {
                return false;
            }
            want *= n;
        }
        true
    }

    /// One past the last storage element reached.
    pub fn end(&self) -> usize {
        if self.numel() == 0 {
            return self.offset;
        }
        self.offset
            + self
                .shape
                .iter()
                .zip(&self.strides)
                .map(|(n, s)| (n - 1) * s)
                .sum::<usize>()
            + 1
    }
}

/// How the memory of a written-to tensor and an operand overlap, were
/// they on one storage (the runtime's classification, after PyTorch's
/// `get_overlap_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Disjoint (or empty).
    No,
    /// The same elements with the same strides (`x.add_(&x)`).
    Full,
    /// Both dense, sharing elements, not a full overlap (`x.add_(&x.t())`):
    /// the elementwise in-place ops refuse it.
    Partial,
    /// One of them is not dense: no check fires.
    TooHard,
}

/// The overlap of `dst` and `src` if they share a storage.
pub fn overlap(dst: &Lay, src: &Lay) -> Overlap {
    if dst.numel() == 0 || src.numel() == 0 {
        return Overlap::No;
    }
    if !dst.is_dense() || !src.is_dense() {
        return Overlap::TooHard;
    }
    let (a0, a1) = (dst.offset, dst.offset + dst.numel());
    let (b0, b1) = (src.offset, src.offset + src.numel());
    if a0 == b0 && a1 == b1 {
        // (Strides of size-1 dims count, as in the runtime.)
        if dst.strides == src.strides && dst.shape.len() == src.shape.len() {
            Overlap::Full
        } else {
            Overlap::Partial
        }
    } else if a0 < b1 && b0 < a1 {
        Overlap::Partial
    } else {
        Overlap::No
    }
}

fn wrap(d: i64, n: usize) -> usize {
    let n = n.max(1) as i64;
    (if d < 0 { d + n } else { d }) as usize
}

/// PyTorch's `computeStride`: strides viewing `l` as `new` without a copy.
pub fn view_strides(l: &Lay, new: &[usize]) -> Option<Vec<usize>> {
    if l.ndim() == 0 {
        return Some(vec![1; new.len()]);
    }
    if l.numel() == 0 {
        return None;
    }
    let (old, os) = (&l.shape, &l.strides);
    let mut ns = vec![0usize; new.len()];
    let mut view_d = new.len() as isize - 1;
    let mut base = *os.last().expect("ndim > 0");
    let (mut tn, mut vn) = (1usize, 1usize);
    for td in (0..old.len()).rev() {
        tn *= old[td];
        if td == 0 || (old[td - 1] != 1 && os[td - 1] != tn * base) {
            while view_d >= 0 && (vn < tn || new[view_d as usize] == 1) {
                ns[view_d as usize] = vn * base;
                vn *= new[view_d as usize];
                view_d -= 1;
            }
            if vn != tn {
                return None;
            }
            if td > 0 {
                base = os[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(ns)
}

/// `-1` in a requested shape, resolved.
fn infer(shape: &[i64], numel: usize) -> Vec<usize> {
    let known: usize = shape
        .iter()
        .filter(|&&s| s >= 0)
        .map(|&s| s as usize)
        .product();
    shape
        .iter()
        .map(|&s| {
            if s < 0 {
                numel / known.max(1)
            } else {
                s as usize
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// view ops

/// An integer argument: its text (a literal, or an expression of a loop
/// variable) and a representative value for the model (the layout's shape
/// never depends on which value it takes).
#[derive(Clone, Debug)]
pub struct Arg {
    /// The argument as written in the program.
    pub text: String,
    /// A value it takes (the one the model uses).
    pub value: i64,
}

fn lit(v: i64) -> Arg {
    Arg {
        text: v.to_string(),
        value: v,
    }
}

/// One view op as the generator emits it (arguments as in the runtime's
/// `Tensor` methods).
#[derive(Clone, Debug)]
#[allow(missing_docs, clippy::enum_variant_names)]
pub enum View {
    View(Vec<i64>),
    Reshape(Vec<i64>),
    Flatten,
    Contiguous,
    T,
    Transpose(i64, i64),
    Permute(Vec<i64>),
    Narrow(i64, Arg, i64),
    Slice(i64, i64, i64, i64),
    Select(i64, Arg),
    Diagonal(i64, i64, i64),
    Squeeze,
    SqueezeDim(i64),
    Unsqueeze(i64),
    Expand(Vec<i64>),
    Unfold(i64, i64, i64),
    AsStrided(Vec<usize>, Vec<usize>, usize),
    Alias,
    Detach,
    /// `shallow_clone()`: an alias (issue 11: it was treated as a copy).
    ShallowClone,
}

fn ints(v: &[i64]) -> String {
    if v.is_empty() {
        return "[0i64; 0]".into();
    }
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

fn uints(v: &[usize]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x}i64")).collect();
    format!("[{}]", parts.join(", "))
}

impl View {
    /// The method call, e.g. `.narrow(0, 1, 2)`.
    pub fn render(&self) -> String {
        match self {
            View::View(s) => format!(".view({})", ints(s)),
            View::Reshape(s) => format!(".reshape({})", ints(s)),
            View::Flatten => ".flatten()".into(),
            View::Contiguous => ".contiguous()".into(),
            View::T => ".t()".into(),
            View::Transpose(a, b) => format!(".transpose({a}, {b})"),
            View::Permute(p) => format!(".permute({})", ints(p)),
            View::Narrow(d, s, n) => format!(".narrow({d}, {}, {n})", s.text),
            View::Slice(d, a, b, st) => format!(".slice({d}, {a}, {b}, {st})"),
            View::Select(d, i) => format!(".select({d}, {})", i.text),
            View::Diagonal(o, a, b) => format!(".diagonal({o}, {a}, {b})"),
            View::Squeeze => ".squeeze()".into(),
            View::SqueezeDim(d) => format!(".squeeze_dim({d})"),
            View::Unsqueeze(d) => format!(".unsqueeze({d})"),
            View::Expand(s) => format!(".expand({})", ints(s)),
            View::Unfold(d, s, st) => format!(".unfold({d}, {s}, {st})"),
            View::AsStrided(s, st, o) => {
                format!(".as_strided({}, {}, {o})", uints(s), uints(st))
            }
            View::Alias => ".alias()".into(),
            View::Detach => ".detach()".into(),
            View::ShallowClone => ".shallow_clone()".into(),
        }
    }

    /// The layout of this view of `l`; `copied` is true for a maybe-view
    /// (`reshape`, `flatten`, `contiguous`) that had to copy.
    pub fn apply(&self, l: &Lay) -> (Lay, bool) {
        let n = l.ndim();
        let mut o = l.clone();
        match self {
            View::View(s) => {
                let shape = infer(s, l.numel());
                let strides = view_strides(l, &shape).expect("checked viewable");
                (
                    Lay {
                        shape,
                        strides,
                        offset: l.offset,
                    },
                    false,
                )
            }
            View::Reshape(s) => {
                let shape = infer(s, l.numel());
                match view_strides(l, &shape) {
                    Some(strides) => (
                        Lay {
                            shape,
                            strides,
                            offset: l.offset,
                        },
                        false,
                    ),
                    None => (Lay::contiguous(&shape), true),
                }
            }
            View::Flatten => View::Reshape(vec![-1]).apply(l),
            View::Contiguous => {
                if l.is_contiguous() {
                    (o, false)
                } else {
                    (Lay::contiguous(&l.shape), true)
                }
            }
            View::T => {
                if n == 2 {
                    o.shape.swap(0, 1);
                    o.strides.swap(0, 1);
                }
                (o, false)
            }
            View::Transpose(a, b) => {
                let (a, b) = (wrap(*a, n), wrap(*b, n));
                if n > 0 {
                    o.shape.swap(a, b);
                    o.strides.swap(a, b);
                }
                (o, false)
            }
            View::Permute(p) => {
                o.shape = p.iter().map(|&d| l.shape[wrap(d, n)]).collect();
                o.strides = p.iter().map(|&d| l.strides[wrap(d, n)]).collect();
                (o, false)
            }
            View::Narrow(d, s, len) => {
                let d = wrap(*d, n);
                let size = l.shape[d] as i64;
                let s = if s.value < 0 { s.value + size } else { s.value } as usize;
                o.offset += s * l.strides[d];
                o.shape[d] = *len as usize;
                (o, false)
            }
            View::Slice(d, a, b, st) => {
                let d = wrap(*d, n);
                let size = l.shape[d] as i64;
                let mut a = if *a < 0 { a + size } else { *a };
                let mut b = if *b < 0 { b + size } else { *b };
                a = a.clamp(0, size);
                b = b.clamp(a, size);
                o.offset += a as usize * l.strides[d];
                o.shape[d] = ((b - a) as usize).div_ceil(*st as usize);
                o.strides[d] = l.strides[d] * *st as usize;
                (o, false)
            }
            View::Select(d, i) => {
                let d = wrap(*d, n);
                let size = l.shape[d] as i64;
                let i = if i.value < 0 { i.value + size } else { i.value } as usize;
                o.offset += i * l.strides[d];
                o.shape.remove(d);
                o.strides.remove(d);
                (o, false)
            }
            View::Diagonal(off, a, b) => {
                let (d1, d2) = (wrap(*a, n), wrap(*b, n));
                let (n1, n2) = (l.shape[d1] as i64, l.shape[d2] as i64);
                let len = if *off >= 0 {
                    n1.min(n2 - off).max(0)
                } else {
                    (n1 + off).min(n2).max(0)
                } as usize;
                if len > 0 {
                    if *off >= 0 {
                        o.offset += *off as usize * l.strides[d2];
                    } else {
                        o.offset += off.unsigned_abs() as usize * l.strides[d1];
                    }
                }
                let (hi, lo) = (d1.max(d2), d1.min(d2));
                o.shape.remove(hi);
                o.shape.remove(lo);
                o.strides.remove(hi);
                o.strides.remove(lo);
                o.shape.push(len);
                o.strides.push(l.strides[d1] + l.strides[d2]);
                (o, false)
            }
            View::Squeeze => {
                o.shape.clear();
                o.strides.clear();
                for (&s, &st) in l.shape.iter().zip(&l.strides) {
                    if s != 1 {
                        o.shape.push(s);
                        o.strides.push(st);
                    }
                }
                (o, false)
            }
            View::SqueezeDim(d) => {
                let d = wrap(*d, n);
                if n > 0 && l.shape[d] == 1 {
                    o.shape.remove(d);
                    o.strides.remove(d);
                }
                (o, false)
            }
            View::Unsqueeze(d) => {
                let d = wrap(*d, n + 1);
                let st = if d >= n { 1 } else { l.shape[d] * l.strides[d] };
                o.shape.insert(d, 1);
                o.strides.insert(d, st);
                (o, false)
            }
            View::Expand(s) => {
                let k = s.len();
                let mut shape = vec![0; k];
                let mut strides = vec![0; k];
                for i in (0..k).rev() {
                    let existing = (i + n).checked_sub(k);
                    let (mut size, mut stride) = match existing {
                        Some(d) => (l.shape[d], l.strides[d]),
                        None if n == 0 => (1, 0),
                        None if i + 1 < k => (1, shape[i + 1] * strides[i + 1]),
                        None => (1, 1),
                    };
                    let target = if s[i] == -1 { size } else { s[i] as usize };
                    if size != target {
                        size = target;
                        stride = 0;
                    }
                    shape[i] = size;
                    strides[i] = stride;
                }
                (
                    Lay {
                        shape,
                        strides,
                        offset: l.offset,
                    },
                    false,
                )
            }
            View::Unfold(d, size, step) => {
                let d = wrap(*d, n);
                let m = l.shape[d] as i64;
                o.shape[d] = ((m - size) / step + 1) as usize;
                o.strides[d] = *step as usize * l.strides[d];
                o.shape.push(*size as usize);
                o.strides.push(l.strides[d]);
                (o, false)
            }
            View::AsStrided(s, st, off) => (
                Lay {
                    shape: s.clone(),
                    strides: st.clone(),
                    offset: *off,
                },
                false,
            ),
            View::Alias | View::Detach | View::ShallowClone => (o, false),
        }
    }
}

/// Candidate shapes to view `l` as (same number of elements).
fn reshape_candidates(rng: &mut Rng, l: &Lay) -> Vec<Vec<i64>> {
    let s: Vec<i64> = l.shape.iter().map(|&x| x as i64).collect();
    let n = s.len();
    let mut out: Vec<Vec<i64>> = vec![vec![-1]];
    // split a dim into two factors
    for d in 0..n {
        let m = s[d];
        for f in 2..m {
            if m % f == 0 {
                let mut v = s.clone();
                v[d] = m / f;
                v.insert(d, f);
                out.push(v);
            }
        }
    }
    // merge two adjacent dims
    for d in 0..n.saturating_sub(1) {
        let mut v = s.clone();
        v[d] *= v[d + 1];
        v.remove(d + 1);
        out.push(v);
    }
    // insert a 1 / drop a 1
    if n < 5 {
        let mut v = s.clone();
        v.insert(rng.below(n + 1), 1);
        out.push(v);
    }
    if let Some(d) = s.iter().position(|&x| x == 1) {
        let mut v = s.clone();
        v.remove(d);
        out.push(v);
    }
    // sometimes spell one size as -1
    for v in out.iter_mut() {
        if v.len() > 1 && rng.chance(25) {
            let d = rng.below(v.len());
            v[d] = -1;
        }
    }
    out
}

/// A random dim argument for rank `n` (sometimes negative).
fn dim_arg(rng: &mut Rng, d: usize, n: usize) -> i64 {
    if rng.chance(25) {
        d as i64 - n as i64
    } else {
        d as i64
    }
}

// ---------------------------------------------------------------------------
// the program model

/// How a function parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Passing {
    /// `x: &Tensor`.
    Ref,
    /// `x: &mut Tensor`.
    RefMut,
    /// `mut x: Tensor`.
    Value,
    /// `d: &[Tensor]`.
    Slice,
    /// `d: &mut [Tensor]`.
    SliceMut,
    /// `s: &mut helpers::Pair`: two tensors in struct fields `s.a`, `s.b`.
    Pair,
    /// `l: &mut helpers::Lists`: a `Vec<Tensor>` in the struct field `l.xs`
    /// (optimizer state), indexed and iterated as a slice parameter is.
    ListField,
}

/// One tensor parameter of a generated program.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// How it is passed.
    pub passing: Passing,
    /// Its shape (of each element, for slices).
    pub shape: Vec<usize>,
    /// Number of elements (slices only; 1 otherwise).
    pub count: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum VKind {
    /// `let mut v = ...` (a root or an alias; the macro decides).
    Local,
    ParamRef,
    ParamMut,
    ParamVal,
    /// `for r in x.unbind(d)`.
    LoopView,
    /// `for t in d.iter_mut()`: a `&mut Tensor`.
    IterMut,
    /// `for (j, t) in d.iter().enumerate()`: a `&Tensor`.
    IterRef,
    /// A struct field of a parameter: `s.a`.
    Field,
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    kind: VKind,
    lay: Lay,
    /// Never written to: derived from `expand`, or overlapping somewhere.
    ro: bool,
    /// A root with its own contiguous layout at offset 0, whose storage it
    /// covers exactly (`as_strided` is allowed on it).
    strided_ok: bool,
    /// The block it was declared in (metadata mutations only there).
    block: usize,
    /// A fresh local that was never viewed, moved or re-laid-out.
    fresh: bool,
    /// A local made by a fresh value (a root for the macro).
    root: bool,
    moved: bool,
    /// The copy (made by a `reshape`/`flatten`/`contiguous` that could not
    /// alias) this variable holds or views. The runtime refuses views of a
    /// copy once the copy or the view is mutated, so a family that has a
    /// named view is frozen (read-only).
    family: Option<usize>,
    /// The root (in the macro's sense) this variable is or views: views of
    /// a root that is assigned a new value are frozen (the runtime refuses
    /// mutations through them).
    rid: usize,
    /// Its offset depends on a loop iteration (a loop variable over
    /// `unbind`, or a view chain indexed by `i % n`): the modelled layout
    /// is one of several, so overlaps with it are not decided by the model.
    inexact: bool,
    /// The place this variable is the very tensor of (`let w = p[1].zero_();`
    /// binds `p[1]` itself: an in-place op returns its receiver), which an
    /// indexed op refuses as its own operand whatever the layout.
    same: Option<String>,
}

#[derive(Clone, Debug)]
struct Multi {
    name: String,
    elems: Vec<Lay>,
    ro: bool,
    family: Option<usize>,
    rid: usize,
    inexact: bool,
}

#[derive(Clone, Debug)]
struct Coll {
    name: String,
    elem: Lay,
    count: usize,
    mutable: bool,
    /// Hidden while a loop borrows it.
    hidden: bool,
}

/// Something the program can name that holds a tensor.
#[derive(Clone, Debug)]
struct Place {
    /// As a method receiver: `x`, `p3[1]`, `d[0]`.
    recv: String,
    /// As a `&Tensor` expression.
    refx: String,
    /// As the left side of `+=` (if allowed).
    lhs: Option<String>,
    /// As a `&mut Tensor` argument (if allowed).
    mutref: Option<String>,
    /// As a `&Tensor` argument to a helper (tracked by the macro).
    helper_ref: String,
    lay: Lay,
    ro: bool,
    var: Option<usize>,
    /// An element of a slice parameter (or a loop variable over one):
    /// never bound to a named alias (the macro refuses those).
    elem: bool,
    /// See [`Var::family`].
    family: Option<usize>,
    /// See [`Var::rid`] (0 for collection elements).
    rid: usize,
    /// See [`Var::inexact`].
    inexact: bool,
}

/// One generated program.
#[derive(Clone, Debug)]
pub struct Program {
    /// Its index in the run.
    pub index: usize,
    /// Its own seed (derived from the run's seed and the index).
    pub seed: u64,
    /// The tensor parameters, in order (a slice parameter comes last).
    pub params: Vec<Param>,
    /// Number of tensors returned (1 is a bare `Tensor`).
    pub outputs: usize,
    /// The function body (statements and tail), indented by 4.
    pub body: String,
    /// Uses reductions, whose summation order may depend on the layout:
    /// compare with a tolerance.
    pub tolerant: bool,
    /// Calls helpers the macro cannot see into.
    pub opaque: bool,
    /// `(n, flag)` values to run it with.
    pub scalars: Vec<(usize, bool)>,
    /// Returns `Result<_, String>` and exits early with `?`.
    pub fallible: bool,
    /// A `&mut self` method of the shard's `Module` (its struct parameter
    /// is `self`), not a free function.
    pub method: bool,
    /// Spells the type of its tensor parameters (not slices) as the alias
    /// `Tn` (`type Tn = Tensor;`, issue 11). The macro cannot see through
    /// the alias: the body proves each such parameter a tensor by an
    /// in-place op on it first (`x.mul_(1.0f32);`, which changes nothing),
    /// as a port would use it.
    pub alias: bool,
    /// Some value has at least 2048 elements (the fused pass's size).
    pub big: bool,
    /// Runs its untraced functionalized variants with
    /// `set_min_fused(0)` (see `funcz_difftest::Program::fuse_small`).
    pub fuse_small: bool,
}

impl Program {
    /// The parameter list, e.g. `x0: &Tensor, d: &mut [Tensor], n: usize, flag: bool`.
    pub fn signature(&self) -> String {
        let t = if self.alias { "Tn" } else { "Tensor" };
        let mut ps: Vec<String> = self
            .params
            .iter()
            .map(|p| match p.passing {
                Passing::Ref => format!("{}: &{t}", p.name),
                Passing::RefMut => format!("{}: &mut {t}", p.name),
                Passing::Value => format!("mut {}: {t}", p.name),
                Passing::Slice => format!("{}: &[Tensor]", p.name),
                Passing::SliceMut => format!("{}: &mut [Tensor]", p.name),
                Passing::Pair if self.method => "&mut self".into(),
                Passing::Pair => format!("{}: &mut helpers::Pair", p.name),
                Passing::ListField => format!("{}: &mut helpers::Lists", p.name),
            })
            .collect();
        // `self` comes first.
        ps.sort_by_key(|p| p != "&mut self");
        ps.push("n: usize".into());
        ps.push("flag: bool".into());
        ps.join(", ")
    }

    /// The return type.
    pub fn ret_type(&self) -> String {
        let t = if self.outputs == 1 {
            "Tensor".into()
        } else {
            format!("({})", vec!["Tensor"; self.outputs].join(", "))
        };
        if self.fallible {
            format!("Result<{t}, String>")
        } else {
            t
        }
    }

    /// The whole function as Rust source, named `name`, with an optional
    /// attribute line (a method is indented, for its `impl Module` block).
    pub fn source(&self, name: &str, attr: &str) -> String {
        let f = format!(
            "{attr}fn {name}({}) -> {} {{\n{}}}\n",
            self.signature(),
            self.ret_type(),
            self.body
        );
        if self.method {
            f.lines().map(|l| format!("    {l}\n")).collect()
        } else {
            f
        }
    }
}

struct Gen {
    rng: Rng,
    body: String,
    indent: usize,
    vars: Vec<Var>,
    var_scopes: Vec<usize>,
    multis: Vec<Multi>,
    multi_scopes: Vec<usize>,
    colls: Vec<Coll>,
    blocks: Vec<usize>,
    next_block: usize,
    next_name: usize,
    /// Loop variables in scope (`usize`), usable in index expressions.
    loop_idx: Vec<String>,
    next_family: usize,
    next_rid: usize,
    /// Blocks that are loop bodies (innermost last).
    loop_blocks: Vec<usize>,
    /// The next block opened is a loop body.
    pending_loop: bool,
    depth: usize,
    tolerant: bool,
    opaque: bool,
    outputs: usize,
    stmts_left: usize,
    fallible: bool,
    /// The struct parameter (`s`, or `self`) whose number field `n` the
    /// body may update (`s.n += 1.5f32`) and read (`s.n.max(..)`).
    counter: Option<String>,
    /// The list parameter (`l`) whose `counts: Vec<f32>` the body may
    /// update through loop variables and read.
    list_counter: Option<String>,
    /// The tensor the in-place op being generated writes to (see
    /// [`Dest`]).
    dest: Option<Dest>,
    /// Some value has at least 2048 elements (the fused pass's size).
    big: bool,
}

/// The written-to tensor of the in-place op being generated. Its tensor
/// operands must not partially overlap it (PyTorch raises, and so does the
/// runtime: the original would panic), and for the indexed ops (`strict`)
/// must not overlap it at all; an operand that would is cloned, but for
/// one in a hundred, kept on purpose: the original then panics, and every
/// variant must panic alike (an argument overlapping its target through an
/// alias or a copy once computed a value in the functionalized variants).
#[derive(Clone, Debug)]
struct Dest {
    /// Its root (storages of other roots are other storages).
    rid: usize,
    /// Its layout.
    lay: Lay,
    /// Any overlap is refused (the indexed in-place ops' check).
    strict: bool,
    /// The place written to, when the op writes to it directly (not to a
    /// view chain of it): an operand naming the same place is the same
    /// tensor, a full overlap whatever its layout (dense or not).
    recv: Option<String>,
    /// Its modelled layout is one of several (see [`Var::inexact`]).
    inexact: bool,
    /// An element of a collection input: an operand made of a view of it
    /// keeps a handle of its buffer while the op runs, which funcz refuses
    /// once the element is a private copy (a known false refusal, see the
    /// README's limits), so overlapping operands are not kept for it.
    elem: bool,
}

const SCALARS: &[&str] = &[
    "0.5f32", "1.5f32", "2.0f32", "-1.0f32", "0.25f32", "-0.75f32", "3.0f32",
];

impl Gen {
    fn new(rng: Rng, outputs: usize) -> Gen {
        Gen {
            rng,
            body: String::new(),
            indent: 1,
            vars: Vec::new(),
            var_scopes: Vec::new(),
            multis: Vec::new(),
            multi_scopes: Vec::new(),
            colls: Vec::new(),
            blocks: vec![0],
            next_block: 0,
            next_name: 0,
            loop_idx: Vec::new(),
            next_family: 0,
            next_rid: 0,
            loop_blocks: Vec::new(),
            pending_loop: false,
            depth: 0,
            tolerant: false,
            opaque: false,
            outputs,
            stmts_left: 0,
            fallible: false,
            counter: None,
            list_counter: None,
            dest: None,
            big: false,
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.body.push_str("    ");
        }
        self.body.push_str(&type_field_lets(s));
        self.body.push('\n');
    }

    fn fresh_name(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    fn block(&self) -> usize {
        *self.blocks.last().expect("a block")
    }

    fn open(&mut self) {
        self.var_scopes.push(self.vars.len());
        self.multi_scopes.push(self.multis.len());
        self.next_block += 1;
        self.blocks.push(self.next_block);
        if self.pending_loop {
            self.loop_blocks.push(self.next_block);
            self.pending_loop = false;
        }
        self.indent += 1;
        self.depth += 1;
    }

    fn close(&mut self) {
        let v = self.var_scopes.pop().expect("open scope");
        self.vars.truncate(v);
        let m = self.multi_scopes.pop().expect("open scope");
        self.multis.truncate(m);
        if let Some(b) = self.blocks.pop()
            && self.loop_blocks.last() == Some(&b)
        {
            self.loop_blocks.pop();
        }
        self.indent -= 1;
        self.depth -= 1;
    }

    fn scalar(&mut self) -> String {
        self.rng.pick(SCALARS).to_string()
    }

    // ---------- places ----------

    fn places(&self) -> Vec<Place> {
        let mut out = Vec::new();
        for (i, v) in self.vars.iter().enumerate() {
            if v.moved {
                continue;
            }
            let n = &v.name;
            let (refx, lhs, mutref, helper_ref) = match v.kind {
                VKind::Local => (
                    format!("&{n}"),
                    Some(n.clone()),
                    Some(format!("&mut {n}")),
                    format!("&{n}"),
                ),
                VKind::ParamRef | VKind::IterRef => (n.clone(), None, None, n.clone()),
                VKind::ParamMut => (
                    format!("&*{n}"),
                    Some(format!("*{n}")),
                    Some(n.clone()),
                    n.clone(),
                ),
                VKind::ParamVal => (
                    format!("&{n}"),
                    Some(n.clone()),
                    Some(format!("&mut {n}")),
                    format!("&{n}"),
                ),
                VKind::LoopView | VKind::Field => (format!("&{n}"), None, None, format!("&{n}")),
                VKind::IterMut => (
                    format!("&*{n}"),
                    Some(format!("*{n}")),
                    Some(n.clone()),
                    n.clone(),
                ),
            };
            out.push(Place {
                recv: n.clone(),
                refx,
                lhs,
                mutref,
                helper_ref,
                lay: v.lay.clone(),
                ro: v.ro,
                var: Some(i),
                elem: matches!(v.kind, VKind::IterMut | VKind::IterRef),
                family: v.family,
                rid: v.rid,
                inexact: v.inexact,
            });
        }
        for m in &self.multis {
            for (k, l) in m.elems.iter().enumerate() {
                let e = format!("{}[{k}]", m.name);
                out.push(Place {
                    recv: e.clone(),
                    refx: format!("&{e}"),
                    lhs: Some(e.clone()),
                    mutref: Some(format!("&mut {e}")),
                    helper_ref: format!("&{e}"),
                    lay: l.clone(),
                    ro: m.ro,
                    var: None,
                    elem: false,
                    family: m.family,
                    rid: m.rid,
                    inexact: m.inexact,
                });
            }
        }
        for c in &self.colls {
            if c.hidden {
                continue;
            }
            for k in 0..c.count {
                let e = format!("{}[{k}]", c.name);
                out.push(Place {
                    recv: e.clone(),
                    refx: format!("&{e}"),
                    lhs: c.mutable.then(|| e.clone()),
                    mutref: c.mutable.then(|| format!("&mut {e}")),
                    helper_ref: format!("&{e}"),
                    lay: c.elem.clone(),
                    ro: false,
                    var: None,
                    elem: true,
                    family: None,
                    rid: 0,
                    inexact: false,
                });
            }
        }
        out
    }

    fn pick_place(&mut self, writable: bool) -> Option<Place> {
        self.pick_place_where(|p| !writable || !p.ro)
    }

    fn pick_place_where(&mut self, ok: impl Fn(&Place) -> bool) -> Option<Place> {
        let ps: Vec<Place> = self.places().into_iter().filter(|p| ok(p)).collect();
        if ps.is_empty() {
            None
        } else {
            Some(self.rng.pick(&ps).clone())
        }
    }

    /// An index expression in `0..size` (a loop variable sometimes).
    fn index_arg(&mut self, size: usize, allow_negative: bool) -> Arg {
        if !self.loop_idx.is_empty() && self.rng.chance(40) {
            let i = self.rng.pick(&self.loop_idx).clone();
            return Arg {
                text: format!("{i} % {size}"),
                value: 0,
            };
        }
        let v = self.rng.below(size) as i64;
        if allow_negative && self.rng.chance(25) {
            lit(v - size as i64)
        } else {
            lit(v)
        }
    }

    /// One random view op valid on `l` (not `as_strided`).
    fn random_view(&mut self, l: &Lay, allow_expand: bool) -> Option<View> {
        let n = l.ndim();
        for _ in 0..8 {
            let k = self.rng.weighted(&[
                6, // view
                5, // reshape
                2, // flatten
                2, // contiguous
                4, // t
                5, // transpose
                3, // permute
                8, // narrow
                5, // slice
                7, // select
                4, // diagonal
                2, // squeeze
                2, // squeeze_dim
                4, // unsqueeze
                if allow_expand { 2 } else { 0 },
                3, // unfold
                1, // alias
                1, // detach
                1, // shallow_clone
            ]);
            let v = match k {
                0 | 1 => {
                    if l.numel() == 0 {
                        continue;
                    }
                    let cands = reshape_candidates(&mut self.rng, l);
                    let ok: Vec<Vec<i64>> = cands
                        .into_iter()
                        .filter(|c| k == 1 || view_strides(l, &infer(c, l.numel())).is_some())
                        .filter(|c| c.len() <= 5)
                        .collect();
                    if ok.is_empty() {
                        continue;
                    }
                    let s = self.rng.pick(&ok).clone();
                    if k == 0 {
                        View::View(s)
                    } else {
                        View::Reshape(s)
                    }
                }
                2 => View::Flatten,
                3 => View::Contiguous,
                4 => {
                    if n > 2 {
                        continue;
                    }
                    View::T
                }
                5 => {
                    if n == 0 {
                        continue;
                    }
                    let (a, b) = (self.rng.below(n), self.rng.below(n));
                    View::Transpose(dim_arg(&mut self.rng, a, n), dim_arg(&mut self.rng, b, n))
                }
                6 => {
                    if n < 2 {
                        continue;
                    }
                    let mut p: Vec<usize> = (0..n).collect();
                    for i in (1..n).rev() {
                        let j = self.rng.below(i + 1);
                        p.swap(i, j);
                    }
                    let p = p
                        .into_iter()
                        .map(|d| dim_arg(&mut self.rng, d, n))
                        .collect();
                    View::Permute(p)
                }
                7 => {
                    let dims: Vec<usize> = (0..n).filter(|&d| l.shape[d] >= 1).collect();
                    if dims.is_empty() {
                        continue;
                    }
                    let d = *self.rng.pick(&dims);
                    let size = l.shape[d];
                    let len = self.rng.range(1, size as i64) as usize;
                    let room = size - len + 1;
                    let start = self.index_arg(room, false);
                    let start = if start.text.parse::<i64>().is_ok() && self.rng.chance(20) {
                        lit(start.value - size as i64)
                    } else {
                        start
                    };
                    View::Narrow(dim_arg(&mut self.rng, d, n), start, len as i64)
                }
                8 => {
                    let dims: Vec<usize> = (0..n).filter(|&d| l.shape[d] >= 1).collect();
                    if dims.is_empty() {
                        continue;
                    }
                    let d = *self.rng.pick(&dims);
                    let size = l.shape[d] as i64;
                    let step = self.rng.range(1, 3);
                    let a = self.rng.range(-size, size - 1);
                    let b = self.rng.range(-size + 1, size + 2);
                    let view = View::Slice(dim_arg(&mut self.rng, d, n), a, b, step);
                    if view.apply(l).0.numel() == 0 {
                        continue;
                    }
                    view
                }
                9 => {
                    let dims: Vec<usize> = (0..n).filter(|&d| l.shape[d] >= 1).collect();
                    if dims.is_empty() {
                        continue;
                    }
                    let d = *self.rng.pick(&dims);
                    let i = self.index_arg(l.shape[d], true);
                    View::Select(dim_arg(&mut self.rng, d, n), i)
                }
                10 => {
                    if n < 2 {
                        continue;
                    }
                    let a = self.rng.below(n);
                    let mut b = self.rng.below(n - 1);
                    if b >= a {
                        b += 1;
                    }
                    let off = self.rng.range(-2, 2);
                    let view = View::Diagonal(
                        off,
                        dim_arg(&mut self.rng, a, n),
                        dim_arg(&mut self.rng, b, n),
                    );
                    if view.apply(l).0.numel() == 0 {
                        continue;
                    }
                    view
                }
                11 => View::Squeeze,
                12 => {
                    if n == 0 {
                        continue;
                    }
                    let d = self.rng.below(n);
                    View::SqueezeDim(dim_arg(&mut self.rng, d, n))
                }
                13 => {
                    if n >= 5 {
                        continue;
                    }
                    let d = self.rng.below(n + 1);
                    View::Unsqueeze(dim_arg(&mut self.rng, d, n + 1))
                }
                14 => {
                    let mut target: Vec<i64> = Vec::new();
                    if n < 4 && self.rng.chance(40) {
                        target.push(self.rng.range(1, 3));
                    }
                    for &s in &l.shape {
                        if s == 1 {
                            target.push(self.rng.range(1, 3));
                        } else if self.rng.chance(30) {
                            target.push(-1);
                        } else {
                            target.push(s as i64);
                        }
                    }
                    View::Expand(target)
                }
                15 => {
                    let dims: Vec<usize> = (0..n).filter(|&d| l.shape[d] >= 1).collect();
                    if dims.is_empty() || n >= 5 {
                        continue;
                    }
                    let d = *self.rng.pick(&dims);
                    let size = self.rng.range(1, l.shape[d] as i64);
                    let step = self.rng.range(1, 3);
                    View::Unfold(dim_arg(&mut self.rng, d, n), size, step)
                }
                16 => View::Alias,
                17 => View::Detach,
                _ => View::ShallowClone,
            };
            return Some(v);
        }
        None
    }

    /// A non-overlapping (or, when `ro_ok`, possibly overlapping)
    /// `as_strided` inside a storage of `len` elements.
    fn random_as_strided(&mut self, len: usize, ro_ok: bool) -> Option<View> {
        if len < 2 {
            return None;
        }
        for _ in 0..8 {
            if self.rng.chance(50) {
                let k = self.rng.range(1, len.min(4) as i64) as usize;
                let s = self.rng.range(1, 3) as usize;
                if (k - 1) * s + 1 > len {
                    continue;
                }
                let off = self.rng.below(len - (k - 1) * s);
                return Some(View::AsStrided(vec![k], vec![s], off));
            }
            let k1 = self.rng.range(1, 3) as usize;
            let k2 = self.rng.range(1, 3) as usize;
            let s2 = self.rng.range(1, 2) as usize;
            let s1 = if ro_ok && self.rng.chance(30) {
                self.rng.range(0, (k2 * s2) as i64) as usize
            } else {
                k2 * s2 + self.rng.below(2)
            };
            let span = (k1 - 1) * s1 + (k2 - 1) * s2 + 1;
            if span > len {
                continue;
            }
            let off = self.rng.below(len - span + 1);
            return Some(View::AsStrided(vec![k1, k2], vec![s1, s2], off));
        }
        None
    }

    /// A chain of 1..=max views from `place`: (text appended to the
    /// receiver, final layout, read-only, the chain copied somewhere).
    fn chain(
        &mut self,
        place: &Place,
        max: usize,
        allow_expand: bool,
    ) -> (String, Lay, bool, bool) {
        let mut text = String::new();
        let mut l = place.lay.clone();
        let mut ro = place.ro;
        let mut copied = false;
        let len = self.rng.range(1, max as i64) as usize;
        for k in 0..len {
            let strided_ok = k == 0
                && place
                    .var
                    .is_some_and(|i| self.vars[i].strided_ok && self.vars[i].lay.is_contiguous());
            let v = if strided_ok && self.rng.chance(25) {
                self.random_as_strided(l.numel(), allow_expand)
            } else {
                self.random_view(&l, allow_expand)
            };
            let Some(v) = v else { break };
            let (nl, copy) = v.apply(&l);
            if copy {
                // A fresh tensor: writable again, and no longer a view.
                ro = false;
                copied = true;
            }
            if matches!(v, View::Expand(_)) || nl.overlaps() {
                ro = true;
            }
            text.push_str(&v.render());
            l = nl;
        }
        (text, l, ro, copied)
    }

    // ---------- operands and fresh values ----------

    /// A `&Tensor` expression whose shape broadcasts to `shape`, or a
    /// scalar.
    fn operand(&mut self, shape: &[usize]) -> String {
        self.operand_avoiding(shape, "")
    }

    /// [`operand`](Self::operand) not mentioning the variable `avoid`.
    fn operand_avoiding(&mut self, shape: &[usize], avoid: &str) -> String {
        if self.rng.chance(35) {
            return self.scalar();
        }
        let ps: Vec<Place> = self
            .places()
            .into_iter()
            .filter(|p| avoid.is_empty() || base_name(&p.recv) != avoid)
            .collect();
        // Sometimes an operand partially overlapping the written-to tensor
        // on purpose (`b.add_(&y)` with `let y = b.t();`, `x.add_(&x.t())`):
        // the original panics, and so must every variant (see [`Dest`]).
        if let Some(d) = self.dest.clone()
            && !d.strict
            && !d.inexact
            && !d.elem
            && self.rng.chance(20)
        {
            // (Not the target under another name: see `guarded`.)
            let me = d.recv.as_deref().map(|r| self.itself(r));
            let hit = ps.iter().find(|p| {
                p.rid == d.rid
                    && me.as_ref().is_none_or(|m| *m != self.itself(&p.recv))
                    && !p.inexact
                    && broadcasts(&p.lay.shape, shape)
                    && overlap(&d.lay, &p.lay) == Overlap::Partial
            });
            if let Some(p) = hit {
                return p.refx.clone();
            }
            if let Some(r) = d.recv.as_deref()
                && avoid.is_empty()
                && d.lay.ndim() == 2
                && d.lay.shape[0] == d.lay.shape[1]
                && d.lay.shape == shape
                && overlap(&d.lay, &View::T.apply(&d.lay).0) == Overlap::Partial
            {
                return format!("&{r}.t()");
            }
        }
        let ok: Vec<&Place> = ps
            .iter()
            .filter(|p| broadcasts(&p.lay.shape, shape))
            .collect();
        if !ok.is_empty() && self.rng.chance(85) {
            let p = (*self.rng.pick(&ok)).clone();
            return self.guarded(&p.recv, p.refx.clone(), &p.lay, p.rid, p.inexact);
        }
        // A view of something that has the right shape, if one step gets there.
        for p in ps.iter() {
            if p.lay.ndim() == 2 && p.lay.shape[0] == p.lay.shape[1] {
                continue;
            }
            if p.lay.ndim() == 2 && shape.len() == 2 && p.lay.shape == [shape[1], shape[0]] {
                let (l, _) = View::T.apply(&p.lay);
                let recv = format!("{}.t()", p.recv);
                return self.guarded(&recv, format!("&{recv}"), &l, p.rid, p.inexact);
            }
        }
        self.scalar()
    }

    /// The tensor the place `r` names: a variable bound to an in-place
    /// op's result is its receiver, through any number of such bindings.
    fn itself(&self, r: &str) -> String {
        let mut r = r.to_string();
        for _ in 0..self.vars.len() {
            let v = self.vars.iter().rev().find(|v| v.name == r && !v.moved);
            match v.and_then(|v| v.same.clone()) {
                Some(s) if s != r => r = s,
                _ => break,
            }
        }
        r
    }

    /// `refx`, an operand of the in-place op being generated, or a clone of
    /// it (`&{recv}.clone()`) if it would overlap the written-to tensor in a
    /// way the op refuses (see [`Dest`]).
    fn guarded(
        &mut self,
        recv: &str,
        refx: String,
        lay: &Lay,
        rid: usize,
        inexact: bool,
    ) -> String {
        let keep_overlap = self.rng.chance(1) && !self.dest.as_ref().is_some_and(|d| d.elem);
        let itself = |r: &str| self.itself(r);
        let same_tensor = self
            .dest
            .as_ref()
            .and_then(|d| d.recv.as_deref())
            .is_some_and(|d| itself(d) == itself(recv));
        match &self.dest {
            // The same tensor under another name (`let w = x.lerp_(..);`):
            // the original decides its overlap by identity (a full one,
            // whatever the two handles' layouts), functionalized code by
            // layout (a known gap, see the README's limits).
            Some(d) if same_tensor && d.recv.as_deref() != Some(recv) => format!("&{recv}.clone()"),
            Some(d) if d.strict && same_tensor && !keep_overlap => format!("&{recv}.clone()"),
            // The very tensor written to: a full overlap.
            Some(d) if d.recv.as_deref() == Some(recv) => refx,
            // Layouts that change with the loop iteration: undecided.
            Some(d) if d.rid == rid && (d.inexact || inexact) => format!("&{recv}.clone()"),
            Some(d) if d.rid == rid => match overlap(&d.lay, lay) {
                Overlap::Partial if !keep_overlap => format!("&{recv}.clone()"),
                Overlap::Full if d.strict && !keep_overlap => format!("&{recv}.clone()"),
                // Undecided by layout, but an indexed op's target reached
                // through `shallow_clone()` is its operand itself in the
                // original (the same gap).
                Overlap::TooHard if d.strict => format!("&{recv}.clone()"),
                _ => refx,
            },
            _ => refx,
        }
    }

    /// A tensor operand exactly of `shape` (for `addcmul_` and friends).
    fn tensor_operand(&mut self, shape: &[usize]) -> String {
        let ps = self.places();
        let ok: Vec<&Place> = ps.iter().filter(|p| p.lay.shape == shape).collect();
        if !ok.is_empty() && self.rng.chance(85) {
            let p = (*self.rng.pick(&ok)).clone();
            return self.guarded(&p.recv, p.refx.clone(), &p.lay, p.rid, p.inexact);
        }
        let seed = self.rng.below(1000);
        format!("&Tensor::<f32>::randn(&{}, {seed})", usize_list(shape))
    }

    /// An expression making a fresh (contiguous) tensor, and its shape.
    fn fresh_value(&mut self) -> (String, Vec<usize>) {
        let place = self.pick_place(false);
        let Some(p) = place else {
            let seed = self.rng.below(1000);
            return (format!("Tensor::<f32>::randn(&[3, 2], {seed})"), vec![3, 2]);
        };
        // Sometimes read through a view chain first.
        let (recv, refx, shape) = if self.rng.chance(30) {
            let (text, l, _, _) = self.chain(&p, 2, true);
            // (An empty chain reads the place itself: `&x0` of a `&Tensor`
            // parameter would be a `&&Tensor`.)
            let refx = if text.is_empty() {
                p.refx.clone()
            } else {
                format!("&{}{}", p.recv, text)
            };
            (format!("{}{}", p.recv, text), refx, l.shape)
        } else {
            (p.recv.clone(), p.refx.clone(), p.lay.shape.clone())
        };
        let k = self.rng.weighted(&[8, 5, 4, 3, 2, 2, 2, 2, 2, 2, 2, 2]);
        match k {
            0 => (format!("{recv}.clone()"), shape),
            1 => {
                let o = self.operand(&shape);
                (format!("{refx} + {o}"), shape)
            }
            2 => {
                let s = self.scalar();
                (format!("{refx} * {s}"), shape)
            }
            3 => {
                let o = self.operand(&shape);
                (format!("{recv}.mul({o})"), shape)
            }
            4 => (format!("{recv}.relu()"), shape),
            5 => (format!("{recv}.neg()"), shape),
            6 => (format!("{recv}.tanh()"), shape),
            7 => {
                if shape.is_empty() {
                    return (format!("{recv}.sum()"), vec![]);
                }
                self.tolerant = true;
                let d = self.rng.below(shape.len());
                let mut s = shape.clone();
                s[d] = 1;
                (format!("{recv}.sum_dim({d}, true)"), s)
            }
            8 => {
                self.tolerant = true;
                (format!("{recv}.sum()"), vec![])
            }
            9 => {
                let seed = self.rng.below(1000);
                (
                    format!("Tensor::<f32>::randn(&{}, {seed})", usize_list(&shape)),
                    shape,
                )
            }
            10 => (
                format!("if flag {{ {recv}.clone() }} else {{ {refx} * 2.0f32 }}"),
                shape,
            ),
            _ => {
                self.opaque = true;
                (format!("helpers::double({refx})"), shape)
            }
        }
    }

    /// The copy family of a value derived from `p` by a chain that
    /// `copied` or not, and whether it is read-only: a view of a family
    /// freezes it.
    fn derive_family(&mut self, p: &Place, copied: bool, ro: bool) -> (Option<usize>, bool) {
        if copied {
            self.next_family += 1;
            return (Some(self.next_family), ro);
        }
        match p.family {
            Some(f) => {
                for v in self.vars.iter_mut().filter(|v| v.family == Some(f)) {
                    v.ro = true;
                }
                for m in self.multis.iter_mut().filter(|m| m.family == Some(f)) {
                    m.ro = true;
                }
                (Some(f), true)
            }
            None => (None, ro),
        }
    }

    /// Declares a local: a fresh root (`fresh`) or a view of `rid`.
    fn declare_local(&mut self, name: String, lay: Lay, ro: bool, fresh: bool) {
        self.declare_local_of(name, lay, ro, fresh, 0);
    }

    fn declare_local_of(&mut self, name: String, lay: Lay, ro: bool, fresh: bool, rid: usize) {
        let rid = if fresh {
            self.next_rid += 1;
            self.next_rid
        } else {
            rid
        };
        let block = self.block();
        self.vars.push(Var {
            name,
            kind: VKind::Local,
            strided_ok: fresh && lay.is_contiguous() && lay.offset == 0,
            lay,
            ro,
            block,
            fresh,
            root: fresh,
            moved: false,
            family: None,
            rid,
            inexact: false,
            same: None,
        });
    }

    // ---------- statements ----------

    fn stmts(&mut self, count: usize) {
        for _ in 0..count {
            if self.stmts_left == 0 {
                break;
            }
            self.stmts_left -= 1;
            self.stmt();
        }
    }

    fn stmt(&mut self) {
        let nested = self.depth < 3;
        let k = self.rng.weighted(&[
            6,                                       // let fresh
            9,                                       // let view
            3,                                       // let multi
            14,                                      // in-place
            2,                                       // let = in-place
            4,                                       // metadata
            3,                                       // compound assign
            3,                                       // helper
            if nested { 3 } else { 0 },              // if
            if nested { 1 } else { 0 },              // match
            if nested { 3 } else { 0 },              // for range
            if nested { 1 } else { 0 },              // while
            if nested { 2 } else { 0 },              // for unbind
            if nested { 1 } else { 0 },              // for over slice
            if self.depth > 1 { 2 } else { 1 },      // early return
            2,                                       // reassign
            4,                                       // snapshot
            2,                                       // reassign a view
            if self.fallible { 3 } else { 0 },       // `?`
            if nested { 1 } else { 0 },              // loop with break
            1,                                       // resize_
            2,                                       // element reference
            6,                                       // indexed write
            3,                                       // fusion run
            2,                                       // element replaced
            if self.has_mut_coll() { 3 } else { 0 }, // element run
            if self.counter.is_some() || self.list_counter.is_some() {
                2
            } else {
                0
            }, // number field
        ]);
        match k {
            0 => self.let_fresh(),
            1 => self.let_view(),
            2 => self.let_multi(),
            3 => self.inplace(false),
            4 => self.inplace(true),
            5 => self.meta(),
            6 => self.compound(),
            7 => self.helper(),
            8 => self.if_stmt(),
            9 => self.match_stmt(),
            10 => self.for_range(),
            11 => self.while_stmt(),
            12 => self.for_unbind(),
            13 => self.for_slice(),
            14 => self.early_return(),
            15 => self.reassign(),
            16 => self.snapshot(),
            17 => self.reassign_view(),
            18 => self.try_stmt(),
            19 => self.loop_break(),
            20 => self.resize(),
            21 => self.elem_ref(),
            22 => self.indexed(),
            23 => self.fusion_run(),
            24 => self.replace_elem(),
            25 => self.elem_run(),
            _ => self.counter_stmt(),
        }
    }

    /// `s.n += 1.5f32;` or a read of it in an in-place op: a number field
    /// beside the tensor fields, compound-assigned and used with a method
    /// tensors have too (`max`, `sqrt`), which is no evidence that it is a
    /// tensor (`regress_numbers_compound_assigned_beside_tensors`).
    fn counter_stmt(&mut self) {
        if let Some(l) = self.list_counter.clone()
            && (self.counter.is_none() || self.rng.chance(50))
        {
            // `l.counts: Vec<f32>` beside `l.xs`, updated through loop
            // variables and an element (`regress_a_list_of_numbers_updated_
            // through_loop_variables`).
            match self.rng.below(3) {
                0 => self.line(&format!(
                    "for c in {l}.counts.iter_mut() {{ *c += 0.5f32; }}"
                )),
                1 => self.line(&format!("{l}.counts[1] *= -1.5f32;")),
                _ => {
                    let Some(p) = self.pick_place(true) else {
                        return;
                    };
                    self.line(&format!("{}.add_({l}.counts[0].abs().sqrt());", p.recv));
                }
            }
            return;
        }
        let Some(b) = self.counter.clone() else {
            return;
        };
        match self.rng.below(if b == "self" { 4 } else { 5 }) {
            4 => {
                // The parameter's name rebound in a block to a local
                // struct (`regress_a_shadowed_struct_parameter_*`): its
                // fields are the local's, not the parameter's places.
                // (Inside the block `{b}.a` is the local's field, which
                // the macro does not track: the update goes elsewhere.)
                let field = format!("{b}.");
                let dst = self.pick_place_where(|p| !p.ro && !p.recv.starts_with(&field));
                let (Some(src), Some(dst)) = (self.pick_place(false), dst) else {
                    return;
                };
                self.line(&format!(
                    "{{ let {b} = helpers::Pair {{ a: {src}.clone(), b: {src}.abs(), n: 0.5f32 }}; \
                     let mut {b} = {b}; {b}.n += 2.0f32; \
                     {dst}.add_(&{b}.a.mul({b}.n).sum()); }}",
                    src = src.recv,
                    dst = dst.recv,
                ));
            }
            0 => self.line(&format!("{b}.n += 1.5f32;")),
            3 => self.line(&format!("{{ let c = &mut {b}.n; *c -= 0.25f32; }}")),
            1 => self.line(&format!("{b}.n *= -0.5f32;")),
            _ => {
                let Some(p) = self.pick_place(true) else {
                    return;
                };
                self.line(&format!("{}.add_({b}.n.max(0.25f32).sqrt());", p.recv));
            }
        }
    }

    /// Whether a mutable collection is in sight (not borrowed by a loop).
    fn has_mut_coll(&self) -> bool {
        self.colls
            .iter()
            .any(|c| c.mutable && !c.hidden && c.elem.numel() > 0)
    }

    /// An optimizer-like run over collection elements, the shape
    /// `lower/fuse_multi.rs` folds into one pass (`tests/fuse_adam.rs`):
    /// consecutive in-place updates of `d[k]` and `e[j]` with temporaries
    /// made between them (`let t = (&e[j] * 0.5f32).abs().sqrt();
    /// t.add_(1.5f32); d[k].addcdiv_(&e[j], &t, -0.25f32);`), each
    /// statement reading the elements as the statements before it left
    /// them. The temporaries stay in scope, so later statements sometimes
    /// read them (the run must then end before their `let`).
    fn elem_run(&mut self) {
        let cands: Vec<usize> = (0..self.colls.len())
            .filter(|&c| {
                let c = &self.colls[c];
                c.mutable && !c.hidden && c.elem.numel() > 0
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let a = *self.rng.pick(&cands);
        let shape = self.colls[a].elem.shape.clone();
        let same: Vec<usize> = cands
            .iter()
            .copied()
            .filter(|&c| self.colls[c].elem.shape == shape)
            .collect();
        let b = *self.rng.pick(&same);
        let mut elems = vec![self.elem_at(a)];
        if b != a {
            elems.push(self.elem_at(b));
        }
        let mut temps: Vec<String> = Vec::new();
        let len = self.rng.range(2, 7);
        for _ in 0..len {
            let k = self
                .rng
                .weighted(&[5, 3, if temps.is_empty() { 0 } else { 2 }, 3]);
            let mut reads = elems.clone();
            reads.extend(temps.iter().cloned());
            match k {
                0 => {
                    let e = self.rng.pick(&elems).clone();
                    self.dest = Some(Dest {
                        rid: 0,
                        lay: self.colls[a].elem.clone(),
                        strict: false,
                        recv: Some(e.clone()),
                        elem: true,
                        inexact: false,
                    });
                    let call = self.inplace_call(&shape, true);
                    self.dest = None;
                    self.line(&format!("{e}.{call};"));
                }
                1 => {
                    let src = self.rng.pick(&reads).clone();
                    let s = self.scalar();
                    let e = match self.rng.below(4) {
                        0 => format!("(&{src} * {s}).abs().sqrt()"),
                        1 => format!("&{src} * {s}"),
                        2 => format!("&{src} + {s}"),
                        _ => format!("{src}.abs()"),
                    };
                    let name = self.fresh_name("t");
                    self.line(&format!("let mut {name} = {e};"));
                    self.declare_local(name.clone(), Lay::contiguous(&shape), false, true);
                    temps.push(name);
                }
                2 => {
                    let t = self.rng.pick(&temps).clone();
                    let s = self.scalar();
                    let call = match self.rng.below(3) {
                        0 => format!("add_({s})"),
                        1 => format!("mul_({s})"),
                        _ => "sqrt_()".to_string(),
                    };
                    self.line(&format!("{t}.{call};"));
                }
                _ => {
                    let e = self.rng.pick(&elems).clone();
                    let x = self.rng.pick(&reads).clone();
                    let y = self.rng.pick(&reads).clone();
                    let op = self.rng.pick(&["addcmul_", "addcdiv_"]).to_string();
                    let s = self.scalar();
                    self.line(&format!("{e}.{op}(&{x}, &{y}, {s});"));
                }
            }
        }
    }

    /// `c[k]` or, in a loop, `c[i % count]`: an element of collection `c`.
    fn elem_at(&mut self, c: usize) -> String {
        let count = self.colls[c].count;
        let index = if !self.loop_idx.is_empty() && self.rng.chance(40) {
            format!("{} % {count}", self.rng.pick(&self.loop_idx))
        } else {
            self.rng.below(count).to_string()
        };
        format!("{}[{index}]", self.colls[c].name)
    }

    /// `d[k] = d[j].mul(-0.5f32);`: an element of a mutable collection
    /// replaced by a fresh tensor of its shape (the caller's old element
    /// must keep its data: `regress_replaced_element_leaves_the_old_tensor`).
    fn replace_elem(&mut self) {
        let cands: Vec<usize> = (0..self.colls.len())
            .filter(|&c| self.colls[c].mutable && !self.colls[c].hidden)
            .collect();
        if cands.is_empty() {
            return;
        }
        let c = self.colls[*self.rng.pick(&cands)].clone();
        let k = self.rng.below(c.count);
        let j = self.rng.below(c.count);
        let scale = self.rng.pick(&["-0.5f32", "2.0f32", "1.0f32"]).to_string();
        self.line(&format!("{0}[{k}] = {0}[{j}].mul({scale});", c.name));
    }

    fn let_fresh(&mut self) {
        let (e, shape) = self.fresh_value();
        let name = self.fresh_name("v");
        // The result of a call the macro cannot see is typed, so that the
        // macro knows it is a tensor (and makes `*_copy`s of its views).
        // So is a value computed from a struct field the body never mutates
        // (its type is unknown to the macro: `let v: Tensor = s.a.clone();`
        // is what the macro's help asks for).
        let ty = if e.starts_with("helpers::") || mentions_field(&e) || self.rng.chance(10) {
            ": Tensor"
        } else {
            ""
        };
        // Sometimes an in-place op on the fresh value itself (`let w =
        // a.add(1.0).sqrt_();`, issue 11: it was taken for a view of `a`).
        let e = if ty.is_empty() && self.rng.chance(20) {
            let call = self.inplace_call(&shape, false);
            if e.contains(' ') {
                format!("({e}).{call}")
            } else {
                format!("{e}.{call}")
            }
        } else {
            e
        };
        // Sometimes bound the ways ports bind values (found porting
        // torch.optim and F.group_norm): declared first and assigned in
        // both branches, or one name of a tuple pattern.
        let paren = if e.contains(' ') {
            format!("({e})")
        } else {
            e.clone()
        };
        let form = if ty.is_empty() {
            self.rng.range(0, 20)
        } else {
            2
        };
        match form {
            0 => {
                self.line(&format!("let mut {name};"));
                self.line(&format!(
                    "if flag {{ {name} = {e}; }} else {{ {name} = {paren}.mul(2.0); }}"
                ));
            }
            1 => self.line(&format!("let (mut {name}, _) = ({e}, 0usize);")),
            _ => self.line(&format!("let mut {name}{ty} = {e};")),
        }
        self.declare_local(name, Lay::contiguous(&shape), false, true);
    }

    /// `let r = &d[i]; r.op_(..);` (or `&x`): an in-place op through a
    /// reference to a collection element or a variable (issue 11: E0596 at
    /// the attribute).
    fn elem_ref(&mut self) {
        let simple = |r: &str| r.chars().all(|c| c.is_alphanumeric() || c == '_');
        let Some(p) = self.pick_place_where(|p| !p.ro && (p.elem || simple(&p.recv))) else {
            return;
        };
        let name = self.fresh_name("r");
        let call = self.inplace_call(&p.lay.shape, false);
        self.line(&format!("let {name} = &{};", p.recv));
        if self.rng.chance(25) && !p.elem {
            // The reference handed on to a helper that writes through it
            // (copies mode lost the write: `a_reference_name_passed_on`).
            self.opaque = true;
            self.line(&format!("helpers::fill_first({name});"));
        } else {
            self.line(&format!("{name}.{call};"));
        }
    }

    fn snapshot(&mut self) {
        let Some(p) = self.pick_place(false) else {
            return;
        };
        let name = self.fresh_name("s");
        let (text, l) = if self.rng.chance(30) {
            let (t, l, _, _) = self.chain(&p, 2, true);
            (t, l)
        } else {
            (String::new(), p.lay.clone())
        };
        let ty = if mentions_field(&p.recv) {
            ": Tensor"
        } else {
            ""
        };
        self.line(&format!("let mut {name}{ty} = {}{text}.clone();", p.recv));
        self.declare_local(name, Lay::contiguous(&l.shape), false, true);
    }

    fn let_view(&mut self) {
        let Some(p) = self.pick_place_where(|p| !p.elem) else {
            return;
        };
        let (text, l, ro, copied) = self.chain(&p, 3, true);
        if text.is_empty() {
            return;
        }
        let name = self.fresh_name("v");
        self.line(&format!("let mut {name} = {}{text};", p.recv));
        if let Some(i) = p.var {
            self.vars[i].fresh = false;
        }
        let (family, ro) = self.derive_family(&p, copied, ro);
        self.declare_local_of(name, l, ro, false, p.rid);
        let v = self.vars.last_mut().expect("declared");
        v.family = family;
        v.inexact = p.inexact || text.contains('%');
    }

    fn let_multi(&mut self) {
        let Some(p) = self.pick_place_where(|p| !p.elem) else {
            return;
        };
        let (text, l, ro, copied) = if self.rng.chance(35) {
            self.chain(&p, 2, false)
        } else {
            (String::new(), p.lay.clone(), p.ro, false)
        };
        let dims: Vec<usize> = (0..l.ndim()).filter(|&d| l.shape[d] >= 1).collect();
        if dims.is_empty() {
            return;
        }
        let d = *self.rng.pick(&dims);
        let size = l.shape[d];
        let da = dim_arg(&mut self.rng, d, l.ndim());
        let (call, elems): (String, Vec<Lay>) = match self.rng.below(3) {
            0 => {
                let s = self.rng.range(1, size.max(1) as i64) as usize;
                let elems = (0..size.div_ceil(s))
                    .map(|k| {
                        View::Narrow(d as i64, lit((k * s) as i64), (s.min(size - k * s)) as i64)
                            .apply(&l)
                            .0
                    })
                    .collect();
                (format!(".split({s}, {da})"), elems)
            }
            1 => {
                let c = self.rng.range(1, 3) as usize;
                let s = size.div_ceil(c);
                let elems = (0..size.div_ceil(s))
                    .map(|k| {
                        View::Narrow(d as i64, lit((k * s) as i64), (s.min(size - k * s)) as i64)
                            .apply(&l)
                            .0
                    })
                    .collect();
                (format!(".chunk({c}, {da})"), elems)
            }
            _ => {
                let elems = (0..size)
                    .map(|k| View::Select(d as i64, lit(k as i64)).apply(&l).0)
                    .collect();
                (format!(".unbind({da})"), elems)
            }
        };
        let ro = ro || elems.iter().any(|e: &Lay| e.overlaps());
        let name = self.fresh_name("p");
        self.line(&format!("let mut {name} = {}{text}{call};", p.recv));
        if let Some(i) = p.var {
            self.vars[i].fresh = false;
        }
        let (family, ro) = self.derive_family(&p, copied, ro);
        self.multis.push(Multi {
            name,
            elems,
            ro,
            family,
            rid: p.rid,
            inexact: p.inexact || text.contains('%'),
        });
    }

    /// An in-place call on a tensor of shape `shape`. With `tensors`
    /// false, its arguments are scalars: the second op of a chain
    /// (`v.mul_(2.0).add_(..)`) must not read a view of the tensor the first
    /// one mutated (the macro refuses reads of a view after its base is
    /// mutated in the same statement).
    fn inplace_call(&mut self, shape: &[usize], tensors: bool) -> String {
        let k = self.rng.weighted(&[
            10,
            5,
            8,
            2,
            2,
            2,
            2,
            2,
            2,
            1,
            1,
            3,
            2,
            if tensors { 2 } else { 0 },
            3,
            4,
            if tensors { 3 } else { 0 },
            if tensors { 2 } else { 0 },
        ]);
        let operand = |g: &mut Self| {
            if tensors && g.rng.below(1000) < 10 {
                // Rarely, an operand that broadcasts the target to a bigger
                // shape: the original panics, and so must every variant,
                // with the same message (a functional twin that stood in
                // for the op on a shared target once went on with the
                // bigger value instead; see `check_once`).
                let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
                return format!("&Tensor::ones(&[2, {}])", dims.join(", "));
            }
            if tensors {
                let o = g.operand(shape);
                // Sometimes an owned tensor (`x.add_(&w * 1.5f32)`): a
                // fused run's step borrows it from a temporary
                // (`rt::StepArg`).
                if !o.ends_with("f32") && g.rng.chance(15) {
                    format!("({o} * 1.5f32)")
                } else {
                    o
                }
            } else {
                g.scalar()
            }
        };
        match k {
            0 => format!("add_({})", operand(self)),
            1 => format!("sub_({})", operand(self)),
            2 => format!("mul_({})", operand(self)),
            3 => format!("div_({})", self.scalar()),
            4 => "neg_()".into(),
            5 => "abs_()".into(),
            6 => "relu_()".into(),
            7 => "sigmoid_()".into(),
            8 => "tanh_()".into(),
            9 => "sqrt_()".into(),
            10 => "exp_()".into(),
            11 => "clamp_(-0.5f32, 0.75f32)".into(),
            12 => "pow_(2.0f32)".into(),
            13 => {
                let a = self.tensor_operand(shape);
                let b = self.tensor_operand(shape);
                format!("addcmul_({a}, {b}, 0.5f32)")
            }
            14 => format!("fill_({})", self.scalar()),
            15 => "zero_()".into(),
            16 => {
                let src = self.operand(shape);
                if src.ends_with("f32") {
                    format!("fill_({src})")
                } else {
                    format!("copy_({src})")
                }
            }
            _ => {
                let e = self.tensor_operand(shape);
                format!("lerp_({e}, 0.25f32)")
            }
        }
    }

    /// `target.op_(..);` on a writable place or a view chain of one.
    fn inplace(&mut self, bind: bool) {
        let Some(p) = self.pick_place_where(|p| !(p.ro || bind && p.elem)) else {
            return;
        };
        let (text, l, copied) = if self.rng.chance(55) {
            let (t, l, ro, copied) = self.chain(&p, 3, false);
            if ro {
                return;
            }
            (t, l, copied)
        } else {
            (String::new(), p.lay.clone(), false)
        };
        self.dest = Some(Dest {
            rid: p.rid,
            lay: l.clone(),
            strict: false,
            recv: text.is_empty().then(|| p.recv.clone()),
            elem: p.elem,
            inexact: p.inexact || text.contains('%'),
        });
        let mut call = self.inplace_call(&l.shape, true);
        self.dest = None;
        // An operand that changes the receiver's root through another
        // handle of it before the op runs (lost in copies mode before the
        // fix of `an_argument_that_changes_the_root_of_the_view_it_updates`).
        // Not a handle named like the receiver (`p[0]` for `p[1]`): the
        // macro cannot reorder those and panics if the receiver went stale
        // (`an_argument_that_changes_the_receivers_root_and_names_it`).
        if p.rid != 0 && self.rng.chance(6) {
            let others: Vec<Place> = self
                .places()
                .into_iter()
                .filter(|q| q.rid == p.rid && !q.ro && base_name(&q.recv) != base_name(&p.recv))
                .collect();
            if !others.is_empty() {
                let q = self.rng.pick(&others).clone();
                self.opaque = true;
                call = format!("add_(helpers::bump_one({}))", q.helper_ref);
            }
        }
        // (Chaining after a copy is refused by the macro.)
        if !copied && self.rng.chance(15) {
            let second = self.inplace_call(&l.shape, false);
            call = format!("{call}.{second}");
        }
        if !text.is_empty()
            && let Some(i) = p.var
        {
            self.vars[i].fresh = false;
        }
        if bind {
            let name = self.fresh_name("w");
            self.line(&format!("let mut {name} = {}{text}.{call};", p.recv));
            if let Some(i) = p.var {
                self.vars[i].fresh = false;
            }
            // The result views the copy (if any): it is not the copy's head.
            let (family, ro) = if copied || p.family.is_some() {
                let (f, _) = self.derive_family(&p, false, true);
                (f, true)
            } else {
                (None, false)
            };
            self.declare_local_of(name, l, ro, false, p.rid);
            let v = self.vars.last_mut().expect("declared");
            v.family = family;
            v.inexact = p.inexact || text.contains('%');
            if text.is_empty() {
                v.same = Some(p.recv.clone());
            }
        } else {
            self.line(&format!("{}{text}.{call};", p.recv));
        }
    }

    fn compound(&mut self) {
        let ps: Vec<Place> = self
            .places()
            .into_iter()
            .filter(|p| !p.ro && p.lhs.is_some())
            .collect();
        if ps.is_empty() {
            return;
        }
        let p = self.rng.pick(&ps).clone();
        let op = *self.rng.pick(&["+=", "-=", "*=", "/="]);
        let base = base_name(&p.recv);
        self.dest = Some(Dest {
            rid: p.rid,
            lay: p.lay.clone(),
            strict: false,
            recv: Some(p.recv.clone()),
            elem: p.elem,
            inexact: p.inexact,
        });
        let rhs = if op == "/=" {
            self.scalar()
        } else {
            self.operand_avoiding(&p.lay.shape, &base)
        };
        self.dest = None;
        self.line(&format!("{} {op} {rhs};", p.lhs.expect("filtered")));
    }

    fn meta(&mut self) {
        let block = self.block();
        let cands: Vec<usize> = (0..self.vars.len())
            .filter(|&i| {
                let v = &self.vars[i];
                !v.moved
                    && v.block == block
                    && match v.kind {
                        VKind::Local => true,
                        VKind::ParamMut | VKind::ParamVal => self.depth == 0,
                        _ => false,
                    }
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let i = *self.rng.pick(&cands);
        let l = self.vars[i].lay.clone();
        let n = l.ndim();
        let v = match self.rng.below(5) {
            0 if n <= 2 => View::T,
            1 if n >= 1 => {
                let (a, b) = (self.rng.below(n), self.rng.below(n));
                View::Transpose(dim_arg(&mut self.rng, a, n), dim_arg(&mut self.rng, b, n))
            }
            2 => View::Squeeze,
            3 if n < 5 => {
                let d = self.rng.below(n + 1);
                View::Unsqueeze(dim_arg(&mut self.rng, d, n + 1))
            }
            4 if n >= 1 => {
                let d = self.rng.below(n);
                View::SqueezeDim(dim_arg(&mut self.rng, d, n))
            }
            _ => return,
        };
        let call = match &v {
            View::T => "t_()".to_string(),
            View::Transpose(a, b) => format!("transpose_({a}, {b})"),
            View::Squeeze => "squeeze_()".to_string(),
            View::Unsqueeze(d) => format!("unsqueeze_({d})"),
            View::SqueezeDim(d) => format!("squeeze_dim_({d})"),
            _ => unreachable!(),
        };
        let (nl, _) = v.apply(&l);
        let name = self.vars[i].name.clone();
        // Sometimes bind the result: a handle of the re-laid-out variable.
        let bound = self.rng.chance(20).then(|| self.fresh_name("w"));
        match &bound {
            Some(w) => self.line(&format!("let mut {w} = {name}.{call};")),
            None => self.line(&format!("{name}.{call};")),
        }
        let var = &mut self.vars[i];
        var.lay = nl.clone();
        var.strided_ok = false;
        var.fresh = false;
        if let Some(w) = bound {
            let (ro, rid) = (var.ro, var.rid);
            let p = self
                .places()
                .into_iter()
                .find(|p| p.var == Some(i))
                .expect("a place");
            let (family, ro) = self.derive_family(&p, false, ro);
            self.declare_local_of(w, nl, ro, false, rid);
            let v = self.vars.last_mut().expect("declared");
            v.family = family;
            v.inexact = p.inexact;
            v.same = Some(name);
        }
    }

    /// `v = <views of a place of the same root>;` for a view variable
    /// declared in this block (its layout changes).
    fn reassign_view(&mut self) {
        let block = self.block();
        let cands: Vec<usize> = (0..self.vars.len())
            .filter(|&i| {
                let v = &self.vars[i];
                !v.moved && v.kind == VKind::Local && !v.root && v.rid != 0 && v.block == block
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let i = *self.rng.pick(&cands);
        let rid = self.vars[i].rid;
        let Some(p) = self.pick_place_where(|p| p.rid == rid && !p.elem) else {
            return;
        };
        let (text, l, ro, copied) = self.chain(&p, 2, true);
        if text.is_empty() {
            return;
        }
        let name = self.vars[i].name.clone();
        self.line(&format!("{name} = {}{text};", p.recv));
        let (family, ro) = self.derive_family(&p, copied, ro);
        let v = &mut self.vars[i];
        v.lay = l;
        v.ro = ro;
        v.family = family;
        v.strided_ok = false;
        v.inexact = p.inexact || text.contains('%');
    }

    // ---------- indexed writes (masks, index tensors) ----------

    /// An `i64` index tensor of `shape` with the values `vals`, as an
    /// expression, or (sometimes) bound to a name first; the returned
    /// text is a `&Tensor<i64>` expression. Sometimes one value is
    /// computed from a loop variable (`(i % 3) as i64`), in range.
    fn index_tensor(&mut self, vals: &[i64], shape: &[usize], bound: usize) -> String {
        let mut parts: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
        if !self.loop_idx.is_empty() && bound > 0 && self.rng.chance(30) {
            let i = self.rng.pick(&self.loop_idx).clone();
            let k = self.rng.below(parts.len());
            // (Only where duplicates are harmless: `bound` > 0.)
            parts[k] = format!("({i} % {bound}) as i64");
        }
        let e = format!(
            "Tensor::<i64>::from_vec(vec![{}], &{})",
            parts.join(", "),
            usize_list(shape)
        );
        if self.rng.chance(40) {
            let name = self.fresh_name("ix");
            self.line(&format!("let {name} = {e};"));
            format!("&{name}")
        } else {
            format!("&{e}")
        }
    }

    /// `k` positions in `0..size` (distinct if `distinct`; then
    /// `k <= size`), some spelled negative when `negative`.
    fn positions(&mut self, k: usize, size: usize, distinct: bool, negative: bool) -> Vec<i64> {
        let mut out = Vec::new();
        let mut pool: Vec<usize> = (0..size).collect();
        for _ in 0..k {
            let p = if distinct {
                let j = self.rng.below(pool.len());
                pool.swap_remove(j)
            } else {
                self.rng.below(size)
            };
            let v = p as i64;
            out.push(if negative && self.rng.chance(25) {
                v - size as i64
            } else {
                v
            });
        }
        out
    }

    /// A float tensor operand of exactly `shape` that does not overlap the
    /// written-to tensor (a place, or a fresh `randn`).
    fn source_operand(&mut self, shape: &[usize]) -> String {
        self.tensor_operand(shape)
    }

    /// A bool mask broadcasting to `shape`: a comparison of a place (maybe
    /// the written-to tensor itself) with a scalar, or a constructed mask;
    /// maybe negated; maybe bound to a name first. A `&Tensor<bool>`
    /// expression.
    fn mask(&mut self, shape: &[usize]) -> String {
        let cands: Vec<Place> = self
            .places()
            .into_iter()
            .filter(|p| broadcasts(&p.lay.shape, shape))
            .collect();
        let mut e = if !cands.is_empty() && self.rng.chance(60) {
            let p = self.rng.pick(&cands).clone();
            let cmp = *self.rng.pick(&["gt", "lt", "ge", "le"]);
            let v = *self.rng.pick(&["0.0f32", "0.5f32", "-0.25f32"]);
            format!("{}.{cmp}({v})", p.recv)
        } else {
            // All of `shape`, or a suffix of it (broadcast over the rest),
            // or one of its dims kept and the others 1.
            let ms: Vec<usize> = match self.rng.below(3) {
                0 => shape.to_vec(),
                1 => shape[self.rng.below(shape.len() + 1)..].to_vec(),
                _ if shape.is_empty() => vec![],
                _ => {
                    let d = self.rng.below(shape.len());
                    (0..shape.len())
                        .map(|k| if k == d { shape[k] } else { 1 })
                        .collect()
                }
            };
            let n: usize = ms.iter().product();
            if n > 16 {
                // (A long literal only makes the source longer.)
                let seed = self.rng.below(1000);
                format!(
                    "Tensor::<f32>::randn(&{}, {seed}).gt(0.0f32)",
                    usize_list(&ms)
                )
            } else {
                let bits: Vec<&str> = (0..n)
                    .map(|_| if self.rng.chance(45) { "true" } else { "false" })
                    .collect();
                format!(
                    "Tensor::<bool>::from_vec(vec![{}], &{})",
                    bits.join(", "),
                    usize_list(&ms)
                )
            }
        };
        if self.rng.chance(20) {
            e = format!("{e}.logical_not()");
        }
        if self.rng.chance(40) {
            let name = self.fresh_name("m");
            self.line(&format!("let {name} = {e};"));
            format!("&{name}")
        } else {
            format!("&{e}")
        }
    }

    /// A fill value: a scalar, or sometimes a 0-d tensor (`&y.sum()`).
    fn fill_value(&mut self) -> String {
        if self.rng.chance(25)
            && let Some(p) = self.pick_place(false)
        {
            self.tolerant = true;
            return format!("&{}.sum()", p.recv);
        }
        self.scalar()
    }

    /// An indexed in-place op (`index_put_`, `masked_fill_`, `scatter_`,
    /// `scatter_add_`, `index_copy_`, `index_add_`, `index_fill_`,
    /// `masked_scatter_`, `tril_`, `triu_`) on a writable place or a view
    /// chain of one, with valid indices; sometimes its functional form,
    /// bound to a fresh local instead.
    fn indexed(&mut self) {
        let Some(p) = self.pick_place_where(|p| !p.ro) else {
            return;
        };
        let (text, l) = if self.rng.chance(50) {
            let (t, l, ro, copied) = self.chain(&p, 3, false);
            // (A write into a temporary copy is lost in the original: not
            // interesting, and the macro refuses some of its forms.)
            if ro || copied {
                return;
            }
            (t, l)
        } else {
            (String::new(), p.lay.clone())
        };
        let s = l.shape.clone();
        let n = s.len();
        if n == 0 || l.numel() == 0 {
            return;
        }
        self.dest = Some(Dest {
            rid: p.rid,
            lay: l.clone(),
            strict: true,
            recv: text.is_empty().then(|| p.recv.clone()),
            elem: p.elem,
            inexact: p.inexact || text.contains('%'),
        });
        let k = self.rng.weighted(&[
            5,                          // index_put_
            5,                          // masked_fill_
            3,                          // scatter_
            3,                          // scatter_add_
            3,                          // index_copy_
            3,                          // index_add_
            3,                          // index_fill_
            2,                          // masked_scatter_
            if n >= 2 { 3 } else { 0 }, // tril_ / triu_
        ]);
        let call = match k {
            0 => self.index_put_call(&s),
            1 => {
                let m = self.mask(&s);
                let v = self.fill_value();
                format!("masked_fill_({m}, {v})")
            }
            2 | 3 => {
                let d = self.rng.below(n);
                // (At most 3 per dim: short index literals.)
                let ishape: Vec<usize> = (0..n)
                    .map(|k| self.rng.range(1, s[k].min(3) as i64) as usize)
                    .collect();
                let cnt: usize = ishape.iter().product();
                let vals = self.positions(cnt, s[d], false, false);
                let ix = self.index_tensor(&vals, &ishape, s[d]);
                let da = dim_arg(&mut self.rng, d, n);
                if k == 2 {
                    let src = if self.rng.chance(30) {
                        self.scalar()
                    } else {
                        self.source_operand(&ishape)
                    };
                    format!("scatter_({da}, {ix}, {src})")
                } else {
                    let src = self.source_operand(&ishape);
                    format!("scatter_add_({da}, {ix}, {src})")
                }
            }
            4..=6 => {
                let d = self.rng.below(n);
                let add = k == 5;
                let fill = k == 6;
                let m = if add || fill {
                    self.rng.range(1, 3) as usize
                } else {
                    self.rng.range(1, s[d].min(4) as i64) as usize
                };
                // index_copy_ wants distinct positions (PyTorch leaves the
                // winner of duplicates unspecified); index_fill_ allows
                // negative ones.
                let vals = self.positions(m, s[d], !add && !fill, fill);
                let ix = self.index_tensor(&vals, &[m], if add || fill { s[d] } else { 0 });
                let da = dim_arg(&mut self.rng, d, n);
                if fill {
                    let v = self.fill_value();
                    format!("index_fill_({da}, {ix}, {v})")
                } else {
                    let mut ss = s.clone();
                    ss[d] = m;
                    let src = self.source_operand(&ss);
                    let op = if add { "index_add_" } else { "index_copy_" };
                    format!("{op}({da}, {ix}, {src})")
                }
            }
            7 => {
                let m = self.mask(&s);
                // Enough source elements for any mask: a place (the
                // written-to tensor too: masked_scatter_ checks no overlap,
                // and reads its source first) or a fresh one.
                let numel = l.numel();
                let big: Vec<Place> = self
                    .places()
                    .into_iter()
                    .filter(|q| q.lay.numel() >= numel)
                    .collect();
                let src = if !big.is_empty() && self.rng.chance(60) {
                    self.rng.pick(&big).refx.clone()
                } else {
                    let seed = self.rng.below(1000);
                    format!("&Tensor::<f32>::randn(&[{numel}], {seed})")
                };
                format!("masked_scatter_({m}, {src})")
            }
            _ => {
                let op = if self.rng.chance(50) {
                    "tril_"
                } else {
                    "triu_"
                };
                format!("{op}({})", self.rng.range(-2, 2))
            }
        };
        self.dest = None;
        if !text.is_empty()
            && let Some(i) = p.var
        {
            self.vars[i].fresh = false;
        }
        // Sometimes the functional form, bound to a fresh local.
        if self.rng.chance(25) {
            let call = call.replacen("_(", "(", 1);
            let name = self.fresh_name("v");
            let ty = if mentions_field(&p.recv) {
                ": Tensor"
            } else {
                ""
            };
            self.line(&format!("let mut {name}{ty} = {}{text}.{call};", p.recv));
            self.declare_local(name, Lay::contiguous(&s), false, true);
        } else {
            self.line(&format!("{}{text}.{call};", p.recv));
        }
    }

    /// `index_put_(indices, values, accumulate)` on a tensor of shape `s`:
    /// index tensors for the leading dims, or `None` entries for dims taken
    /// whole and one index tensor.
    fn index_put_call(&mut self, s: &[usize]) -> String {
        let n = s.len();
        let acc = self.rng.chance(50);
        let (indices, vshape) = if n >= 2 && self.rng.chance(35) {
            // `[None, .., Some(&i), None ..]`: PyTorch's `x[:, i] = v`.
            let at = self.rng.range(1, n as i64 - 1) as usize;
            let len = self.rng.range(at as i64 + 1, n as i64) as usize;
            let m = self.rng.range(1, 3) as usize;
            let m = if acc { m } else { m.min(s[at]) };
            let vals = self.positions(m, s[at], !acc, true);
            let ix = self.index_tensor(&vals, &[m], if acc { s[at] } else { 0 });
            let entries: Vec<String> = (0..len)
                .map(|k| {
                    if k == at {
                        format!("Some({ix})")
                    } else {
                        "None".into()
                    }
                })
                .collect();
            let mut vs = s[..at].to_vec();
            vs.push(m);
            vs.extend(&s[at + 1..]);
            (format!("&[{}]", entries.join(", ")), vs)
        } else {
            let k = self.rng.range(1, n.min(2) as i64) as usize;
            let m = self.rng.range(1, 3) as usize;
            // Without accumulate, distinct positions (in the first index).
            let m = if acc { m } else { m.min(s[0]) };
            let mut ixs = Vec::new();
            for (j, &size) in s.iter().enumerate().take(k) {
                let vals = self.positions(m, size, !acc && j == 0, true);
                let bound = if acc { size } else { 0 };
                ixs.push(self.index_tensor(&vals, &[m], bound));
            }
            let mut vs = vec![m];
            vs.extend(&s[k..]);
            (format!("&[{}]", ixs.join(", ")), vs)
        };
        let values = match self.rng.below(3) {
            0 => self.scalar(),
            1 if vshape.len() > 1 => {
                // Broadcast over the index dimension: the trailing shape.
                let tail = vshape[1..].to_vec();
                self.source_operand(&tail)
            }
            _ => self.source_operand(&vshape),
        };
        format!("index_put_({indices}, {values}, {acc})")
    }

    // ---------- fusion runs ----------

    /// A run of consecutive elementwise in-place ops on one local or input
    /// (`y.sub_(&m); y.div_(&s); y.mul_(2.0); y.add_(&b);`), which
    /// `#[functionalize]` runs as one fused pass: scalar, same-shape, row,
    /// column and one-element operands (bound to names first, so that the
    /// run stays fusible), sometimes the tensor itself (`y.add_(&y)`,
    /// `y.mul_(&y.sum())`, which end a fused run), sometimes longer than
    /// the 32 ops one fused call holds; sometimes on a new value of at
    /// least 2048 elements, the size from which the fused pass runs.
    fn fusion_run(&mut self) {
        let cands: Vec<usize> = (0..self.vars.len())
            .filter(|&i| {
                let v = &self.vars[i];
                !v.moved
                    && !v.ro
                    && v.lay.numel() > 0
                    && matches!(v.kind, VKind::Local | VKind::ParamMut | VKind::ParamVal)
                    && (v.kind != VKind::Local || v.root)
            })
            .collect();
        let i = if cands.is_empty() || self.rng.chance(40) {
            let shape = if self.rng.chance(55) {
                self.big = true;
                self.rng
                    .pick(&[
                        vec![64, 48],
                        vec![2048],
                        vec![8, 16, 17],
                        vec![41, 50],
                        vec![3, 700],
                    ])
                    .clone()
            } else {
                let d0 = self.rng.range(1, 4) as usize;
                let d1 = self.rng.range(2, 5) as usize;
                vec![d0, d1]
            };
            let name = self.fresh_name("y");
            let seed = self.rng.below(1000);
            self.line(&format!(
                "let mut {name} = Tensor::<f32>::randn(&{}, {seed});",
                usize_list(&shape)
            ));
            self.declare_local(name, Lay::contiguous(&shape), false, true);
            self.vars.len() - 1
        } else {
            *self.rng.pick(&cands)
        };
        let (name, l, rid) = {
            let v = &self.vars[i];
            (v.name.clone(), v.lay.clone(), v.rid)
        };
        let own = self
            .places()
            .into_iter()
            .find(|p| p.var == Some(i))
            .map(|p| p.refx)
            .unwrap_or_else(|| format!("&{name}"));
        let len = if self.rng.chance(5) {
            self.rng.range(33, 36) as usize
        } else {
            self.rng.range(2, 5) as usize
        };
        // The named operands: a row, a column, one element, same shape.
        let s = l.shape.clone();
        let mut named: Vec<String> = Vec::new();
        let mut shapes: Vec<Vec<usize>> = vec![s.clone()];
        if let Some(&last) = s.last() {
            shapes.push(vec![last]);
        }
        if s.len() >= 2 {
            let mut c = s.clone();
            *c.last_mut().expect("rank 2") = 1;
            shapes.push(c);
        }
        if !s.is_empty() {
            shapes.push(vec![1]);
        }
        for _ in 0..self.rng.range(1, 3) {
            let shape = self.rng.pick(&shapes).clone();
            let o = self.fresh_name("o");
            let seed = self.rng.below(1000);
            self.line(&format!(
                "let {o} = Tensor::<f32>::randn(&{}, {seed});",
                usize_list(&shape)
            ));
            named.push(format!("&{o}"));
        }
        self.dest = Some(Dest {
            rid,
            lay: l.clone(),
            strict: false,
            recv: Some(name.clone()),
            elem: false,
            inexact: self.vars[i].inexact,
        });
        for _ in 0..len {
            let call = self.fusible_call(&s, &named, &own, &name);
            self.line(&format!("{name}.{call};"));
        }
        self.dest = None;
    }

    /// One fusible in-place op for a run on `name` (of shape `shape`).
    fn fusible_call(&mut self, shape: &[usize], named: &[String], own: &str, name: &str) -> String {
        let operand = |g: &mut Self| -> String {
            match g.rng.weighted(&[4, 6, 2, 1, 1]) {
                0 => g.scalar(),
                1 => g.rng.pick(named).clone(),
                2 => g.operand(shape),
                3 => own.to_string(),
                _ => {
                    g.tolerant = true;
                    format!("&{name}.sum()")
                }
            }
        };
        match self.rng.weighted(&[
            5, 4, 5, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1,
        ]) {
            0 => format!("add_({})", operand(self)),
            1 => format!("sub_({})", operand(self)),
            2 => format!("mul_({})", operand(self)),
            3 => format!("div_({})", operand(self)),
            4 => format!("add_scaled_({}, 0.5f32)", operand(self)),
            5 => format!("sub_scaled_({}, 2.0f32)", operand(self)),
            6 => "neg_()".into(),
            7 => "abs_()".into(),
            8 => "relu_()".into(),
            9 => "clamp_(-1.5f32, 2.0f32)".into(),
            10 => "clamp_min_(-0.5f32)".into(),
            11 => "clamp_max_(0.75f32)".into(),
            12 => "sqrt_()".into(),
            13 => "exp_()".into(),
            14 => "sigmoid_()".into(),
            15 => "tanh_()".into(),
            16 => "sign_()".into(),
            17 => "hardtanh_(-0.25f32, 0.5f32)".into(),
            18 => {
                // (Operands of addcmul_ and lerp_ are tensors.)
                let a = self.rng.pick(named).clone();
                let b = self.rng.pick(named).clone();
                format!("addcmul_({a}, {b}, 0.5f32)")
            }
            19 => {
                let a = self.rng.pick(named).clone();
                let b = self.rng.pick(named).clone();
                format!("addcdiv_({a}, {b}, 0.25f32)")
            }
            _ => {
                let e = self.rng.pick(named).clone();
                format!("lerp_({e}, 0.25f32)")
            }
        }
    }

    /// `let c: Tensor = helpers::checked(&x)?;` (an early exit by `?`).
    fn try_stmt(&mut self) {
        let Some(p) = self.pick_place(false) else {
            return;
        };
        self.opaque = true;
        let name = self.fresh_name("c");
        self.line(&format!(
            "let mut {name}: Tensor = helpers::checked({})?;",
            p.helper_ref
        ));
        self.declare_local(name, Lay::contiguous(&p.lay.shape), false, true);
    }

    /// `loop { if k >= n { break; } ..; k += 1; }`
    fn loop_break(&mut self) {
        let k = self.fresh_name("k");
        self.line(&format!("let mut {k} = 0usize;"));
        self.line("loop {");
        self.indent += 1;
        self.line(&format!("if {k} >= n {{"));
        self.line("    break;");
        self.line("}");
        self.indent -= 1;
        self.loop_idx.push(k.clone());
        self.pending_loop = true;
        self.sub_block();
        self.loop_idx.pop();
        self.indent += 1;
        self.line(&format!("{k} += 1;"));
        self.indent -= 1;
        self.line("}");
    }

    /// `v.resize_([..]);` on a fresh local nothing views, in its block.
    fn resize(&mut self) {
        let block = self.block();
        let cands: Vec<usize> = (0..self.vars.len())
            .filter(|&i| {
                let v = &self.vars[i];
                let rid = v.rid;
                !v.moved
                    && v.kind == VKind::Local
                    && v.root
                    && v.fresh
                    && v.block == block
                    && !self
                        .vars
                        .iter()
                        .enumerate()
                        .any(|(k, w)| k != i && w.rid == rid)
                    && !self.multis.iter().any(|m| m.rid == rid)
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let i = *self.rng.pick(&cands);
        let numel = self.vars[i].lay.numel().max(1);
        let target = self.rng.range(1, (2 * numel) as i64) as usize;
        let shape: Vec<usize> = if target.is_multiple_of(2) && self.rng.chance(50) {
            vec![2, target / 2]
        } else {
            vec![target]
        };
        let name = self.vars[i].name.clone();
        self.line(&format!("{name}.resize_({});", usize_list(&shape)));
        self.vars[i].lay = Lay::contiguous(&shape);
    }

    fn helper(&mut self) {
        self.opaque = true;
        let k = self.rng.below(8);
        match k {
            7 => {
                // A whole collection given mutably to a helper, which
                // scales its elements in place, replaces one, or moves two
                // (`regress_a_call_that_replaces_an_element_of_a_collection_input_leaves_the_callers_tensor_as_the_original`).
                let cands: Vec<usize> = (0..self.colls.len())
                    .filter(|&c| self.colls[c].mutable && !self.colls[c].hidden)
                    .collect();
                if cands.is_empty() {
                    return;
                }
                let c = *self.rng.pick(&cands);
                let name = self.colls[c].name.clone();
                // (A list field's tensors are also held by the test, which
                // reads them after the call: a move of them panics, by
                // design, so only a slice parameter's are moved.)
                let field = name.contains('.');
                let helper = match self.rng.below(if field { 2 } else { 3 }) {
                    0 => "scale_all",
                    1 => "replace_first",
                    _ => "swap_ends",
                };
                // A slice parameter is passed on as is; a list field by `&mut`.
                let arg = if field { format!("&mut {name}") } else { name };
                self.line(&format!("helpers::{helper}({arg});"));
            }
            5 => {
                // A temporary view moved into a helper that mutates it.
                let Some(p) = self.pick_place(true) else {
                    return;
                };
                let arg = self.temp_view_arg(&p);
                let Some(view) = arg.strip_prefix('&').filter(|a| a.contains('(')) else {
                    return;
                };
                self.line(&format!("helpers::fill_owned({view});"));
            }
            6 => {
                // A macro that mutates the tensor or view it is given.
                let Some(p) = self.pick_place(true) else {
                    return;
                };
                if p.var.is_none() || p.elem {
                    return;
                }
                let arg = self.temp_view_arg(&p);
                let arg = arg.strip_prefix('&').unwrap_or(&p.recv).to_string();
                let name = arg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                match self.rng.below(3) {
                    // A name in a macro pattern that wants one, and a
                    // format capture (`{v:?}`, a read): the macro must hand
                    // both the tensor itself.
                    0 if name => self.line(&format!("funcz_difftest::bump_name!({arg});")),
                    1 if name => self.line(&format!("let _ = format!(\"{{{arg}:?}}\");")),
                    _ => self.line(&format!("funcz_difftest::bump_arg!({arg});")),
                }
            }
            0 => {
                // &mut: always assumed mutated.
                let ps: Vec<Place> = self
                    .places()
                    .into_iter()
                    .filter(|p| !p.ro && p.mutref.is_some())
                    .collect();
                if ps.is_empty() {
                    return;
                }
                let p = self.rng.pick(&ps).clone();
                // An element may be replaced instead (a new tensor in its
                // slot: `regress_element_replaced_by_a_call`).
                let helper = if p.elem && self.rng.chance(40) {
                    "replace_scaled"
                } else {
                    "scale_mut"
                };
                self.line(&format!(
                    "helpers::{helper}({});",
                    p.mutref.expect("filtered")
                ));
            }
            1 => {
                // & that mutates through a view.
                let Some(p) = self.pick_place(true) else {
                    return;
                };
                let arg = self.temp_view_arg(&p);
                self.line(&format!("helpers::fill_first({arg});"));
            }
            2 => {
                // & that mutates only when asked.
                let Some(p) = self.pick_place(true) else {
                    return;
                };
                let arg = self.temp_view_arg(&p);
                self.line(&format!("helpers::bump_if({arg}, flag);"));
            }
            3 => {
                // A method outside the op table.
                let Some(p) = self.pick_place(true) else {
                    return;
                };
                // An element may replace itself instead (a new tensor in
                // its slot, through a loop variable or an index:
                // `regress_a_method_that_replaces_self_on_a_loop_variable_or_an_element_leaves_the_callers_tensor_as_the_original`).
                if p.elem && p.mutref.is_some() && self.rng.chance(30) {
                    self.line(&format!("{}.reset_scaled();", p.recv));
                    return;
                }
                // Sometimes on a view of the place: a `*_copy` in copies
                // mode, whose mutation must still reach the place (it was
                // lost before the fix of `unknown_method_on_a_temporary_view`).
                if self.rng.chance(50) {
                    self.line(&format!("{}.alias().bump();", p.recv));
                } else {
                    self.line(&format!("{}.bump();", p.recv));
                }
            }
            _ => {
                // A helper that only reads.
                let Some(p) = self.pick_place(false) else {
                    return;
                };
                let name = self.fresh_name("h");
                self.line(&format!(
                    "let mut {name}: Tensor = helpers::double({});",
                    p.helper_ref
                ));
                self.declare_local(name, Lay::contiguous(&p.lay.shape), false, true);
            }
        }
    }

    /// The argument of a helper that mutates through a `&Tensor`: the
    /// place, or sometimes a temporary view of it (`helper(&x.narrow(0, 0,
    /// 2))`, issue 11), whose mutation must reach the place.
    fn temp_view_arg(&mut self, p: &Place) -> String {
        if self.rng.chance(40) {
            let (text, _, ro, copied) = self.chain(p, 2, false);
            if !text.is_empty() && !ro && !copied {
                if let Some(i) = p.var {
                    self.vars[i].fresh = false;
                }
                return format!("&{}{text}", p.recv);
            }
        }
        p.helper_ref.clone()
    }

    fn cond(&mut self) -> String {
        match self.rng.below(4) {
            0 => "flag".into(),
            1 => "!flag".into(),
            2 => format!("n > {}", self.rng.below(3)),
            _ => format!("n % 2 == {}", self.rng.below(2)),
        }
    }

    fn sub_block(&mut self) {
        self.open();
        let count = self.rng.range(1, 3) as usize;
        self.stmts(count);
        self.close();
    }

    fn if_stmt(&mut self) {
        let c = self.cond();
        self.line(&format!("if {c} {{"));
        self.sub_block();
        if self.rng.chance(60) {
            self.line("} else {");
            self.sub_block();
        }
        self.line("}");
    }

    fn match_stmt(&mut self) {
        self.line("match n % 3 {");
        for arm in ["0", "1", "_"] {
            self.indent += 1;
            self.line(&format!("{arm} => {{"));
            self.sub_block();
            self.line("}");
            self.indent -= 1;
        }
        self.line("}");
    }

    fn for_range(&mut self) {
        let i = self.fresh_name("i");
        let bound = if self.rng.chance(50) {
            "n".to_string()
        } else {
            self.rng.range(1, 3).to_string()
        };
        self.line(&format!("for {i} in 0..{bound} {{"));
        self.loop_idx.push(i);
        self.pending_loop = true;
        self.sub_block();
        self.loop_idx.pop();
        self.line("}");
    }

    fn while_stmt(&mut self) {
        let k = self.fresh_name("k");
        self.line(&format!("let mut {k} = 0usize;"));
        self.line(&format!("while {k} < n {{"));
        self.loop_idx.push(k.clone());
        self.pending_loop = true;
        self.sub_block();
        self.loop_idx.pop();
        self.indent += 1;
        self.line(&format!("{k} += 1;"));
        self.indent -= 1;
        self.line("}");
    }

    fn for_unbind(&mut self) {
        let Some(p) = self.pick_place_where(|p| !p.elem) else {
            return;
        };
        let dims: Vec<usize> = (0..p.lay.ndim()).filter(|&d| p.lay.shape[d] >= 1).collect();
        if dims.is_empty() {
            return;
        }
        let d = *self.rng.pick(&dims);
        let elem = View::Select(d as i64, lit(0)).apply(&p.lay).0;
        let r = self.fresh_name("r");
        let da = dim_arg(&mut self.rng, d, p.lay.ndim());
        self.line(&format!("for {r} in {}.unbind({da}) {{", p.recv));
        if let Some(i) = p.var {
            self.vars[i].fresh = false;
        }
        let (family, ro) = self.derive_family(&p, false, p.ro);
        self.pending_loop = true;
        self.open();
        let block = self.block();
        self.vars.push(Var {
            family,
            name: r,
            kind: VKind::LoopView,
            lay: elem,
            ro,
            strided_ok: false,
            block,
            fresh: false,
            root: false,
            moved: false,
            rid: p.rid,
            inexact: true,
            same: None,
        });
        let count = self.rng.range(1, 3) as usize;
        self.stmts(count);
        self.close();
        self.line("}");
    }

    fn for_slice(&mut self) {
        let cands: Vec<usize> = (0..self.colls.len())
            .filter(|&c| !self.colls[c].hidden)
            .collect();
        if cands.is_empty() {
            return;
        }
        let c = *self.rng.pick(&cands);
        let coll = self.colls[c].clone();
        let t = self.fresh_name("t");
        let kind = if coll.mutable {
            // Sometimes through an adaptor that yields the same elements
            // (`regress_a_call_that_replaces_an_element_through_an_iterator_adaptor_leaves_the_callers_tensor_as_the_original`).
            let adaptor = match self.rng.below(6) {
                0 => ".rev()",
                1 => ".skip(1)",
                2 => ".step_by(2)",
                _ => "",
            };
            self.line(&format!("for {t} in {}.iter_mut(){adaptor} {{", coll.name));
            VKind::IterMut
        } else {
            let j = self.fresh_name("j");
            self.line(&format!(
                "for ({j}, {t}) in {}.iter().enumerate() {{",
                coll.name
            ));
            self.loop_idx.push(j);
            VKind::IterRef
        };
        self.colls[c].hidden = true;
        self.pending_loop = true;
        self.open();
        let block = self.block();
        self.vars.push(Var {
            name: t,
            kind,
            lay: coll.elem.clone(),
            ro: false,
            strided_ok: false,
            block,
            fresh: false,
            root: false,
            moved: false,
            family: None,
            rid: 0,
            inexact: false,
            same: None,
        });
        let count = self.rng.range(1, 3) as usize;
        self.stmts(count);
        self.close();
        if !coll.mutable {
            self.loop_idx.pop();
        }
        self.colls[c].hidden = false;
        self.line("}");
    }

    /// One output expression (cloned, so it can be used anywhere).
    fn output_expr(&mut self) -> String {
        let Some(p) = self.pick_place(false) else {
            return "Tensor::<f32>::zeros(&[1])".into();
        };
        match self.rng.below(6) {
            0 => {
                let (t, _, _, _) = self.chain(&p, 2, true);
                format!("{}{t}.clone()", p.recv)
            }
            1 => format!("{} * 1.0f32", p.refx),
            _ => format!("{}.clone()", p.recv),
        }
    }

    fn outputs_tuple(&mut self, tail: bool) -> String {
        let mut outs = Vec::new();
        for _ in 0..self.outputs {
            // In the tail, sometimes move a local (possibly a stale view).
            if tail && self.rng.chance(40) {
                let cands: Vec<usize> = (0..self.vars.len())
                    .filter(|&i| {
                        let v = &self.vars[i];
                        !v.moved && matches!(v.kind, VKind::Local | VKind::ParamVal)
                    })
                    .collect();
                if !cands.is_empty() {
                    let i = *self.rng.pick(&cands);
                    self.vars[i].moved = true;
                    outs.push(self.vars[i].name.clone());
                    continue;
                }
            }
            outs.push(self.output_expr());
        }
        let t = if outs.len() == 1 {
            outs.pop().expect("one")
        } else {
            format!("({})", outs.join(", "))
        };
        if self.fallible { format!("Ok({t})") } else { t }
    }

    fn early_return(&mut self) {
        let c = self.cond();
        let c2 = format!("n == {}", self.rng.below(4));
        self.line(&format!("if {c} && {c2} {{"));
        self.indent += 1;
        let out = self.outputs_tuple(false);
        self.line(&format!("return {out};"));
        self.indent -= 1;
        self.line("}");
    }

    fn reassign(&mut self) {
        let block = self.block();
        let cands: Vec<usize> = (0..self.vars.len())
            .filter(|&i| {
                let v = &self.vars[i];
                // (An owned parameter too: issue 11, the assigned value was
                // written into the caller's tensor.)
                !v.moved && ((v.kind == VKind::Local && v.root) || v.kind == VKind::ParamVal)
            })
            .collect();
        if cands.is_empty() {
            return;
        }
        let i = *self.rng.pick(&cands);
        // In a loop, views of the old value made before the loop would be
        // mutated after the assignment in the next iteration (refused).
        let rid = self.vars[i].rid;
        let has_views = self
            .vars
            .iter()
            .enumerate()
            .any(|(k, v)| k != i && v.rid == rid)
            || self.multis.iter().any(|m| m.rid == rid);
        if let Some(&lb) = self.loop_blocks.last()
            && self.vars[i].block < lb
            && has_views
        {
            return;
        }
        let (e, shape) = self.fresh_value();
        let same_block = self.vars[i].block == block;
        let cur = &self.vars[i].lay;
        if !same_block && (shape != cur.shape || !cur.is_contiguous()) {
            return;
        }
        let name = self.vars[i].name.clone();
        self.line(&format!("{name} = {e};"));
        // The views of the old value are frozen (see `Var::rid`).
        let rid = self.vars[i].rid;
        for (k, v) in self.vars.iter_mut().enumerate() {
            if k != i && v.rid == rid {
                v.ro = true;
            }
        }
        for m in self.multis.iter_mut().filter(|m| m.rid == rid) {
            m.ro = true;
        }
        let v = &mut self.vars[i];
        v.lay = Lay::contiguous(&shape);
        v.strided_ok = true;
    }
}

/// `let mut v1 = s.b.slice(..);` becomes `let mut v1: Tensor = ...`: a
/// tensor computed from a struct field the body may never mutate has a
/// type the macro cannot see, and the annotation (which the macro's help
/// asks for) lets it track the value (`v1 += 3.0` functionalized). Only
/// single tensors are typed (`v`, `s`, `w` names; `p` names are `Vec`s).
fn type_field_lets(line: &str) -> String {
    let Some(rest) = line.strip_prefix("let mut ") else {
        return line.to_string();
    };
    let Some((name, rhs)) = rest.split_once(" = ") else {
        return line.to_string();
    };
    let single = name.len() > 1
        && name.starts_with(['v', 's', 'w'])
        && name[1..].bytes().all(|c| c.is_ascii_digit());
    // (A view of a field stays untyped: it is a view the macro cannot
    // see, so typing it would only make it checked fresh, and refused.)
    let functional = [
        " + ", " * ", " - ", ".clone()", ".mul(", ".neg()", ".relu()", ".tanh()", ".sum",
    ]
    .iter()
    .any(|f| rhs.contains(f));
    if single && functional && mentions_field(rhs) {
        format!("let mut {name}: Tensor = {rhs}")
    } else {
        line.to_string()
    }
}

/// Whether `e` reads a field of the struct parameter (`s.a`, `s.b`, or
/// `self.a`, `self.b` in a method).
fn mentions_field(e: &str) -> bool {
    let b = e.as_bytes();
    ["s.", "self."].iter().any(|pat| {
        e.match_indices(pat).any(|(i, _)| {
            let before_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
            let after = b.get(i + pat.len() + 1);
            before_ok
                && matches!(b.get(i + pat.len()), Some(b'a' | b'b'))
                && !after.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        })
    })
}

/// The variable an expression like `p3[1]` or `x0` names.
fn base_name(recv: &str) -> String {
    recv.split('[').next().unwrap_or(recv).to_string()
}

fn broadcasts(from: &[usize], to: &[usize]) -> bool {
    if from.len() > to.len() {
        return false;
    }
    from.iter()
        .rev()
        .zip(to.iter().rev())
        .all(|(&f, &t)| f == t || f == 1)
}

fn usize_list(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// `count` random chains of views, as the generator makes them, each from
/// a random contiguous shape: the start layout and the views (a test checks
/// the model's layouts against the runtime's).
pub fn random_chains(seed: u64, count: usize) -> Vec<(Lay, Vec<View>)> {
    let mut g = Gen::new(Rng::new(seed), 1);
    (0..count)
        .map(|_| {
            let n = g.rng.range(0, 3) as usize;
            let shape: Vec<usize> = (0..n).map(|_| g.rng.range(1, 4) as usize).collect();
            let start = Lay::contiguous(&shape);
            let mut l = start.clone();
            let mut views = Vec::new();
            for k in 0..g.rng.range(1, 4) {
                let v = if k == 0 && g.rng.chance(20) {
                    g.random_as_strided(l.numel(), true)
                } else {
                    g.random_view(&l, true)
                };
                let Some(v) = v else { break };
                l = v.apply(&l).0;
                views.push(v);
            }
            (start, views)
        })
        .collect()
}

/// Generates program `index` of run `seed`.
pub fn generate(seed: u64, index: usize) -> Program {
    let pseed = program_seed(seed, index);
    let mut rng = Rng::new(pseed);
    // A few related shapes, so that operands often match.
    let a = rng.range(1, 4) as usize;
    let b = rng.range(2, 4) as usize;
    let c = rng.range(1, 3) as usize;
    let pool: Vec<Vec<usize>> = vec![
        vec![a, b],
        vec![b, a],
        vec![a, b, c],
        vec![b],
        vec![a * b],
        vec![b, b],
    ];
    let nparams = rng.range(1, 3) as usize;
    let mut params = Vec::new();
    for k in 0..nparams {
        let passing = *rng.pick(&[
            Passing::Ref,
            Passing::Ref,
            Passing::RefMut,
            Passing::RefMut,
            Passing::Value,
        ]);
        // Sometimes an input of at least 2048 elements (the fused pass).
        let shape = if rng.chance(4) {
            vec![48, 64]
        } else {
            rng.pick(&pool).clone()
        };
        // Sometimes a name the macro's own hidden names are built from (a
        // parameter called `input` once collided with `__fz_input_0`).
        let pool = [
            "input", "state", "base", "view", "place", "version", "call", "ret",
        ];
        let name = match rng.chance(15).then(|| rng.pick(&pool).to_string()) {
            Some(n) if params.iter().all(|p: &Param| p.name != n) => n,
            _ => format!("x{k}"),
        };
        params.push(Param {
            name,
            passing,
            shape,
            count: 1,
        });
    }
    let method = rng.chance(50);
    if rng.chance(20) {
        params.push(Param {
            name: if method { "self" } else { "s" }.into(),
            passing: Passing::Pair,
            shape: rng.pick(&pool).clone(),
            count: 2,
        });
    }
    if rng.chance(25) {
        let passing = match rng.below(10) {
            0..=4 => Passing::SliceMut,
            5..=7 => Passing::ListField,
            _ => Passing::Slice,
        };
        params.push(Param {
            name: if passing == Passing::ListField {
                "l"
            } else {
                "d"
            }
            .into(),
            passing,
            shape: rng.pick(&pool).clone(),
            count: rng.range(1, 3) as usize,
        });
        // Sometimes optimizer state beside it: a second `&mut [Tensor]` of
        // the same shapes (`params`, `exp_avg`), whose elements a run
        // updates together with `d`'s (see `Gen::elem_run`).
        if passing == Passing::SliceMut && rng.chance(40) {
            let first = params.last().expect("pushed").clone();
            params.push(Param {
                name: "e".into(),
                ..first
            });
        }
    }
    let method = method && params.iter().any(|p| p.passing == Passing::Pair);
    let alias = rng.chance(15);
    let fuse_small = rng.chance(40);
    let outputs = rng.range(1, 3) as usize;
    let fallible = rng.chance(15);
    let mut g = Gen::new(rng, outputs);
    g.fallible = fallible;
    g.big = params
        .iter()
        .any(|p| p.shape.iter().product::<usize>() >= 2048);
    for p in &params {
        let lay = Lay::contiguous(&p.shape);
        if alias && matches!(p.passing, Passing::Ref | Passing::RefMut | Passing::Value) {
            g.line(&format!("{}.mul_(1.0f32);", p.name));
        }
        let kind = match p.passing {
            Passing::Ref => VKind::ParamRef,
            Passing::RefMut => VKind::ParamMut,
            Passing::Value => VKind::ParamVal,
            Passing::Pair => {
                // State that the function updates, as optimizer state or a
                // module's buffers: each field is mutated (so the macro
                // sees it is a tensor and tracks it); the rest of the body
                // reads and mutates it like any input.
                for field in ["a", "b"] {
                    g.line(&format!("{}.{field}.mul_(1.0f32);", p.name));
                }
                g.counter = Some(p.name.clone());
                for field in ["a", "b"] {
                    g.next_rid += 1;
                    g.vars.push(Var {
                        name: format!("{}.{field}", p.name),
                        kind: VKind::Field,
                        lay: lay.clone(),
                        ro: false,
                        strided_ok: true,
                        block: 0,
                        fresh: false,
                        root: false,
                        moved: false,
                        family: None,
                        rid: g.next_rid,
                        inexact: false,
                        same: None,
                    });
                }
                continue;
            }
            Passing::ListField => {
                // Optimizer state: an element is updated first (the macro
                // sees the field holds tensors), as with `Pair`.
                g.line(&format!("{}.xs[0].mul_(1.0f32);", p.name));
                g.list_counter = Some(p.name.clone());
                g.colls.push(Coll {
                    name: format!("{}.xs", p.name),
                    elem: lay,
                    count: p.count,
                    mutable: true,
                    hidden: false,
                });
                continue;
            }
            Passing::Slice | Passing::SliceMut => {
                g.colls.push(Coll {
                    name: p.name.clone(),
                    elem: lay,
                    count: p.count,
                    mutable: p.passing == Passing::SliceMut,
                    hidden: false,
                });
                continue;
            }
        };
        g.vars.push(Var {
            name: p.name.clone(),
            kind,
            lay,
            ro: false,
            strided_ok: true,
            block: 0,
            fresh: false,
            root: false,
            moved: false,
            family: None,
            rid: {
                g.next_rid += 1;
                g.next_rid
            },
            inexact: false,
            same: None,
        });
    }
    // (Fewer than the 6..=16 of before the indexed writes and fusion runs,
    // whose statements are longer: the default run builds in about the same
    // time.)
    g.stmts_left = g.rng.range(5, 13) as usize;
    while g.stmts_left > 0 {
        g.stmts_left -= 1;
        g.stmt();
    }
    let tail = g.outputs_tuple(true);
    g.line(&tail);
    let mut scalars = vec![(g.rng.below(4), true), (g.rng.below(4), false)];
    if scalars[0] == scalars[1] {
        scalars.pop();
    }
    Program {
        index,
        seed: pseed,
        params,
        outputs,
        body: g.body,
        tolerant: g.tolerant,
        opaque: g.opaque,
        scalars,
        fallible,
        method,
        alias,
        big: g.big,
        fuse_small,
    }
}

// ---------------------------------------------------------------------------
// rendering the test sources

/// Renders shard `shard` of `shards` (programs `i` with `i % shards ==
/// shard`) as a Rust source file defining the programs, their runners and
/// a `PROGRAMS` table.
pub fn render_shard(seed: u64, programs: usize, shards: usize, shard: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// @generated by funcz-difftest/build.rs: seed {seed}, programs {programs}, shard {shard} of {shards}.\n"
    );
    out.push_str("use funcz::Tensor;\n");
    out.push_str("use funcz_difftest::helpers::{self, HelperExt};\n\n");
    out.push_str("/// `Tensor` by another name (issue 11: aliases in signatures and bindings).\n");
    out.push_str("type Tn = Tensor;\n\n");
    out.push_str(
        "/// State with tensor fields, for programs that are `&mut self` methods.\n\
         pub struct Module {\n    pub a: Tensor,\n    pub b: Tensor,\n    pub n: f32,\n}\n\n",
    );
    let mut table = String::new();
    for index in (shard..programs).step_by(shards) {
        let p = generate(seed, index);
        render_program(&mut out, &p);
        let inputs: Vec<String> = p
            .params
            .iter()
            .flat_map(|q| std::iter::repeat_n(usize_list(&q.shape), q.count))
            .map(|s| format!("&{s}"))
            .collect();
        let scalars: Vec<String> = p
            .scalars
            .iter()
            .map(|(n, f)| format!("({n}, {f})"))
            .collect();
        let _ = writeln!(
            table,
            "    funcz_difftest::Program {{ index: {index}, seed: {seed}, source: {:?}, inputs: &[{}], \
             tolerant: {}, opaque: {}, scalars: &[{}], fuse_small: {}, run: run_{index} }},",
            p.source(&format!("p{index}"), ""),
            inputs.join(", "),
            p.tolerant,
            p.opaque,
            scalars.join(", "),
            p.fuse_small,
        );
    }
    out.push_str("pub static PROGRAMS: &[funcz_difftest::Program] = &[\n");
    out.push_str(&table);
    out.push_str("];\n");
    out
}

fn render_program(out: &mut String, p: &Program) {
    let i = p.index;
    if p.method {
        out.push_str("impl Module {\n");
    }
    let _ = writeln!(
        out,
        "{}",
        p.source(&format!("p{i}"), "#[allow(unused_mut, unused_variables)]\n")
    );
    let _ = writeln!(
        out,
        "{}",
        p.source(&format!("p{i}_f"), "#[funcz::functionalize]\n")
    );
    let _ = writeln!(
        out,
        "{}",
        p.source(
            &format!("p{i}_fv"),
            "#[funcz::functionalize(remove = \"mutations_and_views\")]\n"
        )
    );
    if p.method {
        out.push_str("}\n\n");
    }
    // The runner: destructure the inputs and call variant `v`.
    let mut pats = Vec::new();
    let mut args = Vec::new();
    let mut has_rest = false;
    // Collection parameters take their elements from `rest`, split
    // between them when there are several.
    let colls: Vec<usize> = p
        .params
        .iter()
        .filter(|q| {
            matches!(
                q.passing,
                Passing::Slice | Passing::SliceMut | Passing::ListField
            )
        })
        .map(|q| q.count)
        .collect();
    let mut split = String::new();
    let mut rests: Vec<String> = if colls.len() < 2 {
        vec!["rest".to_string()]
    } else {
        let mut names = Vec::new();
        let mut from = "rest".to_string();
        for (c, count) in colls.iter().enumerate() {
            if c + 1 == colls.len() {
                names.push(from.clone());
            } else {
                let _ = write!(
                    split,
                    "let (s{c}, t{c}) = {from}.split_at_mut({count});\n    "
                );
                names.push(format!("s{c}"));
                from = format!("t{c}");
            }
        }
        names
    };
    rests.reverse();
    for (k, q) in p.params.iter().enumerate() {
        match q.passing {
            Passing::Ref => {
                pats.push(format!("a{k}"));
                args.push(format!("&*a{k}"));
            }
            Passing::RefMut => {
                pats.push(format!("a{k}"));
                args.push(format!("a{k}"));
            }
            Passing::Value => {
                pats.push(format!("a{k}"));
                args.push(format!("a{k}.shallow_clone()"));
            }
            Passing::Pair if p.method => {
                pats.push(format!("a{k}"));
                pats.push(format!("b{k}"));
                args.insert(
                    0,
                    format!(
                        "&mut Module {{ a: a{k}.shallow_clone(), b: b{k}.shallow_clone(), n: 0.5 }}"
                    ),
                );
            }
            Passing::Pair => {
                pats.push(format!("a{k}"));
                pats.push(format!("b{k}"));
                args.push(format!(
                    "&mut helpers::Pair {{ a: a{k}.shallow_clone(), b: b{k}.shallow_clone(), n: 0.5 }}"
                ));
            }
            Passing::Slice => {
                has_rest = true;
                let r = rests.pop().expect("one per collection");
                args.push(format!("&*{r}"));
            }
            Passing::SliceMut => {
                has_rest = true;
                let r = rests.pop().expect("one per collection");
                args.push(r);
            }
            Passing::ListField => {
                has_rest = true;
                let r = rests.pop().expect("one per collection");
                args.push(format!(
                    "&mut helpers::Lists {{ xs: {r}.iter().map(|t| t.shallow_clone()).collect(), counts: vec![0.5, 2.0] }}"
                ));
            }
        }
    }
    if has_rest {
        pats.push("rest @ ..".into());
    }
    args.push("n".into());
    args.push("flag".into());
    let outs = if p.outputs == 1 {
        "vec![r]".to_string()
    } else {
        let parts: Vec<String> = (0..p.outputs).map(|k| format!("r.{k}")).collect();
        format!("vec![{}]", parts.join(", "))
    };
    // An `Err` becomes one tensor holding the message's length.
    let outs = if p.fallible {
        format!(
            "match r {{ Ok(r) => {outs}, Err(e) => vec![Tensor::from_vec(vec![e.len() as f32], &[1])] }}"
        )
    } else {
        outs
    };
    let _ = writeln!(
        out,
        "fn run_{i}(v: usize, ins: &mut [Tensor], n: usize, flag: bool) -> Vec<Tensor> {{\n    \
         let [{}] = ins else {{ unreachable!(\"input count\") }};\n    \
         {split}let f = [{m}p{i}, {m}p{i}_f, {m}p{i}_fv][v];\n    \
         let r = f({});\n    \
         {outs}\n}}\n",
        pats.join(", "),
        args.join(", "),
        m = if p.method { "Module::" } else { "" },
    );
}
