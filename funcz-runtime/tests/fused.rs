//! `rt::fused_root` / `rt::fused_value` against the op-by-op code
//! `#[functionalize]` generates for the same in-place ops:
//!
//! ```text
//! if can_donate_root(&y, &s) { y.OP_(args); donated_root("OP_", "OP", &mut y, &mut s); }
//! else { let new = y.OP(args); commit_root("OP_", &mut y, &mut s, new); }
//! ```
//!
//! Random chains (every fusable op, operands of every broadcast kind the
//! fused pass takes and of kinds it must refuse, contiguous, strided,
//! offset, shared and input roots, 0-d and empty tensors, NaN/inf/-0.0
//! values) run both ways on two identical set-ups; the values (bit for
//! bit), shapes and strides, storage versions, `Tracked` states, caller
//! tensors after `write_back`, untouched operands, panic messages and, when
//! a trace records, the printed graphs must agree. Each case also checks
//! that the one-pass path was taken exactly when it should be
//! (`rt::fused_passes`).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz_runtime::rt::{self, Fusion, Tracked};
use funcz_runtime::trace::Tracer;
use funcz_runtime::{FloatElement, Tensor};
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// quiet expected panics (only while `QUIET` is set on this thread)

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

fn install_quiet_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                prev(info);
            }
        }));
    });
}

