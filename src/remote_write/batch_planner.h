// Batch planning: the samples of one read window of the store, cut into remote-write requests that
// each hold at most one sample per series, in time order, with the cursor each one completes.
//
// Why one sample per series: Prometheus accepts a sample whose timestamp and value equal its series'
// newest (it drops it silently) but rejects any older one as out of order. A request that reached the
// receiver but whose acknowledgement was lost (the agent killed between the two) is sent again after a
// restart; with one sample per series, every sample of that resend is its series' newest or later, so
// the resend is accepted and adds nothing twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "store/queryable.h"

namespace gpuscope::remote_write {

struct PlannedSample {
  std::uint32_t series = 0;  // index into the window's series
  store::Sample sample;
};

struct WriteBatch {
  std::vector<PlannedSample> samples;
  // Once this batch is acknowledged every sample with t <= cursor_after has been sent; nullopt for all
  // but the last part of a timestamp split over several batches (more series at one time than one
  // batch holds).
  std::optional<std::int64_t> cursor_after;
};

// The window's samples (every series' samples by time, all within (previous cursor, window_end]) as
// batches of at most max_samples (> 0). The last batch completes window_end; no samples, no batches.
std::vector<WriteBatch> plan_batches(std::span<const store::SeriesSamples> window, std::int64_t window_end,
                                     std::size_t max_samples);

}  // namespace gpuscope::remote_write
