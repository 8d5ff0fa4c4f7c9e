// The two ways views print a Snapshot's time: nvidia-smi's CSV form and ISO 8601 for JSON.
// Both are UTC with milliseconds, so logs from different hosts line up without a time-zone guess.
#pragma once

#include <chrono>
#include <string>

namespace gpuscope::exporter {

// "2026/01/01 00:10:00.000" in local time (TZ), as nvidia-smi prints it
std::string smi_timestamp(std::chrono::system_clock::time_point t);
// "2026-01-01T00:10:00.000Z"
std::string iso_timestamp(std::chrono::system_clock::time_point t);
// Seconds since the epoch with millisecond precision (1767226200.123).
double unix_seconds(std::chrono::system_clock::time_point t);

}  // namespace gpuscope::exporter
