//! Constructors: `zeros`, `ones`, `full`, `arange`, `eye`, seeded `rand`
//! and `randn`, `zeros_like`, `ones_like`. All return fresh contiguous
//! tensors and are recorded under PyTorch's names.

use crate::element::{Element, FloatElement};
use crate::storage::huge;
use crate::tensor::Tensor;
use crate::trace::{self, Arg, ToArg};

use super::scalar_arg;

/// A tiny deterministic generator (SplitMix64): fast, statistically sound
/// for test data, and identical on every platform.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with `bits` random mantissa bits (24 for f32,
    /// 53 for f64), so the value is exact in the target type and never
    /// rounds up to 1.
    fn uniform(&mut self, bits: u32) -> f64 {
        (self.next_u64() >> (64 - bits)) as f64 / (1u64 << bits) as f64
    }
}

fn mantissa_bits<T: FloatElement>() -> u32 {
    if std::mem::size_of::<T>() == 4 {
        24
    } else {
        53
    }
}

/// The number of elements of a new tensor of `shape` and element type
/// `T`, panicking (at the caller's line, naming `op` and the shape) if the
/// sizes overflow `int64` or the memory cannot be allocated.
#[track_caller]
fn numel_of<T>(op: &str, shape: &[usize]) -> usize {
    crate::dims::check_rank(op, shape);
    crate::storage::check_alloc::<T>(op, shape)
}

fn shape_arg(shape: &[usize]) -> Arg {
    shape.to_arg()
}

impl<T: Element> Tensor<T> {
    /// A tensor of zeros (aten `zeros`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let z = Tensor::<f32>::zeros(&[2, 3]);
    /// assert_eq!(z.shape(), &[2, 3]);
    /// assert_eq!(z.to_vec(), vec![0.0; 6]);
    /// ```
    #[track_caller]
    pub fn zeros(shape: &[usize]) -> Tensor<T> {
        let n = numel_of::<T>("zeros", shape);
        trace::op(
            "zeros",
            || vec![shape_arg(shape)],
            || Tensor::from_contiguous(huge::zeroed(T::zero(), n), shape),
        )
    }

    /// A tensor of ones (aten `ones`).
    #[track_caller]
    pub fn ones(shape: &[usize]) -> Tensor<T> {
        let n = numel_of::<T>("ones", shape);
        trace::op(
            "ones",
            || vec![shape_arg(shape)],
            || Tensor::from_contiguous(huge::filled(T::one(), n), shape),
        )
    }

    /// A tensor filled with `value` (aten `full`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// assert_eq!(Tensor::<i64>::full(&[2], 7).to_vec(), vec![7, 7]);
    /// ```
    #[track_caller]
    pub fn full(shape: &[usize], value: T) -> Tensor<T> {
        let n = numel_of::<T>("full", shape);
        trace::op(
            "full",
            || vec![shape_arg(shape), scalar_arg(value)],
            || Tensor::from_contiguous(huge::filled(value, n), shape),
        )
    }

    /// `[0, 1, ..., n - 1]` (aten `arange`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// assert_eq!(Tensor::<i32>::arange(4).to_vec(), vec![0, 1, 2, 3]);
    /// ```
    #[track_caller]
    pub fn arange(n: usize) -> Tensor<T> {
        numel_of::<T>("arange", &[n]);
        trace::op(
            "arange",
            || vec![n.to_arg()],
            || {
                let mut v = huge::with_capacity(n);
                v.extend((0..n).map(|i| T::from_f64(i as f64)));
                Tensor::from_contiguous(v, &[n])
            },
        )
    }

