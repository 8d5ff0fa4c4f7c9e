#!/usr/bin/env python3
"""Writes a synthetic PyTorch profiler (Kineto) trace of about SIZE bytes for the throughput and memory
bench. Standard library only.

Two shapes:
  kineto (default)  the real trace in ../shared/conformance/traces, scaled up: Kineto's own layout (one
                    member group per line, indented) and its mix of events per GPU kernel: about 4.7
                    cpu_op, 2.9 runtime calls (a launch and two that launch nothing, such as
                    cudaStreamIsCapturing), a flow event per runtime call and per GPU activity, a memset
                    every 13 kernels, an NCCL kernel every 50, a host-to-device copy every 200, and per
                    training step a ProfilerStep and a DataLoader annotation.
  dense             a worst case: compact JSON with one cpu_op, one runtime call and two flow events per
                    kernel, so about 3.6 times as many kernels per byte as the real trace and most of
                    the bytes in events that have to be parsed.

Usage: trace_synthetic.py OUT.json SIZE_BYTES [kineto|dense]
"""
import sys

TS0 = 1_700_000_000_000_000
KERNEL_ARGS = ('"queued": 0, "device": 0, "context": 1,\n      "stream": {stream}, "correlation": {c},\n'
               '      "registers per thread": 128,\n      "shared memory": 32768,\n      "blocks per SM": 2.5,\n'
               '      "warps per SM": 10.0,\n      "grid": [64, 8, 1],\n      "block": [128, 1, 1],\n'
               '      "est. achieved occupancy %": 25')


def kineto_event(ph, cat, name, pid, tid, ts, dur, args):
    """One event as Kineto writes it (see the real trace): ph, cat, name, pid, tid; ts, dur; args."""
    head = f'  {{\n    "ph": "{ph}", "cat": "{cat}", "name": "{name}", "pid": {pid}, "tid": {tid},\n    "ts": {ts}, "dur": {dur}'
    if args is None:
        return head + "\n  }"
    return head + f',\n    "args": {{\n      {args}\n    }}\n  }}'


def kineto_flow(ph, c, pid, tid, ts):
    return (f'  {{\n    "ph": "{ph}", "id": {c}, "pid": {pid}, "tid": {tid}, "ts": {ts},\n'
            f'    "cat": "async_cpu_to_gpu", "name": "async_gpu", "bp": "e"\n  }}')


def kineto_step(step, ts, corr):
    """One training step of 200 operators; returns (events, ts, corr) after it."""
    pid, tid = 4242, 4242
    events = [
        kineto_event("X", "user_annotation", f"ProfilerStep#{step}", pid, tid, ts, 20000,
                     f'"Trace name": "PyTorch Profiler", "Trace iteration": 0,\n      "External id": {corr}'),
        kineto_event("X", "user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", pid, tid,
                     ts + 1, 150, f'"External id": {corr + 1}'),
    ]
    ts += 200
    ops = ("aten::linear", "aten::t", "aten::transpose", "aten::addmm", "aten::as_strided")
    for op in range(200):
        # 4 or 5 operators around each kernel (4.7 on average, as in the real trace).
        for k, name in enumerate(ops[: 5 if op % 3 else 4]):
            events.append(kineto_event(
                "X", "cpu_op", name, pid, tid, ts + k, 12 - 2 * k,
                f'"Trace name": "PyTorch Profiler", "Trace iteration": 0,\n      "External id": {corr},\n'
                f'      "Profiler Event Index": {corr}, "Input Dims": [[1024], [512, 1024], [1024, 1024], [], []], '
                f'"Input type": ["float", "float", "float", "Scalar", "Scalar"], "Module Hierarchy": "", "Call stack": ""'))
        launches = [("cudaStreamIsCapturing", corr + 1, None), ("cudaGetDevice", corr + 2, None),
                    ("cudaLaunchKernel", corr, ("ampere_sgemm_128x64_tn", 7, f"{ts + 10}.{op % 10}00", "40.5"))]
        if op % 13 == 0:
            launches.append(("cudaMemsetAsync", corr + 3, ("Memset (Device)", 7, ts + 52, 1)))
        if op % 50 == 49:
            launches.append(("cudaLaunchKernel", corr + 4,
                             ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 21, ts + 12, 300)))
        if op % 200 == 0:
            launches.append(("cudaMemcpyAsync", corr + 5, ("Memcpy HtoD (Pinned -> Device)", 7, ts + 60, 20)))
        for n, (call, c, gpu) in enumerate(launches):
            events.append(kineto_event("X", "cuda_runtime", call, pid, tid, ts + 3 + n, 2, f'"External id": {c},\n      "cbid": 211, "correlation": {c}'))
            events.append(kineto_flow("f", c, pid, tid, ts + 3 + n))
            if gpu is None:
                continue
            name, stream, gts, gdur = gpu
            if name.startswith("Mem"):
                memset = name.startswith("Memset")
                cat, size, bandwidth = ("gpu_memset", 8192, 8.2) if memset else ("gpu_memcpy", 4194304, 209.7)
                args = (f'"External id": {c},\n      \n      "device": 0, "context": 1,\n      "stream": {stream}, '
                        f'"correlation": {c},\n      "bytes": {size}, "memory bandwidth (GB/s)": {bandwidth}')
            else:
                cat = "kernel"
                args = f'"External id": {c},\n      \n      ' + KERNEL_ARGS.format(stream=stream, c=c)
            events.append(kineto_event("X", cat, name, 0, stream, gts, gdur, args))
            events.append(kineto_flow("s", c, 0, stream, gts))
        corr += 6
        ts += 55
    return events, ts, corr


