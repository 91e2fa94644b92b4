#!/usr/bin/env bash
# Prepares what a GPU machine needs to run tools/gpu-check.sh without
# building anything there: a build of minirt made here, in a folder of the
# repository that git ignores (.gpu-carry/, listed in .git/info/exclude) and
# that stays well under the 64 MiB a device call may carry.
#
#   tools/gpu-carry.sh            # then carry .gpu-carry to the GPU machine
#
# .gpu-carry/ holds:
#   bin/runmodel, bin/minirt-doctor, bin/minirt-make-models, bin/minirt_gpu_tests,
#   bin/minirt-conformance
#       linked so that they start without protobuf, GoogleTest or Eigen
#       installed (protobuf-lite and GoogleTest linked statically; Eigen is
#       headers only), compiled for x86-64-v3 (AVX2, FMA) instead of this
#       machine's -march=native;
#   lib/libminirt_cuda.so   the GPU module (bin/../lib is where the loader looks);
#   models/                 the shared models (../shared/models) when present;
#                           the generated ones (ResNet-50 alone is ~100 MB) are
#                           made on the GPU machine by minirt-make-models;
#   op_cases.tar.gz         the op cases (tests/op_cases/make_op_cases.py, ~30 MB
#                           unpacked, ~11 MB packed), which need onnxruntime and so
#                           are made here (MINIRT_PYTHON, default .venv/bin/python);
#                           gpu-check.sh unpacks them and runs minirt-conformance
#                           --device cuda --reference cpu on them;
#   BUILD_INFO              what was built, from which commit, against what.
#
# The module is compiled against the headers of an old cuDNN 9 minor
# (MINIRT_CARRY_CUDNN, default 9.12.0.46, the first cuDNN for CUDA 13),
# fetched once with pip into build-carry-deps/: the compatibility gate
# refuses a cuDNN older than the one a build was compiled against, and the
# GPU machine's cuDNN (PyTorch's wheel) may be older than this machine's. The
# module uses only functions every cuDNN 9 has. MINIRT_CARRY_CUDNN=system
# uses this machine's cuDNN instead.
#
# Environment: MINIRT_CARRY_BUILD (default build-carry), MINIRT_CARRY_CUDNN,
# MINIRT_CARRY_ARCH (default -march=x86-64-v3), MINIRT_PYTHON, JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${MINIRT_CARRY_BUILD:-build-carry}
out=.gpu-carry
cudnn_pin=${MINIRT_CARRY_CUDNN:-9.12.0.46}
arch=${MINIRT_CARRY_ARCH:--march=x86-64-v3}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
deps=build-carry-deps

mkdir -p "$deps"
say() { echo "gpu-carry: $*"; }
die() { echo "gpu-carry: $*" >&2; exit 1; }

# Ignored by git, so that a device call may carry it.
if [ -d .git ]; then
  mkdir -p .git/info
  grep -qxF "/$out/" .git/info/exclude 2>/dev/null || echo "/$out/" >>.git/info/exclude
fi

# 1. The cuDNN headers (and front library, to link against) the module is built with.
cudnn_args=()
if [ "$cudnn_pin" != "system" ]; then
  dir=$deps/cudnn-$cudnn_pin
  if [ ! -f "$dir/nvidia/cudnn/include/cudnn_version.h" ] || [ ! -f "$dir/nvidia/cudnn/lib/libcudnn.so.9" ]; then
    say "fetching cuDNN $cudnn_pin's headers (pip download nvidia-cudnn-cu13==$cudnn_pin, once)"
    mkdir -p "$deps/wheels" "$dir"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$deps/wheels" "nvidia-cudnn-cu13==$cudnn_pin" ||
      die "could not download nvidia-cudnn-cu13==$cudnn_pin; set MINIRT_CARRY_CUDNN=system to build against this machine's cuDNN"
    wheel=$(ls "$deps"/wheels/nvidia_cudnn_cu13-"$cudnn_pin"-*.whl | head -1)
    unzip -q -o "$wheel" 'nvidia/cudnn/include/*' 'nvidia/cudnn/lib/libcudnn.so.9' -d "$dir"
    rm -f "$wheel"  # ~300 MB; only the headers and the front library are kept
  fi
  cudnn_args=(-DMINIRT_CUDNN_INCLUDE_DIR="$root/$dir/nvidia/cudnn/include"
              -DMINIRT_CUDNN_LIBRARY="$root/$dir/nvidia/cudnn/lib/libcudnn.so.9")
fi

# 2. The build: Release, portable instruction sets, protobuf-lite and GoogleTest static.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$root
fi
say "configuring $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINIRT_NATIVE=OFF -DMINIRT_ARCH_FLAGS="$arch" \
  -DProtobuf_USE_STATIC_LIBS=ON -DMINIRT_BUILD_TESTS=ON -DMINIRT_BUILD_BENCH=OFF -DMINIRT_WERROR=OFF \
  "${cudnn_args[@]}" "${launcher[@]}" >"$deps/configure.log" 2>&1 || { cat "$deps/configure.log"; die "configure failed"; }
grep -q "GPU module: libminirt_cuda.so" "$deps/configure.log" ||
  die "this configuration builds no GPU module (see $deps/configure.log)"