/// Runs `f`, returning its panic message if it panics.
fn catching<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_quiet_hook();
    QUIET.with(|q| q.set(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

// ---------------------------------------------------------------------------
// the chains

/// An operand: a scalar, a borrowed pool tensor, or an owned handle of one.
#[derive(Clone, Copy, Debug)]
enum Arg {
    S(f64),
    R(usize),
    O(usize),
}

#[derive(Clone, Debug)]
enum Op {
    Add(Arg),
    Sub(Arg),
    Mul(Arg),
    Div(Arg),
    AddScaled(Arg, f64),
    SubScaled(Arg, f64),
    Neg,
    Abs,
    Relu,
    Sign,
    Zero,
    Fill(f64),
    Clamp(Option<f64>, Option<f64>),
    ClampMin(f64),
    ClampMax(f64),
    Hardtanh(f64, f64),
    Sqrt,
    Rsqrt,
    Reciprocal,
    Exp,
    Log,
    Sigmoid,
    Tanh,
    Sin,
    Cos,
    Erf,
    Floor,
    Round,
    Pow(Arg),
    Addcmul(usize, usize, f64),
    Addcdiv(usize, usize, f64),
    Addcmul1(usize, usize),
    Addcdiv1(usize, usize),
    Lerp(usize, Arg),
}

impl Op {
    /// The pool tensors it reads.
    fn tensors(&self) -> Vec<usize> {
        let arg = |a: &Arg| match *a {
            Arg::S(_) => vec![],
            Arg::R(i) | Arg::O(i) => vec![i],
        };
        match self {
            Op::Add(a) | Op::Sub(a) | Op::Mul(a) | Op::Div(a) | Op::Pow(a) => arg(a),
            Op::AddScaled(a, _) | Op::SubScaled(a, _) => arg(a),
            Op::Addcmul(i, j, _) | Op::Addcdiv(i, j, _) => vec![*i, *j],
            Op::Addcmul1(i, j) | Op::Addcdiv1(i, j) => vec![*i, *j],
            Op::Lerp(i, w) => [vec![*i], arg(w)].concat(),
            _ => vec![],
        }
    }

    /// True if the op itself allows the one-pass path.
    fn fusable(&self) -> bool {
        !matches!(self, Op::Clamp(None, None))
    }
}

fn sc<T: FloatElement>(v: f64) -> T {
    T::from_f64(v)
}

/// One step as generated code runs it (the donate-or-commit pattern).
macro_rules! upd {
    ($y:ident, $s:ident, $inp:ident, $fun:ident ( $($a:expr),* )) => {{
        if rt::can_donate_root(&*$y, &*$s) {
            $y.$inp($($a),*);
            rt::donated_root(stringify!($inp), $y, $s);
        } else {
            let new = $y.$fun($($a),*);
            rt::commit_root(stringify!($inp), $y, $s, new);
        }
    }};
}

/// `upd!` with the operand `$arg` passed as the type it is (`T`,
/// `&Tensor<T>` or an owned `Tensor<T>`), bound to `$o`.
macro_rules! with_arg {
    ($arg:expr, $pool:ident, |$o:ident| $body:expr) => {
        match $arg {
            Arg::S(v) => {
                let $o: T = sc(v);
                $body
            }
            Arg::R(i) => {
                let $o = &$pool[i];
                $body
            }
            Arg::O(i) => {
                let $o = $pool[i].shallow_clone();
                $body
            }
        }
    };
}

/// Runs `op` on the tracked root `y` the unfused way.
fn reference_step<T: FloatElement>(
    y: &mut Tensor<T>,
    s: &mut Tracked,
    op: &Op,
    pool: &[Tensor<T>],
) {
    match *op {
        Op::Add(a) => with_arg!(a, pool, |o| upd!(y, s, add_, add(o))),
        Op::Sub(a) => with_arg!(a, pool, |o| upd!(y, s, sub_, sub(o))),
        Op::Mul(a) => with_arg!(a, pool, |o| upd!(y, s, mul_, mul(o))),
        Op::Div(a) => with_arg!(a, pool, |o| upd!(y, s, div_, div(o))),
        Op::AddScaled(a, al) => {
            with_arg!(a, pool, |o| upd!(y, s, add_scaled_, add_scaled(o, sc(al))))
        }
        Op::SubScaled(a, al) => {
            with_arg!(a, pool, |o| upd!(y, s, sub_scaled_, sub_scaled(o, sc(al))))
        }
        Op::Neg => upd!(y, s, neg_, neg()),
        Op::Abs => upd!(y, s, abs_, abs()),
        Op::Relu => upd!(y, s, relu_, relu()),
        Op::Sign => upd!(y, s, sign_, sign()),
        Op::Zero => upd!(y, s, zero_, zero()),
        Op::Fill(v) => upd!(y, s, fill_, fill(sc(v))),
        Op::Clamp(lo, hi) => {
            let (lo, hi): (Option<T>, Option<T>) = (lo.map(sc), hi.map(sc));
            upd!(y, s, clamp_, clamp(lo, hi))
        }
        Op::ClampMin(v) => upd!(y, s, clamp_min_, clamp_min(sc(v))),
        Op::ClampMax(v) => upd!(y, s, clamp_max_, clamp_max(sc(v))),
        Op::Hardtanh(lo, hi) => upd!(y, s, hardtanh_, hardtanh(sc(lo), sc(hi))),
        Op::Sqrt => upd!(y, s, sqrt_, sqrt()),
        Op::Rsqrt => upd!(y, s, rsqrt_, rsqrt()),
        Op::Reciprocal => upd!(y, s, reciprocal_, reciprocal()),
        Op::Exp => upd!(y, s, exp_, exp()),
        Op::Log => upd!(y, s, log_, log()),
        Op::Sigmoid => upd!(y, s, sigmoid_, sigmoid()),
        Op::Tanh => upd!(y, s, tanh_, tanh()),
        Op::Sin => upd!(y, s, sin_, sin()),
        Op::Cos => upd!(y, s, cos_, cos()),
        Op::Erf => upd!(y, s, erf_, erf()),
        Op::Floor => upd!(y, s, floor_, floor()),
        Op::Round => upd!(y, s, round_, round()),
        Op::Pow(a) => with_arg!(a, pool, |o| upd!(y, s, pow_, pow(o))),
        Op::Addcmul(i, j, v) => upd!(y, s, addcmul_, addcmul(&pool[i], &pool[j], sc(v))),
        Op::Addcdiv(i, j, v) => upd!(y, s, addcdiv_, addcdiv(&pool[i], &pool[j], sc(v))),
        Op::Addcmul1(i, j) => upd!(y, s, addcmul1_, addcmul1(&pool[i], &pool[j])),
        Op::Addcdiv1(i, j) => upd!(y, s, addcdiv1_, addcdiv1(&pool[i], &pool[j])),
        Op::Lerp(i, w) => with_arg!(w, pool, |o| upd!(y, s, lerp_, lerp(&pool[i], o))),
    }
}

/// `with_arg!` for a step, which borrows every tensor operand (generated
/// code passes an owned one as a reference to a temporary, see
/// `rt::StepArg`).
macro_rules! with_step_arg {
    ($arg:expr, $pool:ident, |$o:ident| $body:expr) => {
        match $arg {
            Arg::S(v) => {
                let $o: T = sc(v);
                $body
            }
            Arg::R(i) | Arg::O(i) => {
                let $o = &$pool[i];
                $body
            }
        }
    };
}

/// `f` with `op` appended.
fn push<'a, T: FloatElement>(f: Fusion<'a, T>, op: &Op, pool: &'a [Tensor<T>]) -> Fusion<'a, T> {
    match *op {
        Op::Add(a) => with_step_arg!(a, pool, |o| f.add_(o)),
        Op::Sub(a) => with_step_arg!(a, pool, |o| f.sub_(o)),
        Op::Mul(a) => with_step_arg!(a, pool, |o| f.mul_(o)),
        Op::Div(a) => with_step_arg!(a, pool, |o| f.div_(o)),
        Op::AddScaled(a, al) => with_step_arg!(a, pool, |o| f.add_scaled_(o, sc(al))),
        Op::SubScaled(a, al) => with_step_arg!(a, pool, |o| f.sub_scaled_(o, sc(al))),
        Op::Neg => f.neg_(),
        Op::Abs => f.abs_(),
        Op::Relu => f.relu_(),
        Op::Sign => f.sign_(),
        Op::Zero => f.zero_(),
        Op::Fill(v) => f.fill_(sc(v)),
        Op::Clamp(lo, hi) => f.clamp_(lo.map(sc::<T>), hi.map(sc::<T>)),
        Op::ClampMin(v) => f.clamp_min_(sc(v)),
        Op::ClampMax(v) => f.clamp_max_(sc(v)),
        Op::Hardtanh(lo, hi) => f.hardtanh_(sc(lo), sc(hi)),
        Op::Sqrt => f.sqrt_(),
        Op::Rsqrt => f.rsqrt_(),
        Op::Reciprocal => f.reciprocal_(),
        Op::Exp => f.exp_(),
        Op::Log => f.log_(),
        Op::Sigmoid => f.sigmoid_(),
        Op::Tanh => f.tanh_(),
        Op::Sin => f.sin_(),
        Op::Cos => f.cos_(),
        Op::Erf => f.erf_(),
        Op::Floor => f.floor_(),
        Op::Round => f.round_(),
        Op::Pow(a) => with_step_arg!(a, pool, |o| f.pow_(o)),
        Op::Addcmul(i, j, v) => f.addcmul_(&pool[i], &pool[j], sc(v)),
        Op::Addcdiv(i, j, v) => f.addcdiv_(&pool[i], &pool[j], sc(v)),
        Op::Addcmul1(i, j) => f.addcmul1_(&pool[i], &pool[j]),
        Op::Addcdiv1(i, j) => f.addcdiv1_(&pool[i], &pool[j]),
        Op::Lerp(i, w) => with_step_arg!(w, pool, |o| f.lerp_(&pool[i], o)),
    }
}

fn fusion<'a, T: FloatElement>(ops: &[Op], pool: &'a [Tensor<T>]) -> Fusion<'a, T> {
    ops.iter().fold(Fusion::new(), |f, op| push(f, op, pool))
}

// ---------------------------------------------------------------------------
// set-ups

/// Values, some of them special.
fn values(seed: u64, n: usize) -> Vec<f64> {
    const SPECIAL: [f64; 8] = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        1e30,
        -1e-30,
        0.5,
    ];
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(23) {
                SPECIAL[(x >> 8) as usize % SPECIAL.len()]
            } else {
                ((x >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
            }
        })
        .collect()
}

