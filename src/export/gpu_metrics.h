// The GPU part of /metrics: every exported DCGM field with dcgm-exporter's names and labels, and
// gpuscope's own per-GPU series (up, XIDs by code, throttle reasons, PCIe link, price, per-process use).
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <string>

#include "export/exposition_writer.h"
#include "export/metric_set.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

// dcgm-exporter spells the host label `Hostname`; 4.8 and later spell it `hostname`.
enum class HostnameLabel { kHostname, kLowercase, kNone };

struct GpuMetricsOptions {
  HostnameLabel hostname_label = HostnameLabel::kHostname;
  // Per GPU, the processes using the most memory get series; the rest are counted in
  // gpuscope_process_series_dropped, so a fork bomb cannot blow up the scrape.
  std::size_t max_processes_per_gpu = 64;
  // Each GPU sample carries its reading's time (`serve --metrics-timestamps`), so a Prometheus
  // scraping the agent stores the agent's own sample times instead of its scrape times.
  bool timestamps = false;
  // USD per GPU-hour by GPU index, resolved once from the price catalog (`serve --price-catalog`) in
  // `price_tier`, the series' `tier` label. A GPU not here (model not priced) has no
  // gpuscope_gpu_hourly_price_dollars series, never a 0 that would read as "free".
  std::map<unsigned, double> hourly_price_dollars;
  std::string price_tier;
};

// The labels every series of GPU `info` carries: gpu, UUID, pci_bus_id, device, modelName, the host
// label, and DCGM_FI_DRIVER_VERSION when the metric set asks for it. A MIG instance's series add
// GPU_I_PROFILE and GPU_I_ID after modelName, where dcgm-exporter has them.
LabelSet gpu_labels(const model::GpuInfo& info, const model::SystemInfo& system, const MetricSet& set,
                    const GpuMetricsOptions& options, const model::MigInstanceSample* instance = nullptr);

// Writes the families of one snapshot. A GPU that is down has only gpuscope_gpu_up 0 and its hourly
// price (not a reading: a lost GPU is still paid for); a field a GPU does not support has no series
// (never 0). A GPU with HPC jobs has each series once per job, with an
// `hpc_job` label. A GPU a Kubernetes container holds (serve --kubernetes) has `pod`, `namespace` and
// `container` labels, its per-process series too unless several containers share the GPU. A GPU in MIG
// mode has its memory and profiling series per MIG instance (see mig_metrics.h), each with the pod labels of
// the instance's container; a process in a MIG instance has that instance's labels.
void write_gpu_metrics(ExpositionWriter& writer, const model::Snapshot& snapshot,
                       std::span<const model::GpuInfo> gpus, const model::SystemInfo& system, const MetricSet& set,
                       const GpuMetricsOptions& options);

// NVML's clocks-event (throttle) reason bits and their label values ("sw_power_cap", …).
struct ThrottleReason {
  unsigned long long bit;
  std::string_view name;
};
std::span<const ThrottleReason> throttle_reasons();

}  // namespace gpuscope::exporter
