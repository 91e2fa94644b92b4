#!/usr/bin/env bash
# ctest triton.server: the minirt backend in a real Triton server
# (tests/triton/test_triton_server.py). Skips (exit 77) with the reason when
# the server's venv is missing; tools/setup.sh --triton makes it.
#   tests/triton/triton_test.sh BUILD_DIR BIN_DIR SOURCE_DIR
set -euo pipefail
build=$1 bin=$2 src=$3
py="$src/.venv-triton/bin/python"
if [ ! -x "$py" ] || ! "$py" -c "import pytriton, tritonclient.http, tritonclient.grpc, onnxruntime" 2>/dev/null; then
  echo "SKIP: $src/.venv-triton with nvidia-pytriton, tritonclient and onnxruntime is missing (tools/setup.sh --triton makes it)"
  exit 77
fi
if [ ! -f "$build/triton-backends/minirt/libtriton_minirt.so" ]; then
  echo "FAIL: $build/triton-backends/minirt/libtriton_minirt.so was not built"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Its own models: the model test rewrites BUILD/models while it runs.
"$bin/minirt-make-models" --out "$tmp/models" resnet18 mnist_cnn >/dev/null
# The MNIST CNN in float16 (inputs, weights and outputs: TYPE_FP16), made
# with the tooling venv's onnxconverter-common (tools/setup.sh --venv).
tool_py="$src/.venv/bin/python"
if [ -x "$tool_py" ] && "$tool_py" -c "import onnxconverter_common" 2>/dev/null; then
  "$tool_py" "$src/models/make_float16.py" --out "$tmp/models" "$tmp/models/mnist_cnn.onnx" >/dev/null
else
  echo "FAIL: $tool_py with onnxconverter-common is missing (tools/setup.sh --venv makes it)"
  exit 1
fi
shared=""
[ -d "$src/../shared/models" ] && shared="$src/../shared/models"
exec "$py" "$src/tests/triton/test_triton_server.py" --build "$build" --models "$tmp/models" --shared "$shared"
