// What the agent process itself uses (CPU time, memory, file descriptors), read from /proc/self, for
// the standard process_* series: the agent's own cost is part of what it reports.
#pragma once

#include <optional>
#include <string>

#include "export/agent_metrics.h"

namespace gpuscope::http {

// nullopt where /proc is not readable (the series are then left out).
std::optional<exporter::ProcessUsage> read_process_usage(const std::string& proc_root = "/proc");

}  // namespace gpuscope::http
