#include "cli/trace_verb.h"

#include <unistd.h>

#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "cli/trace_diff_verb.h"
#include "export/machine_value.h"
#include "trace/nsys_kernel_summary.h"
#include "trace/ops_report.h"
#include "trace/progress_meter.h"
#include "trace/rank_comparison.h"
#include "trace/counters_report.h"
#include "trace/critical_path_overlay.h"
#include "trace/trace_overlay.h"
#include "trace/trace_report_json.h"
#include "trace/trace_report_text.h"

namespace gpuscope::cli {
namespace {

// Below this the whole read takes about a second: a progress bar would only flicker.
constexpr std::uint64_t kProgressMinBytes = 256ull << 20;

// --augment: the analysed trace again, with the counter tracks, at options.augment.
int write_augmented_trace(const TraceOptions& options, const trace::TraceReport& report, const Invocation& inv) {
  const auto fail = [&](const std::string& message) {
    inv.err << "gpuscope: " << message << '\n';
    inv.err.flush();
    return kExitRuntime;
  };
  if (report.ranks.size() != 1) return fail("--augment writes one trace: give a file, or --rank R with a directory");
  const trace::RankReport& rank = report.ranks.front();
  if (rank.parse.input != "JSON") return fail(fmt::format("{}: --augment needs a JSON trace, not {}", rank.file, rank.parse.input));
  // The copy keeps the input's bytes: what --lenient skipped would make it invalid JSON.
  if (rank.parse.skipped_events > 0 || rank.parse.skipped_bytes > 0 || rank.parse.truncated) {
    return fail(fmt::format("{}: has unreadable parts (--lenient skipped them): an augmented copy would not be valid JSON", rank.file));
  }
  auto events = trace::counter_overlay_events(rank);
  const auto path = trace::critical_path_overlay_events(rank.critical_path);
  events.insert(events.end(), path.begin(), path.end());
  auto written = trace::write_trace_overlay(rank.file, options.augment, events);
  if (!written) return fail(written.error().what());
  inv.err << fmt::format("wrote {}: {} with {} counter events (launch queue per stream, memory bandwidth per direction){}\n",
                         options.augment, rank.file, written->added_events - path.size(),
                         path.empty() ? std::string()
                                      : fmt::format(" and {} critical-path spans (process {}, a row per step)", path.size(),
                                                    trace::kCriticalPathPid));
  return kExitOk;
}

}  // namespace

std::expected<void, ParseExit> apply_rank_and_kernel_wait(const std::string* rank, const std::string& kernel_wait,
                                                          trace::TraceAnalysisOptions& analysis) {
  if (rank != nullptr) {
    auto r = positive_integer(*rank == "0" ? "1" : *rank);
    if (!r) return std::unexpected(usage(fmt::format("invalid value '{}' for --rank (a rank number >= 0)", *rank)));
    analysis.rank = *rank == "0" ? 0 : *r;
  }
  auto us = positive_integer(kernel_wait);
  if (!us || *us > 1'000'000'000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --kernel-wait-us (microseconds > 0)", kernel_wait)));
  }
  analysis.analysis.kernel_wait_threshold_ns = *us * 1000;
  return {};
}

std::expected<TraceOptions, ParseExit> parse_trace_args(std::span<const std::string> args) {
  const std::string description = fmt::format(
      "Analyse PyTorch profiler (Kineto) traces and Nsight Systems reports exported to SQLite: GPU busy and idle time and why it idles (host wait, kernel wait,\n"
      "other, per stream as HTA defines them), computation/communication/memory time, top kernels, transfer\n"
      "bandwidth, launch overhead, communication overlap, data loading, and a verdict with the usual fix.\n"
      "PATH is a .json or .json.gz trace, an nsys .sqlite export (nsys export --type sqlite), or a directory of per-rank\n"
      "files of one run (a table across ranks, and a\n"
      "straggler when one rank's median step is {:.0f}% slower than the others', from {} steps per rank).\n"
      "No GPU or NVML is needed. Exit 1 when a trace cannot be read (the error names the byte offset); exit 2 when\n"
      "a directory is not one run (different world sizes or backends, two files of one rank).",
      100 * trace::kStragglerStepExcess, trace::kStragglerMinSteps);
  auto app = make_verb_app(
      "trace", description,
      "  gpuscope trace trace.json.gz\n  gpuscope trace ./traces/ --rank 3 --top 20\n  gpuscope trace big.json --format json --lenient\n"
      "  gpuscope trace report.sqlite --report kernels\n"
      "  gpuscope trace diff before.json.gz after.json.gz   (two runs compared: gpuscope trace diff --help)");
  TraceOptions options;
  std::string format = "text";
  std::string top = "10";
  std::string rank;
  std::string kernel_wait = "30";
  std::string report = "analysis";
  app->add_option("path", options.path, "trace file (.json, .json.gz, nsys .sqlite) or directory of per-rank traces")
      ->type_name("PATH")
      ->required();
  app->add_option("--format", format, "text (default) or json (seconds, bytes, ratios; units in the names)")->type_name("FORMAT");
  app->add_option("--top", top, "how many kernels to list (default 10)")->type_name("N");
  app->add_option("--rank", rank, "only this rank (from distributedInfo, or rank-N in the file name)")->type_name("R");
  app->add_flag("--lenient", options.analysis.lenient,
                "skip unreadable events, garbage and a truncated end, and report how much was skipped");
  app->add_flag("--python-functions", options.analysis.python_functions,
                "also read python_function events (skipped by default) and list the slowest");
  app->add_flag("--all-events", options.analysis.parse_unused_events,
                "also parse and check the events no analysis reads (cpu_op, flow, metadata); slower");
  app->add_option("--dataloader-pattern", options.analysis.data_loading_pattern,
                  "regex for data-loading annotations (default DataLoader)")
      ->type_name("REGEX");
  app->add_option("--kernel-wait-us", kernel_wait, "idle gaps shorter than this are kernel wait (default 30, as HTA)")
      ->type_name("US");
  app->add_option("--report", report,
                  "analysis (default), or kernels: every kernel's time %, total, instances, avg, median, min, max and stddev "
                  "(ns), as nsys stats --report cuda_gpu_kern_sum prints them")
      ->type_name("REPORT");
  app->add_flag("--detail", options.detail, "with several ranks, print every rank's full report after the table");
  // Per-step rows and kernel sequences.
  std::string sequence_length = "8";
  app->add_flag("--exclude-last-step", options.analysis.analysis.exclude_last_step,
                "leave the last ProfilerStep out of the step statistics, per-step rows and critical paths, as HTA does "
                "by default (to compare figures with HTA's)");
  app->add_flag("--drop-incomplete", options.analysis.analysis.drop_incomplete_steps,
                "leave out of the per-step rows a first or last step the profiler window cut (the report names them)");
  app->add_option("--sequence-length", sequence_length, "longest repeated kernel sequence to look for (2-64, default 8)")
      ->type_name("N");
  // Counters over time.
  std::string max_queue = "1024";
  app->add_option("--augment", options.augment,
                  "also write the trace (one file, or --rank R of a directory) with counter tracks for chrome://tracing and "
                  "Perfetto: launch-queue length per stream, memory bandwidth per direction; gzip when OUT ends in .gz")
      ->type_name("OUT.json[.gz]");
  app->add_option("--max-queue-length", max_queue,
                  "launches a stream queues before the next launch blocks (default 1024, CUDA's and HTA's)")
      ->type_name("N");
  // Issue 22: GPU time by op / annotation, the critical path.
  app->add_option("--by", options.by,
                  "print GPU time by 'op' (the innermost aten op around each launch) or by 'annotation' (record_function / "
                  "NVTX ranges), every row, instead of the report")
      ->type_name("op|annotation");
  app->add_flag("--critical-path", options.critical_path,
                "print each step's critical path (CPU work, CUDA calls, GPU work, syncs) instead of the report");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());
  if (!options.by.empty() && options.by != "op" && options.by != "annotation") {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --by (op or annotation)", options.by)));
  }
  if (!options.by.empty() && options.critical_path) {
    return std::unexpected(usage("--by and --critical-path each print one table: give one of them"));
  }

