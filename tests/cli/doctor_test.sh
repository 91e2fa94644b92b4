#!/usr/bin/env bash
# minirt-doctor end to end: the options, the exit codes, --json that parses,
# --assume cases that name the right fix, the real probe of this machine
# (whatever it has, it must not crash), and fake drivers put in front of the
# loader with LD_LIBRARY_PATH and MINIRT_CUDA_PATH (tests/gpu_fakes/).
#   doctor_test.sh BIN_DIR FAKES_DIR [PYTHON]
set -uo pipefail
bin=$1
fakes=$2
py=${3:-python3}
[ -x "$py" ] || py=python3
doctor=$bin/minirt-doctor
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/expect.sh"

# json_check PYTHON-EXPRESSION -- command...: the command's stdout parses as
# JSON (bound to d) and the expression holds; `status` is the exit code.
json_check() {
  local expr=$1
  shift 2
  local out status
  out=$("$@")
  status=$?
  if ! "$py" -c "import json,sys; d=json.loads(sys.argv[1]); status=int(sys.argv[2]); sys.exit(0 if ($expr) else 1)" \
      "$out" "$status"; then
    echo "FAIL: $* --json: ($expr) does not hold; exit $status, output:"
    echo "$out" | head -c 3000
    echo
    failures=$((failures + 1))
  else
    echo "ok: $* (json: $expr)"
  fi
}

[ -x "$doctor" ] || { echo "FAIL: $doctor not built"; exit 1; }
[ -f "$fakes/libcuda.so.1" ] || { echo "FAIL: fake libraries not built in $fakes"; exit 1; }

# The command line.
expect 0 "Exit status:" -- "$doctor" --help
expect 0 "5  this minirt was built without the GPU backend" -- "$doctor" -h
expect 1 "unknown option '--frobnicate'" -- "$doctor" --frobnicate
expect 1 "unknown key 'gpu'" -- "$doctor" --assume-only --assume gpu=h100
expect 1 "cc=seven: not a compute capability" -- "$doctor" --assume-only --assume cc=seven
expect 1 "'driver' is not KEY=VALUE" -- "$doctor" --assume-only --assume driver
expect 1 "--assume needs a list" -- "$doctor" --assume
expect 1 "cudnn=nine: not a version" -- "$doctor" --assume-only --assume cudnn=nine

# Without a GPU backend in this build every case stops at the build layer (5).
backend=$("$doctor" --assume-only --json | "$py" -c 'import json,sys; print(int(json.load(sys.stdin)["build"]["gpu_backend"]))')
code() { if [ "$backend" = 1 ]; then echo "$1"; else echo 5; fi; }
echo "this build has a GPU backend: $backend"

# Hypothetical stacks: a healthy one, then one wrong fact at a time.
expect "$(code 0)" "decision: (GPU usable: GPU 0 \(assumed GPU\)|CPU fallback: this minirt was built without)" -- "$doctor" --assume-only
expect "$(code 3)" "found cuDNN 8\.9\.7 .*but this build needs cuDNN 9 \(libcudnn\.so\.9\).*pip install nvidia-cudnn-cu13" -- \
  "$doctor" --assume-only --assume cudnn=8.9.7
expect "$(code 4)" "GPU 0 \(assumed GPU\) has compute capability 7\.0, but CUDA 13 supports 7\.5 \(Turing\) and newer" -- \
  "$doctor" --assume-only --assume cc=7.0
expect "$(code 2)" "the driver supports CUDA 12\.2 \(driver 535\.104\), this build needs 13\.0 and an R580-or-newer driver" -- \
  "$doctor" --assume-only --assume driver=535.104
expect "$(code 2)" "decision: CPU fallback: (the driver supports CUDA 12\.2|this minirt was built without)" -- \
  "$doctor" --assume-only --assume driver=535.104,cuda_driver=12.2,cudnn=8.9.7,cudnn_cuda=12.2,cublas=12.2,cc=7.0,devices=1
