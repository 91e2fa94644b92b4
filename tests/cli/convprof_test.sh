#!/usr/bin/env bash
# convprof end to end: the table, CSV, JSON and SVG on a small generated
# model and on one --conv, bad input of every kind with its exit code, and
# that profiling leaves the algorithm cache alone.
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
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import csv, json, sys
import xml.etree.ElementTree as ET
w = sys.argv[1]
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
    assert l["pick"] == fastest["algorithm"], l
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
print("ok: convprof --csv, --json, --svg")
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
expect 5 "--svg: cannot write" -- "$cp" "$model" --device cpu --repeats 1 --svg /proc/minirt-cannot-write/x.svg

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all convprof checks passed"