  if (auto q = positive_integer(max_queue); !q || *q > 1'000'000'000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --max-queue-length (a count > 0)", max_queue)));
  } else {
    options.analysis.analysis.max_queue_length = *q;
  }
  if (!options.augment.empty()) {
    if (auto gzip = trace::overlay_output_gzip(options.augment); !gzip) {
      return std::unexpected(usage(fmt::format("invalid value for --augment: {}", gzip.error())));
    }
    options.analysis.analysis.counter_series = true;
    // Issue 22: with --critical-path, the critical path as rows of spans too.
    options.analysis.analysis.critical_path_spans = options.critical_path;
  }

  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  options.json = *json;
  if (report != "analysis" && report != "kernels") {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --report (analysis or kernels)", report)));
  }
  options.analysis.kernel_summary = report == "kernels";
  auto n = positive_integer(top);
  if (!n || *n > 100000) return std::unexpected(usage(fmt::format("invalid value '{}' for --top (a count > 0)", top)));
  options.analysis.analysis.top = static_cast<std::size_t>(*n);
  if (auto length = positive_integer(sequence_length); !length || *length < 2 || *length > 64) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --sequence-length (2 to 64)", sequence_length)));
  } else {
    options.analysis.analysis.max_sequence_length = static_cast<std::size_t>(*length);
  }
  if (auto ok = apply_rank_and_kernel_wait(app->count("--rank") > 0 ? &rank : nullptr, kernel_wait, options.analysis);
      !ok) {
    return std::unexpected(ok.error());
  }
  try {
    std::regex check(options.analysis.data_loading_pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return std::unexpected(
        usage(fmt::format("invalid regex '{}' for --dataloader-pattern: {}", options.analysis.data_loading_pattern, e.what())));
  }
  return options;
}

