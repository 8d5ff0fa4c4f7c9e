// NsysReader: reads an Nsight Systems report exported to SQLite (`nsys export --type sqlite`, or the
// .sqlite `nsys stats` writes) into the same TraceEvents a Kineto trace gives, so every analysis, verdict
// and the rank comparison run on it unchanged.
//
// What maps to what (tables and columns from NVIDIA's "Nsight Systems User Guide", section "SQLite
// Export Schema Reference" / exporter schema, and CUPTI's activity records for the enums):
//   CUPTI_ACTIVITY_KIND_KERNEL  (start, end, deviceId, streamId, correlationId, demangledName -> StringIds)
//                                        -> kKernel, named by the demangled name as cuda_gpu_kern_sum is
//   CUPTI_ACTIVITY_KIND_MEMCPY  (copyKind: CUpti_ActivityMemcpyKind, bytes)   -> kGpuMemcpy "Memcpy HtoD", ...
//   CUPTI_ACTIVITY_KIND_MEMSET  (bytes)                                        -> kGpuMemset "Memset"
//   CUPTI_ACTIVITY_KIND_RUNTIME (start, end, correlationId: CUDA runtime API) -> kCudaRuntime, only the
//                                        calls whose correlation id some GPU activity has (the launches)
//   NVTX_EVENTS push/pop and start/end ranges (eventType 59, 60; text or textId -> StringIds)
//                                        -> kUserAnnotation (so "ProfilerStep#N" and DataLoader ranges count)
//   TARGET_INFO_GPU (id, name)           -> the device names
// Timestamps are integer nanoseconds already. Tables are created lazily by nsys: only StringIds and at
// least one of the three GPU activity tables are required; the others may be absent.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include "trace/trace_error.h"
#include "trace/trace_event.h"
#include "trace/trace_parser.h"

namespace gpuscope::trace {

// The first 16 bytes of every SQLite 3 database ("SQLite format 3" and a NUL).
bool has_sqlite_magic(const std::string& file);

struct NsysReadOptions {
  // Skip malformed rows (a NULL or non-integer time, an end before its start) and, in a database cut
  // short, keep the rows read before the damage, reporting both, instead of failing.
  bool lenient = false;
};

// Reads the whole report. The summary counts rows as events (event_objects: rows read, complete_events:
// events handed on) and json_bytes holds the database's size. The error's `file` is filled in.
std::expected<ParseSummary, TraceError> read_nsys_report(const std::string& file, TraceEventSink& sink, TraceHeader& header,
                                                         const NsysReadOptions& options);

}  // namespace gpuscope::trace
