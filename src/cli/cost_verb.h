// `gpuscope cost`: what the GPUs cost over a span of recorded history and how the money was spent
// (working, idle, busy but not working), their energy, per GPU, process, HPC job or label, a monthly
// projection with an optional budget check (exit 1 over budget: cron-able), the top wasters and, per
// GPU, the cheaper GPU of the catalog that would carry the same work. From a running agent or any
// Prometheus (--url), a data directory (--data-dir) or a simulator scenario run on a virtual clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/cost_report.h"
#include "cli/invocation.h"
#include "cli/price_flags.h"

namespace gpuscope::cli {

struct CostOptions {
  enum class Source { kUrl, kDataDir, kSimulate };
  Source source = Source::kDataDir;
  std::string url;
  std::string data_dir;
  std::string scenario;
  std::int64_t duration_ms = 6LL * 3600 * 1000;  // --simulate: how much scenario time to run
  std::int64_t interval_ms = 15'000;             // --simulate: virtual time between readings
  std::int64_t from_ms = 0;                      // the span (from, to]; with --simulate set after the run
  std::int64_t to_ms = 0;
  analysis::CostGrouping by = analysis::CostGrouping::kGpu;
  std::string label;
  PriceFlags prices;          // --tier, --price-catalog, --price-override
  bool explicit_prices = false;  // a catalog file or override was named: it wins over recorded prices
  enum class Format { kText, kJson, kCsv };
  Format format = Format::kText;
  std::optional<double> budget_usd_per_month;
  std::vector<std::string> gpus;  // -i
  std::chrono::milliseconds timeout{0};
};

// "10000/month", "$2,500/week", "300/day", "120000/year" or a bare amount (per month), in USD per month;
// the reason otherwise.
std::expected<double, std::string> parse_budget(std::string_view text);

// `now_ms` is what "now" means in --start/--end and where --since ends.
std::expected<CostOptions, ParseExit> parse_cost_args(std::span<const std::string> args, const GlobalOptions& global,
                                                      std::int64_t now_ms);
int run_cost(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
