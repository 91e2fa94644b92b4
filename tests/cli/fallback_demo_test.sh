#!/usr/bin/env bash
# tools/fallback-demo.sh end to end: every scenario of
# tools/fallback_scenarios.txt has its row, with the sentence the gate's tests
# expect for it (tests/unit/test_probe.cpp, FallbackScenarios), ran (on the
# CPU where the stack is broken) and matched the CPU's outputs; the SVG is
# well-formed XML; the whole demo takes under a minute on the MNIST CNN.
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
  # The speed-up over the CPU alone: a ratio on every row (about 1x where the run fell back).
  grep -qE "\| [0-9]+\.[0-9]{2}x \|" <<<"$line" || fail "$id: no speed-up over the CPU: $line"
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
"$py" -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); n = len(d.getElementsByTagName('rect')); assert n == $rows, n" \
  "$work/out/fallback.svg" || fail "fallback.svg is not well-formed XML with one bar per scenario"

# Bad use: a clear line and exit 1.
"$src/tools/fallback-demo.sh" "$work/missing.onnx" >"$work/bad.txt" 2>&1
[ $? -eq 1 ] && grep -q "missing.onnx: no such model file" "$work/bad.txt" || fail "a missing model: $(cat "$work/bad.txt")"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "the fallback demo checks passed ($rows scenarios, $took s)"
