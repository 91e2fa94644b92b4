#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU, from the repository root,
#
#   tools/gpu-check.sh [--full] OUTDIR
#
# uses the build carried from another machine (.gpu-carry/, made there by
# tools/gpu-carry.sh; or MINIRT_CHECK_BUILD=DIR for a build folder with
# bin/ and lib/), or builds one when that cannot run here and CMake,
# protobuf, Eigen and GoogleTest are installed; then, the newest GPU code
# first (a first contact may get no further), the long runs after:
#   1. minirt-doctor (text and --json): the stack and the decision;
#   2. the models, made here by minirt-make-models (all of them, about a
#      second), and the shared ones carried in .gpu-carry/models;
#   3. the first contact, within about the first 150 s:
#      a. minirt_gpu_tests on the newest GPU code in one process: the GpuOps
#         tests whose names match MINIRT_CHECK_FIRST_TESTS (an extended
#         regular expression over SUITE.NAME; by default the Conv2D and Gemm
#         tests, the tf32, fp16 and bf16 math, the timed chain and any test
#         of step times or of the copies to and from the device);
#      b. runmodel --compare cpu,cuda,cuda:fp16,cuda:tf32,cuda:bf16 on ResNet-50 (few
#         iterations): each math mode on a whole model against the CPU;
#      c. runmodel --print-plan --profile on ResNet-50: the per-op device
#         time (CUDA events per step);
#   4. the long suites of minirt_gpu_tests, one process each: the rest of
#      GpuOps (every GPU op against the CPU kernels), the other suites, then
#      CPU-vs-GPU parity of every model (GpuModels.*); per-test times from
#      GoogleTest's own lines (the slowest and every failure in results.md);
#      when a process dies mid-suite (crash, hang), the test it was in is
#      counted failed and the tests it did not reach rerun one per process,
#      as far as the budget goes, until two reruns in a row die too: then
#      the rest of that process's tests are reported as not run and the
#      check goes on with the next stage;
#   5. the op-case table (tests/op_cases/, carried as .gpu-carry/op_cases.tar.gz
#      or MINIRT_CHECK_OP_CASES) on the GPU against the CPU with
#      minirt-conformance --device cuda --reference cpu (at most 100 s; cases
#      whose nodes fell back to the CPU are listed apart, by reason);
#   6. convprof on the GPU: every cuDNN algorithm of every convolution of
#      ResNet-50 (fp32 and tf32), one run each giving the JSON (summarized in
#      results.md) and the SVG, and runmodel --tune exhaustive then cached on
#      one algorithm cache (the second must measure nothing);
#   7. a benchmark of ResNet-50 and MobileNetV2 at batch 1 and 32 with
#      runmodel --device cuda (fp32 and tf32), MobileNetV2's --profile and
#      its --compare of the CPU with cuda under fp32, tf32, fp16 and bf16
#      (ResNet-50's was the first contact's), against PyTorch eager with
#      torch.backends.cudnn.benchmark=True on the same architectures with
#      random weights (tools/gpu_bench_torch.py; torchvision's models when
#      torchvision is installed, the script's own definitions otherwise);
#   8. with --full only, the fallback demo (tools/fallback-demo.sh): the
#      machine's own stack and the broken ones replayed with fake libraries.
#      Those need no GPU (the demo runs them on any machine), so a first
#      contact spends no device time on them;
# and writes into OUTDIR at most 8 files, as the GPU machine returns no more
# (`tools/gpu-check.sh --outputs` lists them): results.md (date, GPU,
# driver, library versions, the doctor's decision, test and parity results,
# the benchmark table), doctor.txt, doctor.json, gpu-tests.log, bench.log,
# convprof.svg (ResNet-50's algorithms under fp32) and logs.tar.gz (every
# log, the convprof JSON of both math modes included). The NVIDIA libraries
# of a Python environment's pip wheels (MINIRT_CHECK_PYTHON, default
# /opt/torch/.venv/bin/python, else python3) are put on LD_LIBRARY_PATH and
# MINIRT_CUDA_PATH.
#
# Time: the whole run keeps to MINIRT_CHECK_BUDGET seconds: by default 300
# (a first contact), 420 with --full. Every command runs under its own
# timeout, capped by what is left of the budget less MINIRT_CHECK_RESERVE
# seconds (default 30) kept for writing the results; a stage that would
# start with less than 10 s of that left is skipped and says so, so the
# budget decides how far down the list above a run gets. The quick probes
# before the stages (nvidia-smi, ldd, the doctor) get at least 5 s each
# even when the budget is spent.
#
# What fits in the device tool's 15 minutes (900 s of device time: every
# machine start, idle wait and run together; at most 600 s per command, so
# give the command timeout_s 600): a cold start costs a minute or more (two
# at worst here), a run takes its budget and some seconds, and a machine is
# not started with less than 4 minutes left.
#   - a first contact: start + 300 s, 6 to 7 minutes;
#   - then a second run of at most 300 s on the machine while it is still
#     warm (reading the first results, it idles, and that counts): 12 to 13
#     minutes in all; a --full (420 s) second run does not fit reliably;
#   - or, the machine given back after the first contact, a second cold
#     start and a run of at most 240 s (MINIRT_CHECK_BUDGET=240);
#   - a --full run alone: start + 420 s, 8 to 9 minutes, then at most a
#     short rerun on the warm machine (MINIRT_CHECK_BUDGET=180, say);
#   - never two --full runs: 840 s and a start are past 900 s.
#
# Results as they arrive: results.md gets each section when its stage ends,
# and OUTDIR's copies of the logs and logs.tar.gz are refreshed after each
# section. SIGTERM, SIGINT and SIGHUP stop the running stage and write the
# notes, logs.tar.gz and the last line of results.md before exiting. A
# SIGKILL (what the device tool sends when a command passes its limit, rc
# 124 or 137) cannot be trapped: then the budget, kept well under the
# limit, and the results written so far are the protection; a results.md
# without its closing "Whole check:" line was cut off there.
#
# Exit status: 0 everything ran and passed; 1 bad command line; 2 no usable
# GPU (results.md says why); 3 no build that runs here; 4 GPU tests, parity
# (GpuModels, or the first contact's --compare) or an op case on the GPU
# failed, or GPU tests were not run; 5 a benchmark run, or the first
# contact's --compare or --profile, failed to run; 128+N stopped by signal
# N (results.md says during which stage).
set -uo pipefail

