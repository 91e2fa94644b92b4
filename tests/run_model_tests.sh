#!/usr/bin/env bash
# Model-level comparison against onnxruntime (ctest models.generated_vs_onnxruntime).
#
#   tests/run_model_tests.sh --python PY --bin BUILD/bin --source SRC --build BUILD
#
# 1. minirt-make-models writes the generated models into BUILD/models, and
#    writing two of them again must give byte-identical files.
# 2. models/make_reference.py turns each into an ONNX backend-test folder in
#    BUILD/model_tests with onnxruntime's outputs (batch 1, and batch 2 for
#    the models with a symbolic batch; EfficientNet-B0 and the YOLO-like
#    detector have a fixed batch of 1), plus the real models in
#    SRC/../shared/models when that folder exists (and mnist-8 converted
#    down to opsets 6, 4 and 1, with the original's outputs).
# 3. minirt-conformance compares minirt with them at rtol 1e-4, atol 1e-5.
#    Any failure fails the test, and so does a skipped generated model
#    (minirt must run all of them); a shared model that needs an op minirt
#    does not have yet is reported as skipped.
# 4. models/compare_cases.py prints each model's largest differences (for
#    the log; the pass/fail is step 3's).
set -euo pipefail

python="" bin="" src="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --source) src="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "run_model_tests.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ] || [ -z "$src" ] || [ -z "$build" ]; then
  echo "usage: run_model_tests.sh --python PY --bin BUILD/bin --source SRC --build BUILD" >&2
  exit 2
fi

if [ -z "$python" ] || [ ! -x "$python" ] || ! "$python" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  echo "run_model_tests: no Python with onnx, onnxruntime and numpy at '${python}' (CMake cache variable MINIRT_PYTHON)." >&2
  echo "run_model_tests: run tools/setup.sh --venv in the source tree (or configure with -DMINIRT_PYTHON=/path/to/python)." >&2
  exit 1
fi

rtol=1e-4
atol=1e-5
threads=2
models="$build/models"
cases="$build/model_tests"
generated=(resnet18 resnet50 mobilenetv2 squeezenet1_1 mnist_cnn efficientnet_b0 yolov5s_like dbnet_like)
batched=(resnet18 mobilenetv2 squeezenet1_1)  # symbolic batch: also run at batch 2

rm -rf "$models" "$cases" "$build/model_tests_repeat"
mkdir -p "$models" "$cases"

echo "== generating models"
"$bin/minirt-make-models" --out "$models" "${generated[@]}"

echo "== determinism: the same seed gives byte-identical files, another seed does not"
repeat="$build/model_tests_repeat"
"$bin/minirt-make-models" --out "$repeat/seed1" resnet18 mnist_cnn yolov5s_like >/dev/null
"$bin/minirt-make-models" --out "$repeat/seed2" --seed 2 mnist_cnn >/dev/null
for m in resnet18 mnist_cnn yolov5s_like; do
  if ! cmp -s "$models/$m.onnx" "$repeat/seed1/$m.onnx"; then
    echo "FAIL: $m.onnx differs between two runs with the same seed" >&2
    exit 1
  fi
done
if cmp -s "$models/mnist_cnn.onnx" "$repeat/seed2/mnist_cnn.onnx"; then
  echo "FAIL: mnist_cnn.onnx is the same with seeds 1 and 2" >&2
  exit 1
fi
rm -rf "$repeat"
echo "ok"

echo "== reference outputs from onnxruntime"
ref=("$python" "$src/models/make_reference.py" --out "$cases")
gen_paths=()
for m in "${generated[@]}"; do gen_paths+=("$models/$m.onnx"); done
"${ref[@]}" "${gen_paths[@]}"
batch_paths=()
for m in "${batched[@]}"; do batch_paths+=("$models/$m.onnx"); done
"${ref[@]}" --batch 2 "${batch_paths[@]}"

shared="$src/../shared/models"
shared_names=()
if [ -d "$shared" ]; then
  for f in "$shared"/*.onnx; do
    [ -e "$f" ] || continue
    stem=$(basename "$f" .onnx)
    extra=()
    case "$stem" in
      ppocr-*) extra=(--shape x=1x3x48x192) ;;  # symbolic H and W
    esac
    "${ref[@]}" "${extra[@]}" "$f"
    shared_names+=("$stem")
  done
  # mnist-8 (CNTK, opset 8) converted down by onnx.version_converter to
  # opsets 6, 4 and 1 (Add with broadcast, Reshape's shape attribute, ...),
  # against onnxruntime on the original. These must run, not be skipped.
  if [ -e "$shared/mnist-8.onnx" ]; then
    for opset in 6 4 1; do "${ref[@]}" --convert-opset "$opset" "$shared/mnist-8.onnx"; done
  fi
else
  echo "skipping shared models: $shared not found"
fi

# ONNX's "light" model-zoo models (AlexNet, DenseNet-121, Inception v1/v2,
# ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512), converted from
# Caffe2 by other tools and shipped in the onnx wheel with placeholder
# weights: they check that minirt handles those exporters' graphs (opsets,
# Sum, Dropout with a mask, LRN, ...); their outputs are near-uniform, so the
# numbers say little.
light=$("$python" -c "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), 'backend', 'test', 'data', 'light'))")
if [ -d "$light" ]; then
  "${ref[@]}" "$light"/light_*.onnx
else
  echo "note: no light models in this onnx package ($light)"
fi

echo "== minirt-conformance --rtol $rtol --atol $atol"
status=0
log="$build/model_tests.log"
"$bin/minirt-conformance" --verbose --threads "$threads" --rtol "$rtol" --atol "$atol" "$cases" | tee "$log" || status=1

# A generated model must run, not be skipped.
while IFS= read -r line; do
  name=${line#SKIP }
  name=${name%%:*}
  is_shared=0
  for s in "${shared_names[@]}"; do [ "$s" = "$name" ] && is_shared=1; done
  if [ "$is_shared" = 0 ]; then
    echo "FAIL: generated model case $name was skipped; minirt must run every generated model" >&2
    status=1
  else
    echo "note: shared model $name skipped (minirt does not support one of its ops yet)"
  fi
done < <(grep '^SKIP ' "$log" || true)

echo "== differences per model (informational)"
"$python" "$src/models/compare_cases.py" --runmodel "$bin/runmodel" --threads "$threads" --rtol "$rtol" --atol "$atol" \
  "$cases" || true

if [ "$status" != 0 ]; then
  echo "models.generated_vs_onnxruntime: FAILED" >&2
fi
exit "$status"
