#!/usr/bin/env bash
# End-to-end checks of the command-line tools: bad input of every kind gives
# a clear message and the documented exit code (never a crash), and the
# report options produce what they promise.
#   cli_test.sh BIN_DIR PYTHON
set -uo pipefail
bin=$1
py=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source "$(dirname "$0")/expect.sh"
# Tuning writes the algorithm cache: this test's own, not the user's.
export MINIRT_ALGO_CACHE=$work/default_algo_cache.txt

"$bin/minirt-make-models" --out "$work" mnist_cnn >/dev/null || { echo "FAIL: minirt-make-models"; exit 1; }
model=$work/mnist_cnn.onnx
[ -x "$py" ] || { echo "FAIL: $py not found; run tools/setup.sh --venv"; exit 1; }

# Files that are not models.
expect 2 "nonexistent/model.onnx.*No such file" -- "$bin/runmodel" "$work/nonexistent/model.onnx"
head -c 2000 "$model" >"$work/truncated.onnx"
expect 2 "truncated.onnx" -- "$bin/runmodel" "$work/truncated.onnx"
head -c 65536 "$bin/runmodel" >"$work/elf.onnx"
expect 2 "elf.onnx: not a valid ONNX model" -- "$bin/runmodel" "$work/elf.onnx"
head -c 4096 /dev/urandom >"$work/random.onnx"
expect 2 "random.onnx" -- "$bin/runmodel" "$work/random.onnx"
: >"$work/empty.onnx"
expect 2 "empty.onnx: the file is empty" -- "$bin/runmodel" "$work/empty.onnx"
expect 2 "is a directory, not a model file" -- "$bin/runmodel" "$work"
# Bad downloads say what they are and what to do.
printf '<!DOCTYPE html>\n<html><head><title>model.onnx</title></head><body>Sign in</body></html>\n' >"$work/page.onnx"
expect 2 "page.onnx: is an HTML page .*download the raw file" -- "$bin/runmodel" "$work/page.onnx"
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%064d\nsize 4096\n' 0 >"$work/lfs.onnx"
expect 2 "lfs.onnx: is a Git LFS pointer, not the model: the real file of 4096 bytes was never downloaded; run .git lfs install. and .git lfs pull." -- \
  "$bin/runmodel" "$work/lfs.onnx"
gzip -c "$model" >"$work/gzipped.onnx"
expect 2 "gzipped.onnx: is a gzip archive, not an ONNX model: unpack it first" -- "$bin/runmodel" "$work/gzipped.onnx"
"$py" -c "import zipfile, sys; z = zipfile.ZipFile(sys.argv[1], 'w'); z.write(sys.argv[2], 'mnist_cnn.onnx'); z.close()" \
  "$work/zipped.onnx" "$model"
expect 2 "zipped.onnx: is a zip archive" -- "$bin/runmodel" "$work/zipped.onnx"
# Weights in an external data file (as onnx.save_model writes large models):
# the same outputs as the model with its weights inside; missing, a sentence.
mkdir -p "$work/ext"
"$py" -c "import onnx, sys; onnx.save_model(onnx.load(sys.argv[1]), sys.argv[2], save_as_external_data=True,
  all_tensors_to_one_file=True, location='mnist.data', size_threshold=0)" "$model" "$work/ext/mnist.onnx"
"$bin/runmodel" "$model" --iterations 1 --output-dir "$work/out_inside" >/dev/null 2>&1
expect 0 "latency" -- "$bin/runmodel" "$work/ext/mnist.onnx" --iterations 1 --output-dir "$work/out_external"
if "$py" -c "import numpy as np, sys; a = np.load(sys.argv[1]); b = np.load(sys.argv[2]); assert a.shape == b.shape and (a == b).all()" \
  "$work/out_inside/logits.npy" "$work/out_external/logits.npy"; then
  echo "ok: external data gives the same outputs"
else
  echo "FAIL: the external-data model's outputs differ"
  failures=$((failures + 1))
fi
mv "$work/ext/mnist.data" "$work/ext/moved.data"
expect 2 "mnist.onnx: initializer '.*': its data is in the external file 'mnist.data', which is missing .*put it beside" -- \
  "$bin/runmodel" "$work/ext/mnist.onnx"
