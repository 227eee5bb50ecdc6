//! The op table and the `Tensor` API cannot drift: every row names a real
//! method whose observed behaviour matches its kind (in-place ops bump the
//! version and return the receiver; views share storage; functional ops
//! return fresh storage; in-place views change only the layout).

use funcz_runtime::Tensor;
use funcz_runtime::optable::{OpKind, all};

/// What calling a row's method returned.
pub enum Out {
    One(Tensor),
    Many(Vec<Tensor>),
    Unit,
}

// The rows of `funcz_optable::rows::{indexed, math}`, called in their own files.
#[path = "optable_rows/indexed.rs"]
mod indexed;
#[path = "optable_rows/math.rs"]
mod math;

/// Calls the method `name` on `x` (a 2×2 tensor) with valid arguments.
fn call(name: &str, x: &mut Tensor) -> Option<Out> {
    let y = Tensor::<f32>::from_vec(vec![0.5, 1.5, 2.5, 3.5], &[2, 2]);
    let row = Tensor::<f32>::from_vec(vec![9.0, 8.0], &[2]);
    use Out::*;
    Some(match name {
        "add" => One(x.add(&y)),
        "sub" => One(x.sub(&y)),
        "mul" => One(x.mul(&y)),
        "div" => One(x.div(&y)),
        "neg" => One(x.neg()),
        "abs" => One(x.abs()),
        "exp" => One(x.exp()),
        "log" => One(x.log()),
        "sqrt" => One(x.sqrt()),
        "pow" => One(x.pow(2.0)),
        "relu" => One(x.relu()),
        "sigmoid" => One(x.sigmoid()),
        "tanh" => One(x.tanh()),
        "clamp" => One(x.clamp(0.0, 1.0)),
        "addcmul" => One(x.addcmul(&y, &y, 0.5)),
        "addcdiv" => One(x.addcdiv(&y, &y, 0.5)),
        "lerp" => One(x.lerp(&y, 0.5)),
        "matmul" => One(x.matmul(&y)),
        "sum" => One(x.sum()),
        "sum_dim" => One(x.sum_dim(0, false)),
        "mean" => One(x.mean()),
        "mean_dim" => One(x.mean_dim(1, true)),
        "fill" => One(x.fill(3.0)),
        "zero" => One(x.zero()),
        "copy" => One(x.copy(&y)),
        "clone" => One(x.clone()),
        "view_copy" => One(x.view_copy([4])),
        "t_copy" => One(x.t_copy()),
        "transpose_copy" => One(x.transpose_copy(0, 1)),
        "permute_copy" => One(x.permute_copy([1, 0])),
        "slice_copy" => One(x.slice_copy(0, 0, 2, 2)),
        "narrow_copy" => One(x.narrow_copy(1, 1, 1)),
        "select_copy" => One(x.select_copy(0, 1)),
        "diagonal_copy" => One(x.diagonal_copy(0, 0, 1)),
        "squeeze_copy" => One(x.squeeze_copy()),
        "squeeze_dim_copy" => One(x.squeeze_dim_copy(0)),
        "unsqueeze_copy" => One(x.unsqueeze_copy(0)),
        "expand_copy" => One(x.expand_copy([3, 2, 2])),
        "unfold_copy" => One(x.unfold_copy(1, 1, 1)),
        "as_strided_copy" => One(x.as_strided_copy([2], [1], 0)),
        "alias_copy" => One(x.alias_copy()),
        "detach_copy" => One(x.detach_copy()),
        "split_copy" => Many(x.split_copy(1, 0)),
        "chunk_copy" => Many(x.chunk_copy(2, 1)),
        "unbind_copy" => Many(x.unbind_copy(0)),
        "slice_scatter" => One(x.slice_scatter(&row.view([1, 2]), 0, 0, 1, 1)),
        "select_scatter" => One(x.select_scatter(&row, 0, 1)),
        "diagonal_scatter" => One(x.diagonal_scatter(&row, 0, 0, 1)),
        "as_strided_scatter" => One(x.as_strided_scatter(&row, [2], [2], 0)),
        "add_" => One(x.add_(&y)),
        "sub_" => One(x.sub_(&y)),
        "mul_" => One(x.mul_(&y)),
        "div_" => One(x.div_(&y)),
        "neg_" => One(x.neg_()),
        "abs_" => One(x.abs_()),
        "exp_" => One(x.exp_()),
        "log_" => One(x.log_()),
        "sqrt_" => One(x.sqrt_()),
        "pow_" => One(x.pow_(2.0)),
        "relu_" => One(x.relu_()),
        "sigmoid_" => One(x.sigmoid_()),
        "tanh_" => One(x.tanh_()),
        "clamp_" => One(x.clamp_(0.0, 1.0)),
        "addcmul_" => One(x.addcmul_(&y, &y, 0.5)),
        "addcdiv_" => One(x.addcdiv_(&y, &y, 0.5)),
        "lerp_" => One(x.lerp_(&y, 0.5)),
        "fill_" => One(x.fill_(3.0)),
        "zero_" => One(x.zero_()),
        "copy_" => One(x.copy_(&y)),
        "view" => One(x.view([4])),
        "t" => One(x.t()),
        "transpose" => One(x.transpose(0, 1)),
        "permute" => One(x.permute([1, 0])),
        "narrow" => One(x.narrow(1, 1, 1)),
        "slice" => One(x.slice(0, 0, 2, 2)),
        "select" => One(x.select(0, 1)),
        "diagonal" => One(x.diagonal(0, 0, 1)),
        "squeeze" => One(x.squeeze()),
        "squeeze_dim" => One(x.squeeze_dim(0)),
        "unsqueeze" => One(x.unsqueeze(0)),
        "expand" => One(x.expand([3, 2, 2])),
        "unfold" => One(x.unfold(1, 1, 1)),
        "as_strided" => One(x.as_strided([2], [1], 0)),
        "alias" => One(x.alias()),
        "shallow_clone" => One(x.shallow_clone()),
        "detach" => One(x.detach()),
        "reshape" => One(x.reshape([4])),
        "flatten" => One(x.flatten()),
        "contiguous" => One(x.contiguous()),
        "split" => Many(x.split(1, 0)),
        "chunk" => Many(x.chunk(2, 1)),
        "unbind" => Many(x.unbind(0)),
        "t_" => One(x.t_()),
        "transpose_" => One(x.transpose_(0, 1)),
        "squeeze_" => One(x.squeeze_()),
        "squeeze_dim_" => One(x.squeeze_dim_(0)),
        "unsqueeze_" => One(x.unsqueeze_(0)),
        "as_strided_" => One(x.as_strided_([2, 2], [1, 2], 0)),
        "resize_" => One(x.resize_([3])),
        "backward" | "grad" => Unit,
        _ => return indexed::call(name, x).or_else(|| math::call(name, x)),
    })
}

