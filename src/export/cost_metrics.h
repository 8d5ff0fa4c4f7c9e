// The cost counters of /metrics: what each GPU's held time cost (all of it, idle, unused), the energy it
// drew and its price, and each process's part of the GPU's dollars. Counters a fleet's Prometheus can
// sum and rate(); the agent keeps them across its restarts (from its history), so they only ever grow.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "export/exposition_writer.h"
#include "export/gpu_metrics.h"
#include "export/metric_set.h"
#include "model/gpu_info.h"

namespace gpuscope::exporter {

// The families' names: the agent reads them back from its history to continue them after a restart.
inline constexpr std::string_view kCostDollarsTotal = "gpuscope_cost_dollars_total";
inline constexpr std::string_view kCostIdleDollarsTotal = "gpuscope_cost_idle_dollars_total";
inline constexpr std::string_view kCostUnusedDollarsTotal = "gpuscope_cost_unused_dollars_total";
inline constexpr std::string_view kEnergyJoulesTotal = "gpuscope_energy_joules_total";
inline constexpr std::string_view kEnergyCostDollarsTotal = "gpuscope_energy_cost_dollars_total";
inline constexpr std::string_view kProcessCostDollarsTotal = "gpuscope_process_cost_dollars_total";

struct ProcessCostCounter {
  unsigned pid = 0;
  std::string process_name;
  std::string container_id;
  std::optional<double> memory_bytes;  // the processes holding the most get series, as for the gauges
  double dollars = 0;
  std::optional<unsigned> gpu_instance_id{};  // MIG: a process of this GPU instance (its labels)
};

// One MIG GPU instance's dollar counters: its slices' share of the GPU's time (energy stays the GPU's).
struct MigInstanceCostCounters {
  unsigned gpu_instance_id = 0;
  std::string profile;                          // GPU_I_PROFILE
  std::optional<model::KubernetesPod> pod;      // --kubernetes: who holds it
  double dollars = 0, idle_dollars = 0, unused_dollars = 0;
};

// One GPU's counters. An absent counter has no series (never a 0 that would read as "free" or "cool").
struct GpuCostCounters {
  unsigned gpu_index = 0;
  std::optional<double> dollars;         // absent: the GPU is not priced
  std::optional<double> idle_dollars;
  std::optional<double> unused_dollars;
  std::optional<double> energy_joules;   // absent: neither an energy counter nor a power reading
  std::optional<double> energy_dollars;  // absent: no energy price (or no energy)
  std::vector<ProcessCostCounter> processes;  // the GPU's processes at the last reading (priced GPUs only)
  // MIG mode: the GPU instances of the last reading (priced GPUs only). The GPU's own dollar counters
  // are then what no instance holds (its unallocated slices), so a sum over the node counts each dollar once.
  std::vector<MigInstanceCostCounters> mig_instances;
};

struct CostCounters {
  std::optional<std::int64_t> t_ms;  // the reading they include, for `--metrics-timestamps`
  std::vector<GpuCostCounters> gpus;
};

// Writes the cost families on the GPU labels (without hpc_job: one series per GPU, whatever jobs share
// it), dollars with the `tier` label of options.price_tier; processes bounded by
// options.max_processes_per_gpu. A MIG instance's dollars (and its processes') carry GPU_I_PROFILE,
// GPU_I_ID and the pod labels of its holder, as its DCGM series.
void write_cost_metrics(ExpositionWriter& writer, const CostCounters& counters, std::span<const model::GpuInfo> gpus,
                        const model::SystemInfo& system, const MetricSet& set, const GpuMetricsOptions& options);

}  // namespace gpuscope::exporter
