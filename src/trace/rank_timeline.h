// RankTimeline: what is kept of one rank's trace for the analyses: every GPU activity (48 bytes each),
// every CUDA runtime/driver call (32 bytes), every CPU op and user annotation (32 bytes), the DataLoader
// and ProfilerStep annotation intervals, and running totals; everything else in the trace is counted and
// dropped as it streams past.
#pragma once

#include <algorithm>
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
  // A memcpy's or memset's size, in the padding the fields above leave: see encode_transfer_bytes.
  std::uint32_t bytes_code = 0;

  std::int64_t end_ns() const { return start_ns + duration_ns; }
  std::int64_t bytes() const;
};

// A transfer's size in 32 bits: exact below 2 GiB, in whole KiB from there to 2 TiB (an error under one
// part in two million), so GpuActivity stays 48 bytes. Negative (unknown) sizes are 0.
inline std::uint32_t encode_transfer_bytes(std::int64_t bytes) {
  constexpr std::int64_t kExact = std::int64_t{1} << 31;
  if (bytes <= 0) return 0;
  if (bytes < kExact) return static_cast<std::uint32_t>(bytes);
  return 0x80000000u | static_cast<std::uint32_t>(std::min<std::int64_t>((bytes + 512) >> 10, 0x7FFFFFFF));
}
inline std::int64_t decode_transfer_bytes(std::uint32_t code) {
  return (code & 0x80000000u) != 0 ? static_cast<std::int64_t>(code & 0x7FFFFFFFu) << 10 : static_cast<std::int64_t>(code);
}
inline std::int64_t GpuActivity::bytes() const { return decode_transfer_bytes(bytes_code); }

struct RuntimeCall {
  std::int64_t correlation = -1;
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::uint32_t name_id = 0;  // cudaLaunchKernel, cudaStreamSynchronize, cuLaunchKernelEx, ... (in `names`)
  std::int32_t tid = -1;      // the CPU thread that made the call (compact_tid); -1 when unknown

  std::int64_t end_ns() const { return start_ns + duration_ns; }
};

// What a CpuEvent is: an aten/c10d op ("cpu_op"), a record_function or NVTX range ("user_annotation",
// ProfilerStep#N among them), or Kineto's copy of a record_function range on the GPU stream it covered
// ("gpu_user_annotation": tid is then the stream).
enum class CpuEventKind : std::uint8_t { kCpuOp, kUserAnnotation, kGpuUserAnnotation };

// A CPU-side range of the trace, in file order (ops nest by time on their thread).
struct CpuEvent {
  std::int64_t start_ns = 0;
  std::int64_t duration_ns = 0;
  std::uint32_t name_id = 0;  // in `names`
  std::int32_t tid = -1;      // compact_tid of the event's thread; -1 when the trace gives none
  CpuEventKind kind = CpuEventKind::kCpuOp;

  std::int64_t end_ns() const { return start_ns + duration_ns; }
};

// A thread id in 32 bits: an id that fits is kept as it is (Kineto writes some negative ones); a larger
// one (a 64-bit id from another OS) is folded, which keeps distinct threads distinct in practice.
inline std::int32_t compact_tid(std::int64_t tid) {
  if (tid >= INT32_MIN && tid <= INT32_MAX) return static_cast<std::int32_t>(tid);
  const auto bits = static_cast<std::uint64_t>(tid);
  return static_cast<std::int32_t>((bits ^ (bits >> 31) ^ (bits >> 62)) & 0x7FFFFFFF);
}

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
  std::vector<RuntimeCall> runtime_calls;  // analyze_rank reorders them (by correlation id, launches first)
  std::vector<CpuEvent> cpu_events;        // cpu_op, user_annotation, gpu_user_annotation events
  std::vector<std::string> names;  // name_id (activities, runtime calls, CPU events) -> name
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
  // The last name seen in each of a few slots (by length and last byte): most names repeat a few events
  // later (cudaLaunchKernel, aten::empty, ...), and a compare is cheaper than hashing them.
  static constexpr std::size_t kRecentNames = 64;
  std::uint32_t recent_names_[kRecentNames] = {};
  bool recent_valid_[kRecentNames] = {};
  std::unordered_map<std::string, bool, NameHash, std::equal_to<>> data_loading_names_;
};

// A CUDA runtime/driver call that returns only when GPU work queued before it is done: the stream,
// device, context and event syncs, and the copies without "Async" (cudaMemcpy, cuMemcpyDtoH_v2, ...).
bool is_synchronizing_call(std::string_view name);

// Kineto marks NCCL kernels only by name ("ncclKernel_AllReduce...", "ncclDevKernel_...").
bool is_communication_kernel(std::string_view name);

}  // namespace gpuscope::trace
