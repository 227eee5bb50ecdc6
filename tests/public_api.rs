//! The facade's public surface: what users name is at the top level, the
//! paths generated code uses still resolve, and implementation modules are
//! not part of it (funcz-ui/tests/surface/*.rs must fail to compile).

use funcz::ndarray::{Array2, array};
use funcz::trace::{Graph, Tracer, untraced};
use funcz::{Element, Error, FloatElement, Tensor, functionalize};

/// A service-style function: every shape error is a value.
fn head(x: &Tensor, rows: usize, w: &Tensor) -> funcz::Result<Tensor> {
    x.try_narrow(0, 0, rows)?.try_matmul(w)?.try_add(1.0)
}

#[functionalize]
fn bump(a: &mut Tensor) {
    a.select(0, 0).add_(1.0);
}

fn mean_of<T: FloatElement>(t: &Tensor<T>) -> T {
    t.mean().item()
}

#[test]
fn users_reach_everything_from_the_top_level() {
    let x = Tensor::from(array![[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]]);
    let w = Tensor::<f32>::ones(&[2, 1]);
    assert_eq!(head(&x, 2, &w).unwrap().to_vec(), vec![4.0, 8.0]);
    let e: Error = head(&x, 4, &w).unwrap_err();
    assert_eq!(e.op(), "narrow");
    assert!(
        e.to_string()
            .starts_with("funcz: narrow: start (0) + length (4) exceeds")
    );

    let mut a = Tensor::<f32>::zeros(&[2, 2]);
    let (_, g): (_, Graph) = Tracer::new("bump").input("a", &a).run(|| bump(&mut a));
    assert!(g.is_functional());
    assert_eq!(a.to_vec(), vec![1.0, 1.0, 0.0, 0.0]);

    assert_eq!(mean_of(&x), 3.5);
    assert_eq!(<i64 as Element>::DTYPE, "int64");
    assert_eq!(untraced(|| Array2::try_from(&x.t()).unwrap()).dim(), (2, 3));
}

#[test]
fn generated_code_paths_resolve() {
    // Expansions call `::funcz::rt::...`; `__private` holds the same items.
    assert_eq!(funcz::rt::Mode::Views, funcz::__private::rt::Mode::Views);
    assert_ne!(funcz::rt::Mode::Views, funcz::rt::Mode::Copies);
}
