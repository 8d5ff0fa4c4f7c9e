#include "cli/cost_verb.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "analysis/cost_report_format.h"
#include "analysis/diagnosis_report.h"
#include "analysis/mig_right_sizing.h"
#include "analysis/right_sizing.h"
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

constexpr std::string_view kCostDescription =
    "What the GPUs cost over a span of recorded history and how the money was spent: hours held, dollars\n"
    "(the price recorded with the readings, else the price catalog's, in --tier), idle dollars (no kernels\n"
    "or copies), unused dollars (paid while the SMs were idle), energy (kWh and its cost) and efficiency\n"
    "(the SM-active-weighted share that bought work); per GPU, process, hpc_job or any label (--by). Then\n"
    "a monthly projection at the last day's rate (--budget: exit 1 when it is over), the top wasters and,\n"
    "per GPU, the cheapest catalog GPU that would carry the same peaks (right-sizing; an hour of readings\n"
    "at least). Reads a running agent or any Prometheus (--url), a data directory (--data-dir) or a\n"
    "simulator scenario run on a virtual clock (--simulate[=SCENARIO] --duration). Times: Unix seconds,\n"
    "RFC 3339, now or now-DURATION.";

constexpr std::string_view kCostExample =
    "  gpuscope cost --url http://127.0.0.1:9400 --since 7d\n"
    "  gpuscope cost --data-dir /var/lib/gpuscope --since 30d --by process --format csv\n"
    "  gpuscope cost --url http://prometheus:9090 --by hpc_job --tier commit_1y --budget 10000/month\n"
    "  gpuscope --simulate=scenarios/idle.yaml cost --duration 6h";

// --since's and --duration's range: the report reads a span a few hours at a time, so 90 days is
// minutes, not memory; longer is what a Prometheus recording rule is for.
constexpr std::int64_t kMaxCostSpanMs = 90LL * 24 * 3600 * 1000;
constexpr std::int64_t kDefaultCostSinceMs = 7LL * 24 * 3600 * 1000;

std::string where_text(const CostOptions& o) {
  switch (o.source) {
    case CostOptions::Source::kUrl: return "--url " + o.url;
    case CostOptions::Source::kDataDir: return "--data-dir " + o.data_dir;
    case CostOptions::Source::kSimulate: return o.scenario.empty() ? "--simulate" : "--simulate=" + o.scenario;
  }
  return {};
}

std::string no_readings_text(const CostOptions& o, const ReadingExtent& extent) {
  std::string out = fmt::format("{}: no GPU readings between {} and {}", where_text(o), analysis::rfc3339(o.from_ms),
                                analysis::rfc3339(o.to_ms));
  if (extent.last_before && extent.first_after) {
    out += fmt::format("; the nearest readings end at {} and begin again at {} (pass --start/--end)",
                       analysis::rfc3339(*extent.last_before), analysis::rfc3339(*extent.first_after));
  } else if (extent.last_before) {
    out += fmt::format("; its readings end at {} (pass --end)", analysis::rfc3339(*extent.last_before));
  } else if (extent.first_after) {
    out += fmt::format("; its readings begin at {} (pass --start)", analysis::rfc3339(*extent.first_after));
  } else {
    out += "; none within 10 years either side";
  }
  return out;
}

