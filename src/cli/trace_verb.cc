#include "cli/trace_verb.h"

#include <unistd.h>

#include <iostream>
#include <regex>

#include <fmt/format.h>

#include "export/machine_value.h"
#include "trace/nsys_kernel_summary.h"
#include "trace/progress_meter.h"
#include "trace/rank_comparison.h"
#include "trace/trace_report_json.h"
#include "trace/trace_report_text.h"

namespace gpuscope::cli {
namespace {

// Below this the whole read takes about a second: a progress bar would only flicker.
constexpr std::uint64_t kProgressMinBytes = 256ull << 20;

}  // namespace

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
      "  gpuscope trace report.sqlite --report kernels");
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
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

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
  if (app->count("--rank") > 0) {
    auto r = positive_integer(rank == "0" ? "1" : rank);
    if (!r) return std::unexpected(usage(fmt::format("invalid value '{}' for --rank (a rank number >= 0)", rank)));
    options.analysis.rank = rank == "0" ? 0 : *r;
  }
  auto us = positive_integer(kernel_wait);
  if (!us || *us > 1'000'000'000) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --kernel-wait-us (microseconds > 0)", kernel_wait)));
  }
  options.analysis.analysis.kernel_wait_threshold_ns = *us * 1000;
  try {
    std::regex check(options.analysis.data_loading_pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return std::unexpected(
        usage(fmt::format("invalid regex '{}' for --dataloader-pattern: {}", options.analysis.data_loading_pattern, e.what())));
  }
  return options;
}

int run_trace(std::span<const std::string> args, const Invocation& inv) {
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
  if (options->analysis.kernel_summary) {
    if (options->json) {
      inv.out << exporter::json_line(trace::kernel_summary_json(report->kernel_summaries)) << '\n';
    } else {
      inv.out << trace::kernel_summary_text(report->kernel_summaries);
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
