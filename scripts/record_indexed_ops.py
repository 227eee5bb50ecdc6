#!/usr/bin/env python3
"""Records PyTorch's results for the mask, cast and indexed ops
(funcz-runtime/tests/indexed_torch.rs replays every case without torch):

    /work/venv/bin/python scripts/record_indexed_ops.py \
        > funcz-runtime/tests/fixtures/indexed_ops.json

Each case: an op, named tensor inputs (dtype, shape, row-major values),
scalar arguments, and either the result (dtype, shape, values) and, for
in-place ops, the receiver afterwards, or `error: true` when PyTorch
raises (the Rust op must panic).
"""

import json
import math

import torch


def enc(t):
    v = t.flatten().tolist()
    if t.dtype.is_floating_point:
        v = [x if math.isfinite(x) else str(x) for x in v]
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "values": v}


def f32(shape, start=0.0, step=1.0):
    n = 1
    for d in shape:
        n *= d
    return torch.arange(n, dtype=torch.float64).mul(step).add(start).to(torch.float32).reshape(shape)


def i64(values, shape=None):
    t = torch.tensor(values, dtype=torch.int64)
    return t.reshape(shape) if shape is not None else t


def b(values, shape=None):
    t = torch.tensor(values, dtype=torch.bool)
    return t.reshape(shape) if shape is not None else t


CASES = []


def case(name, op, inputs, args, fn, inplace=False):
    ins = {k: v.clone() for k, v in inputs.items()}
    entry = {"name": name, "op": op, "inputs": {k: enc(v) for k, v in inputs.items()}, "args": args}
    try:
        out = fn(**ins)
        entry["result"] = enc(out)
        if inplace:
            entry["self_after"] = enc(ins["x"])
    except (RuntimeError, IndexError) as e:
        entry["error"] = True
        entry["message"] = str(e).split("\n")[0]
    CASES.append(entry)


nan = float("nan")
x34 = f32([3, 4], -5.0)
xn = torch.tensor([[1.0, nan, -2.0], [0.0, 3.5, -0.5]], dtype=torch.float32)

# comparisons: tensor, scalar, broadcasting, NaN
for op in ["lt", "le", "gt", "ge", "eq", "ne"]:
    case(f"{op}_scalar", op, {"x": xn}, {"scalar": 0.0}, lambda x, op=op: getattr(x, op)(0.0))
    case(f"{op}_bcast", op, {"x": x34, "y": f32([3, 1], -3.0, 2.0)}, {},
         lambda x, y, op=op: getattr(x, op)(y))
    case(f"{op}_int", op, {"x": i64([[1, 5], [3, -2]]), "y": i64([3, -2])}, {},
         lambda x, y, op=op: getattr(x, op)(y))

# logical ops and reductions
m = b([[True, False, True], [False, False, True]])
case("logical_and_bcast", "logical_and", {"x": m, "y": b([True, False, True])}, {},
     lambda x, y: x.logical_and(y))
case("logical_or_float", "logical_or", {"x": xn, "y": m}, {}, lambda x, y: x.logical_or(y))
case("logical_xor", "logical_xor", {"x": m, "y": b([[True], [False]])}, {},
     lambda x, y: x.logical_xor(y))
case("logical_not_float", "logical_not", {"x": xn}, {}, lambda x: x.logical_not())
for op in ["any", "all"]:
    case(f"{op}_whole", op, {"x": m}, {}, lambda x, op=op: getattr(x, op)())
    case(f"{op}_empty", op, {"x": torch.zeros(0, 3, dtype=torch.bool)}, {},
         lambda x, op=op: getattr(x, op)())
    for dim in [0, 1, -1]:
        for keep in [False, True]:
            case(f"{op}_dim{dim}_{keep}", op + "_dim", {"x": xn}, {"dim": dim, "keepdim": keep},
                 lambda x, op=op, dim=dim, keep=keep: getattr(x, op)(dim, keep))

# where
case("where_tensor", "where_self", {"x": x34, "c": x34.gt(0.5), "y": f32([4], 100.0)}, {},
     lambda x, c, y: torch.where(c, x, y))
case("where_scalar", "where_self", {"x": f32([2, 1], 1.0), "c": b([True, False, True])},
     {"scalar": -1.0}, lambda x, c: torch.where(c, x, -1.0))

