#!/usr/bin/env bash
# The whole test suite on a fresh machine: install what is missing (Debian
# packages and the Python tooling venv), build with warnings as errors, and
# run every test with ctest.
#   tools/run-tests.sh [ctest options, e.g. -R Loader]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --venv
tools/build.sh -DMINIRT_BUILD_TESTS=ON -DMINIRT_BUILD_BENCH=ON
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