# A file cut inside its weights (the loader reads them in place, from the
# mapped file) names itself as any damaged file does.
head -c $(($(stat -c %s "$model") / 2)) "$model" >"$work/half.onnx"
expect 2 "half.onnx: not a valid ONNX model: the protobuf could not be parsed \(the file is truncated" -- \
  "$bin/runmodel" "$work/half.onnx"

# --memory-stats: the weights apart from the pool, as loaded, in memory now
# (the packed ones' originals given back), packed; and the same in --json.
expect 0 "weights: model [0-9.]+ KiB as loaded, [0-9.]+ (B|KiB) of it in memory now; packed [0-9.]+ KiB; folded by the plans" -- \
  "$bin/runmodel" "$model" --iterations 1 --wait-tuning --memory-stats
"$bin/runmodel" "$model" --iterations 1 --wait-tuning --memory-stats --json >"$work/mem.json" 2>/dev/null
if "$py" -c "import json, sys; w = json.load(open(sys.argv[1]))['weights']
assert 0 < w['model_resident_bytes'] < w['model_bytes'] <= w['packed_bytes'] and w['released_constants'] > 0, w" \
  "$work/mem.json"; then
  echo "ok: --memory-stats --json reports the weights"
else
  echo "FAIL: --memory-stats --json has no weights, or they are wrong"
  failures=$((failures + 1))
fi

# A well-formed model with an op minirt lacks, and inputs of the wrong kind.
"$py" - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto
w = sys.argv[1]
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["a"], name="relu"),
     helper.make_node("Det", ["a"], ["y"], name="det_1"),
     helper.make_node("Acosh", ["a"], ["z"], name="acosh_1")],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{w}/unknown_op.onnx")
