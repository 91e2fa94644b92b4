#!/usr/bin/env bash
# bench/heuristic_gap.py on a model of its own: a row per model with the
# heuristic's and the picks' summed times and how many layers differ, and a
# clear error for a model convprof cannot load.
#   heuristic_gap_test.sh BIN_DIR SOURCE_DIR
set -u
bin=$1 src=$2
. "$(dirname "$0")/expect.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/minirt-make-models" --out "$tmp" mnist_cnn >/dev/null
expect 0 '\| mnist_cnn \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+ of 2 \|' -- \
  python3 "$src/bench/heuristic_gap.py" --bin "$bin" --threads 1 "$tmp/mnist_cnn.onnx"
printf 'not onnx' >"$tmp/bad.onnx"
expect 1 'heuristic_gap: .*convprof .*bad.onnx.* failed \(2\): .*bad.onnx' -- \
  python3 "$src/bench/heuristic_gap.py" --bin "$bin" "$tmp/bad.onnx"
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "heuristic_gap: ok"