int run_trace(std::span<const std::string> args, const Invocation& inv) {
  // `trace diff BEFORE AFTER` is a subcommand; a trace file named "diff" is still ./diff.
  if (!args.empty() && args.front() == "diff") return run_trace_diff(args.subspan(1), inv);
  auto options = parse_trace_args(args);
  if (!options) return finish(options.error(), inv);

  // The bar goes only to a real terminal, never into a captured stream or a log file.
  std::optional<trace::ProgressMeter> meter;
  if (&inv.err == &std::cerr && ::isatty(STDERR_FILENO) == 1) {
    meter.emplace(inv.err);
    options->analysis.progress = [&meter](std::uint64_t done, std::uint64_t total) {
      if (total >= kProgressMinBytes) meter->update(done, total);
    };
  }
  if (!options->augment.empty() && !options->analysis.rank) {
    if (auto files = trace::list_trace_files(options->path); files && files->size() > 1) {
      return finish(usage("--augment writes one trace: give a file, or --rank R with a directory"), inv);
    }
  }
  auto report = trace::analyze_traces(options->path, options->analysis);
  if (meter) meter->finish();
  if (!report) {
    inv.err << "gpuscope: " << report.error().what() << '\n';
    inv.err.flush();
    // What was asked for does not fit the files (a rank none has, a directory that is not one run): the
    // command is wrong, not the data.
    const auto kind = report.error().kind;
    return kind == trace::TraceErrorKind::kNoSuchRank || kind == trace::TraceErrorKind::kNotOneRun ? kExitUsage : kExitRuntime;
  }
  if (!options->augment.empty()) {
    if (const int rc = write_augmented_trace(*options, *report, inv); rc != kExitOk) return rc;
  }
  if (options->analysis.kernel_summary) {
    if (options->json) {
      inv.out << exporter::json_line(trace::kernel_summary_json(report->kernel_summaries)) << '\n';
    } else {
      inv.out << trace::kernel_summary_text(report->kernel_summaries);
    }
  } else if (!options->by.empty()) {
    const auto view = options->by == "op" ? trace::AttributionView::kOps : trace::AttributionView::kAnnotations;
    if (options->json) {
      inv.out << exporter::json_line(trace::attribution_view_json(*report, view)) << '\n';
    } else {
      inv.out << trace::attribution_view_text(*report, view);
    }
  } else if (options->critical_path) {
    if (options->json) {
      inv.out << exporter::json_line(trace::critical_path_view_json(*report)) << '\n';
    } else {
      inv.out << trace::critical_path_view_text(*report);
    }
  } else if (options->json) {
    inv.out << exporter::json_line(trace::trace_report_json(*report)) << '\n';
  } else {
    inv.out << trace::trace_report_text(*report, trace::TextReportOptions{.all_ranks_in_detail = options->detail});
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli
