#!/usr/bin/env python3
"""Records PyTorch's memory-overlap checks of in-place ops
(funcz-runtime/tests/overlap_torch.rs replays every case without torch):

    /work/venv/bin/python scripts/record_overlap.py \
        > funcz-runtime/tests/fixtures/overlap.json

Each case is a small program on one tensor `x` that writes into `x` (or a
view of it) with an operand that is another view of `x`: a transpose, a
shifted or disjoint `narrow`, an `expand`ed row, the same tensor, a 0-d
element. Recorded: `x` before, then either `error` (PyTorch raised; its
message) or `x` afterwards (`result`), and `clone_first`: `x` afterwards
when every operand taken from `x` is cloned first. Where the two differ
(`order_dependent`), PyTorch's result depends on its loop order (it does
not check operands that are not dense); funcz reads operands completely
before the first write, so it must give `clone_first`.

The Rust test implements each program under the same name.
"""

import json
import math

import torch


def enc(t):
    v = t.flatten().tolist()
    if t.dtype.is_floating_point:
        v = [x if math.isfinite(x) else str(x) for x in v]
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "values": v}


def f32(*shape):
    n = 1
    for d in shape:
        n *= d
    return torch.arange(n, dtype=torch.float32).reshape(shape)


def i64(values):
    return torch.tensor(values, dtype=torch.int64)


def b(values):
    return torch.tensor(values, dtype=torch.bool)


CASES = []


def case(name, op, x0, program, description):
    """`program(x, c)` writes into `x`; `c` wraps every operand taken from
    `x` (identity when recording PyTorch's behaviour, `clone` for the
    clone-first result)."""
    entry = {"name": name, "op": op, "program": description, "x": enc(x0)}
    x = x0.clone()
    try:
        program(x, lambda t: t)
        entry["error"] = False
        entry["result"] = enc(x)
        y = x0.clone()
        program(y, lambda t: t.clone())
        entry["clone_first"] = enc(y)
        entry["order_dependent"] = not torch.equal(x, y)
    except RuntimeError as e:
        entry["error"] = True
        entry["message"] = str(e).split("\n")[0]
        assert torch.equal(x, x0), name  # nothing was written
    CASES.append(entry)


# --- elementwise in-place ops (TensorIterator: assert_no_partial_overlap)
case("add_transposed", "add_", f32(2, 2), lambda x, c: x.add_(c(x.t())), "x.add_(x.t())")
case("add_transposed_into_transpose", "add_", f32(2, 2), lambda x, c: x.t().add_(c(x)),
     "x.t().add_(x)")
case("add_self", "add_", f32(2, 2), lambda x, c: x.add_(x), "x.add_(x)")
case("add_same_layout_alias", "add_", f32(2, 2), lambda x, c: x.add_(c(x.view(2, 2))),
     "x.add_(x.view(2, 2))")
case("add_unsqueeze_vs_view", "add_", f32(6),
     lambda x, c: x.view(2, 1, 3).add_(c(x.view(2, 3).unsqueeze(1))),
     "x.view(2, 1, 3).add_(x.view(2, 3).unsqueeze(1))")
case("add_shifted_narrow", "add_", f32(6), lambda x, c: x[0:4].add_(c(x[1:5])),
     "x.narrow(0, 0, 4).add_(x.narrow(0, 1, 4))")
case("sub_disjoint_halves", "sub_", f32(4, 2), lambda x, c: x[0:2].sub_(c(x[2:4])),
     "x.narrow(0, 0, 2).sub_(x.narrow(0, 2, 2))")
case("mul_adjacent_halves", "mul_", f32(6), lambda x, c: x[3:6].mul_(c(x[0:3])),
     "x.narrow(0, 3, 3).mul_(x.narrow(0, 0, 3))")
case("add_expanded_row0", "add_", f32(2, 2), lambda x, c: x.add_(c(x[0].expand(2, 2))),
     "x.add_(x.select(0, 0).expand([2, 2]))")
case("add_expanded_row1", "add_", f32(2, 2), lambda x, c: x.add_(c(x[1].expand(2, 2))),
     "x.add_(x.select(0, 1).expand([2, 2]))")
case("add_0d_element", "add_", f32(4), lambda x, c: x.add_(c(x[1])), "x.add_(x.select(0, 1))")
case("mul_0d_element_outside", "mul_", f32(4), lambda x, c: x[0:2].mul_(c(x[3])),
     "x.narrow(0, 0, 2).mul_(x.select(0, 3))")
