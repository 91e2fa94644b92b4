#!/usr/bin/env bash
# The whole test suite on a fresh machine: install what is missing (Debian
# packages and the Python tooling venv), check the sources' formatting
# (tools/format.sh --check, clang-format 14), build with warnings as errors, run
# every test with ctest, then the sanitizer, fuzzing and thread-safety runs
# (tools/run-sanitizers.sh; MINIRT_QUICK=1 skips them).
#   tools/run-tests.sh [ctest options, e.g. -R Loader]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --venv
tools/format.sh --check
# The Triton backend is built and tested against a real server where Triton's
# C API headers are at hand (../shared/third_party/triton; tests/triton/).
triton=()
triton_include=../shared/third_party/triton/include
if [ -f "$triton_include/triton/core/tritonbackend.h" ]; then
  tools/setup.sh --triton
  triton=(-DMINIRT_TRITON_INCLUDE_DIR="$(cd "$triton_include" && pwd)")
fi
tools/build.sh -DMINIRT_BUILD_TESTS=ON -DMINIRT_BUILD_BENCH=ON "${triton[@]}"
# -LE op_one: the per-op tests (ops.<Op>, ctest -R ops.Conv) repeat, op by
# op, what the op-case suites run over every case (tests/CMakeLists.txt).
(cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" -LE op_one "$@")
if [ "${MINIRT_QUICK:-0}" != "1" ]; then
  tools/run-sanitizers.sh
fi
echo "all tests passed"
