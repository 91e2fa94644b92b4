#!/usr/bin/env bash
# tools/gpu-check.sh without a GPU (every CI machine): it lists at most 8
# output files (a GPU machine of the device tool returns no more), rejects a
# bad command line, and a dry run starts, judges the stack, writes only files
# of that list and exits 2 ("no usable GPU") within seconds, under a default
# (first-contact) budget of 300 s, the newest GPU code's tests first and the
# model parity last. Then, with a build of stand-ins (minirt_gpu_tests a
# script printing GoogleTest's lines for a fixed list; runmodel, the doctor,
# minirt-conformance and convprof scripts that record each call and, with
# FAKE_GPU_USABLE=1, answer as on a machine whose GPU works, else run the
# real programs): the stages run in the first-contact order (the doctor, the
# models, the newest GpuOps tests, ResNet-50's --compare of every math mode
# and its --profile, then the rest of GpuOps, the other suites, the model
# parity, the op cases, convprof and --tune, the benchmarks) and the
# fallback demo only with --full (a 420 s budget), last; a process that
# crashes mid-suite costs the test it was in, and the tests it did not
# reach rerun one per process; when every test crashes, two reruns in a row
# die and the rest of that process's tests are reported as not run, and the
# check goes on with the next suites; a budget of 1 s skips every stage and
# says so; a SIGTERM during a (slow, stand-in) stage stops it at once and
# still leaves results.md (saying so) and logs.tar.gz. Where nvidia-smi
# answers, the dry run would be the real check: it is left to
# tools/gpu-check.sh itself there.
#   gpu_check_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
check=$src/tools/gpu-check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# in_order FILE ERE...: each ERE matches a line of FILE after the line the
# previous one matched; prints the first that does not.
in_order() {
  local file=$1 at=0 n re
  shift
  for re in "$@"; do
    n=$(tail -n +"$((at + 1))" "$file" | grep -nE -m1 -- "$re" | cut -d: -f1)
    if [ -z "$n" ]; then
      echo "$re"
      return 1
    fi
    at=$((at + n))
  done
}
# The budget a run's results.md closes with.
budget_of() { sed -n 's/^Whole check: [0-9]* s of a \([0-9]*\) s budget.*/\1/p' "$1" 2>/dev/null; }

