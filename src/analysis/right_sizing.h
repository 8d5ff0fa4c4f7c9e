// Right-sizing: the cheapest GPU of the price catalog that would carry a measured GPU's work, from its
// peaks (memory, SM / tensor / DRAM activity, PCIe traffic) scaled by the catalog's datasheet specs.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/price_catalog.h"

namespace gpuscope::analysis {

// What one GPU did over a window of readings; an absent value was not recorded.
struct UsagePeaks {
  std::string model;                         // NVML name of the GPU measured (modelName)
  double observed_seconds = 0;               // time covered by readings
  std::optional<double> memory_total_mib;    // the measured GPU's memory (used+free+reserved), if recorded
  std::optional<double> peak_memory_mib;     // max over the window of used + reserved
  std::optional<double> peak_sm_active;      // 0-1, high percentile of readings
  std::optional<double> peak_tensor_active;  // 0-1
  std::optional<double> peak_dram_active;    // 0-1
  // Bytes/s over the host link, the busier direction (PCIe is full duplex; tx + rx errs toward a bigger link).
  std::optional<double> peak_pcie_bytes_per_second;
  std::optional<double> peak_utilization_percent;  // used in place of SM active when that is absent (said so)
  std::optional<double> current_usd_per_hour;      // what the measured GPU is billed at (else: catalog)
};

struct RightSizingOptions {
  model::PriceTier tier = model::PriceTier::kOnDemand;
  // Peak memory is a sample's maximum: allocator growth, a longer sequence or a bigger batch between
  // readings needs room the window never showed.
  double memory_margin = 0.10;  // the candidate must hold peak memory × (1 + margin)
  // A GPU run above ~80 % on any engine queues work: the job would slow down, not just run "fuller".
  double target_load = 0.80;  // a candidate may be loaded at most this much on any dimension
  // Under an hour misses the slow phases (evaluation, checkpointing, a longer epoch tail) that set peaks.
  double min_observed_seconds = 3600;  // less: too short to judge
  double hours_per_month = 730;        // 365 × 24 / 12
};

enum class RightSizingOutcome { kCheaper, kKeep, kSaturated, kTooShort, kNotInCatalog, kNoMemoryPeak };

// One catalog entry weighed as the workload's new home.
struct CandidateCheck {
  std::string name;                    // the catalog entry's name
  std::optional<double> usd_per_hour;  // in the options' tier
  bool fits = false;
  double headroom = 0;  // smallest capacity/need ratio over the dimensions checked
  // "fits: 24 GiB holds peak 9.1 GiB + 10%, loads SM 27%; headroom 2.6x" or
  // "does not fit: memory 24 GiB < 24.2 GiB needed (peak 22.0 GiB + 10%); SM would be 99% (over 80%)"
  std::string why;
};

struct RightSizing {
  RightSizingOutcome outcome = RightSizingOutcome::kNotInCatalog;
  std::string current;  // catalog entry name of the measured GPU ("" if not in catalog)
  std::optional<double> current_usd_per_hour;
  std::string candidate;  // kCheaper: the recommended entry's name
  std::optional<double> candidate_usd_per_hour;
  double candidate_memory_gib = 0;
  double headroom = 0;  // the smallest capacity/need ratio over the dimensions
  double monthly_savings_usd = 0;
  std::string reasoning;                   // one line for people
  std::vector<CandidateCheck> considered;  // every priced candidate with specs, cheapest first, and why it fits or not
};

// "cheaper", "keep", "saturated", "too_short", "not_in_catalog", "no_memory_peak".
std::string_view right_sizing_outcome_id(RightSizingOutcome outcome);

// Scales the measured work to every priced catalog entry with specs and picks the cheapest that holds
// the memory peak plus the margin and stays at or under the target load on SM, tensor, DRAM and PCIe.
RightSizing right_size(const UsagePeaks& peaks, const model::PriceCatalog& catalog, const RightSizingOptions& options);

// Units in the key names (usd_per_hour, memory_gib, monthly_savings_usd, headroom_ratio); null where absent.
nlohmann::json right_sizing_json(const RightSizing& sizing);

// A PCIe link's payload capacity in one direction, bytes/s, after line coding; 0 for an unknown generation.
double pcie_bytes_per_second(int gen, int width);

}  // namespace gpuscope::analysis
