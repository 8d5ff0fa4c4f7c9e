#include "cli/diagnose_verb.h"

#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/diagnosis_report.h"
#include "analysis/reading_source.h"
#include "analysis/timeline.h"
#include "cli/eval_verb.h"
#include "cli/gpu_selector.h"
#include "cli/prometheus_source.h"
#include "cli/read_only_store.h"
#include "cli/reading_extent.h"
#include "cli/simulated_history.h"
#include "http/query_api.h"
#include "model/clock.h"

namespace gpuscope::cli {
namespace {

constexpr std::string_view kDiagnoseDescription =
    "Say why each GPU is slow or wasted: one verdict per GPU over a window of its recorded readings\n"
    "(idle, transfer_bound, launch_bound, input_starved, no_tensor_cores, memory_bound, compute_bound,\n"
    "network_bound, unhealthy, unknown), the values that decided it and the usual fix, plus findings (power capped,\n"
    "thermal slowdown, memory nearly full, imbalance, utilization.gpu far above SM active). Reads a\n"
    "running agent or any Prometheus (--url), a data directory (--data-dir; an import too, the agent\n"
    "may keep running) or a simulator scenario run on a virtual clock (--simulate=SCENARIO, --at as a\n"
    "time into it). --timeline prints each GPU's verdict changes over --since before --at instead.\n"
    "Times: Unix seconds, RFC 3339, now or now-DURATION. Exit 1 when the window holds no GPU readings\n"
    "(the nearest are named).";

constexpr std::string_view kDiagnoseExample =
    "  gpuscope diagnose --url http://127.0.0.1:9400\n"
    "  gpuscope diagnose --data-dir /tmp/incident --at 2026-11-25T10:52:45Z --window 20s --format json\n"
    "  gpuscope diagnose --data-dir /tmp/incident --timeline --since 2h --at now\n"
    "  gpuscope diagnose --simulate=scenarios/no_tensor.yaml --at 12m";

std::string where_text(const DiagnoseOptions& o) {
  switch (o.source) {
    case DiagnoseOptions::Source::kUrl: return "--url " + o.url;
    case DiagnoseOptions::Source::kDataDir: return "--data-dir " + o.data_dir;
    case DiagnoseOptions::Source::kSimulate: return o.scenario.empty() ? "--simulate" : "--simulate=" + o.scenario;
  }
  return {};
}

// "no GPU readings in the 30s before T; the readings end at T0 (pass --at)": what was asked, and where
// the data is, so the next command can hit it.
std::string no_readings_text(const DiagnoseOptions& o, std::int64_t from_ms, std::int64_t to_ms,
                             const ReadingExtent& extent) {
  std::string gpus;
  for (const auto& id : o.gpus) gpus += (gpus.empty() ? " of GPU " : ",") + id;
  std::string out = o.timeline ? fmt::format("{}: no GPU readings{} between {} and {}", where_text(o), gpus,
                                             analysis::rfc3339(from_ms), analysis::rfc3339(to_ms))
                               : fmt::format("{}: no GPU readings{} in the {} before {}", where_text(o), gpus,
                                             analysis::duration_text(to_ms - from_ms), analysis::rfc3339(to_ms));
  if (extent.last_before && extent.first_after) {
    out += fmt::format("; the nearest readings end at {} and begin again at {} (pass --at)",
                       analysis::rfc3339(*extent.last_before), analysis::rfc3339(*extent.first_after));
  } else if (extent.last_before) {
    out += fmt::format("; its readings end at {} (pass --at)", analysis::rfc3339(*extent.last_before));
  } else if (extent.first_after) {
    out += fmt::format("; its readings begin at {} (pass --at)", analysis::rfc3339(*extent.first_after));
  } else {
    out += "; none within 10 years either side";
  }
  return out;
}

// A duration flag within [min_ms, max_ms]; the usage error names the flag, the range and an example.
std::expected<std::int64_t, ParseExit> bounded_duration(const std::string& flag, const std::string& text,
                                                        std::int64_t min_ms, std::int64_t max_ms,
                                                        std::string_view range, std::string_view example) {
  auto d = http::parse_api_duration(text);
  if (!d || *d < min_ms || *d > max_ms) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for {} ({}, e.g. {})", text, flag, range, example)));
  }
  return *d;
}

// Runs the scenario from its t = 0 up to `at_offset_ms`, a reading each kSimulatedIntervalMs; the
// virtual time of the last reading (Unix ms), or the exit code.
std::expected<std::int64_t, int> simulate_until(SimulatedHistory& sim, std::int64_t at_offset_ms, const Invocation& inv) {
  const std::int64_t end = sim.start_ms() + at_offset_ms;
  for (std::int64_t t = sim.start_ms(); t <= end; t += kSimulatedIntervalMs) {
    if (inv.stop.load(std::memory_order_relaxed)) return std::unexpected(kExitOk);
    if (auto recorded = sim.record_at(t); !recorded) {
      inv.err << "gpuscope: " << recorded.error() << '\n';
      return std::unexpected(kExitRuntime);
    }
  }
  return end;
}

}  // namespace

