#!/usr/bin/env python3
"""Records PyTorch's results for the layouts that the fast kernels of
`softmax`, `masked_fill_`, `index_put_` and `cat`/`stack` treat apart
(contiguous or strided lanes and rows, broadcast masks and values, values
in the written tensor's own storage, parts sharing a storage, empty
tensors); funcz-runtime/tests/fast_paths.rs replays every case without
torch:

    /work/venv/bin/python scripts/record_fast_paths.py \
        > funcz-runtime/tests/fixtures/fast_paths.json

The inputs are not stored: both sides build them the same way
(`seq(shape, start, step)`: element i is `start + step * i`, computed in
f64 and rounded to f32, row-major). Each case is written once here and
once in the test, under the same name; the file maps each name to its
results (a list of tensors: the returned tensor, then, for in-place ops,
the written tensor's base afterwards).
"""

import json
import math

import torch


def enc(t):
    v = t.detach().flatten().tolist()
    if t.dtype.is_floating_point:
        v = [x if math.isfinite(x) else str(x) for x in v]
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "values": v}


def seq(shape, start=0.0, step=1.0):
    n = math.prod(shape)
    return (torch.arange(n, dtype=torch.float64) * step + start).to(torch.float32).reshape(shape)


def i64(values):
    return torch.tensor(values, dtype=torch.int64)


def b(values):
    return torch.tensor(values, dtype=torch.bool)


OUT = {}


def case(name, *results):
    OUT[name] = [enc(r) for r in results]


nan, inf = float("nan"), float("inf")

# softmax / log_softmax
x = seq([3, 17], -4.0, 0.37)
x[1, 5] = nan
x[2, :] = -inf
case("softmax_last_nan_neginf", x.softmax(-1))
x = seq([2, 9], -3.0, 250.0)  # lanes with a huge spread
case("softmax_last_spread", x.softmax(-1), x.log_softmax(-1))
x = seq([4, 3], 1.0, -0.5)
case("softmax_dim0", x.softmax(0), x.log_softmax(0))
x = seq([5, 3], 0.25, 0.75)
case("softmax_transposed", x.t().softmax(-1), x.t().log_softmax(-1))
x = seq([2, 3, 4], -1.0, 0.3)
case("softmax_3d_middle", x.softmax(1), x.log_softmax(-2))
x = seq([2, 6], -1.0, 0.5)
case("softmax_narrow", x.narrow(1, 1, 4).softmax(-1))
case("softmax_0d", torch.tensor(2.5).softmax(0))
case("softmax_empty", torch.zeros(0, 4).softmax(-1), torch.zeros(3, 0).softmax(-1))

# masked_fill_
x = seq([3, 4])
m = b([[False, True, True, False], [True, False, False, False], [False, False, False, True]])
x.masked_fill_(m, -inf)
case("mask_same_shape", x)
x = seq([3, 4])
x.masked_fill_(b([True, False, False, True]), 9.0)
case("mask_row_bcast", x)
x = seq([3, 4])
x.masked_fill_(b([[True], [False], [True]]), -1.0)
case("mask_col_bcast", x)
x = seq([2, 3, 4])
x.masked_fill_(b([i % 3 == 0 for i in range(12)]).reshape(3, 4), 7.0)
case("mask_3d_bcast", x)
base = seq([4, 3])
base.t().masked_fill_(seq([3, 4]).gt(5.0), 0.5)
case("mask_self_transposed", base)
base = seq([4, 5])
base.narrow(1, 1, 3).narrow(0, 1, 2).masked_fill_(b([[True, False, True], [False, True, True]]), -2.0)
case("mask_self_window", base)
x = seq([3, 4])
x.masked_fill_(seq([4, 3]).gt(4.0).t(), 3.0)
case("mask_mask_transposed", x)
x = seq([3, 4])
x.masked_fill_(torch.zeros(3, 4, dtype=torch.bool), 3.0)
case("mask_none_true", x)
x = seq([3, 4])
x.masked_fill_(torch.tensor(True), 1.5)
case("mask_0d_mask", x)

# index_put_ (accumulate = False without duplicate positions: PyTorch
# does not define which duplicate wins)
x = seq([6, 4])
x.index_put_((i64([4, 0, -1]),), seq([3, 4], 100.0))
case("put_rows", x)
x = seq([6, 4])
x.index_put_((i64([1, 1, 3, 1]),), seq([4, 4], 10.0), accumulate=True)
case("put_rows_accumulate_dup", x)
x = seq([6, 4])
x.index_put_((i64([0, 2]),), seq([4], -10.0))
case("put_rows_row_bcast", x)
x = seq([6, 4])
x.index_put_((i64([5, 2, 3]),), seq([3, 1], 50.0))
case("put_rows_col_bcast", x)
x = seq([6, 4])
x.index_put_((i64([5, 1]),), torch.tensor(-3.0))
case("put_rows_scalar", x)
base = seq([4, 6])
base.t().index_put_((i64([1, 4]),), seq([2, 4], 20.0))
case("put_self_transposed", base)
x = seq([3, 4])
x.index_put_((i64([0, 2, 1]), i64([3, 0, 1])), seq([3], -7.0))
case("put_elements", x)
x = seq([3, 4])
x.index_put_((i64([0, 0, 2]), i64([1, 1, 3])), seq([3], 1.0), accumulate=True)
case("put_elements_accumulate_dup", x)
base = seq([5, 3])
base.narrow(0, 0, 3).index_put_((i64([2, 0]),), base.narrow(0, 3, 2))
case("put_values_own_storage", base)
x = seq([3, 2, 4])
x.index_put_((i64([[2], [0]]),), seq([2, 1, 2, 4], -20.0))
case("put_3d_index_2d", x)
x = seq([4, 3])
case("put_functional", x.index_put((i64([3, 1]),), seq([2, 3], 40.0)), x)

# cat / stack
a, c = seq([5], 1.0), seq([3], -1.0)
case("cat_1d", torch.cat([a, c, a], 0))
a, c = seq([2, 3]), seq([2, 2], 10.0)
case("cat_dim1", torch.cat([a, c], 1))
a = seq([2, 3])
case("cat_shared_storage", torch.cat([a, a, a.narrow(1, 1, 2)], 1))
a, c = seq([3, 2]), seq([2, 3], 20.0)
case("cat_strided", torch.cat([a.t(), c], 0), torch.cat([c, a.t()], 1))
a = seq([2, 3])
case("cat_legacy_empty", torch.cat([torch.zeros(0), a, torch.zeros(0)], 0))
case("cat_empty_parts", torch.cat([torch.zeros(2, 0), a, torch.zeros(2, 0)], 1))
a, c = seq([2, 3]), seq([3, 2], 10.0)
case("stack", torch.stack([a, c.t()], 0), torch.stack([a, c.t()], 1), torch.stack([a, a], 2))

print(json.dumps(OUT, indent=None, separators=(",", ":")))
