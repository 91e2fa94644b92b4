#!/usr/bin/env bash
# The CPU/CUDA support matrix over the op cases, and the GPU page
# (kernels/cuda/README.md: its hand table and the generated matrix) checked
# against it (ctest conformance.gpu_support_matrix; no GPU needed); op names
# come from runtime/ops/README.md's supported-ops table:
#
#   tests/op_cases/support_matrix_test.sh --python PY --bin BUILD/bin --out BUILD/op_cases_matrix \
#     --gpu-doc kernels/cuda/README.md --ops-doc runtime/ops/README.md
#
# Generates the op cases (make_op_cases.py), prints the matrix
# (minirt-support-matrix) and runs check_gpu_table.py; then makes sure the
# check has teeth: a GPU page claiming 3-D Conv and pooling must fail it.
set -euo pipefail

python="" bin="" out="" readme="" ops=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --gpu-doc) readme="$2"; shift 2 ;;
    --ops-doc) ops="$2"; shift 2 ;;
    *) echo "support_matrix_test.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$python" ] || [ ! -x "$python" ] || ! "$python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "support_matrix: no Python with onnx, onnxruntime and numpy at '${python}' (run tools/setup.sh --venv)" >&2
  exit 1
fi
here="$(cd "$(dirname "$0")" && pwd)"
"$python" "$here/make_op_cases.py" --out "$out" >/dev/null
"$bin/minirt-support-matrix" "$out" >"$out.matrix.md"
echo "support_matrix: $(($(wc -l <"$out.matrix.md") - 2)) ops over $(ls "$out" | wc -l) op cases (table in $out.matrix.md)"
status=0
if ! "$python" "$here/check_gpu_table.py" "$out.matrix.md" "$readme" "$ops"; then
  echo "support_matrix: $readme disagrees with the support matrix (above); the matrix:" >&2
  cat "$out.matrix.md" >&2
  status=1
fi
# Teeth: claiming 3-D Conv, MaxPool and AveragePool on cuda (the CPU runs them; cuda declines) must fail.
sed -e 's/^| Conv (1-D, 2-D)/| Conv (1-D, 2-D, 3-D)/' -e 's/^| MaxPool, AveragePool (1-D, 2-D)/| MaxPool, AveragePool (1-D, 2-D, 3-D)/' \
  "$readme" >"$out.readme-3d.md"
if cmp -s "$readme" "$out.readme-3d.md"; then
  echo "support_matrix: could not plant a 3-D claim (the GPU table's rows in $readme changed?)" >&2
  status=1
elif out3=$("$python" "$here/check_gpu_table.py" "$out.matrix.md" "$out.readme-3d.md" "$ops"); then
  echo "support_matrix: a GPU page claiming 3-D Conv and pooling passed the check" >&2
  status=1
elif ! grep -q "claims 3-D Conv" <<<"$out3" || ! grep -q "claims 3-D MaxPool" <<<"$out3"; then
  echo "support_matrix: the planted 3-D claims failed the check for another reason:" >&2
  echo "$out3" >&2
  status=1
else
  echo "support_matrix: a planted 3-D Conv/pooling claim fails the check, as it must"
fi
exit "$status"
