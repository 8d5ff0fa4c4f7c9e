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
  // Per-step rows, idle intervals, kernel sequences.
  bool drop_incomplete_steps = false;
  // HTA's convention: the last ProfilerStep (by start) is left out of the step statistics, the per-step
  // rows and the critical paths (its GPU work still counts everywhere else).
  bool exclude_last_step = false;   // leave out a first or last step the profiler window cut
  std::size_t max_sequence_length = 8;  // kernel sequences of 2 to this many kernels
  std::size_t sequence_top = 5;
  std::size_t explained_gaps = 3;       // the longest idle gaps, with what the CPU did meanwhile
  // Counters over time: a stream whose launch queue holds this many blocks the next launch (CUDA, HTA:
  // 1024); `counter_series` keeps the queue-length and bandwidth series for an augmented trace.
  std::int64_t max_queue_length = 1024;
  bool counter_series = false;
  // Keep each step's critical path element by element (for an augmented trace), not only its totals.
  bool critical_path_spans = false;
};

// Sorts the timeline's vectors in place (they are not needed in file order afterwards).
RankReport analyze_rank(RankTimeline& timeline, const AnalysisOptions& options);

}  // namespace gpuscope::trace
