#include "trace/trace_analyzer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "trace/nsys_reader.h"
#include "trace/rank_timeline.h"
#include "trace/trace_byte_reader.h"
#include "trace/trace_parser.h"

namespace gpuscope::trace {
namespace {

namespace fs = std::filesystem;

// nsys exports are named .sqlite; a file given by itself is told by its content instead.
bool is_trace_name(const std::string& name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".sqlite");
}

std::expected<std::regex, TraceError> compile_pattern(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return std::unexpected(TraceError{TraceErrorKind::kBadValue, -1, fmt::format("invalid pattern '{}': {}", pattern, e.what()), {}});
  }
}

struct FileAnalysis {
  RankReport report;
  KernelSummary kernels;  // only with TraceAnalysisOptions::kernel_summary
};

// The events of one file into `timeline`: an nsys SQLite export when the file starts with SQLite's
// header, else a Kineto JSON trace (plain or gzip).
std::expected<ParseSummary, TraceError> read_events(const std::string& file, const TraceAnalysisOptions& options,
                                                    RankTimeline& timeline, TimelineBuilder& builder,
                                                    const std::function<void(std::uint64_t)>& progress,
                                                    std::optional<std::int64_t> only_rank) {
  if (has_sqlite_magic(file)) {
    auto summary = read_nsys_report(file, builder, timeline.header, NsysReadOptions{.lenient = options.lenient});
    if (summary && progress) progress(summary->json_bytes);
    return summary;
  }
  if (file.ends_with(".sqlite")) {
    return std::unexpected(TraceError{TraceErrorKind::kNotATrace, 0, "not an SQLite database (no \"SQLite format 3\" header)", file});
  }
  auto reader = TraceByteReader::open(file);
  if (!reader) return std::unexpected(reader.error());
  builder.reserve_for(reader->file_size());  // for gzip, the compressed size: a start
  ParseOptions parse;
  parse.lenient = options.lenient;
  parse.python_functions = options.python_functions;
  parse.parse_unused_events = options.parse_unused_events;
  parse.progress = progress;
  if (only_rank) {
    parse.before_events = [&](const TraceHeader& header) { return !header.rank || *header.rank == *only_rank; };
  }
  auto summary = parse_trace(*reader, builder, timeline.header, parse);
  if (!summary) {
    TraceError e = summary.error();
    e.file = file;
    return std::unexpected(e);
  }
  return summary;
}

// One file's report; nullopt when `only_rank` is set and the file's header (or, for a format without one,
// its name) names another rank: then its events are not read at all (--rank on a directory of 1 GB
// per-rank files reads one file, not all).
std::expected<std::optional<FileAnalysis>, TraceError> analyze_file(const std::string& file,
                                                                    const TraceAnalysisOptions& options,
                                                                    const std::regex& pattern,
                                                                    const std::function<void(std::uint64_t)>& progress,
                                                                    std::optional<std::int64_t> only_rank) {
  const auto started = std::chrono::steady_clock::now();
  if (only_rank && has_sqlite_magic(file)) {
    RankReport named;
    named.file = file;
    if (const std::int64_t rank = display_rank(named); rank >= 0 && rank != *only_rank) return std::nullopt;
  }
  RankTimeline timeline;
  TimelineBuilder builder(timeline, pattern);
  auto summary = read_events(file, options, timeline, builder, progress, only_rank);
  if (!summary) return std::unexpected(summary.error());
  if (summary->stopped_before_events) return std::nullopt;
  FileAnalysis analysis;
  RankReport& report = analysis.report;
  report = analyze_rank(timeline, options.analysis);
  report.file = file;
  report.parse = *summary;
  if (options.kernel_summary) {
    analysis.kernels = summarize_kernels(timeline);
    analysis.kernels.file = file;
    analysis.kernels.rank = display_rank(report);
  }
  report.parse_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return analysis;
}

}  // namespace

std::expected<std::vector<std::string>, TraceError> list_trace_files(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    return std::unexpected(TraceError{TraceErrorKind::kIo, -1, "no such file or directory", path});
  }
  if (!fs::is_directory(status)) return std::vector<std::string>{path};
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file() && is_trace_name(entry.path().filename().string())) files.push_back(entry.path().string());
  }
  if (ec) return std::unexpected(TraceError{TraceErrorKind::kIo, -1, fmt::format("cannot list: {}", ec.message()), path});
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return std::unexpected(TraceError{TraceErrorKind::kIo, -1, "no trace files (*.json, *.json.gz, *.sqlite) in the directory", path});
  }
  return files;
}

