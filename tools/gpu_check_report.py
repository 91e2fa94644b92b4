#!/usr/bin/env python3
"""The benchmark section of tools/gpu-check.sh's results.md, from its logs.

    python tools/gpu_check_report.py LOGDIR TORCH_OK

Reads LOGDIR/runmodel-MODEL-bBATCH-MATH.json (runmodel --json) and, when
TORCH_OK is 1, LOGDIR/torch-bench.json (tools/gpu_bench_torch.py's lines),
and prints the markdown table. Standard library only.
"""
import glob, json, os, sys


def load_summary(path):
    """runmodel --json's object: the line that starts with {"model" (libraries may print other lines)."""
    try:
        for line in open(path, errors="replace"):
            if line.startswith('{"model"'):
                return json.loads(line)
    except Exception:
        pass
    return None


logs, torch_ok = sys.argv[1], sys.argv[2] == "1"
torch = {}
meta = {}
if torch_ok:
    for line in open(os.path.join(logs, "torch-bench.json")):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("kind") == "meta":
            meta = r
        elif "model" in r:
            torch[(r["model"], r["batch"], r["math"])] = r
print("\n## Benchmark: ResNet-50 and MobileNetV2, 224x224, random weights\n")
if meta:
    print(f"PyTorch {meta.get('torch')}, CUDA {meta.get('cuda')}, cuDNN {meta.get('cudnn')}, "
          f"torchvision {meta.get('torchvision') or 'not installed (the script defines the models itself)'}, "
          f"GPU {meta.get('gpu')}; torch.backends.cudnn.benchmark=True, eager, inference_mode.\n")
print("Latency per run in ms (median). minirt: runmodel --device cuda, input and output in host memory, "
      "so each run includes the copies; its device phases come from CUDA events. PyTorch: `model(x)` with x "
      "already on the GPU, and end to end (`model(x.cuda()).cpu()`) from host memory.\n")
print("| model | batch | math | minirt median | minirt H2D / compute / D2H | minirt first run | PyTorch on-GPU median | PyTorch end-to-end median | minirt / PyTorch end-to-end |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for f in sorted(glob.glob(os.path.join(logs, "runmodel-*-b*-*.json"))):
    base = os.path.basename(f)[len("runmodel-"):-len(".json")]
    model, b, math = base.rsplit("-", 2)
    batch = int(b[1:])
    r = load_summary(f)
    if r is None:
        print(f"| {model} | {batch} | {math} | failed (see {os.path.basename(f)}) | | | | | |")
        continue
    med = r["latency_ms"]["median"]
    dt = r.get("device_time_ms", {})
    phases = f"{dt.get('h2d', 0):.3f} / {dt.get('compute', 0):.3f} / {dt.get('d2h', 0):.3f}" if dt else "n/a"
    t = torch.get((model, batch, math))
    tg = f"{t['gpu_resident_ms']['median']:.3f}" if t else "n/a"
    te = f"{t['end_to_end_ms']['median']:.3f}" if t else "n/a"
    ratio = f"{med / t['end_to_end_ms']['median']:.2f}x" if t else "n/a"
    print(f"| {model} | {batch} | {math} | {med:.3f} | {phases} | {r['first_run_ms']:.1f} | {tg} | {te} | {ratio} |")
print()
for f in sorted(glob.glob(os.path.join(logs, "runmodel-*-b1-fp32.json"))):
    r = load_summary(f)
    if r:
        print(f"- {os.path.basename(f)}: {r.get('device_reason', '')}; {r.get('placement', '')}")
