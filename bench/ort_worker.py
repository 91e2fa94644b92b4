"""Times onnxruntime on one model in its own process (so its peak RSS is its
own) and prints a JSON line. Used by side_by_side.py.

  ort_worker.py MODEL INPUT.npy THREADS WARMUP ITERATIONS [--profile PREFIX] [--output OUT.npy]
"""
import json
import resource


def peak_rss_kib():
    """VmHWM: this address space's peak (ru_maxrss would carry the parent's across exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
import sys
import time

import numpy as np
import onnxruntime as ort


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
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1000
    x = np.load(input_path)
    feed = {sess.get_inputs()[0].name: x}
    for _ in range(warmup):
        sess.run(None, feed)
    lat = []
    for _ in range(iters):
        a = time.perf_counter()
        sess.run(None, feed)
        lat.append((time.perf_counter() - a) * 1000)
    out = {"load_ms": load_ms, "latency_ms": lat,
           "peak_rss_kib": peak_rss_kib()}
    if profile:
        out["profile"] = sess.end_profiling()
    if output:
        np.save(output, np.asarray(sess.run(None, feed)[0], dtype=np.float32))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