case("add_nondense_columns", "add_", f32(4, 4), lambda x, c: x[:, 0:2].add_(c(x[:, 1:3])),
     "x.narrow(1, 0, 2).add_(x.narrow(1, 1, 2))")
case("add_column_into_transpose", "add_", f32(2, 2), lambda x, c: x.t().add_(c(x[:, 0:1])),
     "x.t().add_(x.narrow(1, 0, 1))")
case("div_transposed", "div_", f32(2, 2) + 1, lambda x, c: x.div_(c(x.t())), "x.div_(x.t())")
case("pow_shifted", "pow_", f32(4), lambda x, c: x[0:2].pow_(c(x[1:3])),
     "x.narrow(0, 0, 2).pow_(x.narrow(0, 1, 2))")
case("add_alpha_transposed", "add_", f32(2, 2), lambda x, c: x.add_(c(x.t()), alpha=2.0),
     "x.add_scaled_(x.t(), 2.0)")
case("sub_alpha_disjoint", "sub_", f32(4), lambda x, c: x[0:2].sub_(c(x[2:4]), alpha=0.5),
     "x.narrow(0, 0, 2).sub_scaled_(x.narrow(0, 2, 2), 0.5)")
case("empty_windows", "add_", f32(4), lambda x, c: x[0:0].add_(c(x[0:0])),
     "x.narrow(0, 0, 0).add_(x.narrow(0, 0, 0))")

# --- copy_
case("copy_transposed", "copy_", f32(2, 2), lambda x, c: x.copy_(c(x.t())), "x.copy_(x.t())")
case("copy_shifted_up", "copy_", f32(5), lambda x, c: x[1:5].copy_(c(x[0:4])),
     "x.narrow(0, 1, 4).copy_(x.narrow(0, 0, 4))")
case("copy_shifted_down", "copy_", f32(5), lambda x, c: x[0:4].copy_(c(x[1:5])),
     "x.narrow(0, 0, 4).copy_(x.narrow(0, 1, 4))")
case("copy_same_layout_alias", "copy_", f32(2, 3), lambda x, c: x.copy_(c(x.view(2, 3))),
     "x.copy_(x.view(2, 3))")
case("copy_self", "copy_", f32(2, 3), lambda x, c: x.copy_(x), "x.copy_(x)")
case("copy_disjoint", "copy_", f32(6), lambda x, c: x[0:3].copy_(c(x[3:6])),
     "x.narrow(0, 0, 3).copy_(x.narrow(0, 3, 3))")
case("copy_expanded_row0", "copy_", f32(2, 2), lambda x, c: x.copy_(c(x[0].expand(2, 2))),
     "x.copy_(x.select(0, 0).expand([2, 2]))")
case("copy_expanded_row1", "copy_", f32(2, 2), lambda x, c: x.copy_(c(x[1].expand(2, 2))),
     "x.copy_(x.select(0, 1).expand([2, 2]))")
case("copy_bool_transposed", "copy_", b([True, False, False, False]).view(2, 2),
     lambda x, c: x.copy_(c(x.t())), "x.copy_(x.t())")

# --- addcmul_ / addcdiv_ / lerp_
case("addcmul_transposed", "addcmul_", f32(2, 2), lambda x, c: x.addcmul_(c(x.t()), x),
     "x.addcmul1_(x.t(), x)")
case("addcmul_value_transposed_tensor2", "addcmul_", f32(2, 2),
     lambda x, c: x.addcmul_(x, c(x.t()), value=0.5), "x.addcmul_(x, x.t(), 0.5)")
case("addcmul_self", "addcmul_", f32(2, 2), lambda x, c: x.addcmul_(x, x, value=2.0),
     "x.addcmul_(x, x, 2.0)")
case("addcmul_disjoint", "addcmul_", f32(6),
     lambda x, c: x[0:3].addcmul_(c(x[3:6]), c(x[3:6]), value=0.5),
     "x.narrow(0, 0, 3).addcmul_(x.narrow(0, 3, 3), x.narrow(0, 3, 3), 0.5)")
case("addcdiv_shifted", "addcdiv_", f32(6),
     lambda x, c: x[0:3].addcdiv_(c(x[1:4]), torch.ones(3)),
     "x.narrow(0, 0, 3).addcdiv1_(x.narrow(0, 1, 3), ones([3]))")
