// Where the agent's cost counters continue from after a restart: each GPU's last recorded counter
// values and, when recent enough to bill the time since it, its last recorded reading, read from the
// history once at start, so the counters only grow and no time is billed twice (or, after a longer
// absence than a reading may stand for, at all).
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <vector>

#include "analysis/cost_meter.h"
#include "store/queryable.h"

namespace gpuscope::agent {

// How far back the seeding looks for a GPU's last reading, shortest first: a restart is nearly always
// within minutes, so a start reads minutes of history, not the whole retention; it stops once every GPU
// is found (a GPU new to the node is looked for back to the retention, once).
inline constexpr std::int64_t kCostLookbackStepsMs[] = {5LL * 60 * 1000, 3600LL * 1000, 24LL * 3600 * 1000};

// Seeds for the GPUs of `uuids` found in `history` up to `retention_ms` before `now_ms` (others start at
// 0). Dollar counters and the price are read in `tier` (another tier's series are other counters).
// Processes continue only when recorded within `rules.max_gap_ms` of now. An error is a storage failure.
std::expected<std::vector<analysis::CostSeed>, std::string> read_cost_seeds(const store::Queryable& history,
                                                                            std::span<const std::string> uuids,
                                                                            const std::string& tier,
                                                                            std::int64_t now_ms,
                                                                            std::int64_t retention_ms,
                                                                            const analysis::CostRules& rules);

}  // namespace gpuscope::agent