mapfile -t outputs < <("$check" --outputs)
if [ ${#outputs[@]} -lt 1 ] || [ ${#outputs[@]} -gt 8 ]; then
  fail "--outputs lists ${#outputs[@]} files (1 to 8 wanted): ${outputs[*]}"
else
  echo "ok: --outputs lists ${#outputs[@]} files: ${outputs[*]}"
fi
expect 1 "usage: tools/gpu-check.sh \[--full\] OUTDIR" -- "$check"
expect 1 "usage" -- "$check" --bogus
expect 1 "usage" -- "$check" --full
expect 1 "usage" -- "$check" --full --bogus

if command -v nvidia-smi >/dev/null && nvidia-smi >/dev/null 2>&1; then
  echo "note: nvidia-smi answers here; the dry run would be the whole GPU check, not run by this test"
  [ "$failures" -eq 0 ] && echo "all gpu-check tests passed"
  exit "$failures"
fi

t0=$(date +%s)
expect 2 "no usable GPU here" -- env MINIRT_CHECK_BUILD="$build" MINIRT_CHECK_PYTHON=/nonexistent/python \
  timeout 120 "$check" "$work/out"
took=$(($(date +%s) - t0))
[ "$took" -gt 60 ] && fail "the dry run took $took s (a few seconds wanted)"
n=0
for f in "$work"/out/*; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  name=$(basename "$f")
  printf '%s\n' "${outputs[@]}" | grep -qxF "$name" || fail "the dry run wrote $name, which --outputs does not list"
done
for want in results.md logs.tar.gz; do
  [ -f "$work/out/$want" ] || fail "the dry run wrote no $want"
done
grep -q "Exit status 2" "$work/out/results.md" 2>/dev/null ||
  fail "results.md does not carry the doctor's exit status 2"
grep -q "^## Op cases on the GPU" "$work/out/results.md" 2>/dev/null ||
  fail "results.md has no section for the op cases on the GPU"
# Every GPU test ran in the dry run (skipping): the newest code's op tests
# first, the model parity last; the first contact's ResNet-50 runs (no GPU
# for them here) between those and the rest of the op tests.
mkdir -p "$work/logs" && tar xzf "$work/out/logs.tar.gz" -C "$work/logs" 2>/dev/null
first=$(head -1 "$work/logs/logs/gpu-test-times.txt" 2>/dev/null)
last=$(tail -1 "$work/logs/logs/gpu-test-times.txt" 2>/dev/null)
grep -qE " GpuOps\.(Conv2D|Gemm|[A-Za-z0-9]*(Math|Timed|StepTime|Copy)[A-Za-z0-9]*) " <<<"$first" ||
  fail "the newest code's op tests are not run first (first: ${first:-nothing})"
case "$last" in
  *" GpuModels."*) ;;
  *) fail "the model parity tests are not run last (last: ${last:-nothing})" ;;
esac
miss=$(in_order "$work/logs/logs/gpu-check.log" "GPU tests GpuOps \(first contact\)" \
  "the first contact's ResNet-50 runs .* need a usable GPU" "GPU tests GpuOps \(the rest\)" \
  "GPU tests the other suites" "GPU tests GpuModels")
[ -n "$miss" ] && fail "the dry run's stages are not in the first-contact order (missing, or out of order: $miss)"
# The default budget is a first contact's 300 s.
used_budget=$(budget_of "$work/out/results.md")
[ "$used_budget" = 300 ] || fail "the default budget is '${used_budget:-not in results.md}' s (300 wanted)"
grep -q "^| time budget | 300 s (a first contact" "$work/out/results.md" ||
  fail "results.md's head does not say the budget is a first contact's"
echo "ok: dry run in $took s, $n files, a ${used_budget:-?} s budget, the first contact first"

# A build of stand-ins.
fake=$work/fakebuild
mkdir -p "$fake/bin" "$fake/tests"
ln -s "$build/lib" "$fake/lib"
ln -s "$build/tests/gpu_fakes" "$fake/tests/gpu_fakes"
{
  echo '#!/usr/bin/env bash'
  echo "real=$build/bin"
  cat <<'FAKE'
# A stand-in for one of the build's programs (the name it is called by):
# records the call in FAKE_CALLS; with FAKE_GPU_USABLE=1 answers at once as
# on a machine whose GPU works (minirt-make-models stays the real one), else
# runs the real program.
prog=$(basename "$0")
[ -n "${FAKE_CALLS:-}" ] && echo "$prog $*" >>"$FAKE_CALLS"
if [ "${FAKE_GPU_USABLE:-0}" != 1 ] || [ "$prog" = minirt-make-models ]; then exec "$real/$prog" "$@"; fi
case $prog in
  minirt-doctor)
    case "$*" in
      *--json*) echo '{"verdicts": []}' ;;
      *--help*) echo "usage: minirt-doctor (a stand-in)" ;;
      *) echo "decision: GPU (a stand-in)" ;;
    esac ;;
  runmodel)
    case "$*" in
      *--compare*) echo "a stand-in: every output agrees" ;;
      *--profile*) printf 'per-op time (mean per run, from a stand-in):\n  Conv 1.0 ms\n' ;;
      *--json*) echo '{"model": "stand-in", "latency_ms": {"median": 1.0}, "first_run_ms": 2.0}' ;;
      *) echo "latency: 1.0 ms (a stand-in)" ;;
    esac ;;
  convprof)
    prev=""
    for a in "$@"; do [ "$prev" = --svg ] && echo '<svg/>' >"$a"; prev=$a; done
    echo '{"layers": []}' ;;
  minirt-conformance) printf 'PASS case (a stand-in)\n1 of 1 cases passed on cuda\n' ;;
esac
exit 0
FAKE
} >"$fake/bin/standin"
chmod +x "$fake/bin/standin"
for p in runmodel minirt-doctor minirt-make-models minirt-conformance convprof; do ln -s standin "$fake/bin/$p"; done
cat >"$fake/bin/minirt_gpu_tests" <<'FAKE'
#!/usr/bin/env bash
# A stand-in for minirt_gpu_tests: GoogleTest's lines for a fixed list, the
# tests that --gtest_filter's whole names and SUITE.* select, in the list's
# order. FAKE_GPU_TESTS: crash (GpuOps.Gather dies of SIGSEGV), crash-all
# (every GpuOps test does: a fault that hits every test), slow (the first
# test hangs); GpuOps.Cast always fails.
[ -n "${FAKE_CALLS:-}" ] && echo "minirt_gpu_tests $*" >>"$FAKE_CALLS"
list="GpuOps.Conv2D GpuOps.Pooling GpuOps.Gather GpuOps.Fp16MathStaysClose GpuOps.StepTimesAreDeviceClocked
  GpuOps.CopyToDeviceRoundTrip GpuOps.Resize GpuOps.Cast Other.X GpuModels.M"
if [ "$1" = "--gtest_list_tests" ]; then
  echo "Running main() from a stand-in"
  suite=""
  for t in $list; do
    if [ "${t%%.*}." != "$suite" ]; then
      suite=${t%%.*}.
      echo "$suite"
    fi
    echo "  ${t#*.}"
  done
  exit 0
fi
IFS=: read -ra pats <<<"${1#--gtest_filter=}"
failed=0
for t in $list; do
  hit=0
  for p in "${pats[@]}"; do [ "$p" = "$t" ] || [ "$p" = "${t%%.*}.*" ] && hit=1; done
  [ $hit -eq 1 ] || continue
  echo "[ RUN      ] $t"
  case "$FAKE_GPU_TESTS:$t" in
    slow:*) touch "$FAKE_GPU_TESTS_MARK"; sleep 60 ;;
    crash:GpuOps.Gather | crash-all:GpuOps.*) kill -SEGV $$ ;;
    *:GpuOps.Cast)
      printf 'fake.cpp:1: Failure\nExpected: 1\n[  FAILED  ] %s (2 ms)\n' "$t"
      failed=1
      continue ;;
  esac
  echo "[       OK ] $t (3 ms)"
done
exit $failed
FAKE
chmod +x "$fake/bin/minirt_gpu_tests"
mkdir -p "$work/oc/op_cases/a_case"
tar czf "$work/op_cases.tar.gz" -C "$work/oc" op_cases
run_fake() {  # run_fake MODE OUTDIR [VAR=VALUE...] [-- ARG...]: the calls go to OUTDIR.calls
  local mode=$1 out=$2 vars=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do vars+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  : >"$out.calls"
  env MINIRT_CHECK_BUILD="$fake" MINIRT_CHECK_PYTHON=/nonexistent/python FAKE_GPU_TESTS="$mode" \
    FAKE_CALLS="$out.calls" "${vars[@]}" timeout 120 "$check" "$@" "$out"
}
# The recorded runs of the stand-in tests, as "NAME RESULT" joined by commas.
times_of() { tar xzOf "$1/logs.tar.gz" logs/gpu-test-times.txt 2>/dev/null | awk '{print $3 " " $4}' | paste -sd, -; }

# The first-contact order, on a machine whose GPU works (the stand-ins').
run_fake ok "$work/order" FAKE_GPU_USABLE=1 MINIRT_CHECK_OP_CASES="$work/op_cases.tar.gz" >/dev/null 2>&1
rc=$?
first_filter='GpuOps.Conv2D:GpuOps.Fp16MathStaysClose:GpuOps.StepTimesAreDeviceClocked:GpuOps.CopyToDeviceRoundTrip'
rest_filter='GpuOps.Pooling:GpuOps.Gather:GpuOps.Resize:GpuOps.Cast'
miss=$(in_order "$work/order.calls" "^minirt-doctor --verbose" "^minirt-make-models --out" \
  "^minirt_gpu_tests --gtest_filter=$first_filter " \
  "^runmodel [^ ]*/resnet50.onnx --compare cpu,cuda,cuda:fp16,cuda:tf32,cuda:bf16 --warmup 1 --iterations 3" \
  "^runmodel [^ ]*/resnet50.onnx --device cuda .*--profile" \
  "^minirt_gpu_tests --gtest_filter=$rest_filter " "^minirt_gpu_tests --gtest_filter=Other\.\* " \
  "^minirt_gpu_tests --gtest_filter=GpuModels\.\* " "^minirt-conformance --device cuda --reference cpu" \
  "^convprof [^ ]*/resnet50.onnx --device cuda --math fp32" "^convprof [^ ]*/resnet50.onnx --device cuda --math tf32" \
  "^runmodel [^ ]*/resnet50.onnx --device cuda --tune exhaustive" "^runmodel [^ ]*/resnet50.onnx --device cuda --tune cached" \
  "^runmodel [^ ]*/resnet50.onnx --device cuda --math fp32 .*--json" \
  "^runmodel [^ ]*/mobilenetv2.onnx --device cuda --math tf32 .*--json")
if [ -n "$miss" ]; then
  fail "the stages are not in the first-contact order (missing, or out of order: $miss); the calls:"
  cut -c1-160 "$work/order.calls"
fi
# GpuOps.Cast fails (exit 4); the first contact's ResNet-50 runs, once each.
[ $rc -eq 4 ] || fail "the first-contact order run exits $rc (4 wanted: GpuOps.Cast fails)"
[ "$(grep -c -- "resnet50.onnx --compare cpu,cuda,cuda:fp16,cuda:tf32,cuda:bf16" "$work/order.calls")" -eq 1 ] ||
  fail "ResNet-50's first-contact --compare did not run exactly once"
[ "$(grep -c -- "resnet50.onnx .*--profile" "$work/order.calls")" -eq 1 ] ||
  fail "ResNet-50's --profile did not run exactly once"
miss=$(in_order "$work/order/results.md" "^## minirt-doctor" "^## First contact" "^### the newest GPU code first" \
  "^### resnet50: cpu, cuda, cuda:fp16, cuda:tf32, cuda:bf16" "^### resnet50: per-op device time" "^## GPU tests" \
  "^## Op cases on the GPU" "^## Convolution algorithms")
[ -n "$miss" ] && fail "results.md's sections are not in the first-contact order (missing, or out of order: $miss)"
grep -q "fallback demo is not run on a first contact" "$work/order/results.md" ||
  fail "a first contact does not say it leaves the fallback demo out"
if grep -q -- "--compare cpu,auto" "$work/order.calls" ||
  tar xzOf "$work/order/logs.tar.gz" logs/gpu-check.log 2>/dev/null | grep -q "fallback demo (at most"; then
  fail "a first contact ran the fallback demo"
fi
[ "$(budget_of "$work/order/results.md")" = 300 ] || fail "the first-contact order run's budget is not 300 s"
[ -z "$miss" ] && echo "ok: the first contact (doctor, models, newest GpuOps, ResNet-50 --compare and --profile) before the long suites, convprof, --tune and the benchmarks; exit $rc"

# --full: the 420 s budget, the fallback demo run last.
run_fake ok "$work/full" FAKE_GPU_USABLE=1 -- --full >/dev/null 2>&1
tar xzOf "$work/full/logs.tar.gz" logs/gpu-check.log >"$work/full.log" 2>/dev/null
miss=$(in_order "$work/full.log" "GPU tests GpuOps \(first contact\)" "runmodel resnet50 --compare" \
  "GPU tests GpuModels" "runmodel mobilenetv2 batch 32 tf32" "fallback demo \(at most")
if [ "$(budget_of "$work/full/results.md")" != 420 ] || [ -n "$miss" ]; then
  fail "--full: a '$(budget_of "$work/full/results.md")' s budget (420 wanted), the fallback demo not last ('$miss')"
else
  echo "ok: --full has a 420 s budget and runs the fallback demo last"
fi

# A crash in GpuOps.Gather (the rest of the op tests): it costs that test,
# the rest rerun one per process; no usable GPU (the real doctor), exit 2.
run_fake crash "$work/crash" >/dev/null 2>&1
rc=$?
if [ $rc -ne 2 ] || ! grep -q "^- ms GpuOps.Gather failed: the process died (exit 139, signal 11)" "$work/crash/results.md"; then
  fail "a crash in GpuOps.Gather: exit $rc (2 wanted), or results.md does not name it as the failed test"
fi
times=$(times_of "$work/crash")
want="GpuOps.Conv2D passed,GpuOps.Fp16MathStaysClose passed,GpuOps.StepTimesAreDeviceClocked passed,GpuOps.CopyToDeviceRoundTrip passed"
want+=",GpuOps.Pooling passed,GpuOps.Gather failed:,GpuOps.Resize passed,GpuOps.Cast failed,Other.X passed,GpuModels.M passed"
if [ "$times" = "$want" ]; then
  echo "ok: a crash mid-suite costs one test, the rest rerun one per process: $times"
else
  fail "after a crash mid-suite the tests ran as '$times' ($want wanted)"
fi
grep -q "^fake.cpp:1: Failure" "$work/crash/results.md" || fail "results.md does not quote GpuOps.Cast's failure"

# Every GpuOps test crashes: in each of the two GpuOps processes, the first
# test dies, two reruns die too, and the test after them is not run; the
# other suites and the model parity still run.
run_fake crash-all "$work/crashall" >/dev/null 2>&1
rc=$?
times=$(times_of "$work/crashall")
want="GpuOps.Conv2D failed:,GpuOps.Fp16MathStaysClose failed:,GpuOps.StepTimesAreDeviceClocked failed:,GpuOps.CopyToDeviceRoundTrip not-run"
want+=",GpuOps.Pooling failed:,GpuOps.Gather failed:,GpuOps.Resize failed:,GpuOps.Cast not-run,Other.X passed,GpuModels.M passed"
procs=$(grep -c "^minirt_gpu_tests --gtest_filter=GpuOps\." "$work/crashall.calls")
bounded_notes=$(grep -c "two reruns in a row died too; the 1 tests after them not run" "$work/crashall/results.md")
if [ $rc -ne 2 ] || [ "$times" != "$want" ] || [ "$procs" -ne 6 ] || [ "$bounded_notes" -ne 2 ] ||
  [ "$(grep -c "^0 passed, 3 failed, 0 skipped, 1 not run\.\$" "$work/crashall/results.md")" -ne 2 ]; then
  fail "when every test crashes: exit $rc (2 wanted), $procs GpuOps processes (6 wanted: 1 + 2 reruns twice), $bounded_notes notes of the bound (2 wanted), tests '$times' ($want wanted)"
else
  echo "ok: when every test crashes, two reruns in a row, then the rest not run ($procs GpuOps processes): $times"
fi

# A budget of 1 s: the doctor still judges the stack, every stage is skipped and says so.
t0=$(date +%s)
run_fake crash "$work/tiny" MINIRT_CHECK_BUDGET=1 >/dev/null 2>&1
rc=$?
took=$(($(date +%s) - t0))
if [ $rc -ne 2 ] || ! grep -q "skipped generating models: the time budget (1 s" "$work/tiny/results.md" ||
  ! grep -q "skipped GPU tests GpuOps (first contact): the time budget (1 s" "$work/tiny/results.md" ||
  ! grep -q "^Whole check: .* of a 1 s budget" "$work/tiny/results.md" || grep -q " passed$" "$work/tiny/results.md"; then
  fail "with a 1 s budget: exit $rc (2 wanted), results.md:"
  tail -20 "$work/tiny/results.md"
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
  ! grep -q "interrupted by SIGTERM during GPU tests GpuOps (first contact)" "$work/term/results.md" ||
  ! grep -q "^Whole check: .*exit status 143" "$work/term/results.md"; then
  fail "SIGTERM during a stage: exit $rc (143 wanted) after $took s; results.md:"
  tail -12 "$work/term/results.md" 2>/dev/null
else
  echo "ok: SIGTERM during a stage ends the check in $took s with results.md and logs.tar.gz"
fi

[ "$failures" -eq 0 ] && echo "all gpu-check tests passed"
exit "$failures"
