#!/usr/bin/env python3
"""Records the expected values of funcz's math, reduction, shape and sorting
ops (issue 12, part 3) from PyTorch, into
funcz-runtime/tests/fixtures/math_ops.json (read by
funcz-runtime/tests/math_values.rs; the tests never need torch).

Each case names the Rust method (`op`), its dtype, its inputs (row-major
data and shape), its arguments (`args`, in the Rust method's order) and the
outputs PyTorch computed. Non-finite floats are written as the strings
"nan", "inf", "-inf".

Run: /work/venv/bin/python scripts/record_math_ops.py
"""

import json
import math
import os

import torch

torch.manual_seed(12)

DT = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def enc(v):
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def tensor_json(t):
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).replace("torch.", ""),
        "data": [enc(x) for x in t.reshape(-1).tolist()],
    }


def rnd(shape, dtype, lo=-3.0, hi=3.0, ties=False):
    if dtype == "int64":
        return torch.randint(-5, 6, shape, dtype=torch.int64)
    if ties:
        return torch.randint(-3, 4, shape).to(DT[dtype])
    return (torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo).to(DT[dtype])


def pos(shape, dtype):
    return (torch.rand(shape, dtype=torch.float64) * 4 + 0.1).to(DT[dtype])


def special(dtype):
    return torch.tensor(
        [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, float("nan"), float("inf"), -float("inf"), 20.5, -30.0],
        dtype=DT[dtype],
    )


# Rust method name -> (torch function of (inputs, args) returning a tensor or a tuple)
F = {
    "rsqrt": lambda x, a: torch.rsqrt(x[0]),
    "reciprocal": lambda x, a: torch.reciprocal(x[0]),
    "sin": lambda x, a: torch.sin(x[0]),
    "cos": lambda x, a: torch.cos(x[0]),
    "erf": lambda x, a: torch.erf(x[0]),
    "floor": lambda x, a: torch.floor(x[0]),
    "round": lambda x, a: torch.round(x[0]),
    "gelu": lambda x, a: torch.nn.functional.gelu(x[0], approximate=a[0]),
    "silu": lambda x, a: torch.nn.functional.silu(x[0]),
    "softplus": lambda x, a: torch.nn.functional.softplus(x[0], beta=a[0], threshold=a[1]),
    "relu6": lambda x, a: torch.nn.functional.relu6(x[0]),
    "hardtanh": lambda x, a: torch.nn.functional.hardtanh(x[0], a[0], a[1]),
    "clamp_min": lambda x, a: torch.clamp_min(x[0], a[0]),
    "clamp_max": lambda x, a: torch.clamp_max(x[0], a[0]),
    "sign": lambda x, a: torch.sign(x[0]),
    "maximum": lambda x, a: torch.maximum(x[0], x[1]),
    "minimum": lambda x, a: torch.minimum(x[0], x[1]),
    "add_scaled": lambda x, a: torch.add(x[0], x[1], alpha=a[0]),
    "sub_scaled": lambda x, a: torch.sub(x[0], x[1], alpha=a[0]),
    "addcmul1": lambda x, a: torch.addcmul(x[0], x[1], x[2]),
    "addcdiv1": lambda x, a: torch.addcdiv(x[0], x[1], x[2]),
    "rsub_scalar": lambda x, a: a[0] - x[0],
    "rdiv_scalar": lambda x, a: a[0] / x[0],
    "max": lambda x, a: torch.max(x[0]),
    "min": lambda x, a: torch.min(x[0]),
    "max_dim": lambda x, a: tuple(torch.max(x[0], a[0], keepdim=a[1])),
    "min_dim": lambda x, a: tuple(torch.min(x[0], a[0], keepdim=a[1])),
    "argmax": lambda x, a: torch.argmax(x[0], dim=a[0], keepdim=a[1]),
    "argmin": lambda x, a: torch.argmin(x[0], dim=a[0], keepdim=a[1]),
    "amax": lambda x, a: torch.amax(x[0], dim=a[0], keepdim=a[1]),
    "amin": lambda x, a: torch.amin(x[0], dim=a[0], keepdim=a[1]),
    "sum_dims": lambda x, a: torch.sum(x[0], dim=a[0], keepdim=a[1]),
    "mean_dims": lambda x, a: torch.mean(x[0], dim=a[0], keepdim=a[1]),
    "var": lambda x, a: torch.var(x[0], correction=a[0]),
    "std": lambda x, a: torch.std(x[0], correction=a[0]),
    "var_dims": lambda x, a: torch.var(x[0], dim=a[0], correction=a[1], keepdim=a[2]),
    "std_dims": lambda x, a: torch.std(x[0], dim=a[0], correction=a[1], keepdim=a[2]),
    "var_mean": lambda x, a: tuple(torch.var_mean(x[0], dim=a[0], correction=a[1], keepdim=a[2])),
    "vector_norm": lambda x, a: torch.linalg.vector_norm(x[0], ord=a[0], dim=a[1], keepdim=a[2]),
    "norm": lambda x, a: torch.norm(x[0], p=a[0]),
    "cumsum": lambda x, a: torch.cumsum(x[0], a[0]),
    "softmax": lambda x, a: torch.softmax(x[0], a[0]),
    "log_softmax": lambda x, a: torch.log_softmax(x[0], a[0]),
    "cat": lambda x, a: torch.cat(x, a[0]),
    "stack": lambda x, a: torch.stack(x, a[0]),
    "roll": lambda x, a: torch.roll(x[0], a[0], a[1]),
    "flip": lambda x, a: torch.flip(x[0], a[0]),
    "repeat": lambda x, a: x[0].repeat(*a[0]),
    "tril": lambda x, a: torch.tril(x[0], a[0]),
    "triu": lambda x, a: torch.triu(x[0], a[0]),
    "squeeze_dims": lambda x, a: torch.squeeze(x[0], tuple(a[0])),
    "sort": lambda x, a: tuple(torch.sort(x[0], dim=a[0], descending=a[1], stable=True)),
    "topk": lambda x, a: tuple(torch.topk(x[0], a[0], dim=a[1], largest=a[2], sorted=a[3])),
}

