// What the trace reader hands on for each Kineto event: the few fields the analyses use, already typed
// and checked (times in integer nanoseconds, exact for Kineto's microsecond decimals), plus the
// trace-level facts (rank, devices) found outside the traceEvents array.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace gpuscope::trace {

enum class EventCategory : std::uint8_t {
  kKernel,
  kGpuMemcpy,
  kGpuMemset,
  kCudaRuntime,  // cuda_runtime and cuda_driver: the CPU side of a launch
  kCpuOp,
  kUserAnnotation,
  kPythonFunction,
  kGpuUserAnnotation,  // a record_function range as Kineto repeats it on the GPU stream it covers
  kOther,
};

// A complete ("ph":"X") event. Views point into the reader's buffers and are valid only during the call.
struct TraceEvent {
  EventCategory category = EventCategory::kOther;
  std::string_view name;
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  // From args; -1 when absent.
  std::int64_t device = -1;
  std::int64_t stream = -1;
  std::int64_t correlation = -1;
  std::int64_t bytes = -1;
  // The thread ("tid") of CPU-side events (cpu_op, user_annotation, runtime calls; the stream for a
  // gpu_user_annotation); -1 when absent or not a number (Chrome traces allow a string there).
  std::int64_t tid = -1;
};

// Facts from the top level of the trace object.
struct TraceHeader {
  std::optional<std::int64_t> rank;        // distributedInfo.rank
  std::optional<std::int64_t> world_size;  // distributedInfo.world_size
  std::optional<std::string> backend;      // distributedInfo.backend: "nccl", "gloo", ...
  std::map<std::int64_t, std::string> device_names;  // deviceProperties: id -> name
};

class TraceEventSink {
 public:
  virtual ~TraceEventSink() = default;
  virtual void on_event(const TraceEvent& event) = 0;
};

}  // namespace gpuscope::trace
