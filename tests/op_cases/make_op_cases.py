#!/usr/bin/env python3
"""Writes grids of single-op (and a few small fused) ONNX test cases whose
expected outputs come from onnxruntime, as ONNX backend-test folders:

    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_K.pb, output_K.pb

    make_op_cases.py --out DIR [--filter TEXT] [--list]

Each model is built with onnx.helper at an explicit opset; weights and shape
operands are initializers, the data inputs are deterministic random tensors
(seeded from the case name), and the reference outputs are computed by
onnxruntime's CPUExecutionProvider with graph optimizations off, so the
reference is the plain op and never a fused rewrite of it. Cases of opsets
1 to 6 (legacy_opset_cases) whose op version onnxruntime no longer
implements use ONNX's reference evaluator (onnx.reference), or, where that
lacks the version too, a NumPy expression of the operator changelog's
definition written in the case.

The cases live in family modules beside this script: cases_conv.py
(convolutions, pooling, Resize), cases_math.py (products, elementwise,
shape and the newer ops), cases_models.py (detector ops, value-sized ops,
legacy opsets, quantized ops, the GPU table's cases), built with
op_case_lib.py (Case, op_case, reference, write_case); FAMILIES below lists
them in the order they are written.

Test tooling only: neither the library nor its tools depend on Python.
"""

import argparse
import os
import shutil
import sys

from cases_conv import conv_cases, convt_cases, pool_cases, resize_cases
from cases_math import elementwise_cases, linalg_cases, newer_op_cases, shape_cases
from cases_models import detector_op_cases, gpu_table_cases, legacy_opset_cases, quant_op_cases
from op_case_lib import write_case

FAMILIES = [conv_cases, convt_cases, pool_cases, resize_cases, linalg_cases, elementwise_cases, shape_cases,
            newer_op_cases, detector_op_cases, legacy_opset_cases, quant_op_cases, gpu_table_cases]


def all_cases():
    cases = []
    for fam in FAMILIES:
        cases.extend(c for c in fam() if c is not None)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit("make_op_cases: duplicate case names: " + ", ".join(sorted(dup)))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder to write the cases into (its old contents are replaced)")
    ap.add_argument("--filter", default="", help="only cases whose name contains this text")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.filter in c.name]
    if args.list:
        for c in cases:
            print(c.name)
        print("%d cases" % len(cases), file=sys.stderr)
        return
    if not args.out:
        ap.error("--out is required")
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    for c in cases:
        try:
            write_case(c, args.out)
        except Exception as e:  # say which case, then stop
            raise SystemExit("make_op_cases: case %s: %s" % (c.name, e))
    print("make_op_cases: wrote %d cases to %s" % (len(cases), args.out))


if __name__ == "__main__":
    main()
