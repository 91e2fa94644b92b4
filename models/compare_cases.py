#!/usr/bin/env python3
"""Reports how far minirt's outputs are from the reference, per test case.

    compare_cases.py --runmodel build/bin/runmodel [--rtol 1e-4 --atol 1e-5] CASE_DIR_OR_PARENT...

For each backend-test folder (model.onnx + test_data_set_0/input_K.pb,
output_K.pb, as make_reference.py writes them) it runs `runmodel` on the
stored inputs, reads the outputs it writes, and prints per output the largest
absolute difference, the largest relative difference (over values whose
reference magnitude is at least 1e-3 of the output's largest, so that
near-zero values do not swamp it), the largest absolute difference over the
output's largest magnitude (the error at the output's scale), and the largest
share of the tolerance
|got - want| / (atol + rtol * |want|) used (above 1 is a failure in
minirt-conformance). Informational: minirt-conformance is the pass/fail check.
Exit status 1 when a case could not be run or exceeds the tolerance.
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def numbered(folder, prefix):
    files = glob.glob(os.path.join(folder, prefix + "*.pb"))
    return sorted(files, key=lambda p: int(os.path.basename(p)[len(prefix):-3]))


def cases(paths):
    for p in paths:
        if os.path.isfile(os.path.join(p, "model.onnx")):
            yield p
        else:
            for sub in sorted(os.listdir(p)):
                if os.path.isfile(os.path.join(p, sub, "model.onnx")):
                    yield os.path.join(p, sub)


def compare(case, args):
    data = os.path.join(case, "test_data_set_0")
    model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    out_names = [o.name for o in model.graph.output]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [args.runmodel, os.path.join(case, "model.onnx"), "--device", "cpu", "--warmup", "0",
               "--iterations", "1", "--top-k", "0", "--threads", str(args.threads), "--output-dir", tmp]
        if args.no_optimize:
            cmd.append("--no-optimize")
        for k, f in enumerate(numbered(data, "input_")):
            name, x = read_pb(f)
            npy = os.path.join(tmp, f"input_{k}.npy")
            np.save(npy, x)
            cmd += ["--input", f"{name}={npy}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{os.path.basename(case)}: runmodel failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
            return False
        ok = True
        for k, f in enumerate(numbered(data, "output_")):
            name, want = read_pb(f)
            name = name or out_names[k]
            got = np.load(os.path.join(tmp, f"{name}.npy"))
            label = f"{os.path.basename(case)} '{name}'"
            if got.shape != want.shape:
                print(f"{label}: shape {got.shape}, expected {want.shape}")
                ok = False
                continue
            if not np.issubdtype(want.dtype, np.floating):
                same = np.array_equal(got, want)
                print(f"{label}: {'equal' if same else 'DIFFERENT'} ({want.dtype})")
                ok = ok and same
                continue
            g, w = got.astype(np.float64), want.astype(np.float64)
            d = np.abs(g - w)
            big = np.abs(w) >= 1e-3 * np.max(np.abs(w)) if w.size else np.zeros(0, bool)
            max_rel = float(np.max(d[big] / np.abs(w[big]))) if np.any(big) else 0.0
            used = float(np.max(d / (args.atol + args.rtol * np.abs(w)))) if w.size else 0.0
            max_abs = float(np.max(d)) if d.size else 0.0
            scale = float(np.max(np.abs(w))) if w.size else 0.0
            at_scale = max_abs / scale if scale > 0 else max_abs
            print(f"{label}: max abs diff {max_abs:.3g}, max rel diff {max_rel:.3g}, "
                  f"max abs diff / max |want| {at_scale:.3g}, tolerance used {used:.3f}")
            ok = ok and used <= 1.0
        return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runmodel", required=True, help="path of minirt's runmodel")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-optimize", action="store_true", help="run minirt without its graph passes")
    ap.add_argument("paths", nargs="+", metavar="DIR")
    args = ap.parse_args()
    ok = True
    for case in cases(args.paths):
        ok = compare(case, args) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