    /// `start, start + step, ...` up to but excluding `end` (aten
    /// `arange`): `ceil((end - start) / step)` elements, each computed as
    /// `start + i * step` in double precision as PyTorch does.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// assert_eq!(Tensor::<f32>::arange_step(0.0, 1.0, 0.25).to_vec(), vec![0.0, 0.25, 0.5, 0.75]);
    /// assert_eq!(Tensor::<i64>::arange_step(5, 0, -2).to_vec(), vec![5, 3, 1]);
    /// ```
    #[track_caller]
    pub fn arange_step(start: T, end: T, step: T) -> Tensor<T> {
        let (s, e, st) = (
            Element::to_f64(start),
            Element::to_f64(end),
            Element::to_f64(step),
        );
        if st == 0.0 {
            panic!("funcz: arange: step must be nonzero (start {start}, end {end})");
        }
        if !(s.is_finite() && e.is_finite()) {
            panic!("funcz: arange: unsupported range: {start} -> {end}");
        }
        if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
            panic!(
                "funcz: arange: upper bound and larger bound inconsistent with step sign \
                 (start {start}, end {end}, step {step})"
            );
        }
        let len = ((e - s) / st).ceil().max(0.0);
        if len >= crate::storage::MAX_NUMEL as f64 {
            panic!(
                "funcz: arange: the range {start} to {end} with step {step} has {len} elements, \
                 more than int64 max"
            );
        }
        let n = len as usize;
        numel_of::<T>("arange", &[n]);
        trace::op(
            "arange",
            || vec![scalar_arg(start), scalar_arg(end), scalar_arg(step)],
            || {
                let v: Vec<T> = if T::IS_FLOAT {
                    (0..n).map(|i| T::from_f64(s + st * i as f64)).collect()
                } else {
                    // The step is added between elements only, so the
                    // value past the end (which may not fit `T`) is never
                    // computed.
                    let mut cur = start;
                    (0..n)
                        .map(|i| {
                            if i > 0 {
                                cur += step;
                            }
                            cur
                        })
                        .collect()
                };
                Tensor::from_contiguous(v, &[n])
            },
        )
    }

    /// The `n x n` identity matrix (aten `eye`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// assert_eq!(Tensor::<i32>::eye(2).to_vec(), vec![1, 0, 0, 1]);
    /// ```
    #[track_caller]
    pub fn eye(n: usize) -> Tensor<T> {
        numel_of::<T>("eye", &[n, n]);
        trace::op(
            "eye",
            || vec![n.to_arg()],
            || {
                let mut v = vec![T::zero(); n * n];
                for i in 0..n {
                    v[i * n + i] = T::one();
                }
                Tensor::from_contiguous(v, &[n, n])
            },
        )
    }

    /// Zeros of `self`'s shape (aten `zeros_like`), always contiguous.
    #[track_caller]
    pub fn zeros_like(&self) -> Tensor<T> {
        numel_of::<T>("zeros_like", self.shape());
        trace::op(
            "zeros_like",
            || vec![self.to_arg()],
            || Tensor::from_contiguous(huge::zeroed(T::zero(), self.numel()), self.shape()),
        )
    }

    /// Ones of `self`'s shape (aten `ones_like`), always contiguous.
    #[track_caller]
    pub fn ones_like(&self) -> Tensor<T> {
        numel_of::<T>("ones_like", self.shape());
        trace::op(
            "ones_like",
            || vec![self.to_arg()],
            || Tensor::from_contiguous(huge::filled(T::one(), self.numel()), self.shape()),
        )
    }
}

impl<T: FloatElement> Tensor<T> {
    /// Uniform samples in `[0, 1)` from a deterministic generator seeded
    /// with `seed` (aten `rand`): the same seed gives the same tensor on
    /// every platform.
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f32>::rand(&[1000], 7);
    /// assert!(a.to_vec().iter().all(|&x| (0.0..1.0).contains(&x)));
    /// assert!(a.equal(&Tensor::rand(&[1000], 7)));
    /// ```
    #[track_caller]
    pub fn rand(shape: &[usize], seed: u64) -> Tensor<T> {
        let n = numel_of::<T>("rand", shape);
        trace::op(
            "rand",
            || vec![shape_arg(shape), Arg::Int(seed as i64)],
            || {
                let mut g = SplitMix64(seed);
                let bits = mantissa_bits::<T>();
                let mut v = huge::with_capacity(n);
                v.extend((0..n).map(|_| T::from_f64(g.uniform(bits))));
                Tensor::from_contiguous(v, shape)
            },
        )
    }

    /// Standard normal samples (Box–Muller) from a deterministic generator
    /// seeded with `seed` (aten `randn`).
    ///
    /// ```
    /// use funcz_runtime::Tensor;
    /// let a = Tensor::<f64>::randn(&[10000], 1);
    /// assert!(a.mean().item().abs() < 0.05);
    /// ```
    #[track_caller]
    pub fn randn(shape: &[usize], seed: u64) -> Tensor<T> {
        let n = numel_of::<T>("randn", shape);
        trace::op(
            "randn",
            || vec![shape_arg(shape), Arg::Int(seed as i64)],
            || {
                let mut g = SplitMix64(seed);
                let mut v = huge::with_capacity(n);
                while v.len() < n {
                    let u1 = 1.0 - g.uniform(53); // (0, 1]
                    let u2 = g.uniform(53);
                    let r = (-2.0 * u1.ln()).sqrt();
                    let theta = 2.0 * std::f64::consts::PI * u2;
                    v.push(T::from_f64(r * theta.cos()));
                    if v.len() < n {
                        v.push(T::from_f64(r * theta.sin()));
                    }
                }
                Tensor::from_contiguous(v, shape)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_values() {
        // Reference outputs of SplitMix64 seeded with 0 (Vigna's C code).
        let mut g = SplitMix64(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn uniform_never_reaches_one() {
        let mut g = SplitMix64(u64::MAX);
        for _ in 0..1000 {
            let u = g.uniform(24) as f32;
            assert!((0.0..1.0).contains(&u));
        }
    }
}
