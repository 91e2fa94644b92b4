#!/usr/bin/env bash
# Installs minirt into a temporary prefix and builds tools/example as a
# separate CMake project against it (find_package(minirt), shared and static),
# plus the same program through pkg-config; runs them and checks their top-5
# against runmodel on the same input; checks libminirt.so exports only the API.
#   install_test.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$1 src=$2 py=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/minirt/minirt.h"
test -f "$prefix/lib/cmake/minirt/minirtConfig.cmake"
test -f "$prefix/lib/pkgconfig/minirt.pc"
ls "$prefix"/lib/libminirt.so.* >/dev/null

# Only minirt's API leaves the shared library (plus the C++ runtime's
# vague-linkage typeinfo for templates the API uses).
leaked=$(nm -D --defined-only "$prefix/lib/libminirt.so" | c++filt | awk '{$1=""; $2=""; print}' |
  grep -v -E '^ *minirt::|typeinfo|vtable|std::_Sp_make_shared_tag|^ *_(init|fini|end|edata|bss_start)$' || true)
if [ -n "$leaked" ]; then
  echo "FAIL: libminirt.so exports non-API symbols:"
  echo "$leaked" | head -20
  exit 1
fi
# No Eigen, protobuf or CUDA type in a public header.
if grep -n -E 'Eigen|google::protobuf|cuda|cudnn' "$prefix"/include/minirt/*.h; then
  echo "FAIL: a public header names an internal dependency"
  exit 1
fi

cmake -S "$src/tools/example" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/example" -j2 >/dev/null
"$prefix/bin/minirt-make-models" --out "$work" mnist_cnn >/dev/null
"$py" -c "
import numpy as np
x = np.random.default_rng(3).random((1, 1, 28, 28), dtype=np.float32)
np.save('$work/x.npy', x); x.tofile('$work/x.raw')"

# pkg-config, as a Makefile-based application would build it.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" c++ -std=c++20 "$src/tools/example/classify.cpp" -o "$work/classify_pc" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs minirt) -Wl,-rpath,"$prefix/lib"

"$prefix/bin/runmodel" "$work/mnist_cnn.onnx" --input "input=$work/x.npy" --iterations 1 --json --top-k 5 >"$work/runmodel.json"
for exe in "$work/example/classify" "$work/example/classify_static" "$work/classify_pc"; do
  "$exe" "$work/mnist_cnn.onnx" "$work/x.raw" >"$work/out.txt"
  "$py" - "$work/runmodel.json" "$work/out.txt" "$exe" <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))["outputs"][0]["top_k"]
got = [l.split() for l in open(sys.argv[2]) if l.startswith("class ")]
assert len(got) == 5, got
for (_, idx, val), w in zip(got, want):
    assert int(idx) == w["index"] and abs(float(val) - w["value"]) <= 1e-5 * (1 + abs(w["value"])), (idx, val, w)
print("ok:", sys.argv[3], "matches runmodel's top-5")
PY
done
# grep reads all of ldd's output (no -q): under pipefail, grep -q leaving
# early could fail the pipeline with ldd's SIGPIPE.
ldd "$work/example/classify" | grep "libminirt.so" >/dev/null || { echo "FAIL: classify is not linked to libminirt.so"; exit 1; }
if ldd "$work/example/classify_static" | grep "libminirt.so" >/dev/null; then echo "FAIL: classify_static uses libminirt.so"; exit 1; fi
# The installed fallback demo finds its runmodel, fake libraries and scenarios.
"$prefix/bin/minirt-fallback-demo" "$work/mnist_cnn.onnx" "$work/demo" >"$work/demo.txt" 2>&1 ||
  { echo "FAIL: the installed minirt-fallback-demo:"; cat "$work/demo.txt"; exit 1; }
grep -q "^cublas12 .* match " "$work/demo.txt" || { echo "FAIL: the installed demo's table:"; cat "$work/demo.txt"; exit 1; }
echo "install test passed"