# Every file the check may write into OUTDIR (a test holds this to 8).
outputs=(results.md doctor.txt doctor.json gpu-tests.log bench.log convprof.svg logs.tar.gz)
if [ "${1:-}" = "--outputs" ] && [ $# -eq 1 ]; then
  printf '%s\n' "${outputs[@]}"
  exit 0
fi
# --full: the 420 s run (the fallback demo included); without it a first
# contact's 300 s.
full=0
if [ "${1:-}" = "--full" ]; then
  full=1
  shift
fi
if [ $# -ne 1 ] || [ "${1:0:1}" = "-" ]; then
  echo "usage: tools/gpu-check.sh [--full] OUTDIR   (or --outputs: the files it may write there)" >&2
  exit 1
fi
if [ $full -eq 1 ]; then budget=${MINIRT_CHECK_BUDGET:-420}; else budget=${MINIRT_CHECK_BUDGET:-300}; fi
reserve=${MINIRT_CHECK_RESERVE:-30}
for v in "$budget" "$reserve"; do
  case $v in '' | *[!0-9]*)
    echo "tools/gpu-check.sh: MINIRT_CHECK_BUDGET and MINIRT_CHECK_RESERVE are whole seconds (got '$v')" >&2
    exit 1 ;;
  esac
done
cd "$(dirname "$0")/.." || exit 1
root=$PWD
outdir=$1
mkdir -p "$outdir" || exit 1
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d /tmp/minirt-gpu-check.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
start=$(date +%s)
results=$outdir/results.md
status=0
: >"$logs/notes.txt"
child=""     # the running command's timeout process
current=""   # the running stage's name
finished=""

elapsed() { echo $(($(date +%s) - start)); }
left() { echo $((budget - $(elapsed))); }
log() { echo "[gpu-check $(elapsed)s] $*" | tee -a "$logs/gpu-check.log"; }
note() { echo "$*" >>"$logs/notes.txt"; log "$*"; }

# Runs CMD in the background under timeout and waits for it, so that a
# trapped signal interrupts the wait (a foreground command would delay the
# trap until it ended). run_timed SECONDS CMD...
run_timed() {
  local limit=$1
  shift
  timeout --kill-after=10 "$limit" "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=""
  return $rc
}
# A quick probe: bounded SECONDS CMD..., never past the budget less the
# reserve, but at least 5 s.
bounded() {
  local limit=$1 room
  shift
  room=$(($(left) - reserve))
  [ "$room" -lt 5 ] && room=5
  [ "$limit" -gt "$room" ] && limit=$room
  run_timed "$limit" "$@"
}
# A stage: its own time limit, no later than the budget less the reserve
# allows; skipped (status 254) when less than 10 s of that is left.
# stage NAME SECONDS LOGFILE CMD...
stage() {
  local name=$1 limit=$2 logfile=$3 room rc
  shift 3
  room=$(($(left) - reserve))
  if [ "$room" -lt 10 ]; then
    note "skipped $name: the time budget ($budget s, the last $reserve s kept for the results) is spent"
    return 254
  fi
  [ "$limit" -gt "$room" ] && limit=$room
  log "$name (at most ${limit}s)"
  current=$name
  run_timed "$limit" "$@" >"$logfile" 2>&1
  rc=$?
  current=""
  case $rc in
    124) note "$name ran out of its ${limit}s and was stopped" ;;
    137) note "$name was killed (SIGKILL: its ${limit}s and 10 s more, or out of memory)" ;;
  esac
  return $rc
}

# OUTDIR's copies of the logs and logs.tar.gz, refreshed after each section.
snapshot() {
  cp "$results" "$logs/results.md" 2>/dev/null
  for f in doctor.txt doctor.json gpu-tests.log bench.log; do
    [ -f "$logs/$f" ] && cp "$logs/$f" "$outdir/"
  done
  if timeout 30 tar czf "$work/logs.tar.gz" -C "$work" logs 2>/dev/null; then
    mv -f "$work/logs.tar.gz" "$outdir/logs.tar.gz"
  fi
}

finish() {
  [ -n "$finished" ] && exit "$status"
  finished=1
  trap - EXIT
  trap '' TERM INT HUP  # a second signal must not cut the writing short
  {
    echo
    echo "## Notes"
    echo
    if [ -s "$logs/notes.txt" ]; then sed 's/^/- /' "$logs/notes.txt"; else echo "none"; fi
    echo
    echo "Whole check: $(elapsed) s of a $budget s budget; exit status $status."
  } >>"$results"
  log "done: $results (exit $status)"
  snapshot
  rm -rf "$work"
  exit "$status"
}
on_signal() {
  trap '' TERM INT HUP
  # timeout passes the signal on to the stage's whole process group.
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
  note "interrupted by SIG$1${current:+ during $current}: nothing after it ran"
  status=$((128 + $2))
  finish
}
trap 'on_signal TERM 15' TERM
trap 'on_signal INT 2' INT
trap 'on_signal HUP 1' HUP
# Any other way out (an error of this script) still writes the results.
trap 'note "the check stopped early (status $?)"; [ $status -eq 0 ] && status=1; finish' EXIT

# ---------------------------------------------------------------- the machine
py=${MINIRT_CHECK_PYTHON:-}
if [ -z "$py" ]; then
  for p in /opt/torch/.venv/bin/python /opt/torch/.venv/bin/python3 "$(command -v python3 || true)"; do
    if [ -n "$p" ] && [ -x "$p" ]; then py=$p; break; fi
  done
fi
venv=""
if [ -n "$py" ]; then venv=$(cd "$(dirname "$py")/.." 2>/dev/null && pwd); fi

