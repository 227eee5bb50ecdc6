//! `rt::fuse_loop`, the loop of the kernels `#[functionalize]` compiles for
//! fused runs, which runs an AVX2 copy of itself when the CPU has AVX2
//! (`FUNCZ_NO_AVX2` forces the baseline copy): its results are compared bit
//! for bit with the per-element formula computed here, at every length
//! 0..=257 (around the 64-element chunks and the vector widths), at slice
//! starts 0..4 elements into a buffer (every alignment), with operands that
//! are slices, scalars or a mix, on values with every float corner.
//! `baseline_copy_gives_the_same_bits` runs the same checks in a child
//! process with `FUNCZ_NO_AVX2` set. `rt::k::clamp` (written to vectorize)
//! is compared with the `clamp` op on every bound combination, NaN bounds
//! included.

use funcz_runtime::Tensor;
use funcz_runtime::rt::{self, FusedOperand, FusedParams, Fusion, fuse_loop, k};

#[path = "../src/ops/kernel/float_corners.rs"]
mod float_corners;

use float_corners::{bits, values};

/// The bench's ten-op chain as `#[functionalize]` compiles it (six
/// operands), per element.
fn chain(v: f32, a: [f32; 6], p: &[FusedParams<f32>; 10]) -> f32 {
    let v = k::mul(v, a[0], &p[0]);
    let v = k::add(v, a[1], &p[1]);
    let v = k::sub(v, a[2], &p[2]);
    let v = k::relu(v, &p[3]);
    let v = k::div(v, a[3], &p[4]);
    let v = k::sub(v, a[4], &p[5]);
    let v = k::add(v, a[5], &p[6]);
    let v = k::clamp(v, &p[7]);
    let v = k::abs(v, &p[8]);
    k::neg(v, &p[9])
}

fn chain_params(lo: Option<f32>, hi: Option<f32>) -> [FusedParams<f32>; 10] {
    let mut p = [FusedParams::default(); 10];
    p[7].lo = lo;
    p[7].hi = hi;
    p
}

/// Runs every check of this file; returns how many cases ran.
fn check_all() -> usize {
    let mut cases = 0;
    let bounds = [
        (Some(-1000.0), Some(1000.0)),
        (Some(-1.0), None),
        (None, Some(2.5)),
        (Some(3.0), Some(-3.0)),
        (Some(f32::NAN), Some(1.0)),
        (Some(-1.0), Some(f32::from_bits(0x7fc0_4321))),
    ];
    let scalars = [1.01f32, -0.5, f32::NAN, 0.0, 7.0, -2.0];
    for n in 0..=257 {
        for off in 0..4 {
            let x0 = values(n + 4, 1);
            let ws: Vec<Vec<f32>> = (0..6).map(|s| values(n + 4, s + 2)).collect();
            // Which operands are scalars: none, all, the chain's (1, 4 are
            // tensors) and its complement.
            for mask in [0u32, 0b11_1111, 0b10_1101, 0b01_0010] {
                let (lo, hi) = bounds[(n + off + mask as usize) % bounds.len()];
                let p = chain_params(lo, hi);
                let x = &x0[off..off + n];
                let ops: Vec<FusedOperand<'_, f32>> = (0..6)
                    .map(|k| {
                        if mask >> k & 1 == 1 {
                            FusedOperand::Scalar(scalars[k])
                        } else {
                            FusedOperand::Slice(&ws[k][3 - off..3 - off + n])
                        }
                    })
                    .collect();
                let want: Vec<f32> = (0..n)
                    .map(|i| {
                        let a = std::array::from_fn(|k| match ops[k] {
                            FusedOperand::Scalar(v) => v,
                            FusedOperand::Slice(d) => d[i],
                            FusedOperand::None => unreachable!(),
                        });
                        chain(x[i], a, &p)
                    })
                    .collect();
                let mut buf = x0.clone();
                fuse_loop::<f32, 6>(&mut buf[off..off + n], &ops, |v, a| chain(v, a, &p));
                assert_eq!(
                    bits(&buf[off..off + n]),
                    bits(&want),
                    "chain n={n} off={off} mask={mask:b}"
                );
                // Nothing outside the slice is written.
                assert_eq!(bits(&buf[..off]), bits(&x0[..off]), "n={n} off={off}");
                assert_eq!(
                    bits(&buf[off + n..]),
                    bits(&x0[off + n..]),
                    "n={n} off={off}"
                );
                cases += 1;
            }
            // No operand, selects only (the run whose result may be its own
            // element).
            let p = [
                FusedParams::default(),
                FusedParams {
                    s0: 6.0,
                    ..Default::default()
                },
                FusedParams {
                    s0: 0.5,
                    ..Default::default()
                },
            ];
            let relu6 = |v: f32| k::clamp_min(k::clamp_max(k::relu(v, &p[0]), &p[1]), &p[2]);
            let want: Vec<f32> = x0[off..off + n].iter().map(|&v| relu6(v)).collect();
            let mut buf = x0.clone();
            fuse_loop::<f32, 0>(&mut buf[off..off + n], &[], |v, []| relu6(v));
            assert_eq!(bits(&buf[off..off + n]), bits(&want), "relu6 n={n}");
            cases += 1;
        }
    }
    cases
}

