// The report sections of the counters over time: launch-queue length per stream and memory
// bandwidth per direction, text and JSON. trace_report_text.cc and trace_report_json.cc call these.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trace/rank_report.h"

namespace gpuscope::trace {

// Text sections of one device: its launch queues, then its bandwidth over time (each only when there is
// something to show).
void device_counters_text(std::string& out, const DeviceReport& d);

nlohmann::ordered_json queue_length_json(const QueueLengthReport& report);
nlohmann::ordered_json memory_bandwidth_json(const MemoryBandwidthReport& report);

// The counter tracks of a rank analysed with AnalysisOptions::counter_series, for write_trace_overlay:
// per device (as Kineto's GPU process id), a queue-length track per stream and a bandwidth track per
// direction.
std::vector<OverlayEvent> counter_overlay_events(const RankReport& rank);

}  // namespace gpuscope::trace
