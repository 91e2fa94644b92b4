"""Side-by-side CPU benchmark: minirt's runmodel, onnxruntime and OpenVINO on
the same model, input and thread count, alternating in the same run; minirt
with its tuned convolution algorithms (exhaustive, then from the warm cache)
and with the heuristic's.

  .venv/bin/python bench/side_by_side.py --rounds 5 --iterations 20 \
      --out bench/results_cpu.md build/models/resnet50.onnx ../shared/models/*.onnx ...
  .venv/bin/python bench/side_by_side.py --threads 2 --batch 1 --peers onnxruntime MODEL.onnx   # the old run

For each model, batch size (--batch, default 1 and 8) and thread count
(--threads, default 1 and 2, and all cores where there are more): one
`runmodel --tune exhaustive` run fills a fresh algorithm cache (its tuning
time is reported); then in each round runmodel times ITERATIONS runs after a
warm-up with `--tune cached` on that cache and with `--tune heuristic`, then
each peer does the same in its own process (bench/ort_worker.py,
bench/ov_worker.py); the rounds alternate so all see the same machine state.
All get the same input (.npy, uniform [0, 1), seed 0) and thread count.

Reported per model: the median latency of each (median of the per-round
medians; at batch > 1 as throughput, images/s), minirt tuned / best peer
(below 1 means minirt is faster), minirt's GFLOP/s and its fraction of the
machine's FMA peak at that thread count (2 x the multiply-adds of the
graph's Conv, Gemm and MatMul nodes, counted with onnx shape inference, per
second, over `minirt-fma-peak`'s figure, measured in the same run), and each
one's peak RSS (VmHWM of its own process; the peers' include the Python
interpreter that drives them). Where minirt trails the best peer at batch 1,
a per-op profile of all three is appended.

Batch > 1: a model with a symbolic first input dimension gets the batched
input as it is; a model whose input is fixed at 1 is copied with that
dimension changed (the onnx package), unless a Reshape with a constant shape
pins the batch at 1, in which case the table says so and skips it. Inputs
with other symbolic dimensions need --shape NAME=DxDx... (the shared
`ppocr-mobile-v2-cls` gets x=1x3x48x192 by default); runmodel gets the same
--shape, the peers the concrete .npy (OpenVINO reshapes the model to it).

OpenVINO comes from bench/requirements.txt, installed into this interpreter's
environment (the project's .venv) when missing; the tests' tools/requirements.txt
stays without it. --peers onnxruntime runs without it.

--isa avx2 stands in for an AVX2-only host on one with AVX-512: every process
it starts (runmodel, both peers, minirt-fma-peak) runs with
build/lib/libminirt-cpuid-mask.so preloaded, which hides AVX-512, AMX and
AVX-VNNI from CPUID (bench/cpuid_mask.cpp; needs a CPU and kernel with CPUID
faulting, `cpuid_fault` in /proc/cpuinfo), so all three choose their AVX2
kernels and the FMA peak is the 256-bit one. The script checks that the mask
took and stops if not. The core is still this host's, not a Zen 3's: the
ratios hold for the ISA, not for the microarchitecture.
"""
import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REQUIREMENTS = os.path.join(HERE, "requirements.txt")
PEERS = {"onnxruntime": "onnxruntime", "openvino": "OpenVINO"}  # --peers name -> table name

# Inputs with symbolic dimensions besides the batch, and the shape to use
# when --shape does not give one (as tests/run_model_tests.sh does).
DEFAULT_SHAPES = {"ppocr-mobile-v2-cls": {"x": [1, 3, 48, 192]}}


def parse_int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got '{text}'") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got '{text}'")
    return values


def parse_shape(text):
    name, sep, dims = text.partition("=")
    try:
        shape = [int(d) for d in dims.lower().split("x")]
    except ValueError:
        shape = []
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise argparse.ArgumentTypeError(f"--shape wants NAME=DxDx... with positive dimensions, got '{text}'")
    return name, shape


def parse_peers(text):
    peers = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad or not peers:
        raise argparse.ArgumentTypeError(f"--peers wants a list of {', '.join(PEERS)}, got '{text}'")
    return peers