# The NVIDIA pip wheels' libraries (cuDNN, cuBLAS, ...) and the driver's folder.
libdirs=()
if [ -n "$venv" ]; then
  for d in "$venv"/lib/python3*/site-packages/nvidia/*/lib; do [ -d "$d" ] && libdirs+=("$d"); done
fi
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$d" ] && libdirs+=("$d"); done
if [ ${#libdirs[@]} -gt 0 ]; then
  joined=$(IFS=:; echo "${libdirs[*]}")
  export LD_LIBRARY_PATH="$joined${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export MINIRT_CUDA_PATH="$joined${MINIRT_CUDA_PATH:+:$MINIRT_CUDA_PATH}"
fi
[ -n "$venv" ] && export VIRTUAL_ENV="$venv"

gpu_line="none found (nvidia-smi is not installed)"
driver=""
if command -v nvidia-smi >/dev/null; then
  if bounded 30 nvidia-smi >"$logs/nvidia-smi.txt" 2>&1; then
    gpu_line=$(bounded 20 nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1)
    driver=$(bounded 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
  else
    gpu_line="nvidia-smi failed or hung: $(head -1 "$logs/nvidia-smi.txt")"
  fi
fi

{
  echo "# minirt GPU check"
  echo
  echo "Sections are added as their stages end; without the closing \"Whole check:\" line the run was cut off (see the Notes, or logs.tar.gz's gpu-check.log)."
  echo
  echo "| | |"
  echo "| --- | --- |"
  echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
  echo "| host | $(uname -n), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(nproc) CPUs |"
  echo "| GPU | $gpu_line |"
  echo "| driver | ${driver:-unknown} |"
  echo "| Python for the NVIDIA wheels and PyTorch | ${py:-none} |"
  echo "| library folders added | ${libdirs[*]:-none} |"
  echo "| time budget | $budget s ($([ $full -eq 1 ] && echo "--full" || echo "a first contact; --full: 420 s")$([ -n "${MINIRT_CHECK_BUDGET:-}" ] && echo ", MINIRT_CHECK_BUDGET")), the last $reserve s kept for the results |"
} >"$results"
snapshot

# ---------------------------------------------------------------- the build
build=""
why_not=""
candidates=()
[ -n "${MINIRT_CHECK_BUILD:-}" ] && candidates+=("$MINIRT_CHECK_BUILD")
candidates+=("$root/.gpu-carry" "$root/build")
for b in "${candidates[@]}"; do
  [ -e "$b/bin/minirt-doctor" ] || continue
  chmod u+x "$b"/bin/* 2>/dev/null  # a copy may have lost the mode bits
  missing=""
  for f in "$b"/bin/runmodel "$b"/bin/minirt-doctor "$b"/bin/minirt-make-models "$b"/bin/minirt_gpu_tests; do
    if [ ! -x "$f" ]; then missing+=" $(basename "$f") (absent)"; continue; fi
    nf=$(bounded 20 ldd "$f" 2>&1 | grep "not found" | awk '{print $1}' | tr '\n' ' ')
    [ -n "$nf" ] && missing+=" $(basename "$f") needs: $nf;"
  done
  if [ -z "$missing" ] && ! bounded 20 "$b/bin/minirt-doctor" --help >/dev/null 2>&1; then
    missing=" minirt-doctor does not start here: $(bounded 20 "$b/bin/minirt-doctor" --help 2>&1 | head -2 | tr '\n' ' ')"
  fi
  if [ -z "$missing" ]; then
    build=$b
    break
  fi
  why_not+="$b:$missing. "
done
if [ -z "$build" ]; then
  # Build here when everything a build needs is installed.
  need=""
  command -v cmake >/dev/null || need+=" cmake"
  command -v protoc >/dev/null || need+=" protoc (protobuf-compiler)"
  [ -e /usr/include/google/protobuf/message_lite.h ] || need+=" protobuf headers (libprotobuf-dev)"
  [ -d /usr/include/eigen3 ] || need+=" Eigen (libeigen3-dev)"
  [ -e /usr/include/gtest/gtest.h ] || need+=" GoogleTest (libgtest-dev, libgmock-dev)"
  command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || need+=" nvcc"
  if [ "${MINIRT_CHECK_BUILD_HERE:-1}" = "0" ]; then
    why_not+="building here is turned off (MINIRT_CHECK_BUILD_HERE=0)."
  elif [ -z "$need" ]; then
    log "no carried build runs here (${why_not:-none found}); building one in $work/build"
    if stage "build" 420 "$logs/build.log" bash -c "cmake -S '$root' -B '$work/build' -DCMAKE_BUILD_TYPE=Release -DMINIRT_BUILD_BENCH=OFF && cmake --build '$work/build' -j$(nproc) --target runmodel minirt-doctor minirt-make-models minirt-conformance minirt_gpu_tests minirt_cuda"; then
      build=$work/build
    else
      why_not+="building here failed or ran out of time (see logs/build.log). "
    fi
  else
    why_not+="building here is not possible, missing:$need."
  fi
fi
if [ -z "$build" ]; then
  {
    echo
    echo "## No build that runs here"
    echo
    echo "$why_not"
    echo
    echo "Make one on a machine with the toolchain (tools/gpu-carry.sh) and carry .gpu-carry/."
  } >>"$results"
  status=3
  finish
fi
bin=$build/bin
info="$(cat "$build/BUILD_INFO" 2>/dev/null | sed 's/^/    /')"
{
  echo "| build used | $build |"
  echo
  [ -n "$info" ] && { echo "Carried build:"; echo; echo "$info"; echo; }
} >>"$results"
log "using the build in $build"
bounded 20 ldd "$build/lib/libminirt_cuda.so" >"$logs/ldd-module.txt" 2>&1

# ---------------------------------------------------------------- 1. the doctor
bounded 60 "$bin/minirt-doctor" --verbose >"$logs/doctor.txt" 2>&1
doctor_rc=$?
case $doctor_rc in 124 | 137) note "minirt-doctor --verbose did not end within its time limit" ;; esac
bounded 60 "$bin/minirt-doctor" --json >"$logs/doctor.json" 2>>"$logs/doctor.stderr"
case $? in 124 | 137) note "minirt-doctor --json did not end within its time limit" ;; esac
decision=$(grep -E "^decision:" "$logs/doctor.txt" | head -1)
libs=""
if [ -n "$py" ]; then
  cat >"$work/doctor_libs.py" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"(minirt-doctor --json unreadable: {e})")
    sys.exit()
def lib(layer):
    x = d.get(layer, {})
    path = (x.get("library") or {}).get("path") or "not found"
    return f"{x.get('version') or '?'} ({path})"
drv = d.get("driver", {})
devs = (d.get("devices") or {}).get("list") or []
dev = devs[0] if devs else {}
b = d.get("build", {})
print(f"driver {drv.get('release') or '?'} (supports CUDA {drv.get('cuda_version') or '?'}); "
      f"GPU {dev.get('name', '?')} cc {dev.get('cc', dev.get('compute_capability', '?'))}; "
      f"cuDNN {lib('cudnn')}; cuBLAS {lib('cublas')}; "
      f"built with CUDA {b.get('toolkit', '?')} against cuDNN {b.get('cudnn', '?')} and cuBLAS {b.get('cublas', '?')}")
for v in d.get("verdicts", []):
    if v.get("level") in ("warning", "fatal"):
        print(f"{v['level']}: {v['message']}")
PY
  libs=$(bounded 30 "$py" "$work/doctor_libs.py" "$logs/doctor.json" 2>/dev/null)
fi
{
  echo "## minirt-doctor"
  echo
  echo "Exit status $doctor_rc. ${decision}"
  if [ -n "$libs" ]; then echo; echo "$libs" | sed 's/^/- /'; fi
  echo
  echo '```'
  grep -E "^(build|driver|device|cudnn|cublas) |^ +(file|version|ok|FATAL|warning|note)" "$logs/doctor.txt" | head -40
  echo '```'
} >>"$results"
if [ $doctor_rc -ne 0 ]; then
  note "no usable GPU here: ${decision#decision: }"
  status=2
fi
snapshot

# ---------------------------------------------------------------- 2. the models
# All of them at once: about a second, and the first contact needs ResNet-50.
models=$work/models
stage "generating models" 60 "$logs/make-models.log" "$bin/minirt-make-models" --out "$models" ||
  note "minirt-make-models failed (see logs/make-models.log)"
model_path=$models
if [ -d "$build/models" ] && ls "$build"/models/*.onnx >/dev/null 2>&1; then model_path+=":$build/models"; fi
if [ -d "$root/../shared/models" ]; then model_path+=":$root/../shared/models"; fi
export MINIRT_GPU_TEST_MODELS=$model_path

# ---------------------------------------------------------------- the GPU tests' machinery
# A few processes, not one per test (each process probes the stack and maps
# about 1 GB of libraries): the newest GPU code first (the most to learn
# from a first contact), the rest of the op tests and the other suites
# after the first contact's runmodel runs, the model parity (long) last, so
# a budget running out costs those. GoogleTest's own lines give each test's
# result and time (its JSON, kept in logs.tar.gz, is not written when a
# process dies, the lines are).
: >"$logs/gpu-tests.log"
: >"$logs/gpu-test-times.txt"   # "MS ms NAME RESULT", one line per test, in run order
tests_rc=0
bench_ok=1
: >"$logs/bench.log"
listing=$(bounded 60 "$bin/minirt_gpu_tests" --gtest_list_tests 2>>"$logs/gpu-tests.log")
# (DISABLED_ tests are listed but never run.)
names=$(awk '/^[^ ]/ {suite = ($1 ~ /\.$/ && $1 !~ /^DISABLED_/) ? $1 : ""}
  /^  [^ ]/ && suite != "" && $1 !~ /^DISABLED_/ {print suite $1}' <<<"$listing")
[ -n "$names" ] || { note "minirt_gpu_tests lists no tests"; tests_rc=1; }
suites=$(awk -F. '!seen[$1]++ {print $1}' <<<"$names")
other_filter=$(grep -vxE "GpuOps|GpuModels" <<<"$suites" | sed 's/$/.*/' | paste -sd: -)
# The first contact's tests: the newest GPU code (the math modes, the timed
# chain, step times, the device copies) and the two main ops.
first_re=${MINIRT_CHECK_FIRST_TESTS:-'^GpuOps\.(Conv2D|Gemm|(Tf32|Fp16|Bf16)Math[A-Za-z0-9_]*|[A-Za-z0-9_]*(Timed|StepTime|CopyTo|CopyFrom|ToDevice|FromDevice)[A-Za-z0-9_]*)$'}
first_tests=$(grep -E '^GpuOps\.' <<<"$names" | grep -E -- "$first_re")
rest_ops=$(grep -E '^GpuOps\.' <<<"$names" | grep -vxF -f <(printf '%s\n' "$first_tests" | grep .))

