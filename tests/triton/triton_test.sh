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
  # A detector's tail: scores from logits, NonMaxSuppression, the kept boxes
  # gathered; a batch dimension N in, rows of boxes kept out (no batching).
  "$tool_py" - "$tmp/models/nms_tail.onnx" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
g = helper.make_graph(
    [helper.make_node("Sigmoid", ["logits"], ["sg"]),
     helper.make_node("Transpose", ["sg"], ["scores"], perm=[0, 2, 1]),
     helper.make_node("NonMaxSuppression", ["boxes", "scores", "maxk", "iou", "thr"], ["selected"],
                      center_point_box=1, name="nms"),
     helper.make_node("Reshape", ["boxes", "flat"], ["fb"]),
     helper.make_node("Gather", ["selected", "zero"], ["bi"], axis=1),
     helper.make_node("Gather", ["selected", "two"], ["xi"], axis=1),
     helper.make_node("Mul", ["bi", "eight"], ["base"]),
     helper.make_node("Add", ["base", "xi"], ["row"]),
     helper.make_node("Gather", ["fb", "row"], ["picked"], axis=0)],
    "nms_tail",
    [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["N", 8, 4]),
     helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 8, 3])],
    [helper.make_tensor_value_info("selected", TensorProto.INT64, ["num_selected", 3]),
     helper.make_tensor_value_info("picked", TensorProto.FLOAT, ["num_selected", 4])],
    [i64("maxk", [3]), f32("iou", [0.5]), f32("thr", [0.4]), i64("flat", [-1, 4]), i64("zero", 0),
     i64("two", 2), i64("eight", 8)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
PY
else
  echo "FAIL: $tool_py with onnxconverter-common is missing (tools/setup.sh --venv makes it)"
  exit 1
fi
shared=""
[ -d "$src/../shared/models" ] && shared="$src/../shared/models"
exec "$py" "$src/tests/triton/test_triton_server.py" --build "$build" --models "$tmp/models" --shared "$shared"
