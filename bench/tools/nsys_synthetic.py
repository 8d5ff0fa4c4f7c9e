#!/usr/bin/env python3
"""A synthetic Nsight Systems SQLite export of about SIZE_MB, for bench/nsys_trace.sh.

The tables and columns follow NVIDIA's "Nsight Systems User Guide", section "SQLite Export Schema
Reference" (what `nsys export --type sqlite` writes); the rows are invented: one node of 8 GPUs,
4 streams each, ~200 kernel names (some NCCL), one cudaLaunchKernel per kernel plus as many calls that
launch nothing, copies both ways, memsets, NVTX op ranges and ProfilerStep ranges, and an OSRT_API
table that gpuscope does not read (real exports carry many such tables). Rows are made inside SQLite
by recursive CTEs (C speed), so 1 GB takes about a minute or two, not Python's per-row time.

Usage: nsys_synthetic.py OUT.sqlite SIZE_MB
"""
import os
import sqlite3
import sys

out, size_mb = sys.argv[1], int(sys.argv[2])
# Measured on this generator: ~124 bytes of database per kernel with its share of the other tables.
BYTES_PER_KERNEL = 124
kernels = max(1000, size_mb * (1 << 20) // BYTES_PER_KERNEL)

if os.path.exists(out):
    os.remove(out)
db = sqlite3.connect(out)
db.executescript("""
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT,
  totalMemory INTEGER, smCount INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  registersPerThread INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER, callchainId INTEGER);
""")
names = [f"void at::native::kernel_{i}<float, {i % 7}>(at::TensorIteratorBase&)" for i in range(190)]
names += [f"ncclDevKernel_AllReduce_Sum_bf16_RING_LL_{i}(ncclDevComm*, unsigned long, ncclWork*)" for i in range(10)]
strings = names + ["cudaLaunchKernel_v7000", "cudaEventRecord_v3020", "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020",
                   "pthread_mutex_lock", "aten::linear"]
db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i + 1, s) for i, s in enumerate(strings)])
launch, record, memcpy_id, memset_id, mutex = (len(names) + k for k in range(1, 6))
db.executemany("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, 'NVIDIA H100 80GB HBM3', ?, 85899345920, 132)",
               [(d, f"0000:{d:02x}:00.0") for d in range(8)])

# Kernel i runs on GPU i % 8, stream i / 8 % 4, ~every 2 us per GPU; launched 3-20 us earlier.
db.execute(f"""
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {kernels - 1})
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL
SELECT (i / 8) * 2000 + abs(random() % 400) AS s, (i / 8) * 2000 + 400 + abs(random() % 3000), i % 8, 1, 7 + (i / 8) % 4,
       i + 1, 4242, 1 + abs(random() % {len(names)}), 1, 128, 1, 1, 256, 1, 1, 64, 0, 0
FROM n""")
db.execute(f"""
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
SELECT start - 3000 - abs(random() % 17000), start - 1000 - abs(random() % 2000), 1, 77, correlationId, {launch}, 0, 0
FROM CUPTI_ACTIVITY_KIND_KERNEL""")
# As many calls that launch nothing (event records), with ids no activity has.
db.execute(f"""
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
SELECT start + 500, start + 1500, 1, 77, {kernels * 4} + correlationId, {record}, 0, 0 FROM CUPTI_ACTIVITY_KIND_KERNEL""")
copies = kernels // 50
db.execute(f"""
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {copies - 1})
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY
SELECT i * 100000 / 8 + 50000, i * 100000 / 8 + 58000, i % 8, 1, 13, {kernels} + i + 1, 4242, 1 << 22, 1 + (i % 2), 0, 0 FROM n""")
db.execute(f"""
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
SELECT start - 4000, start - 1000, 1, 77, correlationId, {memcpy_id}, 0, 0 FROM CUPTI_ACTIVITY_KIND_MEMCPY""")
db.execute(f"""
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {copies - 1})
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET
SELECT i * 100000 / 8 + 60000, i * 100000 / 8 + 61000, i % 8, 1, 7, {kernels * 2} + i + 1, 4242, 0, 65536 FROM n""")
# An NVTX op range for every 4 kernels (aten::linear, registered text), a ProfilerStep per 8000.
db.execute(f"""
INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId)
SELECT start - 20000, start - 2000, 59, 77, {len(strings)} FROM CUPTI_ACTIVITY_KIND_RUNTIME
WHERE nameId = {launch} AND correlationId % 4 = 0""")
steps = max(1, kernels // 8000)
db.execute(f"""
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {steps - 1})
INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text)
SELECT i * 2000000, (i + 1) * 2000000 - 1000, 59, 77, 'ProfilerStep#' || (i + 1) FROM n""")
db.execute(f"""
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {kernels // 3})
INSERT INTO OSRT_API SELECT i * 6000, i * 6000 + 800, 27, 78, {mutex}, 0, 0, 0 FROM n""")
db.commit()
db.close()
print(f"{out}: {os.path.getsize(out) / (1 << 20):.0f} MiB, {kernels} kernels")
