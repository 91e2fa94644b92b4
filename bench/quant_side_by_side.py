"""Quantized models side by side: minirt, onnxruntime and OpenVINO on the same
quantized file, beside minirt's float32 run of the original, alternating in
one run.

  .venv/bin/python bench/quant_side_by_side.py --float32 DIR --quantized DIR \\
      --rounds 3 --iterations 20 --out bench/results_cpu.md resnet50 mobilenetv2 ...

FLOAT32/<stem>.onnx is the original (minirt-make-models), QUANTIZED holds
<stem>_qdq_s8.onnx, <stem>_qdq_u8.onnx and <stem>_qop.onnx
(models/make_quantized.py). For each model and thread count (--threads,
default 1 and 2), batch 1: each round times minirt on the original and on each
quantized form (`--tune cached` on a cache an exhaustive run filled first),
then onnxruntime and OpenVINO (its default precision) on each form, each in
its own process (bench/ort_worker.py, bench/ov_worker.py) on the same input
(.npy, uniform [0, 1), seed 0). A form an engine refuses shows its error.

Reported per row: the median latencies (medians of the per-round medians),
minirt's quantized run / the faster peer on the same file (issue 25's bar is
0.7) and / minirt's float32 run of the original (the bar: no slower, and
ResNet-50 at most 0.5).
"""
import argparse
import datetime
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bf16_side_by_side as b16  # noqa: E402  (runmodel and the peer workers)
import side_by_side as sbs  # noqa: E402

FORMS = ["qdq_s8", "qdq_u8", "qop"]
PEERS = [("onnxruntime", "ort_worker.py", []), ("OpenVINO", "ov_worker.py", ["--precision", "default"])]


def bench_model(args, tmp, stem, threads):
    import numpy as np
    import onnx
    original = os.path.join(args.float32, stem + ".onnx")
    model = onnx.load(original, load_external_data=False)
    name, shape = sbs.input_shape(model, stem, 1, {})
    npy = os.path.join(tmp, f"{stem}.npy")
    np.save(npy, np.random.default_rng(0).random(shape, dtype=np.float32))
    files = {"fp32": original}
    files.update({f: os.path.join(args.quantized, f"{stem}_{f}.onnx") for f in FORMS})
    caches = {k: os.path.join(tmp, f"{stem}_{k}_t{threads}.txt") for k in files}
    for k, path in files.items():
        b16.minirt(args, path, name, npy, shape, threads, "fp32", "exhaustive", caches[k], 1)
    lat, errors = {}, {}
    for _ in range(args.rounds):
        for k, path in files.items():
            j = b16.minirt(args, path, name, npy, shape, threads, "fp32", "cached", caches[k], args.iterations)
            lat.setdefault(("minirt", k), []).append(j["latency_ms"]["median"])
        for f in FORMS:
            for peer, worker, extra in PEERS:
                try:
                    j = b16.peer(worker, files[f], npy, threads, args.iterations, args.warmup, extra)
                    lat.setdefault((peer, f), []).append(statistics.median(j["latency_ms"]))
                except sbs.RunFailed as e:
                    errors[(peer, f)] = str(e)
    ms = {k: statistics.median(v) for k, v in lat.items()}
    rows = []
    for f in FORMS:
        peers = {p: ms.get((p, f)) for p, _, _ in PEERS}
        best = min((v for v in peers.values() if v), default=None)
        mine = ms[("minirt", f)]
        rows.append({"stem": stem, "form": f, "threads": threads, "minirt": mine, "fp32": ms[("minirt", "fp32")],
                     "peers": peers, "errors": {p: errors.get((p, f)) for p, _, _ in PEERS},
                     "vs_peer": mine / best if best else None, "vs_fp32": mine / ms[("minirt", "fp32")]})
        print(f"{stem} {f} {threads} thread(s): minirt {mine:.2f} ms (float32 {ms[('minirt', 'fp32')]:.2f}), "
              + ", ".join(f"{p} {v:.2f}" if v else f"{p} failed" for p, v in peers.items()), flush=True)
    return rows


def report(args, rows):
    date = datetime.date.today().isoformat()
    versions = {"onnxruntime": sbs.version_of("onnxruntime"), "OpenVINO": sbs.version_of("openvino")}
    lines = [f"## Quantized models: minirt, onnxruntime and OpenVINO on the same file ({date})", "",
             f"- CPU: {sbs.cpu_name()}; {', '.join(f'{k} {v}' for k, v in versions.items())}; OpenVINO at its "
             "default precision",
             f"- batch 1; {args.rounds} alternating rounds of {args.iterations} timed runs after {args.warmup} "
             "warm-up; medians of the per-round medians, ms",
             "- forms (models/make_quantized.py): qdq_s8 = QDQ int8 activations, int8 weights per channel; "
             "qdq_u8 = QDQ uint8 activations, int8 weights per tensor; qop = QOperator (QLinearConv, "
             "com.microsoft ops)", "",
             "| model | form | threads | minirt float32 (original) | minirt | onnxruntime | OpenVINO "
             "| minirt / faster peer | minirt / its float32 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        peer_cells = [b16.fmt(r["peers"][p]) if r["peers"][p] else "fails" for p, _, _ in PEERS]
        lines.append(f"| {r['stem']} | {r['form']} | {r['threads']} | {r['fp32']:.2f} | {r['minirt']:.2f} | "
                     + " | ".join(peer_cells) + f" | {b16.fmt(r['vs_peer'])} | {r['vs_fp32']:.2f} |")
    failures = sorted({f"{p} on {r['form']}: {e}" for r in rows for p, e in r["errors"].items() if e})
    if failures:
        lines += ["", "Refused: " + "; ".join(failures[:6])]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", metavar="STEM")
    ap.add_argument("--float32", required=True, help="folder of the float32 originals")
    ap.add_argument("--quantized", required=True, help="folder of models/make_quantized.py's output")
    ap.add_argument("--runmodel", default=os.path.join(sbs.ROOT, "build", "bin", "runmodel"))
    ap.add_argument("--threads", type=sbs.parse_int_list, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--out", help="append the report (markdown) to this file as well")
    args = ap.parse_args()
    sbs.ensure_requirements(["openvino"])
    tmp = tempfile.mkdtemp(prefix="minirt-quant-bench-")
    rows = []
    for stem in args.models:
        for threads in args.threads:
            rows.extend(bench_model(args, tmp, stem, threads))
    text = report(args, rows)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