# Results of one process's log: "MS ms NAME RESULT" lines for the tests it
# ended, and the test it was in when it stopped (if any) on the last line as
# "RUNNING NAME".
parse_gtest() {
  awk '
    /^\[ RUN      \] / {running = $4}
    /^\[ +(OK|FAILED|SKIPPED) +\] .*\([0-9]+ ms\)$/ {
      name = $4; sub(/,$/, "", name)
      ms = $(NF - 1); sub(/^\(/, "", ms)
      r = ($2 == "OK") ? "passed" : ($2 == "FAILED") ? "failed" : "skipped"
      print ms " ms " name " " r
      if (name == running) running = ""
    }
    END { if (running != "") print "RUNNING " running }' "$1"
}

# The tests of the listing that FILTER selects (SUITE.* or whole names,
# joined by ':'), in the listing's order.
selected() {
  awk -v f="$1" 'BEGIN {n = split(f, p, ":"); for (i = 1; i <= n; ++i) sub(/\*$/, "", p[i])}
    {for (i = 1; i <= n; ++i) if ((substr(p[i], length(p[i])) == "." && index($0, p[i]) == 1) || $0 == p[i]) {print; next}}' \
    <<<"$names"
}

# run_tests LABEL SECONDS FILTER RERUN_SECONDS: one process (SECONDS at most)
# for the tests FILTER selects; if it stops before ending them all, the test
# it was in is counted failed and the others rerun one per process
# (RERUN_SECONDS each; none when empty), while the budget allows and until
# two reruns in a row die too (a fault that hits every test): the tests
# after those are then reported as not run. Sets tests_last_rc to the
# process's exit status.
run_tests() {
  local label=$1 limit=$2 filter=$3 rc parsed want missing culprit why t
  local safe=${label//[^A-Za-z0-9_.-]/_}
  stage "GPU tests $label" "$limit" "$work/tests.log" "$bin/minirt_gpu_tests" --gtest_filter="$filter" \
    --gtest_color=no --gtest_output="json:$logs/gtest-$safe.json"
  rc=$?
  tests_last_rc=$rc
  { echo "=== $label: exit $rc"; cat "$work/tests.log"; } >>"$logs/gpu-tests.log"
  parsed=$(parse_gtest "$work/tests.log")
  grep -v "^RUNNING " <<<"$parsed" | grep . >>"$logs/gpu-test-times.txt"
  culprit=$(sed -n 's/^RUNNING //p' <<<"$parsed")
  case $rc in
    0 | 1) why="the process ended (exit $rc) before all its tests had run" ;;
    254) why="not run: the budget was spent" ;;
    124) why="timed out (the process's ${limit} s)" ;;
    137) why="killed (SIGKILL)" ;;
    *) why="the process died (exit $rc$([ $rc -gt 128 ] && echo ", signal $((rc - 128))"))" ;;
  esac
  [ $rc -ne 0 ] && tests_rc=1
  if [ $rc -eq 254 ]; then
    # Every test FILTER selects, not run.
    want=$(selected "$filter")
    for t in $want; do echo "- ms $t not-run" >>"$logs/gpu-test-times.txt"; done
    return
  fi
  [ -n "$culprit" ] && echo "- ms $culprit failed: $why" >>"$logs/gpu-test-times.txt"
  # The tests of FILTER that neither ended nor were running: one process each.
  missing=$(awk 'FILENAME == ARGV[1] {done[$3] = 1; next} !($0 in done)' \
    "$logs/gpu-test-times.txt" <(selected "$filter"))
  if [ -z "$missing" ]; then
    [ -z "$culprit" ] && [ $rc -gt 1 ] && note "GPU tests $label: $why after all its tests had ended"
    return
  fi
  if [ -z "$4" ]; then
    # A rerun of one test: no further reruns.
    for t in $missing; do echo "- ms $t failed: not reached in its own process ($why)" >>"$logs/gpu-test-times.txt"; done
    return
  fi
  note "GPU tests $label: $why${culprit:+ in $culprit}; the $(wc -w <<<"$missing") tests it did not reach rerun one per process"
  local unrun=0 died=0 abandoned=0
  for t in $missing; do
    if [ $died -ge 2 ]; then
      echo "- ms $t not-run" >>"$logs/gpu-test-times.txt"
      abandoned=$((abandoned + 1))
      continue
    fi
    if [ $(($(left) - reserve)) -lt 10 ]; then
      echo "- ms $t not-run" >>"$logs/gpu-test-times.txt"
      unrun=$((unrun + 1))
      continue
    fi
    run_tests "$t" "$4" "$t" ""
    case $tests_last_rc in
      0 | 1 | 254) died=0 ;;
      *) died=$((died + 1)) ;;  # a crash or a hang again
    esac
  done
  [ $abandoned -gt 0 ] &&
    note "GPU tests $label: two reruns in a row died too; the $abandoned tests after them not run (at most two reruns in a row after a crash or hang)"
  [ $unrun -gt 0 ] && note "GPU tests $label: $unrun tests not rerun, the budget was spent"
  tests_last_rc=$rc
}

