#!/usr/bin/env python3
"""Records what PyTorch does with bad shapes, dims, indices and sizes
(funcz-runtime/tests/bad_input_torch.rs replays every case without torch):

    /work/venv/bin/python scripts/record_bad_input.py \
        > funcz-runtime/tests/fixtures/bad_input.json

Each case is one op on `x = arange(numel, float64).reshape(shape)` (or on
two such inputs, for the joins, matmul and broadcasting) with integer
arguments taken from a list of troublemakers: out-of-range dims and
indices, negative sizes, and values near int64's ends (2^62, 2^63 - 1,
-2^63). Recorded: `error` (PyTorch raised) and its message, or the result's
shape and, when it has at most 4096 elements, its values; `torch_wraps`
where PyTorch's shape is not the exact one (its int64 arithmetic wrapped:
`repeat` of 3 by 2^63 - 1). Each list result
(split, chunk) is recorded as its list of shapes.

The ops are called through `torch.ops.aten` where the Python method would
convert its arguments differently from the aten op funcz follows.
"""

import json

import torch

aten = torch.ops.aten
BIG = [2**62, 2**63 - 1, -(2**63), -(2**63) + 1, 2**32, -(2**32)]
SMALL_DIMS = [-4, -3, -2, -1, 0, 1, 2, 3]
SHAPES = [[], [0], [3], [2, 3], [3, 0], [1, 2, 1]]
READ_LIMIT = 4096


def x_of(shape):
    n = 1
    for d in shape:
        n *= d
    return torch.arange(n, dtype=torch.float64).reshape(shape)


def enc(r):
    if isinstance(r, (list, tuple)):
        return {"shapes": [list(t.shape) for t in r]}
    out = {"shape": list(r.shape)}
    if r.numel() <= READ_LIMIT:
        out["values"] = r.reshape(-1).tolist()
    return out


CASES = []


def case(op, shapes, args, run, true_shape=None):
    """`true_shape(*shapes)` is the result's shape in exact arithmetic,
    where PyTorch's int64 arithmetic may wrap: a case where PyTorch returns
    another shape is recorded as `torch_wraps` (funcz must refuse it)."""
    entry = {"op": op, "shapes": shapes, "args": args}
    try:
        r = run(*[x_of(s) for s in shapes])
        entry["result"] = enc(r)
        entry["error"] = None
        if true_shape is not None and list(r.shape) != true_shape(*shapes):
            entry["torch_wraps"] = True
    except Exception as e:  # noqa: BLE001 -- any refusal is recorded
        entry["error"] = str(e).split("\n")[0][:300]
    CASES.append(entry)


def repeat_shape(reps):
    def shape(s):
        s = [1] * (len(reps) - len(s)) + list(s)
        return [a * b for a, b in zip(s, reps)]
    return shape


