#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU, from the repository root,
#
#   tools/gpu-check.sh OUTDIR
#
# uses the build carried from another machine (.gpu-carry/, made there by
# tools/gpu-carry.sh; or MINIRT_CHECK_BUILD=DIR for a build folder with
# bin/ and lib/), or builds one when that cannot run here and CMake,
# protobuf, Eigen and GoogleTest are installed; then
#   1. minirt-doctor (text and --json): the stack and the decision;
#   2. minirt_gpu_tests, each test in a process of its own: every GPU op
#      against the CPU kernels, and CPU-vs-GPU
#      parity of every model: the generated ones, made here by
#      minirt-make-models, and the shared ones carried in .gpu-carry/models;
#   2b. the op-case table (tests/op_cases/, carried as .gpu-carry/op_cases.tar.gz
#      or MINIRT_CHECK_OP_CASES) on the GPU against the CPU with
#      minirt-conformance --device cuda --reference cpu (at most 100 s; cases
#      whose nodes fell back to the CPU are listed apart, by reason);
#   3. convprof on the GPU: every cuDNN algorithm of every convolution of
#      ResNet-50 (fp32 and tf32), as a table, JSON and SVG, and runmodel
#      --tune exhaustive then cached on one algorithm cache (the second must
#      measure nothing);
#   4. a benchmark of ResNet-50 and MobileNetV2 at batch 1 and 32 with
#      runmodel --device cuda (fp32 and tf32), against PyTorch eager with
#      torch.backends.cudnn.benchmark=True on the same architectures with
#      random weights (tools/gpu_bench_torch.py; torchvision's models when
#      torchvision is installed, the script's own definitions otherwise);
# and writes into OUTDIR at most 8 files, as the GPU machine returns no more
# (`tools/gpu-check.sh --outputs` lists them): results.md (date, GPU,
# driver, library versions, the doctor's decision, test and parity results,
# the benchmark table), doctor.txt, doctor.json, gpu-tests.log, bench.log,
# convprof.svg (ResNet-50's algorithms under fp32) and logs.tar.gz (every
# log, the convprof tables and JSON of both math modes included). The NVIDIA libraries of a Python environment's pip wheels
# (MINIRT_CHECK_PYTHON, default /opt/torch/.venv/bin/python, else python3) are put on
# LD_LIBRARY_PATH and MINIRT_CUDA_PATH. The whole run keeps to
# MINIRT_CHECK_BUDGET seconds (default 520): a stage that would start later
# is skipped and says so.
#
# Exit status: 0 everything ran and passed; 1 bad command line; 2 no usable
# GPU (results.md says why); 3 no build that runs here; 4 GPU tests, parity
# or an op case on the GPU failed; 5 the benchmark failed.
set -uo pipefail

# Every file the check may write into OUTDIR (a test holds this to 8).
outputs=(results.md doctor.txt doctor.json gpu-tests.log bench.log convprof.svg logs.tar.gz)
if [ "${1:-}" = "--outputs" ] && [ $# -eq 1 ]; then
  printf '%s\n' "${outputs[@]}"
  exit 0
fi
if [ $# -ne 1 ] || [ "${1:0:1}" = "-" ]; then
  echo "usage: tools/gpu-check.sh OUTDIR   (or --outputs: the files it may write there)" >&2
  exit 1
fi
cd "$(dirname "$0")/.."
root=$PWD
outdir=$1
mkdir -p "$outdir" || exit 1
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d /tmp/minirt-gpu-check.XXXXXX)
logs=$work/logs
mkdir -p "$logs"
start=$(date +%s)
budget=${MINIRT_CHECK_BUDGET:-520}
results=$outdir/results.md
status=0
notes=()

elapsed() { echo $(($(date +%s) - start)); }
left() { echo $((budget - $(elapsed))); }
log() { echo "[gpu-check $(elapsed)s] $*" | tee -a "$logs/gpu-check.log"; }
note() { notes+=("$*"); log "$*"; }
# Runs a stage with a time limit no later than the budget allows.
# stage NAME SECONDS LOGFILE CMD...
stage() {
  local name=$1 limit=$2 logfile=$3
  shift 3
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 15 ]; then
    note "skipped $name: the time budget ($budget s) is spent"
    return 124
  fi
  [ "$limit" -gt "$((remaining - 10))" ] && limit=$((remaining - 10))
  log "$name (at most ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$logfile" 2>&1
  local rc=$?
  [ $rc -eq 124 ] && note "$name ran out of its ${limit}s and was stopped"
  return $rc
}