std::expected<DiagnoseOptions, ParseExit> parse_diagnose_args(std::span<const std::string> args,
                                                              const GlobalOptions& global, std::int64_t now_ms) {
  auto app = make_verb_app("diagnose", kDiagnoseDescription, kDiagnoseExample);
  DiagnoseOptions o;
  std::string window = "30s", at, since, step, format = "text", gpus;
  std::vector<std::string> thresholds;
  app->add_option("--url", o.url, "a running agent, e.g. http://127.0.0.1:9400, or any Prometheus")->type_name("URL");
  app->add_option("--data-dir", o.data_dir, "read this data directory (an agent's, or an import); never written")
      ->type_name("DIR");
  app->add_option("--window", window, "the readings each verdict is drawn from, 1s to 1h (default 30s)")
      ->type_name("DURATION");
  app->add_option("--at", at,
                  "the end of the window (default now); with --simulate a time into the scenario, e.g. 12m "
                  "(default: the window, or --since with --timeline)")
      ->type_name("TIME");
  app->add_flag("--timeline", o.timeline, "print each GPU's verdict changes over --since before --at");
  app->add_option("--since", since, "with --timeline, how far back from --at, up to 30d (default 1h)")
      ->type_name("DURATION");
  app->add_option("--step", step, "with --timeline, time between diagnoses, 1s to 1h (default: a tenth of the window)")
      ->type_name("DURATION");
  app->add_option("-i,--id", gpus, "only these GPUs: comma-separated indices or UUIDs")->type_name("GPUS");
  app->add_option("--format", format, "text (default) or json (stable verdict ids; ratios, watts, seconds)")
      ->type_name("FORMAT");
  app->add_option("--threshold", thresholds, "set one of the diagnosis' thresholds, e.g. memory_bound_dram_active=0.8; "
                                             "repeatable (an unknown NAME lists them all)")
      ->type_name("NAME=VALUE");
  const auto default_timeout = std::chrono::duration_cast<std::chrono::seconds>(kEvalQueryTimeout + kEvalTimeoutMargin);
  std::string timeout = fmt::format("{}s", default_timeout.count());
  const CLI::Option* timeout_flag = app->add_option("--timeout", timeout, "with --url, give up on each answer after this long, 100ms to 1h (default 130s)")
      ->type_name("DURATION");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

  const int sources = !o.url.empty() + !o.data_dir.empty() + global.simulate;
  if (sources != 1) {
    return std::unexpected(usage("diagnose needs exactly one of --url, --data-dir and --simulate[=SCENARIO]"));
  }
  o.source = !o.url.empty()        ? DiagnoseOptions::Source::kUrl
             : !o.data_dir.empty() ? DiagnoseOptions::Source::kDataDir
                                   : DiagnoseOptions::Source::kSimulate;
  o.scenario = global.scenario;
  const bool simulated = o.source == DiagnoseOptions::Source::kSimulate;

  auto w = bounded_duration("--window", window, kMinWindowMs, kMaxWindowMs, "1s to 1h", "30s");
  if (!w) return std::unexpected(w.error());
  o.window_ms = *w;
  if (!o.timeline && (!since.empty() || !step.empty())) {
    return std::unexpected(usage(fmt::format("{} is for --timeline", since.empty() ? "--step" : "--since")));
  }
  if (!since.empty()) {
    auto s = bounded_duration("--since", since, 1000, kMaxSinceMs, "1s to 30d", "1h");
    if (!s) return std::unexpected(s.error());
    o.since_ms = *s;
  }
  if (!step.empty()) {
    auto s = bounded_duration("--step", step, 1000, 3600'000, "1s to 1h", "5s");
    if (!s) return std::unexpected(s.error());
    o.step_ms = *s;
  }
  if (simulated) {
    if (!at.empty()) {
      auto a = bounded_duration("--at", at, 1000, kMaxSinceMs, "with --simulate, a time into the scenario, 1s to 30d", "12m");
      if (!a) return std::unexpected(a.error());
      o.at_ms = *a;
    }
    // The whole run by default: from the scenario's start to --at, or up to --since (or the window).
    if (o.timeline && since.empty()) o.since_ms = o.at_ms.value_or(kDefaultSinceMs);
    if (!o.at_ms) o.at_ms = o.timeline ? o.since_ms : o.window_ms;
    if (o.since_ms > *o.at_ms) {
      return std::unexpected(usage("with --simulate, --since reaches back before the scenario's start (--at is the time into it)"));
    }
  } else {
    if (o.timeline && since.empty()) o.since_ms = kDefaultSinceMs;
    if (!at.empty()) {
      auto t = parse_time(at, now_ms);
      if (!t) return std::unexpected(usage(fmt::format("invalid value '{}' for --at: {}", at, t.error())));
      if (*t < analysis::kEarliestDiagnosisMs || *t > analysis::kLatestDiagnosisMs) {
        return std::unexpected(usage(fmt::format("invalid value '{}' for --at: not between 1970 and 9999", at)));
      }
      o.at_ms = *t;
    }
  }
  if (!gpus.empty()) {
    auto ids = split_gpu_ids(gpus);
    if (!ids) return std::unexpected(usage(ids.error()));
    o.gpus = std::move(*ids);
  }
  for (const auto& t : thresholds) {
    if (auto set = analysis::set_threshold(o.thresholds, t); !set) {
      return std::unexpected(usage(fmt::format("--threshold: {}", set.error())));
    }
  }
  auto to = parse_duration(timeout);
  if (!to || *to < std::chrono::milliseconds(100) || *to > std::chrono::hours(1)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --timeout (100ms to 1h, e.g. 30s)", timeout)));
  }
  if (o.source != DiagnoseOptions::Source::kUrl && timeout_flag->count() > 0) {
    return std::unexpected(usage("--timeout is for --url"));
  }
  o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*to);
  auto json = json_format(format);
  if (!json) return std::unexpected(json.error());
  o.json = *json;
  return o;
}

