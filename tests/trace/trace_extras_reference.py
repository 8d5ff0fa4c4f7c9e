#!/usr/bin/env python3
"""Independent reference for the per-step rows, idle gaps and kernel sequences.

Reads a Kineto trace (.json or .json.gz) with the standard library only, times as exact integer
nanoseconds (Decimal), and writes what gpuscope should report, as JSON, to stdout. Written from the
definitions in docs/trace-steps.md, not from gpuscope's code.
"""
import gzip
import json
import sys
from decimal import Decimal

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME = ("cuda_runtime", "cuda_driver")
KERNEL_WAIT_NS = 30_000
BREAK_GAP_NS = 1_000_000
MAX_LEN = 8
SPAN = ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cpu_op", "user_annotation",
        "gpu_user_annotation")


def ns(v):
    return int(Decimal(v) * 1000) if not isinstance(v, Decimal) else int(v * 1000)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=Decimal)["traceEvents"]


def nearest_rank(values, q):
    s = sorted(values)
    return s[int(q * (len(s) - 1) + Decimal("0.5"))] if s else 0


def main(path):
    events = [e for e in load(path) if e.get("ph") == "X"]
    launch = {}
    calls = {}
    for e in events:
        if e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            c = e["args"]["correlation"]
            s = ns(e["ts"])
            if c not in launch or s < launch[c]:
                launch[c] = s
                calls[c] = ns(e["dur"])
    acts = []
    for e in events:
        if e.get("cat") in GPU:
            a = e["args"]
            start = ns(e["ts"])
            acts.append(dict(start=start, end=start + ns(e["dur"]), dur=ns(e["dur"]), name=e["name"], stream=a.get("stream", -1),
                             device=a.get("device", -1), cat=e["cat"], launch=launch.get(a.get("correlation", -1))))
    devices = {}
    for a in acts:
        devices.setdefault(a["device"], []).append(a)
    out = {"devices": {}}
    best, best_busy = None, -1
    for dev, lst in devices.items():
        lst.sort(key=lambda a: (a["start"], a["dur"]))
        gaps, busy, end = [], 0, lst[0]["start"]
        for a in lst:
            if a["start"] > end:
                gaps.append((end, a["start"], kind(end, a)))
            busy += max(0, a["end"] - max(a["start"], end))
            end = max(end, a["end"])
        streams = {}
        for a in lst:
            streams.setdefault(a["stream"], []).append(a)
        stream_gaps = {}
        for s, sl in streams.items():
            g, e2 = [], sl[0]["start"]
            for a in sl:
                if a["start"] > e2:
                    g.append((e2, a["start"], kind(e2, a)))
                e2 = max(e2, a["end"])
            stream_gaps[s] = g
        used = {}
        for a in lst:
            pass
        launched_ids = set()
        for e in events:
            if e.get("cat") in GPU and e["args"].get("device", -1) == dev and e["args"].get("correlation", -1) in launch:
                launched_ids.add(e["args"]["correlation"])
        mean_launch = sum(calls[c] for c in launched_ids) // len(launched_ids) if launched_ids else 0
        out["devices"][str(dev)] = dict(busy=busy, window_start=lst[0]["start"], window_end=end,
                                        device_gaps=dist(gaps),
                                        stream_gaps={str(s): dist(g) for s, g in stream_gaps.items()},
                                        sequences=sequences(streams, mean_launch), mean_launch=mean_launch)
        if busy > best_busy:
            best, best_busy = dev, busy
        devices[dev] = (lst, gaps)
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    rows = []
    if best is not None:
        lst, gaps = devices[best]
        w0, w1 = lst[0]["start"], max(a["end"] for a in lst)
        for (s0, s1, name) in steps:
            busy = max(0, min(s1, w1) - max(s0, w0))
            host = 0
            for (g0, g1, k) in gaps:
                o = max(0, min(s1, g1) - max(s0, g0))
                busy -= o
                if k == "host_wait":
                    host += o
            mine = [a for a in lst if a["launch"] is not None and s0 <= a["launch"] < s1]
            kern = [a for a in mine if a["cat"] == "kernel"]
            per = {}
            for a in kern:
                per[a["name"]] = per.get(a["name"], 0) + a["dur"]
            top = min(per.items(), key=lambda kv: (-kv[1], kv[0])) if per else ("", 0)
            rows.append(dict(number=int(name[len("ProfilerStep#"):]), duration=s1 - s0, busy=busy, host_wait=host,
                             kernels=len(kern), kernel_ns=sum(a["dur"] for a in kern), top=top[0], top_ns=top[1],
                             tail=max(0, max(a["end"] for a in mine) - s1) if mine else 0))
        # The window cuts the last step when nothing of any kind ends after the GPU work it launched; the
        # first when work launched before the trace (no launch in it) started before the first step's
        # own work and was still running when the step began.
        span_end = max(ns(e["ts"]) + ns(e["dur"]) for e in events if e.get("cat") in SPAN)
        def launched_in(i):
            s0, s1, _ = steps[i]
            return [a for a in lst if a["launch"] is not None and s0 <= a["launch"] < s1]
        if steps:
            last = launched_in(len(steps) - 1)
            out["last_incomplete"] = bool(last) and max(a["end"] for a in last) >= span_end
            if not last and len(steps) > 1:
                out["last_incomplete"] = all(launched_in(i) for i in range(len(steps) - 1))
            first = launched_in(0)
            early = [a for a in lst if a["launch"] is None]
            out["first_incomplete"] = (not (out["last_incomplete"] and len(steps) == 1) and bool(first) and bool(early)
                                       and min(a["start"] for a in early) < min(a["start"] for a in first)
                                       and max(a["end"] for a in early) > steps[0][0])
    out["main_device"] = best
    out["steps"] = rows
    json.dump(out, sys.stdout)


