"""Times onnxruntime on one model in its own process (so its peak RSS is its
own) and prints a JSON line. Used by side_by_side.py, bf16_side_by_side.py,
quant_side_by_side.py and fast_start.py.

  ort_worker.py MODEL INPUT.npy THREADS WARMUP ITERATIONS [--profile PREFIX] [--output OUT.npy]

Output: {"load_ms": session creation, "first_run_ms": the first run (a warm-up's, or the first timed run's at
WARMUP 0), "latency_ms": [each timed run], "peak_rss_kib": VmHWM at the end, "pre_load_rss_kib": VmRSS just
before the session was created (numpy and onnxruntime imported, input read), "version", "profile"?}
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort

from bench_common import peak_rss_kib, rss_kib, timed_runs


def main():
    model, input_path, threads, warmup, iters = sys.argv[1:6]
    threads, warmup, iters = int(threads), int(warmup), int(iters)
    profile = sys.argv[7] if len(sys.argv) > 7 and sys.argv[6] == "--profile" else None
    # --output OUT.npy: the first output of one more run (bf16_side_by_side.py's reference).
    output = sys.argv[sys.argv.index("--output") + 1] if "--output" in sys.argv[6:] else None
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = profile
    x = np.load(input_path)
    pre_load_rss = rss_kib()
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1000
    feed = {sess.get_inputs()[0].name: x}
    first_ms, lat = timed_runs(lambda: sess.run(None, feed), warmup, iters)
    out = {"load_ms": load_ms, "first_run_ms": first_ms, "latency_ms": lat,
           "peak_rss_kib": peak_rss_kib(), "pre_load_rss_kib": pre_load_rss, "version": ort.__version__}
    if profile:
        out["profile"] = sess.end_profiling()
    if output:
        np.save(output, np.asarray(sess.run(None, feed)[0], dtype=np.float32))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
