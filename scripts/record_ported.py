#!/usr/bin/env python3
"""Records PyTorch's values for the ported-code conformance suite
(tests/ported/*.rs): torch.optim's single-tensor optimizers and
torch.nn.functional's normalization, loss and attention functions.

Run with a Python that has torch (CI never does; the fixture is committed):

    /work/venv/bin/python scripts/record_ported.py > tests/fixtures/ported.json

Inputs are not random: element i of an input with seed s is
((i * 7919 + s * 104729) % 1000) / 500 - 1, computed in f64 and rounded to
f32, so the Rust tests rebuild the same inputs without a fixture (see
`tests/ported/common.rs::input`). The recorded inputs are in the fixture too,
so a test can check it rebuilt them exactly.
"""

import json
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float32)


def values(n, seed):
    return [((i * 7919 + seed * 104729) % 1000) / 500.0 - 1.0 for i in range(n)]


def inp(shape, seed, scale=1.0, offset=0.0):
    n = 1
    for d in shape:
        n *= d
    t = torch.tensor(values(n, seed), dtype=torch.float64).reshape(shape)
    return (t * scale + offset).to(torch.float32)


def rec(t):
    t = t.detach()
    if t.dtype == torch.bool:
        data = [bool(v) for v in t.reshape(-1).tolist()]
    elif t.dtype in (torch.int64, torch.int32):
        data = [int(v) for v in t.reshape(-1).tolist()]
    else:
        data = [float(v) for v in t.to(torch.float64).reshape(-1).tolist()]
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "data": data}


SHAPE = [3, 4]
STEPS = 3


def run_optimizer(name, cls, kwargs, state_names):
    p = torch.nn.Parameter(inp(SHAPE, 1))
    opt = cls([p], foreach=False, **kwargs)
    grads = []
    for step in range(STEPS):
        g = inp(SHAPE, 10 + step, scale=0.5)
        grads.append(rec(g))
        p.grad = g.clone()
        opt.step()
    st = opt.state[p]
    state = {}
    for k in state_names:
        v = st[k]
        if torch.is_tensor(v):
            state[k] = rec(v)
        else:
            state[k] = {"shape": [], "dtype": "float64", "data": [float(v)]}
    return {
        "kind": "optimizer",
        "optimizer": cls.__name__,
        "hyper": {k: (float(v) if not isinstance(v, (bool, tuple)) else v) for k, v in kwargs.items()},
        "param0": rec(inp(SHAPE, 1)),
        "grads": grads,
        "param": rec(p),
        "state": state,
    }


def optimizers():
    o = torch.optim
    cases = {
        "sgd": (o.SGD, dict(lr=0.1), []),
        "sgd_momentum": (o.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01), ["momentum_buffer"]),
        "sgd_nesterov": (o.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), ["momentum_buffer"]),
        "adam": (o.Adam, dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01), ["exp_avg", "exp_avg_sq"]),
        "adam_amsgrad": (o.Adam, dict(lr=0.01, amsgrad=True), ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
        "adamw": (o.AdamW, dict(lr=0.01, weight_decay=0.1), ["exp_avg", "exp_avg_sq"]),
        "adamw_amsgrad": (o.AdamW, dict(lr=0.01, weight_decay=0.1, amsgrad=True), ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
        "rmsprop": (o.RMSprop, dict(lr=0.01, alpha=0.99, eps=1e-8), ["square_avg"]),
        "rmsprop_centered": (o.RMSprop, dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.01), ["square_avg", "momentum_buffer", "grad_avg"]),
        "adagrad": (o.Adagrad, dict(lr=0.1, lr_decay=0.01, weight_decay=0.01), ["sum"]),
        "adadelta": (o.Adadelta, dict(lr=1.0, rho=0.9, weight_decay=0.01), ["square_avg", "acc_delta"]),
        "adamax": (o.Adamax, dict(lr=0.02, weight_decay=0.01), ["exp_avg", "exp_inf"]),
        "nadam": (o.NAdam, dict(lr=0.02, weight_decay=0.01), ["exp_avg", "exp_avg_sq", "mu_product"]),
        "radam": (o.RAdam, dict(lr=0.01, weight_decay=0.01), ["exp_avg", "exp_avg_sq"]),
        "rprop": (o.Rprop, dict(lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)), ["prev", "step_size"]),
    }
    out = {}
    for name, (cls, kw, st) in cases.items():
        out[name] = run_optimizer(name, cls, kw, st)
    return out