std::optional<double> parse_amount(std::string text) {
  if (!text.empty() && text.front() == '$') text.erase(0, 1);
  std::string digits;
  for (char c : text) {
    if (c != ',' && c != '_') digits += c;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc{} || ptr != digits.data() + digits.size() || !std::isfinite(v) || v <= 0) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::expected<double, std::string> parse_budget(std::string_view text) {
  std::string amount(text);
  double per_month = 1;
  if (const auto slash = amount.find('/'); slash != std::string::npos) {
    const std::string period = amount.substr(slash + 1);
    amount.resize(slash);
    constexpr double kMonthHours = 730;
    if (period == "month") {
      per_month = 1;
    } else if (period == "day") {
      per_month = kMonthHours / 24;
    } else if (period == "week") {
      per_month = kMonthHours / (24 * 7);
    } else if (period == "year") {
      per_month = 1.0 / 12;
    } else {
      return std::unexpected(fmt::format("'{}' is no period (month, week, day or year)", period));
    }
  }
  const auto v = parse_amount(amount);
  if (!v) return std::unexpected(fmt::format("'{}' is no amount of USD (e.g. 10000/month)", amount));
  return *v * per_month;
}

std::expected<CostOptions, ParseExit> parse_cost_args(std::span<const std::string> args, const GlobalOptions& global,
                                                      std::int64_t now_ms) {
  auto app = make_verb_app("cost", kCostDescription, kCostExample);
  CostOptions o;
  std::string since, start, end, by = "gpu", format = "text", budget, gpus, duration = "6h", interval = "15s";
  std::string tier = "on_demand";
  app->add_option("--url", o.url, "a running agent, e.g. http://127.0.0.1:9400, or any Prometheus")->type_name("URL");
  app->add_option("--data-dir", o.data_dir, "read this data directory (an agent's, or an import); never written")
      ->type_name("DIR");
  const CLI::Option* duration_flag =
      app->add_option("--duration", duration, "with --simulate, how much scenario time to run, 1m to 90d (default 6h)")
          ->type_name("DURATION");
  const CLI::Option* interval_flag =
      app->add_option("--interval", interval, "with --simulate, virtual time between readings, 1s to 5m (default 15s)")
          ->type_name("DURATION");
  app->add_option("--since", since, "the span ending now (or at --end), up to 90d (default 7d)")->type_name("DURATION");
  app->add_option("--start", start, "the span's start (with --end; instead of --since)")->type_name("TIME");
  app->add_option("--end", end, "the span's end (default now)")->type_name("TIME");
  app->add_option("--by", by, "rows per gpu (default), process, or the values of a label: hpc_job, Hostname, ...")
      ->type_name("gpu|process|LABEL");
  app->add_option("--tier", tier, "price tier: on_demand (default), spot, commit_1y or commit_3y")->type_name("TIER");
  app->add_option("--price-catalog", o.prices.catalog_file,
                  "price (and right-size) from this catalog instead of the prices recorded with the readings "
                  "(default: the installed catalog, for GPUs without a recorded price)")
      ->type_name("FILE");
  app->add_option("--price-override", o.prices.overrides,
                  "price GPUs whose model name the regex finds at USD per GPU-hour, over everything else; repeatable")
      ->type_name("MODEL_REGEX=USD");
  app->add_option("--budget", budget, "exit 1 when the monthly projection exceeds this, e.g. 10000/month, 300/day")
      ->type_name("USD[/PERIOD]");
  app->add_option("-i,--id", gpus, "only these GPUs: comma-separated indices or UUIDs")->type_name("GPUS");
  app->add_option("--format", format, "text (default), json or csv")->type_name("FORMAT");
  const auto default_timeout = std::chrono::duration_cast<std::chrono::seconds>(kEvalQueryTimeout + kEvalTimeoutMargin);
  std::string timeout = fmt::format("{}s", default_timeout.count());
  const CLI::Option* timeout_flag =
      app->add_option("--timeout", timeout, "with --url, give up on each answer after this long (default 130s)")
          ->type_name("DURATION");
  if (auto parsed = parse_arguments(*app, args); !parsed) return std::unexpected(parsed.error());

  if (!o.url.empty() + !o.data_dir.empty() + global.simulate != 1) {
    return std::unexpected(usage("cost needs exactly one of --url, --data-dir and --simulate[=SCENARIO]"));
  }
  o.source = !o.url.empty()        ? CostOptions::Source::kUrl
             : !o.data_dir.empty() ? CostOptions::Source::kDataDir
                                   : CostOptions::Source::kSimulate;
  o.scenario = global.scenario;
  const bool simulated = o.source == CostOptions::Source::kSimulate;
  const auto span = [](const std::string& flag, const std::string& text, std::int64_t min_ms, std::int64_t max_ms,
                       std::string_view range, std::string_view example) -> std::expected<std::int64_t, ParseExit> {
    auto d = http::parse_api_duration(text);
    if (!d || *d < min_ms || *d > max_ms) {
      return std::unexpected(usage(fmt::format("invalid value '{}' for {} ({}, e.g. {})", text, flag, range, example)));
    }
    return *d;
  };
  if (simulated) {
    if (!since.empty() || !start.empty() || !end.empty()) {
      return std::unexpected(usage("with --simulate the span is the whole run (--duration); --since, --start and --end "
                                   "are for --url and --data-dir"));
    }
    auto d = span("--duration", duration, 60'000, kMaxCostSpanMs, "1m to 90d", "6h");
    if (!d) return std::unexpected(d.error());
    o.duration_ms = *d;
    auto i = span("--interval", interval, 1000, 300'000, "1s to 5m", "15s");
    if (!i) return std::unexpected(i.error());
    o.interval_ms = *i;
  } else {
    if (duration_flag->count() > 0 || interval_flag->count() > 0) {
      return std::unexpected(usage(fmt::format("{} is for --simulate", duration_flag->count() > 0 ? "--duration" : "--interval")));
    }
    if (!since.empty() && !start.empty()) return std::unexpected(usage("give --since or --start, not both"));
    o.to_ms = now_ms;
    if (!end.empty()) {
      auto t = parse_time(end, now_ms);
      if (!t) return std::unexpected(usage(fmt::format("invalid value '{}' for --end: {}", end, t.error())));
      o.to_ms = *t;
    }
    if (!start.empty()) {
      auto t = parse_time(start, now_ms);
      if (!t) return std::unexpected(usage(fmt::format("invalid value '{}' for --start: {}", start, t.error())));
      o.from_ms = *t;
      if (o.from_ms >= o.to_ms) return std::unexpected(usage("--start must be before --end"));
      if (o.to_ms - o.from_ms > kMaxCostSpanMs) return std::unexpected(usage("--start to --end spans more than 90d"));
    } else {
      std::int64_t since_ms = kDefaultCostSinceMs;
      if (!since.empty()) {
        auto s = span("--since", since, 60'000, kMaxCostSpanMs, "1m to 90d", "7d");
        if (!s) return std::unexpected(s.error());
        since_ms = *s;
      }
      o.from_ms = o.to_ms - since_ms;
    }
  }
  if (by == "gpu") {
    o.by = analysis::CostGrouping::kGpu;
  } else if (by == "process") {
    o.by = analysis::CostGrouping::kProcess;
  } else {
    const bool valid = !by.empty() && (std::isalpha(static_cast<unsigned char>(by[0])) || by[0] == '_') &&
                       std::ranges::all_of(by, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid) return std::unexpected(usage(fmt::format("invalid value '{}' for --by (gpu, process or a label name)", by)));
    o.by = analysis::CostGrouping::kLabel;
    o.label = by;
  }
  if (!model::parse_price_tier(tier)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --tier ({})", tier, model::price_tier_names())));
  }
  o.prices.tier = tier;
  o.explicit_prices = !o.prices.catalog_file.empty() || !o.prices.overrides.empty();
  if (!budget.empty()) {
    auto b = parse_budget(budget);
    if (!b) return std::unexpected(usage(fmt::format("invalid value '{}' for --budget: {}", budget, b.error())));
    o.budget_usd_per_month = *b;
  }
  if (!gpus.empty()) {
    auto ids = split_gpu_ids(gpus);
    if (!ids) return std::unexpected(usage(ids.error()));
    o.gpus = std::move(*ids);
  }
  if (format == "text" || format == "table") {
    o.format = CostOptions::Format::kText;
  } else if (format == "json") {
    o.format = CostOptions::Format::kJson;
  } else if (format == "csv") {
    o.format = CostOptions::Format::kCsv;
  } else {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --format (text, json or csv)", format)));
  }
  auto to = parse_duration(timeout);
  if (!to || *to < std::chrono::milliseconds(100) || *to > std::chrono::hours(1)) {
    return std::unexpected(usage(fmt::format("invalid value '{}' for --timeout (100ms to 1h, e.g. 30s)", timeout)));
  }
  if (o.source != CostOptions::Source::kUrl && timeout_flag->count() > 0) return std::unexpected(usage("--timeout is for --url"));
  o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*to);
  return o;
}

int run_cost(std::span<const std::string> args, const Invocation& inv) {
  const std::int64_t now = model::system_clock().unix_ms();
  auto options = parse_cost_args(args, inv.global, now);
  if (!options) return finish(options.error(), inv);
  CostOptions& o = *options;
  auto prices = select_prices(o.prices);
  if (!prices) return usage_error(inv.err, prices.error());

  std::unique_ptr<store::Tsdb> tsdb;
  std::unique_ptr<SimulatedHistory> sim;
  std::unique_ptr<analysis::ReadingSource> source;
  std::int64_t horizon_end = now;
  switch (o.source) {
    case CostOptions::Source::kUrl:
      source = std::make_unique<PrometheusSource>(o.url, o.timeout);
      break;
    case CostOptions::Source::kDataDir: {
      auto opened = open_read_only_store(o.data_dir, inv, now);
      if (!opened) return opened.error();
      tsdb = std::move(*opened);
      source = std::make_unique<analysis::StoreSource>(*tsdb);
      break;
    }
    case CostOptions::Source::kSimulate: {
      auto opened = SimulatedHistory::open(inv, o.scenario, *prices);
      if (!opened) return opened.error();
      sim = std::move(*opened);
      const std::int64_t start = sim->start_ms();
      for (std::int64_t t = start; t <= start + o.duration_ms; t += o.interval_ms) {
        if (inv.stop.load(std::memory_order_relaxed)) return kExitOk;
        if (auto recorded = sim->record_at(t); !recorded) {
          inv.err << "gpuscope: " << recorded.error() << '\n';
          return kExitRuntime;
        }
      }
      o.from_ms = start;  // the first reading starts the first interval
      o.to_ms = horizon_end = start + o.duration_ms;
      source = std::make_unique<analysis::StoreSource>(sim->head());
      break;
    }
  }

  analysis::CostQuery q;
  q.from_ms = o.from_ms;
  q.to_ms = o.to_ms;
  q.by = o.by;
  q.label = o.label;
  q.filter = analysis::GpuFilter{o.gpus};
  q.tier = prices->tier;
  q.catalog = prices->catalog ? &*prices->catalog : nullptr;
  q.catalog_first = o.explicit_prices;
  if (q.catalog) q.rules.energy_usd_per_kwh = q.catalog->energy_usd_per_kwh();
  auto report = analysis::cost_report(*source, q);
  if (!report) {
    const bool label = o.by == analysis::CostGrouping::kLabel && report.error().starts_with("unknown label");
    inv.err << "gpuscope: " << (label ? "--by: " : "") << report.error() << '\n';
    return label ? kExitUsage : kExitRuntime;
  }
  if (report->gpus.empty()) {
    auto extent = find_reading_extent(*source, o.from_ms, o.to_ms, horizon_end, q.filter);
    if (!extent) {
      inv.err << "gpuscope: " << extent.error() << '\n';
    } else {
      inv.err << "gpuscope: " << no_readings_text(o, *extent) << '\n';
    }
    return kExitRuntime;
  }

  analysis::CostPresentation p;
  p.budget_usd_per_month = o.budget_usd_per_month;
  if (q.catalog) {
    analysis::RightSizingOptions rs;
    rs.tier = q.tier;
    for (const auto& g : report->gpus) p.right_sizing.push_back(analysis::right_size_cost_entry(g, *q.catalog, rs));
  } else {
    p.notes.push_back("no price catalog found (--price-catalog): no right-sizing");
  }
  switch (o.format) {
    case CostOptions::Format::kText: inv.out << analysis::cost_text(*report, p); break;
    case CostOptions::Format::kJson: inv.out << analysis::cost_json(*report, p).dump() << '\n'; break;
    case CostOptions::Format::kCsv: inv.out << analysis::cost_csv(*report); break;
  }
  inv.out.flush();
  if (!inv.out) return kExitRuntime;
  if (o.budget_usd_per_month && !report->monthly_projection_usd) {
    inv.err << "gpuscope: --budget: no GPU has a price in tier " << o.prices.tier << ", so the budget cannot be checked\n";
    return kExitRuntime;
  }
  if (analysis::over_budget(*report, p)) {
    inv.err << fmt::format("gpuscope: over budget: projected {}/month > {}/month\n",
                           analysis::dollars_text(*report->monthly_projection_usd),
                           analysis::dollars_text(*o.budget_usd_per_month));
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace gpuscope::cli