# NonMaxSuppression given boxes of rank 2: refused when it runs, between the
# model's plan stages, naming the node.
g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["a"], name="relu"),
     helper.make_node("NonMaxSuppression", ["a", "a"], ["y"], name="nms_1")],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
    [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{w}/bad_nms.onnx")
np.save(f"{w}/wrong_shape.npy", np.zeros((1, 1, 27, 28), np.float32))
np.save(f"{w}/wrong_dtype.npy", np.zeros((1, 1, 28, 28), np.int64))
np.save(f"{w}/good.npy", np.random.default_rng(0).random((1, 1, 28, 28), dtype=np.float32))
PY
expect 2 "unsupported ops: Acosh \(1 node: acosh_1\); Det \(1 node: det_1\)" -- "$bin/runmodel" "$work/unknown_op.onnx"
expect 3 "bad_nms.onnx: node 'nms_1' \(NonMaxSuppression\): boxes must be \[batches, boxes, 4\], got 1x4" -- "$bin/runmodel" "$work/bad_nms.onnx"
expect 3 "input 'input' must have shape 1x1x28x28, got 1x1x27x28" -- "$bin/runmodel" "$model" --input "input=$work/wrong_shape.npy"
expect 3 "input 'input' must be float32, got int64" -- "$bin/runmodel" "$model" --input "input=$work/wrong_dtype.npy"
expect 3 "no input of that name" -- "$bin/runmodel" "$model" --input "nosuch=$work/good.npy"
expect 3 "cannot open" -- "$bin/runmodel" "$model" --input "input=$work/missing.npy"
expect 3 "not a .npy file" -- "$bin/runmodel" "$model" --input "input=$model"

# Bad command lines and device requests.
expect 1 "unknown option --bogus" -- "$bin/runmodel" "$model" --bogus
expect 1 "no model given" -- "$bin/runmodel"
expect 1 "--iterations expects an integer" -- "$bin/runmodel" "$model" --iterations zero
expect 1 "--device expects cpu, cuda or auto" -- "$bin/runmodel" "$model" --device tpu
expect 1 "--math expects fp32, tf32, fp16 or bf16" -- "$bin/runmodel" "$model" --math fp8
expect 4 "no usable GPU backend" -- "$bin/runmodel" "$model" --device cuda
# The library's sentence names its API (Device::kCpu); runmodel adds its own flags.
expect 4 "use the CPU instead \(Device::kCpu" -- "$bin/runmodel" "$model" --device cuda
expect 4 "^runmodel: --device cpu runs on the CPU" -- "$bin/runmodel" "$model" --device cuda
expect 4 "no usable GPU backend" -- "$bin/runmodel" "$model" --device cuda --math tf32
expect 4 "no usable GPU backend" -- "$bin/runmodel" "$model" --device cuda --math fp16
expect 0 "device: cpu: running on the CPU" -- "$bin/runmodel" "$model" --device auto --math fp16 --iterations 1
expect 0 "device: cpu: running on the CPU" -- "$bin/runmodel" "$model" --device auto --iterations 1
expect 0 "usage: runmodel" -- "$bin/runmodel" --help
expect 2 "usage: minirt-conformance" -- "$bin/minirt-conformance"

# Outputs that cannot be written.
expect 5 "output-dir" -- "$bin/runmodel" "$model" --iterations 1 --output-dir /proc/minirt-cannot-write
expect 5 "profile" -- "$bin/runmodel" "$model" --iterations 1 --profile "$work/no/such/dir/trace.json"

# What the report options promise.
expect 0 "arena: .* bytes; without reuse" -- "$bin/runmodel" "$model" --iterations 1 --print-plan
expect 0 "latency over 5 runs .*min .*mean .*median .*p90 .*p99 .*max" -- "$bin/runmodel" "$model" --iterations 5
expect 0 "first run: .* ms" -- "$bin/runmodel" "$model" --iterations 1
expect 0 "top-3" -- "$bin/runmodel" "$model" --iterations 1 --top-k 3
"$bin/runmodel" "$model" --iterations 3 --json --input "input=$work/good.npy" --output-dir "$work/out" \
  --profile "$work/trace.json" >"$work/summary.json" 2>"$work/stderr.txt"
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import json, sys, numpy as np, onnxruntime as ort
w = sys.argv[1]
s = json.load(open(f"{w}/summary.json"))
assert s["iterations"] == 3 and s["latency_ms"]["min"] <= s["latency_ms"]["median"] <= s["latency_ms"]["max"], s
assert s["outputs"][0]["name"] == "logits" and s["outputs"][0]["shape"] == [1, 10], s
t = json.load(open(f"{w}/trace.json"))
ev = [e for e in t["traceEvents"] if e["ph"] == "X"]
meta = [e for e in t["traceEvents"] if e["ph"] == "M"]
assert ev and all(e["dur"] >= 0 for e in ev), "bad trace"
assert {e["args"]["iteration"] for e in ev} == {0, 1, 2}, "trace should hold every timed run"
# The CPU alone: every step on the host's clock, one named track.
assert all(e["args"]["device"] == "cpu" and e["args"]["clock"] == "host" and e["tid"] == 1 for e in ev), ev[0]
assert [(m["name"], m["tid"]) for m in meta] == [("thread_name", 1)], meta
assert meta[0]["args"]["name"].startswith("host clock"), meta
y = np.load(f"{w}/out/logits.npy")
so = ort.SessionOptions(); so.log_severity_level = 3
ref = ort.InferenceSession(f"{w}/mnist_cnn.onnx", so, providers=["CPUExecutionProvider"]).run(
    None, {"input": np.load(f"{w}/good.npy")})[0]
assert np.allclose(y, ref, rtol=1e-4, atol=1e-5), (y, ref)
top = s["outputs"][0]["top_k"][0]["index"]
assert top == int(np.argmax(ref[0])), (top, ref)
print("ok: --json, --profile, --output-dir agree with onnxruntime")
PY

# ---- float16 models: .npy <f2 in and out, the precision line, a damaged float16 weight ----
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import sys, warnings, numpy as np, onnx
from onnxconverter_common import float16
w = sys.argv[1]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    m16 = float16.convert_float_to_float16(onnx.load(f"{w}/mnist_cnn.onnx"), keep_io_types=False)
onnx.save(m16, f"{w}/mnist_fp16.onnx")
np.save(f"{w}/good16.npy", np.load(f"{w}/good.npy").astype(np.float16))
np.save(f"{w}/good16_as32.npy", np.load(f"{w}/good.npy").astype(np.float16).astype(np.float32))
# One float16 weight with a byte too few.
bad = onnx.load(f"{w}/mnist_fp16.onnx")
t = next(i for i in bad.graph.initializer if i.name == "conv1.weight")
t.raw_data = t.raw_data[:-1]
onnx.save(bad, f"{w}/mnist_fp16_short.onnx")
PY
fp16=$work/mnist_fp16.onnx
expect 0 "precision: float16 model: 8 initializers converted to float32 at load; inputs input float16->float32; outputs logits float32->float16; computed in float32" -- \
  "$bin/runmodel" "$fp16" --iterations 1
expect 0 "input: input float16 1x1x28x28 random \(seed 42\)" -- "$bin/runmodel" "$fp16" --iterations 1
expect 0 "output 'logits': float16 1x10.*top-5" -- bash -c "\"$bin/runmodel\" \"$fp16\" --iterations 1 | tr '\n' ' '"
expect 0 "float16 model: .*Cast +input:to_float32 .*float16 -> float32.*Cast +logits:to_float16 .*float32 -> float16" -- \
  bash -c "\"$bin/runmodel\" \"$fp16\" --iterations 1 --print-plan | tr '\n' ' '"
expect 0 "input: input float16 1x1x28x28 from .*good16_as32.npy \(float32 rounded to float16\)" -- \
  "$bin/runmodel" "$fp16" --iterations 1 --input "input=$work/good16_as32.npy"
expect 3 "input 'input' must be float16, got int64" -- "$bin/runmodel" "$fp16" --input "input=$work/wrong_dtype.npy"
expect 2 "mnist_fp16_short.onnx: initializer 'conv1.weight': raw_data holds 799 bytes, not a whole number of 2-byte float16 elements \(shape 16x1x5x5 needs 800 bytes\)" -- \
  "$bin/runmodel" "$work/mnist_fp16_short.onnx"
"$bin/runmodel" "$fp16" --iterations 1 --json --input "input=$work/good16.npy" --output-dir "$work/out16" \
  >"$work/summary16.json" 2>/dev/null
"$bin/runmodel" "$fp16" --iterations 1 --input "input=$work/good16_as32.npy" --output-dir "$work/out16b" >/dev/null 2>&1
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import json, sys, numpy as np, onnxruntime as ort
w = sys.argv[1]
s = json.load(open(f"{w}/summary16.json"))
assert s["half_precision"].startswith("float16 model: 8 initializers"), s["half_precision"]
assert s["outputs"][0]["dtype"] == "float16", s["outputs"]
y = np.load(f"{w}/out16/logits.npy")
assert y.dtype == np.float16 and y.shape == (1, 10), (y.dtype, y.shape)
assert (np.load(f"{w}/out16b/logits.npy") == y).all(), "a float32 .npy rounded to float16 gave other outputs"
so = ort.SessionOptions(); so.log_severity_level = 3
ref = ort.InferenceSession(f"{w}/mnist_fp16.onnx", so, providers=["CPUExecutionProvider"]).run(
    None, {"input": np.load(f"{w}/good16.npy")})[0]
assert ref.dtype == np.float16
assert np.allclose(y.astype(np.float32), ref.astype(np.float32), rtol=5e-3, atol=5e-3), (y, ref)
assert s["outputs"][0]["top_k"][0]["index"] == int(np.argmax(ref[0].astype(np.float32))), (s["outputs"], ref)
print("ok: a float16 model's .npy input and output (<f2) agree with onnxruntime")
PY

# ---- The memory pool: runmodel --memory-stats, --memory-limit, --memory-policy ----
expect 0 "--memory-limit SIZE.*--memory-policy grow\|preallocate:FRACTION.*--memory-stats" -- \
  bash -c "\"$bin/runmodel\" --help | tr '\n' ' '"
expect 0 "memory pool: policy grow, limit none" -- "$bin/runmodel" "$model" --iterations 1 --memory-stats
expect 0 "reserved .* in 1 segment, in use .*, peak in use .*" -- "$bin/runmodel" "$model" --iterations 2 --memory-stats
expect 0 "largest free block .*, fragmentation .*%, 1 allocation, 0 frees" -- \
  "$bin/runmodel" "$model" --iterations 2 --memory-stats
expect 0 "memory pool: policy grow, limit 1.50 MiB" -- "$bin/runmodel" "$model" --iterations 1 --memory-stats --memory-limit 1.5M
expect 0 "memory pool: policy preallocate:0.001, limit" -- \
  "$bin/runmodel" "$model" --iterations 1 --memory-stats --memory-policy preallocate:0.001
expect 3 "host memory pool: cannot allocate .* bytes\) for the activation arena of .*mnist_cnn.onnx \(inputs input 1x1x28x28\).*reserved in.*in use.*largest free block.*fragmentation.*memory limit is 8.0 KiB.*smaller batch.*--memory-limit" -- \
  "$bin/runmodel" "$model" --iterations 1 --memory-limit 8K
expect 3 "preallocated at 8.0 KiB \(its memory limit\) and does not grow.*grow policy" -- \
  "$bin/runmodel" "$model" --iterations 1 --memory-limit 8192 --memory-policy preallocate:1
expect 1 "--memory-limit expects a size in bytes, with an optional K, M or G suffix, got 'lots'" -- \
  "$bin/runmodel" "$model" --memory-limit lots
expect 1 "--memory-limit expects a size" -- "$bin/runmodel" "$model" --memory-limit -5M
expect 1 "--memory-policy expects grow or preallocate:FRACTION, got 'shrink'" -- "$bin/runmodel" "$model" --memory-policy shrink
expect 1 "fraction in \(0, 1\], got '1.5'" -- "$bin/runmodel" "$model" --memory-policy preallocate:1.5
"$bin/runmodel" "$model" --iterations 2 --json --memory-stats --memory-limit 2M >"$work/memory.json" 2>&1
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
m = json.load(open(f"{sys.argv[1]}/memory.json"))["memory_pool"]
assert m["policy"] == "grow" and m["limit_bytes"] == 2 << 20, m
assert 0 < m["in_use_bytes"] <= m["reserved_bytes"] <= m["limit_bytes"], m
assert m["peak_in_use_bytes"] >= m["in_use_bytes"] and m["segments"] == 1, m
assert m["largest_free_block_bytes"] == m["reserved_bytes"] - m["in_use_bytes"] and m["fragmentation"] == 0, m
assert m["allocations"] == 1 and m["frees"] == 0, m
print("ok: --json --memory-stats")
PY

# ---- Convolution algorithms: --tune, --algo-cache, --workspace-limit, --verbose ----
expect 0 "--tune MODE.*--algo-cache PATH.*--workspace-limit SIZE.*--verbose" -- bash -c "\"$bin/runmodel\" --help | tr '\n' ' '"
cache=$work/tune/algo_cache.txt
expect 0 "tuning: 2 convolutions, 2 measured, 0 from cache, 0 heuristic, .* s \(exhaustive, cache $cache\)" -- \
  "$bin/runmodel" "$model" --iterations 1 --tune exhaustive --algo-cache "$cache"
grep -q "^minirt-algo-cache 1" "$cache" || { echo "FAIL: no cache written at $cache"; failures=$((failures + 1)); }
# A warm cache: nothing measured.
expect 0 "tuning: 2 convolutions, 0 measured, 2 from cache, 0 heuristic" -- \
  "$bin/runmodel" "$model" --iterations 1 --tune cached --algo-cache "$cache"
expect 0 "tuning: conv2 \(Conv 16->32 5x5\): [a-z0-9_]+, [0-9.]+ ms, workspace .*, from cache" -- \
  "$bin/runmodel" "$model" --iterations 1 --algo-cache "$cache" --verbose
expect 0 "0 measured, 2 from cache" -- env MINIRT_ALGO_CACHE="$cache" "$bin/runmodel" "$model" --iterations 1
expect 0 "tuning: 2 convolutions, 0 measured, 0 from cache, 2 heuristic" -- "$bin/runmodel" "$model" --iterations 1 --tune heuristic
expect 0 "tuning: 2 convolutions, 0 measured, 0 from cache, 0 heuristic, 2 fixed" -- \
  "$bin/runmodel" "$model" --iterations 1 --tune im2col_gemm
expect 0 "'no_such_algo' is not one of cpu's algorithms for it; using the heuristic's" -- \
  "$bin/runmodel" "$model" --iterations 1 --tune no_such_algo
# Every plain lowering needs more than 1 KiB of scratch; the blocked layout's
# native kernels need none, so they are still measured.
expect 0 "0 measured" -- "$bin/runmodel" "$model" --iterations 1 --tune exhaustive --workspace-limit 1K --layout nchw --algo-cache "$work/tune/limited.txt"
expect 0 "2 measured" -- "$bin/runmodel" "$model" --iterations 1 --tune exhaustive --workspace-limit 1K --algo-cache "$work/tune/limited.txt"
expect 1 "--tune expects cached, exhaustive, heuristic or an algorithm name, got 'no way'" -- "$bin/runmodel" "$model" --tune "no way"
expect 1 "--workspace-limit expects a size" -- "$bin/runmodel" "$model" --workspace-limit lots
printf 'minirt-algo-cache 1\n[cpu | damaged\n' >"$work/tune/damaged.txt"
expect 0 "damaged line\(s\); the whole file is ignored.*2 measured" -- \
  bash -c "\"$bin/runmodel\" \"$model\" --iterations 1 --wait-tuning --algo-cache \"$work/tune/damaged.txt\" 2>&1 | tr '\n' ' '"
printf 'my notes\n' >"$work/tune/foreign.txt"
expect 0 "not a minirt algorithm cache.*2 measured" -- \
  bash -c "\"$bin/runmodel\" \"$model\" --iterations 1 --wait-tuning --algo-cache \"$work/tune/foreign.txt\" 2>&1 | tr '\n' ' '"
[ "$(cat "$work/tune/foreign.txt")" = "my notes" ] || { echo "FAIL: a foreign file was overwritten"; failures=$((failures + 1)); }
# Background tuning (the default with an empty cache): the first run measures
# nothing; --wait-tuning waits for the tuned plan; --tune-in-first-run as before.
expect 0 "first run: [0-9.]+ ms \(includes planning\) tuning: 2 convolutions, 0 measured, 0 from cache, 2 heuristic" -- \
  bash -c "\"$bin/runmodel\" \"$model\" --iterations 1 --algo-cache \"$work/tune/bg1.txt\" | tr '\n' ' '"
expect 0 "waited [0-9.]+ s after the first run for background tuning .*the tuned plan took over [0-9.]+ s after the first plan, at run 2 .*[0-2] of 2 choices measured changed" -- \
  bash -c "\"$bin/runmodel\" \"$model\" --iterations 3 --wait-tuning --algo-cache \"$work/tune/bg2.txt\" | tr '\n' ' '"
expect 0 "0 measured, 2 from cache, 0 heuristic" -- "$bin/runmodel" "$model" --iterations 1 --algo-cache "$work/tune/bg2.txt"
expect 0 "first run: [0-9.]+ ms \(includes planning and tuning\) tuning: 2 convolutions, 2 measured" -- \
  bash -c "\"$bin/runmodel\" \"$model\" --iterations 1 --tune-in-first-run --algo-cache \"$work/tune/bg3.txt\" | tr '\n' ' '"
"$bin/runmodel" "$model" --iterations 4 --warmup 0 --wait-tuning --json --algo-cache "$work/tune/bg4.txt" >"$work/bg.json" 2>/dev/null
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
j = json.load(open(f"{sys.argv[1]}/bg.json"))
t = j["tuning"]
assert t["pending"] == 0 and t["measured"] == 2 and len(t["swaps"]) == 1 and t["wait_ms"] >= 0, t
assert t["swaps"][0]["runs_before"] == 1 and t["swaps"][0]["measured"] == 2, t
assert len(j["latencies_ms"]) == 4 and j["session_ms"] >= 0, j
print("ok: --json background tuning")
PY
"$bin/runmodel" "$model" --iterations 1 --json --algo-cache "$cache" >"$work/tune.json" 2>/dev/null
"$py" - "$work" <<'PY' || failures=$((failures + 1))
import json, sys
t = json.load(open(f"{sys.argv[1]}/tune.json"))["tuning"]
assert t["mode"] == "cached" and t["convolutions"] == 2 and t["measured"] == 0 and t["from_cache"] == 2, t
assert [c["node"] for c in t["choices"]] == ["conv1", "conv2"] and all(c["source"] == "cache" for c in t["choices"]), t
print("ok: --json tuning")
PY

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all CLI checks passed"
