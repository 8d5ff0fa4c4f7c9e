#include "cli/trace_diff_verb.h"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

#include "cli/trace_verb.h"
#include "export/machine_value.h"
#include "trace/progress_meter.h"
#include "trace/trace_diff_format.h"

namespace gpuscope::cli {
namespace {

// As for `gpuscope trace`: below this both reads take about a second and a bar would only flicker.
constexpr std::uint64_t kDiffProgressMinBytes = 256ull << 20;

}  // namespace

std::expected<TraceDiffCliOptions, ParseExit> parse_trace_diff_args(std::span<const std::string> args) {
  auto app = make_verb_app(
      "trace diff",
      "Compare two runs of a program: BEFORE and AFTER are each a PyTorch profiler trace (.json, .json.gz), an nsys "
      ".sqlite export, or a directory of per-rank traces of one run. Shows step time (median, mean), GPU busy and idle "
      "time with its breakdown (host wait, kernel wait, other), computation/communication/memory time, and every "
      "kernel (and transfer direction) added, removed or changed, sorted by its change in time per step, the biggest "
      "changes explained in one line each.\n"
      "Figures are per ProfilerStep when both sides have steps, else per second of trace, else per trace (--per "
      "overrides; the report says which). Kernel names match exactly; kernels whose names differ only in template "
      "arguments or numbers (tile sizes, launch bounds) are also grouped into families where one replaced another. "
      "Unrelated traces (no kernel in common, other GPUs or world sizes) get a warning line.\n"
      "Exit 1 when a side cannot be read (the error names the side); exit 2 for bad flags and for a directory that "
      "is not one run.",
      "  gpuscope trace diff before.json.gz after.json.gz\n  gpuscope trace diff ./run-a/ ./run-b/ --top 20\n"
      "  gpuscope trace diff old.sqlite new.sqlite --format json\n  gpuscope trace diff a.json b.json --per second");
  TraceDiffCliOptions options;
  std::string format = "text";
  std::string top = "10";
  std::string per = "auto";
  std::string rank;
  std::string kernel_wait = "30";
  app->add_option("before", options.before, "the run before the change: trace file or directory of per-rank traces")
      ->type_name("BEFORE")
      ->required();
  app->add_option("after", options.after, "the run after the change: trace file or directory of per-rank traces")
      ->type_name("AFTER")
      ->required();
  app->add_option("--format", format, "text (default) or json (seconds, ratios, counts; units in the names)")
      ->type_name("FORMAT");
  app->add_option("--top", top, "how many biggest changes, and rows per table, to show (default 10)")->type_name("N");
  app->add_option("--per", per, "auto (default: step, else second, else trace), step, second or trace")->type_name("UNIT");
  app->add_option("--rank", rank, "only this rank of each side (from distributedInfo, or rank-N in the file name)")
      ->type_name("R");
  app->add_flag("--lenient", options.analysis.lenient,
                "skip unreadable events and a truncated end on both sides, as trace --lenient");
  app->add_option("--kernel-wait-us", kernel_wait, "idle gaps shorter than this are kernel wait (default 30, as HTA)")
      ->type_name("US");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  options.json = *json;
  auto n = positive_integer(top);
  if (!n || *n > 100000) return std::unexpected(usage(fmt::format("invalid value '{}' for --top (a count > 0)", top)));
  options.top = static_cast<std::size_t>(*n);
  options.diff.top = options.top;
  if (per == "step") {
    options.diff.unit = trace::DiffUnit::kStep;
  } else if (per == "second") {
    options.diff.unit = trace::DiffUnit::kSecond;
  } else if (per == "trace") {
    options.diff.unit = trace::DiffUnit::kTrace;
  } else if (per != "auto") {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --per (auto, step, second or trace)", per)));
  }
  if (auto ok = apply_rank_and_kernel_wait(app->count("--rank") > 0 ? &rank : nullptr, kernel_wait, options.analysis);
      !ok) {
    return std::unexpected(ok.error());
  }
  // Every kernel, not just the report's top N: a kernel outside the top 10 can be the one that changed.
  options.analysis.kernel_summary = true;
  return options;
}

int run_trace_diff(std::span<const std::string> args, const Invocation& inv) {
  auto options = parse_trace_diff_args(args);
  if (!options) return finish(options.error(), inv);

  // One bar for both sides: the bytes read of both over the bytes of both.
  std::optional<trace::ProgressMeter> meter;
  std::mutex progress_lock;
  std::uint64_t done[2] = {0, 0}, total[2] = {0, 0};
  auto analysis_for = [&](int side) {
    trace::TraceAnalysisOptions a = options->analysis;
    if (meter) {
      a.progress = [&, side](std::uint64_t consumed, std::uint64_t of) {
        std::lock_guard lock(progress_lock);
        done[side] = consumed;
        total[side] = of;
        if (total[0] + total[1] >= kDiffProgressMinBytes) meter->update(done[0] + done[1], total[0] + total[1]);
      };
    }
    return a;
  };
  if (&inv.err == &std::cerr && ::isatty(STDERR_FILENO) == 1) meter.emplace(inv.err);

  // The two sides are independent: BEFORE on a thread of its own while AFTER is read here.
  std::optional<std::expected<trace::TraceReport, trace::TraceError>> before, after;
  {
    const auto before_options = analysis_for(0);
    std::jthread before_thread([&] {
      // An exception must not leave the thread (that would terminate): it becomes BEFORE's error.
      try {
        before = trace::analyze_traces(options->before, before_options);
      } catch (const std::exception& e) {
        before = std::unexpected(
            trace::TraceError{trace::TraceErrorKind::kIo, -1, fmt::format("internal error: {}", e.what()), options->before});
      }
    });
    after = trace::analyze_traces(options->after, analysis_for(1));
  }
  if (meter) meter->finish();
  for (const auto& [side, report] : {std::pair{"BEFORE", &before}, std::pair{"AFTER", &after}}) {
    if (**report) continue;
    const auto& error = (**report).error();
    inv.err << "gpuscope: trace diff: " << side << ": " << error.what() << '\n';
    inv.err.flush();
    const auto kind = error.kind;
    return kind == trace::TraceErrorKind::kNoSuchRank || kind == trace::TraceErrorKind::kNotOneRun ? kExitUsage : kExitRuntime;
  }
  const trace::TraceDiff diff =
      trace::diff_traces(trace::diff_side(**before, options->before), trace::diff_side(**after, options->after), options->diff);
  if (options->json) {
    inv.out << exporter::json_line(trace::trace_diff_json(diff, options->top)) << '\n';
  } else {
    inv.out << trace::trace_diff_text(diff, options->top);
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli
