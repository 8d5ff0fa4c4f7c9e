// The trace report as JSON: every number in base units (seconds, bytes, bytes per second, ratios 0..1),
// with the unit in the field name, as all of gpuscope's machine output.
#pragma once

#include <nlohmann/json.hpp>

#include "trace/trace_analyzer.h"

namespace gpuscope::trace {

nlohmann::ordered_json trace_report_json(const TraceReport& report);

}  // namespace gpuscope::trace
