//! The `try_*` twins: the same result as the op when it succeeds, and, when
//! it would panic, an `Error` whose text is exactly the panic message (the
//! panic is caught here, in the test, to compare; the twins never catch).

use std::panic::{AssertUnwindSafe, catch_unwind};

use funcz_runtime::trace::trace;
use funcz_runtime::{Error, Tensor};

/// What `f` returns, or its panic message.
fn outcome<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(prev);
    r.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .expect("a string panic payload")
    })
}

/// The panic message of `f`, or `None` if it returns.
fn panic_message<R>(f: impl FnOnce() -> R) -> Option<String> {
    outcome(f).err()
}

/// Checks one case: `fallible` errs iff `panicking` panics, with the same
/// text; on success both give the same shape and values.
#[track_caller]
fn agree(
    fallible: impl FnOnce() -> Result<Tensor<f32>, Error>,
    panicking: impl FnOnce() -> Tensor<f32>,
) -> Option<Error> {
    let got = fallible();
    let want = outcome(panicking);
    match (&got, want) {
        (Err(e), Err(msg)) => assert_eq!(e.to_string(), msg),
        (Ok(t), Ok(u)) => {
            assert_eq!(t.shape(), u.shape());
            assert_eq!(t.strides(), u.strides());
            assert_eq!(t.to_vec(), u.to_vec());
        }
        (Ok(t), Err(msg)) => panic!("try_ succeeded with {t:?} but the op panics: {msg}"),
        (Err(e), Ok(_)) => panic!("try_ failed with {e} but the op succeeds"),
    }
    got.err()
}

fn grid(shape: &[usize]) -> Tensor<f32> {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec((0..n).map(|x| x as f32).collect(), shape)
}

#[test]
fn view_and_reshape_match_the_panics() {
    let a = grid(&[2, 3]);
    let at = a.t();
    let shapes: &[&[i64]] = &[
        &[3, 2],
        &[-1],
        &[6, 1],
        &[4, -1],
        &[-1, -1],
        &[2, -2],
        &[7],
        &[
            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 6,
        ],
    ];
    let mut errors = 0;
    for &s in shapes {
        for t in [&a, &at] {
            errors += agree(|| t.try_view(s), || t.view(s)).is_some() as usize;
            errors += agree(|| t.try_reshape(s), || t.reshape(s)).is_some() as usize;
        }
    }
    // The transposed tensor cannot be viewed as anything but [3, 2].
    assert!(errors >= 14, "{errors}");
    let empty = grid(&[0, 3]);
    let e = agree(|| empty.try_view([-1, 0]), || empty.view([-1, 0])).unwrap();
    assert!(e.detail().contains("ambiguous"), "{e}");
}

#[test]
fn narrow_and_select_match_the_panics() {
    let a = grid(&[3, 4]);
    let s = Tensor::<f32>::scalar(1.0);
    let mut errors = 0;
    for dim in [-3i64, -2, -1, 0, 1, 2] {
        for start in [-5i64, -4, -1, 0, 2, 3, 4, 5] {
            for len in [-1i64, 0, 1, 2, 4] {
                errors += agree(
                    || a.try_narrow(dim, start, len),
                    || a.narrow(dim, start, len),
                )
                .is_some() as usize;
            }
            errors +=
                agree(|| a.try_select(dim, start), || a.select(dim, start)).is_some() as usize;
        }
    }
    assert!(errors > 100, "{errors}");
    let e = agree(|| s.try_narrow(0, 0, 1), || s.narrow(0, 0, 1)).unwrap();
    assert_eq!(e.op(), "narrow");
    agree(|| s.try_select(0, 0), || s.select(0, 0)).unwrap();
}

#[test]
fn matmul_matches_the_panics() {
    let shapes: &[&[usize]] = &[
        &[],
        &[3],
        &[4],
        &[2, 3],
        &[3, 2],
        &[3, 4],
        &[2, 2, 3],
        &[5, 3, 2],
        &[1, 3, 4],
        &[3, 1, 2, 3],
    ];
    let mut errors = 0;
    for &x in shapes {
        for &y in shapes {
            let (a, b) = (grid(x), grid(y));
            errors += agree(|| a.try_matmul(&b), || a.matmul(&b)).is_some() as usize;
        }
    }
    assert!(errors > 50, "{errors}");
    let ok = grid(&[2, 3]).try_matmul(&grid(&[3, 2])).unwrap();
    assert_eq!(ok.to_vec(), vec![10.0, 13.0, 28.0, 40.0]);
}

