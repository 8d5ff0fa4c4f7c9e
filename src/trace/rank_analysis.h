// RankAnalysis: turns a RankTimeline into a RankReport: busy/idle and the HTA idle breakdown, kernel
// categories and top kernels, transfers, launch statistics, overlap, data loading and the verdict.
#pragma once

#include <cstdint>

#include "trace/rank_report.h"
#include "trace/rank_timeline.h"

namespace gpuscope::trace {

struct AnalysisOptions {
  std::int64_t kernel_wait_threshold_ns = 30'000;  // HTA's default: shorter gaps are kernel wait
  std::int64_t short_kernel_threshold_ns = 10'000;
  std::size_t top = 10;
};

// Sorts the timeline's vectors in place (they are not needed in file order afterwards).
RankReport analyze_rank(RankTimeline& timeline, const AnalysisOptions& options);

}  // namespace gpuscope::trace
