#!/usr/bin/env bash
# Single-op grids against onnxruntime (ctest conformance.op_grid_vs_onnxruntime).
#
#   tests/op_cases/run.sh --python PY --bin BUILD/bin --out BUILD/op_cases
#
# make_op_cases.py writes one ONNX backend-test folder per case into OUT,
# with onnxruntime's outputs; minirt-conformance then runs them with 1 and
# with 3 intra-op threads (the kernels cut their work by thread count) at
# rtol 1e-4, atol 1e-5. Any failure or skipped case fails the test: every
# case in the grid is meant to run.
set -euo pipefail

python="" bin="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ] || [ -z "$out" ]; then
  echo "usage: tests/op_cases/run.sh --python PY --bin BUILD/bin --out BUILD/op_cases" >&2
  exit 2
fi
if [ -z "$python" ] || [ ! -x "$python" ] || ! "$python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "op_cases: no Python with onnx, onnxruntime and numpy at '${python}' (CMake cache variable MINIRT_PYTHON)." >&2
  echo "op_cases: run tools/setup.sh --venv in the source tree (or configure with -DMINIRT_PYTHON=/path/to/python)." >&2
  exit 1
fi

here="$(cd "$(dirname "$0")" && pwd)"
"$python" "$here/make_op_cases.py" --out "$out"

status=0
for threads in 1 3; do
  echo "== minirt-conformance --threads $threads"
  log="$out.threads$threads.log"
  set +e
  "$bin/minirt-conformance" --threads "$threads" --rtol 1e-4 --atol 1e-5 "$out" >"$log" 2>&1
  rc=$?
  set -e
  grep -v '^PASS ' "$log" || true
  if [ "$rc" -ne 0 ]; then
    echo "op_cases: minirt-conformance exited with status $rc (threads $threads)" >&2
    status=1
  fi
  if grep -q '^SKIP ' "$log"; then
    echo "op_cases: cases were skipped (threads $threads); every case in the grid must run" >&2
    status=1
  fi
done
exit "$status"