# The section of one process group in results.md, from the lines it added.
# tests_section LABEL FROM LOGFROM: FROM and LOGFROM are the line counts of
# gpu-test-times.txt and gpu-tests.log before the group ran.
tests_section() {
  local label=$1 from=$2 logfrom=$3 lines
  lines=$(tail -n +"$((from + 1))" "$logs/gpu-test-times.txt")
  {
    echo
    echo "### $label"
    echo
    if [ -z "$lines" ]; then echo "(no test reported a result)"; return; fi
    echo "$(grep -c ' passed$' <<<"$lines") passed, $(grep -c ' failed' <<<"$lines") failed, $(grep -c ' skipped$' <<<"$lines") skipped, $(grep -c ' not-run$' <<<"$lines") not run."
    if grep -q ' failed' <<<"$lines"; then
      echo; echo "Failed:"; echo; echo '```'; grep ' failed' <<<"$lines"; echo '```'
      # GoogleTest's message of each failure (file:line: Failure and what follows), the first 40 lines.
      echo; echo '```'; tail -n +"$((logfrom + 1))" "$logs/gpu-tests.log" | grep -A4 -E ": Failure$" | head -40; echo '```'
    fi
  } >>"$results"
  snapshot
}

# ---------------------------------------------------------------- 3. the first contact
{
  echo
  echo "## First contact: the newest GPU code"
  echo
  echo "The GpuOps tests of the newest code in one process (a test a process died in is failed, the tests it did not reach rerun one per process, at most two dying in a row), then ResNet-50's --compare of every math mode and its --profile."
} >>"$results"
from=$(wc -l <"$logs/gpu-test-times.txt") logfrom=$(wc -l <"$logs/gpu-tests.log")
if [ -n "$first_tests" ]; then
  run_tests "GpuOps (first contact)" 60 "$(paste -sd: - <<<"$first_tests")" 30
  tests_section "the newest GPU code first (${first_tests//$'\n'/, })" "$from" "$logfrom"
else
  note "no GpuOps test matches the first contact's pattern ($first_re)"
