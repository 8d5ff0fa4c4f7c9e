// A GPU's readings over a span (an epoch, the time between two calls of a training client) as a
// tracker logs them: the time-weighted mean, min and max of utilization, SM and tensor activity, memory,
// power and temperature, and the diagnosis' verdict over the span. Time-weighted, because readings are
// not always evenly spaced (a slow driver call, an agent restart), and a point sample says little about
// an epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/gpu_signals.h"
#include "analysis/reading_source.h"
#include "analysis/thresholds.h"

namespace gpuscope::analysis {

struct SpanStat {
  double mean = 0;
  double min = 0;
  double max = 0;
};

// The quantities a summary holds, with the names clients see.
struct SummaryQuantity {
  std::string_view name;  // "utilization_percent"
  Signal signal;
};
std::span<const SummaryQuantity> summary_quantities();

struct GpuSpanSummary {
  GpuIdentity identity;
  std::size_t readings = 0;
  std::vector<std::pair<std::string_view, SpanStat>> stats;  // as summary_quantities(), those recorded
  std::optional<Verdict> verdict;
  std::string verdict_summary;
};

// Each point weighs the time since the one before it (the first: the median spacing), a gap longer than
// `max_gap_ms` counting as `max_gap_ms` (the agent was away). Nullopt without points.
std::optional<SpanStat> time_weighted(std::span<const Point> points, std::int64_t max_gap_ms);

// The summaries over (from_ms, to_ms] of the GPUs in `histories`, with the verdict of a diagnosis over
// the span's last hour at most.
std::vector<GpuSpanSummary> summarize_span(std::span<const GpuHistory> histories, std::int64_t from_ms, std::int64_t to_ms,
                                           const Thresholds& thresholds);

// The verdict id over (from_ms, to_ms] for the GPU with index label `gpu`, read from `source`; nullopt
// when it has no readings there.
std::expected<std::optional<std::string>, std::string> span_verdict(const ReadingSource& source, std::int64_t from_ms,
                                                                    std::int64_t to_ms, unsigned gpu,
                                                                    const Thresholds& thresholds);

}  // namespace gpuscope::analysis
