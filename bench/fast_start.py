"""Fast-start benchmark (issue 26, "How it is measured"): how long each engine
takes to its first result from a fresh process, how good minirt's default
steady state is against an exhaustively tuned session's and the heuristic's,
and how much memory it takes against onnxruntime's.

  .venv/bin/python bench/fast_start.py --rounds 3 --out /tmp/fast_start.md        # every bench model
  .venv/bin/python bench/fast_start.py --rounds 2 build/models/mnist_cnn.onnx       # one model, quickly

Without MODEL arguments it covers the generated models (build/models: make
them with `build/bin/minirt-make-models --out build/models`) and the real ones
in ../shared/models; a missing file stops it before anything runs.

For each model and thread count (--threads, default 2; batch 1), every round
starts each of these in a fresh process, on the same input (.npy, uniform
[0, 1), seed 0), round k in this order rotated by k places (the warm-cache
run always right after the empty-cache one), so that no engine always runs
first:

  minirt, empty cache   runmodel with its default tuning (no --tune) on a new, empty algorithm cache file
  minirt, warm cache    runmodel again, default tuning, on the file the empty-cache run just wrote
  minirt exhaustive     runmodel --tune exhaustive on a new cache file
  minirt heuristic      runmodel --tune heuristic (nothing measured; a new cache file, left untouched)
  onnxruntime           bench/ort_worker.py (intra_op_num_threads, sequential execution)
  OpenVINO              bench/ov_worker.py (INFERENCE_NUM_THREADS, LATENCY hint, f32 precision)

Each process runs the model RUNS times (--runs, default 130); the steady state
is the median of the last LAST runs (--last, default 30: runs 101-130). For
runmodel, run 1 is its "first run" and then --warmup RUNS-LAST-1 --iterations
LAST; for the workers, WARMUP RUNS-LAST, ITERATIONS LAST. The model file is
read once before the rounds, so no engine pays for the disk.

Reported per model (each figure the median over the rounds):
  - load (minirt: Model::load and the Session's construction), first run,
    and load + first run (the median of each round's sum) of
    minirt with an empty and a warm cache, onnxruntime (session creation +
    first run) and OpenVINO (Core, read, compile and infer request + first
    run), and minirt's totals over onnxruntime's; the tuning time inside
    minirt's first run (runmodel's tuning seconds; 0 when it tunes in the
    background, the default);
  - the default session's steady state (the empty-cache process) over the
    exhaustively tuned session's, and --tune heuristic's over the same;
  - minirt's peak RSS (runmodel's VmHWM: the empty-cache and the warm-cache
    process) over onnxruntime's model-attributable RSS: its worker's VmHWM
    minus the VmRSS it had just before creating the session (Python, numpy and
    onnxruntime already loaded).

An engine that fails on a model is reported as "fails: REASON" in its cells
and not run again on that model; the rest go on. The report is Markdown
(printed, and written to --out), the raw per-round numbers JSON (--json,
default OUT with .json for .md, else a file in the temporary directory).
Measure on a quiet machine (see bench/README.md); within one run the engines
alternate, so they see the same machine state.
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import side_by_side as sbs  # noqa: E402  (input shapes, runmodel and the peer workers, CPU and versions)

ROOT = sbs.ROOT
SHARED_MODELS = os.path.normpath(os.path.join(ROOT, "..", "shared", "models"))
GENERATED = ["resnet18", "resnet50", "mobilenetv2", "squeezenet1_1", "efficientnet_b0", "yolov5s_like", "dbnet_like",
             "mnist_cnn"]
SHARED = ["mnist-8", "ppocr-mobile-v2-cls", "ultraface-slim-320"]

# Engine key -> label, in the order the first round runs them (round_order).
MINIRT = {"empty": "minirt, empty cache", "warm": "minirt, warm cache", "exhaustive": "minirt --tune exhaustive",
          "heuristic": "minirt --tune heuristic"}
TUNE = {"empty": None, "warm": None, "exhaustive": "exhaustive", "heuristic": "heuristic"}


def default_models():
    return ([os.path.join(ROOT, "build", "models", m + ".onnx") for m in GENERATED]
            + [os.path.join(SHARED_MODELS, m + ".onnx") for m in SHARED])


def use_venv():
    """Runs this script again in the project's .venv when this interpreter lacks onnx, onnxruntime or numpy, or
    stops saying how to make it."""
    import importlib.util
    if all(importlib.util.find_spec(m) for m in ("onnx", "numpy", "onnxruntime")):
        return
    venv = os.path.join(ROOT, ".venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.isfile(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python] + sys.argv)
    sys.exit(f"{sys.executable} lacks onnx, onnxruntime or numpy; run this script with {python} "
             "(tools/setup.sh --venv makes it)")


def minirt_version():
    try:
        with open(os.path.join(ROOT, "runtime", "include", "minirt", "minirt.h")) as f:
            m = re.search(r'MINIRT_VERSION_STRING "([^"]+)"', f.read())
            return m.group(1) if m else "?"
    except OSError:
        return "?"


def checkout_commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "unknown"


def read_through(path):
    """Reads the file once, so the first engine does not pay for the disk and the others for the page cache."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def reason(e):
    """The failure as one table-safe sentence (the bench helpers quote the last line of stderr as a list)."""
    text = re.sub(r"\['(.*)'\]$", r"\1", str(e).strip()).replace(": []", ": (it printed nothing)")
    text = " ".join(text.split()).replace("|", "/")
    return text if len(text) <= 200 else text[:197] + "..."


