#!/usr/bin/env bash
# minirt-conformance --device cuda --reference cpu (ctest
# conformance.op_cases_gpu_vs_cpu) on a few op cases. Where no GPU is usable
# (every CI machine) it must skip: exit 3, and its first line must name the
# same reason minirt-doctor gives. Where one is usable it must pass (the
# whole table runs on a GPU machine through tools/gpu-check.sh). Also: its
# usage errors, and the tolerance table it prints.
#
#   tests/op_cases/gpu_mode_test.sh --python PY --bin BUILD/bin --out BUILD/op_cases_gpu
set -uo pipefail

python="" bin="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "gpu_mode_test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$python" ] || [ ! -x "$python" ] || ! "$python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "gpu_mode: no Python with onnx, onnxruntime and numpy at '${python}' (run tools/setup.sh --venv)" >&2
  exit 1
fi
source "$(dirname "$0")/../cli/expect.sh"
here="$(cd "$(dirname "$0")" && pwd)"
conf="$bin/minirt-conformance"
# A few cases over the tolerance families: elementwise, cuDNN activation, data movement, products.
"$python" "$here/make_op_cases.py" --out "$out" --filter opset6_3x4x5 >/dev/null || exit 1

expect 2 "the modes are --device cpu" -- "$conf" --device cuda --reference expected "$out"
expect 2 "the modes are --device cpu" -- "$conf" --device tpu "$out"
expect 2 "are for --device cpu" -- "$conf" --device cuda --reference cpu --expect-skips /dev/null "$out"
expect 0 "\| products \| 0.0002 \| 0.002 \|" -- "$conf" --print-tolerances

doctor_out=$("$bin/minirt-doctor" --verbose 2>&1)
doctor_rc=$?
gpu_out=$("$conf" --device cuda --reference cpu "$out" 2>&1)
gpu_rc=$?
if [ "$doctor_rc" -ne 0 ]; then
  first=$(head -1 <<<"$gpu_out")
  why=${first#skipped: no usable GPU: }
  if [ "$gpu_rc" -ne 3 ] || [ "$first" = "$why" ] || [ -z "$why" ]; then
    echo "FAIL: without a usable GPU the GPU mode must exit 3 with 'skipped: no usable GPU: REASON' first; got exit $gpu_rc:"
    echo "$gpu_out" | head -5
    failures=$((failures + 1))
  elif ! grep -qF -- "$why" <<<"$doctor_out"; then
    echo "FAIL: the skip reason is not the gate's (minirt-doctor does not say it): $why"
    echo "$doctor_out" | grep -E "decision|FATAL" | head -5
    failures=$((failures + 1))
  else
    echo "ok: no usable GPU here; the GPU mode skips (exit 3) with the gate's reason: $why"
  fi
else
  if [ "$gpu_rc" -ne 0 ] || ! grep -qE "^[0-9]+ passed on cuda, [0-9]+ passed with nodes on the CPU, 0 failed" <<<"$gpu_out"; then
    echo "FAIL: a GPU is usable here, but the GPU mode exited $gpu_rc:"
    echo "$gpu_out" | tail -15
    failures=$((failures + 1))
  else
    echo "ok: on the GPU: $(tail -1 <<<"$gpu_out")"
  fi
fi
[ "$failures" -eq 0 ] && echo "all GPU-mode tests passed"
exit "$failures"