fi
# The math modes on a whole model against the CPU (fp16 and tf32 have never
# run on a GPU before this check), then the device clocks: the per-op time
# from CUDA events around each step.
if [ $doctor_rc -ne 0 ]; then
  note "the first contact's ResNet-50 runs (--compare, --profile) need a usable GPU: not run"
elif [ ! -f "$models/resnet50.onnx" ]; then
  note "no $models/resnet50.onnx: the first contact's ResNet-50 runs did not run"
  bench_ok=0
else
  stage "runmodel resnet50 --compare cpu,cuda,cuda:fp16,cuda:tf32,cuda:bf16" 60 "$logs/compare-resnet50.txt" \
    "$bin/runmodel" "$models/resnet50.onnx" --compare cpu,cuda,cuda:fp16,cuda:tf32,cuda:bf16 --warmup 1 --iterations 3 \
    --top-k 0
  cmp_rc=$?
  if [ $cmp_rc -eq 0 ]; then
    echo "compare resnet50: $(grep -E 'fp16|tf32|agree|differ' "$logs/compare-resnet50.txt" | head -c 1500)" >>"$logs/bench.log"
  elif [ $cmp_rc -eq 8 ]; then
    tests_rc=1
    note "runmodel resnet50 --compare: a math mode differs from the CPU beyond the tolerance (see logs/compare-resnet50.txt)"
  elif [ $cmp_rc -ne 254 ]; then
    bench_ok=0
    note "runmodel resnet50 --compare cpu,cuda,cuda:fp16,cuda:tf32,cuda:bf16 failed, exit $cmp_rc (see logs/compare-resnet50.txt)"
  fi
  if [ $cmp_rc -ne 254 ]; then
    { echo; echo "### resnet50: cpu, cuda, cuda:fp16, cuda:tf32, cuda:bf16 (runmodel --compare, 3 runs each)"; echo; echo '```text'
      head -c 4000 "$logs/compare-resnet50.txt"; echo '```'; } >>"$results"
  fi
  stage "runmodel resnet50 --print-plan --profile" 45 "$logs/runmodel-resnet50-plan.txt" "$bin/runmodel" \
    "$models/resnet50.onnx" --device cuda --iterations 5 --print-plan --profile "$logs/profile-resnet50.json"
  prof_rc=$?
  if [ $prof_rc -eq 0 ]; then
    { echo; echo "### resnet50: per-op device time (runmodel --profile, batch 1, fp32)"; echo; echo '```text'
      sed -n '/^per-op time/,$p' "$logs/runmodel-resnet50-plan.txt" | head -16; echo '```'; } >>"$results"
  elif [ $prof_rc -ne 254 ]; then
    bench_ok=0
    note "runmodel resnet50 --print-plan --profile failed, exit $prof_rc (see logs/runmodel-resnet50-plan.txt)"
  fi
  snapshot
fi

# ---------------------------------------------------------------- 4. the long suites
{
  echo
  echo "## GPU tests (minirt_gpu_tests)"
  echo
  echo "The rest of the op tests in one process, the other suites in one, the model parity in one; a test a process died in is failed, the tests it did not reach rerun one per process, at most two dying in a row (the rest then not run)."
} >>"$results"
from=$(wc -l <"$logs/gpu-test-times.txt") logfrom=$(wc -l <"$logs/gpu-tests.log")
if [ -n "$rest_ops" ]; then
  run_tests "GpuOps (the rest)" 150 "$(paste -sd: - <<<"$rest_ops")" 60
  tests_section "the op tests (the rest of GpuOps.*)" "$from" "$logfrom"
fi
from=$(wc -l <"$logs/gpu-test-times.txt") logfrom=$(wc -l <"$logs/gpu-tests.log")
if [ -n "$other_filter" ]; then
  run_tests "the other suites" 90 "$other_filter" 60
  tests_section "the other suites (${other_filter//:/, })" "$from" "$logfrom"
fi
from=$(wc -l <"$logs/gpu-test-times.txt") logfrom=$(wc -l <"$logs/gpu-tests.log")
if grep -qx GpuModels <<<"$suites"; then
  run_tests "GpuModels.*" 180 "GpuModels.*" 120
  tests_section "model parity (GpuModels.*)" "$from" "$logfrom"
fi
all=$(cat "$logs/gpu-test-times.txt")
grep -q ' failed' <<<"$all" && tests_rc=1
grep -q ' not-run$' <<<"$all" && tests_rc=1
summary="$(grep -c ' passed$' <<<"$all") passed, $(grep -c ' failed' <<<"$all") failed, $(grep -c ' skipped$' <<<"$all") skipped, $(grep -c ' not-run$' <<<"$all") not run"
log "GPU tests: $summary"
{
  echo
  echo "### All GPU tests"
  echo
  echo "$summary."
  echo
  echo "The slowest (ms per test; all in logs.tar.gz's gpu-test-times.txt):"
  echo
  echo '```'
  grep -E '^[0-9]' "$logs/gpu-test-times.txt" | sort -rn | head -10
  echo '```'
  echo
  echo "Model parity (GPU against CPU; pass: max |gpu - cpu| <= 1e-3 max |cpu| + 1e-4):"
  echo
  echo '```'
  grep -E "^parity " "$logs/gpu-tests.log" || echo "(no parity lines: skipped or not reached)"
  echo '```'
  skipped_reason=$(grep -m1 -A1 -E "Skipped$" "$logs/gpu-tests.log" | tail -1)
  [ -n "$skipped_reason" ] && [ $doctor_rc -ne 0 ] && { echo; echo "Skipped because: $skipped_reason"; }
} >>"$results"
snapshot

# ---------------------------------------------------------------- 5. the op cases on the GPU
# The op-case table (tests/op_cases/, made where onnxruntime is and carried
# packed as op_cases.tar.gz) with minirt-conformance --device cuda
# --reference cpu: every case on the GPU against the CPU, per-op-family
# tolerances; cases with nodes left on the CPU are counted apart.
opcases_tar=""
for f in "${MINIRT_CHECK_OP_CASES:-}" "$root/.gpu-carry/op_cases.tar.gz" "$build/op_cases.tar.gz"; do
  [ -n "$f" ] && [ -f "$f" ] && { opcases_tar=$f; break; }
