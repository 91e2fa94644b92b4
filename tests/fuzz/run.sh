#!/usr/bin/env bash
# Builds the fuzz targets with clang, libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer into build-fuzz/, then runs each for a bounded
# time on its seed corpus.
#   tests/fuzz/run.sh [SECONDS per target, default 60]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMINIRT_FUZZ=ON \
  -DMINIRT_SANITIZE=address,undefined -DMINIRT_BUILD_TESTS=OFF -DMINIRT_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" --target fuzz_model fuzz_inputs
for target in fuzz_model fuzz_inputs; do
  corpus=build-fuzz/corpus_$target
  mkdir -p "$corpus"
  echo "== $target: ${seconds}s"
  # -rss_limit_mb / -malloc_limit_mb: a hostile model must not make minirt allocate without bound.
  build-fuzz/bin/$target "$corpus" "tests/fuzz/seeds_${target#fuzz_}" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=20 -print_final_stats=1 2>&1 | tail -12
done