def functional():
    out = {}
    x = inp([2, 3, 4], 2, scale=2.0)
    out["softmax"] = {"x": rec(x), "out": rec(F.softmax(x, dim=-1)), "dim": -1}
    out["log_softmax"] = {"x": rec(x), "out": rec(F.log_softmax(x, dim=1)), "dim": 1}

    w = inp([4], 3, scale=0.5, offset=1.0)
    b = inp([4], 4, scale=0.1)
    out["layer_norm"] = {"x": rec(x), "weight": rec(w), "bias": rec(b), "eps": 1e-5,
                         "out": rec(F.layer_norm(x, [4], w, b, 1e-5))}

    xb = inp([4, 3, 5], 5, scale=2.0)
    rm = inp([3], 6, scale=0.1)
    rv = inp([3], 7, scale=0.1, offset=1.0)
    wb = inp([3], 8, scale=0.5, offset=1.0)
    bb = inp([3], 9, scale=0.1)
    rm1, rv1 = rm.clone(), rv.clone()
    y = F.batch_norm(xb, rm1, rv1, wb, bb, training=True, momentum=0.1, eps=1e-5)
    out["batch_norm_train"] = {"x": rec(xb), "running_mean0": rec(rm), "running_var0": rec(rv),
                               "weight": rec(wb), "bias": rec(bb), "momentum": 0.1, "eps": 1e-5,
                               "out": rec(y), "running_mean": rec(rm1), "running_var": rec(rv1)}

    xg = inp([2, 6, 3], 11, scale=2.0)
    wg = inp([6], 12, scale=0.5, offset=1.0)
    bg = inp([6], 13, scale=0.1)
    out["group_norm"] = {"x": rec(xg), "weight": rec(wg), "bias": rec(bg), "groups": 3, "eps": 1e-5,
                         "out": rec(F.group_norm(xg, 3, wg, bg, 1e-5))}

    wr = inp([4], 14, scale=0.5, offset=1.0)
    out["rms_norm"] = {"x": rec(x), "weight": rec(wr), "eps": 1e-6,
                       "out": rec(F.rms_norm(x, [4], wr, 1e-6))}

    table = inp([5, 3], 15)
    idx = torch.tensor([[0, 2, 4], [1, 1, 3]], dtype=torch.int64)
    out["embedding"] = {"weight": rec(table), "indices": rec(idx), "out": rec(F.embedding(idx, table))}

    logits = inp([4, 5], 16, scale=3.0)
    target = torch.tensor([1, 0, 4, 2], dtype=torch.int64)
    out["cross_entropy"] = {"logits": rec(logits), "target": rec(target), "label_smoothing": 0.1,
                            "out": rec(F.cross_entropy(logits, target, label_smoothing=0.1))}
    out["cross_entropy_plain"] = {"logits": rec(logits), "target": rec(target), "label_smoothing": 0.0,
                                  "out": rec(F.cross_entropy(logits, target))}
    lp = F.log_softmax(logits, dim=1)
    out["nll_loss"] = {"logp": rec(lp), "target": rec(target), "out": rec(F.nll_loss(lp, target))}

    a = inp([3, 4], 17)
    bt = inp([3, 4], 18)
    out["mse_loss"] = {"x": rec(a), "y": rec(bt), "out": rec(F.mse_loss(a, bt))}

    q = inp([2, 5, 4], 19)
    k = inp([2, 5, 4], 20)
    v = inp([2, 5, 4], 21)
    out["sdpa_causal"] = {"q": rec(q), "k": rec(k), "v": rec(v),
                          "out": rec(F.scaled_dot_product_attention(q, k, v, is_causal=True))}
    return out


def main():
    doc = {
        "torch_version": torch.__version__,
        "input_rule": "element i of seed s: ((i*7919 + s*104729) % 1000)/500 - 1 (f64, then f32), times scale plus offset",
        "optimizers": optimizers(),
        "functional": functional(),
    }
    json.dump(doc, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