done
opcases_line=""
if [ ! -x "$bin/minirt-conformance" ]; then
  opcases_line="not run: the build has no minirt-conformance"
elif [ -z "$opcases_tar" ]; then
  opcases_line="not run: no op_cases.tar.gz carried (tools/gpu-carry.sh makes it where onnxruntime is)"
elif ! bounded 60 tar xzf "$opcases_tar" -C "$work" 2>"$logs/op-cases-unpack.log" || [ ! -d "$work/op_cases" ]; then
  opcases_line="not run: $opcases_tar does not unpack into op_cases/ (see logs/op-cases-unpack.log)"
else
  stage "op cases on the GPU" 100 "$logs/op-cases-gpu.log" "$bin/minirt-conformance" --device cuda --reference cpu \
    --verbose "$work/op_cases"
  oc_rc=$?
  oc_summary=$(grep -E "passed on cuda" "$logs/op-cases-gpu.log" | tail -1)
  case $oc_rc in
    0) opcases_line="$oc_summary" ;;
    3) opcases_line="$(head -1 "$logs/op-cases-gpu.log")" ;;
    254) opcases_line="not run: the time budget was spent" ;;
    124 | 137) opcases_line="stopped by its time limit after $(grep -cE "^(PASS|FALLBACK|FAIL|SKIP) " "$logs/op-cases-gpu.log") of $(ls "$work/op_cases" | wc -l) cases" ;;
    *) opcases_line="exit $oc_rc: ${oc_summary:-$(tail -1 "$logs/op-cases-gpu.log")}" ;;
  esac
  [ $oc_rc -eq 1 ] && tests_rc=1
  [ $oc_rc -ne 0 ] && [ $oc_rc -ne 3 ] && [ $oc_rc -ne 254 ] && note "op cases on the GPU: $opcases_line"
fi
log "op cases on the GPU: $opcases_line"
{
  echo
  echo "## Op cases on the GPU (minirt-conformance --device cuda --reference cpu)"
  echo
  echo "$opcases_line."
  if [ -f "$logs/op-cases-gpu.log" ] && grep -q "^FAIL " "$logs/op-cases-gpu.log"; then
    echo; echo "Failed (the first 20; all in logs/op-cases-gpu.log):"; echo; echo '```'
    grep "^FAIL " "$logs/op-cases-gpu.log" | head -20 | cut -c1-400
    echo '```'
  fi
  if [ -f "$logs/op-cases-gpu.log" ] && grep -q "^FALLBACK " "$logs/op-cases-gpu.log"; then
    echo; echo "Nodes left on the CPU, by reason (cases):"; echo; echo '```'
    grep "^FALLBACK " "$logs/op-cases-gpu.log" | sed -n 's/^[^(]* on cpu (\(.*\))$/\1/p' | sort | uniq -c | sort -rn | head -25
    echo '```'
  fi
} >>"$results"
snapshot

if [ $tests_rc -ne 0 ] && [ $status -eq 0 ]; then status=4; fi
if [ "$(left)" -lt 120 ]; then note "little time is left for the benchmark ($(left) s)"; fi

if [ $doctor_rc -ne 0 ]; then
  note "the benchmark needs a usable GPU: not run"
  finish
fi


# ---------------------------------------------------------------- 6. tuning
export MINIRT_ALGO_CACHE=$work/algo_cache.txt
if [ -x "$bin/convprof" ] && [ -f "$models/resnet50.onnx" ]; then
  cat >"$work/convprof_summary.py" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'layer':<28} {'conv':<24} {'pick':<34} {'ms':>8} {'heuristic':<34} {'x heur':>6}")
for l in d.get("layers", []):
    ms = {c["algorithm"]: c.get("median_ms") for c in l.get("candidates", [])}
    t = ms.get(l.get("pick"))
    print(f"{str(l.get('node'))[:28]:<28} {str(l.get('conv'))[:24]:<24} {str(l.get('pick')):<34} "
          f"{(f'{t:.4f}' if t is not None else '-'):>8} {str(l.get('heuristic')):<34} "
          f"{l.get('speedup_vs_heuristic') or 0:>6.2f}")
PY
  # One measurement per math mode: the JSON (summarized below, whole in
  # logs.tar.gz) and the SVG from the same run.
  for math in fp32 tf32; do
    if stage "convprof resnet50 $math" 150 "$logs/convprof-resnet50-$math.log" \
      bash -c '"$@" >"$0"' "$logs/convprof-resnet50-$math.json" \
      "$bin/convprof" "$models/resnet50.onnx" --device cuda --math "$math" --repeats 5 --json \
      --svg "$logs/convprof-resnet50-$math.svg"; then
      [ "$math" = fp32 ] && cp "$logs/convprof-resnet50-fp32.svg" "$outdir/convprof.svg" 2>/dev/null
    else
      note "convprof resnet50 $math failed (see logs/convprof-resnet50-$math.log)"
    fi
    {
      echo
      echo "## Convolution algorithms on the GPU (convprof, ResNet-50, $math)"
      echo
      echo '```'
      if [ -n "$py" ] && [ -s "$logs/convprof-resnet50-$math.json" ]; then
        bounded 30 "$py" "$work/convprof_summary.py" "$logs/convprof-resnet50-$math.json" 2>&1
      else
        tail -n 20 "$logs/convprof-resnet50-$math.log" 2>/dev/null
      fi
      echo '```'
    } >>"$results"
    snapshot
  done
  for mode in exhaustive cached; do
    stage "runmodel --tune $mode" 120 "$logs/tune-$mode.txt" "$bin/runmodel" "$models/resnet50.onnx" --device cuda \
      --tune "$mode" --algo-cache "$work/tune_cache.txt" --iterations 20 --top-k 0 --verbose ||
      note "runmodel --tune $mode failed (see logs/tune-$mode.txt)"
  done
  {
    echo
    echo "runmodel --tune exhaustive, then cached on the same cache file:"
    echo
    echo '```'
    grep -hE "^tuning:|^latency" "$logs/tune-exhaustive.txt" "$logs/tune-cached.txt" 2>/dev/null
    echo '```'
  } >>"$results"
  snapshot