/// The default thresholds (this thread never calls `set_min_fused`):
/// a run with a compiled kernel fuses from 2048 elements when the kernel's
/// AVX2 copy runs, other runs (and kernels on the baseline copy) from 4M.
/// Returns whether the AVX2 copy is on.
fn check_default_thresholds() -> bool {
    let avx2 = cfg!(target_arch = "x86_64")
        && std::is_x86_feature_detected!("avx2")
        && std::env::var_os("FUNCZ_NO_AVX2").is_none();
    for n in [2047, 2048, 5000] {
        let x = Tensor::from_vec(values(n, 4), &[n]);
        let want = x.add(1.0).mul(2.0).neg().to_vec();
        // With a kernel.
        let mut t = x.mul(1.0);
        let (passes, blocks) = (rt::fused_passes(), rt::kernel_blocks());
        let f = Fusion::new().add_(1.0).mul_(2.0).neg_().kernel(
            &["add_", "mul_", "neg_"],
            &|x, o, p| {
                let (p0, p1, p2) = (p[0], p[1], p[2]);
                fuse_loop::<_, 2>(x, o, |v, [a0, a1]| {
                    k::neg(k::mul(k::add(v, a0, &p0), a1, &p1), &p2)
                })
            },
        );
        rt::fused_value(&mut t, f);
        assert_eq!(bits(&t.to_vec()), bits(&want), "n={n}");
        let fused = avx2 && n >= 2048;
        assert_eq!(rt::fused_passes() - passes, u64::from(fused), "n={n}");
        assert_eq!(rt::kernel_blocks() > blocks, fused, "n={n}");
        // Without: op by op below 4M elements.
        let mut t = x.mul(1.0);
        let passes = rt::fused_passes();
        rt::fused_value(&mut t, Fusion::new().add_(1.0).mul_(2.0).neg_());
        assert_eq!(bits(&t.to_vec()), bits(&want), "n={n}");
        assert_eq!(rt::fused_passes(), passes, "n={n}");
    }
    avx2
}

#[test]
fn fuse_loop_gives_the_formula_bits() {
    assert_eq!(check_all(), 258 * 4 * 5);
}

#[test]
fn kernel_runs_fuse_from_2048_elements_on_the_avx2_copy() {
    let avx2 = check_default_thresholds();
    #[cfg(target_arch = "x86_64")]
    if std::env::var_os("FUNCZ_NO_AVX2").is_none() {
        assert_eq!(avx2, std::is_x86_feature_detected!("avx2"));
    }
}

/// Run by `baseline_copy_gives_the_same_bits` in a child process.
#[test]
fn child_checks_the_baseline_copy() {
    if std::env::var_os("FUNCZ_FUSE_LOOP_CHILD").is_some() {
        let cases = check_all();
        assert!(!check_default_thresholds(), "the baseline copy runs");
        println!("FUNCZ_FUSE_LOOP_CHILD ran {cases} cases");
    }
}

#[test]
fn baseline_copy_gives_the_same_bits() {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "child_checks_the_baseline_copy",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FUNCZ_NO_AVX2", "1")
        .env("FUNCZ_FUSE_LOOP_CHILD", "1")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed: {stdout}");
    assert!(
        stdout.contains(&format!("FUNCZ_FUSE_LOOP_CHILD ran {} cases", 258 * 4 * 5)),
        "child did not run: {stdout}"
    );
}

#[test]
#[should_panic(expected = "a fused operand of 3 elements for a block of 4")]
fn fuse_loop_rejects_a_short_operand() {
    let mut x = [1.0f32; 4];
    fuse_loop::<f32, 1>(&mut x, &[FusedOperand::Slice(&[1.0; 3])], |v, [a]| v + a);
}

#[test]
#[should_panic(expected = "a fused kernel of 2 operands was given 1")]
fn fuse_loop_rejects_a_wrong_operand_count() {
    let mut x = [1.0f32; 4];
    fuse_loop::<f32, 2>(&mut x, &[FusedOperand::Scalar(1.0)], |v, [a, b]| v + a + b);
}

#[test]
fn k_clamp_is_the_clamp_op() {
    let x = values(300, 9);
    let t = Tensor::from_vec(x.clone(), &[300]);
    let b = [
        None,
        Some(-1.0f32),
        Some(0.0),
        Some(-0.0),
        Some(2.5),
        Some(f32::INFINITY),
        Some(f32::NEG_INFINITY),
        Some(f32::NAN),
        Some(f32::from_bits(0xffc0_0777)),
    ];
    for lo in b {
        for hi in b {
            if lo.is_none() && hi.is_none() {
                continue;
            }
            let want = t.clamp(lo, hi).to_vec();
            let p = FusedParams {
                lo,
                hi,
                ..Default::default()
            };
            let got: Vec<f32> = x.iter().map(|&v| k::clamp(v, &p)).collect();
            assert_eq!(bits(&got), bits(&want), "clamp({lo:?}, {hi:?})");
        }
    }
    // Integers: a missing bound is the type's end.
    let p = FusedParams {
        lo: Some(-3i64),
        hi: None,
        ..Default::default()
    };
    assert_eq!(k::clamp(i64::MIN, &p), -3);
    assert_eq!(k::clamp(i64::MAX, &p), i64::MAX);
    let p = FusedParams {
        lo: None,
        hi: Some(5i32),
        ..Default::default()
    };
    assert_eq!(k::clamp(i32::MIN, &p), i32::MIN);
    assert_eq!(k::clamp(i32::MAX, &p), 5);
}