def dense_step(step, ts, corr):
    """The worst case: compact, one cpu_op and one runtime call per kernel."""
    events = [
        f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 100, "tid": 100, "ts": {ts}, "dur": 20000, '
        f'"args": {{"External id": {corr}}}}}',
        f'{{"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", '
        f'"pid": 100, "tid": 100, "ts": {ts + 1}, "dur": 150, "args": {{"External id": {corr + 1}}}}}',
    ]
    ts += 200
    for op in range(200):
        c = corr
        events.append(
            f'{{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 100, "tid": 100, "ts": {ts}, "dur": 12, '
            f'"args": {{"External id": {c}, "Sequence number": {c}, "Fwd thread id": 0, "Record function id": 0, '
            f'"Input Dims": [[1024], [512, 1024], [1024, 1024], [], []], "Input type": ["float", "float", "float", "Scalar", "Scalar"], '
            f'"Concrete Inputs": ["", "", "", "1", "1"]}}}}')
        events.append(
            f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": {ts + 3}, "dur": 5, '
            f'"args": {{"External id": {c}, "cbid": 211, "correlation": {c}}}}}')
        events.append(f'{{"ph": "s", "id": {c}, "pid": 100, "tid": 100, "ts": {ts + 3}, "cat": "ac2g", "name": "ac2g"}}')
        events.append(f'{{"ph": "f", "id": {c}, "pid": 0, "tid": 7, "ts": {ts + 10}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}')
        events.append(
            f'{{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": {ts + 10}.{op % 10}00, '
            f'"dur": 40.5, "args": {{"External id": {c}, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {c}, '
            f'"registers per thread": 128, "shared memory": 32768, "blocks per SM": 2.5, "warps per SM": 10.0, '
            f'"grid": [64, 8, 1], "block": [128, 1, 1], "est. achieved occupancy %": 25}}}}')
        corr += 1
        if op % 50 == 49:
            events.append(
                f'{{"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 0, "tid": 21, '
                f'"ts": {ts + 12}, "dur": 300, "args": {{"External id": {corr}, "queued": 0, "device": 0, "context": 1, "stream": 21, '
                f'"correlation": {corr}, "grid": [2, 1, 1], "block": [512, 1, 1]}}}}')
            events.append(
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101, "ts": {ts + 4}, "dur": 6, '
                f'"args": {{"External id": {corr}, "cbid": 211, "correlation": {corr}}}}}')
            corr += 1
        if op % 200 == 0:
            events.append(
                f'{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": {ts + 60}, '
                f'"dur": 20, "args": {{"External id": {corr}, "device": 0, "context": 1, "stream": 7, "correlation": {corr}, '
                f'"bytes": 4194304, "memory bandwidth (GB/s)": 209.7}}}}')
            events.append(
                f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": 100, "ts": {ts + 8}, "dur": 4, '
                f'"args": {{"External id": {corr}, "cbid": 51, "correlation": {corr}}}}}')
            corr += 1
        ts += 55
    return events, ts, corr


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] not in ("kineto", "dense")):
        sys.exit("usage: trace_synthetic.py OUT.json SIZE_BYTES [kineto|dense]")
    out_path, target = sys.argv[1], int(sys.argv[2])
    dense = len(sys.argv) == 4 and sys.argv[3] == "dense"
    step_events = dense_step if dense else kineto_step
    separator = ",\n"
    written = 0
    ts, corr, step = TS0, 1, 0
    with open(out_path, "w", buffering=1 << 22) as out:
        head = ('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "totalGlobalMem": 85899345920}],\n'
                '  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n  "traceEvents": [\n')
        out.write(head)
        written += len(head)
        first = True
        while written < target:
            step_start = ts
            events, ts, corr = step_events(step, ts, corr)
            chunk = ("" if first else separator) + separator.join(events)
            first = False
            out.write(chunk)
            written += len(chunk)
            step += 1
            ts = max(ts, step_start + 20000) + 500
        tail = '\n  ],\n  "traceName": "synthetic.json"\n}\n'
        out.write(tail)
        written += len(tail)
    print(written)


if __name__ == "__main__":
    main()