fn tensor<T: FloatElement>(seed: u64, shape: &[usize]) -> Tensor<T> {
    let n = shape.iter().product();
    Tensor::from_vec(values(seed, n).into_iter().map(sc).collect(), shape)
}

/// How the root is held.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Root {
    /// A fresh contiguous local.
    Fresh,
    /// A mutated input (`rt::input` of a caller's tensor).
    Input,
    /// A fresh value laid out permuted.
    Strided,
    /// A fresh value with another live handle.
    Shared,
    /// A contiguous window at a nonzero offset of a bigger buffer.
    Offset,
}

/// How an operand relates to the root's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Any contiguous run of the root's dimensions, the rest 1 (same
    /// shape, one element, a row, a column, ...): fusable.
    Run,
    /// A contiguous window at an offset of a bigger buffer: fusable.
    Window,
    /// Broadcast along a dimension inside its run: refused.
    Gap,
    /// Same shape, permuted strides: refused.
    Transposed,
    /// Same shape by `expand`: refused unless one element.
    Expanded,
    /// Does not broadcast to the root (a panic).
    Bad,
    /// Broadcasts to more dimensions than the root's (a panic).
    TooBig,
    /// A handle of the root's (or the caller's) buffer.
    Alias,
}

const KINDS: [Kind; 8] = [
    Kind::Run,
    Kind::Window,
    Kind::Gap,
    Kind::Transposed,
    Kind::Expanded,
    Kind::Bad,
    Kind::TooBig,
    Kind::Alias,
];

#[derive(Clone, Debug)]
struct Case {
    f64: bool,
    trace: bool,
    root: Root,
    shape: Vec<usize>,
    seed: u64,
    /// Operand kind and two numbers that pick its shape.
    pool: Vec<(Kind, usize, usize)>,
    ops: Vec<Op>,
}

/// The root, its state, the caller's tensor (for `Root::Input`) and the
/// other handle kept (for `Root::Shared`).
struct SetUp<T: FloatElement> {
    y: Tensor<T>,
    s: Tracked,
    caller: Option<Tensor<T>>,
    keep: Option<Tensor<T>>,
    pool: Vec<Tensor<T>>,
    /// The operand kinds as built (a kind that does not apply to the shape
    /// is built as `Run`).
    kinds: Vec<Kind>,
}

fn permuted<T: FloatElement>(seed: u64, shape: &[usize]) -> Tensor<T> {
    let rev: Vec<usize> = shape.iter().rev().copied().collect();
    let dims: Vec<i64> = (0..shape.len() as i64).rev().collect();
    tensor::<T>(seed, &rev).permute(dims)
}

fn window<T: FloatElement>(seed: u64, shape: &[usize]) -> Tensor<T> {
    let n: usize = shape.iter().product();
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    tensor::<T>(seed, &[n + 3]).narrow(0, 3, n).view(dims)
}

fn operand<T: FloatElement>(
    (kind, a, b): (Kind, usize, usize),
    seed: u64,
    shape: &[usize],
    y: &Tensor<T>,
    caller: Option<&Tensor<T>>,
) -> (Tensor<T>, Kind) {
    let k = shape.len();
    let numel: usize = shape.iter().product();
    let run = |a: usize, b: usize| -> Vec<usize> {
        let i = a % (k + 1);
        let j = i + b % (k - i + 1);
        let mut s: Vec<usize> = (0..k)
            .map(|d| if (i..j).contains(&d) { shape[d] } else { 1 })
            .collect();
        // Sometimes without its leading ones.
        if b % 2 == 1 {
            let lead = s.iter().take_while(|&&d| d == 1).count();
            s.drain(..lead.min(a % (lead + 1)));
        }
        s
    };
    match kind {
        Kind::Run => (tensor(seed, &run(a, b)), Kind::Run),
        Kind::Window => (window(seed, &run(a, b)), Kind::Window),
        Kind::Gap => {
            // Broadcast along an inner dimension of size > 1 between two
            // dimensions of size > 1.
            let inner = (1..k.saturating_sub(1)).find(|&m| {
                shape[m] > 1
                    && shape[..m].iter().any(|&d| d > 1)
                    && shape[m + 1..].iter().any(|&d| d > 1)
            });
            match inner {
                Some(m) => {
                    let mut s = shape.to_vec();
                    s[m] = 1;
                    (tensor(seed, &s), Kind::Gap)
                }
                None => (tensor(seed, shape), Kind::Run),
            }
        }
        Kind::Transposed => {
            let t = permuted::<T>(seed, shape);
            let kind = if t.is_contiguous() {
                Kind::Run
            } else {
                Kind::Transposed
            };
            (t, kind)
        }
        Kind::Expanded => {
            let ones = vec![1; k];
            let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
            let t = tensor::<T>(seed, &ones).expand(dims);
            let kind = if numel == 1 {
                Kind::Run
            } else {
                Kind::Expanded
            };
            (t, kind)
        }
        Kind::Bad => {
            let mut s = shape.to_vec();
            match s.last_mut() {
                Some(d) if *d != 1 => *d += 1,
                Some(d) => *d = 2,
                None => s.push(2),
            }
            // With a zero-size root dimension, [.., 1] could broadcast.
            if s.last() == Some(&1) {
                s.push(3);
            }
            (tensor(seed, &s), Kind::Bad)
        }
        Kind::TooBig => {
            let s = [vec![1], shape.to_vec()].concat();
            (tensor(seed, &s), Kind::TooBig)
        }
        Kind::Alias => (caller.unwrap_or(y).shallow_clone(), Kind::Alias),
    }
}

