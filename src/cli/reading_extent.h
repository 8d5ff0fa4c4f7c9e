// Where a source's GPU readings are, seen from a span that has none: what `diagnose` tells a user whose
// --at missed the data ("the data dir's readings end at 10:52:56 (pass --at)") instead of a bare "none".
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>

#include "analysis/reading_source.h"

namespace gpuscope::cli {

struct ReadingExtent {
  std::optional<std::int64_t> last_before;  // the newest reading at or before the span's start
  std::optional<std::int64_t> first_after;  // the oldest reading after the span's end (up to `horizon_end_ms`)
};

// How far either side of the span the search looks: readings a decade away are no longer "nearest".
inline constexpr std::int64_t kExtentHorizonMs = 10LL * 366 * 24 * 3600 * 1000;

// Searches `source` for the readings (utilization or GR engine active) of the GPUs `filter` keeps nearest
// to (from_ms, to_ms]: in spans that double from an hour outwards, so the first span holding readings is
// at most twice as long as the distance to them, and a source with nothing near costs ~17 reads a side.
// Looks no later than `horizon_end_ms` (now: no reading comes from the future).
std::expected<ReadingExtent, std::string> find_reading_extent(const analysis::ReadingSource& source,
                                                              std::int64_t from_ms, std::int64_t to_ms,
                                                              std::int64_t horizon_end_ms,
                                                              const analysis::GpuFilter& filter);

}  // namespace gpuscope::cli
