// The report's parts for the CPU side: GPU time by op and by annotation (OpAttribution) and
// each step's critical path (CriticalPathReport), as text and JSON: a short top-N inside the full
// report, and the whole tables for `--by op|annotation` and `--critical-path`.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trace/trace_analyzer.h"

namespace gpuscope::trace {

enum class AttributionView { kOps, kAnnotations };

// Inside the full report, after the per-step rows: the top `rows` ops and annotations, and one
// paragraph on the critical path.
void ops_summary_text(std::string& out, const RankReport& r, std::size_t rows);
// For the full report's JSON: "ops" and "annotations" (top `rows` each) with their totals.
nlohmann::ordered_json attribution_json(const OpAttribution& ops, std::size_t rows);
nlohmann::ordered_json critical_path_json(const CriticalPathReport& path);

// `--by op|annotation`: every row, per rank.
std::string attribution_view_text(const TraceReport& report, AttributionView view);
nlohmann::ordered_json attribution_view_json(const TraceReport& report, AttributionView view);
// `--critical-path`: every step, per rank.
std::string critical_path_view_text(const TraceReport& report);
nlohmann::ordered_json critical_path_view_json(const TraceReport& report);

}  // namespace gpuscope::trace
