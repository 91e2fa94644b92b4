#!/usr/bin/env python3
"""ops.coverage: every op minirt registers has an op case, and every op the
GPU backend's support tables accept has a case the GPU takes.

    coverage.py --ops OPS.md --cases BUILD/op_cases [--claimed OPS.txt --matrix MATRIX.md]

OPS.md is `runmodel --list-ops` (a Markdown table whose first column is the
op); BUILD/op_cases the folders make_op_cases.py wrote (run.sh, the
conformance.op_grid_vs_onnxruntime fixture). An op counts as covered when a
node of that op type is in some case's model.onnx (the fused cases count for
each of their ops). With --claimed (`minirt-op-harness --list-claimed`: the
ops of the CUDA backend's support tables) and --matrix (`minirt-support-matrix
BUILD/op_cases`, one row per op), each op the GPU backend's tables accept
must be taken on cuda in at least one case (or be one the planner removes
before placement), so that a support rule no case reaches is caught too.

The ops without a case are listed by name with where to add one; the test
fails until each has one. Test tooling only.
"""

import argparse
import os
import sys

import onnx


def listed_ops(path):
    ops = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[0] in ("op", "") or set(cells[0]) <= set("-"):
            continue
        ops.append(cells[0])
    return ops


def case_ops(cases_dir):
    seen = {}
    for name in sorted(os.listdir(cases_dir)):
        model = os.path.join(cases_dir, name, "model.onnx")
        if not os.path.isfile(model):
            continue
        m = onnx.load(model, load_external_data=False)
        for n in m.graph.node:
            seen.setdefault(n.op_type, name)
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", required=True, help="runmodel --list-ops output")
    ap.add_argument("--cases", required=True, help="the op case folders")
    ap.add_argument("--claimed", help="minirt-op-harness --list-claimed's output")
    ap.add_argument("--matrix", help="minirt-support-matrix's output over the same cases")
    args = ap.parse_args()

    ops = listed_ops(args.ops)
    if len(ops) < 50:
        print(f"coverage: only {len(ops)} ops read from {args.ops}: has runmodel --list-ops changed its format?")
        return 1
    if not os.path.isdir(args.cases) or not os.listdir(args.cases):
        print(f"coverage: no op cases in {args.cases} (run tests/op_cases/run.sh first)")
        return 1
    seen = case_ops(args.cases)
    missing = [op for op in ops if op not in seen]
    status = 0
    for op in missing:
        print(f"FAIL: {op} has no op case: add one to a family of tests/op_cases/cases_*.py "
              f"(make_op_cases.py lists them; tests/README.md, adding an op)")
        status = 1
    print(f"coverage: {len(ops) - len(missing)} of {len(ops)} registered ops have an op case")
    if args.claimed and args.matrix:
        taken = {}
        for line in open(args.matrix):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 6 and cells[0] not in ("op", "") and not set(cells[0]) <= set("-"):
                taken[cells[0]] = cells[3] not in ("none", "-") or "removed or folded before placement" in cells[5]
        claimed = [l.strip() for l in open(args.claimed) if l.strip()]
        unreached = [op for op in claimed if not taken.get(op, False)]
        for op in unreached:
            print(f"FAIL: the CUDA backend's support tables accept {op}, but no op case has a node of it the GPU "
                  f"takes: add one to tests/op_cases/cases_models.py's gpu_table_cases")
            status = 1
        print(f"coverage: {len(claimed) - len(unreached)} of {len(claimed)} ops of the CUDA support tables "
              f"taken on cuda in some case")
    return status


if __name__ == "__main__":
    sys.exit(main())