fn set_up<T: FloatElement>(c: &Case) -> SetUp<T> {
    let sh = &c.shape;
    let (y, s, caller, keep) = match c.root {
        Root::Fresh => {
            let y = tensor::<T>(c.seed, sh);
            let s = Tracked::root(&y);
            (y, s, None, None)
        }
        Root::Input => {
            let caller = tensor::<T>(c.seed, sh);
            let y = rt::input(&caller);
            let s = Tracked::input(&y);
            (y, s, Some(caller), None)
        }
        Root::Strided => {
            let y = permuted::<T>(c.seed, sh);
            let s = Tracked::root(&y);
            (y, s, None, None)
        }
        Root::Shared => {
            let y = tensor::<T>(c.seed, sh);
            let s = Tracked::root(&y);
            let keep = y.shallow_clone();
            (y, s, None, Some(keep))
        }
        Root::Offset => {
            let y = window::<T>(c.seed, sh);
            let s = Tracked::root(&y);
            (y, s, None, None)
        }
    };
    let (pool, kinds) = c
        .pool
        .iter()
        .enumerate()
        .map(|(i, &p)| operand(p, c.seed + 100 + i as u64, sh, &y, caller.as_ref()))
        .unzip();
    SetUp {
        y,
        s,
        caller,
        keep,
        pool,
        kinds,
    }
}

/// What a run leaves observable.
#[derive(Debug, PartialEq)]
struct Outcome {
    panic: Option<String>,
    bits: Vec<u64>,
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
    version: u64,
    state: String,
    caller: Option<(Vec<u64>, u64)>,
    keep: Option<(Vec<u64>, u64)>,
    pool: Vec<(Vec<u64>, u64)>,
    graph: Option<String>,
}

fn bits<T: FloatElement>(t: &Tensor<T>) -> Vec<u64> {
    t.to_vec()
        .into_iter()
        .map(|v| v.to_f64().to_bits())
        .collect()
}

/// `Tracked`'s `Debug` without the caller's storage address (which
/// differs between the two set-ups).
fn state_string(s: &Tracked) -> String {
    let d = format!("{s:?}");
    match d.find("caller: ") {
        Some(i) => {
            let rest = &d[i + 8..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let nonzero = &rest[..end] != "0";
            format!("{}caller: {}{}", &d[..i], nonzero, &rest[end..])
        }
        None => d,
    }
}

fn run_case<T: FloatElement>(c: &Case, fused: bool) -> (Outcome, u64, Vec<Kind>) {
    let SetUp {
        mut y,
        mut s,
        caller,
        keep,
        pool,
        kinds,
    } = set_up::<T>(c);
    let before = rt::fused_passes();
    let body = |y: &mut Tensor<T>, s: &mut Tracked| {
        if fused {
            rt::fused_root(y, s, fusion(&c.ops, &pool));
        } else {
            for op in &c.ops {
                reference_step(y, s, op, &pool);
            }
        }
        if let Some(caller) = &caller {
            rt::write_back(caller, &*y);
        }
    };
    let (panic, graph) = if c.trace {
        let mut tracer = Tracer::new("f");
        if let Some(caller) = &caller {
            tracer = tracer.input("x", caller);
        }
        match catching(|| tracer.run(|| body(&mut y, &mut s))) {
            Ok(((), g)) => (None, Some(g.to_string())),
            Err(m) => (Some(m), None),
        }
    } else {
        (catching(|| body(&mut y, &mut s)).err(), None)
    };
    let passes = rt::fused_passes() - before;
    let versioned = |t: &Tensor<T>| (bits(t), rt::version(t));
    let out = Outcome {
        panic,
        bits: bits(&y),
        shape: y.shape().to_vec(),
        strides: y.strides().to_vec(),
        offset: y.storage_offset(),
        version: rt::version(&y),
        state: state_string(&s),
        caller: caller.as_ref().map(versioned),
        keep: keep.as_ref().map(versioned),
        pool: pool.iter().map(versioned).collect(),
        graph,
    };
    (out, passes, kinds)
}

/// True if `c` (with operand kinds as built) should take the one pass.
fn expect_fused(c: &Case, kinds: &[Kind]) -> bool {
    let numel: usize = c.shape.iter().product();
    let root_ok = match c.root {
        Root::Fresh | Root::Input => true,
        // A permutation that moves only dimensions of size 1 is still
        // row-major.
        Root::Strided => {
            let mut big = c.shape.iter().filter(|&&d| d > 1);
            big.next();
            big.next().is_none()
        }
        Root::Shared | Root::Offset => false,
    };
    // A handle of the root's buffer in the pool makes it undonatable.
    !c.trace
        && root_ok
        && !kinds.contains(&Kind::Alias)
        && numel > 0
        && c.ops.iter().all(|op| {
            op.fusable()
                && op
                    .tensors()
                    .iter()
                    .all(|&i| matches!(kinds[i], Kind::Run | Kind::Window))
        })
}

fn check<T: FloatElement>(c: &Case) -> Result<(), TestCaseError> {
    let (want, ref_passes, _) = run_case::<T>(c, false);
    let (got, passes, kinds) = run_case::<T>(c, true);
    prop_assert_eq!(ref_passes, 0);
    prop_assert_eq!(&got, &want, "{:?}", kinds);
    let expected = u64::from(expect_fused(c, &kinds) && !c.ops.is_empty());
    prop_assert_eq!(
        passes,
        expected,
        "one pass expected: {}, kinds {:?}",
        expected,
        kinds
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// strategies

fn scalar() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(1.0),
        Just(-1.0),
        Just(2.0),
        Just(3.0),
        Just(0.5),
        Just(1.01),
        Just(-1.5),
        Just(1e30),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        -4.0..4.0f64,
    ]
}

fn arg(pool: usize) -> impl Strategy<Value = Arg> {
    prop_oneof![
        scalar().prop_map(Arg::S),
        (0..pool).prop_map(Arg::R),
        (0..pool).prop_map(Arg::R),
        (0..pool).prop_map(Arg::O),
    ]
}

fn op(pool: usize) -> impl Strategy<Value = Op> {
    let t = 0..pool;
    prop_oneof![
        arg(pool).prop_map(Op::Add),
        arg(pool).prop_map(Op::Sub),
        arg(pool).prop_map(Op::Mul),
        arg(pool).prop_map(Op::Div),
        (arg(pool), scalar()).prop_map(|(a, s)| Op::AddScaled(a, s)),
        (arg(pool), scalar()).prop_map(|(a, s)| Op::SubScaled(a, s)),
        prop_oneof![
            Just(Op::Neg),
            Just(Op::Abs),
            Just(Op::Relu),
            Just(Op::Sign),
            Just(Op::Zero),
            Just(Op::Sqrt),
            Just(Op::Rsqrt),
            Just(Op::Reciprocal),
            Just(Op::Exp),
            Just(Op::Log),
            Just(Op::Sigmoid),
            Just(Op::Tanh),
            Just(Op::Sin),
            Just(Op::Cos),
            Just(Op::Erf),
            Just(Op::Floor),
            Just(Op::Round),
        ],
        scalar().prop_map(Op::Fill),
        (
            proptest::option::weighted(0.8, scalar()),
            proptest::option::weighted(0.8, scalar())
        )
            .prop_map(|(lo, hi)| Op::Clamp(lo, hi)),
        scalar().prop_map(Op::ClampMin),
        scalar().prop_map(Op::ClampMax),
        (scalar(), scalar()).prop_map(|(a, b)| Op::Hardtanh(a, b)),
        arg(pool).prop_map(Op::Pow),
        (t.clone(), t.clone(), scalar()).prop_map(|(i, j, v)| Op::Addcmul(i, j, v)),
        (t.clone(), t.clone(), scalar()).prop_map(|(i, j, v)| Op::Addcdiv(i, j, v)),
        (t.clone(), t.clone()).prop_map(|(i, j)| Op::Addcmul1(i, j)),
        (t.clone(), t.clone()).prop_map(|(i, j)| Op::Addcdiv1(i, j)),
        (t, arg(pool)).prop_map(|(i, w)| Op::Lerp(i, w)),
    ]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        4 => proptest::collection::vec(1usize..5, 0..4),
        1 => proptest::collection::vec(0usize..3, 1..3),
        // Big enough for several blocks and segments.
        3 => proptest::collection::vec(
            prop_oneof![Just(1usize), Just(2), Just(3), Just(7), Just(64), Just(257), Just(300), Just(1030)],
            1..4
        )
        .prop_filter("at most 40k elements", |s| s.iter().product::<usize>() <= 40_000),
    ]
}

