#!/usr/bin/env bash
# runmodel --compare: one model, the same inputs, several devices or settings
# in one process; the decision for a device that is not usable, the outputs
# against the first run with a stated tolerance, and the exit codes.
#   compare_test.sh BIN_DIR PYTHON
set -uo pipefail
bin=$1
py=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/expect.sh"
export MINIRT_ALGO_CACHE=$work/algo_cache.txt
[ -x "$py" ] || py=python3

"$bin/minirt-make-models" --out "$work" mnist_cnn >/dev/null || { echo "FAIL: minirt-make-models"; exit 1; }
m=$work/mnist_cnn.onnx
rm_=("$bin/runmodel" "$m" --warmup 1 --iterations 3)

# cpu runs; cuda runs where a GPU is usable and is otherwise reported with the
# gate's sentence; either way the runs that ran agree.
expect 0 "\[1\] cpu: running on the CPU as requested.*latency median.*\[2\] cuda: (not usable: no usable GPU backend for Device::kCuda|running on cuda).*result: " -- \
  bash -c "$(printf '%q ' "${rm_[@]}") --compare cpu,cuda | tr '\n' ' '"
# all = cpu,cuda.
expect 0 "\[2\] cuda" -- "${rm_[@]}" --compare all
# minirt against itself under other kernels (plain layout, im2col, no graph
# passes): different summation orders, within the fp32 tolerance.
expect 0 "\[2\] cpu:nchw:tune=im2col_gemm against \[1\] cpu .*logits: max abs diff [0-9.e+-]+, max rel diff [0-9.e+-]+ -> pass \(\|a - b\| <= 1e-05 \+ 0.0001 x \|reference\|\).*\[3\] cpu:noopt against .* -> pass.*agree within tolerance" -- \
  bash -c "$(printf '%q ' "${rm_[@]}") --compare cpu,cpu:nchw:tune=im2col_gemm,cpu:noopt | tr '\n' ' '"
# The same runs with no tolerance at all: the summation orders differ, so the
# outputs do too, and that is a failure with its own exit code.
expect 8 "logits: max abs diff [0-9.e+-]+, .* -> FAIL \(\|a - b\| <= 0 \+ 0 x \|reference\|\).*outputs DISAGREE" -- \
  bash -c "$(printf '%q ' "${rm_[@]}") --compare cpu,cpu:nchw:noopt:tune=im2col_gemm --rtol 0 --atol 0 | tr '\n' ' '; exit \${PIPESTATUS[0]}"

# A float16 model (weights, input and output float16, made here with onnx's
# helpers): the default tolerance of a float16 output is two float16 steps.
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
m = onnx.load(f"{sys.argv[1]}/mnist_cnn.onnx")
for t in m.graph.initializer:
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
for v in list(m.graph.input) + list(m.graph.output):
    v.type.tensor_type.elem_type = TensorProto.FLOAT16
onnx.save(m, f"{sys.argv[1]}/mnist_fp16.onnx")
PY
expect 0 "\[2\] cpu:nchw:noopt against \[1\] cpu .*logits: max abs diff [0-9.e+-]+, max rel diff [0-9.e+-]+ -> pass \(\|a - b\| <= 1e-05 \+ 0.002 x \|reference\|\).*agree within tolerance" -- \
  bash -c "\"$bin/runmodel\" \"$work/mnist_fp16.onnx\" --warmup 1 --iterations 3 --compare cpu,cpu:nchw:noopt | tr '\n' ' '"

# --json: one object with every run, parsed and checked.
"${rm_[@]}" --compare cpu,cuda,cpu:heuristic --json >"$work/compare.json"
status=$?
if [ "$status" -ne 0 ]; then
  echo "FAIL: --compare --json exited $status"
  failures=$((failures + 1))
fi
if "$py" - "$work/compare.json" <<'EOF'; then echo "ok: --compare --json"; else failures=$((failures + 1)); fi
import json, sys
r = json.load(open(sys.argv[1]))
assert r["reference"] == "cpu", r["reference"]
assert r["agree"] is True and r["failed"] is False
runs = {x["label"]: x for x in r["runs"]}
assert set(runs) == {"cpu", "cuda", "cpu:heuristic"}, runs.keys()
cpu = runs["cpu"]
assert cpu["ran"] and cpu["latency_ms"]["median"] > 0 and cpu["first_run_ms"] > 0 and cpu["outputs"] == []
h = runs["cpu:heuristic"]
assert h["ran"] and len(h["outputs"]) == 1 and h["outputs"][0]["name"] == "logits" and h["outputs"][0]["pass"]
assert h["outputs"][0]["rtol"] == 1e-4 and h["outputs"][0]["atol"] == 1e-5
cuda = runs["cuda"]
if not cuda["usable"]:
    assert "no usable GPU backend" in cuda["decision"], cuda["decision"]
    assert not cuda["ran"]
EOF

# Bad lists are usage errors; nothing usable at all is exit 4.
expect 1 "--compare: 'tpu' is not a device \(cpu, cuda, auto, or all\)" -- "${rm_[@]}" --compare cpu,tpu
expect 1 "--compare: 'tpu' in 'tpu:nchw' is not a device" -- "${rm_[@]}" --compare tpu:nchw
expect 1 "unknown setting 'fast' in 'cpu:fast'" -- "${rm_[@]}" --compare cpu:fast
expect 1 "--compare has an empty entry" -- "${rm_[@]}" --compare cpu,,cuda
expect 1 "--rtol expects a number >= 0" -- "${rm_[@]}" --compare cpu,cpu --rtol -1
if ! "$bin/minirt-doctor" >/dev/null 2>&1; then
  expect 4 "\[1\] cuda: not usable: .*result: no run could be made" -- \
    bash -c "$(printf '%q ' "${rm_[@]}") --compare cuda | tr '\n' ' '; exit \${PIPESTATUS[0]}"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all --compare checks passed"