say "building runmodel, convprof, minirt-doctor, minirt-make-models, minirt-conformance, minirt_gpu_tests, libminirt_cuda.so, the fake CUDA libraries ($jobs jobs)"
cmake --build "$build" -j"$jobs" --target runmodel convprof minirt-doctor minirt-make-models minirt-conformance \
  minirt_gpu_tests minirt_cuda minirt_gpu_fakes

# 3. The carry folder.
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/models"
for t in runmodel convprof minirt-doctor minirt-make-models minirt-conformance minirt_gpu_tests; do
  cp "$build/bin/$t" "$out/bin/"
  strip --strip-unneeded "$out/bin/$t"
done
cp "$build/lib/libminirt_cuda.so" "$out/lib/"
strip --strip-unneeded "$out/lib/libminirt_cuda.so"
# The fallback demo's fake CUDA libraries (plain, no CUDA dependency).
mkdir -p "$out/lib/gpu-fakes"
cp "$build"/tests/gpu_fakes/lib*.so* "$out/lib/gpu-fakes/"
if [ -d ../shared/models ]; then
  cp ../shared/models/*.onnx "$out/models/" 2>/dev/null || true
fi
# The op cases, packed: onnxruntime (absent on the GPU machine) makes their
# reference outputs, and the GPU run compares with the CPU's anyway.
py=${MINIRT_PYTHON:-$root/.venv/bin/python}
if [ -x "$py" ] && "$py" -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
  rm -rf "$deps/op_cases"
  "$py" tests/op_cases/make_op_cases.py --out "$deps/op_cases" >"$deps/op_cases.log" 2>&1 ||
    { cat "$deps/op_cases.log"; die "make_op_cases.py failed"; }
  tar czf "$out/op_cases.tar.gz" -C "$deps" op_cases
  say "op cases: $(ls "$deps/op_cases" | wc -l) cases, $(du -sm "$deps/op_cases" | cut -f1) MiB, $(du -sm "$out/op_cases.tar.gz" | cut -f1) MiB packed"
else
  say "no Python with onnx and onnxruntime at $py (MINIRT_PYTHON): the op cases are not carried, and gpu-check.sh will say so"
fi

# 4. Nothing the GPU machine lacks: no protobuf, GoogleTest or Eigen library,
# and no CUDA library in the programs (only the module links cuDNN and cuBLAS).
bad=0
for f in "$out"/bin/*; do
  deps_of=$(ldd "$f" 2>&1 || true)
  if echo "$deps_of" | grep -E -i "protobuf|gtest|gmock|eigen|cudnn|cublas|libcuda|not found" >/dev/null; then
    echo "gpu-carry: $f needs a library the GPU machine may not have:" >&2
    echo "$deps_of" | grep -E -i "protobuf|gtest|gmock|eigen|cudnn|cublas|libcuda|not found" >&2
    bad=1
  fi
done
module_deps=$(readelf -d "$out/lib/libminirt_cuda.so" | awk '/NEEDED/ {print $5}' | tr -d '[]' | tr '\n' ' ')
case " $module_deps " in
  *" libcudart.so"* | *" libcuda.so"*) echo "gpu-carry: the module links the CUDA runtime or driver: $module_deps" >&2; bad=1 ;;
esac
[ "$bad" = 0 ] || die "the carried programs would not start on a machine without this one's libraries"

cudnn_h=$(grep -h -E "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) " "$(grep -E '^MINIRT_CUDNN_INCLUDE_DIR:' "$build/CMakeCache.txt" | cut -d= -f2)/cudnn_version.h" | awk '{print $3}' | paste -sd.)
# A module built against newer cuDNN headers than the pin is refused by the
# gate (cudnn.minor_older) on a GPU machine whose cuDNN is older, which
# would waste the machine's time: only with MINIRT_CARRY_CUDNN=system, asked for.
if [ "$cudnn_pin" != "system" ]; then
  pin3=$(echo "$cudnn_pin" | cut -d. -f1-3)
  [ "$cudnn_h" = "$pin3" ] ||
    die "the module was built against cuDNN $cudnn_h headers, not the pinned $cudnn_pin (a stale $build?); a GPU machine with an older cuDNN would refuse it. Remove $build, or set MINIRT_CARRY_CUDNN=system to accept this machine's cuDNN"
else
  say "built against this machine's cuDNN $cudnn_h headers (MINIRT_CARRY_CUDNN=system): a GPU machine with an older cuDNN 9 will refuse the module"
fi
{
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(uname -m))"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  nvcc=$(grep -E '^CUDAToolkit_NVCC_EXECUTABLE:' "$build/CMakeCache.txt" | cut -d= -f2)
  echo "compiler: $(${CXX:-c++} --version | head -1); nvcc: $("${nvcc:-nvcc}" --version 2>/dev/null | tail -1)"
  echo "instruction sets: $arch"
  echo "CUDA architectures: $(grep -E '^MINIRT_CUDA_ARCHITECTURES:' "$build/CMakeCache.txt" | cut -d= -f2)"
  echo "cuDNN headers: $cudnn_h ($cudnn_pin)"
  echo "module needs: $module_deps"
} >"$out/BUILD_INFO"

size=$(du -sm "$out" | cut -f1)
[ "$size" -lt 60 ] || die "$out is $size MiB; a device call carries at most 64 MiB with the working tree"
say "ready: $out ($size MiB)"
cat "$out/BUILD_INFO"
echo "gpu-carry: on the GPU machine run: tools/gpu-check.sh OUTDIR   (carry: $out)"
