#!/usr/bin/env bash
# tools/gpu-check.sh without a GPU (every CI machine): it lists at most 8
# output files (a GPU machine of the device tool returns no more), rejects a
# bad command line, and a dry run starts, judges the stack, writes only files
# of that list and exits 2 ("no usable GPU") within seconds, under a default
# budget of at most 450 s. Then, with a build whose minirt_gpu_tests is a
# stand-in script (the other programs are the real ones): a process that
# crashes mid-suite costs the test it was in, and the tests it did not reach
# rerun one per process; a budget of 1 s skips every stage and says so; a
# SIGTERM during a (slow, stand-in) stage stops it at once and still leaves
# results.md (saying so) and logs.tar.gz. Where nvidia-smi answers, the dry
# run would be the real check: it is left to tools/gpu-check.sh itself there.
#   gpu_check_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
check=$src/tools/gpu-check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

mapfile -t outputs < <("$check" --outputs)
if [ ${#outputs[@]} -lt 1 ] || [ ${#outputs[@]} -gt 8 ]; then
  echo "FAIL: --outputs lists ${#outputs[@]} files (1 to 8 wanted): ${outputs[*]}"
  failures=$((failures + 1))
else
  echo "ok: --outputs lists ${#outputs[@]} files: ${outputs[*]}"
fi
expect 1 "usage: tools/gpu-check.sh OUTDIR" -- "$check"
expect 1 "usage" -- "$check" --bogus

if command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; then
  echo "note: nvidia-smi answers here; the dry run would be the whole GPU check, not run by this test"
else
  t0=$(date +%s)
  expect 2 "no usable GPU here" -- env MINIRT_CHECK_BUILD="$build" MINIRT_CHECK_PYTHON=/nonexistent/python \
    timeout 120 "$check" "$work/out"
  took=$(($(date +%s) - t0))
  if [ "$took" -gt 60 ]; then
    echo "FAIL: the dry run took $took s (a few seconds wanted)"
    failures=$((failures + 1))
  fi
  n=0
  for f in "$work"/out/*; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    name=$(basename "$f")
    if ! printf '%s\n' "${outputs[@]}" | grep -qxF "$name"; then
      echo "FAIL: the dry run wrote $name, which --outputs does not list"
      failures=$((failures + 1))
    fi
  done
  for want in results.md logs.tar.gz; do
    [ -f "$work/out/$want" ] || { echo "FAIL: the dry run wrote no $want"; failures=$((failures + 1)); }
  done
  grep -q "Exit status 2" "$work/out/results.md" 2>/dev/null ||
    { echo "FAIL: results.md does not carry the doctor's exit status 2"; failures=$((failures + 1)); }
  grep -q "^## Op cases on the GPU" "$work/out/results.md" 2>/dev/null ||
    { echo "FAIL: results.md has no section for the op cases on the GPU"; failures=$((failures + 1)); }
  # Every GPU test ran in the dry run (skipping), the op tests first, the model parity last.
  mkdir -p "$work/logs" && tar xzf "$work/out/logs.tar.gz" -C "$work/logs" 2>/dev/null
  first=$(head -1 "$work/logs/logs/gpu-test-times.txt" 2>/dev/null)
  last=$(tail -1 "$work/logs/logs/gpu-test-times.txt" 2>/dev/null)
  case "$first" in
    *" GpuOps."*) ;;
    *) echo "FAIL: the op tests are not run first (first: ${first:-nothing})"; failures=$((failures + 1)) ;;
  esac
  case "$last" in
    *" GpuModels."*) ;;
    *) echo "FAIL: the model parity tests are not run last (last: ${last:-nothing})"; failures=$((failures + 1)) ;;
  esac
  # The default budget leaves room for a second run in the device tool's 15
  # minutes and stays far from its 600 s per command.
  used_budget=$(sed -n 's/^Whole check: [0-9]* s of a \([0-9]*\) s budget.*/\1/p' "$work/out/results.md")
  if [ -z "$used_budget" ] || [ "$used_budget" -gt 450 ]; then
    echo "FAIL: the default budget is '${used_budget:-not in results.md}' s (at most 450 wanted)"
    failures=$((failures + 1))
  fi
  echo "ok: dry run in $took s, $n files, a $used_budget s budget"

  # A build whose minirt_gpu_tests is a stand-in (FAKE_GPU_TESTS=crash: the
  # op-test process dies in GpuOps.B; slow: it sleeps), the rest the real one.
  fake=$work/fakebuild
  mkdir -p "$fake/bin"
  ln -s "$build/lib" "$fake/lib"
  for p in runmodel minirt-doctor minirt-make-models minirt-conformance; do ln -s "$build/bin/$p" "$fake/bin/$p"; done
  cat >"$fake/bin/minirt_gpu_tests" <<'FAKE'
#!/usr/bin/env bash
# A stand-in for minirt_gpu_tests: GoogleTest's lines for a fixed list.
if [ "$1" = "--gtest_list_tests" ]; then
  printf 'Running main() from a stand-in\nGpuOps.\n  A\n  B\n  C\n  D\nOther.\n  X\nGpuModels.\n  M\n'
  exit 0
fi
filter=${1#--gtest_filter=}
ok() { printf '[ RUN      ] %s\n[       OK ] %s (%s ms)\n' "$1" "$1" "$2"; }
case "$FAKE_GPU_TESTS:$filter" in
  slow:"GpuOps.*") echo "[ RUN      ] GpuOps.A"; touch "$FAKE_GPU_TESTS_MARK"; sleep 60 ;;
  crash:"GpuOps.*") ok GpuOps.A 3; echo "[ RUN      ] GpuOps.B"; kill -SEGV $$ ;;
  *:GpuOps.D) printf '[ RUN      ] GpuOps.D\nfake.cpp:1: Failure\nExpected: 1\n[  FAILED  ] GpuOps.D (2 ms)\n'; exit 1 ;;
  *:GpuOps.C) ok GpuOps.C 5 ;;
  *:"Other.*") ok Other.X 1 ;;
  *:"GpuModels.*") ok GpuModels.M 7 ;;
  *) echo "unexpected filter $filter"; exit 3 ;;
