"""How far the CPU heuristic's convolution picks are from measured ones
(issue 26, "a heuristic that knows the CPU"), layer by layer.

  python3 bench/heuristic_gap.py                              # every bench model
  python3 bench/heuristic_gap.py build/models/resnet50.onnx --threads 1

For each model, `convprof MODEL --json` measures every algorithm of every
convolution (after minirt's folding and fusion, at the given thread count,
batch 1) and names its pick (the fastest beyond the noise) and the
heuristic's choice. Summed over the layers where both ran:

  heuristic ms   the heuristic's picks' median times
  picks ms       the measured picks' median times
  ratio          heuristic / picks: the steady-state cost of --tune heuristic
                 against tuning, estimated from one measurement per layer
                 (no run-to-run noise between two model runs)

and the layers where the two differ, costliest first. Each layer is timed
alone, over and over, which is not always how it runs in the model
(ResNet-18's 512-channel F(4x4) won alone and not in the model): check a
difference that matters with whole-model runs (bench/README.md). Nothing is written to
the algorithm cache. Without MODEL arguments it covers the generated models
(build/models: `build/bin/minirt-make-models --out build/models`) and the real
ones in ../shared/models that are present; ppocr-mobile-v2-cls gets
x=1x3x48x192. Needs only the build (no venv).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GENERATED = ["resnet18", "resnet50", "mobilenetv2", "squeezenet1_1", "efficientnet_b0", "yolov5s_like", "dbnet_like"]
SHARED = ["ppocr-mobile-v2-cls", "ultraface-slim-320"]
SHAPES = {"ppocr-mobile-v2-cls": ["x=1x3x48x192"]}


def default_models():
    out = [os.path.join(ROOT, "build", "models", m + ".onnx") for m in GENERATED]
    missing = [m for m in out if not os.path.exists(m)]
    if missing:
        sys.exit(f"heuristic_gap: missing {missing[0]} (build/bin/minirt-make-models --out build/models makes them)")
    for m in SHARED:
        path = os.path.join(ROOT, "..", "shared", "models", m + ".onnx")
        if os.path.exists(path):
            out.append(path)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--math", default="fp32")
    ap.add_argument("--top", type=int, default=5, help="differing layers shown per model")
    args = ap.parse_args()
    models = args.models or default_models()
    print("| model | heuristic (ms) | picks (ms) | heuristic / picks | layers that differ |")
    print("| --- | ---: | ---: | ---: | ---: |")
    details = []
    for path in models:
        name = os.path.splitext(os.path.basename(path))[0]
        cmd = [os.path.join(args.bin, "convprof"), path, "--threads", str(args.threads), "--math", args.math, "--json"]
        for s in SHAPES.get(name, []):
            cmd += ["--shape", s]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"heuristic_gap: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
        layers = json.loads(p.stdout)["layers"]
        th = tp = 0.0
        differ = []
        for layer in layers:
            t = {c["algorithm"]: c["median_ms"] for c in layer["candidates"] if c["status"] == "ok"}
            h, k = t.get(layer["heuristic"]), t.get(layer["pick"])
            if h is None or k is None:
                continue
            th += h
            tp += k
            if layer["heuristic"] != layer["pick"]:
                differ.append((h - k, layer, h, k))
        differ.sort(key=lambda d: -d[0])
        ratio = th / tp if tp > 0 else float("nan")
        print(f"| {name} | {th:.3f} | {tp:.3f} | {ratio:.3f} | {len(differ)} of {len(layers)} |", flush=True)
        for gain, layer, h, k in differ[: args.top]:
            details.append(f"- {name} {layer['node']} ({layer['conv']}): {layer['heuristic']} {h:.3f} ms, "
                           f"pick {layer['pick']} {k:.3f} ms")
    if details:
        print()
        print("\n".join(details))


if __name__ == "__main__":
    main()
