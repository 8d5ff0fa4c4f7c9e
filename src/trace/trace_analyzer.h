// The trace module's entry point: one trace file, or a directory of per-rank files (read in parallel,
// one thread per file), parsed and analysed into one TraceReport. A file is a PyTorch profiler (Kineto)
// trace, or an Nsight Systems report exported to SQLite (told by its content: the SQLite header).
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trace/nsys_kernel_summary.h"
#include "trace/rank_analysis.h"
#include "trace/rank_comparison.h"
#include "trace/rank_report.h"
#include "trace/trace_error.h"

namespace gpuscope::trace {

struct TraceAnalysisOptions {
  bool lenient = false;
  bool python_functions = false;
  bool parse_unused_events = false;  // see ParseOptions
  std::string data_loading_pattern = "DataLoader";  // ECMAScript regex, searched in annotation names
  AnalysisOptions analysis;
  std::optional<std::int64_t> rank;  // keep only this rank
  bool kernel_summary = false;       // also summarize every kernel as nsys's cuda_gpu_kern_sum does
  unsigned max_threads = 0;          // 0: one per file, up to the hardware threads
  // Called (from any thread, one call at a time) with file bytes consumed so far and the total.
  std::function<void(std::uint64_t consumed, std::uint64_t total)> progress;
};

struct TraceReport {
  std::vector<RankReport> ranks;  // ordered by rank, then file name
  RankComparison comparison;
  std::vector<std::string> skipped_files;  // lenient: files that could not be read at all, with why
  std::uint64_t input_bytes = 0;            // on disk
  std::vector<KernelSummary> kernel_summaries;  // with kernel_summary: one per rank, in the order of `ranks`
};

// Trace files in a directory (names ending .json, .json.gz or .sqlite, sorted), or the path itself when a file.
std::expected<std::vector<std::string>, TraceError> list_trace_files(const std::string& path);

// One file, no threads: the unit the benchmark measures.
std::expected<RankReport, TraceError> analyze_trace_file(const std::string& file, const TraceAnalysisOptions& options);

std::expected<TraceReport, TraceError> analyze_traces(const std::string& path, const TraceAnalysisOptions& options);

}  // namespace gpuscope::trace
