"""Times OpenVINO (CPU plugin) on one model in its own process (so its peak
RSS is its own) and prints a JSON line. Used by side_by_side.py,
bf16_side_by_side.py, quant_side_by_side.py and fast_start.py, next to
ort_worker.py.

  ov_worker.py MODEL INPUT.npy THREADS WARMUP ITERATIONS [--profile] [--precision default|f32] [--output OUT.npy]

The model is read from ONNX directly (no conversion step), reshaped to the
input's concrete shape where the graph has symbolic dimensions (so OpenVINO
compiles static shapes, as for a fixed-shape model), and compiled for the
CPU with INFERENCE_NUM_THREADS = THREADS, PERFORMANCE_HINT = LATENCY (one
stream, the whole thread budget on one request) and INFERENCE_PRECISION_HINT
= f32 (no bf16/fp16 downcast on CPUs that have it; --precision default leaves
the hint unset, so OpenVINO runs bf16 where the CPU has bf16 instructions, its
default). --output saves the first output of the last run (for accuracy
against onnxruntime, bench/bf16_side_by_side.py). Timed: the synchronous
InferRequest.infer of one request, reused. With --profile, PERF_COUNT is on
and the JSON has per_op_ms: the mean real time per run of each layer type
over the timed runs (OpenVINO's own, fused layer types).

Output: {"load_ms": Core, read, reshape, compile and the infer request, "first_run_ms": the first inference
(a warm-up's, or the first timed run's at WARMUP 0), "latency_ms": [each timed run], "peak_rss_kib": VmHWM at
the end, "pre_load_rss_kib": VmRSS just before the Core was made (numpy and openvino imported, input read),
"version", "threads", "precision", "per_op_ms"?}
"""
import collections
import json
import sys
import time

import numpy as np
import openvino as ov

from bench_common import peak_rss_kib, rss_kib, timed_runs


def main():
    model_path, input_path, threads, warmup, iters = sys.argv[1:6]
    threads, warmup, iters = int(threads), int(warmup), int(iters)
    rest = sys.argv[6:]
    profile = "--profile" in rest
    precision = rest[rest.index("--precision") + 1] if "--precision" in rest else "f32"
    output = rest[rest.index("--output") + 1] if "--output" in rest else None
    x = np.load(input_path)

    pre_load_rss = rss_kib()
    t0 = time.perf_counter()
    core = ov.Core()
    model = core.read_model(model_path)
    port = model.inputs[0]
    if port.get_partial_shape().is_dynamic:
        model.reshape({port.get_any_name(): ov.PartialShape(list(x.shape))})
    config = {
        "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "LATENCY",
    }
    if precision == "f32":
        config["INFERENCE_PRECISION_HINT"] = "f32"
    if profile:
        config["PERF_COUNT"] = True
    compiled = core.compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    load_ms = (time.perf_counter() - t0) * 1000

    feed = {0: x}
    by_type = collections.defaultdict(float)

    def add_profile():
        # The last inference's per-layer counters; real_time is wall time.
        for p in request.get_profiling_info():
            if p.status == ov.ProfilingInfo.Status.EXECUTED:
                by_type[p.node_type] += p.real_time.total_seconds() * 1000

    first_ms, lat = timed_runs(lambda: request.infer(feed), warmup, iters, add_profile if profile else None)
    out = {"load_ms": load_ms, "first_run_ms": first_ms, "latency_ms": lat, "peak_rss_kib": peak_rss_kib(),
           "pre_load_rss_kib": pre_load_rss, "version": ov.__version__,
           "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
           "precision": str(compiled.get_property("INFERENCE_PRECISION_HINT")).replace("<Type: ", "").strip(">'")}
    if output:
        np.save(output, np.asarray(request.infer(feed)[compiled.outputs[0]], dtype=np.float32))
    if profile:
        out["per_op_ms"] = {k: v / max(iters, 1) for k, v in by_type.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