def kind(gap_start, nxt):
    if nxt["launch"] is not None and nxt["launch"] > gap_start:
        return "host_wait"
    return "kernel_wait" if nxt["start"] - gap_start < KERNEL_WAIT_NS else "other"


def dist(gaps):
    if not gaps:
        return dict(count=0)
    lengths = [g[1] - g[0] for g in gaps]
    longest = max(range(len(gaps)), key=lambda i: (lengths[i], -i))
    return dict(count=len(gaps), total=sum(lengths), p50=nearest_rank(lengths, Decimal("0.5")),
                p90=nearest_rank(lengths, Decimal("0.9")), p99=nearest_rank(lengths, Decimal("0.99")),
                longest=lengths[longest], longest_start=gaps[longest][0], longest_kind=gaps[longest][2])


def sequences(streams, mean_launch):
    """Every repeated run of 2..MAX_LEN kernels per stream: non-overlapping repeats, left to right."""
    found = []
    for s, sl in streams.items():
        runs, run, end = [], [], sl[0]["start"]
        for a in sl:
            gap = 0
            if a["start"] > end:
                if kind(end, a) != "other":
                    gap = a["start"] - end
                if a["start"] - end >= BREAK_GAP_NS:
                    runs.append(run)
                    run, gap = [], 0
            end = max(end, a["end"])
            if a["cat"] != "kernel":
                runs.append(run)
                run = []
                continue
            run.append((a["name"], a["dur"], gap))
        runs.append(run)
        table = {}
        for run in runs:
            for i in range(len(run)):
                for length in range(2, MAX_LEN + 1):
                    if i + length > len(run):
                        break
                    key = tuple(k[0] for k in run[i:i + length])
                    t = table.setdefault(key, dict(repeats=0, free=None, kernel_ns=0, idle=0))
                    if t["free"] is None or (t["free"][0] != id(run)) or i >= t["free"][1]:
                        # Occurrences in different runs never overlap.
                        if t["free"] is not None and t["free"][0] == id(run) and i < t["free"][1]:
                            continue
                        t["repeats"] += 1
                        t["free"] = (id(run), i + length)
                        t["kernel_ns"] += sum(k[1] for k in run[i:i + length])
                        t["idle"] += sum(k[2] for k in run[i + 1:i + length])
        for key, t in table.items():
            if t["repeats"] < 2 or periodic(key):
                continue
            saving = t["idle"] + (len(key) - 1) * t["repeats"] * mean_launch
            found.append(dict(stream=s, kernels=list(key), repeats=t["repeats"], kernel_ns=t["kernel_ns"], idle=t["idle"],
                              saving=saving))
    found.sort(key=lambda f: (-f["saving"], len(f["kernels"])))
    return found[:200]


def periodic(key):
    """A repeat of a shorter listable sequence (ABAB of AB); a run of one kernel (AAA) is not."""
    n = len(key)
    for p in range(1, n):
        if n % p == 0 and all(key[j] == key[j - p] for j in range(p, n)):
            return p >= 2
    return False


if __name__ == "__main__":
    main(sys.argv[1])