else
  note "convprof or resnet50.onnx missing: the GPU tuning stage did not run"
fi

# ---------------------------------------------------------------- 7. benchmark
for m in resnet50 mobilenetv2; do
  [ -f "$models/$m.onnx" ] || { note "no $models/$m.onnx: $m not benchmarked"; bench_ok=0; continue; }
  for b in 1 32; do
    for math in fp32 tf32; do
      iters=50; [ $b -eq 32 ] && iters=30
      if stage "runmodel $m batch $b $math" 90 "$logs/runmodel-$m-b$b-$math.json" "$bin/runmodel" "$models/$m.onnx" \
        --device cuda --math "$math" --shape "input=${b}x3x224x224" --warmup 10 --iterations "$iters" --top-k 0 --json; then
        echo "runmodel $m batch $b $math: $(head -c 2000 "$logs/runmodel-$m-b$b-$math.json")" >>"$logs/bench.log"
      else
        bench_ok=0
        echo "runmodel $m batch $b $math FAILED: $(tail -3 "$logs/runmodel-$m-b$b-$math.json")" >>"$logs/bench.log"
      fi
    done
  done
  # MobileNetV2's text run for the log (ResNet-50's was the first contact's):
  # the placement line, the device phases and the per-op profile, each GPU
  # step timed by its own CUDA events (the trace in logs.tar.gz; the
  # summary's head in results.md).
  if [ "$m" != resnet50 ]; then
    if stage "runmodel $m --print-plan --profile" 60 "$logs/runmodel-$m-plan.txt" "$bin/runmodel" "$models/$m.onnx" \
      --device cuda --iterations 5 --print-plan --profile "$logs/profile-$m.json"; then
      { echo; echo "## $m: per-op device time (runmodel --profile, batch 1, fp32)"; echo; echo '```text'
        sed -n '/^per-op time/,$p' "$logs/runmodel-$m-plan.txt" | head -16; echo '```'; } >>"$results"
    else
      note "runmodel $m --print-plan --profile failed (see logs/runmodel-$m-plan.txt)"
    fi
  fi
  # The tensor-core modes against the CPU on a whole model: outputs within
  # --compare's tensor-core tolerance, and their latency next to each other
  # (ResNet-50's, every mode, was the first contact's).
  modes=cpu,cuda,cuda:tf32,cuda:fp16,cuda:bf16
  if [ "$m" = resnet50 ]; then
    snapshot
    continue
  fi
  if stage "runmodel $m --compare $modes" 90 "$logs/compare-$m-bench.txt" \
    "$bin/runmodel" "$models/$m.onnx" --compare "$modes" --warmup 3 --iterations 10 --top-k 0; then
    echo "compare $m: $(grep -E 'bf16|fp16|tf32|agree|differ' "$logs/compare-$m-bench.txt" | head -c 1500)" >>"$logs/bench.log"
    { echo; echo "## $m: ${modes//,/, } (runmodel --compare)"; echo; echo '```text'
      head -c 4000 "$logs/compare-$m-bench.txt"; echo '```'; } >>"$results"
  else
    note "runmodel $m --compare $modes failed or disagreed (see logs/compare-$m-bench.txt)"
  fi
  snapshot
done
torch_ok=0
if [ -n "$py" ] && bounded 60 "$py" -c "import torch" 2>/dev/null; then
  if stage "PyTorch eager benchmark" 200 "$logs/torch-bench.json" "$py" "$root/tools/gpu_bench_torch.py" \
    --models resnet50 mobilenetv2 --batches 1 32 --math fp32 tf32; then
    torch_ok=1
  else
    note "the PyTorch benchmark failed (see logs/torch-bench.json)"
  fi
  cat "$logs/torch-bench.json" >>"$logs/bench.log" 2>/dev/null
else
  note "no PyTorch at ${py:-python3}: minirt is benchmarked alone"
fi
if [ -n "$py" ]; then
  bounded 30 "$py" "$root/tools/gpu_check_report.py" "$logs" "$torch_ok" >>"$results" 2>>"$logs/report.stderr" ||
    note "the benchmark table could not be written (see logs/report.stderr)"
fi
# ---------------------------------------------------------------- 8. fallback demo
# The machine's own stack (the GPU row) and the eight broken ones, replayed,
# with --full only: the broken ones are fake libraries and need no GPU
# (tools/fallback-demo.sh runs them on any machine), so a first contact
# keeps its device time for what only a GPU can show.
fakes=""
for d in "$build/lib/gpu-fakes" "$build/tests/gpu_fakes"; do [ -f "$d/libcuda.so.1" ] && { fakes=$d; break; }; done
if [ $full -eq 0 ]; then
  note "the fallback demo is not run on a first contact (its fake-library scenarios need no GPU: tools/fallback-demo.sh runs them on any machine; --full runs it here, last)"
elif [ -n "$fakes" ] && [ -f "$models/resnet18.onnx" ]; then
  if stage "fallback demo" 90 "$logs/fallback-demo.txt" env MINIRT_BIN="$bin" MINIRT_GPU_FAKES="$fakes" \
    MINIRT_DEMO_ITERATIONS=10 "$root/tools/fallback-demo.sh" "$models/resnet18.onnx" "$logs/fallback"; then
    { echo; echo "## Fallback demo (tools/fallback-demo.sh, resnet18)"; echo; tail -n +3 "$logs/fallback/fallback.md"; } >>"$results"
    snapshot
  else
    note "the fallback demo failed (see logs/fallback-demo.txt)"
  fi
else
  note "the fallback demo did not run: no fake CUDA libraries (carry lib/gpu-fakes) or no resnet18.onnx"
fi

[ $bench_ok -eq 1 ] || { note "some benchmark runs failed (see bench.log)"; [ $status -eq 0 ] && status=5; }
finish
