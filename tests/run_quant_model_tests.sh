#!/usr/bin/env bash
# Quantized models against the float32 originals (ctest models.quantized_vs_onnxruntime).
#
#   tests/run_quant_model_tests.sh --python PY --bin BUILD/bin --source SRC --build BUILD
#
# 1. minirt-make-models writes the generated models into BUILD/quant_models/float32.
# 2. models/make_quantized.py quantizes each with onnxruntime.quantization in
#    the three forms of issue 25: QDQ int8 per channel, QDQ uint8 per tensor,
#    QOperator (QLinearConv and onnxruntime's com.microsoft ops).
# 3. models/quant_cases.py writes a test folder per quantized model whose
#    expected outputs are onnxruntime's on the float32 original, and the bar:
#    2x the scaled error of onnxruntime's own int8 run of the same file.
# 4. minirt-conformance runs every case (any skip or failure fails; a
#    classifier must keep every row's top-1), then each case's scaled error
#    is held to its bar.
set -euo pipefail

python="" bin="" src="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --source) src="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "run_quant_model_tests.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ] || [ -z "$src" ] || [ -z "$build" ]; then
  echo "usage: run_quant_model_tests.sh --python PY --bin BUILD/bin --source SRC --build BUILD" >&2
  exit 2
fi
if [ -z "$python" ] || [ ! -x "$python" ] ||
   ! "$python" -c "import onnx, onnxruntime.quantization, numpy" 2>/dev/null; then
  echo "run_quant_model_tests: no Python with onnx, onnxruntime and numpy at '${python}'" \
       "(run tools/setup.sh --venv, or configure with -DMINIRT_PYTHON=/path/to/python)" >&2
  exit 1
fi
threads=2
work="$build/quant_models"
cases="$work/cases"
generated=(resnet18 resnet50 mobilenetv2 squeezenet1_1 efficientnet_b0 yolov5s_like)

rm -rf "$work"
mkdir -p "$work/float32" "$work/quantized" "$cases"

echo "== generating models"
"$bin/minirt-make-models" --out "$work/float32" "${generated[@]}" >/dev/null

echo "== quantizing (onnxruntime.quantization: qdq_s8, qdq_u8, qop)"
sources=()
for m in "${generated[@]}"; do sources+=("$work/float32/$m.onnx"); done
"$python" "$src/models/make_quantized.py" --out "$work/quantized" "${sources[@]}" 2>&1 | grep -v '^WARNING' || true

echo "== expected outputs: onnxruntime on the float32 originals"
"$python" "$src/models/quant_cases.py" --out "$cases" --float32 "$work/float32" "$work/quantized"/*.onnx

echo "== minirt-conformance"
status=0
log="$work/conformance.log"
"$bin/minirt-conformance" --verbose --threads "$threads" --scaled-error 1 "$cases" | tee "$log" || status=1
if grep -qE '^(SKIP|FAIL) ' "$log"; then status=1; fi
expected=$(wc -l <"$cases/bars.txt")
passed=$(grep -c '^PASS ' "$log" || true)
if [ "$passed" != "$expected" ]; then
  echo "FAIL: $passed of $expected quantized model cases passed" >&2
  status=1
fi

echo "== scaled error against float32: minirt, and its bar (2x onnxruntime's int8 run of the same file)"
while read -r name bar ort_err; do
  line=$(grep -E "^PASS $name:" "$log" || true)
  [ -n "$line" ] || continue
  worst=$(grep -oE 'scaled error [0-9.e+-]+' <<<"$line" | awk '{ if ($3 > m) m = $3 } END { printf "%g", m + 0 }')
  verdict=ok
  if awk -v w="$worst" -v b="$bar" 'BEGIN { exit !(w > b) }'; then
    verdict=FAIL
    status=1
  fi
  printf '%-28s minirt %-10s onnxruntime %-10s bar %-10s %s\n' "$name" "$worst" "$ort_err" "$bar" "$verdict"
done <"$cases/bars.txt"

if [ "$status" != 0 ]; then
  echo "models.quantized_vs_onnxruntime: FAILED" >&2
fi
exit "$status"