finish() {
  {
    echo
    echo "## Notes"
    echo
    if [ ${#notes[@]} -eq 0 ]; then echo "none"; fi
    for n in "${notes[@]}"; do echo "- $n"; done
    echo
    echo "Whole check: $(elapsed) s of a $budget s budget; exit status $status."
  } >>"$results"
  cp "$results" "$logs/" 2>/dev/null
  for f in doctor.txt doctor.json gpu-tests.log bench.log; do
    [ -f "$logs/$f" ] && cp "$logs/$f" "$outdir/"
  done
  log "done: $results (exit $status)"
  tar czf "$outdir/logs.tar.gz" -C "$work" logs 2>/dev/null
  rm -rf "$work"
  exit "$status"
}

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
  if timeout 30 nvidia-smi >"$logs/nvidia-smi.txt" 2>&1; then
    gpu_line=$(timeout 20 nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1)
    driver=$(timeout 20 nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
  else
    gpu_line="nvidia-smi failed: $(head -1 "$logs/nvidia-smi.txt")"
  fi
fi

{
  echo "# minirt GPU check"
  echo
  echo "| | |"
  echo "| --- | --- |"
  echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
  echo "| host | $(uname -n), $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(nproc) CPUs |"
  echo "| GPU | $gpu_line |"
  echo "| driver | ${driver:-unknown} |"
  echo "| Python for the NVIDIA wheels and PyTorch | ${py:-none} |"
  echo "| library folders added | ${libdirs[*]:-none} |"
} >"$results"

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
    nf=$(ldd "$f" 2>&1 | grep "not found" | awk '{print $1}' | tr '\n' ' ')
    [ -n "$nf" ] && missing+=" $(basename "$f") needs: $nf;"
  done
  if [ -z "$missing" ] && ! "$b/bin/minirt-doctor" --help >/dev/null 2>&1; then
    missing=" minirt-doctor does not start here: $("$b/bin/minirt-doctor" --help 2>&1 | head -2 | tr '\n' ' ')"
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
      why_not+="building here failed (see logs/build.log). "
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
ldd "$build/lib/libminirt_cuda.so" >"$logs/ldd-module.txt" 2>&1

# ---------------------------------------------------------------- 1. the doctor
"$bin/minirt-doctor" --verbose >"$logs/doctor.txt" 2>&1
doctor_rc=$?
"$bin/minirt-doctor" --json >"$logs/doctor.json" 2>>"$logs/doctor.stderr"
decision=$(grep -E "^decision:" "$logs/doctor.txt" | head -1)
libs=""
if [ -n "$py" ]; then
  libs=$("$py" - "$logs/doctor.json" <<'PY' 2>/dev/null
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
)
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

# ---------------------------------------------------------------- 2. tests and parity
models=$work/models
stage "generating models" 120 "$logs/make-models.log" "$bin/minirt-make-models" --out "$models" ||
  note "minirt-make-models failed (see logs/make-models.log)"
model_path=$models
if [ -d "$build/models" ] && ls "$build"/models/*.onnx >/dev/null 2>&1; then model_path+=":$build/models"; fi
if [ -d "$root/../shared/models" ]; then model_path+=":$root/../shared/models"; fi
export MINIRT_GPU_TEST_MODELS=$model_path
# Each test in a process of its own: a CUDA error that poisons a context,
# or a hang, then costs one test, not the rest.
: >"$logs/gpu-tests.log"
passed=0 failedn=0 skipped=0 failed_names=""
tests_rc=0
# The op tests first (short, and the most to learn from a first contact),
# the model parity tests (long) last, so a budget running out costs those.
names=$("$bin/minirt_gpu_tests" --gtest_list_tests 2>>"$logs/gpu-tests.log" |
  awk '/^[^ ]/ {suite=$1} /^  [^ ]/ {print suite $1}' | awk '/^GpuModels\./ {last[++n]=$0; next} {print} END {for (i = 1; i <= n; ++i) print last[i]}')
: >"$logs/gpu-test-times.txt"
[ -n "$names" ] || { note "minirt_gpu_tests lists no tests"; tests_rc=1; }
tests_start=$(date +%s)
for t in $names; do
  if [ "$(left)" -lt 60 ] || [ $(($(date +%s) - tests_start)) -gt 240 ]; then
    note "GPU tests stopped at $t: the time for them is spent"
    tests_rc=1
    break
  fi
  limit=90
  case "$t" in GpuModels.*) limit=180 ;; esac
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$bin/minirt_gpu_tests" --gtest_filter="$t" --gtest_color=no >"$work/one.log" 2>&1
  rc=$?
  echo "$(($(date +%s) - t0)) s $t (exit $rc)" >>"$logs/gpu-test-times.txt"
  cat "$work/one.log" >>"$logs/gpu-tests.log"
  if [ $rc -eq 0 ] && grep -q "^\[  SKIPPED \] 1 test" "$work/one.log"; then
    skipped=$((skipped + 1))
  elif [ $rc -eq 0 ]; then
    passed=$((passed + 1))
  else
    failedn=$((failedn + 1))
    tests_rc=1
    why="exit $rc"; [ $rc -eq 124 ] && why="timed out after $limit s"
    failed_names+="$t ($why)"$'\n'
  fi
done
log "GPU tests: $passed passed, $failedn failed, $skipped skipped"
summary="$passed passed, $failedn failed, $skipped skipped (each test in its own process)"
{
  echo
  echo "## GPU tests (minirt_gpu_tests)"
  echo
  echo "$summary."
  echo
  if [ -n "$failed_names" ]; then echo "Failed:"; echo; echo '```'; printf '%s' "$failed_names"; echo '```'; echo; fi
  echo "The slowest (seconds per process, each re-probing the stack; all in logs/gpu-test-times.txt):"
  echo
  echo '```'
  sort -rn "$logs/gpu-test-times.txt" 2>/dev/null | head -5
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

# ---------------------------------------------------------------- 2b. the op cases on the GPU
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
elif ! tar xzf "$opcases_tar" -C "$work" 2>"$logs/op-cases-unpack.log" || [ ! -d "$work/op_cases" ]; then
  opcases_line="not run: $opcases_tar does not unpack into op_cases/ (see logs/op-cases-unpack.log)"
else
  stage "op cases on the GPU" 100 "$logs/op-cases-gpu.log" "$bin/minirt-conformance" --device cuda --reference cpu \
    --verbose "$work/op_cases"
  oc_rc=$?
  oc_summary=$(grep -E "passed on cuda" "$logs/op-cases-gpu.log" | tail -1)
  case $oc_rc in
    0) opcases_line="$oc_summary" ;;
    3) opcases_line="$(head -1 "$logs/op-cases-gpu.log")" ;;
    124 | 137) opcases_line="stopped by its time limit after $(grep -cE "^(PASS|FALLBACK|FAIL|SKIP) " "$logs/op-cases-gpu.log") of $(ls "$work/op_cases" | wc -l) cases" ;;
    *) opcases_line="exit $oc_rc: ${oc_summary:-$(tail -1 "$logs/op-cases-gpu.log")}" ;;
  esac
  [ $oc_rc -eq 1 ] && tests_rc=1
  [ $oc_rc -ne 0 ] && [ $oc_rc -ne 3 ] && note "op cases on the GPU: $opcases_line"
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

if [ $tests_rc -ne 0 ] && [ $status -eq 0 ]; then status=4; fi
if [ "$(left)" -lt 120 ]; then note "little time is left for the benchmark ($(left) s)"; fi

if [ $doctor_rc -ne 0 ]; then
  note "the benchmark needs a usable GPU: not run"
  finish
fi

# ---------------------------------------------------------------- 3. tuning
export MINIRT_ALGO_CACHE=$work/algo_cache.txt
if [ -x "$bin/convprof" ] && [ -f "$models/resnet50.onnx" ]; then
  for math in fp32 tf32; do
    if stage "convprof resnet50 $math" 150 "$logs/convprof-resnet50-$math.txt" "$bin/convprof" "$models/resnet50.onnx" \
      --device cuda --math "$math" --repeats 5 --svg "$logs/convprof-resnet50-$math.svg"; then
      # The JSON (a second measurement) within the budget like every stage;
      # it and the tables travel in logs.tar.gz, the fp32 chart as convprof.svg.
      stage "convprof resnet50 $math json" 150 "$logs/convprof-json-$math.log" \
        bash -c '"$@" >"$0"' "$logs/convprof-resnet50-$math.json" \
        "$bin/convprof" "$models/resnet50.onnx" --device cuda --math "$math" --repeats 5 --json ||
        note "convprof resnet50 $math --json failed or ran out of time"
      [ "$math" = fp32 ] && cp "$logs/convprof-resnet50-fp32.svg" "$outdir/convprof.svg" 2>/dev/null
    else
      note "convprof resnet50 $math failed (see logs/convprof-resnet50-$math.txt)"
    fi
  done
  for mode in exhaustive cached; do
    stage "runmodel --tune $mode" 120 "$logs/tune-$mode.txt" "$bin/runmodel" "$models/resnet50.onnx" --device cuda \
      --tune "$mode" --algo-cache "$work/tune_cache.txt" --iterations 20 --top-k 0 --verbose ||
      note "runmodel --tune $mode failed (see logs/tune-$mode.txt)"
  done
  {
    echo
    echo "## Convolution algorithms on the GPU (convprof, ResNet-50)"
    echo
    for math in fp32 tf32; do
      echo "### $math"
      echo
      echo '```'
      tail -n 40 "$logs/convprof-resnet50-$math.txt" 2>/dev/null
      echo '```'
      echo
    done
    echo "runmodel --tune exhaustive, then cached on the same cache file:"
    echo
    echo '```'
    grep -hE "^tuning:|^latency" "$logs/tune-exhaustive.txt" "$logs/tune-cached.txt" 2>/dev/null
    echo '```'
  } >>"$results"
else
  note "convprof or resnet50.onnx missing: the GPU tuning stage did not run"
fi

# ---------------------------------------------------------------- 3b. fallback demo
# The machine's own stack (the GPU row) and the eight broken ones, replayed.
fakes=""
for d in "$build/lib/gpu-fakes" "$build/tests/gpu_fakes"; do [ -f "$d/libcuda.so.1" ] && { fakes=$d; break; }; done
if [ -n "$fakes" ] && [ -f "$models/resnet18.onnx" ]; then
  if stage "fallback demo" 90 "$logs/fallback-demo.txt" env MINIRT_BIN="$bin" MINIRT_GPU_FAKES="$fakes" \
    MINIRT_DEMO_ITERATIONS=10 "$root/tools/fallback-demo.sh" "$models/resnet18.onnx" "$logs/fallback"; then
    { echo; echo "## Fallback demo (tools/fallback-demo.sh, resnet18)"; echo; tail -n +3 "$logs/fallback/fallback.md"; } >>"$results"
  else
    note "the fallback demo failed (see logs/fallback-demo.txt)"
  fi
else
  note "the fallback demo did not run: no fake CUDA libraries (carry lib/gpu-fakes) or no resnet18.onnx"
fi

# ---------------------------------------------------------------- 4. benchmark
bench_ok=1
: >"$logs/bench.log"
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
  # One text run for the log: the placement line and the device phases.
  timeout 90 "$bin/runmodel" "$models/$m.onnx" --device cuda --iterations 5 --print-plan >"$logs/runmodel-$m-plan.txt" 2>&1
done
torch_ok=0
if [ -n "$py" ] && "$py" -c "import torch" 2>/dev/null; then
  if stage "PyTorch eager benchmark" 200 "$logs/torch-bench.json" "$py" "$root/tools/gpu_bench_torch.py" \
    --models resnet50 mobilenetv2 --batches 1 32 --math fp32 tf32; then
    torch_ok=1
  else
    note "the PyTorch benchmark failed (see logs/torch-bench.json)"
  fi
  cat "$logs/torch-bench.json" >>"$logs/bench.log"
else
  note "no PyTorch at ${py:-python3}: minirt is benchmarked alone"
fi
if [ -n "$py" ]; then
  "$py" "$root/tools/gpu_check_report.py" "$logs" "$torch_ok" >>"$results" 2>>"$logs/report.stderr" ||
    note "the benchmark table could not be written (see logs/report.stderr)"
fi
[ $bench_ok -eq 1 ] || { note "some benchmark runs failed (see bench.log)"; [ $status -eq 0 ] && status=5; }
finish
