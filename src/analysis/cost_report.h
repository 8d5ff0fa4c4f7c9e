// The cost report behind `gpuscope cost`: what each GPU cost over a span of recorded history, how the
// money was spent (working, idle, busy but not working, down), its energy, per GPU, process, HPC job
// or any label, the monthly projection and the top wasters, and per GPU the measured peaks that
// right-sizing weighs. It reads a ReadingSource a day at a time, so 30 days of a node's history never
// sit in memory at once.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/cost_interval.h"
#include "analysis/reading_source.h"
#include "analysis/right_sizing.h"
#include "model/price_catalog.h"

namespace gpuscope::analysis {

// How the report's rows are grouped.
enum class CostGrouping { kGpu, kProcess, kLabel };

struct CostQuery {
  std::int64_t from_ms = 0;  // the span (from_ms, to_ms]
  std::int64_t to_ms = 0;
  CostGrouping by = CostGrouping::kGpu;
  std::string label;  // kLabel: the label whose values are the rows (hpc_job, Hostname, ...)
  GpuFilter filter;   // -i: only these GPUs
  model::PriceTier tier = model::PriceTier::kOnDemand;
  // Prices: the recorded gpuscope_gpu_hourly_price_dollars of `tier` where the history has it, else the
  // catalog by model name; with `catalog_first` the catalog (an explicit --price-catalog or override)
  // wins over what was recorded. No catalog: recorded prices only.
  const model::PriceCatalog* catalog = nullptr;
  bool catalog_first = false;
  CostRules rules;  // energy_usd_per_kwh from the catalog when the caller has one
  // How much history is read at once (bounds memory: a day of 8 GPUs at 1 s is ~15 M samples less).
  std::int64_t read_span_ms = 6LL * 3600 * 1000;
  // The projection's rate is the cost of the last this-much of the span (a day: a daily cycle).
  std::int64_t projection_span_ms = 24LL * 3600 * 1000;
};

// Where a GPU's price came from.
enum class PriceSource { kRecorded, kCatalog, kNone };

struct GpuCost {
  std::string key;  // gpu_key()
  std::string gpu, uuid, host, model;
  CostTotals totals;
  PriceSource price_source = PriceSource::kNone;
  std::optional<double> usd_per_hour;  // the last price applied
  std::int64_t first_ms = 0, last_ms = 0;  // readings seen
  double recent_dollars = 0;  // over the projection span
  UsagePeaks peaks;
  // MIG. A GPU instance's entry (key host/UUID/mig<GPU_I_ID>): its slices' share of its GPU's time, weighed
  // by its own activity; its peaks are the instance's. The unallocated slices' entry (key
  // host/UUID/unallocated): what no instance held, idle. A GPU's own entry then has only its time outside
  // MIG mode (`mig_split`: some of its time was split among instances).
  std::string mig_instance;  // GPU_I_ID
  std::string mig_profile;   // GPU_I_PROFILE
  bool mig_unallocated = false;
  bool mig_split = false;
  unsigned mig_slices_min = 0, mig_slices_max = 0;  // the instance's (or unallocated) slices over the span
  unsigned mig_total_slices = 0;
  double held_seconds = 0;  // wall time held (an instance's totals count GPU-seconds: its share of them)
};

// "GPU 0", "GPU 0 MIG 3g.40gb (GI 2, 3/7)", "GPU 0 unallocated MIG slices 1/7", with the host first when asked.
std::string gpu_cost_name(const GpuCost& g, bool with_host);

struct CostRow {
  std::string name;              // "GPU 0", the process "1234 python (container)", the label value
  std::vector<std::string> gpus; // which GPUs ("host/GPU 0") it used
  CostTotals totals;
};

struct CostReport {
  std::int64_t from_ms = 0, to_ms = 0;
  model::PriceTier tier = model::PriceTier::kOnDemand;
  CostGrouping by = CostGrouping::kGpu;
  std::string label;
  std::vector<GpuCost> gpus;  // by host, then index
  std::vector<CostRow> rows;  // the grouping's rows, most expensive first
  CostTotals total;
  // USD per month (730 h) at the rate of the span's last projection_span_ms; none without prices.
  std::optional<double> monthly_projection_usd;
  std::int64_t projection_span_ms = 0;
  std::vector<std::string> notes;  // committed tiers, unpriced GPUs, utilization-based working shares
};

// One-line errors: a source that fails, an unknown label (naming the labels the GPU series carry).
std::expected<CostReport, std::string> cost_report(const ReadingSource& source, const CostQuery& query);

// "$1,234.56" and "7 days" / "1.5h" / "20m": the report's text forms.
std::string dollars_text(double usd);
std::string span_text(std::int64_t ms);

// The GPUs that wasted the most (unused dollars), at most `limit`, each a line
// ("GPU 3 (host): idle 71% of 7d, $612.40 wasted").
std::vector<std::string> top_wasters(const CostReport& report, std::size_t limit = 5);

}  // namespace gpuscope::analysis
