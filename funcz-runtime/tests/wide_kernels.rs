//! The elementwise ops whose contiguous loops have an AVX2 copy
//! (`ops/kernel/wide.rs`), compared bit for bit with the scalar formula
//! computed here, at lengths around the vector widths and at storage
//! offsets 0..4 (so the data starts at every alignment), on values with
//! every float corner (signed zeros, subnormals, infinities, NaNs with
//! payloads). `FUNCZ_NO_AVX2` forces the baseline loops:
//! `baseline_loops_give_the_same_bits` runs these ops again in a child
//! process with it set and compares the bits of every result.

use funcz_runtime::Tensor;

const LENS: [usize; 11] = [0, 1, 3, 7, 8, 9, 31, 63, 64, 65, 257];

#[path = "../src/ops/kernel/float_corners.rs"]
mod float_corners;

use float_corners::{bits, values};

/// `n` values starting at storage offset `off` of a longer tensor.
fn at_offset(n: usize, off: usize, seed: u32) -> (Tensor<f32>, Vec<f32>) {
    let all = values(n + 4, seed);
    let base = Tensor::from_vec(all.clone(), &[n + 4]);
    (
        base.narrow(0, off as i64, n as i64),
        all[off..off + n].to_vec(),
    )
}

/// PyTorch's `clamp` on one element (NaN stays NaN, a NaN bound wins,
/// `min > max` gives `max`).
fn clamp_ref(x: f32, lo: Option<f32>, hi: Option<f32>) -> f32 {
    let mut y = x;
    if let Some(lo) = lo
        && (y < lo || lo.is_nan())
    {
        y = lo;
    }
    if let Some(hi) = hi
        && (y > hi || hi.is_nan())
    {
        y = hi;
    }
    y
}

type Case = (
    &'static str,
    fn(&Tensor<f32>, &Tensor<f32>, &Tensor<f32>) -> Tensor<f32>,
);
type Ref = fn(f32, f32, f32) -> f32;

/// Each op as `(name, op on (x, a, b), formula on (x, a, b))`; in-place
/// ops mutate `x` and return it. `b` holds positive values (a divisor).
fn cases() -> Vec<(Case, Ref)> {
    vec![
        (("add_", |x, a, _| x.add_(a)), |x, a, _| x + a),
        (("sub_", |x, a, _| x.sub_(a)), |x, a, _| x - a),
        (("mul_", |x, a, _| x.mul_(a)), |x, a, _| x * a),
        (("div_", |x, _, b| x.div_(b)), |x, _, b| x / b),
        (("add_(s)", |x, _, _| x.add_(0.25)), |x, _, _| x + 0.25),
        (("mul_(s)", |x, _, _| x.mul_(1.01)), |x, _, _| x * 1.01),
        (("div_(s)", |x, _, _| x.div_(1.01)), |x, _, _| x / 1.01),
        (("neg_", |x, _, _| x.neg_()), |x, _, _| -x),
        (("abs_", |x, _, _| x.abs_()), |x, _, _| x.abs()),
        (("sqrt_", |x, _, _| x.sqrt_()), |x, _, _| x.sqrt()),
        (("relu_", |x, _, _| x.relu_()), |x, _, _| {
            if x < 0.0 { 0.0 } else { x }
        }),
        (
            ("clamp_(lo, hi)", |x, _, _| x.clamp_(-100.0, 50.0)),
            |x, _, _| clamp_ref(x, Some(-100.0), Some(50.0)),
        ),
        (("clamp_(lo)", |x, _, _| x.clamp_(-0.0, None)), |x, _, _| {
            clamp_ref(x, Some(-0.0), None)
        }),
        (("clamp_(hi)", |x, _, _| x.clamp_(None, 0.0)), |x, _, _| {
            clamp_ref(x, None, Some(0.0))
        }),
        (
            ("clamp_(hi < lo)", |x, _, _| x.clamp_(3.0, -3.0)),
            |x, _, _| clamp_ref(x, Some(3.0), Some(-3.0)),
        ),
        (
            ("clamp_(NaN lo)", |x, _, _| {
                x.clamp_(f32::from_bits(0x7fc0_0042), 1.0)
            }),
            |x, _, _| clamp_ref(x, Some(f32::from_bits(0x7fc0_0042)), Some(1.0)),
        ),
        (
            ("clamp_(NaN hi)", |x, _, _| {
                x.clamp_(-1.0, f32::from_bits(0xffc0_0043))
            }),
            |x, _, _| clamp_ref(x, Some(-1.0), Some(f32::from_bits(0xffc0_0043))),
        ),
        (("addcmul_", |x, a, b| x.addcmul_(a, b, 0.3)), |x, a, b| {
            x + 0.3 * a * b
        }),
        (
            ("addcdiv_", |x, a, b| x.addcdiv_(a, b, -0.001)),
            |x, a, b| x + -0.001 * a / b,
        ),
        (("add", |x, a, _| x.add(a)), |x, a, _| x + a),
        (("mul(s)", |x, _, _| x * 1.5), |x, _, _| x * 1.5),
        (("div(s)", |x, _, _| x / 1.5), |x, _, _| x / 1.5),
        (("neg", |x, _, _| x.neg()), |x, _, _| -x),
        (("sqrt", |x, _, _| x.sqrt()), |x, _, _| x.sqrt()),
        (
            ("relu", |x, _, _| x.relu()),
            |x, _, _| if x < 0.0 { 0.0 } else { x },
        ),
        (("clamp", |x, _, _| x.clamp(-1.0, None)), |x, _, _| {
            clamp_ref(x, Some(-1.0), None)
        }),
        (("addcmul", |x, a, b| x.addcmul(a, b, 0.3)), |x, a, b| {
            x + 0.3 * a * b
        }),
    ]
}

