"""bf16 on the CPU, side by side: minirt `--math bf16` against OpenVINO with its
default precision (bf16 wherever the CPU has bf16 instructions), beside the
float32 runs of both and onnxruntime's, alternating in one run; and each
bf16 run's accuracy against onnxruntime's float32 output.

  .venv/bin/python bench/bf16_side_by_side.py --rounds 5 --iterations 30 \
      --out bench/results_bf16.md build/models/resnet50.onnx ../shared/models/*.onnx ...

For each model, batch size (--batch, default 1) and thread count (--threads,
default 1 and 2): one `runmodel --tune exhaustive` run per minirt math mode
fills a fresh algorithm cache (the cache keys the math mode); then each round
times, in turn, minirt fp32 and bf16 (`--tune cached` on those caches),
onnxruntime (float32), OpenVINO f32 (INFERENCE_PRECISION_HINT=f32) and
OpenVINO with its defaults (bench/ort_worker.py, bench/ov_worker.py), each in
its own process on the same input (.npy, uniform [0, 1), seed 0).

Reported per row: the median latencies (medians of the per-round medians),
minirt bf16 / OpenVINO default (below 1: minirt faster; the issue's bar is
0.9), and, against onnxruntime's float32 output on that input, the scaled
error max|a - ref| / max|ref| of minirt bf16 and of OpenVINO default (the
first output), and whether the top-1 class is kept where the first output is
[N, classes]. The bf16 peak of `minirt-fma-peak` at each thread count (its
AMX-BF16 tile loop, or its vdpbf16ps loop on a CPU with AVX512_BF16 only),
and each model's bf16 GFLOP/s as a fraction of it, close the table.

OpenVINO comes from bench/requirements.txt (installed into this interpreter's
environment when missing), as for side_by_side.py.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import side_by_side as sbs  # noqa: E402  (the shared helpers: shapes, batching, MAC counting, versions)

ENGINES = ["minirt fp32", "minirt bf16", "onnxruntime", "OpenVINO f32", "OpenVINO default"]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise sbs.RunFailed(f"{os.path.basename(cmd[1] if cmd[0] == sys.executable else cmd[0])} exit "
                            f"{r.returncode}: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return sbs.last_line_json(r.stdout)


def minirt(args, path, name, npy, shape, threads, math, tune, cache, iters, out_dir=None):
    cmd = [args.runmodel, path, "--device", "cpu", "--input", f"{name}={npy}", "--shape",
           f"{name}={'x'.join(map(str, shape))}", "--threads", str(threads), "--warmup", str(args.warmup),
           "--iterations", str(iters), "--json", "--top-k", "0", "--math", math, "--tune", tune, "--algo-cache", cache]
    if out_dir:
        cmd += ["--output-dir", out_dir]
    return run(cmd)


def peer(worker, path, npy, threads, iters, warmup, extra=()):
    return run([sys.executable, os.path.join(HERE, worker), path, npy, str(threads), str(warmup), str(iters),
                *extra])


def scaled_error(a, ref):
    import numpy as np
    a, ref = np.asarray(a, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    if a.shape != ref.shape:
        return float("nan"), None
    denom = np.max(np.abs(ref))
    err = float(np.max(np.abs(a - ref)) / denom) if denom > 0 else float(np.max(np.abs(a - ref)))
    top1 = None
    if ref.ndim == 2 and ref.shape[1] >= 10:
        top1 = bool(np.all(np.argmax(a, axis=1) == np.argmax(ref, axis=1)))
    return err, top1


def bench_one(args, tmp, stem, path, name, shape, batch, threads, macs, first_output):
    import numpy as np
    npy = os.path.join(tmp, f"{stem}_b{batch}.npy")
    if not os.path.exists(npy):
        np.save(npy, np.random.default_rng(0).random(shape, dtype=np.float32))
    iters = args.iterations if batch == 1 else max(3, -(-args.iterations // batch))
    res = {"stem": stem, "batch": batch, "threads": threads, "macs": macs}
    caches = {m: os.path.join(tmp, f"{stem}_b{batch}_t{threads}_{m}.txt") for m in ("fp32", "bf16")}
    # Accuracy: one run of each against onnxruntime's float32 output.
    ref_npy, ov_npy = os.path.join(tmp, f"{stem}_ref.npy"), os.path.join(tmp, f"{stem}_ov.npy")
    out_dir = os.path.join(tmp, f"{stem}_minirt_bf16")
    try:
        for m, cache in caches.items():
            minirt(args, path, name, npy, shape, threads, m, "exhaustive", cache, 1)
        res["cpu_math"] = minirt(args, path, name, npy, shape, threads, "bf16", "cached", caches["bf16"], 1,
                                 out_dir).get("cpu_math", "")
        peer("ort_worker.py", path, npy, threads, 1, 0, ["--output", ref_npy])
        ov = peer("ov_worker.py", path, npy, threads, 1, 0, ["--precision", "default", "--output", ov_npy])
        res["ov_precision"] = ov.get("precision", "?")
    except sbs.RunFailed as e:
        res["error"] = str(e)
        return res
    ref = np.load(ref_npy)
    # runmodel writes each output as DIR/NAME.npy; the model's first output is the one compared.
    mine = os.path.join(out_dir, f"{first_output}.npy")
    ours = np.load(mine) if os.path.exists(mine) else None
    res["err_minirt"], res["top1_minirt"] = scaled_error(ours, ref) if ours is not None else (float("nan"), None)
    res["err_ov"], res["top1_ov"] = scaled_error(np.load(ov_npy), ref)

    lat = {k: [] for k in ENGINES}
    for _ in range(args.rounds):
        for m in ("fp32", "bf16"):
            j = minirt(args, path, name, npy, shape, threads, m, "cached", caches[m], iters)
            lat[f"minirt {m}"].append(j["latency_ms"]["median"])
        for key, worker, extra in (("onnxruntime", "ort_worker.py", []),
                                   ("OpenVINO f32", "ov_worker.py", ["--precision", "f32"]),
                                   ("OpenVINO default", "ov_worker.py", ["--precision", "default"])):
            try:
                lat[key].append(statistics.median(peer(worker, path, npy, threads, iters, args.warmup, extra)
                                                  ["latency_ms"]))
            except sbs.RunFailed as e:
                res.setdefault("peer_errors", {})[key] = str(e)
    res["ms"] = {k: statistics.median(v) for k, v in lat.items() if v}
    m = res["ms"]
    if "OpenVINO default" in m:
        res["ratio"] = m["minirt bf16"] / m["OpenVINO default"]
    print(f"{stem} batch {batch}, {threads} thread(s): " + ", ".join(f"{k} {v:.2f} ms" for k, v in m.items())
          + (f", bf16 ratio {res['ratio']:.2f}" if "ratio" in res else "")
          + f"; scaled error minirt {res['err_minirt']:.2g}, OpenVINO default {res['err_ov']:.2g}", flush=True)
    return res


def fmt(v, spec=".2f"):
    return "—" if v is None or (isinstance(v, float) and v != v) else format(v, spec)


def top1(v):
    return "—" if v is None else ("kept" if v else "CHANGED")


def report(args, rows, peak_name, bf16_peak, versions):
    date = datetime.date.today().isoformat()
    lines = [f"## bf16 on the CPU: minirt --math bf16 against OpenVINO's default ({date})", "",
             f"- CPU: {sbs.cpu_name()}; minirt's bf16 path: {next((r['cpu_math'] for r in rows if r.get('cpu_math')), '?')}",
             f"- {', '.join(f'{k} {v}' for k, v in versions.items())}; OpenVINO default ran as "
             f"{next((r['ov_precision'] for r in rows if r.get('ov_precision')), '?')}",
             f"- {args.rounds} alternating rounds of {args.iterations} timed runs after {args.warmup} warm-up; "
             "medians of the per-round medians, ms; minirt `--tune cached` on a cache an exhaustive run filled "
             "per math mode just before",
             "- scaled error: max|a - onnxruntime fp32| / max|onnxruntime fp32| of the first output, same input",
             "", "| model | batch | threads | minirt fp32 | minirt bf16 | onnxruntime | OpenVINO f32 | OpenVINO default "
             "| minirt bf16 / OV default | error minirt bf16 | error OV default | top-1 minirt / OV | bf16 GFLOP/s "
             f"(of {peak_name or 'bf16'} peak) |", "|" + " --- |" * 13]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['stem']} | {r['batch']} | {r['threads']} | failed: {r['error']} |" + " |" * 10)
            continue
        m = r["ms"]
        # macs counts the batched model (count_macs at the batched shape).
        gf = 2 * r["macs"] / (m["minirt bf16"] / 1000) / 1e9 if r["macs"] else None
        peak = bf16_peak.get(r["threads"])
        frac = f"{gf:.0f} ({100 * gf / peak:.0f}%)" if gf and peak else fmt(gf, ".0f")
        lines.append(f"| {r['stem']} | {r['batch']} | {r['threads']} | " + " | ".join(
            fmt(m.get(k)) for k in ENGINES) + f" | {fmt(r.get('ratio'))} | {fmt(r['err_minirt'], '.2g')} | "
            f"{fmt(r['err_ov'], '.2g')} | {top1(r['top1_minirt'])} / {top1(r['top1_ov'])} | {frac} |")
    if bf16_peak:
        lines += ["", f"{peak_name} peak (minirt-fma-peak): " +
                  ", ".join(f"{t} thread(s) {g:.0f} GFLOP/s" for t, g in sorted(bf16_peak.items()))]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", metavar="MODEL.onnx")
    ap.add_argument("--runmodel", default=os.path.join(sbs.ROOT, "build", "bin", "runmodel"))
    ap.add_argument("--fma-peak", default=os.path.join(sbs.ROOT, "build", "bin", "minirt-fma-peak"))
    ap.add_argument("--threads", type=sbs.parse_int_list, default=[1, 2])
    ap.add_argument("--batch", type=sbs.parse_int_list, default=[1])
    ap.add_argument("--shape", type=sbs.parse_shape, action="append", default=[])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--out", help="append the report (markdown) to this file as well")
    args = ap.parse_args()
    sbs.ensure_requirements(["openvino"])
    import onnx
    # The yardstick is the peak of the unit minirt's bf16 convolutions use:
    # AMX-BF16 tiles where the CPU has them, vdpbf16ps where it has only
    # AVX512_BF16 (AMD Zen 4, or AMX masked with MINIRT_CPU_ISA).
    peak_name, bf16_peak = None, {}
    if os.path.isfile(args.fma_peak):
        j = json.loads(subprocess.run([args.fma_peak, "--threads", ",".join(map(str, args.threads))],
                                      capture_output=True, text=True).stdout)
        capped = os.environ.get("MINIRT_CPU_ISA", os.environ.get("MINIRT_SGEMM_ISA", "")) == "avx512_bf16"
        for key, label in (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512_BF16")):
            if j.get(key) and not (capped and key == "amx_bf16"):
                peak_name, bf16_peak = label, {x["threads"]: x["gflops"] for x in j[key]}
                break
    tmp = tempfile.mkdtemp(prefix="minirt-bf16-bench-")
    shapes = dict(args.shape)
    rows = []
    for path in args.models:
        stem = os.path.splitext(os.path.basename(path))[0]
        model = onnx.load(path, load_external_data=False)
        for batch in args.batch:
            name, shape = sbs.input_shape(model, stem, batch, shapes)
            bpath, reason = sbs.batched_model(path, model, stem, batch, tmp)
            if reason:
                print(f"{stem} batch {batch}: skipped: {reason}")
                continue
            try:
                macs, _ = sbs.count_macs(model, name, shape)
            except Exception:
                macs = 0
            for threads in args.threads:
                rows.append(bench_one(args, tmp, stem, bpath, name, shape, batch, threads, macs,
                                      model.graph.output[0].name))
    versions = {"onnxruntime": sbs.version_of("onnxruntime"), "OpenVINO": sbs.version_of("openvino")}
    text = report(args, rows, peak_name, bf16_peak, versions)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
