#!/usr/bin/env bash
# bf16 math on the CPU against onnxruntime's float32 (ctest models.bf16_vs_onnxruntime).
#
#   tests/run_bf16_model_tests.sh --bin BUILD/bin --build BUILD
#
# Reads the cases models.generated_vs_onnxruntime wrote (BUILD/model_tests:
# the generated models, ../shared/models and ONNX's light models, each with
# onnxruntime's float32 outputs; ctest runs that test first, a fixture) and
# runs minirt-conformance on them with MathMode::kBf16, judged by the
# accuracy bar of issue 24, per output:
#   scaled error  max|minirt - onnxruntime| / max|onnxruntime| <= the case's
#   bar: 1e-2; 5e-2 for MobileNetV2 (min(2x OpenVINO's 3e-2, 5e-2), the
#   issue's rule); 3e-2 for yolov5s_like, a detector whose sigmoid outputs
#   carry the rounding of 60 convolutions (OpenVINO's default bf16 is at 0.19
#   and 0.97 on the real detectors of issue 24's table); 5e-2 for dbnet_like,
#   the PP-OCR-like text detector, by the issue's rule (OpenVINO's default
#   is at 3.7e-2 on its probability map, bench/results_cpu.md), and
#   classifiers ([N, classes] outputs) keep every row's top-1.
# Each instruction set this CPU has runs: AMX with the rules' choices, then
# AVX512_BF16 alone (MINIRT_CPU_ISA=avx512_bf16, AMX masked) with every
# convolution it takes forced onto it (--tune nchwc_bf16: the rules would
# keep float32 there), then a cap below bf16 (MINIRT_CPU_ISA=avx512), where
# --math bf16 must run float32 and say why. A CPU without bf16 instructions
# runs only the last (the fallback), and says so. Last, every op case under
# --math bf16 (integers exact, floats within 1e-2: a lone op stays float32 by
# the policy), and the float16 models under --math bf16.
set -euo pipefail

bin="" build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    *) echo "run_bf16_model_tests.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$bin" ] || [ -z "$build" ]; then
  echo "usage: run_bf16_model_tests.sh --bin BUILD/bin --build BUILD" >&2
  exit 2
fi
cases="$build/model_tests"
if [ ! -d "$cases/resnet50" ]; then
  echo "run_bf16_model_tests: no cases in $cases; models.generated_vs_onnxruntime makes them (ctest runs it first)" >&2
  exit 1
fi
threads=2
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $flags " == *" $1 "* ]]; }
status=0

# One pass over every case; $1 names the pass, the rest are extra options.
# The bar of a case: 5e-2 for MobileNetV2 (OpenVINO's default bf16 is at 3e-2
# there, issue 24's table: the bar is min(2x that, 5e-2)), 3e-2 for the
# YOLO-like detector, 1e-2 for the rest.
bar_of() {
  case "$1" in
    mobilenetv2*) echo 5e-2 ;;
    yolov5s_like*) echo 3e-2 ;;
    dbnet_like*) echo 5e-2 ;;
    *) echo 1e-2 ;;
  esac
}

