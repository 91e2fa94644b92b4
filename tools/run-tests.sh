#!/usr/bin/env bash
# The whole test suite on a fresh machine: install what is missing (Debian
# packages and the Python tooling venv), build with warnings as errors, run
# every test with ctest, then the sanitizer, fuzzing and thread-safety runs
# (tools/run-sanitizers.sh; MINIRT_QUICK=1 skips them).
#   tools/run-tests.sh [ctest options, e.g. -R Loader]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --venv
tools/build.sh -DMINIRT_BUILD_TESTS=ON -DMINIRT_BUILD_BENCH=ON
(cd build && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@")
if [ "${MINIRT_QUICK:-0}" != "1" ]; then
  tools/run-sanitizers.sh
fi
echo "all tests passed"