def default_threads():
    n = os.cpu_count() or 1
    return sorted({1, 2, n}) if n > 2 else [1, 2]


def ensure_requirements(peers):
    """Installs bench/requirements.txt into this interpreter's environment when a peer's package is missing."""
    if "openvino" in peers and importlib.util.find_spec("openvino") is None:
        print(f"openvino is not installed in {sys.prefix}; installing {os.path.relpath(REQUIREMENTS, ROOT)}",
              flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r", REQUIREMENTS], check=True)


def version_of(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


ISA_MASKED = None  # what --isa avx2 hid, for the report


def mask_isa(args):
    """Makes every process this script starts see an AVX2-only CPU (LD_PRELOAD of the cpuid-mask library), and
    checks that it took: minirt-fma-peak, which picks its ISA from CPUID, must then report avx2."""
    global ISA_MASKED
    if not os.path.isfile(args.cpuid_mask):
        sys.exit(f"--isa avx2: {args.cpuid_mask} not found (build the minirt-cpuid-mask target, "
                 "MINIRT_BUILD_BENCH=ON)")
    os.environ["LD_PRELOAD"] = " ".join(filter(None, [args.cpuid_mask, os.environ.get("LD_PRELOAD")]))
    os.environ["MINIRT_CPUID_MASK_QUIET"] = "1"
    if os.path.isfile(args.fma_peak):
        r = subprocess.run([args.fma_peak, "--threads", "1", "--seconds", "0.05"], capture_output=True, text=True)
        isa = json.loads(r.stdout).get("isa") if r.returncode == 0 else None
        if isa != "avx2":
            sys.exit(f"--isa avx2: with {os.path.basename(args.cpuid_mask)} preloaded, minirt-fma-peak still chose "
                     f"{isa} ({r.stderr.strip()}); this CPU or kernel cannot make CPUID fault")
    ISA_MASKED = "AVX-512, AMX and AVX-VNNI hidden from every engine by CPUID faulting (`--isa avx2`)"


def cpu_isa():
    """The vector ISA from /proc/cpuinfo's flags: what minirt's kernels choose from at run time."""
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    if ISA_MASKED and "avx2" in flags:
        return "AVX2 + FMA: " + ISA_MASKED
    if "avx512f" in flags:
        extra = [f for f in ("avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16") if f in flags]
        return "AVX-512 (avx512f" + "".join(", " + f for f in extra) + ")"
    if "avx2" in flags:
        return "AVX2" + (" + FMA" if "fma" in flags else "") + " (no AVX-512)"
    return "no AVX2 (" + ("avx" if "avx" in flags else "sse") + ")"


# ---------------------------------------------------------------------------
# Models: inputs, batch copies, multiply-adds.

def graph_input(model):
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits][0]


def input_shape(model, stem, batch, shapes):
    """The concrete input shape at this batch, or raises ValueError saying what is missing."""
    inp = graph_input(model)
    given = shapes.get(inp.name) or DEFAULT_SHAPES.get(stem, {}).get(inp.name)
    dims = inp.type.tensor_type.shape.dim
    fixed = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims]
    if given:
        if len(given) != len(fixed):
            raise ValueError(f"--shape {inp.name} has {len(given)} dimensions, the model's input {len(fixed)}")
        shape = list(given)
    else:
        missing = [k for k, d in enumerate(fixed) if d is None and k > 0]
        if missing:
            raise ValueError(f"input '{inp.name}' has symbolic dimensions {missing}; give --shape {inp.name}=DxDx...")
        shape = [d if d is not None else 1 for d in fixed]
    shape[0] = batch if batch > 1 else shape[0]
    return inp.name, shape


def pinned_batch_reason(model):
    """Why a fixed-batch model cannot be re-batched: a Reshape to a constant shape starting with 1."""
    from onnx import numpy_helper
    consts = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = a.t
    for n in model.graph.node:
        if n.op_type == "Reshape" and len(n.input) > 1 and n.input[1] in consts:
            shape = numpy_helper.to_array(consts[n.input[1]]).tolist()
            if shape and shape[0] == 1:
                return f"Reshape '{n.name or n.output[0]}' has the constant shape {shape}, which pins the batch at 1"
    return None