cases = []


def case(name, op, dtype, inputs, args=()):
    outs = F[op]([t.clone() for t in inputs], list(args))
    if not isinstance(outs, tuple):
        outs = (outs,)
    cases.append(
        {
            "name": name,
            "op": op,
            "dtype": dtype,
            "inputs": [tensor_json(t) for t in inputs],
            "args": [enc(a) if isinstance(a, float) else a for a in args],
            "outputs": [tensor_json(o) for o in outs],
        }
    )


for dt in ["float32", "float64"]:
    x = rnd((3, 4), dt)
    p = pos((2, 3), dt)
    s = special(dt)
    for op in ["sin", "cos", "erf", "floor", "round", "silu", "relu6", "sign"]:
        case(f"{op} {dt}", op, dt, [x])
        case(f"{op} special {dt}", op, dt, [s])
    for op in ["rsqrt", "reciprocal"]:
        case(f"{op} {dt}", op, dt, [p])
        case(f"{op} special {dt}", op, dt, [s])
    case(f"erf wide {dt}", "erf", dt, [torch.linspace(-7, 7, 57, dtype=DT[dt])])
    case(f"gelu none {dt}", "gelu", dt, [x], ["none"])
    case(f"gelu tanh {dt}", "gelu", dt, [x], ["tanh"])
    case(f"gelu special {dt}", "gelu", dt, [s], ["none"])
    case(f"softplus {dt}", "softplus", dt, [s], [1.0, 20.0])
    case(f"softplus beta {dt}", "softplus", dt, [x], [2.0, 3.0])
    case(f"hardtanh {dt}", "hardtanh", dt, [s], [-1.0, 1.0])
    case(f"hardtanh 0 6 {dt}", "hardtanh", dt, [x], [0.0, 2.0])
    case(f"clamp_min {dt}", "clamp_min", dt, [s], [0.25])
    case(f"clamp_max {dt}", "clamp_max", dt, [s], [0.25])
    case(f"clamp_min nan bound {dt}", "clamp_min", dt, [x], [float("nan")])
    row = rnd((4,), dt)
    col = rnd((3, 1), dt)
    case(f"maximum broadcast {dt}", "maximum", dt, [x, row])
    case(f"minimum broadcast {dt}", "minimum", dt, [col, row])
    case(f"maximum nan {dt}", "maximum", dt, [s, s.flip(0)])
    case(f"minimum nan {dt}", "minimum", dt, [s, s.flip(0)])
    case(f"add_scaled broadcast {dt}", "add_scaled", dt, [x, row], [0.5])
    case(f"sub_scaled broadcast {dt}", "sub_scaled", dt, [x, col], [-2.0])
    case(f"addcmul1 broadcast {dt}", "addcmul1", dt, [x, row, col])
    case(f"addcdiv1 broadcast {dt}", "addcdiv1", dt, [x, row, pos((3, 1), dt)])
    case(f"rsub scalar {dt}", "rsub_scalar", dt, [x], [1.0])
    case(f"rdiv scalar {dt}", "rdiv_scalar", dt, [p], [2.0])
    case(f"rdiv scalar 3 {dt}", "rdiv_scalar", dt, [rnd((5,), dt)], [3.0])

    # reductions
    t = rnd((2, 3, 4), dt, ties=True)
    n = t.clone()
    n[1, 2, 1] = float("nan")
    case(f"max all {dt}", "max", dt, [t])
    case(f"min all {dt}", "min", dt, [t])
    case(f"max all nan {dt}", "max", dt, [n])
    for d, k in [(0, False), (-1, True), (1, False), (2, False)]:
        case(f"max_dim {d} {k} {dt}", "max_dim", dt, [t], [d, k])
        case(f"min_dim {d} {k} {dt}", "min_dim", dt, [t], [d, k])
        case(f"argmax {d} {k} {dt}", "argmax", dt, [t], [d, k])
        case(f"argmin {d} {k} {dt}", "argmin", dt, [t], [d, k])
    case(f"max_dim nan {dt}", "max_dim", dt, [n], [-1, False])
    case(f"argmax nan {dt}", "argmax", dt, [n], [None, False])
    case(f"argmax flat {dt}", "argmax", dt, [t], [None, False])
    case(f"argmin flat keepdim {dt}", "argmin", dt, [t], [None, True])
    case(f"max_dim empty other dim {dt}", "max_dim", dt, [rnd((0, 3), dt)], [1, False])
    for dims, k in [([0, 2], False), ([-1], True), ([], False), ([1, 0], True)]:
        case(f"amax {dims} {k} {dt}", "amax", dt, [n if dims == [-1] else t], [dims, k])
        case(f"amin {dims} {k} {dt}", "amin", dt, [t], [dims, k])
        case(f"sum_dims {dims} {k} {dt}", "sum_dims", dt, [x.reshape(3, 2, 2)], [dims, k])
        case(f"mean_dims {dims} {k} {dt}", "mean_dims", dt, [x.reshape(3, 2, 2)], [dims, k])
    case(f"sum_dims empty input {dt}", "sum_dims", dt, [rnd((0, 3), dt)], [[0], False])
    case(f"mean_dims empty input {dt}", "mean_dims", dt, [rnd((0, 3), dt)], [[0], True])
    for c in [0, 1]:
        case(f"var all c{c} {dt}", "var", dt, [x], [c])
        case(f"std all c{c} {dt}", "std", dt, [x], [c])
        for dims, k in [([1], False), ([-1, 0], True), ([], False)]:
            case(f"var_dims {dims} c{c} {k} {dt}", "var_dims", dt, [t], [dims, c, k])
            case(f"std_dims {dims} c{c} {k} {dt}", "std_dims", dt, [t], [dims, c, k])
            case(f"var_mean {dims} c{c} {k} {dt}", "var_mean", dt, [t], [dims, c, k])
    case(f"var_dims c1 {dt}", "var_dims", dt, [x], [[1], 1, False])
    case(f"var single c1 {dt}", "var", dt, [rnd((1,), dt)], [1])
    case(f"var 2 c2 {dt}", "var_dims", dt, [rnd((3, 2), dt)], [[1], 2, False])
    for o in [2.0, 1.0, float("inf"), float("-inf"), 0.0, 3.0]:
        case(f"vector_norm {o} {dt}", "vector_norm", dt, [x], [o, [1], False])
        case(f"vector_norm all {o} {dt}", "vector_norm", dt, [x], [o, [], False])
        case(f"norm {o} {dt}", "norm", dt, [x], [o])
    case(f"vector_norm keepdim {dt}", "vector_norm", dt, [t], [2.0, [0, -1], True])
    case(f"vector_norm empty {dt}", "vector_norm", dt, [rnd((0, 3), dt)], [2.0, [0], False])
    for d in [0, -1, 1]:
        case(f"cumsum {d} {dt}", "cumsum", dt, [t], [d])
        case(f"softmax {d} {dt}", "softmax", dt, [t], [d])
        case(f"log_softmax {d} {dt}", "log_softmax", dt, [t], [d])
    big = torch.tensor([[1000.0, 0.0, -1000.0], [-float("inf"), 1.0, 2.0]], dtype=DT[dt])
    case(f"softmax large {dt}", "softmax", dt, [big], [1])
    case(f"log_softmax large {dt}", "log_softmax", dt, [big], [1])
    case(f"softmax 0-d {dt}", "softmax", dt, [torch.tensor(3.0, dtype=DT[dt])], [0])

