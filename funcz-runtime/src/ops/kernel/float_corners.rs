//! Test data for the bit-exact kernel tests (the unit tests of
//! `wide.rs`, `tests/wide_kernels.rs`, `tests/fuse_loop.rs`): values with every float corner (signed zeros,
//! subnormals, infinities, NaNs with payloads, the extremes) among
//! ordinary ones, and the bits of a result.

/// `n` values, a third of them corners, the rest spread over [-130, 130];
/// `seed` gives another sequence.
pub fn values(n: usize, seed: u32) -> Vec<f32> {
    let special = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        f32::MIN_POSITIVE / 4.0,
        -f32::MIN_POSITIVE / 3.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffc0_0777),
        f32::MAX,
        -f32::MAX,
        1e-30,
        3.0e7,
    ];
    (0..n as u32)
        .map(|i| {
            let k = i
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed.wrapping_mul(97));
            if k % 3 == 0 {
                special[(k / 3) as usize % special.len()]
            } else {
                (k % 20_011) as f32 * 0.013 - 130.0
            }
        })
        .collect()
}

/// The bits of each value (NaN payloads and signed zeros compare).
pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
