#!/usr/bin/env python3
"""Check funcz's exported ONNX models with onnxruntime (and onnx.checker).

Not needed by CI (which checks the same models in tract). Usage:

    python -m venv /tmp/ort && /tmp/ort/bin/pip install onnxruntime onnx numpy
    /tmp/ort/bin/python scripts/check_onnxruntime.py            # runs the tests
    /tmp/ort/bin/python scripts/check_onnxruntime.py DIR        # checks DIR only

Without DIR, the script runs the ONNX test suites with FUNCZ_ONNX_OUT set
(`cargo test -p funcz-runtime --features onnx --test onnx` and
`cargo test --test onnx_export`), which makes every checked model write
`NAME.onnx` and `NAME.json` (its inputs and the value funcz computed eagerly
for every output, input updates included) into a temporary directory. Each
model is then validated with `onnx.checker.check_model(full_check=True)`
and run in onnxruntime; every output must match funcz's value (floats within
1e-4 relative / 1e-5 absolute, integers and bools exactly). Exits non-zero on
any disagreement.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

# Traces whose graph cannot reproduce the eager run (as in tests/onnx_export.rs):
# they must disagree, so the list cannot go stale.
NOT_REPRODUCIBLE = {
    "nested": "the helper mutates its argument inside funcz::trace::untraced; "
    "the mutation is not in the graph",
}

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}


def array(v):
    data = [float(x) if isinstance(x, str) else x for x in v["data"]]
    return np.array(data, dtype=DTYPES[v["dtype"]]).reshape(v["shape"])


def check(stem):
    model = onnx.load(stem + ".onnx")
    onnx.checker.check_model(model, full_check=True)
    with open(stem + ".json") as f:
        spec = json.load(f)
    sess = ort.InferenceSession(stem + ".onnx", providers=["CPUExecutionProvider"])
    feeds = {v["name"]: array(v) for v in spec["inputs"]}
    names = [o["name"] for o in spec["outputs"]]
    got = sess.run(names, feeds)
    problems = []
    for want, g in zip(spec["outputs"], got):
        w = array(want)
        if g.shape != w.shape:
            problems.append(f"{want['name']}: shape {g.shape} vs {w.shape}")
        elif w.dtype.kind == "f":
            if not np.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True):
                problems.append(f"{want['name']}: max diff {np.nanmax(np.abs(g - w))}")
        elif not np.array_equal(g, w):
            problems.append(f"{want['name']}: values differ")
    return problems


def main():
    if len(sys.argv) > 1:
        out = sys.argv[1]
    else:
        out = tempfile.mkdtemp(prefix="funcz-onnx-")
        env = dict(os.environ, FUNCZ_ONNX_OUT=out)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for cmd in (
            ["cargo", "test", "-q", "-p", "funcz-runtime", "--features", "onnx", "--test", "onnx"],
            ["cargo", "test", "-q", "--test", "onnx_export"],
        ):
            subprocess.run(cmd, cwd=root, env=env, check=True)
    stems = sorted(p[: -len(".onnx")] for p in glob.glob(os.path.join(out, "*.onnx")))
    if not stems:
        sys.exit(f"no models in {out}")
    bad = excluded = 0
    for stem in stems:
        try:
            problems = check(stem)
        except Exception as e:  # a model onnxruntime or the checker refuses
            problems = [f"{type(e).__name__}: {e}"]
        name = os.path.basename(stem).rsplit("-", 2)[0]
        if name in NOT_REPRODUCIBLE:
            excluded += 1
            if not problems:
                bad += 1
                print(f"FAIL {os.path.basename(stem)} now agrees: remove it from NOT_REPRODUCIBLE")
            continue
        if problems:
            bad += 1
            print(f"FAIL {os.path.basename(stem)}")
            for p in problems:
                print(f"    {p}")
    checked = len(stems) - excluded
    print(
        f"onnxruntime {ort.__version__}: {checked - bad}/{checked} models agree with funcz "
        f"({excluded} not reproducible by design)"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
