#!/usr/bin/env bash
# convprof end to end: the table, CSV, JSON and SVG on a small generated
# model and on one --conv, bad input of every kind with its exit code, and
# that profiling leaves the algorithm cache alone. The charts (tests/cli/svg_check.py):
# SVG, every text inside the canvas by the writer's own width estimate, at
# most 1,280 px wide for 1, 2 and 200 layers, the labels the chart promises.
#   convprof_test.sh BIN_DIR PYTHON
set -uo pipefail
bin=$1
py=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/expect.sh"
export MINIRT_ALGO_CACHE=$work/algo_cache.txt

"$bin/minirt-make-models" --out "$work" mnist_cnn >/dev/null || { echo "FAIL: minirt-make-models"; exit 1; }
model=$work/mnist_cnn.onnx
[ -x "$py" ] || { echo "FAIL: $py not found; run tools/setup.sh --venv"; exit 1; }
cp=$bin/convprof

# The table: every candidate, the pick and the speedups.
expect 0 "layer +conv +algorithm +median ms +workspace +status" -- "$cp" "$model" --device cpu --repeats 2
expect 0 "conv2 +Conv 16->32 5x5" -- "$cp" "$model" --device cpu --repeats 2
expect 0 "-> pick [a-z0-9_]+: (the heuristic's choice too|[0-9.]+x faster than the heuristic's [a-z0-9_]+)" -- \
  "$cp" "$model" --device cpu --repeats 2
expect 0 "declined: " -- "$cp" "$model" --device cpu --repeats 2
expect 0 "over workspace limit \(needs .*, the limit is 1.0 KiB\)" -- "$cp" "$model" --device cpu --repeats 2 --workspace-limit 1K
expect 0 "conv +Conv 16->16 3x3 " -- "$cp" --conv 1,16,20,20,16,3,3 --repeats 2
expect 0 "usage: convprof" -- "$cp" --help
[ -e "$MINIRT_ALGO_CACHE" ] && { echo "FAIL: convprof wrote the algorithm cache"; failures=$((failures + 1)); }

# CSV, JSON and SVG, checked by parsers.
"$cp" "$model" --device cpu --repeats 2 --csv >"$work/p.csv" 2>"$work/csv.err" || { echo "FAIL: --csv"; failures=$((failures + 1)); }
"$cp" "$model" --device cpu --repeats 2 --json --svg "$work/p.svg" >"$work/p.json" 2>"$work/json.err" ||
  { echo "FAIL: --json --svg"; failures=$((failures + 1)); }
"$cp" --conv 2,8,13,11,16,3,3,1,1,1,1 --repeats 2 --json --svg "$work/one.svg" --linear >"$work/one.json" 2>&1 ||
  { echo "FAIL: --conv --json"; failures=$((failures + 1)); }
"$cp" "$model" --device cpu --repeats 2 --svg "$work/model_order.svg" --svg-order model >/dev/null 2>&1 ||
  { echo "FAIL: --svg-order model"; failures=$((failures + 1)); }
