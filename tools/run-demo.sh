#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, make the
# bundled models, and run the default one (ResNet-18) with runmodel.
#   tools/run-demo.sh [extra runmodel options]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh -DMINIRT_BUILD_TESTS=OFF -DMINIRT_BUILD_BENCH=OFF
build/bin/minirt-make-models --out build/models >/dev/null
exec build/bin/runmodel build/models/resnet18.onnx --top-k 5 --warmup 3 --iterations 20 "$@"
