#!/usr/bin/env bash
# float16 models against onnxruntime (ctest models.float16_vs_onnxruntime).
#
#   tests/run_f16_model_tests.sh --python PY --bin BUILD/bin --source SRC --build BUILD
#
# 1. minirt-make-models writes every generated model into BUILD/f16_models/float32.
# 2. models/make_float16.py converts each of them, and each model in
#    SRC/../shared/models when that folder exists, to float16 with
#    onnxconverter-common, both ways: <stem>_fp16 (keep_io_types=False: float16
#    inputs, outputs and weights) and <stem>_fp16_io32 (keep_io_types=True:
#    float16 weights, float32 inputs and outputs).
# 3. models/make_reference.py runs each converted model in onnxruntime on
#    seeded random inputs (float16 ones for the _fp16 models) and stores its
#    outputs (float16 for the _fp16 models).
# 4. minirt-conformance runs minirt on the same inputs and compares at
#    rtol 5e-3, atol 5e-3 (runtime/ops/README.md, "float16 and bfloat16 models", says why).
#    Any failure or skip fails the test.
# 5. models/compare_cases.py prints each model's largest differences (for
#    the log; the pass/fail is step 4's).
set -euo pipefail

python="" bin="" src="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --source) src="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "run_f16_model_tests.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ] || [ -z "$src" ] || [ -z "$build" ]; then
  echo "usage: run_f16_model_tests.sh --python PY --bin BUILD/bin --source SRC --build BUILD" >&2
  exit 2
fi
if [ -z "$python" ] || [ ! -x "$python" ] ||
   ! "$python" -c "import onnx, onnxruntime, numpy, onnxconverter_common" 2>/dev/null; then
  echo "run_f16_model_tests: no Python with onnx, onnxruntime, numpy and onnxconverter-common at '${python}'" \
       "(CMake cache variable MINIRT_PYTHON)." >&2
  echo "run_f16_model_tests: run tools/setup.sh --venv in the source tree (or configure with -DMINIRT_PYTHON=/path/to/python)." >&2
  exit 1
fi

# float16 has a unit roundoff of 2^-11 (4.9e-4). onnxruntime's CPU runs a
# float16 model rounding every intermediate to float16 (in its float16
# kernels, or casting around float32 ones); minirt rounds only where the model
# casts. The difference grows with depth: see runtime/ops/README.md.
rtol=5e-3
atol=5e-3
threads=2
work="$build/f16_models"
cases="$work/cases"
generated=(resnet18 resnet50 mobilenetv2 squeezenet1_1 mnist_cnn efficientnet_b0 yolov5s_like)

rm -rf "$work"
mkdir -p "$work/float32" "$work/float16" "$cases"

echo "== generating models"
"$bin/minirt-make-models" --out "$work/float32" "${generated[@]}"

sources=()
for m in "${generated[@]}"; do sources+=("$work/float32/$m.onnx"); done
shared="$src/../shared/models"
if [ -d "$shared" ]; then
  for f in "$shared"/*.onnx; do
    [ -e "$f" ] && sources+=("$f")
  done
else
  echo "skipping shared models: $shared not found"
fi

echo "== converting to float16 (onnxconverter-common, keep_io_types both ways)"
"$python" "$src/models/make_float16.py" --out "$work/float16" "${sources[@]}"

echo "== reference outputs from onnxruntime"
for f in "$work/float16"/*.onnx; do
  extra=()
  case "$(basename "$f")" in
    ppocr-*) extra=(--shape x=1x3x48x192) ;;  # symbolic H and W
  esac
  "$python" "$src/models/make_reference.py" --out "$cases" "${extra[@]}" "$f"
done

echo "== minirt-conformance --rtol $rtol --atol $atol"
status=0
log="$work/conformance.log"
"$bin/minirt-conformance" --verbose --threads "$threads" --rtol "$rtol" --atol "$atol" "$cases" | tee "$log" || status=1
if grep -q '^SKIP ' "$log"; then
  echo "FAIL: a float16 model was skipped; minirt must run every one" >&2
  status=1
fi
expected=$(( 2 * ${#sources[@]} ))
passed=$(grep -c '^PASS ' "$log" || true)
if [ "$passed" != "$expected" ]; then
  echo "FAIL: $passed of $expected float16 model cases passed" >&2
  status=1
fi

echo "== differences per model (informational)"
"$python" "$src/models/compare_cases.py" --runmodel "$bin/runmodel" --threads "$threads" --rtol "$rtol" --atol "$atol" \
  "$cases" || true

if [ "$status" != 0 ]; then
  echo "models.float16_vs_onnxruntime: FAILED" >&2
fi
exit "$status"
