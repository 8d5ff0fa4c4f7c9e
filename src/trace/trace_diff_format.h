// The text and JSON forms of a TraceDiff (`gpuscope trace diff`).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "trace/trace_diff.h"

namespace gpuscope::trace {

// The sides, the unit, warnings, the whole-trace figures, the biggest changes as one-line explanations,
// then each table that changed (`top` rows each, by impact).
std::string trace_diff_text(const TraceDiff& diff, std::size_t top);

// {"before": {...}, "after": {...}, "per": "step", "per_description", "warnings": [...], "no_changes",
// "metrics": {"<key>": {"before", "after", "change", "change_ratio"}} (seconds, ratios, counts: the unit in
// the key), "biggest_changes": [{"table", "name", "status", "change_seconds", "explanation"}],
// "tables": [{"kind", "title", "added", "removed", "changed", "unchanged", "rows": [...]}]: `top` biggest changes, `top`
// rows per table.
nlohmann::ordered_json trace_diff_json(const TraceDiff& diff, std::size_t top);

}  // namespace gpuscope::trace