# ... and every other layer's reason is printed too.
for reason in "compute capability 7\.0, but CUDA 13 supports 7\.5" "found cuDNN 8\.9\.7 \(given by --assume\)" \
    "found cuBLAS 12\.2\.0 \(given by --assume\), but this build needs cuBLAS 13"; do
  expect "$(code 2)" "$reason" -- "$doctor" --assume-only --assume driver=535.104,cudnn=8.9.7,cublas=12.2,cc=7.0
done
expect "$(code 2)" "no NVIDIA driver \(libcuda\.so\.1 not found\); install the NVIDIA driver R580" -- \
  "$doctor" --assume-only --assume driver=none
expect "$(code 2)" "the CUDA toolkit's stub" -- "$doctor" --assume-only --assume driver=stub
expect "$(code 4)" "the driver sees no NVIDIA GPU.*CUDA_VISIBLE_DEVICES" -- "$doctor" --assume-only --assume devices=0
expect "$(code 4)" "every GPU is busy or unavailable \(CUDA error 46" -- "$doctor" --assume-only --assume cuinit=46
expect "$(code 3)" "was built for CUDA 12\.8, but this build uses CUDA 13" -- "$doctor" --assume-only --assume cudnn_cuda=12.8
expect "$(code 3)" "cuBLAS 13 not found.*pip install nvidia-cublas" -- "$doctor" --assume-only --assume cublas=none
expect "$(code 0)" "WARNING: GPU 0 \(assumed GPU\) has compute capability 12\.0, newer than the GPUs cuDNN" -- \
  "$doctor" --assume-only --assume cc=12.0,cudnn_max_cc=9.0
json_check "status == $(code 4) and d['exit_code'] == status and any(v['rule'] == 'device.cc_too_old' for v in d['verdicts'])" -- \
  "$doctor" --assume-only --assume cc=7.0 --json

# The real probe of this machine: it runs, decides, and its JSON parses.
out=$("$doctor" 2>&1)
status=$?
if [ "$status" -ge 6 ] || ! grep -q "^decision: " <<<"$out"; then
  echo "FAIL: minirt-doctor on this machine -> exit $status:"
  echo "$out" | tail -20
  failures=$((failures + 1))
else
  echo "ok: minirt-doctor on this machine -> $status: $(grep '^decision: ' <<<"$out")"
fi
json_check "d['exit_code'] == status and d['usable'] == (status == 0) and d['summary'] and len(d['verdicts']) >= 5 and d['driver']['library']['searched']" -- \
  "$doctor" --json
real_driver=$("$doctor" --json | "$py" -c 'import json,sys; print(int(json.load(sys.stdin)["driver"]["library"]["found"]))')

# Fake drivers in front of the loader: LD_LIBRARY_PATH comes first on any machine.
mkdir -p "$work/cuda/lib64/stubs" "$work/old" "$work/volta"
cp "$fakes/libcuda.so.1" "$work/cuda/lib64/stubs/libcuda.so.1"
cp "$fakes/libcuda.so.1" "$work/old/libcuda.so.1"
cp "$fakes/libcuda.so.1" "$work/volta/libcuda.so.1"
expect "$(code 2)" "is the CUDA toolkit's stub.*remove the stubs folder from LD_LIBRARY_PATH" -- \
  env LD_LIBRARY_PATH="$work/cuda/lib64/stubs" MINIRT_FAKE_CUINIT=34 "$doctor"
expect "$(code 2)" "the driver supports CUDA 12\.2, this build needs 13\.0 and an R580-or-newer driver" -- \
  env LD_LIBRARY_PATH="$work/old" MINIRT_FAKE_CUDA_VERSION=12020 "$doctor"
# MINIRT_CUDA_PATH comes after the loader's search: only where no real driver answers first.
if [ "$real_driver" = 0 ]; then
  expect "$(code 4)" "Fake GPU 0\) has compute capability 7\.0" -- \
    env MINIRT_CUDA_PATH="$work/nothing:$work/volta" MINIRT_FAKE_CC=70 "$doctor" --verbose
  expect "$(code 4)" "$work/nothing/libcuda\.so\.1 \(MINIRT_CUDA_PATH\): not present" -- \
    env MINIRT_CUDA_PATH="$work/nothing:$work/volta" MINIRT_FAKE_CC=70 "$doctor" --verbose
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all minirt-doctor checks passed"
