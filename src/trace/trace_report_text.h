// The trace report for people: per rank, the GPU's busy/idle time and why it idles, what its kernels
// are, transfers, launches, data loading and the verdict with its fix; for several ranks a table
// across them and the straggler first.
#pragma once

#include <string>

#include "trace/trace_analyzer.h"

namespace gpuscope::trace {

struct TextReportOptions {
  bool all_ranks_in_detail = false;  // several ranks: print every rank's full report after the table
};

std::string trace_report_text(const TraceReport& report, const TextReportOptions& options = {});

}  // namespace gpuscope::trace
