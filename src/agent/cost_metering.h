// How the agent's readings reach its CostMeter and the meter's totals reach /metrics and the history:
// a snapshot's GPUs as the meter weighs them (the values the history records for them, so the live
// counters and `gpuscope cost` over the history agree), and the totals as the exporter writes them.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <vector>

#include "analysis/cost_meter.h"
#include "export/cost_metrics.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::agent {

// Each GPU found at start at this reading, with its price (USD per GPU-hour by GPU index; absent: not
// priced). A GPU missing from the snapshot is down, as its recorded gpuscope_gpu_up 0 says.
std::vector<analysis::MeteredGpu> metered_gpus(const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                                               const std::map<unsigned, double>& hourly_price_dollars);

// The meter's totals as the exporter writes them: dollars for priced GPUs (and their processes), energy
// where it was measured, its cost while an energy price is known (or was, before a restart).
exporter::CostCounters cost_counters(const std::vector<analysis::GpuCostTotals>& totals,
                                     std::span<const model::GpuInfo> gpus, bool energy_priced);

}  // namespace gpuscope::agent
