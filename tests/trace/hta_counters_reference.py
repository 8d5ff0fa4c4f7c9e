#!/usr/bin/env python3
"""The counters over time computed from a Kineto trace the slow, obvious way, for queue_length_test and
memory_bandwidth_test to check gpuscope against: Holistic Trace Analysis's definitions
(hta/analyzers/trace_counters.py), written from its documentation with the standard library only,
in exact arithmetic (times as integer nanoseconds from the decimal text, rates as fractions).

  queue length: +1 at the start of the runtime call that launched a GPU activity (same correlation id;
      the call counts no later than the activity starts), -1 when the activity starts; at one timestamp
      launches first. Summary over the value after each event: mean, p50, p95 (pandas' linear
      interpolation), max; the time-weighted mean over [first event, last event]; the time spent at or
      above MAX_QUEUE (the duration of a sample runs to the next one).
  bandwidth: per direction, +bytes/dur at the start of each memcpy/memset, -bytes/dur at its end (a
      zero duration lasts 1 us); at one timestamp ends first. Summary over the non-zero values after
      each event; the union of the copies' time.

usage: hta_counters_reference.py TRACE[.gz] MAX_QUEUE  ->  JSON on stdout
"""
import decimal
import gzip
import json
import sys
from fractions import Fraction

# Kineto's runtime calls that HTA counts as launches (TraceSymbolTable.get_runtime_launch_events_mask).
LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
            "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
            "hipMemcpyWithStream"}
DIRECTIONS = {"Memcpy HtoD": "H2D", "Memcpy DtoH": "D2H", "Memcpy DtoD": "D2D", "Memcpy PtoP": "P2P", "Memcpy HtoH": "H2H"}


def ns(value):
    return int(decimal.Decimal(value) * 1000)


def quantile(sorted_values, q):
    n = len(sorted_values)
    if n == 0:
        return 0.0
    position = q * (n - 1)
    below = int(position)
    above = min(below + 1, n - 1)
    low, high = float(sorted_values[below]), float(sorted_values[above])
    return low + (high - low) * (position - below)


def direction(event):
    if event["cat"] == "gpu_memset":
        return "memset"
    name = event["name"]
    if name[:6] != "Memcpy":
        return "other"
    return DIRECTIONS.get(name[:11], "other")


def main():
    path, max_queue = sys.argv[1], int(sys.argv[2])
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        trace = json.load(f, parse_float=decimal.Decimal)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    gpu, launch_of = [], {}
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        args = e.get("args", {})
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            gpu.append(e)
        elif cat in ("cuda_runtime", "cuda_driver") and e.get("name") in LAUNCHES and "correlation" in args:
            launch_of.setdefault(args["correlation"], ns(e["ts"]))

    devices = {}
    queue_events = {}  # (device, stream) -> [(ts, order, delta)]
    copies = {}  # (device, direction) -> [(start, end, rate, bytes)]
    for e in gpu:
        args = e["args"]
        device, stream = args.get("device", -1), args.get("stream", -1)
        start, dur = ns(e["ts"]), ns(e["dur"])
        correlation = args.get("correlation")
        if correlation in launch_of and stream >= 0:
            launch = min(launch_of[correlation], start)
            queue_events.setdefault((device, stream), []).extend([(launch, 0, 1), (start, 1, -1)])
        if e["cat"] != "kernel":
            length = dur if dur > 0 else 1000
            size = max(int(args.get("bytes", 0)), 0)
            copies.setdefault((device, direction(e)), []).append((start, start + length, Fraction(size, length), size))

    for (device, stream), evs in queue_events.items():
        evs.sort()
        samples, length, integral, full = [], 0, 0, 0
        for k, (ts, _, delta) in enumerate(evs):
            if k > 0:
                dt = ts - evs[k - 1][0]
                integral += length * dt
                if length >= max_queue:
                    full += dt
            length += delta
            samples.append(length)
        span = evs[-1][0] - evs[0][0]
        ordered = sorted(samples)
        devices.setdefault(str(device), {"queue": {}, "bandwidth": {}})["queue"][str(stream)] = {
            "launches": len(evs) // 2, "samples": len(samples), "mean": sum(samples) / len(samples),
            "p50": quantile(ordered, 0.5), "p95": quantile(ordered, 0.95), "max": max(samples),
            "time_weighted_mean": integral / span if span > 0 else 0.0, "full_ns": full}

    for (device, name), cs in copies.items():
        edges = [(s, 1, r) for s, _, r, _ in cs] + [(e, 0, -r) for _, e, r, _ in cs]
        edges.sort(key=lambda x: (x[0], x[1]))
        value, active, previous, active_ns, samples = Fraction(0), 0, 0, 0, []
        for ts, is_start, rate in edges:
            if active > 0:
                active_ns += ts - previous
            value += rate
            active += 1 if is_start else -1
            if value > 0:
                samples.append(value)
            previous = ts
        ordered = sorted(samples)
        devices.setdefault(str(device), {"queue": {}, "bandwidth": {}})["bandwidth"][name] = {
            "copies": len(cs), "bytes": sum(c[3] for c in cs), "samples": len(samples),
            "mean_gbps": float(sum(samples) / len(samples)) if samples else 0.0,
            "p50_gbps": quantile(ordered, 0.5), "p95_gbps": quantile(ordered, 0.95),
            "max_gbps": float(max(samples)) if samples else 0.0, "active_ns": active_ns}
    json.dump({"devices": devices}, sys.stdout)


if __name__ == "__main__":
    main()
