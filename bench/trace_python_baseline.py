#!/usr/bin/env python3
"""The documents' Python approach to a PyTorch profiler trace, as the baseline gpuscope trace is measured
against: json.load the whole file, then GPU busy/idle (union of kernel, memcpy and memset intervals per
device) and the top kernels by total time. Standard library only.

Usage: trace_python_baseline.py TRACE.json[.gz] [--top N]
Prints one JSON line: the figures, the seconds it took and the JSON bytes it read.
"""
import gzip
import json
import sys
import time
from collections import defaultdict

GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    return len(raw), json.loads(raw)


def analyse(trace, top):
    per_device = defaultdict(list)
    kernels = defaultdict(lambda: [0, 0.0, 0.0])  # count, total us, max us
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATEGORIES:
            continue
        ts, dur = float(e["ts"]), float(e["dur"])
        per_device[e.get("args", {}).get("device", -1)].append((ts, ts + dur))
        if e["cat"] == "kernel":
            k = kernels[e["name"]]
            k[0] += 1
            k[1] += dur
            k[2] = max(k[2], dur)
    devices = {}
    for device, intervals in per_device.items():
        intervals.sort()
        busy = 0.0
        start, end = intervals[0]
        window_start = start
        for s, e in intervals[1:]:
            if s > end:
                busy += end - start
                start, end = s, e
            else:
                end = max(end, e)
        busy += end - start
        window = end - window_start
        devices[str(device)] = {
            "window_seconds": window / 1e6,
            "busy_seconds": busy / 1e6,
            "idle_seconds": (window - busy) / 1e6,
            "idle_ratio": (window - busy) / window if window > 0 else 0.0,
        }
    total = sum(k[1] for k in kernels.values())
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]
    top_kernels = [
        {"name": n, "count": c, "total_seconds": t / 1e6, "mean_seconds": t / c / 1e6, "max_seconds": m / 1e6,
         "share_ratio": t / total if total else 0.0}
        for n, (c, t, m) in ranked
    ]
    return {"devices": devices, "top_kernels": top_kernels}


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = 10
    if "--top" in sys.argv:
        top = int(sys.argv[sys.argv.index("--top") + 1])
    started = time.perf_counter()
    size, trace = load(sys.argv[1])
    result = analyse(trace, top)
    seconds = time.perf_counter() - started
    result.update({"json_bytes": size, "seconds": seconds, "bytes_per_second": size / seconds})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
