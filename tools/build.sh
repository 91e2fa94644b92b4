#!/usr/bin/env bash
# Configures and builds minirt into build/ (Release, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMINIRT_WERROR=ON "$@" >/dev/null
cmake --build build -j"$jobs"
