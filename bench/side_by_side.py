"""Side-by-side CPU benchmark: minirt's runmodel and onnxruntime on the same
model, input and thread count, alternating in the same run; minirt with its
tuned convolution algorithms (exhaustive, then from the warm cache) and with
the heuristic's.

  .venv/bin/python bench/side_by_side.py --threads 2 --rounds 5 --iterations 20 \
      --out bench/results_cpu.md build/models/resnet18.onnx ...

For each model, one `runmodel --tune exhaustive` run fills a fresh
algorithm cache (its tuning time is reported); then for each round runmodel
times ITERATIONS runs after a warm-up with `--tune cached` on that cache and
with `--tune heuristic`, then onnxruntime does the same in its own process;
the rounds alternate so all see the same machine state. Reports the median
latency of each (over all rounds), the ratio minirt tuned / onnxruntime
(below 1 means minirt is faster), and each one's peak RSS (onnxruntime's includes the Python
interpreter that drives it). Where minirt is slower, a per-op profile of
both is appended.
"""
import argparse
import collections
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def input_for(model_path, batch, seed):
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    inp = [i for i in m.graph.input if i.name not in inits][0]
    dims = []
    for k, d in enumerate(inp.type.tensor_type.shape.dim):
        dims.append(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (batch if k == 0 else 1))
    rng = np.random.default_rng(seed)
    return inp.name, rng.random(dims, dtype=np.float32)


def run_minirt(runmodel, model, name, npy, threads, warmup, iters, profile=None, tune=None, cache=None):
    cmd = [runmodel, model, "--input", f"{name}={npy}", "--threads", str(threads), "--warmup", str(warmup),
           "--iterations", str(iters), "--json", "--top-k", "0"]
    if tune:
        cmd += ["--tune", tune]
    if cache:
        cmd += ["--algo-cache", cache]
    if profile:
        cmd += ["--profile", profile]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"runmodel failed on {model}: {r.stderr}")
    return json.loads(r.stdout)


