// The diagnosis for people (text: a block per GPU with its evidence) and for programs (JSON: the answer
// of `gpuscope diagnose --format json` and of the agent's /api/v1/diagnosis, one shape for both).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "analysis/verdict_tracker.h"

namespace gpuscope::analysis {

nlohmann::json diagnosis_json(const Diagnosis& diagnosis);
std::string diagnosis_text(const Diagnosis& diagnosis);

nlohmann::json timeline_json(const std::vector<VerdictChange>& changes, std::int64_t from_ms, std::int64_t to_ms,
                             std::int64_t window_ms);
// One line per change: time, GPU, verdict (detail), the summary.
std::string timeline_text(const std::vector<VerdictChange>& changes);

// "2026-11-25T15:04:12Z" (UTC, to the second; milliseconds when not whole).
std::string rfc3339(std::int64_t t_ms);
// "3m20s", "1h02m", "45s".
std::string duration_text(std::int64_t ms);

}  // namespace gpuscope::analysis