/// Runs every case at every length and offset, asserts the bits against
/// the formula, and returns all results' bits (for the child comparison).
fn run_all() -> Vec<u32> {
    let mut all = Vec::new();
    for ((name, op), want) in cases() {
        for n in LENS {
            for off in 0..4 {
                let (x, xv) = at_offset(n, off, 1);
                let (a, av) = at_offset(n, 3 - off, 2);
                let (b, bv) = at_offset(n, (off + 1) % 4, 3);
                let b = b.abs().add(0.5);
                let bv: Vec<f32> = bv.iter().map(|v| v.abs() + 0.5).collect();
                let got = op(&x, &a, &b).to_vec();
                let expect: Vec<f32> = (0..n).map(|i| want(xv[i], av[i], bv[i])).collect();
                assert_eq!(bits(&got), bits(&expect), "{name}, n = {n}, offset {off}");
                all.extend(bits(&got));
            }
        }
    }
    all
}

#[test]
fn wide_ops_match_the_scalar_formula() {
    let dump = run_all();
    if std::env::var_os("FUNCZ_WIDE_DUMP").is_some() {
        println!(
            "DUMP {}",
            dump.iter()
                .map(|b| format!("{b:x}"))
                .collect::<Vec<_>>()
                .join(",")
        );
    }
}

#[test]
fn integer_relu_and_clamp_keep_their_values() {
    for n in LENS {
        let v: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1001 - 500).collect();
        let x = Tensor::from_vec(v.clone(), &[n]);
        x.relu_();
        let want: Vec<i64> = v.iter().map(|&y| y.max(0)).collect();
        assert_eq!(x.to_vec(), want, "relu_ n = {n}");
        let x = Tensor::from_vec(v.clone(), &[n]);
        x.clamp_(None, 7);
        let want: Vec<i64> = v.iter().map(|&y| y.min(7)).collect();
        assert_eq!(x.to_vec(), want, "clamp_(None, 7) n = {n}");
        let x = Tensor::from_vec(v.clone(), &[n]);
        x.clamp_(i64::MIN, i64::MAX);
        assert_eq!(x.to_vec(), v, "clamp_(MIN, MAX) n = {n}");
    }
}

#[test]
fn baseline_loops_give_the_same_bits() {
    if std::env::var_os("FUNCZ_WIDE_DUMP").is_some() {
        return; // the child itself
    }
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "wide_ops_match_the_scalar_formula",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FUNCZ_NO_AVX2", "1")
        .env("FUNCZ_WIDE_DUMP", "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    let line = stdout
        .lines()
        .find_map(|l| l.split("DUMP ").nth(1))
        .expect("the child printed its results");
    let child: Vec<u32> = line
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| u32::from_str_radix(s, 16).expect("hex"))
        .collect();
    assert_eq!(child, run_all(), "baseline and wide loops differ");
}
