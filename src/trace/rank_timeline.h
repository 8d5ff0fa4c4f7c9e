// RankTimeline: what is kept of one rank's trace for the analyses: every GPU activity (48 bytes each),
// every CUDA runtime/driver call (24 bytes), the DataLoader and ProfilerStep annotation intervals, and
// running totals; everything else in the trace is counted and dropped as it streams past.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/interval_math.h"
#include "trace/trace_event.h"

namespace gpuscope::trace {

enum class ActivityKind : std::uint8_t {
  kComputeKernel,
  kCommunicationKernel,  // NCCL
  kMemcpy,
  kMemset,
};

inline constexpr std::int64_t kNoLaunch = std::numeric_limits<std::int64_t>::min();

struct GpuActivity {
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::int64_t correlation = -1;
  // Start of the runtime call that launched it; kNoLaunch until matched by correlation id.
  std::int64_t launch_start_ns = kNoLaunch;
  std::uint32_t name_id = 0;
  std::int32_t stream = -1;
  std::int16_t device = -1;
  ActivityKind kind = ActivityKind::kComputeKernel;

  std::int64_t end_ns() const { return start_ns + duration_ns; }
};

struct RuntimeCall {
  std::int64_t correlation = -1;
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
};

enum class TransferDirection : std::uint8_t { kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeerToPeer, kHostToHost, kMemset, kOther };

std::string_view direction_name(TransferDirection direction);  // "H2D", "D2H", ... "memset"
TransferDirection direction_of_memcpy(std::string_view name);   // from Kineto's "Memcpy HtoD (Pinned -> Device)"

struct TransferTotals {
  std::uint64_t count = 0;
  std::int64_t bytes = 0;
  std::int64_t duration_ns = 0;
};

struct NamedTotals {
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t max_ns = 0;
};

struct RankTimeline {
  TraceHeader header;
  std::vector<GpuActivity> activities;
  std::vector<RuntimeCall> runtime_calls;
  std::vector<std::string> names;  // GpuActivity::name_id -> name
  std::vector<bool> communication_names;  // name_id -> an NCCL kernel's name
  std::map<std::pair<std::int64_t, TransferDirection>, TransferTotals> transfers;  // (device, direction)
  std::vector<Interval> data_loading;  // annotations matching the DataLoader pattern
  std::vector<Interval> steps;         // ProfilerStep#N annotations
  std::vector<std::int64_t> step_numbers;  // their N, where it is a number
  std::map<std::string, NamedTotals, std::less<>> python_functions;  // only when asked for
  // Over all CPU and GPU events (not the profiler's own "Trace" span).
  std::int64_t first_ns = std::numeric_limits<std::int64_t>::max();
  std::int64_t last_ns = std::numeric_limits<std::int64_t>::min();
  std::uint64_t cpu_ops = 0;
  std::uint64_t annotations = 0;
};

// The sink that fills a RankTimeline as events stream in.
class TimelineBuilder : public TraceEventSink {
 public:
  // `data_loading_pattern` is searched (ECMAScript regex) in user_annotation names.
  TimelineBuilder(RankTimeline& timeline, const std::regex& data_loading_pattern);
  void on_event(const TraceEvent& event) override;

  // Reserves room for as many activities and runtime calls as `json_bytes` of trace could hold (up to
  // a cap), so the arrays are never copied as they grow: each doubling had the old and the new array
  // resident at once (1.2 of the 2.8 MB heap peak on the 35 MB real trace). Room never written to is
  // address space, not memory: the kernel backs a page on its first write.
  void reserve_for(std::uint64_t json_bytes);

 private:
  std::uint32_t intern(std::string_view name);
  bool is_data_loading(std::string_view name);

  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  RankTimeline& timeline_;
  const std::regex& data_loading_pattern_;
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> name_ids_;
  std::unordered_map<std::string, bool, NameHash, std::equal_to<>> data_loading_names_;
};

// Kineto marks NCCL kernels only by name ("ncclKernel_AllReduce...", "ncclDevKernel_...").
bool is_communication_kernel(std::string_view name);

}  // namespace gpuscope::trace