for dt in ["float32", "float64", "int64"]:
    a = rnd((2, 3), dt)
    b = rnd((2, 1), dt)
    c = rnd((1, 3), dt)
    case(f"cat -1 {dt}", "cat", dt, [a, b, a], [-1])
    case(f"cat 0 {dt}", "cat", dt, [a, c], [0])
    case(f"cat legacy empty {dt}", "cat", dt, [a, torch.zeros(0, dtype=DT[dt]), c], [0])
    case(f"cat empty part {dt}", "cat", dt, [a, rnd((0, 3), dt)], [0])
    case(f"stack 0 {dt}", "stack", dt, [a, a], [0])
    case(f"stack -1 {dt}", "stack", dt, [a, a * 2, a], [-1])
    case(f"stack 1 {dt}", "stack", dt, [a, a], [1])
    t = rnd((2, 3, 4), dt)
    case(f"roll {dt}", "roll", dt, [t], [[1, -2], [0, 2]])
    case(f"roll flat {dt}", "roll", dt, [t], [[5], []])
    case(f"roll big shift {dt}", "roll", dt, [t], [[-7], [-1]])
    case(f"flip {dt}", "flip", dt, [t], [[0, -1]])
    case(f"flip none {dt}", "flip", dt, [t], [[]])
    case(f"repeat {dt}", "repeat", dt, [a], [[2, 1, 3]])
    case(f"repeat same rank {dt}", "repeat", dt, [a], [[1, 2]])
    case(f"repeat zero {dt}", "repeat", dt, [a], [[0, 2]])
    m = rnd((2, 3, 4), dt)
    for k in [0, 1, -1, 5, -5]:
        case(f"tril {k} {dt}", "tril", dt, [m], [k])
        case(f"triu {k} {dt}", "triu", dt, [m], [k])
    case(f"squeeze_dims {dt}", "squeeze_dims", dt, [rnd((1, 3, 1, 2), dt)], [[0, -2, 1]])
    ties = rnd((3, 5), dt, ties=True)
    for d, desc in [(-1, False), (-1, True), (0, False), (0, True)]:
        case(f"sort {d} {desc} {dt}", "sort", dt, [ties], [d, desc])
    for k, d, largest in [(2, -1, True), (3, -1, False), (1, 0, True), (5, 1, True), (0, 1, True)]:
        case(f"topk {k} {d} {largest} {dt}", "topk", dt, [ties], [k, d, largest, True])
    case(f"sign {dt}", "sign", dt, [rnd((6,), dt)])
    case(f"cumsum {dt}", "cumsum", dt, [ties], [1])
    case(f"argmax ties {dt}", "argmax", dt, [ties], [1, False])
    case(f"max_dim ties {dt}", "max_dim", dt, [ties], [0, True])
    case(f"amax {dt}", "amax", dt, [ties], [[0], False])
    case(f"sum_dims {dt}", "sum_dims", dt, [t], [[0, 2], False])
    case(f"clamp_min {dt}", "clamp_min", dt, [ties], [0])
    case(f"clamp_max {dt}", "clamp_max", dt, [ties], [1])
    case(f"maximum {dt}", "maximum", dt, [ties, ties[:1]])
    case(f"add_scaled {dt}", "add_scaled", dt, [ties, ties[:1]], [2 if dt == "int64" else 2.5])

for dt in ["float32", "float64"]:
    s = torch.tensor([1.0, float("nan"), 3.0, float("nan"), -1.0, 3.0], dtype=DT[dt])
    case(f"sort nan {dt}", "sort", dt, [s], [0, False])
    case(f"sort nan desc {dt}", "sort", dt, [s], [0, True])
    case(f"topk nan {dt}", "topk", dt, [s], [2, 0, True, True])

out = {
    "torch_version": torch.__version__,
    "cases": cases,
}
path = os.path.join(os.path.dirname(__file__), "..", "funcz-runtime", "tests", "fixtures", "math_ops.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump(out, f, indent=None, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")