# casts
for to in ["float32", "float64", "int64", "int32", "bool"]:
    case(f"cast_f_{to}", "to_dtype", {"x": torch.tensor([-2.7, -0.5, 0.0, 0.5, 1.9, nan], dtype=torch.float32)},
         {"to": to}, lambda x, to=to: x.to(getattr(torch, to))) if to not in ("int64", "int32") else \
        case(f"cast_f_{to}", "to_dtype", {"x": torch.tensor([-2.7, -0.5, 0.0, 0.5, 1.9, 100.25], dtype=torch.float32)},
             {"to": to}, lambda x, to=to: x.to(getattr(torch, to)))
    case(f"cast_b_{to}", "to_dtype", {"x": m}, {"to": to}, lambda x, to=to: x.to(getattr(torch, to)))
    case(f"cast_i_{to}", "to_dtype", {"x": i64([-3, 0, 7, 2 ** 40])}, {"to": to},
         lambda x, to=to: x.to(getattr(torch, to)))

# masked_fill / masked_scatter
case("masked_fill_", "masked_fill_", {"x": x34, "mask": b([True, False, False, True])}, {"scalar": -9.0},
     lambda x, mask: x.masked_fill_(mask, -9.0), inplace=True)
case("masked_fill_bcast_out", "masked_fill", {"x": f32([3, 1]), "mask": b([[True, False]])}, {"scalar": 7.0},
     lambda x, mask: x.masked_fill(mask, 7.0))
case("masked_fill_bad", "masked_fill_", {"x": f32([2]), "mask": b([True, False, True])}, {"scalar": 1.0},
     lambda x, mask: x.masked_fill_(mask, 1.0), inplace=True)
case("masked_scatter_", "masked_scatter_", {"x": x34, "mask": b([[True], [False], [True]]), "src": f32([10], 50.0)},
     {}, lambda x, mask, src: x.masked_scatter_(mask, src), inplace=True)
case("masked_scatter_short", "masked_scatter_", {"x": f32([4]), "mask": b([True, True, True, False]), "src": f32([2])},
     {}, lambda x, mask, src: x.masked_scatter_(mask, src), inplace=True)
case("masked_scatter_i64", "masked_scatter", {"x": i64([[1, 2], [3, 4]]), "mask": b([False, True]), "src": i64([7, 8, 9])},
     {}, lambda x, mask, src: x.masked_scatter(mask, src))

# index_select / take / nonzero / gather
case("index_select_0", "index_select", {"x": x34, "index": i64([2, 0, 2])}, {"dim": 0},
     lambda x, index: x.index_select(0, index))
case("index_select_neg_dim", "index_select", {"x": x34, "index": i64([3, 1])}, {"dim": -1},
     lambda x, index: x.index_select(-1, index))
case("index_select_neg_index", "index_select", {"x": x34, "index": i64([-1])}, {"dim": 0},
     lambda x, index: x.index_select(0, index))
case("index_select_oob", "index_select", {"x": x34, "index": i64([3])}, {"dim": 0},
     lambda x, index: x.index_select(0, index))
case("take", "take", {"x": x34, "index": i64([[0, -1], [5, -12]])}, {}, lambda x, index: x.take(index))
case("take_oob", "take", {"x": x34, "index": i64([12])}, {}, lambda x, index: x.take(index))
case("nonzero_bool", "nonzero", {"x": m}, {}, lambda x: x.nonzero())
case("nonzero_float", "nonzero", {"x": xn}, {}, lambda x: x.nonzero())
case("gather_1", "gather", {"x": x34, "index": i64([[3, 0], [1, 1], [2, 3]])}, {"dim": 1},
     lambda x, index: x.gather(1, index))
case("gather_0_small", "gather", {"x": x34, "index": i64([[2, 1, 0]])}, {"dim": 0},
     lambda x, index: x.gather(0, index))
case("gather_neg", "gather", {"x": x34, "index": i64([[-1]])}, {"dim": 0},
     lambda x, index: x.gather(0, index))
case("gather_oob", "gather", {"x": x34, "index": i64([[4]])}, {"dim": 1},
     lambda x, index: x.gather(1, index))

# scatter / scatter_add
case("scatter_src", "scatter_", {"x": x34, "index": i64([[1, 0, 2]]), "src": f32([2, 3], 100.0)}, {"dim": 0},
     lambda x, index, src: x.scatter_(0, index, src), inplace=True)
case("scatter_value", "scatter_", {"x": x34, "index": i64([[3], [0], [1]])}, {"dim": -1, "scalar": 0.5},
     lambda x, index: x.scatter_(-1, index, 0.5), inplace=True)
case("scatter_functional", "scatter", {"x": x34, "index": i64([[0, 1], [1, 2]]), "src": f32([2, 2], -1.0, -1.0)},
     {"dim": 1}, lambda x, index, src: x.scatter(1, index, src))
case("scatter_neg", "scatter_", {"x": x34, "index": i64([[-1]]), "src": f32([1, 1])}, {"dim": 0},
     lambda x, index, src: x.scatter_(0, index, src), inplace=True)