# ---------------------------------------------------------------------------
# Running the engines.

def minirt_sample(j):
    t = j.get("tuning", {})
    # Load: Model::load and the Session's construction (as onnxruntime's session creation counts both).
    load = j["load_ms"] + j.get("session_ms", 0.0)
    # Tuning inside the first run: its tuning seconds, unless it tuned in the background (then 0).
    first_run_tuning = 0.0 if t.get("swaps") or t.get("pending") else 1000.0 * t.get("seconds", 0.0)
    return {"load_ms": load, "first_run_ms": j["first_run_ms"], "total_ms": load + j["first_run_ms"],
            "steady_ms": j["latency_ms"]["median"], "peak_rss_kib": j["peak_rss_kib"],
            "tuning_ms": first_run_tuning, "measured": t.get("measured"),
            "from_cache": t.get("from_cache"), "heuristic": t.get("heuristic"),
            "pending": t.get("pending"), "swaps": len(t.get("swaps", []))}


def peer_sample(j):
    if j.get("first_run_ms") is None or "pre_load_rss_kib" not in j:
        raise sbs.RunFailed("the worker's JSON lacks first_run_ms or pre_load_rss_kib (an older worker?)")
    return {"load_ms": j["load_ms"], "first_run_ms": j["first_run_ms"], "total_ms": j["load_ms"] + j["first_run_ms"],
            "steady_ms": statistics.median(j["latency_ms"]), "peak_rss_kib": j["peak_rss_kib"],
            "pre_load_rss_kib": j["pre_load_rss_kib"], "model_rss_kib": j["peak_rss_kib"] - j["pre_load_rss_kib"]}


def round_order(engines, k):
    """Round K's order: the engines rotated by K places, the warm-cache run always right after the empty-cache
    one whose file it reads. So no engine always runs first: on an Intel host (2026-12-07) the empty-cache
    run, first in every round then, had its steady state 1.05-1.08x the heuristic session's on MobileNetV2 and
    SqueezeNet, where the two alternating alone, eight times each, had the same medians within 1%."""
    units = [["empty", "warm"]] + [[e] for e in engines if e not in ("empty", "warm")]
    k %= len(units)
    return [e for u in units[k:] + units[:k] for e in u]


def one_round(args, tmp, ctx, threads, k, samples, errors):
    """Round K of one model: each engine once, in turn (round_order), each in its own process."""
    path, name, npy, shape = ctx["path"], ctx["name"], ctx["npy"], ctx["shape"]
    caches = {e: os.path.join(tmp, f"{ctx['stem']}_t{threads}_r{k}_{e}_cache.txt")
              for e in ("empty", "exhaustive", "heuristic")}
    caches["warm"] = caches["empty"]  # the second process on the file the first one wrote
    for e in round_order(list(MINIRT) + args.peers, k):
        if e in errors:
            continue
        if e in MINIRT:
            if e == "warm" and "empty" in errors:
                errors[e] = "the empty-cache run it follows failed"
                continue
            try:
                j = sbs.run_minirt(args, path, name, npy, shape, threads, args.runs - args.last - 1, args.last,
                                   tune=TUNE[e], cache=caches[e])
                samples[e].append(minirt_sample(j))
            except (sbs.RunFailed, KeyError, ValueError) as ex:
                errors[e] = reason(ex)
            continue
        try:
            samples[e].append(peer_sample(sbs.run_peer(e, path, npy, threads, args.runs - args.last, args.last)))
        except (sbs.RunFailed, KeyError, ValueError) as ex:
            errors[e] = reason(ex)


