// The critical path as spans for an augmented trace (`gpuscope trace --critical-path --augment OUT`): a
// row per step in chrome://tracing / Perfetto, each element of the step's path when it ran.
#pragma once

#include <vector>

#include "trace/critical_path.h"
#include "trace/trace_overlay.h"

namespace gpuscope::trace {

// The process id of the critical-path row: none of Kineto's (CPU pids, GPU device numbers) is this large.
inline constexpr std::int64_t kCriticalPathPid = 0x7FFF0000;

// "ph":"X" events named "<kind>: <name>", category "gpuscope_critical_path", on pid kCriticalPathPid
// and tid = the step's number in the report (1, 2, ...), with the step and its bound in args; empty
// unless the report kept its spans (AnalysisOptions::critical_path_spans).
std::vector<OverlayEvent> critical_path_overlay_events(const CriticalPathReport& path);

}  // namespace gpuscope::trace
