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
  std::string augment;  // --augment OUT: the trace again, with counter tracks
  std::string by;             // --by op|annotation: that table alone
  bool critical_path = false;  // --critical-path: each step's critical path alone
  trace::TraceAnalysisOptions analysis;
};

std::expected<TraceOptions, ParseExit> parse_trace_args(std::span<const std::string> args);
// --rank (when given: `rank` not null) and --kernel-wait-us into `analysis`, or the usage error; shared
// by `trace` and `trace diff`.
std::expected<void, ParseExit> apply_rank_and_kernel_wait(const std::string* rank, const std::string& kernel_wait,
                                                          trace::TraceAnalysisOptions& analysis);
int run_trace(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