#[test]
fn every_row_is_a_method_of_its_kind() {
    for op in all() {
        let mut x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        if op.name.starts_with("squeeze") {
            x = x.view([1, 4]);
        }
        let before = (x.version(), *x.layout(), x.to_vec());
        let probe = x.shallow_clone();
        let out = call(op.name, &mut x)
            .unwrap_or_else(|| panic!("op table row `{}` is not a Tensor method", op.name));
        let outs: Vec<Tensor> = match out {
            Out::One(t) => vec![t],
            Out::Many(v) => v,
            Out::Unit => continue,
        };
        match op.kind {
            OpKind::Functional => {
                assert!(
                    outs.iter().all(|o| !o.same_storage(&probe)),
                    "{} must return fresh storage",
                    op.name
                );
                assert_eq!(
                    probe.to_vec(),
                    before.2,
                    "{} must not write its receiver",
                    op.name
                );
            }
            OpKind::Inplace { .. } => {
                assert!(
                    probe.version() > before.0,
                    "{} must bump the version",
                    op.name
                );
                assert_eq!(
                    outs[0].id(),
                    probe.id(),
                    "{} must return its receiver",
                    op.name
                );
            }
            OpKind::View { .. } | OpKind::MultiView { .. } => {
                assert!(
                    outs.iter().all(|o| o.same_storage(&probe)),
                    "{} must share storage",
                    op.name
                );
                assert_eq!(probe.version(), before.0, "{} must not write", op.name);
            }
            OpKind::MaybeView { .. } => {
                // Contiguous input: PyTorch returns a view.
                assert!(
                    outs[0].same_storage(&probe),
                    "{} of a contiguous tensor is a view",
                    op.name
                );
            }
            OpKind::InplaceView { .. } => {
                assert_ne!(
                    x.layout(),
                    &before.1,
                    "{} must change the receiver's layout",
                    op.name
                );
                assert!(x.same_storage(&probe), "{} keeps the storage", op.name);
                assert_eq!(probe.to_vec(), before.2, "{} must not change data", op.name);
            }
            OpKind::Resize => assert_eq!(x.shape(), &[3]),
            OpKind::Autograd => {}
        }
    }
}

/// Each functional and in-place row is recorded in a trace under the name
/// `optable::traced_name` gives (the exporter and the graph pass look ops
/// up by that name).
#[test]
fn every_row_is_recorded_under_its_traced_name() {
    use funcz_runtime::optable::traced_name;
    use funcz_runtime::trace::Tracer;
    for op in all() {
        if !matches!(op.kind, OpKind::Functional | OpKind::Inplace { .. }) {
            continue;
        }
        let mut x = Tensor::<f32>::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
        if op.name.starts_with("squeeze") {
            x = x.view([1, 4]);
        }
        let probe = x.shallow_clone();
        let (_, g) = Tracer::new("row")
            .input("x", &probe)
            .run(|| call(op.name, &mut x).map(|_| ()));
        let want = traced_name(op.name).expect("a row");
        assert!(
            g.ops().contains(&want),
            "{} is recorded as {:?}, the table says {want}",
            op.name,
            g.ops()
        );
    }
}