fn root() -> impl Strategy<Value = Root> {
    prop_oneof![
        4 => Just(Root::Fresh),
        3 => Just(Root::Input),
        1 => Just(Root::Strided),
        1 => Just(Root::Shared),
        1 => Just(Root::Offset),
    ]
}

fn pool_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        12 => Just(Kind::Run),
        3 => Just(Kind::Window),
        1 => Just(Kind::Gap),
        1 => Just(Kind::Transposed),
        1 => Just(Kind::Expanded),
        1 => Just(Kind::Bad),
        1 => Just(Kind::TooBig),
        1 => Just(Kind::Alias),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..5).prop_flat_map(|npool| {
        (
            any::<bool>(),
            proptest::bool::weighted(0.15),
            root(),
            shape(),
            any::<u64>(),
            proptest::collection::vec((pool_kind(), 0usize..8, 0usize..8), npool),
            proptest::collection::vec(op(npool), 0..12),
        )
            .prop_map(|(f64, trace, root, shape, seed, pool, ops)| Case {
                f64,
                trace,
                root,
                shape,
                seed,
                pool,
                ops,
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn fused_root_is_the_op_by_op_code(c in case()) {
        rt::set_min_fused(0);
        if c.f64 { check::<f64>(&c)? } else { check::<f32>(&c)? }
    }
}

// ---------------------------------------------------------------------------
// named cases

fn chain10() -> Vec<Op> {
    vec![
        Op::Mul(Arg::S(1.01)),
        Op::Add(Arg::R(0)),
        Op::Sub(Arg::S(0.5)),
        Op::Relu,
        Op::Div(Arg::S(1.01)),
        Op::Sub(Arg::R(0)),
        Op::Add(Arg::S(0.5)),
        Op::Clamp(Some(-1000.0), Some(1000.0)),
        Op::Abs,
        Op::Neg,
    ]
}

fn simple(root: Root, shape: &[usize], pool: Vec<(Kind, usize, usize)>, ops: Vec<Op>) -> Case {
    Case {
        f64: false,
        trace: false,
        root,
        shape: shape.to_vec(),
        seed: 7,
        pool,
        ops,
    }
}

#[test]
fn the_benchmark_chain_is_fused_on_a_local_and_on_an_input() {
    rt::set_min_fused(0);
    for root in [Root::Fresh, Root::Input] {
        for n in [1, 5, 1000, 5000] {
            let c = simple(root, &[n], vec![(Kind::Run, 0, 1)], chain10());
            check::<f32>(&c).unwrap();
            check::<f64>(&c).unwrap();
        }
    }
}

#[test]
fn layer_norm_tail_with_a_column_and_rows_is_fused() {
    rt::set_min_fused(0);
    // y.div_(&col).mul_(&w).add_(&b) on [rows, cols]: the column is the
    // first dimension only (a = 0, b = 1), the rows the last.
    for (rows, cols) in [(3, 5), (64, 300), (5, 1030), (300, 7)] {
        let c = simple(
            Root::Fresh,
            &[rows, cols],
            vec![(Kind::Run, 0, 1), (Kind::Run, 1, 1), (Kind::Run, 1, 2)],
            vec![Op::Div(Arg::R(0)), Op::Mul(Arg::R(1)), Op::Add(Arg::R(2))],
        );
        let y = set_up::<f32>(&c);
        assert_eq!(y.pool[0].shape(), &[rows, 1]);
        assert_eq!(y.pool[1].shape(), &[cols]);
        check::<f32>(&c).unwrap();
        check::<f64>(&c).unwrap();
    }
}

#[test]
fn an_operand_in_the_callers_buffer_is_not_fused() {
    rt::set_min_fused(0);
    // The input's value is updated in the caller's buffer (donatable: the
    // caller's tensor is its one other handle), and an operand is that very
    // tensor: the op-by-op kernels read it element by element as they
    // write (`y.add_(&caller)` adds the updated value to itself), a fused
    // pass would read and write one buffer under two locks.
    let run = |fused: bool| {
        let pool = [Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2])];
        let mut y = rt::input(&pool[0]);
        let mut s = Tracked::input(&y);
        assert!(rt::can_donate_root(&y, &s));
        let ops = [Op::Mul(Arg::S(2.0)), Op::Add(Arg::R(0)), Op::Sqrt];
        let before = rt::fused_passes();
        if fused {
            rt::fused_root(&mut y, &mut s, fusion(&ops, &pool));
        } else {
            for op in &ops {
                reference_step(&mut y, &mut s, op, &pool);
            }
        }
        let passes = rt::fused_passes() - before;
        rt::write_back(&pool[0], &y);
        (
            pool[0].to_vec(),
            rt::version(&pool[0]),
            state_string(&s),
            passes,
        )
    };
    let (want, wv, ws, _) = run(false);
    let (got, gv, gs, passes) = run(true);
    assert_eq!(want, vec![2.0, 8.0f32.sqrt(), 12.0f32.sqrt(), 4.0]);
    assert_eq!((got, gv, gs), (want, wv, ws));
    assert_eq!(passes, 0);
}

#[test]
fn an_input_is_updated_in_the_callers_buffer_with_one_version_bump_per_op() {
    rt::set_min_fused(0);
    let caller = Tensor::<f32>::from_vec(vec![-2.0, 0.5, 3.0], &[3]);
    let ptr = |t: &Tensor<f32>| t.with_array_view(|a| a.as_ptr() as usize);
    let p = ptr(&caller);
    let mut y = rt::input(&caller);
    let mut s = Tracked::input(&y);
    let before = rt::fused_passes();
    rt::fused_root(&mut y, &mut s, Fusion::new().relu_().add_(1.0).log_());
    assert_eq!(rt::fused_passes(), before + 1);
    assert_eq!(ptr(&y), p, "the caller's buffer is reused");
    rt::write_back(&caller, &y);
    assert_eq!(caller.to_vec(), vec![0.0, 1.5f32.ln(), 4.0f32.ln()]);
    assert_eq!(rt::version(&caller), 3);
}

#[test]
fn a_chain_recorded_in_a_trace_shows_each_functional_op() {
    rt::set_min_fused(0);
    let w = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    let x = Tensor::<f32>::from_vec(vec![3.0, -4.0], &[2]);
    let (_, g) = Tracer::new("f").input("x", &x).input("w", &w).run(|| {
        let mut y = x.clone();
        let mut s = Tracked::root(&y);
        rt::fused_root(&mut y, &mut s, Fusion::new().mul_(2.0).add_(&w).relu_());
        y
    });
    assert_eq!(g.ops(), vec!["clone", "mul", "add", "relu"]);
    assert!(g.is_functional(), "{g}");
}

#[test]
fn shape_errors_panic_as_the_op_after_the_steps_before_it() {
    rt::set_min_fused(0);
    for root in [Root::Fresh, Root::Input] {
        let c = simple(
            root,
            &[2, 3],
            vec![(Kind::Bad, 0, 0)],
            vec![Op::Mul(Arg::S(3.0)), Op::Add(Arg::R(0)), Op::Neg],
        );
        let (got, _, _) = run_case::<f32>(&c, true);
        let msg = got.panic.as_deref().expect("a shape error");
        assert!(msg.starts_with("funcz: add_:"), "{msg}");
        check::<f32>(&c).unwrap();
        // TooBig: [1, 2, 3] into [2, 3].
        let mut c = c;
        c.pool = vec![(Kind::TooBig, 0, 0)];
        let (got, _, _) = run_case::<f32>(&c, true);
        let msg = got.panic.as_deref().expect("a shape error");
        assert!(msg.contains("doesn't match the broadcast shape"), "{msg}");
        check::<f32>(&c).unwrap();
    }
    // clamp_ without bounds.
    let c = simple(
        Root::Fresh,
        &[4],
        vec![],
        vec![Op::Abs, Op::Clamp(None, None)],
    );
    let (got, _, _) = run_case::<f32>(&c, true);
    assert_eq!(
        got.panic.as_deref(),
        Some("funcz: clamp_: at least one of 'min' or 'max' must not be None")
    );
    check::<f32>(&c).unwrap();
}

#[test]
fn zero_dim_empty_and_one_element_roots() {
    rt::set_min_fused(0);
    for shape in [&[][..], &[0][..], &[2, 0, 3][..], &[1][..], &[1, 1][..]] {
        for root in [Root::Fresh, Root::Input] {
            let c = simple(
                root,
                shape,
                vec![(Kind::Run, 0, 0), (Kind::Run, 0, 7), (Kind::Expanded, 0, 0)],
                vec![
                    Op::Add(Arg::R(0)),
                    Op::Mul(Arg::R(1)),
                    Op::Lerp(0, Arg::R(1)),
                    Op::Addcmul(0, 1, 0.5),
                    Op::Sub(Arg::R(2)),
                    Op::Sqrt,
                ],
            );
            check::<f32>(&c).unwrap();
            check::<f64>(&c).unwrap();
        }
    }
}

#[test]
fn small_periods_are_gathered_and_long_ones_cut_blocks() {
    rt::set_min_fused(0);
    // A row of 3 against [5000, 3] (gathered), a column against [3, 1030]
    // (a scalar per block), a [7, 1] column against [300, 7, 2] (period 7
    // repeated per 2 elements: gathered), and a middle run [257, 1]
    // against [3, 257, 64] (segments at 64 elements: blocks of 64).
    let cases = [
        (&[5000, 3][..], vec![(Kind::Run, 1, 1)]),
        (&[3, 1030][..], vec![(Kind::Run, 0, 1)]),
        (&[300, 7, 2][..], vec![(Kind::Run, 1, 1)]),
        (&[3, 257, 64][..], vec![(Kind::Run, 1, 1)]),
        (
            &[2, 3, 257, 7][..],
            vec![(Kind::Run, 2, 1), (Kind::Run, 1, 2)],
        ),
    ];
    for (shape, pool) in cases {
        let ops = vec![
            Op::Mul(Arg::R(0)),
            Op::AddScaled(Arg::R(pool.len() - 1), 0.25),
            Op::Lerp(0, Arg::R(pool.len() - 1)),
            Op::Addcdiv(pool.len() - 1, 0, -2.0),
        ];
        let c = simple(Root::Fresh, shape, pool, ops);
        check::<f32>(&c).unwrap();
        check::<f64>(&c).unwrap();
    }
}

#[test]
fn integer_chains_run_op_by_op() {
    rt::set_min_fused(0);
    let w = Tensor::<i64>::from_vec(vec![1, -2, 3], &[3]);
    let mk = || Tensor::<i64>::from_vec(vec![5, 6, -7, 8, 9, 10], &[2, 3]);
    let mut y = mk();
    let mut s = Tracked::root(&y);
    let before = rt::fused_passes();
    rt::fused_root(
        &mut y,
        &mut s,
        Fusion::new()
            .mul_(3)
            .add_(&w)
            .div_(2)
            .clamp_(-5, 12)
            .neg_()
            .sign_(),
    );
    assert_eq!(rt::fused_passes(), before);
    let r = mk();
    r.mul_(3).add_(&w).div_(2).clamp_(-5, 12).neg_().sign_();
    assert_eq!(y.to_vec(), r.to_vec());
    assert_eq!(rt::version(&y), 6);
    // An integer division by zero panics as the op, after the steps before.
    let mut y = mk();
    let mut s = Tracked::root(&y);
    let e = catching(|| rt::fused_root(&mut y, &mut s, Fusion::new().add_(1).div_(0))).unwrap_err();
    assert!(
        e.starts_with("funcz: div_: integer division by zero"),
        "{e}"
    );
    assert_eq!(y.to_vec(), vec![6, 7, -6, 9, 10, 11]);
}

#[test]
fn fused_value_updates_a_fresh_value_in_place_and_a_shared_one_functionally() {
    rt::set_min_fused(0);
    let w = Tensor::<f64>::from_vec(vec![0.5, 2.0, -1.0], &[3]);
    let x = Tensor::<f64>::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    let expect = {
        let r = x.clone();
        r.mul_(&w).sub_(1.0).exp_().addcmul_(&w, &w, 0.5);
        r.to_vec()
    };
    // Fresh: one pass, the same buffer, fresh identities.
    let mut t = x.clone();
    let (id, before) = (t.id(), rt::fused_passes());
    rt::fused_value(
        &mut t,
        Fusion::new()
            .mul_(&w)
            .sub_(1.0)
            .exp_()
            .addcmul_(&w, &w, 0.5),
    );
    assert_eq!(rt::fused_passes(), before + 1);
    assert_ne!(t.id(), id);
    assert_eq!(t.to_vec(), expect);
    assert_eq!(rt::version(&t), 4);
    // Shared: the other handle never sees a write.
    let mut v = x.shallow_clone();
    rt::fused_value(
        &mut v,
        Fusion::new()
            .mul_(&w)
            .sub_(1.0)
            .exp_()
            .addcmul_(&w, &w, 0.5),
    );
    assert_eq!(rt::fused_passes(), before + 1);
    assert_eq!(v.to_vec(), expect);
    assert_eq!(x.to_vec(), vec![1.0, 2.0, 3.0]);
    assert_eq!(rt::version(&x), 0);
    // Traced: the functional ops.
    let (_, g) = Tracer::new("f").input("x", &x).input("w", &w).run(|| {
        let mut t = x.add(0.0);
        rt::fused_value(&mut t, Fusion::new().mul_(&w).neg_());
        t
    });
    assert_eq!(g.ops(), vec!["add", "mul", "neg"]);
    assert!(g.is_functional(), "{g}");
}

#[test]
// The borrowed temporary is the point: it lives until the call returns.
#[allow(clippy::needless_borrows_for_generic_args)]
fn borrowed_temporary_operands_live_as_long_as_the_fusion() {
    let x = Tensor::<f32>::from_vec(vec![1.0, 2.0], &[2]);
    let mut y = x.clone();
    let mut s = Tracked::root(&y);
    // Built in the call: the temporaries live until it returns (a step
    // borrows every tensor operand, as generated code passes an owned one:
    // `&(x.mul(10.0))`).
    rt::fused_root(
        &mut y,
        &mut s,
        Fusion::new()
            .add_(&x.mul(10.0))
            .mul_(&x.add(1.0))
            .clamp_(None, 40.0),
    );
    assert_eq!(y.to_vec(), vec![22.0, 40.0]);
}

#[test]
fn fusion_of_names_the_element_type_without_borrowing() {
    rt::set_min_fused(0);
    let w = Tensor::<f32>::from_vec(vec![1.0, 1.0], &[2]);
    let mut y = Tensor::<f32>::from_vec(vec![1.0, 4.0], &[2]);
    let mut s = Tracked::root(&y);
    let f = Fusion::of(&y).sub_(&w).sqrt_().hardtanh_(0.0, 1.5);
    rt::fused_root(&mut y, &mut s, f);
    assert_eq!(y.to_vec(), vec![0.0, 1.5]);
}

/// Every kernel against its op, bit for bit, on special values, in a
/// one-step chain (the fused pass) and as the op itself.
#[test]
fn every_kernel_matches_its_op_bit_for_bit() {
    rt::set_min_fused(0);
    let n = 3000;
    let x: Vec<f64> = values(1, n);
    let a: Vec<f64> = values(2, n);
    let b: Vec<f64> = values(3, n);
    let ops: Vec<Op> = {
        let mut v = vec![
            Op::Neg,
            Op::Abs,
            Op::Relu,
            Op::Sign,
            Op::Zero,
            Op::Sqrt,
            Op::Rsqrt,
            Op::Reciprocal,
            Op::Exp,
            Op::Log,
            Op::Sigmoid,
            Op::Tanh,
            Op::Sin,
            Op::Cos,
            Op::Erf,
            Op::Floor,
            Op::Round,
            Op::Addcmul1(0, 1),
            Op::Addcdiv1(0, 1),
        ];
        for s in [
            0.0,
            -0.0,
            0.5,
            2.0,
            3.0,
            -1.0,
            1.0,
            1.7,
            f64::NAN,
            f64::INFINITY,
        ] {
            v.extend([
                Op::Add(Arg::S(s)),
                Op::Sub(Arg::S(s)),
                Op::Mul(Arg::S(s)),
                Op::Div(Arg::S(s)),
                Op::Pow(Arg::S(s)),
                Op::AddScaled(Arg::R(0), s),
                Op::SubScaled(Arg::R(0), s),
                Op::Fill(s),
                Op::ClampMin(s),
                Op::ClampMax(s),
                Op::Clamp(Some(s), None),
                Op::Clamp(None, Some(s)),
                Op::Clamp(Some(s), Some(1.0)),
                Op::Clamp(Some(-1.0), Some(s)),
                Op::Hardtanh(s, 1.0),
                Op::Hardtanh(-1.0, s),
                Op::Addcmul(0, 1, s),
                Op::Addcdiv(0, 1, s),
                Op::Lerp(0, Arg::S(s)),
            ]);
        }
        v.extend([
            Op::Add(Arg::R(0)),
            Op::Sub(Arg::R(0)),
            Op::Mul(Arg::R(0)),
            Op::Div(Arg::R(0)),
            Op::Pow(Arg::R(0)),
            Op::Lerp(0, Arg::R(1)),
        ]);
        v
    };
    fn one<T: FloatElement>(op: &Op, x: &[f64], a: &[f64], b: &[f64]) {
        let n = x.len();
        let t = |v: &[f64]| Tensor::<T>::from_vec(v.iter().map(|&e| sc(e)).collect(), &[n]);
        let pool = [t(a), t(b)];
        let want = t(x);
        let mut ws = Tracked::root(&want);
        let mut want = want;
        reference_step(&mut want, &mut ws, op, &pool);
        let mut got = t(x);
        let mut gs = Tracked::root(&got);
        let before = rt::fused_passes();
        rt::fused_root(&mut got, &mut gs, push(Fusion::new(), op, &pool));
        assert_eq!(rt::fused_passes(), before + 1, "{op:?}");
        let (w, g) = (bits(&want), bits(&got));
        if let Some(i) = (0..n).find(|&i| w[i] != g[i]) {
            panic!(
                "{op:?} ({}): element {i}: x = {}, a = {}, b = {}: op {} vs fused {}",
                std::any::type_name::<T>(),
                x[i],
                a[i],
                b[i],
                f64::from_bits(w[i]),
                f64::from_bits(g[i])
            );
        }
    }
    for op in &ops {
        one::<f32>(op, &x, &a, &b);
        one::<f64>(op, &x, &a, &b);
    }
}

#[test]
fn pool_kinds_cover_every_kind() {
    rt::set_min_fused(0);
    // The generator can build each kind on a suitable shape (else the
    // property test would not exercise the refusals).
    let shape = [3, 4, 5];
    let y = tensor::<f32>(1, &shape);
    for kind in KINDS {
        let (_, built) = operand::<f32>((kind, 1, 1), 9, &shape, &y, None);
        assert_eq!(built, kind);
    }
}

#[test]
fn runs_longer_than_the_reserved_steps_with_owned_operands() {
    // A fusion reserves room for 16 steps; longer runs (the macro writes
    // up to 32) grow it. The unfused reference passes `Arg::O` operands as
    // owned handles; the fusion borrows them (a step owns nothing, see
    // `rt::StepArg`).
    let mut ops = Vec::new();
    for _ in 0..3 {
        ops.extend(chain10());
        ops.push(Op::Add(Arg::O(1)));
        ops.push(Op::Lerp(0, Arg::O(1)));
    }
    assert_eq!(ops.len(), 36);
    let pools = [
        vec![(Kind::Run, 0, 1), (Kind::Run, 1, 1)],
        vec![(Kind::Run, 0, 1), (Kind::Alias, 0, 0)],
    ];
    for root in [Root::Fresh, Root::Input, Root::Shared] {
        for pool in &pools {
            for n in [3, 3000] {
                let c = simple(root, &[n], pool.clone(), ops.clone());
                rt::set_min_fused(0);
                check::<f32>(&c).unwrap();
                check::<f64>(&c).unwrap();
                // Below the fuse threshold: op by op, the same outcome.
                rt::set_min_fused(usize::MAX);
                let (want, _, _) = run_case::<f32>(&c, false);
                let (got, passes, _) = run_case::<f32>(&c, true);
                assert_eq!(passes, 0);
                assert_eq!(got, want, "{root:?} {n}");
            }
        }
    }
    rt::set_min_fused(0);
}

#[test]
fn a_small_value_runs_op_by_op_without_a_pass() {
    // The default threshold (2048 elements): the benchmark chain on 1K
    // elements runs op by op, with the op-by-op outcome.
    let old = rt::set_min_fused(2048);
    for n in [1000, 3000] {
        let c = simple(Root::Input, &[n], vec![(Kind::Run, 0, 1)], chain10());
        let (want, _, _) = run_case::<f32>(&c, false);
        let (got, passes, _) = run_case::<f32>(&c, true);
        assert_eq!(passes, u64::from(n >= 2048));
        assert_eq!(got, want);
    }
    rt::set_min_fused(old);
}
