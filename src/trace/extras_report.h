// The report sections of the analyses beyond the summary, text and JSON: per-step rows, idle-gap distributions with
// the longest gaps explained, and repeated kernel sequences. trace_report_text.cc and
// trace_report_json.cc call these where the sections go.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trace/rank_report.h"

namespace gpuscope::trace {

// Text sections of one device: its idle gaps, then its kernel sequences.
void device_extras_text(std::string& out, const DeviceReport& d);
// The per-step table of one rank (after its devices).
void per_step_text(std::string& out, const RankReport& r, std::size_t max_rows);

nlohmann::ordered_json idle_intervals_json(const IdleIntervalsReport& report);
nlohmann::ordered_json kernel_sequences_json(const std::vector<KernelSequence>& sequences);
nlohmann::ordered_json per_step_json(const RankReport& r);

}  // namespace gpuscope::trace
