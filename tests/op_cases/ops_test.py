#!/usr/bin/env python3
"""The op-case harness: the op cases (make_op_cases.py) on every backend.

    ops_test.py --bin BUILD/bin --cases BUILD/op_cases [--op OP] [--backends LIST]

Each case is defined once, in the generator's families (cases_*.py), and
runs here on:
  cpu          the CPU against onnxruntime's outputs, 1 and 3 threads
               (minirt-conformance, rtol 1e-4, atol 1e-5; a skipped case fails)
  cpu_avx2     the same with MINIRT_CPU_ISA=avx2 (3 threads); skipped, with
               minirt's reason, on a CPU without AVX2
  cpu_generic  the same with MINIRT_CPU_ISA=generic (the portable kernels)
  pretend_gpu  the pretend GPU against the CPU (minirt-op-harness: placement,
               copies and per-node fallback with the CUDA backend's op list)
  cuda         the real GPU against the CPU (minirt-conformance --device cuda
               --reference cpu, each op family's tolerance); skipped, with the
               gate's reason, where no GPU is usable
--op keeps the cases with a node of that op (ctest ops.<Op>); without it,
every case. --backends (comma-separated) picks some; the default is all.
Exit status 0 when every backend that ran passed, 1 otherwise.
Test tooling only.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import onnx

BACKENDS = ("cpu", "cpu_avx2", "cpu_generic", "pretend_gpu", "cuda")
TOL = ["--rtol", "1e-4", "--atol", "1e-5"]


def cases_with_op(cases_dir, op):
    out = []
    for name in sorted(os.listdir(cases_dir)):
        model = os.path.join(cases_dir, name, "model.onnx")
        if os.path.isfile(model) and any(n.op_type == op for n in onnx.load(model).graph.node):
            out.append(name)
    return out


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def problems_of(out):
    return [line for line in out.splitlines() if line.startswith(("FAIL", "SKIP", "ERROR"))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--op")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    args = ap.parse_args()
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in BACKENDS:
            ap.error(f"unknown backend {b} (one of {', '.join(BACKENDS)})")
    if not os.path.isdir(args.cases) or not os.listdir(args.cases):
        print(f"ops_test: no op cases in {args.cases} (tests/op_cases/run.sh makes them)")
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        target = args.cases
        label = "every case"
        if args.op:
            names = cases_with_op(args.cases, args.op)
            if not names:
                print(f"FAIL: {args.op} has no op case: add one to a family of tests/op_cases/cases_*.py")
                return 1
            target = os.path.join(tmp, "cases")
            os.makedirs(target)
            for n in names:
                os.symlink(os.path.abspath(os.path.join(args.cases, n)), os.path.join(target, n))
            label = f"{len(names)} case(s) of {args.op}"
        conformance = os.path.join(args.bin, "minirt-conformance")
        status = 0
        for b in backends:
            if b == "cpu":
                runs = [(f"threads {t}", [conformance, "--threads", str(t)] + TOL + [target], {}) for t in (1, 3)]
            elif b in ("cpu_avx2", "cpu_generic"):
                isa = b.split("_")[1]
                runs = [(f"MINIRT_CPU_ISA={isa}", [conformance, "--threads", "3"] + TOL + [target],
                         {"MINIRT_CPU_ISA": isa})]
            elif b == "pretend_gpu":
                runs = [("against the CPU", [os.path.join(args.bin, "minirt-op-harness"), target], {})]
            else:
                runs = [("against the CPU", [conformance, "--device", "cuda", "--reference", "cpu", target], {})]
            for what, cmd, env in runs:
                rc, out = run(cmd, env)
                last = out.strip().splitlines()[-1] if out.strip() else ""
                if b == "cuda" and rc == 3:
                    first = out.strip().splitlines()[0] if out.strip() else "no usable GPU"
                    print(f"{b} ({what}): {first if first.startswith('skipped') else 'skipped: ' + first}")
                    continue
                if b.startswith("cpu_") and "cannot run" in out:
                    print(f"{b} ({what}): skipped: {out.strip().splitlines()[0]}")
                    continue
                bad = problems_of(out)
                if rc != 0 or bad:
                    status = 1
                    print(f"{b} ({what}): FAILED, exit {rc}")
                    for line in (bad or out.strip().splitlines()[-20:])[:40]:
                        print("  " + line)
                else:
                    print(f"{b} ({what}): {last}")
        print(f"ops_test: {label}, backends {', '.join(backends)}: {'ok' if status == 0 else 'FAILED'}")
        return status


if __name__ == "__main__":
    sys.exit(main())