def main():
    dims = SMALL_DIMS + BIG
    for s in SHAPES:
        for d in dims:
            case("transpose", [s], [d, 0], lambda x, d=d: aten.transpose.int(x, d, 0))
            case("unsqueeze", [s], [d], lambda x, d=d: aten.unsqueeze(x, d))
            case("squeeze_dim", [s], [d], lambda x, d=d: aten.squeeze.dim(x, d))
            case("sum_dim", [s], [d], lambda x, d=d: aten.sum.dim_IntList(x, [d]))
            case("flip", [s], [d], lambda x, d=d: aten.flip(x, [d]))
            case("roll", [s], [1, d], lambda x, d=d: aten.roll(x, [1], [d]))
        for i in [-4, -3, -1, 0, 1, 2, 3] + BIG:
            case("select", [s], [0, i], lambda x, i=i: aten.select.int(x, 0, i))
            case("select", [s], [-1, i], lambda x, i=i: aten.select.int(x, -1, i))
            case("narrow", [s], [0, i, 1], lambda x, i=i: aten.narrow(x, 0, i, 1))
            case("narrow", [s], [0, 0, i], lambda x, i=i: aten.narrow(x, 0, 0, i))
            case("slice", [s], [0, i, 2**63 - 1, 1],
                 lambda x, i=i: aten.slice.Tensor(x, 0, i, 2**63 - 1, 1))
            case("slice", [s], [0, 0, i, 1], lambda x, i=i: aten.slice.Tensor(x, 0, 0, i, 1))
            # PyTorch's slice computes (end - start + step - 1) / step in
            # int64, so a step near 2^63 wraps to a negative size; any step
            # past the size gives the same slice, so the result of a step of
            # 2^31 is recorded for those.
            case("slice", [s], [0, 0, 3, i],
                 lambda x, i=i: aten.slice.Tensor(x, 0, 0, 3, min(i, 2**31)))
            case("diagonal", [s], [i, 0, -1], lambda x, i=i: aten.diagonal(x, i, 0, -1))
            case("unfold", [s], [0, i, 1], lambda x, i=i: aten.unfold(x, 0, i, 1))
            case("unfold", [s], [0, 1, i], lambda x, i=i: aten.unfold(x, 0, 1, i))
            case("split", [s], [i, 0], lambda x, i=i: aten.split.Tensor(x, i, 0))
            if i <= 2**20:
                # chunk(2^62) of an empty dim makes 2^62 tensors in PyTorch.
                case("chunk", [s], [i, 0], lambda x, i=i: aten.chunk(x, i, 0))
            case("index_select", [s], [0, [i]],
                 lambda x, i=i: aten.index_select(x, 0, torch.tensor([i])))
            case("take", [s], [[i]], lambda x, i=i: aten.take(x, torch.tensor([i])))
            case("permute", [s], [[i] + list(range(1, len(s)))],
                 lambda x, i=i, s=s: aten.permute(x, [i] + list(range(1, len(s)))))
        for sizes in [[-1], [2, -1], [-1, -1], [-2, 3], [6], [0, -1], [2**62, 2],
                      [2**62, 0, -1], [2**63 - 1], [3, 2**62], [1, -1, 1, 1]]:
            case("view", [s], [sizes], lambda x, z=sizes: aten.view(x, z))
            case("reshape", [s], [sizes], lambda x, z=sizes: aten.reshape(x, z))
        for sizes in [[-1], [2, -1], [-1, 3], [4, 3], [2**32, 2**32, 3], [2**62, 3],
                      [2**62, 2, 3], [-2, 3], [2**63 - 1, 0], [0, 2**63 - 1, 2**63 - 1],
                      [2, 2, 3], [1, 2, 1], [5, 1, 2, 1], [3, -1, -1]]:
            case("expand", [s], [sizes], lambda x, z=sizes: aten.expand(x, z))
        for reps in [[2], [1, 2], [2, 2, 2], [-1, 1], [0, 2**63 - 1], [2**62, 2, 1],
                     [2**32, 2**32, 1], [1, 1, 1, 1]]:
            case("repeat", [s], [reps], lambda x, r=reps: aten.repeat(x, r), repeat_shape(reps))
    for size, stride, off in [
        ([2], [1], 0), ([2], [1], 5), ([7], [1], 0), ([2**62], [0], 0),
        ([2**62, 4], [0, 0], 0), ([2**62, 2], [4, 2**62], 0), ([2], [-1], 0),
        ([-1], [1], 0), ([2], [1], -1), ([0, 5], [2**62, 2**62], 0), ([2, 2], [1], 0),
        ([1, 1], [2**63 - 1, 2**63 - 1], 5), ([3, 2], [2, 1], 0),
    ]:
        case("as_strided", [[6]], [size, stride, off],
             lambda x, a=size, b=stride, c=off: aten.as_strided(x, a, b, c))
    for shape in [[2**62, 2], [2**63 - 1], [0, 2**40, 2**40], [2**40, 2**40, 0],
                  [0, 2**40, 2**20], [2, 0, 3], [-1], [2, -3]]:
        case("zeros", [], [shape], lambda z=shape: aten.zeros(z, dtype=torch.float64))
    pairs = [([2, 3], [2, 3]), ([2, 3], [3, 3]), ([2, 3], [2]), ([0], [2, 3]),
             ([0], [0]), ([], [3]), ([3], []), ([2, 1], [1, 3]), ([3, 1], [2]),
             ([2, 3], [3, 2]), ([1, 2, 3], [4, 3, 1]), ([3], [3]), ([2, 2, 3], [3])]
    for a, b in pairs:
        for d in [0, 1, -1, 2, -3, 2**63 - 1, -(2**63)]:
            case("cat", [a, b], [d], lambda x, y, d=d: aten.cat([x, y], d))
            case("stack", [a, b], [d], lambda x, y, d=d: aten.stack([x, y], d))
        case("matmul", [a, b], [], lambda x, y: aten.matmul(x, y))
        case("add", [a, b], [], lambda x, y: aten.add.Tensor(x, y))
    # One case per line.
    print("[\n" + ",\n".join(json.dumps(c) for c in CASES) + "\n]")


if __name__ == "__main__":
    main()
