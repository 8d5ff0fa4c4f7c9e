#!/usr/bin/env python3
"""Writes a synthetic Kineto-like trace of about SIZE bytes for the throughput and memory bench: per
training step a ProfilerStep and a DataLoader annotation, then operators (cpu_op with arguments, a
cudaLaunchKernel call, its flow events and the kernel on stream 7), an NCCL kernel on stream 21 every
50 operators and a host-to-device copy every 200, in the proportions of the real trace in
../shared/conformance/traces. Standard library only.

Usage: trace_synthetic.py OUT.json SIZE_BYTES
"""
import sys


def main():
    out_path, target = sys.argv[1], int(sys.argv[2])
    written = 0
    ts = 1_700_000_000_000_000
    corr = 1
    step = 0
    with open(out_path, "w", buffering=1 << 22) as out:
        head = ('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "Synthetic GPU", "totalGlobalMem": 85899345920}],\n'
                '  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n  "traceEvents": [\n')
        out.write(head)
        written += len(head)
        first = True
        while written < target:
            step_start = ts
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
            chunk = (",\n" if not first else "") + ",\n".join(events)
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
