//! The mask, cast and indexed ops traced from eager code (in-place forms,
//! through views, on inputs), exported with `Graph::to_onnx` (which
//! functionalizes them), run in tract and compared with the eager results,
//! including the new values of mutated inputs.
#![cfg(feature = "onnx")]

mod support;

use funcz_runtime::Tensor;
use support::onnx_check::Check;

fn f32s(n: usize, shape: &[usize]) -> Tensor<f32> {
    let v = (0..n)
        .map(|i| (i as f32 * 0.37 - 1.1).sin() * 2.0)
        .collect();
    Tensor::from_vec(v, shape)
}

#[test]
fn comparisons_where_logic_and_casts() {
    let a = f32s(12, &[3, 4]);
    let b = f32s(4, &[4]);
    let c = Check::new("masks").input("a", &a).input("b", &b).run(|| {
        let m = a.gt(&b).logical_and(&a.lt(1.0)).logical_or(&a.eq(0.0));
        let n = a.le(&b).logical_xor(&a.ge(-0.5)).logical_not();
        let w = a
            .where_self(&m, &b)
            .add(a.where_self(&n.logical_not(), 0.25));
        let k = m.float().add(a.ne(&b).long().double().float());
        let any = m.any().float().add(n.all().float());
        (w, k, any, m.int().long())
    });
    assert!(c.model.graph.is_functional());
}

#[test]
fn masked_fill_and_reads_through_views() {
    let a = f32s(16, &[4, 4]);
    let c = Check::new("causal").input("a", &a).run(|| {
        let r = Tensor::<i64>::arange(4).view([4, 1]);
        let col = Tensor::<i64>::arange(4).view([1, 4]);
        let causal = col.gt(&r);
        a.narrow(0, 1, 3)
            .masked_fill_(&causal.narrow(0, 1, 3), -1.0e9);
        let idx = Tensor::<i64>::from_vec(vec![3, 0, 3], &[3]);
        let sel = a.index_select(1, &idx);
        let gi = Tensor::<i64>::from_vec(vec![0, 2, 1, 3, 3, 0, 2, 1], &[4, 2]);
        let g = a.gather(1, &gi);
        let src = Tensor::<f32>::from_vec((0..16).map(|v| v as f32).collect(), &[16]);
        a.t()
            .narrow(0, 0, 2)
            .masked_scatter_(&a.t().narrow(0, 0, 2).gt(0.0), &src);
        let ms = sel.masked_scatter(
            &Tensor::<bool>::from_vec(vec![true, false, true], &[3]),
            &src,
        );
        (sel, g, a.masked_fill(&a.lt(0.0), 0.0), ms)
    });
    assert_eq!(c.model.update_of("a_1"), Some(0));
}

#[test]
fn indexed_writes_on_inputs() {
    let x = f32s(12, &[3, 4]);
    let y = f32s(12, &[3, 4]);
    let src = f32s(8, &[2, 4]);
    let c = Check::new("writes")
        .input("x", &x)
        .input("y", &y)
        .input("src", &src)
        .run(|| {
            let rows = Tensor::<i64>::from_vec(vec![2, 0], &[2]);
            x.index_copy_(0, &rows, &src);
            x.index_add_(0, &Tensor::<i64>::from_vec(vec![1, 1], &[2]), &src);
            x.index_fill_(1, &Tensor::<i64>::from_vec(vec![-1], &[1]), 5.0);
            let gi = Tensor::<i64>::from_vec(vec![1, 0, 2, 2], &[1, 4]);
            y.scatter_(0, &gi, &src);
            y.scatter_add_(0, &gi, &src);
            y.t()
                .scatter_(0, &Tensor::<i64>::from_vec(vec![3, 1, 0], &[1, 3]), -2.0);
            let i0 = Tensor::<i64>::from_vec(vec![0, 2, 0], &[3]);
            let i1 = Tensor::<i64>::from_vec(vec![1, -1, 1], &[3]);
            x.index_put_(
                &[&i0, &i1],
                Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]),
                true,
            );
            x.i((.., 1..3))
                .index_put_(&[&Tensor::<i64>::from_vec(vec![1], &[1])], 7.0, false);
            x.add(&y)
        });
    assert_eq!(c.model.input_updates.len(), 2);
    assert!(c.model.graph.is_functional() && c.model.graph.is_view_free());
}

#[test]
fn take_and_nonzero() {
    let a = f32s(12, &[3, 4]);
    let c = Check::new("take_nonzero").input("a", &a).run(|| {
        // In range, negative (from the end) and through a transpose (the
        // logical row-major order of the view, not the storage's).
        let i = Tensor::<i64>::from_vec(vec![11, 0, -1, 5, -12, 7], &[2, 3]);
        let t = a.take(&i);
        let tt = a.t().take(&i);
        let t0 = a.take(&Tensor::<i64>::from_vec(vec![-5], &[]));
        // Indices of the elements above 0.5, of a mask, and of a 0-d input.
        let nz = a.gt(0.5).float().mul(&a).nonzero();
        let nzm = a.t().lt(0.0).nonzero();
        let nz0 = a.sum().gt(0.0).nonzero();
        (t, tt, t0, nz, nzm, nz0.float())
    });
    assert!(c.model.graph.is_functional());
    for op in ["take", "nonzero"] {
        assert!(c.graph.ops().contains(&op), "{op}");
    }
}