# 200 convolutions: the 60 costliest shown and said so, or all with --svg-layers 0.
"$py" - "$work/chain200.onnx" <<'PY' || { echo "FAIL: the 200-convolution model"; failures=$((failures + 1)); }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(1)
nodes, weights, prev = [], [], "x"
for i in range(200):
    c = 4 + 4 * (i % 3)  # three kinds of convolution, so that the layers' times differ
    k = 4 + 4 * ((i + 1) % 3)
    weights.append(numpy_helper.from_array((rng.standard_normal((k, c, 3, 3)) * 0.1).astype(np.float32), f"w{i}"))
    out = "y" if i == 199 else f"t{i}"
    nodes.append(helper.make_node("Conv", [prev, f"w{i}"], [out], name=f"conv{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    prev = out
graph = helper.make_graph(nodes, "chain200", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], weights)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
PY
"$cp" "$work/chain200.onnx" --device cpu --repeats 1 --json --svg "$work/c200.svg" >"$work/c200.json" 2>"$work/c200.err" ||
  { echo "FAIL: convprof on 200 convolutions: $(cat "$work/c200.err")"; failures=$((failures + 1)); }
"$cp" "$work/chain200.onnx" --device cpu --repeats 1 --svg "$work/c200_all.svg" --svg-layers 0 --linear >/dev/null 2>&1 ||
  { echo "FAIL: convprof --svg-layers 0"; failures=$((failures + 1)); }
"$py" - "$work" "$bin" "$(dirname "$0")" <<'PY' || failures=$((failures + 1))
import csv, json, sys
import xml.etree.ElementTree as ET
w, bin_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import svg_check
p = json.load(open(f"{w}/p.json"))
assert p["device"] == "cpu" and p["repeats"] == 2, p
layers = p["layers"]
assert [l["node"] for l in layers] == ["conv1", "conv2"], layers
statuses = {"ok", "declined", "over workspace limit", "failed"}
for l in layers:
    ok = [c for c in l["candidates"] if c["status"] == "ok"]
    assert ok and all(c["status"] in statuses for c in l["candidates"]), l
    assert all(c["median_ms"] is None for c in l["candidates"] if c["status"] != "ok"), l
    assert all(c["reason"] for c in l["candidates"] if c["status"] == "declined"), l
    fastest = min(ok, key=lambda c: c["median_ms"])
    # The fastest, or the heuristic's choice where no candidate beat it
    # beyond the noise of the rounds (runtime/tuner.h, choose_by_rounds):
    # with 2 rounds on a loaded machine, one round each way keeps it.
    assert l["pick"] in (fastest["algorithm"], l["heuristic"]), l
    assert l["speedup_vs_slowest"] >= 1, l
    assert l["speedup_vs_heuristic"] is None or l["speedup_vs_heuristic"] >= 1, l
rows = list(csv.DictReader(open(f"{w}/p.csv")))
assert rows and set(rows[0]) == {"layer", "conv", "problem", "algorithm", "status", "reason", "median_ms",
                                 "workspace_bytes", "pick", "heuristic"}, rows[:1]
assert len(rows) == sum(len(l["candidates"]) for l in layers), (len(rows), layers)
for l in layers:
    mine = [r for r in rows if r["layer"] == l["node"]]
    assert [r["algorithm"] for r in mine] == [c["algorithm"] for c in l["candidates"]], mine
    assert sum(int(r["pick"]) for r in mine) == 1, mine
one = json.load(open(f"{w}/one.json"))
assert len(one["layers"]) == 1 and one["layers"][0]["conv"] == "Conv 8->16 3x3", one
assert sum(c["status"] == "ok" for c in one["layers"][0]["candidates"]) >= 2, one
ns = "{http://www.w3.org/2000/svg}"
for f, picks in (("p.svg", 2), ("one.svg", 1)):
    root = ET.parse(f"{w}/{f}").getroot()
    assert root.tag == ns + "svg", root.tag
    bars = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
    assert bars and sum("(pick)" in r.find(ns + "title").text for r in bars) == picks, f
    texts = [t.text for t in root.iter(ns + "text")]
    assert any(t and "convprof" in t for t in texts), texts


def chart(name, layers):
    """The chart checked by svg_check; its layer labels, its texts by class."""
    info = svg_check.check(f"{w}/{name}", bin_dir, max_width=1280, min_width=600)
    by = {}
    for cls, text in info["texts"]:
        by.setdefault(cls, []).append(text)
    assert len(by.get("layer", [])) == layers, (name, by.get("layer"))
    assert len(by.get("pick", [])) == layers and len(by.get("slowest", [])) == layers, (name, by)
    assert all(t.startswith("pick ") and " ms (" in t for t in by["pick"]), by["pick"]
    assert all(t.startswith("slowest ") or t == "the only one that ran" for t in by["slowest"]), by["slowest"]
    assert len(by.get("heuristic", [])) + len(by.get("same", [])) == layers, by
    return info, by


# Two layers: the costliest first by default, model order on request; the summary strip.
_, by = chart("p.svg", 2)
cost = sorted(layers, key=lambda l: -next(c["median_ms"] for c in l["candidates"] if c["algorithm"] == l["pick"]))
assert by["layer"] == [l["node"] for l in cost], (by["layer"], cost)
assert any(t.startswith("2 convolutions: ") and "in all with the picks" in t for t in by["summary"]), by["summary"]
assert any(t.startswith("the 2 layers take 100.0% of it") for t in by["summary"]), by["summary"]
assert "algorithm" not in " ".join(by.get("truncated", [])), by
for l in layers:
    pick = next(t for t in by["pick"] if l["pick"] in t)
    assert pick.startswith(f"pick {l['pick']} "), (pick, l)
_, by = chart("model_order.svg", 2)
assert by["layer"] == ["conv1", "conv2"], by["layer"]
# The legend: only the algorithms that ran.
root = ET.parse(f"{w}/p.svg").getroot()
ran = {c["algorithm"] for l in layers for c in l["candidates"] if c["status"] == "ok"}
legend = {t.text for t in root.iter(ns + "text") if t.text in {c["algorithm"] for l in layers for c in l["candidates"]}}
assert legend == ran, (legend, ran)
# One layer, and 200 layers (the 60 costliest, then all): the same width.
info1, _ = chart("one.svg", 1)
c200 = json.load(open(f"{w}/c200.json"))["layers"]
assert len(c200) == 200, len(c200)
info200, by = chart("c200.svg", 60)
assert by["truncated"] == [t for t in by["truncated"] if t.startswith("showing the 60 costliest of 200 convolutions")], by
picks = {l["node"]: next(c["median_ms"] for c in l["candidates"] if c["algorithm"] == l["pick"]) for l in c200}
shown = [picks[n] for n in by["layer"]]
assert shown == sorted(shown, reverse=True) and min(shown) >= sorted(picks.values(), reverse=True)[59], shown
assert any(t.startswith("the top 5 layers take ") for t in by["summary"]), by["summary"]
info_all, by = chart("c200_all.svg", 200)
assert "truncated" not in by, by["truncated"]
assert info1["width"] == info200["width"] == info_all["width"], (info1["width"], info200["width"], info_all["width"])
assert info200["height"] < info_all["height"], (info200["height"], info_all["height"])
print("ok: convprof --csv, --json, --svg (1, 2 and 200 layers, %g px wide)" % info200["width"])
PY

# Bad input: the documented exit codes.
expect 1 "no model given" -- "$cp"
expect 1 "unknown option --bogus" -- "$cp" "$model" --bogus
expect 1 "--conv expects N,C,H,W,K,R,S" -- "$cp" --conv 1,2,3
expect 1 "--conv expects N,C,H,W,K,R,S" -- "$cp" --conv 1,16,8,8,16,3,x
expect 1 "groups \(3\) must divide both C \(16\) and K \(16\)" -- "$cp" --conv 1,16,8,8,16,3,3,1,1,1,3
expect 1 "does not fit the padded 4x4 input" -- "$cp" --conv 1,4,4,4,4,7,7
expect 1 "--csv and --json exclude each other" -- "$cp" "$model" --csv --json
expect 1 "give a model or --conv, not both" -- "$cp" "$model" --conv 1,1,4,4,1,3,3
expect 1 "--workspace-limit expects a size" -- "$cp" "$model" --workspace-limit lots
expect 1 "--repeats expects an integer >= 1" -- "$cp" "$model" --repeats 0
expect 2 "No such file" -- "$cp" "$work/missing.onnx"
head -c 1000 "$model" >"$work/truncated.onnx"
expect 2 "truncated.onnx" -- "$cp" "$work/truncated.onnx"
expect 4 "no usable GPU backend" -- "$cp" "$model" --device cuda
expect 5 "--svg: cannot write /proc/minirt-cannot-write/x.svg" -- "$cp" "$model" --device cpu --repeats 1 --svg /proc/minirt-cannot-write/x.svg
expect 1 "--svg-order expects time or model, got 'size'" -- "$cp" "$model" --svg x.svg --svg-order size
expect 1 "--svg-layers expects an integer >= 0" -- "$cp" "$model" --svg x.svg --svg-layers -3

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all convprof checks passed"
