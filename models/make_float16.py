#!/usr/bin/env python3
"""Converts float32 ONNX models to float16 with onnxconverter-common.

    make_float16.py --out DIR MODEL.onnx...

For each MODEL.onnx this writes, with onnxconverter-common's
float16.convert_float_to_float16 (the converter people use for GPU
deployment):

    DIR/<stem>_fp16.onnx        keep_io_types=False: inputs, outputs and weights float16
    DIR/<stem>_fp16_io32.onnx   keep_io_types=True: float16 weights, float32 inputs and
                                outputs (a Cast to float16 after each input, back before
                                each output)

A model that also lists its initializers as graph inputs (the IR < 4 style
of CNTK and old torch exports) has them taken out of the inputs first (and
its IR version raised to 4, the first that allows that): with
keep_io_types=True the converter otherwise keeps those inputs float32 while
making their data float16, a file onnxruntime refuses ("Tensor element type
mismatch"). The computation is unchanged.

Ops the converter keeps in float32 (its default block list: Resize, TopK,
NonMaxSuppression, Range, ...) get Casts around them, as in any model it
converts. Test tooling: needs onnx and onnxconverter-common
(tools/setup.sh --venv).
"""

import argparse
import os
import sys
import warnings

import onnx

try:
    from onnxconverter_common import float16
except ImportError:
    sys.exit("make_float16.py: onnxconverter-common is not installed in this Python "
             "(tools/setup.sh --venv installs it)")


def drop_initializer_inputs(model):
    """Takes initializers out of the graph inputs; returns how many."""
    inits = {t.name for t in model.graph.initializer}
    keep = [v for v in model.graph.input if v.name not in inits]
    dropped = len(model.graph.input) - len(keep)
    if dropped:
        del model.graph.input[:]
        model.graph.input.extend(keep)
        model.ir_version = max(model.ir_version, 4)
    return dropped


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for the converted models")
    ap.add_argument("models", nargs="+", metavar="MODEL.onnx")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for path in args.models:
        if not os.path.isfile(path):
            sys.exit(f"make_float16.py: {path}: no such file")
        model = onnx.load(path)
        dropped = drop_initializer_inputs(model)
        if dropped:
            print(f"{path}: {dropped} initializers taken out of the graph inputs before converting")
        stem = os.path.splitext(os.path.basename(path))[0]
        for keep_io, suffix in ((False, "_fp16"), (True, "_fp16_io32")):
            with warnings.catch_warnings():
                # "the float32 number 1e-09 will be truncated to 1e-07": the
                # converter clamps tiny weights; expected, and not minirt's concern.
                warnings.simplefilter("ignore", UserWarning)
                converted = float16.convert_float_to_float16(model, keep_io_types=keep_io)
            out = os.path.join(args.out, stem + suffix + ".onnx")
            onnx.save(converted, out)
            print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
