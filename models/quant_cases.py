#!/usr/bin/env python3
"""Test folders for quantized models, judged against the float32 original.

    quant_cases.py --out DIR --float32 DIR [--shape NAME=1x3x48x192] QUANTIZED.onnx...

QUANTIZED is <stem>_<form>.onnx (models/make_quantized.py) and its float32
original is FLOAT32/<stem>.onnx. For each this writes

    DIR/<stem>_<form>/model.onnx                  the quantized model
    DIR/<stem>_<form>/test_data_set_0/input_K.pb  seeded random input (uniform [0, 1))
    DIR/<stem>_<form>/test_data_set_0/output_K.pb onnxruntime's outputs of the float32 original

and appends to DIR/bars.txt one line per case: its name, the bar for
minirt's scaled error against those outputs (issue 25: at most 2x the error
of onnxruntime's int8 run of the same quantized file), and onnxruntime's
error itself. Scaled error: max|y - reference| / max|reference| over each
output, the largest over the outputs. Test tooling (onnx, onnxruntime, numpy).
"""

import argparse
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

TYPES = {"tensor(float)": np.float32, "tensor(uint8)": np.uint8, "tensor(int8)": np.int8}


def session(path):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 2
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def scaled(got, ref):
    worst = 0.0
    for a, b in zip(got, ref):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        m = np.abs(b).max()
        worst = max(worst, float(np.abs(a - b).max() / m) if m > 0 else float(np.abs(a).max()))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--float32", required=True, help="folder of the float32 originals")
    ap.add_argument("--shape", action="append", default=[], help="NAME=1x3x48x192 for a symbolic input")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    fixed = {n: [int(d) for d in dims.split("x")] for n, _, dims in (s.partition("=") for s in args.shape)}
    os.makedirs(args.out, exist_ok=True)
    bars = open(os.path.join(args.out, "bars.txt"), "a")
    for path in args.models:
        name = os.path.splitext(os.path.basename(path))[0]
        stem = name.rsplit("_", 2)[0] if name.endswith(("_qdq_s8", "_qdq_u8")) else name.rsplit("_", 1)[0]
        original = os.path.join(args.float32, stem + ".onnx")
        fp32, q = session(original), session(path)
        rng = np.random.default_rng(args.seed)
        feeds = {}
        for i in fp32.get_inputs():
            shape = fixed.get(i.name) or [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
            feeds[i.name] = rng.random(shape, dtype=np.float32)
        ref = fp32.run(None, feeds)
        ort_err = scaled(q.run(None, feeds), ref)
        d = os.path.join(args.out, name)
        if os.path.isdir(d):
            shutil.rmtree(d)
        ds = os.path.join(d, "test_data_set_0")
        os.makedirs(ds)
        shutil.copy(path, os.path.join(d, "model.onnx"))
        for k, i in enumerate(q.get_inputs()):
            with open(os.path.join(ds, f"input_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[i.name], i.name).SerializeToString())
        for k, (o, y) in enumerate(zip(q.get_outputs(), ref)):
            with open(os.path.join(ds, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(y), o.name).SerializeToString())
        bars.write(f"{name} {2 * ort_err:.6g} {ort_err:.6g}\n")
        print(f"quant_cases: {name}: onnxruntime int8 vs float32 scaled error {ort_err:.4g} (bar {2 * ort_err:.4g})")


if __name__ == "__main__":
    main()
