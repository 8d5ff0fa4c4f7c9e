// The verdict timeline over a range: diagnoses stepped through it, each GPU's verdict changes.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <string>
#include <vector>

#include "analysis/reading_source.h"
#include "analysis/verdict_tracker.h"

namespace gpuscope::analysis {

struct TimelineOptions {
  std::int64_t from_ms = 0;  // the first diagnosis is at from_ms + step
  std::int64_t to_ms = 0;
  std::int64_t window_ms = 30'000;
  std::int64_t step_ms = 0;  // 0: a tenth of the window, at least a second
  // A verdict counts once it holds this many steps: a window straddling two phases is no phase.
  std::size_t min_hold = 2;
};

// Steps from the first to the last diagnosis; reads the source a chunk at a time, so a long range
// holds one chunk's readings.
std::expected<std::vector<VerdictChange>, std::string> timeline(const ReadingSource& source,
                                                                 const TimelineOptions& options,
                                                                 const Thresholds& thresholds, const GpuFilter& filter);

std::int64_t default_step_ms(std::int64_t window_ms);

}  // namespace gpuscope::analysis