std::expected<RankReport, TraceError> analyze_trace_file(const std::string& file, const TraceAnalysisOptions& options) {
  auto pattern = compile_pattern(options.data_loading_pattern);
  if (!pattern) return std::unexpected(pattern.error());
  auto analysis = analyze_file(file, options, *pattern, {}, std::nullopt);
  if (!analysis) return std::unexpected(analysis.error());
  return std::move((*analysis)->report);
}

std::expected<TraceReport, TraceError> analyze_traces(const std::string& path, const TraceAnalysisOptions& options) {
  auto files = list_trace_files(path);
  if (!files) return std::unexpected(files.error());
  auto pattern = compile_pattern(options.data_loading_pattern);
  if (!pattern) return std::unexpected(pattern.error());

  TraceReport report;
  std::vector<std::uint64_t> sizes(files->size(), 0);
  for (std::size_t i = 0; i < files->size(); ++i) {
    std::error_code ec;
    sizes[i] = fs::file_size((*files)[i], ec);
    if (ec) sizes[i] = 0;
    report.input_bytes += sizes[i];
  }

  // Progress: each file reports its own consumed bytes; the sum goes out under one lock.
  std::mutex progress_lock;
  std::vector<std::uint64_t> consumed(files->size(), 0);
  std::uint64_t consumed_total = 0;
  auto progress_for = [&](std::size_t index) -> std::function<void(std::uint64_t)> {
    if (!options.progress) return {};
    return [&, index](std::uint64_t now) {
      std::lock_guard lock(progress_lock);
      consumed_total += now - consumed[index];
      consumed[index] = now;
      options.progress(consumed_total, report.input_bytes);
    };
  };

  std::vector<std::optional<std::expected<std::optional<FileAnalysis>, TraceError>>> results(files->size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < files->size(); i = next++) {
      results[i] = analyze_file((*files)[i], options, *pattern, progress_for(i), options.rank);
      if (options.progress && *results[i] && !**results[i]) progress_for(i)(sizes[i]);  // skipped: done with it
    }
  };
  unsigned threads = options.max_threads != 0 ? options.max_threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, files->size()));
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  }

  bool other_ranks = false;  // files whose header named a rank other than --rank
  std::vector<FileAnalysis> analyses;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& r = *results[i];
    if (r) {
      if (*r) {
        analyses.push_back(std::move(**r));
      } else {
        other_ranks = true;
      }
    } else if (options.lenient && files->size() > 1) {
      report.skipped_files.push_back(r.error().what());
    } else {
      return std::unexpected(r.error());
    }
  }
  if (analyses.empty() && !other_ranks) {
    return std::unexpected(TraceError{TraceErrorKind::kNotATrace, -1, "no trace could be read", path});
  }
  std::stable_sort(analyses.begin(), analyses.end(), [](const FileAnalysis& a, const FileAnalysis& b) {
    return display_rank(a.report) < display_rank(b.report);
  });
  if (options.rank) {
    std::erase_if(analyses, [&](const FileAnalysis& a) { return display_rank(a.report) != *options.rank; });
  }
  for (auto& a : analyses) {
    report.ranks.push_back(std::move(a.report));
    if (options.kernel_summary) report.kernel_summaries.push_back(std::move(a.kernels));
  }
  if (options.rank) {
    if (report.ranks.empty()) {
      return std::unexpected(TraceError{TraceErrorKind::kNoSuchRank, -1, fmt::format("no trace for rank {}", *options.rank), path});
    }
  }
  // Compared as ranks of one job only when they are one: two runs, two profiling windows or two files of
  // one rank side by side would name a straggler that is no such thing.
  if (auto why = why_not_one_run(report.ranks)) return std::unexpected(TraceError{TraceErrorKind::kNotOneRun, -1, *why, path});
  report.comparison = compare_ranks(report.ranks);
  return report;
}

}  // namespace gpuscope::trace
