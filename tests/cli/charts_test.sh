#!/usr/bin/env bash
# runmodel --profile-svg and minirt-chart end to end: the per-op chart of a
# real CPU run, the same chart from a synthetic trace with CPU and GPU steps
# (no GPU needed: the GPU's steps are events in the trace, device clock and
# all), the fallback chart from rows with a GPU run and texts far too long,
# each checked by tests/cli/svg_check.py (SVG, at most 1,280 px wide, every
# text inside the canvas by the writers' own width estimate); bad use and its
# exit codes.
#   charts_test.sh BIN_DIR PYTHON
set -uo pipefail
bin=$1
py=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$here/expect.sh"
export MINIRT_ALGO_CACHE=$work/algo_cache.txt
[ -x "$py" ] || { echo "FAIL: $py not found; run tools/setup.sh --venv"; exit 1; }
"$bin/minirt-make-models" --out "$work" mnist_cnn >/dev/null || { echo "FAIL: minirt-make-models"; exit 1; }
model=$work/mnist_cnn.onnx
chart=$bin/minirt-chart

# A real run on the CPU: the chart alone, and beside the trace.
expect 0 "per-op time \(mean per run, from .*p.svg\)" -- "$bin/runmodel" "$model" --device cpu --iterations 5 \
  --profile-svg "$work/p.svg"
expect 0 "per-op time \(mean per run, from .*p.json\)" -- "$bin/runmodel" "$model" --device cpu --iterations 5 \
  --profile "$work/p.json" --profile-svg "$work/p2.svg"
expect 0 "" -- "$chart" profile "$work/p.json" "$work/p3.svg"

# A trace with CPU steps and 24 GPU steps the GPU timed itself, 3 runs.
"$py" - "$work/gpu.json" <<'PY' || { echo "FAIL: the synthetic trace"; failures=$((failures + 1)); }
import json, sys
events = []
for it in range(3):
    t = 0
    for i in range(30):
        dev = "cpu" if i < 3 or i > 26 else "cuda:0"
        op = ["Conv+Relu", "Add", "MaxPool", "Gemm"][i % 4] if dev != "cpu" else ["Reshape", "Softmax"][i % 2]
        dur = 5 + 17 * ((i * 7) % 11)
        events.append({"name": f"n{i}+n{i}_relu" if op == "Conv+Relu" else f"n{i}", "cat": op, "ph": "X", "pid": 1,
                       "tid": 1 if dev == "cpu" else 2, "ts": t, "dur": dur,
                       "args": {"op": op, "shapes": "1x64x56x56 -> 1x64x56x56", "device": dev,
                                "clock": "host" if dev == "cpu" else "device", "iteration": it}})
        t += dur
events.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "cuda:0"}})
json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, open(sys.argv[1], "w"))
PY
expect 0 "" -- "$chart" profile "$work/gpu.json" "$work/gpu.svg" --title "a pretend GPU run"

# Fallback rows: a GPU run, a run that did not happen, labels and a sentence far too long.
long=$(printf 'the gate says something rather long about the stack%.0s, ' {1..12})
{
  printf 'as_installed\tas installed\tcuda\t0.25\t3.10x\tmatch\tcompatible: driver 580.65, CUDA 13.0, cuDNN 9.13; all good\n'
  printf 'no_driver\tno driver: libcuda.so.1 missing\tcpu\t0.9\tsame device\tmatch\tno NVIDIA driver (libcuda.so.1 not found); install it\n'
  printf 'broken\tnot usable\tnone\t-\t-\terror (exit 3)\tnot usable: cuInit failed\n'
  printf 'a_very_long_scenario_name_that_goes_on_and_on_and_on\t%s\tcpu\t1.2\tsame device\tmatch\t%s; advice\n' "$long" "$long"
} >"$work/rows.tsv"
expect 0 "" -- "$chart" fallback "$work/rows.tsv" "$work/fb.svg" --title "fallback rows <&> escaped"

"$py" - "$work" "$bin" "$here" <<'PY' || failures=$((failures + 1))
import sys
import xml.etree.ElementTree as ET
w, bin_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import svg_check
ns = "{http://www.w3.org/2000/svg}"


def classes(info):
    by = {}
    for cls, text in info["texts"]:
        by.setdefault(cls, []).append(text)
    return by