def batched_model(path, model, stem, batch, tmp):
    """(path, None) of a model that takes this batch, or (None, reason) when it cannot."""
    dim0 = graph_input(model).type.tensor_type.shape.dim[0]
    if batch == 1 or not (dim0.HasField("dim_value") and dim0.dim_value > 0):
        return path, None  # batch 1, or a symbolic batch dimension: the model as it is
    reason = pinned_batch_reason(model)
    if reason:
        return None, reason
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    graph_input(m).type.tensor_type.shape.dim[0].dim_value = batch
    for o in m.graph.output:
        d = o.type.tensor_type.shape.dim
        if len(d) and d[0].HasField("dim_value") and d[0].dim_value == 1:
            d[0].dim_value = batch
    del m.graph.value_info[:]  # shapes inferred for batch 1 would contradict
    out = os.path.join(tmp, f"{stem}_batch{batch}.onnx")
    onnx.save(m, out)
    return out, None


def count_macs(model, input_name, shape):
    """Multiply-adds of the Conv, Gemm and MatMul nodes at this input shape (onnx shape inference)."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i in m.graph.input:
        if i.name == input_name:
            dims = i.type.tensor_type.shape.dim
            for k, v in enumerate(shape):
                dims[k].Clear()
                dims[k].dim_value = v
    m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    shapes = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        d = v.type.tensor_type.shape.dim
        if all(x.HasField("dim_value") for x in d):
            shapes[v.name] = [x.dim_value for x in d]
    for t in m.graph.initializer:
        shapes[t.name] = list(t.dims)
    total, unknown = 0, 0
    for n in m.graph.node:
        if n.op_type not in ("Conv", "Gemm", "MatMul"):
            continue
        y = shapes.get(n.output[0])
        w = shapes.get(n.input[1])
        a = shapes.get(n.input[0])
        if n.op_type == "Conv" and y and w:
            total += math.prod(y) * math.prod(w[1:])  # per output element: Cin/group x kh x kw
        elif n.op_type == "Gemm" and y and a:
            trans_a = any(x.name == "transA" and x.i for x in n.attribute)
            total += math.prod(y) * (a[0] if trans_a else a[1])
        elif n.op_type == "MatMul" and y and a:
            total += math.prod(y) * a[-1]
        else:
            unknown += 1
    return total, unknown


# ---------------------------------------------------------------------------
# Running the three.

class RunFailed(Exception):
    pass


def last_line_json(text):
    return json.loads(text.strip().splitlines()[-1])


def run_minirt(args, model, name, npy, shape, threads, warmup, iters, profile=None, tune=None, cache=None):
    cmd = [args.runmodel, model, "--device", "cpu", "--input", f"{name}={npy}",
           "--shape", f"{name}={'x'.join(map(str, shape))}", "--threads", str(threads), "--warmup", str(warmup),
           "--iterations", str(iters), "--json", "--top-k", "0"]
    if tune:
        cmd += ["--tune", tune]
    if cache:
        cmd += ["--algo-cache", cache]
    if profile:
        cmd += ["--profile", profile]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RunFailed(f"runmodel exit {r.returncode}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return json.loads(r.stdout)


def run_peer(peer, model, npy, threads, warmup, iters, profile=None):
    worker = os.path.join(HERE, "ort_worker.py" if peer == "onnxruntime" else "ov_worker.py")
    cmd = [sys.executable, worker, model, npy, str(threads), str(warmup), str(iters)]
    if profile:
        cmd += ["--profile"] + ([profile] if peer == "onnxruntime" else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RunFailed(f"{PEERS[peer]} exit {r.returncode}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return last_line_json(r.stdout)


def ort_per_op(profile_json):
    import collections
    with open(profile_json) as f:
        events = json.load(f)
    by_op = collections.defaultdict(float)
    runs = sum(1 for e in events if e.get("name") == "model_run")
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            by_op[e["args"].get("op_name", "?")] += e["dur"] / 1000.0
    return {k: v / max(runs, 1) for k, v in by_op.items()}


def fma_peak(args, threads):
    """{threads: GFLOP/s} from minirt-fma-peak, plus its ISA; empty when it is not built."""
    if not os.path.isfile(args.fma_peak):
        print(f"note: {args.fma_peak} not found (build the minirt-fma-peak target); no fraction of peak", flush=True)
        return {}, None
    r = subprocess.run([args.fma_peak, "--threads", ",".join(map(str, threads))], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"note: minirt-fma-peak failed: {r.stderr.strip()}", flush=True)
        return {}, None
    j = json.loads(r.stdout)
    return {x["threads"]: x["gflops"] for x in j["results"]}, j


def bench_one(args, tmp, stem, path, name, shape, batch, threads, macs):
    """One (model, batch, threads) configuration: tuning, alternating rounds, optional profiles."""
    import numpy as np
    rng = np.random.default_rng(0)
    npy = os.path.join(tmp, f"{stem}_b{batch}.npy")
    if not os.path.exists(npy):
        np.save(npy, rng.random(shape, dtype=np.float32))
    iters = args.iterations if batch == 1 else max(3, math.ceil(args.iterations / batch))
    res = {"stem": stem, "batch": batch, "threads": threads, "macs": macs, "iterations": iters}
    # Tuning: one exhaustive run measures every candidate of every convolution
    # into a fresh cache file (its tuning time is the cost of a cold cache);
    # the timed rounds then run on that warm cache, which must measure
    # nothing, next to the heuristic's choices and the peers.
    cache = os.path.join(tmp, f"{stem}_b{batch}_t{threads}_algo_cache.txt")
    try:
        res["ex_tuning"] = run_minirt(args, path, name, npy, shape, threads, 0, 1, tune="exhaustive",
                                      cache=cache)["tuning"]
    except RunFailed as e:
        res["error"] = f"minirt: {e}"
        return res
    try:
        timed_rounds(args, tmp, res, path, name, npy, shape, threads, iters, cache)
    except RunFailed as e:
        res["error"] = f"minirt: {e}"
    return res


def timed_rounds(args, tmp, res, path, name, npy, shape, threads, iters, cache):
    stem, batch = res["stem"], res["batch"]
    lat = {k: [] for k in ["tuned", "heuristic"] + args.peers}
    rss = {k: 0 for k in ["minirt"] + args.peers}
    failed = {}
    for _ in range(args.rounds):
        a = run_minirt(args, path, name, npy, shape, threads, args.warmup, iters, tune="cached", cache=cache)
        lat["tuned"].append(a["latency_ms"]["median"])
        rss["minirt"] = max(rss["minirt"], a["peak_rss_kib"])
        res["warm_tuning"] = a["tuning"]
        h = run_minirt(args, path, name, npy, shape, threads, args.warmup, iters, tune="heuristic")
        lat["heuristic"].append(h["latency_ms"]["median"])
        rss["minirt"] = max(rss["minirt"], h["peak_rss_kib"])
        for peer in args.peers:
            if peer in failed:
                continue
            try:
                b = run_peer(peer, path, npy, threads, args.warmup, iters)
            except RunFailed as e:
                failed[peer] = str(e)
                continue
            lat[peer].append(statistics.median(b["latency_ms"]))
            rss[peer] = max(rss[peer], b["peak_rss_kib"])
    res["median_ms"] = {k: statistics.median(v) for k, v in lat.items() if v}
    res["rss_mib"] = {k: v / 1024 for k, v in rss.items() if v}
    res["peer_errors"] = failed
    peers_ms = {p: res["median_ms"][p] for p in args.peers if p in res["median_ms"]}
    if peers_ms:
        best = min(peers_ms, key=peers_ms.get)
        res["best_peer"] = best
        res["ratio"] = res["median_ms"]["tuned"] / peers_ms[best]
    m = res["median_ms"]
    print(f"{stem} batch {batch}, {threads} thread(s): minirt tuned {m['tuned']:.2f} ms, heuristic "
          f"{m['heuristic']:.2f} ms, " + ", ".join(f"{PEERS[p]} {m[p]:.2f} ms" for p in peers_ms)
          + (f", ratio {res['ratio']:.2f}" if "ratio" in res else "")
          + "".join(f"; {PEERS[p]} failed: {e}" for p, e in failed.items()), flush=True)

    if batch == 1 and res.get("ratio", 0) > 1 and not args.no_profile:
        prof = os.path.join(tmp, f"{stem}_t{threads}_minirt.json")
        a = run_minirt(args, path, name, npy, shape, threads, args.warmup, iters, prof, tune="cached", cache=cache)
        res["profile"] = {"minirt": a.get("per_op_ms", {})}
        for peer in peers_ms:
            try:
                if peer == "onnxruntime":
                    b = run_peer(peer, path, npy, threads, args.warmup, iters,
                                 os.path.join(tmp, f"{stem}_t{threads}_ort"))
                    res["profile"][peer] = ort_per_op(b["profile"])
                else:
                    res["profile"][peer] = run_peer(peer, path, npy, threads, args.warmup, iters,
                                                    profile=True).get("per_op_ms", {})
            except RunFailed as e:
                res["profile"][peer] = {f"(profile failed: {e})": 0.0}


# ---------------------------------------------------------------------------
# The report.

def fmt_ms(ms, batch):
    """Latency in ms at batch 1, throughput in images/s above."""
    if ms is None:
        return "—"
    return f"{ms:.2f}" if batch == 1 else f"{batch * 1000.0 / ms:.1f}"


def report(args, rows, peak, peak_json, versions):
    peer_cols = [PEERS[p] for p in args.peers]
    lines = [
        f"# CPU side-by-side: minirt vs {' and '.join(peer_cols)}",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- CPU: {cpu_name()} ({os.cpu_count()} logical cores visible)",
        f"- ISA: {cpu_isa()}",
        f"- threads: {', '.join(map(str, args.threads))} for all (onnxruntime intra_op_num_threads, sequential "
        "execution; OpenVINO INFERENCE_NUM_THREADS, PERFORMANCE_HINT LATENCY, INFERENCE_PRECISION_HINT f32)",
        f"- batch {', '.join(map(str, args.batch))}; {args.rounds} alternating rounds of {args.warmup} warm-up + "
        f"{args.iterations} timed runs each (at batch N > 1, ITERATIONS / N runs, at least 3)",
        "- " + ", ".join(f"{k} {v}" for k, v in versions.items()) + ", numpy input uniform [0,1) seed 0",
        "- minirt tuned: `--tune cached` on a cache an `--tune exhaustive` run filled just before (the same "
        "choices exhaustive makes; the warm runs measure nothing); heuristic: `--tune heuristic` (fixed rules)",
        "- latency: median of the per-round medians; at batch > 1 throughput in images/s; "
        "ratio = minirt tuned / best peer in time (below 1: minirt faster)",
        "- GFLOP/s: 2 x the multiply-adds of the graph's Conv, Gemm and MatMul nodes (onnx shape inference) per "
        "second of minirt tuned; % of peak: over `minirt-fma-peak` at the same thread count, measured in this run",
        "- tuning time: the exhaustive run's (every candidate of every convolution timed, cold cache) and a warm "
        "cached run's (cache lookups only)",
        "- peak RSS: whole process (VmHWM); the peers' include the Python interpreter that drives them",
    ]
    if peak:
        lines.append(f"- FMA peak (`minirt-fma-peak`, {peak_json['isa']}, {peak_json['chains']} independent chains): "
                     + ", ".join(f"{t} thread{'s' if t > 1 else ''} {g:.1f} GFLOP/s" for t, g in sorted(peak.items())))
    for batch in args.batch:
        for threads in args.threads:
            sel = [r for r in rows if r["batch"] == batch and r["threads"] == threads]
            if not sel:
                continue
            u = "ms" if batch == 1 else "images/s"
            lines += ["", f"## batch {batch}, {threads} thread{'s' if threads > 1 else ''}"
                      + ("" if batch == 1 else " (throughput)"), "",
                      f"| model | minirt tuned ({u}) | minirt heuristic ({u}) | "
                      + " | ".join(f"{c} ({u})" for c in peer_cols)
                      + " | minirt / best peer | minirt GFLOP/s (% of peak) | exhaustive tuning (s) "
                      "| warm cached run: measured / from cache, tuning (s) | peak RSS (MiB): minirt / "
                      + " / ".join(peer_cols) + " |",
                      "| --- | " + " | ".join(["---:"] * (len(peer_cols) + 7)) + " |"]
            for r in sel:
                if "skip" in r or "error" in r:
                    why = r.get("skip") and f"skipped: {r['skip']}" or f"failed: {r['error']}"
                    lines.append(f"| {r['stem']} | {why} |" + " |" * (len(peer_cols) + 6))
                    continue
                m = r["median_ms"]
                cells = [fmt_ms(m.get("tuned"), batch), fmt_ms(m.get("heuristic"), batch)]
                cells += [fmt_ms(m.get(p), batch) if p in m else f"failed: {r['peer_errors'].get(p, '?')}"
                          for p in args.peers]
                cells.append(f"{r['ratio']:.2f} ({PEERS[r['best_peer']]})" if "ratio" in r else "—")
                if r["macs"]:
                    gflops = 2 * r["macs"] / (m["tuned"] / 1000) / 1e9
                    frac = f" ({100 * gflops / peak[threads]:.0f}%)" if threads in peak else ""
                    cells.append(f"{gflops:.1f}{frac}")
                else:
                    cells.append("—")
                ext, wt = r["ex_tuning"], r.get("warm_tuning", {})
                cells.append(f"{ext['seconds']:.2f} ({ext['measured']} convs)")
                cells.append(f"{wt.get('measured', '?')} / {wt.get('from_cache', '?')}, {wt.get('seconds', 0):.3f}")
                cells.append(" / ".join(f"{r['rss_mib'][k]:.0f}" if k in r["rss_mib"] else "—"
                                        for k in ["minirt"] + args.peers))
                lines.append(f"| {r['stem']} | " + " | ".join(cells) + " |")

    r50 = [r for r in rows if r["stem"] == "resnet50" and "median_ms" in r and r["macs"]]
    if r50:
        lines += ["", "## ResNet-50: fraction of the FMA peak", "",
                  f"{r50[0]['macs'] / r50[0]['batch'] / 1e9:.2f} G multiply-adds per image (Conv and Gemm, from the graph); "
                  "fraction = (2 x multiply-adds x batch / latency) / `minirt-fma-peak` at that thread count.", "",
                  "| batch | threads | FMA peak (GFLOP/s) | minirt tuned | minirt heuristic | "
                  + " | ".join(peer_cols) + " |",
                  "| ---: | ---: | ---: | " + " | ".join(["---:"] * (2 + len(peer_cols))) + " |"]
        for r in r50:
            pk = peak.get(r["threads"])
            cells = []
            for k in ["tuned", "heuristic"] + args.peers:
                ms = r["median_ms"].get(k)
                if ms is None:
                    cells.append("—")
                    continue
                g = 2 * r["macs"] / (ms / 1000) / 1e9
                cells.append(f"{g:.1f} GFLOP/s" + (f" ({100 * g / pk:.0f}%)" if pk else ""))
            lines.append(f"| {r['batch']} | {r['threads']} | {pk if pk else '—'} | " + " | ".join(cells) + " |")

    for r in rows:
        prof = r.get("profile")
        if not prof:
            continue
        cols = ["minirt"] + [p for p in args.peers if p in prof]
        names = {"minirt": "minirt step op"} | {p: f"{PEERS[p]} op" for p in args.peers}
        lines += ["", f"## Where the time goes: {r['stem']}, batch 1, {r['threads']} thread"
                  f"{'s' if r['threads'] > 1 else ''} (mean ms per run, by op)", "",
                  "| " + " | | ".join(f"{names[c]} | ms" for c in cols) + " |",
                  "| " + " | --- | ".join("--- | ---:" for _ in cols) + " |"]
        ordered = {c: sorted(prof[c].items(), key=lambda kv: -kv[1]) for c in cols}
        for i in range(max(len(v) for v in ordered.values())):
            cells = []
            for c in cols:
                op, ms = ordered[c][i] if i < len(ordered[c]) else ("", None)
                cells.append(f"{op} | {'' if ms is None else f'{ms:.3f}'}")
            lines.append("| " + " | | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", metavar="MODEL.onnx")
    ap.add_argument("--runmodel", default=os.path.join(ROOT, "build", "bin", "runmodel"))
    ap.add_argument("--fma-peak", default=os.path.join(ROOT, "build", "bin", "minirt-fma-peak"),
                    help="the minirt-fma-peak binary (default build/bin/minirt-fma-peak)")
    ap.add_argument("--threads", type=parse_int_list, default=default_threads(),
                    help="thread counts, e.g. 1,2 (default: 1 and 2, and all cores where there are more)")
    ap.add_argument("--batch", type=parse_int_list, default=[1, 8],
                    help="batch sizes, e.g. 1,8 (default); above 1 reported as images/s")
    ap.add_argument("--peers", type=parse_peers, default=list(PEERS),
                    help="runtimes to compare with: onnxruntime,openvino (default both)")
    ap.add_argument("--shape", type=parse_shape, action="append", default=[],
                    help="NAME=DxDx...: an input's whole shape at batch 1, for symbolic dimensions (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--isa", choices=["native", "avx2"], default="native",
                    help="avx2: run every engine (and the FMA peak) with AVX-512, AMX and AVX-VNNI hidden from CPUID "
                         "by the --cpuid-mask library, to stand in for an AVX2-only host")
    ap.add_argument("--cpuid-mask", default=os.path.join(ROOT, "build", "lib", "libminirt-cpuid-mask.so"),
                    help="the LD_PRELOAD library --isa avx2 uses (default build/lib/libminirt-cpuid-mask.so)")
    ap.add_argument("--no-profile", action="store_true", help="skip the per-op profiles where minirt trails")
    ap.add_argument("--out", help="write the report (markdown) here as well")
    args = ap.parse_args()
    if args.rounds < 1 or args.iterations < 1 or args.warmup < 0:
        ap.error("--rounds and --iterations must be at least 1, --warmup at least 0")
    if not os.path.isfile(args.runmodel):
        ap.error(f"{args.runmodel} not found (build minirt, or give --runmodel)")
    ensure_requirements(args.peers)
    if args.isa == "avx2":
        mask_isa(args)
    import onnx

    shapes = dict(args.shape)
    tmp = tempfile.mkdtemp(prefix="minirt-bench-")
    peak, peak_json = fma_peak(args, args.threads)
    if peak:
        print("FMA peak: " + ", ".join(f"{t} thread(s) {g:.1f} GFLOP/s" for t, g in sorted(peak.items())),
              flush=True)
    rows = []
    for path in args.models:
        stem = os.path.splitext(os.path.basename(path))[0]
        model = onnx.load(path, load_external_data=False)
        for batch in args.batch:
            base = {"stem": stem, "batch": batch}
            try:
                name, shape = input_shape(model, stem, batch, shapes)
            except ValueError as e:
                sys.exit(f"{path}: {e}")
            bpath, reason = batched_model(path, model, stem, batch, tmp)
            if reason:
                print(f"{stem} batch {batch}: skipped: {reason}", flush=True)
                rows += [dict(base, threads=t, skip=reason) for t in args.threads]
                continue
            try:
                macs, unknown = count_macs(model, name, shape)
                if unknown:
                    print(f"note: {stem}: {unknown} Conv/Gemm/MatMul nodes without inferred shapes are not counted")
            except Exception as e:  # shape inference can reject exotic graphs; the timing still stands
                print(f"note: {stem}: multiply-adds not counted ({e})")
                macs = 0
            for threads in args.threads:
                rows.append(bench_one(args, tmp, stem, bpath, name, shape, batch, threads, macs))
                if "error" in rows[-1]:
                    print(f"{stem} batch {batch}, {threads} thread(s): {rows[-1]['error']}", flush=True)

    versions = {"onnxruntime": version_of("onnxruntime")}
    if "openvino" in args.peers:
        versions["OpenVINO"] = version_of("openvino")
    text = report(args, rows, peak, peak_json, versions)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
