// IdleIntervals: the GPU's idle gaps one by one, device-wide (no stream of the device busy) and per
// stream (HTA's view), each classified by HTA's rule; their distribution (count, p50/p90/p99, longest)
// and, for the longest device-wide gaps, what the CPU was doing meanwhile.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "trace/profiler_steps.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace {

// part / whole, 0 when there is no whole (rank_report.h's ratio(), which this header cannot include).
double ratio_of(std::int64_t part, std::int64_t whole);

enum class GapKind : std::uint8_t { kHostWait, kKernelWait, kOther };

std::string_view gap_kind_key(GapKind kind);  // "host_wait", "kernel_wait", "other"

// HTA's rule for a gap that starts at `gap_start` and ends when `next` starts: host wait when the CPU
// had not started launching `next` when the GPU went idle, else kernel wait when shorter than the
// threshold, else other.
GapKind classify_gap_kind(std::int64_t gap_start, const GpuActivity& next, std::int64_t kernel_wait_threshold_ns);

struct IdleGap {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  GapKind kind = GapKind::kOther;
  std::int64_t length() const { return end_ns - start_ns; }
};

struct DeviceGaps {
  std::vector<IdleGap> device;  // between the device's first start and last end, ordered
  std::vector<std::pair<std::int32_t, std::vector<IdleGap>>> streams;  // by stream id
};

// `acts`: one device's activities, sorted by start.
DeviceGaps find_idle_gaps(std::span<const GpuActivity> acts, std::int64_t kernel_wait_threshold_ns);

// Percentiles are nearest-rank on the sorted gap lengths: the value at index round(q * (n - 1)).
struct GapDistribution {
  std::uint64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t p50_ns = 0;
  std::int64_t p90_ns = 0;
  std::int64_t p99_ns = 0;
  std::int64_t longest_ns = 0;
  std::int64_t longest_start_ns = 0;  // relative to the trace's start (RankReport::span_start_ns)
  GapKind longest_kind = GapKind::kOther;
};

GapDistribution gap_distribution(std::span<const IdleGap> gaps, std::int64_t trace_start_ns);

// What the CPU did during one long gap. From the trace's CPU ops and annotations where it has them: the
// innermost one covering most of the gap (the shortest among those covering at least 90% of what the
// best one covers); else nothing. The runtime call overlapping the gap most (a synchronize, a blocked
// launch) and the share of the gap inside DataLoader annotations come from what every trace keeps.
struct GapContext {
  IdleGap gap;                            // times absolute
  std::int64_t start_offset_ns = 0;       // from the trace's start
  std::optional<std::int64_t> step;       // the ProfilerStep#N the gap starts in
  std::string cpu_name;                   // empty when no CPU op or annotation overlaps the gap
  std::string cpu_kind;                   // "cpu_op", "user_annotation"
  std::int32_t cpu_tid = -1;
  double cpu_cover = 0;                   // share of the gap it covers
  std::string runtime_name;               // the runtime call overlapping the gap most; empty if none
  double runtime_cover = 0;
  double data_loading_cover = 0;          // share of the gap inside DataLoader annotations
};

struct StreamGaps {
  std::int64_t stream = -1;
  GapDistribution gaps;
};

struct IdleIntervalsReport {
  GapDistribution device;  // device-wide gaps
  std::vector<StreamGaps> streams;
  std::vector<GapContext> longest;  // the longest device-wide gaps, longest first
  bool cpu_events = false;          // the trace gave CPU ops/annotations to explain them
};

// A runtime call kept for explaining gaps (the timeline's calls are reordered by the launch join).
struct LongRuntimeCall {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint32_t name_id = 0;
};

// The calls at least `min_ns` long, in start order: only they can cover much of a gap worth explaining.
std::vector<LongRuntimeCall> long_runtime_calls(const std::vector<RuntimeCall>& calls, std::int64_t min_ns);

struct IdleIntervalsInput {
  const RankTimeline& timeline;
  const DeviceGaps& gaps;
  const std::vector<LongRuntimeCall>& runtime_calls;
  const std::vector<Interval>& data_loading;  // merged
  const std::vector<ProfilerStep>& steps;
  std::int64_t trace_start_ns = 0;
  std::size_t explain = 5;  // how many of the longest gaps to explain
};

IdleIntervalsReport analyze_idle_intervals(const IdleIntervalsInput& input);

}  // namespace gpuscope::trace