case("scatter_add_dup", "scatter_add_", {"x": f32([5]), "index": i64([0, 4, 0, 0, 2]), "src": f32([5], 1.0)},
     {"dim": 0}, lambda x, index, src: x.scatter_add_(0, index, src), inplace=True)
case("scatter_add_2d", "scatter_add", {"x": x34, "index": i64([[0, 0], [2, 0]]), "src": f32([2, 3], 10.0)},
     {"dim": 0}, lambda x, index, src: x.scatter_add(0, index, src))

# index_copy / index_add / index_fill
case("index_copy_0", "index_copy_", {"x": x34, "index": i64([2, 0]), "src": f32([2, 4], 100.0)}, {"dim": 0},
     lambda x, index, src: x.index_copy_(0, index, src), inplace=True)
case("index_copy_neg_dim", "index_copy", {"x": x34, "index": i64([1]), "src": f32([3, 1], -7.0)}, {"dim": -1},
     lambda x, index, src: x.index_copy(-1, index, src))
case("index_copy_neg_index", "index_copy_", {"x": x34, "index": i64([-1]), "src": f32([1, 4])}, {"dim": 0},
     lambda x, index, src: x.index_copy_(0, index, src), inplace=True)
case("index_copy_bad_shape", "index_copy_", {"x": x34, "index": i64([1]), "src": f32([1, 3])}, {"dim": 0},
     lambda x, index, src: x.index_copy_(0, index, src), inplace=True)
case("index_add_dup", "index_add_", {"x": x34, "index": i64([1, 1, 3]), "src": f32([3, 3], 1.0)}, {"dim": 1},
     lambda x, index, src: x.index_add_(1, index, src), inplace=True)
case("index_add_functional", "index_add", {"x": i64([[1, 2], [3, 4]]), "index": i64([0, 0]), "src": i64([[5, 6], [7, 8]])},
     {"dim": 0}, lambda x, index, src: x.index_add(0, index, src))
case("index_add_oob", "index_add_", {"x": x34, "index": i64([5]), "src": f32([3, 1])}, {"dim": 1},
     lambda x, index, src: x.index_add_(1, index, src), inplace=True)
case("index_fill_neg", "index_fill_", {"x": x34, "index": i64([-1, 0])}, {"dim": 1, "scalar": -3.0},
     lambda x, index: x.index_fill_(1, index, -3.0), inplace=True)
case("index_fill_functional", "index_fill", {"x": x34, "index": i64([1])}, {"dim": 0, "scalar": 2.0},
     lambda x, index: x.index_fill(0, index, 2.0))
case("index_fill_oob", "index_fill_", {"x": x34, "index": i64([-5])}, {"dim": 0, "scalar": 2.0},
     lambda x, index: x.index_fill_(0, index, 2.0), inplace=True)

# index_put
case("index_put_pairs", "index_put_", {"x": x34, "i0": i64([0, 2, -1]), "i1": i64([1, 3, 0]), "values": f32([3], 100.0)},
     {"accumulate": False}, lambda x, i0, i1, values: x.index_put_((i0, i1), values), inplace=True)
case("index_put_accumulate_dup", "index_put_", {"x": x34, "i0": i64([0, 0, 2, 0]), "i1": i64([1, 1, 3, 1]), "values": f32([4], 1.0)},
     {"accumulate": True}, lambda x, i0, i1, values: x.index_put_((i0, i1), values, accumulate=True), inplace=True)
case("index_put_rows_bcast", "index_put", {"x": x34, "i0": i64([[2], [0]]), "values": f32([4], -1.0, -1.0)},
     {"accumulate": False}, lambda x, i0, values: x.index_put((i0,), values))
case("index_put_rows_accumulate", "index_put", {"x": x34, "i0": i64([1, 1]), "values": f32([2, 4])},
     {"accumulate": True}, lambda x, i0, values: x.index_put((i0,), values, accumulate=True))
case("index_put_index_bcast", "index_put_", {"x": x34, "i0": i64([[0], [2]]), "i1": i64([1, 3]), "values": f32([1], 9.0)},
     {"accumulate": False}, lambda x, i0, i1, values: x.index_put_((i0, i1), values), inplace=True)
case("index_put_i64_acc", "index_put_", {"x": i64([1, 2, 3]), "i0": i64([2, 2, -3]), "values": i64([10, 20, 30])},
     {"accumulate": True}, lambda x, i0, values: x.index_put_((i0,), values, accumulate=True), inplace=True)
case("index_put_oob", "index_put_", {"x": x34, "i0": i64([3]), "values": f32([1])},
     {"accumulate": False}, lambda x, i0, values: x.index_put_((i0,), values), inplace=True)

