#!/usr/bin/env bash
# The robustness runs CI makes after the normal test suite:
#   1. the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer
#      (clang; libFuzzer coverage instrumentation in the same build),
#   2. each libFuzzer target for a bounded time (FUZZ_SECONDS, default 60),
#   3. the concurrency tests under ThreadSanitizer.
# Any sanitizer report fails the run.
#   tools/run-sanitizers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${FUZZ_SECONDS:-60}
# A fixed seed, so that a finding in CI can be replayed here; longer
# exploratory runs pick their own (FUZZ_SEED=0 lets libFuzzer choose).
fuzz_seed=${FUZZ_SEED:-1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: whole test suite"
CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Release -DMINIRT_SANITIZE=address,undefined \
  -DMINIRT_FUZZ=ON -DMINIRT_BUILD_TESTS=ON -DMINIRT_BUILD_BENCH=OFF -DMINIRT_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
# The install test links an uninstrumented program against the library, which
# an ASan build cannot serve; the normal run covers it.
# The per-op tests (label op_one) repeat the op-case suites op by op.
(cd build-asan && ctest --output-on-failure -j"$jobs" -E '^install\.' -LE op_one)

echo "== libFuzzer: ${fuzz_seconds}s per target, seed $fuzz_seed"
for target in fuzz_model fuzz_inputs; do
  corpus=build-asan/corpus_$target
  mkdir -p "$corpus"
  log=build-asan/$target.log
  status=0
  build-asan/bin/$target "$corpus" "tests/fuzz/seeds_${target#fuzz_}" -max_total_time="$fuzz_seconds" \
    -seed="$fuzz_seed" -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=20 -print_final_stats=1 \
    -artifact_prefix=build-asan/"$target"- >"$log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done)" "$log" || true
  if [ "$status" -ne 0 ]; then
    echo "FAIL: $target found a problem (exit $status); the input is build-asan/$target-crash-* (or -leak-, -oom-, -timeout-):"
    tail -60 "$log"
    exit 1
  fi
done

echo "== ThreadSanitizer: concurrency tests"
CC=clang CXX=clang++ cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Release -DMINIRT_SANITIZE=thread \
  -DMINIRT_BUILD_TESTS=ON -DMINIRT_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target minirt_unit_tests
build-tsan/bin/minirt_unit_tests --gtest_filter='Concurrency*:Session*:ThreadPool*'
echo "sanitizer runs passed"
