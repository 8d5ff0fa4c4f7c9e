// The analyses beyond the summary run for each device and rank from analyze_rank: the idle gaps one by one
// (distributions, the longest explained), repeated kernel sequences, and the per-step rows.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trace/idle_intervals.h"
#include "trace/profiler_steps.h"
#include "trace/rank_analysis.h"
#include "trace/rank_report.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace {

// Runtime calls shorter than this cannot cover much of an idle gap worth explaining.
inline constexpr std::int64_t kExplainingCallMinNs = 10'000;

struct RankExtrasInput {
  const RankTimeline& timeline;
  const std::vector<LongRuntimeCall>& long_calls;  // long_runtime_calls(), taken before the launch join
  const std::vector<Interval>& data_loading;       // merged
  const std::vector<ProfilerStep>& steps;
  std::int64_t trace_start_ns = 0;
  const AnalysisOptions& options;
};

// Fills d.idle_intervals and d.kernel_sequences (after d.launch is final); returns the device's gaps.
DeviceGaps analyze_device_extras(DeviceReport& d, std::span<const GpuActivity> acts, const RankExtrasInput& in);

// The step rows on the main device. `acts` and `gaps` are that device's; empty when there is none.
StepsReport analyze_rank_steps(std::int64_t device, std::span<const GpuActivity> acts, const DeviceGaps& gaps,
                               const RankExtrasInput& in, std::int64_t trace_end_ns);

}  // namespace gpuscope::trace