# index_put with None entries (x[:, i] = v): "pattern" lists the entries,
# "i" a tensor input (i0, i1, ... in order), "-" None
x234 = f32([2, 3, 4])
def put_none(name, x, pattern, idx, values, acc, inplace=True):
    ins = {"x": x, "values": values}
    for k, t in enumerate(idx):
        ins[f"i{k}"] = t
    op = "index_put_" if inplace else "index_put"
    def fn(x, values, **ii):
        it = iter([ii[f"i{k}"] for k in range(len(idx))])
        key = [next(it) if p == "i" else None for p in pattern]
        aten = torch.ops.aten.index_put_ if inplace else torch.ops.aten.index_put
        return aten(x, key, values, acc)
    case(name, op, ins, {"accumulate": acc, "pattern": pattern}, fn, inplace=inplace)
put_none("put_none_cols", x34, "-i", [i64([2, 0])], f32([3, 2], 100.0), False)
put_none("put_none_cols_bcast_scalar_t", x34, "-i", [i64([-1])], f32([1], 7.0), False)
put_none("put_none_cols_acc_dup", x34, "-i", [i64([1, 1, 3])], f32([3], 10.0), True)
put_none("put_none_mid", x234, "-i", [i64([[0, 2], [1, 1]])], f32([2, 2, 2, 4], 50.0), True, inplace=False)
put_none("put_none_last", x234, "--i", [i64([3, 0])], f32([2], -1.0), False)
put_none("put_none_adjacent_pair", x234, "-ii", [i64([0, 2]), i64([3, 1])], f32([2, 2], 9.0), False)
put_none("put_none_separated", x234, "i-i", [i64([1, 0, 1]), i64([0, 3, 0])], f32([3, 3], 20.0), True)
put_none("put_none_separated_fn", x234, "i-i", [i64([[1], [0]]), i64([2, 3])], f32([2, 2, 3], -5.0), False, inplace=False)
put_none("put_none_oob", x34, "-i", [i64([4])], f32([1]), False)
put_none("put_none_bad_values", x34, "-i", [i64([0, 1])], f32([2, 3]), False)

# index_add with alpha
case("index_add_alpha_", "index_add_scaled_", {"x": x34, "index": i64([3, 0, 3]), "src": f32([3, 3], 1.0)},
     {"dim": 1, "alpha": -0.5}, lambda x, index, src: x.index_add_(1, index, src, alpha=-0.5), inplace=True)
case("index_add_alpha", "index_add_scaled", {"x": x34, "index": i64([2, -0 + 1]), "src": f32([2, 4], 2.0)},
     {"dim": 0, "alpha": 3.0}, lambda x, index, src: x.index_add(0, index, src, alpha=3.0))
case("index_add_alpha_bad", "index_add_scaled_", {"x": x34, "index": i64([0]), "src": f32([2, 4])},
     {"dim": 0, "alpha": 2.0}, lambda x, index, src: x.index_add_(0, index, src, alpha=2.0), inplace=True)

# copy_ / copy across dtypes (float -> int truncates toward zero, bool -> 0/1,
# anything -> bool is != 0), broadcasting src to self
fr = torch.tensor([-2.7, -0.5, 0.0, 0.5, 1.9, 100.25], dtype=torch.float32)
for dst, src, nm in [
    (torch.zeros(6, dtype=torch.int64), fr, "f32_to_i64"),
    (torch.zeros(2, 6, dtype=torch.int32), fr.double(), "f64_to_i32_bcast"),
    (torch.zeros(6, dtype=torch.bool), torch.tensor([-2.7, 0.0, -0.0, nan, 1e-30, 3.0]), "f32_to_bool"),
    (torch.zeros(2, 3, dtype=torch.bool), i64([[0, -1, 2]]), "i64_to_bool_bcast"),
    (f32([2, 3]), i64([[7], [-9]]), "i64_to_f32_bcast"),
    (f32([2, 3]), m, "bool_to_f32"),
    (i64([5, 5, 5]), b([True, False, True]), "bool_to_i64"),
    (torch.zeros(3, dtype=torch.float64), torch.tensor([0.1, -1e30, 2.5], dtype=torch.float32), "f32_to_f64"),
    (f32([3, 4]), f32([3, 4], 10.0), "f32_same"),
    (f32([2]), i64([1, 2, 3]), "bad_shape"),
    (f32([3]), i64([[1], [2]]), "bad_rank"),
]:
    case(f"copy__{nm}", "copy_", {"x": dst, "src": src}, {}, lambda x, src: x.copy_(src), inplace=True)
    case(f"copy_{nm}", "copy", {"x": dst, "src": src}, {}, lambda x, src: torch.ops.aten.copy(x, src))

print(json.dumps({"torch": torch.__version__.split("+")[0], "cases": CASES}, indent=1))