case("addcdiv_value_disjoint", "addcdiv_", f32(6) + 1,
     lambda x, c: x[0:3].addcdiv_(c(x[3:6]), c(x[3:6]), value=2.0),
     "x.narrow(0, 0, 3).addcdiv_(x.narrow(0, 3, 3), x.narrow(0, 3, 3), 2.0)")
case("lerp_transposed_end", "lerp_", f32(2, 2), lambda x, c: x.lerp_(c(x.t()), 0.5),
     "x.lerp_(x.t(), 0.5)")
case("lerp_shifted_weight", "lerp_", f32(6) / 8,
     lambda x, c: x[0:3].lerp_(torch.ones(3), c(x[2:5])),
     "x.narrow(0, 0, 3).lerp_(ones([3]), x.narrow(0, 2, 3))")
case("lerp_disjoint", "lerp_", f32(4), lambda x, c: x[0:2].lerp_(c(x[2:4]), 0.25),
     "x.narrow(0, 0, 2).lerp_(x.narrow(0, 2, 2), 0.25)")
case("lerp_self_end", "lerp_", f32(4), lambda x, c: x.lerp_(x, 0.25), "x.lerp_(x, 0.25)")

# --- masked ops (masked_fill_ reads a 0-d value first; masked_scatter_ checks
# nothing)
# (PyTorch's masked_fill_ also refuses a mask partially overlapping a bool
# `self`; funcz's masked_fill_ is for numeric tensors only, so its mask,
# a Tensor<bool>, can never share their storage.)
case("masked_fill_value_is_own_element", "masked_fill_", f32(6),
     lambda x, c: x.masked_fill_(x > 2, c(x[1])), "x.masked_fill_(x.gt(2), x.select(0, 1))")
case("masked_scatter_shifted_source", "masked_scatter_", f32(6),
     lambda x, c: x[0:4].masked_scatter_(b([True, False, True, True]), c(x[1:5])),
     "x.narrow(0, 0, 4).masked_scatter_([T, F, T, T], x.narrow(0, 1, 4))")
case("masked_scatter_self_source", "masked_scatter_", f32(6),
     lambda x, c: x.masked_scatter_(x > 2, c(x)), "x.masked_scatter_(x.gt(2), x.alias())")

# --- indexed in-place ops (assert_no_overlap: full overlap is refused too)
case("index_copy_shifted_source", "index_copy_", f32(3, 2),
     lambda x, c: x.index_copy_(0, i64([0, 2]), c(x[1:3])),
     "x.index_copy_(0, [0, 2], x.narrow(0, 1, 2))")
case("index_copy_self_source", "index_copy_", f32(2, 3),
     lambda x, c: x.index_copy_(0, i64([1, 0]), x), "x.index_copy_(0, [1, 0], x)")
case("index_copy_disjoint_source", "index_copy_", f32(6),
     lambda x, c: x[0:3].index_copy_(0, i64([2, 0, 1]), c(x[3:6])),
     "x.narrow(0, 0, 3).index_copy_(0, [2, 0, 1], x.narrow(0, 3, 3))")
case("index_copy_index_aliases_self", "index_copy_", i64([0, 2, 1, 5]),
     lambda x, c: x[0:3].index_copy_(0, c(x[0:1]), i64([7])),
     "x.narrow(0, 0, 3).index_copy_(0, x.narrow(0, 0, 1), [7])")
case("index_add_shifted_source", "index_add_", f32(3, 2),
     lambda x, c: x.index_add_(0, i64([0, 2]), c(x[1:3])),
     "x.index_add_(0, [0, 2], x.narrow(0, 1, 2))")
case("index_add_alpha_shifted_source", "index_add_", f32(6),
     lambda x, c: x[0:4].index_add_(0, i64([0, 1]), c(x[1:3]), alpha=2.0),
     "x.narrow(0, 0, 4).index_add_scaled_(0, [0, 1], x.narrow(0, 1, 2), 2.0)")
case("index_add_disjoint_source", "index_add_", f32(6),
     lambda x, c: x[0:3].index_add_(0, i64([1, 1, 0]), c(x[3:6])),
     "x.narrow(0, 0, 3).index_add_(0, [1, 1, 0], x.narrow(0, 3, 3))")
