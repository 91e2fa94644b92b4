#!/usr/bin/env bash
# tools/fallback-demo.sh end to end: every scenario of
# tools/fallback_scenarios.txt has its row, with the sentence the gate's tests
# expect for it (tests/unit/test_probe.cpp, FallbackScenarios), ran (on the
# CPU where the stack is broken) and matched the CPU's outputs, with a
# speed-up only where the run went to another device ("same device"
# elsewhere); the SVG (tests/cli/svg_check.py) has every text inside the
# canvas, at most 1,280 px wide, a row per scenario with what broke, CPU or
# GPU and the gate's first clause; the whole demo takes under a minute on the
# MNIST CNN.
#   fallback_demo_test.sh BIN_DIR FAKES_DIR SOURCE_DIR PYTHON
set -uo pipefail
bin=$1
fakes=$2
src=$3
py=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x "$py" ] || py=python3
export MINIRT_ALGO_CACHE=$work/algo_cache.txt
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

"$bin/minirt-make-models" --out "$work" mnist_cnn >/dev/null || { echo "FAIL: minirt-make-models"; exit 1; }
start=$(date +%s)
MINIRT_BIN=$bin MINIRT_GPU_FAKES=$fakes "$src/tools/fallback-demo.sh" "$work/mnist_cnn.onnx" "$work/out" >"$work/terminal.txt" 2>&1
status=$?
took=$(($(date +%s) - start))
cat "$work/terminal.txt"
[ "$status" -eq 0 ] || fail "the demo exited $status"
[ "$took" -lt 60 ] || fail "the demo took $took s (more than a minute)"
md=$work/out/fallback.md
[ -f "$md" ] || fail "no fallback.md"

gpu_here=0
"$bin/minirt-doctor" >/dev/null 2>&1 && gpu_here=1
rows=0
while IFS='|' read -r id title layout envs rule says; do
  id=$(echo "$id" | xargs)
  case "$id" in '' | '#'*) continue ;; esac
  says=$(echo "$says" | sed 's/^ *//; s/ *$//')
  rows=$((rows + 1))
  line=$(grep -F "| $id |" "$md") || { fail "$id: no row in fallback.md"; continue; }
  grep -qF "| match |" <<<"$line" || fail "$id: outputs did not match the CPU's: $line"
  # The speed-up over the CPU alone: a ratio where the run went to the GPU,
  # "same device" where it stayed on the CPU (two CPU runs compare only noise).
  if grep -qF "| cuda |" <<<"$line"; then
    grep -qE "\| [0-9]+\.[0-9]{2}x \|" <<<"$line" || fail "$id: ran on the GPU, no speed-up over the CPU: $line"
  else
    grep -qF "| same device |" <<<"$line" || fail "$id: ran on the CPU, but not 'same device': $line"
    grep -qE "\| [0-9]+\.[0-9]{2}x \|" <<<"$line" && fail "$id: a speed-up between two CPU runs: $line"
    grep -qE "^$id +cpu +[0-9.]+ ms +same device +match " "$work/terminal.txt" ||
      fail "$id: the terminal row does not say 'same device': $(grep "^$id " "$work/terminal.txt")"
  fi
  if [ "$id" = as_installed ]; then
    if [ "$gpu_here" -eq 1 ]; then
      grep -qF "| cuda |" <<<"$line" || fail "as_installed: a usable GPU here, but the run was not on it: $line"
    else
      grep -qF "| cpu |" <<<"$line" || fail "as_installed: no GPU here, but the run was not on the CPU: $line"
    fi
    continue
  fi
  grep -qF "| cpu |" <<<"$line" || fail "$id: did not fall back to the CPU: $line"
  grep -qF -- "$says" <<<"$line" || fail "$id: the row lacks the gate's sentence '$says': $line"
  grep -q "^$id " "$work/terminal.txt" || fail "$id: no row in the terminal table"
done <"$src/tools/fallback_scenarios.txt"
[ "$rows" -ge 9 ] || fail "only $rows scenarios"
"$py" - "$work/out" "$bin" "$(dirname "$0")" "$src/tools/fallback_scenarios.txt" <<'PY' || fail "fallback.svg"
import sys
import xml.etree.ElementTree as ET
out, bin_dir = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
import svg_check
info = svg_check.check(f"{out}/fallback.svg", bin_dir, max_width=1280)
scenarios = []
for line in open(sys.argv[4]):
    if line.strip() and not line.startswith("#"):
        f = [x.strip() for x in line.split("|")]
        scenarios.append((f[0], f[1]))
md = {}
for line in open(f"{out}/fallback.md"):
    cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
    if len(cells) == 8:
        md[cells[0]] = cells
by = {}
for cls, text in info["texts"]:
    by.setdefault(cls, []).append(text)
assert by["scenario"] == [s[0] for s in scenarios], by["scenario"]
assert by["broke"] == [s[1] for s in scenarios], by["broke"]
assert by["decision"] == ["GPU" if md[s[0]][2] == "cuda" else "CPU" for s in scenarios], by["decision"]
for (sid, _), speed in zip(scenarios, by["speedup"]):
    want = "same device" if md[sid][2] == "cpu" else md[sid][5]
    assert f", {want}, outputs match" in speed, (sid, speed)
# The gate's first clause, its whole sentence (as in fallback.md) as the tooltip.
root = ET.parse(f"{out}/fallback.svg").getroot()
ns = "{http://www.w3.org/2000/svg}"
gates = [t for t in root.iter(ns + "text") if t.get("class") == "gate"]
assert len(gates) == len(scenarios), len(gates)
for (sid, _), t in zip(scenarios, gates):
    sentence = t.find(ns + "title").text
    assert sentence == md[sid][7].replace("\\|", "|"), (sid, sentence, md[sid][7])
    shown = t.find(ns + "title").tail
    head = sentence.split("(")[0].split(";")[0].strip()
    assert shown and shown.startswith(head[:30]) and "; " not in shown and len(shown) < len(sentence), (sid, shown)
print(f"ok: fallback.svg, {info['width']:g} px wide, a row per scenario")
PY

# Bad use: a clear line and exit 1.
"$src/tools/fallback-demo.sh" "$work/missing.onnx" >"$work/bad.txt" 2>&1
[ $? -eq 1 ] && grep -q "missing.onnx: no such model file" "$work/bad.txt" || fail "a missing model: $(cat "$work/bad.txt")"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "the fallback demo checks passed ($rows scenarios, $took s)"