def median_of(samples, field):
    vals = [s[field] for s in samples if s.get(field) is not None]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    return a / b if a is not None and b else None


def bench_model(args, tmp, path, threads, shapes):
    """All rounds of one model at one thread count; the row for the report and the JSON."""
    import numpy as np
    import onnx
    stem = os.path.splitext(os.path.basename(path))[0]
    row = {"stem": stem, "path": path, "threads": threads}
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as e:  # not an ONNX file: this row fails, the others go on
        row["error"] = f"onnx cannot read it: {reason(e)}"
    else:
        try:
            name, shape = sbs.input_shape(model, stem, 1, shapes)
        except ValueError as e:  # a symbolic dimension without --shape
            row["error"] = reason(e)
    if "error" in row:
        print(f"{stem}, {threads} thread(s): fails: {row['error']}", flush=True)
        return row
    npy = os.path.join(tmp, f"{stem}.npy")
    if not os.path.exists(npy):
        np.save(npy, np.random.default_rng(0).random(shape, dtype=np.float32))
    row["input"] = {"name": name, "shape": shape}
    read_through(path)
    ctx = {"stem": stem, "path": path, "name": name, "npy": npy, "shape": shape}
    engines = list(MINIRT) + args.peers
    samples, errors = {e: [] for e in engines}, {}
    for k in range(args.rounds):
        one_round(args, tmp, ctx, threads, k, samples, errors)
    row["samples"], row["errors"] = samples, errors
    med = {e: {f: median_of(s, f) for f in s[0]} for e, s in samples.items() if s and e not in errors}
    row["median"] = med
    g = lambda e, f: med.get(e, {}).get(f)  # noqa: E731
    row["ratios"] = {
        "empty_total_over_onnxruntime": ratio(g("empty", "total_ms"), g("onnxruntime", "total_ms")),
        "warm_total_over_onnxruntime": ratio(g("warm", "total_ms"), g("onnxruntime", "total_ms")),
        "default_over_exhaustive": ratio(g("empty", "steady_ms"), g("exhaustive", "steady_ms")),
        "heuristic_over_exhaustive": ratio(g("heuristic", "steady_ms"), g("exhaustive", "steady_ms")),
        "rss_over_onnxruntime_model": ratio(g("empty", "peak_rss_kib"), g("onnxruntime", "model_rss_kib")),
    }
    short = {"empty": "minirt empty cache", "warm": "warm cache"} | sbs.PEERS
    summary = ", ".join(f"{short[e]} {fmt_ms(g(e, 'total_ms'))}" for e in engines if e in med and e in short)
    r = row["ratios"]
    print(f"{stem}, {threads} thread(s): load + first run (ms): {summary}; steady default / exhaustive "
          f"{fmt_ratio(r['default_over_exhaustive'])}, heuristic / exhaustive "
          f"{fmt_ratio(r['heuristic_over_exhaustive'])}; RSS minirt / onnxruntime model "
          f"{fmt_ratio(r['rss_over_onnxruntime_model'])}"
          + "".join(f"; {e} fails: {why}" for e, why in errors.items()), flush=True)
    return row


# ---------------------------------------------------------------------------
# The report.

def fmt_ms(v):
    if v is None:
        return "—"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def fmt_ratio(v):
    return "—" if v is None else f"{v:.2f}"


def fmt_mib(kib):
    return "—" if kib is None else f"{kib / 1024:.0f}"


def cell(row, engine, text):
    """TEXT, or the engine's failure on this model."""
    why = row["errors"].get(engine)
    return f"fails: {why}" if why else text


