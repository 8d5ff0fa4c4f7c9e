// `gpuscope trace`: analyses PyTorch profiler (Kineto) traces, one file or a directory of per-rank files;
// needs no GPU and no NVML.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "trace/trace_analyzer.h"

namespace gpuscope::cli {

struct TraceOptions {
  std::string path;
  bool json = false;
  bool detail = false;  // several ranks: every rank's full report
  std::string augment;  // --augment OUT: the trace again, with counter tracks (issue 22)
  std::string by;             // --by op|annotation: that table alone (issue 22)
  bool critical_path = false;  // --critical-path: each step's critical path alone (issue 22)
  trace::TraceAnalysisOptions analysis;
};

std::expected<TraceOptions, ParseExit> parse_trace_args(std::span<const std::string> args);
int run_trace(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
