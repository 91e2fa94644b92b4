#!/usr/bin/env python3
"""Quantizes float32 ONNX models with onnxruntime.quantization, three ways.

    make_quantized.py --out DIR [--samples N] [--shape NAME=1x3x48x192] MODEL.onnx...

For each MODEL.onnx this writes, calibrated on N seeded random inputs
(uniform [0, 1), the distribution models/make_reference.py feeds):

    DIR/<stem>_qdq_s8.onnx   QDQ, int8 activations, int8 weights per channel
    DIR/<stem>_qdq_u8.onnx   QDQ, uint8 activations, int8 weights per tensor
    DIR/<stem>_qop.onnx      QOperator (QLinearConv, QLinearMatMul and
                             onnxruntime's com.microsoft QLinear ops), uint8
                             activations, int8 weights per tensor

the three forms issue 25 names. Test and benchmark tooling only (onnx,
onnxruntime, numpy from tools/setup.sh --venv); never a dependency of minirt.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quant_pre_process,
                                      quantize_static)

FORMS = {
    "qdq_s8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                   per_channel=True),
    "qdq_u8": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                   per_channel=False),
    "qop": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                per_channel=False),
}


def input_shapes(model, fixed):
    shapes = {}
    init = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        if vi.name in fixed:
            shapes[vi.name] = fixed[vi.name]
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    return shapes


class Reader(CalibrationDataReader):
    def __init__(self, shapes, samples, seed):
        rng = np.random.default_rng(seed)
        self.feeds = iter([{n: rng.random(s, dtype=np.float32) for n, s in shapes.items()} for _ in range(samples)])

    def get_next(self):
        return next(self.feeds, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--forms", default=",".join(FORMS), help="comma-separated subset of " + ", ".join(FORMS))
    ap.add_argument("--shape", action="append", default=[], help="NAME=1x3x48x192 for a symbolic input")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    fixed = {}
    for s in args.shape:
        name, _, dims = s.partition("=")
        fixed[name] = [int(d) for d in dims.split("x")]
    os.makedirs(args.out, exist_ok=True)
    for path in args.models:
        stem = os.path.splitext(os.path.basename(path))[0]
        model = onnx.load(path)
        shapes = input_shapes(model, fixed)
        with tempfile.TemporaryDirectory() as tmp:
            pre = os.path.join(tmp, "pre.onnx")
            try:
                quant_pre_process(path, pre, skip_symbolic_shape=True)
            except Exception as e:  # pre-processing is an optimization; quantize the model as it is
                print(f"make_quantized: {stem}: pre-processing skipped ({e})", file=sys.stderr)
                pre = path
            for form in args.forms.split(","):
                out = os.path.join(args.out, f"{stem}_{form}.onnx")
                quantize_static(pre, out, Reader(shapes, args.samples, args.seed), **FORMS[form])
                print(f"make_quantized: wrote {out}")


if __name__ == "__main__":
    main()
