// `gpuscope trace diff BEFORE AFTER`: two runs (trace files or directories of per-rank traces) side by
// side, reached through `gpuscope trace diff`; needs no GPU and no NVML.
#pragma once

#include <expected>
#include <span>
#include <string>

#include "cli/invocation.h"
#include "trace/trace_analyzer.h"
#include "trace/trace_diff.h"

namespace gpuscope::cli {

struct TraceDiffCliOptions {
  std::string before;
  std::string after;
  bool json = false;
  std::size_t top = 10;
  trace::TraceDiffOptions diff;
  trace::TraceAnalysisOptions analysis;  // both sides are read with the same options
};

// The arguments after `trace diff`.
std::expected<TraceDiffCliOptions, ParseExit> parse_trace_diff_args(std::span<const std::string> args);
int run_trace_diff(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