esac
FAKE
  chmod +x "$fake/bin/minirt_gpu_tests"
  run_fake() {  # run_fake MODE OUTDIR [VAR=VALUE...]
    local mode=$1 out=$2
    shift 2
    env MINIRT_CHECK_BUILD="$fake" MINIRT_CHECK_PYTHON=/nonexistent/python FAKE_GPU_TESTS="$mode" "$@" \
      timeout 120 "$check" "$out"
  }

  run_fake crash "$work/crash" >/dev/null 2>&1
  rc=$?
  if [ $rc -ne 2 ] || ! grep -q "^- ms GpuOps.B failed: the process died (exit 139, signal 11)" "$work/crash/results.md"; then
    echo "FAIL: a crash in GpuOps.B: exit $rc (2 wanted), or results.md does not name it as the failed test"
    failures=$((failures + 1))
  fi
  times=$(tar xzOf "$work/crash/logs.tar.gz" logs/gpu-test-times.txt 2>/dev/null | awk '{print $3 " " $4}' | paste -sd, -)
  want="GpuOps.A passed,GpuOps.B failed:,GpuOps.C passed,GpuOps.D failed,Other.X passed,GpuModels.M passed"
  if [ "$times" = "$want" ]; then
    echo "ok: a crash mid-suite costs one test, the rest rerun one per process: $times"
  else
    echo "FAIL: after a crash mid-suite the tests ran as '$times' ($want wanted)"
    failures=$((failures + 1))
  fi
  grep -q "^fake.cpp:1: Failure" "$work/crash/results.md" ||
    { echo "FAIL: results.md does not quote GpuOps.D's failure"; failures=$((failures + 1)); }

  # A budget of 1 s: the doctor still judges the stack, every stage is skipped and says so.
  t0=$(date +%s)
  run_fake crash "$work/tiny" MINIRT_CHECK_BUDGET=1 >/dev/null 2>&1
  rc=$?
  took=$(($(date +%s) - t0))
  if [ $rc -ne 2 ] || ! grep -q "skipped GPU tests GpuOps.\*: the time budget (1 s" "$work/tiny/results.md" ||
    ! grep -q "^Whole check: .* of a 1 s budget" "$work/tiny/results.md" || grep -q "GpuOps.A passed" "$work/tiny/results.md"; then
    echo "FAIL: with a 1 s budget: exit $rc (2 wanted), results.md:"
    tail -20 "$work/tiny/results.md"
    failures=$((failures + 1))
  else
    echo "ok: a 1 s budget skips every stage, says so, and exits 2 in $took s"
  fi

  # SIGTERM during a stage: the stage stops, results.md and logs.tar.gz are written.
  env MINIRT_CHECK_BUILD="$fake" MINIRT_CHECK_PYTHON=/nonexistent/python FAKE_GPU_TESTS=slow \
    FAKE_GPU_TESTS_MARK="$work/slow-started" "$check" "$work/term" >/dev/null 2>&1 &
  pid=$!
  # Until the stand-in's slow stage has started (at most 30 s).
  for _ in $(seq 1 300); do
    [ -e "$work/slow-started" ] && break
    sleep 0.1
  done
  t0=$(date +%s)
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  took=$(($(date +%s) - t0))
  if [ $rc -ne 143 ] || [ "$took" -gt 20 ] || [ ! -s "$work/term/logs.tar.gz" ] ||
    ! grep -q "interrupted by SIGTERM during GPU tests GpuOps" "$work/term/results.md" ||
    ! grep -q "^Whole check: .*exit status 143" "$work/term/results.md"; then
    echo "FAIL: SIGTERM during a stage: exit $rc (143 wanted) after $took s; results.md:"
    tail -12 "$work/term/results.md" 2>/dev/null
    failures=$((failures + 1))
  else
    echo "ok: SIGTERM during a stage ends the check in $took s with results.md and logs.tar.gz"
  fi
fi

[ "$failures" -eq 0 ] && echo "all gpu-check tests passed"
exit "$failures"