case("index_fill_index_aliases_self", "index_fill_", i64([1, 0, 2, 0, 1, 2]),
     lambda x, c: x.index_fill_(0, c(x[0:2]), -1), "x.index_fill_(0, x.narrow(0, 0, 2), -1)")
case("index_fill_index_is_self", "index_fill_", i64([1, 0, 2]),
     lambda x, c: x.index_fill_(0, x, 5), "x.index_fill_(0, x, 5)")
case("index_fill_disjoint_index", "index_fill_", i64([2, 0, 1, 0, 1, 2]),
     lambda x, c: x[0:3].index_fill_(0, c(x[3:5]), -1),
     "x.narrow(0, 0, 3).index_fill_(0, x.narrow(0, 3, 2), -1)")
case("index_put_shifted_values", "index_put_", f32(6),
     lambda x, c: x[0:4].index_put_((i64([0, 2]),), c(x[1:3])),
     "x.narrow(0, 0, 4).index_put_([[0, 2]], x.narrow(0, 1, 2), false)")
case("index_put_accumulate_shifted_values", "index_put_", f32(6),
     lambda x, c: x[0:4].index_put_((i64([0, 1]),), c(x[2:4]), accumulate=True),
     "x.narrow(0, 0, 4).index_put_([[0, 1]], x.narrow(0, 2, 2), true)")
case("index_put_self_values", "index_put_", f32(6),
     lambda x, c: x.index_put_((i64([1, 0, 2, 3, 4, 5]),), x),
     "x.index_put_([[1, 0, 2, 3, 4, 5]], x, false)")
case("index_put_0d_value_is_own_element", "index_put_", f32(6),
     lambda x, c: x.index_put_((i64([0, 1]),), c(x[5])),
     "x.index_put_([[0, 1]], x.select(0, 5), false)")
case("index_put_index_aliases_self", "index_put_", i64([1, 0, 2, 3]),
     lambda x, c: x.index_put_((c(x[0:2]),), torch.tensor(9)),
     "x.index_put_([x.narrow(0, 0, 2)], 9, false)")
case("index_put_disjoint_values", "index_put_", f32(6),
     lambda x, c: x[0:3].index_put_((i64([2, 0]),), c(x[4:6])),
     "x.narrow(0, 0, 3).index_put_([[2, 0]], x.narrow(0, 4, 2), false)")
case("index_put_none_nondense_values", "index_put_", f32(2, 4),
     lambda x, c: x.__setitem__((slice(None), i64([0, 1])), c(x[:, 2:4])),
     "x[:, [0, 1]] = x[:, 2:4]: x.index_put_([None, [0, 1]], x.narrow(1, 2, 2), false)")
case("scatter_shifted_src", "scatter_", f32(6),
     lambda x, c: x[0:4].scatter_(0, i64([0, 2]), c(x[1:3])),
     "x.narrow(0, 0, 4).scatter_(0, [0, 2], x.narrow(0, 1, 2))")
case("scatter_self_src", "scatter_", f32(2, 3),
     lambda x, c: x.scatter_(0, i64([[1, 0, 1]]), x), "x.scatter_(0, [[1, 0, 1]], x)")
case("scatter_scalar_index_aliases_self", "scatter_", i64([1, 0, 4, 5]),
     lambda x, c: x.scatter_(0, c(x[0:2]), 9), "x.scatter_(0, x.narrow(0, 0, 2), 9)")
case("scatter_disjoint_src", "scatter_", f32(6),
     lambda x, c: x[0:3].scatter_(0, i64([2, 0]), c(x[4:6])),
     "x.narrow(0, 0, 3).scatter_(0, [2, 0], x.narrow(0, 4, 2))")
case("scatter_add_shifted_src", "scatter_add_", f32(6),
     lambda x, c: x[0:4].scatter_add_(0, i64([0, 2]), c(x[1:3])),
     "x.narrow(0, 0, 4).scatter_add_(0, [0, 2], x.narrow(0, 1, 2))")
case("scatter_add_disjoint_src", "scatter_add_", f32(6),
     lambda x, c: x[0:3].scatter_add_(0, i64([1, 1]), c(x[4:6])),
     "x.narrow(0, 0, 3).scatter_add_(0, [1, 1], x.narrow(0, 4, 2))")

json.dump({"torch": torch.__version__, "cases": CASES}, __import__("sys").stdout, indent=1)
print()
