//! Calls the methods of the `indexed` rows of the op table (see `optable.rs`).

use super::Out;
use funcz_runtime::Tensor;

/// Calls the method `name` on `x` (a 2×2 f32 tensor) with valid arguments,
/// or `None` when `name` is not a row of this group. Ops that return
/// another dtype are cast back to f32 (a fresh tensor either way; the
/// receiver is still checked unchanged).
pub fn call(name: &str, x: &mut Tensor) -> Option<Out> {
    use Out::*;
    let y = Tensor::<f32>::from_vec(vec![0.5, 1.5, 2.5, 3.5], &[2, 2]);
    let m = Tensor::<bool>::from_vec(vec![true, false, false, true], &[2, 2]);
    let i = Tensor::<i64>::from_vec(vec![1, 0], &[2]);
    let gi = Tensor::<i64>::from_vec(vec![1, 1, 0, 1], &[2, 2]);
    Some(match name {
        "to_dtype" => One(x.to_dtype::<f64>().float()),
        "float" => One(x.float()),
        "double" => One(x.double().float()),
        "long" => One(x.long().float()),
        "int" => One(x.int().float()),
        "bool" => One(x.bool().float()),
        "lt" => One(x.lt(&y).float()),
        "le" => One(x.le(2.0).float()),
        "gt" => One(x.gt(&y).float()),
        "ge" => One(x.ge(2.0).float()),
        "eq" => One(x.eq(2.0).float()),
        "ne" => One(x.ne(&y).float()),
        "where_self" => One(x.where_self(&m, &y)),
        "logical_and" => One(x.logical_and(&m).float()),
        "logical_or" => One(x.logical_or(&m).float()),
        "logical_xor" => One(x.logical_xor(&m).float()),
        "logical_not" => One(x.logical_not().float()),
        "any" => One(x.any().float()),
        "all" => One(x.all().float()),
        "any_dim" => One(x.any_dim(0, false).float()),
        "all_dim" => One(x.all_dim(-1, true).float()),
        "index_select" => One(x.index_select(0, &i)),
        "gather" => One(x.gather(1, &gi)),
        "take" => One(x.take(&i)),
        "nonzero" => One(x.nonzero().float()),
        "i_copy" => One(x.i_copy((.., 1))),
        "masked_fill" => One(x.masked_fill(&m, 0.0)),
        "masked_scatter" => One(x.masked_scatter(&m, &y)),
        "index_copy" => One(x.index_copy(0, &i, &y)),
        "index_add" => One(x.index_add(1, &i, &y)),
        "index_add_scaled" => One(x.index_add_scaled(1, &i, &y, -2.0)),
        "index_fill" => One(x.index_fill(1, &i, 7.0)),
        "index_put" => One(x.index_put(&[&i, &i], 9.0, true)),
        "scatter" => One(x.scatter(1, &gi, &y)),
        "scatter_add" => One(x.scatter_add(0, &gi, &y)),
        "masked_fill_" => One(x.masked_fill_(&m, 0.0)),
        "masked_scatter_" => One(x.masked_scatter_(&m, &y)),
        "index_copy_" => One(x.index_copy_(0, &i, &y)),
        "index_add_" => One(x.index_add_(1, &i, &y)),
        "index_add_scaled_" => One(x.index_add_scaled_(1, &i, &y, -2.0)),
        "index_fill_" => One(x.index_fill_(1, &i, 7.0)),
        "index_put_" => One(x.index_put_(&[&i, &i], 9.0, true)),
        "scatter_" => One(x.scatter_(1, &gi, &y)),
        "scatter_add_" => One(x.scatter_add_(0, &gi, &y)),
        "i" => One(x.i((.., 1..))),
        _ => return None,
    })
}