def first_result_table(rows, peers):
    lines = ["| model | minirt, empty cache: load / first run / total | tuning in that first run | "
             "minirt, warm cache: load / first run / total | "
             + " | ".join(f"{sbs.PEERS[p]}: {'session' if p == 'onnxruntime' else 'compile'} / first run / total"
                          for p in peers)
             + " | total / onnxruntime: empty cache, warm cache |",
             "| --- | " + " | ".join(["---:"] * (4 + len(peers))) + " |"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['stem']} | fails: {row['error']} |" + " |" * (3 + len(peers)))
            continue
        med = row["median"]

        def three(e):
            m = med.get(e, {})
            return cell(row, e, " / ".join(fmt_ms(m.get(f)) for f in ("load_ms", "first_run_ms", "total_ms")))

        r = row["ratios"]
        cells = [three("empty"), cell(row, "empty", fmt_ms(med.get("empty", {}).get("tuning_ms"))), three("warm")]
        cells += [three(p) for p in peers]
        cells.append(f"{fmt_ratio(r['empty_total_over_onnxruntime'])}, {fmt_ratio(r['warm_total_over_onnxruntime'])}")
        lines.append(f"| {row['stem']} | " + " | ".join(cells) + " |")
    return lines


def steady_memory_table(rows, args):
    lo, hi = args.runs - args.last + 1, args.runs
    window = f"runs {lo}–{hi}" if lo < hi else f"run {hi}"
    lines = [f"| model | default session, {window} (ms) | `--tune exhaustive` (ms) | default / exhaustive | "
             "`--tune heuristic` (ms) | heuristic / exhaustive | minirt peak RSS: empty / warm cache (MiB) | "
             "onnxruntime model-attributable RSS (MiB) | minirt / onnxruntime RSS |",
             "| --- | " + " | ".join(["---:"] * 8) + " |"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['stem']} | fails: {row['error']} |" + " |" * 7)
            continue
        med, r = row["median"], row["ratios"]
        g = lambda e, f: med.get(e, {}).get(f)  # noqa: E731
        ort = "onnxruntime" in args.peers
        cells = [cell(row, "empty", fmt_ms(g("empty", "steady_ms"))),
                 cell(row, "exhaustive", fmt_ms(g("exhaustive", "steady_ms"))),
                 fmt_ratio(r["default_over_exhaustive"]),
                 cell(row, "heuristic", fmt_ms(g("heuristic", "steady_ms"))),
                 fmt_ratio(r["heuristic_over_exhaustive"]),
                 f"{cell(row, 'empty', fmt_mib(g('empty', 'peak_rss_kib')))} / "
                 f"{cell(row, 'warm', fmt_mib(g('warm', 'peak_rss_kib')))}",
                 cell(row, "onnxruntime", fmt_mib(g("onnxruntime", "model_rss_kib")) if ort else "not run"),
                 fmt_ratio(r["rss_over_onnxruntime_model"])]
        lines.append(f"| {row['stem']} | " + " | ".join(cells) + " |")
    return lines