def run_ort(model, npy, threads, warmup, iters, profile=None):
    cmd = [sys.executable, os.path.join(HERE, "ort_worker.py"), model, npy, str(threads), str(warmup), str(iters)]
    if profile:
        cmd += ["--profile", profile]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"onnxruntime failed on {model}: {r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def ort_per_op(profile_json):
    with open(profile_json) as f:
        events = json.load(f)
    by_op = collections.defaultdict(float)
    runs = sum(1 for e in events if e.get("name") == "model_run")
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            by_op[e["args"].get("op_name", "?")] += e["dur"] / 1000.0
    return {k: v / max(runs, 1) for k, v in by_op.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+")
    ap.add_argument("--runmodel", default=os.path.join(ROOT, "build", "bin", "runmodel"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--out", help="write the table (markdown) here as well")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="minirt-bench-")
    rows, details = [], []
    for model in args.models:
        stem = os.path.splitext(os.path.basename(model))[0]
        name, x = input_for(model, args.batch, 0)
        npy = os.path.join(tmp, stem + ".npy")
        np.save(npy, x)
        # Tuning: one exhaustive run measures every candidate of every
        # convolution into a fresh cache file (its tuning time is the cost of
        # a cold cache); the timed rounds then run on that warm cache, which
        # must measure nothing, next to the heuristic's choices and onnxruntime.
        cache = os.path.join(tmp, stem + "_algo_cache.txt")
        ex = run_minirt(args.runmodel, model, name, npy, args.threads, 0, 1, tune="exhaustive", cache=cache)
        ex_tuning = ex["tuning"]
        mine, heur, theirs, mine_rss, their_rss, warm_tuning = [], [], [], 0, 0, None
        for _ in range(args.rounds):
            a = run_minirt(args.runmodel, model, name, npy, args.threads, args.warmup, args.iterations,
                           tune="cached", cache=cache)
            mine += [a["latency_ms"]["median"]]
            mine_rss = max(mine_rss, a["peak_rss_kib"])
            warm_tuning = a["tuning"]
            h = run_minirt(args.runmodel, model, name, npy, args.threads, args.warmup, args.iterations,
                           tune="heuristic")
            heur += [h["latency_ms"]["median"]]
            b = run_ort(model, npy, args.threads, args.warmup, args.iterations)
            theirs += [statistics.median(b["latency_ms"])]
            their_rss = max(their_rss, b["peak_rss_kib"])
        m, hm, o = statistics.median(mine), statistics.median(heur), statistics.median(theirs)
        rows.append((stem, m, o, m / o, mine_rss / 1024, their_rss / 1024, hm, ex_tuning, warm_tuning))
        print(f"{stem}: minirt tuned {m:.2f} ms, heuristic {hm:.2f} ms, onnxruntime {o:.2f} ms, ratio {m / o:.2f}; "
              f"exhaustive tuning {ex_tuning['seconds']:.2f} s ({ex_tuning['measured']} measured), "
              f"warm cache: {warm_tuning['measured']} measured", flush=True)
        if m > o:
            prof = os.path.join(tmp, stem + "_minirt.json")
            a = run_minirt(args.runmodel, model, name, npy, args.threads, args.warmup, args.iterations, prof,
                           tune="cached", cache=cache)
            b = run_ort(model, npy, args.threads, args.warmup, args.iterations, os.path.join(tmp, stem + "_ort"))
            theirs_ops = ort_per_op(b["profile"])
            ops = sorted(a.get("per_op_ms", {}).items(), key=lambda kv: -kv[1])
            details.append((stem, ops, theirs_ops))

    lines = [
        f"# CPU side-by-side: minirt vs onnxruntime",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- CPU: {cpu_name()} ({os.cpu_count()} logical cores visible)",
        f"- threads: {args.threads} for both (onnxruntime intra_op_num_threads, sequential execution)",
        f"- batch {args.batch}; {args.rounds} alternating rounds of {args.warmup} warm-up + {args.iterations} timed runs each",
        f"- onnxruntime {__import__('onnxruntime').__version__}, numpy input uniform [0,1) seed 0",
        "- minirt tuned: `--tune cached` on a cache an `--tune exhaustive` run filled just before (the same "
        "choices exhaustive makes; the warm runs measure nothing); heuristic: `--tune heuristic` (fixed rules)",
        "- latency: median of the per-round medians; ratio = minirt tuned / onnxruntime (below 1: minirt faster)",
        "- tuning time: the exhaustive run's (every candidate of every convolution timed, cold cache) and a warm "
        "cached run's (cache lookups only)",
        "- peak RSS: whole process; onnxruntime's includes its Python interpreter",
        "",
        "| model | minirt tuned (ms) | minirt heuristic (ms) | onnxruntime (ms) | ratio | exhaustive tuning (s) "
        "| warm cached run: measured / from cache, tuning (s) | minirt peak RSS (MiB) | onnxruntime peak RSS (MiB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for stem, m, o, r, mr, orss, hm, ext, wt in rows:
        lines.append(f"| {stem} | {m:.2f} | {hm:.2f} | {o:.2f} | {r:.2f} | {ext['seconds']:.2f} "
                     f"({ext['measured']} convs) | {wt['measured']} / {wt['from_cache']}, {wt['seconds']:.3f} "
                     f"| {mr:.1f} | {orss:.1f} |")
    for stem, ops, theirs_ops in details:
        lines += ["", f"## Where the time goes: {stem} (mean ms per run, by op)", "",
                  "| minirt step op | minirt ms | | onnxruntime op | onnxruntime ms |", "| --- | ---: | --- | --- | ---: |"]
        t_ops = sorted(theirs_ops.items(), key=lambda kv: -kv[1])
        for i in range(max(len(ops), len(t_ops))):
            a = ops[i] if i < len(ops) else ("", None)
            b = t_ops[i] if i < len(t_ops) else ("", None)
            lines.append(f"| {a[0]} | {'' if a[1] is None else f'{a[1]:.3f}'} | | {b[0]} | {'' if b[1] is None else f'{b[1]:.3f}'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