# The CPU run: op types and steps on the CPU, the host clock; no GPU legend.
for name in ("p.svg", "p2.svg", "p3.svg"):
    info = svg_check.check(f"{w}/{name}", bin_dir, max_width=1280, min_width=600)
    texts = [t for _, t in info["texts"]]
    for want in ("Time per op type", "The 20 costliest steps", "CPU step (host clock)"):
        assert want in texts, (name, want, texts)
    by = classes(info)
    assert by["device"] == [d for d in by["device"] if d.startswith("on cpu: ")] and len(by["device"]) == 2, by
    assert any(t.startswith("Conv") for t in by["label"]), by["label"]
    assert not any("GPU step" in t for t in texts), texts

# The synthetic CPU+GPU trace: the devices apart, the GPU's steps hatched.
info = svg_check.check(f"{w}/gpu.svg", bin_dir, max_width=1280, min_width=600)
by = classes(info)
assert [d.split(":")[0] for d in by["device"]] == ["on cpu", "on cuda", "on cpu", "on cuda"], by["device"]
assert all("the device's own clock" in d for d in by["device"] if d.startswith("on cuda:0")), by["device"]
# Op types: 2 on the CPU, 4 on the GPU; steps: the CPU's 6, the GPU's costliest 20 of 24.
assert len(by["label"]) == 2 + 4 + 6 + 20, by["label"]
assert "n20 (+1 fused)" in by["label"], by["label"]
assert any(t.startswith("3 timed runs") or "over 3 timed runs" in t for _, t in info["texts"]), info["texts"]
root = ET.parse(f"{w}/gpu.svg").getroot()
bars = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
hatched = [r for r in bars if r.get("fill") == "url(#devclock)"]
assert len(hatched) == 4 + 20 and len(bars) - len(hatched) == 2 + 6, (len(hatched), len(bars))
assert "GPU step timed by the device's own clock" in [t for _, t in info["texts"]]

# The fallback rows: every text inside, the long ones cut with their whole text as the tooltip.
info = svg_check.check(f"{w}/fb.svg", bin_dir, max_width=1280)
by = classes(info)
assert by["decision"] == ["GPU", "CPU", "none", "CPU"], by["decision"]
assert by["speedup"][0] == "0.250 ms, 3.10x, outputs match", by["speedup"]
assert by["speedup"][1] == "0.900 ms, same device, outputs match", by["speedup"]
assert by["gate"][:3] == ["compatible: driver 580.65, CUDA 13.0, cuDNN 9.13", "no NVIDIA driver", "not usable: cuInit failed"], by["gate"]
assert by["gate"][3].endswith("\u2026") and by["scenario"][3].endswith("\u2026"), by
assert info["texts"][0][1] == "fallback rows <&> escaped", info["texts"][0]
print(f"ok: the profile charts and the fallback chart ({info['width']:g} px wide)")
PY

# The estimate itself: wider letters, bold and larger sizes measure wider.
widths=$(printf '12\t0\tiiii\n12\t0\tWWWW\n12\t1\tWWWW\n24\t0\tWWWW\n' | "$chart" measure | tr '\n' ' ')
read -r i4 w4 b4 l4 <<<"$widths"
awk -v a="$i4" -v b="$w4" -v c="$b4" -v d="$l4" 'BEGIN{exit !(a > 0 && a < b && b < c && d > 1.9 * b)}' ||
  { echo "FAIL: minirt-chart measure: $widths"; failures=$((failures + 1)); }

# Bad use: the documented exit codes, the file named.
expect 1 "no command given" -- "$chart"
expect 1 "unknown command 'pie'" -- "$chart" pie a b
expect 1 "fallback expects an input file and an output file" -- "$chart" fallback "$work/rows.tsv"
expect 2 "missing.tsv: cannot read it" -- "$chart" fallback "$work/missing.tsv" "$work/x.svg"
printf 'one\ttwo\n' >"$work/short.tsv"
expect 2 "short.tsv:1: expected 7 tab-separated fields, found 2" -- "$chart" fallback "$work/short.tsv" "$work/x.svg"
echo '{"traceEvents": [' >"$work/broken.json"
expect 2 "broken.json: " -- "$chart" profile "$work/broken.json" "$work/x.svg"
expect 5 "cannot write /proc/minirt-cannot-write/x.svg" -- "$chart" fallback "$work/rows.tsv" /proc/minirt-cannot-write/x.svg
expect 5 "--profile-svg: cannot write /proc/minirt-cannot-write/p.svg" -- "$bin/runmodel" "$model" --device cpu \
  --iterations 1 --profile-svg /proc/minirt-cannot-write/p.svg
expect 1 "--profile-svg needs a value" -- "$bin/runmodel" "$model" --profile-svg

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all chart checks passed"