#[test]
fn binary_ops_match_the_panics() {
    let shapes: &[&[usize]] = &[&[], &[1], &[3], &[4], &[2, 3], &[2, 1], &[3, 1, 4]];
    let mut errors = 0;
    for &x in shapes {
        for &y in shapes {
            let (a, b) = (grid(x), grid(y).add(1.0));
            errors += agree(|| a.try_add(&b), || a.add(&b)).is_some() as usize;
            errors += agree(|| a.try_sub(&b), || a.sub(&b)).is_some() as usize;
            errors += agree(|| a.try_mul(&b), || a.mul(&b)).is_some() as usize;
            errors += agree(|| a.try_div(&b), || a.div(&b)).is_some() as usize;
        }
        let a = grid(x);
        assert!(agree(|| a.try_mul(2.0), || a.mul(2.0)).is_none());
    }
    // [3]|[4], [4]|[2, 3], [3]|[3, 1, 4], [2, 3]|[3, 1, 4], both ways, 4 ops.
    assert_eq!(errors, 32);
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let a = Tensor::<i64>::from_vec(vec![4, 6], &[2]);
    let z = Tensor::<i64>::from_vec(vec![1, 0], &[2]);
    let e = a.try_div(&z).unwrap_err();
    assert_eq!(Some(e.to_string()), panic_message(|| a.div(&z)));
    assert_eq!(a.try_div(z.add(1)).unwrap().to_vec(), vec![2, 6]);
    // The divisor is checked before the shapes, as in `div`.
    let e = a.try_div(Tensor::<i64>::zeros(&[3])).unwrap_err();
    assert!(e.detail().starts_with("integer division by zero"), "{e}");
}

#[test]
fn errors_record_nothing_and_successes_trace_as_the_op() {
    let a = grid(&[2, 3]);
    let (r, g) = trace("f", &[("a", &a)], || {
        assert!(a.try_view([5]).is_err());
        assert!(a.try_matmul(&a).is_err());
        a.try_narrow(1, 0, 2).unwrap().try_add(1.0).unwrap()
    });
    assert_eq!(r.to_vec(), vec![1.0, 2.0, 4.0, 5.0]);
    assert_eq!(g.ops(), vec!["slice", "add"]);
}

#[test]
fn error_is_a_std_error() {
    let e: Box<dyn std::error::Error + Send + Sync> =
        Box::new(grid(&[2]).try_select(0, 2).unwrap_err());
    assert_eq!(
        e.to_string(),
        "funcz: select: index 2 out of range for tensor of size [2] at dimension 0"
    );
}

#[test]
fn from_vec_checks_length_and_rank() {
    for (len, shape) in [
        (6usize, vec![2usize, 3]),
        (5, vec![2, 3]),
        (0, vec![0, 4]),
        (1, vec![]),
        (2, vec![]),
        (1, vec![1; 9]),
    ] {
        let data = vec![1.0f32; len];
        let got = Tensor::try_from_vec(data.clone(), &shape);
        match (got, outcome(|| Tensor::from_vec(data, &shape))) {
            (Ok(t), Ok(u)) => assert_eq!((t.shape(), t.to_vec()), (u.shape(), u.to_vec())),
            // from_vec's panics carry the detail (assert_eq! adds its own
            // preamble and the rank check names no op).
            (Err(e), Err(msg)) => assert!(msg.contains(e.detail()), "{e} vs {msg}"),
            (got, want) => panic!("{shape:?}: {got:?} vs {want:?}"),
        }
    }
    let e = Tensor::<f32>::try_from_vec(vec![], &[usize::MAX, 2]).unwrap_err();
    assert!(e.detail().contains("size is too large"), "{e}");
}