# One pass over every case at the loosest bar, then each case's largest
# scaled error against its own bar. $1 names the pass, the rest are options.
run_pass() {
  local label=$1 out line name worst bar
  shift
  echo "== $label"
  out=$("$bin/minirt-conformance" --verbose --threads "$threads" --math bf16 "$@" --scaled-error 5e-2 "$cases" || true)
  grep -v '^PASS light_' <<<"$out" || true
  if grep -qE '^(FAIL|SKIP)' <<<"$out"; then status=1; fi
  while IFS= read -r line; do
    name=${line#PASS }
    name=${name%%:*}
    worst=$(grep -oE 'scaled error [0-9.e+-]+' <<<"$line" | awk '{ if ($3 > m) m = $3 } END { printf "%g", m + 0 }')
    bar=$(bar_of "$name")
    if awk -v w="$worst" -v b="$bar" 'BEGIN { exit !(w > b) }'; then
      echo "FAIL $name: scaled error $worst above its bar $bar ($label)"
      status=1
    fi
  done < <(grep '^PASS ' <<<"$out")
}

# What --math bf16 runs on this CPU, as runmodel says it.
say_math() {
  "$bin/runmodel" "$build/models/resnet18.onnx" --device cpu --math bf16 --iterations 1 --warmup 0 --tune heuristic |
    grep -E '^cpu math:' || true
}

if has amx_bf16 && has amx_tile; then
  echo "$(say_math)"
  run_pass "AMX (the rules' choices)" --tune heuristic
  # The policy's last layers, in the plan: SqueezeNet's classifier convolution,
  # averaged into the logits, runs bf16; the YOLO-like detector's heads, read
  # by the outputs as they are, stay float32.
  plan_of() {
    "$bin/runmodel" "$build/models/$1.onnx" --device cpu --math bf16 --iterations 1 --warmup 0 --tune heuristic \
      --print-plan | grep -F -- " $2 " || true
  }
  line=$(plan_of squeezenet1_1 classifier.1+classifier.2)
  if [[ $line != *"precision bf16"* ]]; then
    echo "FAIL: SqueezeNet's averaged classifier convolution did not run bf16: '$line'"
    status=1
  fi
  # A classifier's fully connected layer (its input pooled over pixels) runs
  # bf16 too, on AVX512_BF16 (gemm_bf16.h): ResNet-50's fc and MobileNetV2's.
  for fc in "resnet50 fc" "mobilenetv2 classifier.1"; do
    line=$(plan_of $fc)
    if [[ $line != *"precision bf16"* || $line != *"bf16_gemm"* ]]; then
      echo "FAIL: the classifier product '$fc' did not run bf16: '$line'"
      status=1
    fi
  done
  for head in model.24.m.0 model.24.m.1 model.24.m.2; do
    line=$(plan_of yolov5s_like "$head")
    if [[ -z $line || $line == *"precision bf16"* ]]; then
      echo "FAIL: the YOLO-like head $head is not a float32 step: '$line'"
      status=1
    fi
  done
fi
if has avx512_bf16; then
  echo "$(MINIRT_CPU_ISA=avx512_bf16 say_math)"
  MINIRT_CPU_ISA=avx512_bf16 run_pass "AVX512_BF16 alone (AMX masked), every convolution it takes" --tune nchwc_bf16
else
  echo "note: this CPU has no AVX512_BF16: the bf16 kernels are tested only by the unit tests' reference here"
fi
if has avx512f; then
  line=$(MINIRT_CPU_ISA=avx512 say_math)
  echo "$line"
  # Why float32: the cap where the CPU has bf16 instructions, else the CPU
  # itself (an Intel Xeon whose hypervisor hides AVX512_BF16 and AMX).
  if has avx512_bf16; then
    why="MINIRT_CPU_ISA=avx512 caps the kernels below"
  else
    why="this CPU has no AVX512_BF16 or AMX-BF16 instructions"
  fi
  if [[ $line != *"fp32 (MathMode::kBf16 asked): $why"* ]]; then
    echo "FAIL: with MINIRT_CPU_ISA=avx512, --math bf16 did not say it runs float32 and why ($why): '$line'"
    status=1
  fi
  # float32 there: the ordinary tolerance holds.
  out=$(MINIRT_CPU_ISA=avx512 "$bin/minirt-conformance" --threads "$threads" --math bf16 --rtol 1e-4 --atol 1e-5 \
    "$cases" || true)
  echo "${out##*$'\n'} (bf16 asked, bf16 left out by MINIRT_CPU_ISA=avx512: float32 tolerance)"
  if grep -q '^FAIL' <<<"$out"; then
    grep '^FAIL' <<<"$out"
    status=1
  fi
fi
# A pass over a folder of cases another test makes (a ctest fixture), with the
# rules' choices (--tune heuristic, so no cache decides): every case runs and
# passes. $1 the folder, $2 what it is, $3 the test that makes it, the rest
# minirt-conformance options.
fixture_pass() {
  local dir=$1 what=$2 maker=$3 out
  shift 3
  if [ ! -d "$dir" ]; then
    echo "FAIL: no $what in $dir; $maker makes them (ctest runs it first)"
    status=1
    return
  fi
  out=$("$bin/minirt-conformance" --threads "$threads" --math bf16 --tune heuristic "$@" "$dir" || true)
  echo "$what under --math bf16 ($*): ${out##*$'\n'}"
  if grep -qE '^(FAIL|SKIP)' <<<"$out"; then
    grep -E '^(FAIL|SKIP)' <<<"$out"
    status=1
  fi
}
# Every op case: integer and boolean outputs exact, float outputs within a
# scaled error of 1e-2. A lone op is its model's last layer, float32 by the
# accuracy policy (about 1e-6 here); the few cases with a convolution feeding
# another product run it in bf16 (LpPool between two convolutions: 5e-4).
fixture_pass "$build/op_cases" "op cases" conformance.op_grid_vs_onnxruntime --scaled-error 1e-2
# The float16 models (their weights lowered to float32 at load), against
# onnxruntime on the float16 model: the bars above plus float16's own rounding.
fixture_pass "$build/f16_models/cases" "float16 models" models.float16_vs_onnxruntime --scaled-error 5e-2
[ "$status" = 0 ] && echo "bf16 models: every pass within its bar"
exit "$status"
