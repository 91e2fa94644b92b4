"""What the peer workers (bench/ort_worker.py, bench/ov_worker.py) share: this
process's memory from /proc/self/status, and the loop that times the runs.
Plain standard library, so a worker imports it before its engine.
"""
import resource
import time


def proc_status_kib(field):
    """A field of /proc/self/status in KiB (VmHWM, VmRSS), or None where there is no /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_kib():
    """VmHWM: this address space's peak (ru_maxrss would carry the parent's across exec)."""
    kib = proc_status_kib("VmHWM")
    return kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rss_kib():
    """VmRSS: what this process holds now (0 where there is no /proc)."""
    return proc_status_kib("VmRSS") or 0


def timed_runs(run, warmup, iters, after_timed=None):
    """Calls run() WARMUP + ITERS times, timing each call. Returns (first_run_ms, latencies_ms): the very first
    call's time (a warm-up's, or the first timed run's when WARMUP is 0; None when nothing ran) and the times of
    the last ITERS calls. after_timed(), when given, is called after each of those, outside its time."""
    first_ms, lat = None, []
    for i in range(warmup + iters):
        a = time.perf_counter()
        run()
        ms = (time.perf_counter() - a) * 1000
        if first_ms is None:
            first_ms = ms
        if i >= warmup:
            lat.append(ms)
            if after_timed:
                after_timed()
    return first_ms, lat