int run_diagnose(std::span<const std::string> args, const Invocation& inv) {
  const std::int64_t now = model::system_clock().unix_ms();
  auto options = parse_diagnose_args(args, inv.global, now);
  if (!options) return finish(options.error(), inv);
  const DiagnoseOptions& o = *options;

  // The source: each kind lives here until the end of the run.
  std::unique_ptr<store::Tsdb> tsdb;
  std::unique_ptr<SimulatedHistory> sim;
  std::unique_ptr<analysis::ReadingSource> source;
  std::int64_t at = o.at_ms.value_or(now);
  std::int64_t horizon_end = now;  // no reading comes from later than this
  switch (o.source) {
    case DiagnoseOptions::Source::kUrl:
      source = std::make_unique<PrometheusSource>(o.url, o.timeout);
      break;
    case DiagnoseOptions::Source::kDataDir: {
      auto opened = open_read_only_store(o.data_dir, inv, now);
      if (!opened) return opened.error();
      tsdb = std::move(*opened);
      source = std::make_unique<analysis::StoreSource>(*tsdb);
      break;
    }
    case DiagnoseOptions::Source::kSimulate: {
      auto opened = SimulatedHistory::open(inv, o.scenario);
      if (!opened) return opened.error();
      sim = std::move(*opened);
      auto end = simulate_until(*sim, *o.at_ms, inv);
      if (!end) return end.error();
      at = horizon_end = *end;
      source = std::make_unique<analysis::StoreSource>(sim->head());
      break;
    }
  }
  const analysis::GpuFilter filter{o.gpus};
  const std::int64_t from = o.timeline ? at - o.since_ms : at - o.window_ms;
  const auto no_readings = [&]() {
    auto extent = find_reading_extent(*source, from, at, horizon_end, filter);
    if (!extent) {
      inv.err << "gpuscope: " << extent.error() << '\n';
      return kExitRuntime;
    }
    inv.err << "gpuscope: " << no_readings_text(o, from, at, *extent) << '\n';
    return kExitRuntime;
  };

  if (o.timeline) {
    analysis::TimelineOptions to;
    to.from_ms = from;
    to.to_ms = at;
    to.window_ms = o.window_ms;
    to.step_ms = o.step_ms;
    auto changes = analysis::timeline(*source, to, o.thresholds, filter);
    if (!changes) {
      inv.err << "gpuscope: " << changes.error() << '\n';
      return kExitRuntime;
    }
    if (changes->empty()) return no_readings();
    if (o.json) {
      inv.out << analysis::timeline_json(*changes, from, at, o.window_ms).dump() << '\n';
    } else {
      inv.out << fmt::format("Verdict changes from {} to {} (window {}, a diagnosis every {}):\n",
                             analysis::rfc3339(from), analysis::rfc3339(at), analysis::duration_text(o.window_ms),
                             analysis::duration_text(o.step_ms > 0 ? o.step_ms : analysis::default_step_ms(o.window_ms)))
              << analysis::timeline_text(*changes);
    }
  } else {
    auto diagnosis = analysis::diagnose_from(*source, at, o.window_ms, o.thresholds, filter);
    if (!diagnosis) {
      inv.err << "gpuscope: " << diagnosis.error() << '\n';
      return kExitRuntime;
    }
    if (diagnosis->gpus.empty()) return no_readings();
    inv.out << (o.json ? analysis::diagnosis_json(*diagnosis).dump() + "\n" : analysis::diagnosis_text(*diagnosis));
  }
  inv.out.flush();
  return inv.out ? kExitOk : kExitRuntime;
}

}  // namespace gpuscope::cli