def report(args, rows, versions, command):
    lo, hi = args.runs - args.last + 1, args.runs
    order = " → ".join(list(MINIRT.values()) + [sbs.PEERS[p] for p in args.peers])
    lines = [
        "# Fast start: time to the first result, steady state and memory (batch 1)",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- CPU: {sbs.cpu_name()} ({os.cpu_count()} logical cores visible)",
        f"- ISA: {sbs.cpu_isa()}",
        "- engines: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + "; numpy input uniform [0,1) seed 0",
        f"- command: `{command}`",
        f"- threads: {', '.join(map(str, args.threads))} for all (onnxruntime intra_op_num_threads, sequential "
        "execution; OpenVINO INFERENCE_NUM_THREADS, PERFORMANCE_HINT LATENCY, INFERENCE_PRECISION_HINT f32)",
        f"- {args.rounds} rounds; in each, every engine once in a fresh process, in this order: {order}, "
        "round k rotated by k places (the warm cache always right after the empty one); "
        "each figure is the median over the rounds",
        "- minirt, empty cache: runmodel's default tuning (no `--tune`) on a new algorithm cache file; warm cache: "
        "a second process on the file that one wrote; exhaustive: `--tune exhaustive` on a new file; "
        "heuristic: `--tune heuristic`",
        "- load: runmodel's `load` (Model::load), onnxruntime's InferenceSession creation, OpenVINO's Core, "
        "read_model, compile_model and infer request; first run: its wall time (minirt's includes planning and "
        "tuning; the tuning column is runmodel's tuning seconds of the empty-cache run); total: the median of each "
        "round's load + first run, in ms",
        f"- steady state: each process runs the model {args.runs} times; the median of runs {lo}–{hi}; "
        "default = the empty-cache process",
        "- RSS: minirt's is runmodel's peak (VmHWM) after all its runs; onnxruntime's model-attributable RSS is its "
        "worker's VmHWM minus the VmRSS it had just before creating the session (Python, numpy and onnxruntime "
        "loaded); minirt / onnxruntime uses the empty-cache process",
        "- issue 26's bars at 2 threads: total / onnxruntime at most 1.2 with an empty cache and 1.0 warm; "
        "default / exhaustive and heuristic / exhaustive at most 1.05; minirt / onnxruntime RSS at most 1.0",
    ]
    for threads in args.threads:
        sel = [r for r in rows if r["threads"] == threads]
        t = f"{threads} thread{'s' if threads > 1 else ''}"
        lines += ["", f"## Time to the first result, {t} (ms)", ""] + first_result_table(sel, args.peers)
        lines += ["", f"## Steady state and memory, {t}", ""] + steady_memory_table(sel, args)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", metavar="MODEL.onnx",
                    help="the models (default: build/models' generated ones and ../shared/models')")
    ap.add_argument("--runmodel", default=os.path.join(ROOT, "build", "bin", "runmodel"),
                    help="the runmodel binary (default build/bin/runmodel)")
    ap.add_argument("--threads", type=sbs.parse_int_list, default=[2],
                    help="thread counts, e.g. 2 (default) or 1,2; one pair of tables each")
    ap.add_argument("--peers", type=sbs.parse_peers, default=list(sbs.PEERS),
                    help="runtimes to compare with: onnxruntime,openvino (default both)")
    ap.add_argument("--shape", type=sbs.parse_shape, action="append", default=[],
                    help="NAME=DxDx...: an input's whole shape, for symbolic dimensions (repeatable; "
                         "ppocr-mobile-v2-cls gets x=1x3x48x192 by default)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each engine once in each (default 3)")
    ap.add_argument("--runs", type=int, default=130, help="runs per process, the first included (default 130)")
    ap.add_argument("--last", type=int, default=30,
                    help="the steady state is the median of the last LAST runs (default 30: runs 101-130)")
    ap.add_argument("--out", help="write the report (Markdown) here as well")
    ap.add_argument("--json", help="write the per-round numbers here (default: OUT with .json, else a temporary file)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if args.last < 1 or args.runs <= args.last:
        ap.error("--last must be at least 1 and --runs larger than --last (the first run is not steady)")
    if not os.path.isfile(args.runmodel):
        ap.error(f"{args.runmodel} not found (build minirt, or give --runmodel)")
    models = args.models or default_models()
    missing = [m for m in models if not os.path.isfile(m)]
    if missing:
        sys.exit("model file(s) not found: " + ", ".join(missing) + "\n(the generated ones: "
                 "build/bin/minirt-make-models --out build/models; the real ones live in ../shared/models)")
    use_venv()
    sbs.ensure_requirements(args.peers)

    command = " ".join([os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(ROOT) else "python",
                        os.path.relpath(os.path.abspath(__file__), ROOT)] + sys.argv[1:])
    versions = {"minirt": f"{minirt_version()} (runmodel {args.runmodel}; checkout at {checkout_commit()})",
                "onnxruntime": sbs.version_of("onnxruntime")}
    if "openvino" in args.peers:
        versions["OpenVINO"] = sbs.version_of("openvino")
    shapes = dict(args.shape)
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-fast-start-") as tmp:
        for path in models:
            for threads in args.threads:
                rows.append(bench_model(args, tmp, path, threads, shapes))

    text = report(args, rows, versions, command)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    json_path = args.json
    if not json_path:
        if args.out:
            json_path = (args.out[:-3] if args.out.endswith(".md") else args.out) + ".json"
        else:
            fd, json_path = tempfile.mkstemp(prefix="fast_start-", suffix=".json")
            os.close(fd)
    dump = {"date": datetime.date.today().isoformat(), "cpu": sbs.cpu_name(), "isa": sbs.cpu_isa(),
            "versions": versions, "command": command, "threads": args.threads, "rounds": args.rounds,
            "runs": args.runs, "steady_runs": [args.runs - args.last + 1, args.runs], "peers": args.peers,
            "models": rows}
    with open(json_path, "w") as f:
        json.dump(dump, f, indent=1)
    print(f"per-round numbers: {json_path}")


if __name__ == "__main__":
    main()
