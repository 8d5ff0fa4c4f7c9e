#include "export/cost_metrics.h"

#include <algorithm>

#include "export/mig_metrics.h"

namespace gpuscope::exporter {
namespace {

using model::MetricType;

// One GPU as the writer needs it: its counters and its labels.
struct CostRow {
  const GpuCostCounters* counters;
  std::string labels;
  // MIG: each GPU instance's labels (GPU_I_*, its pod), in counters->mig_instances' order.
  std::vector<std::string> instance_labels;
};

// A GPU family; for the dollar families (`instance_member` set) each MIG instance's series follow its GPU's.
void write_gpu_family(ExpositionWriter& w, const std::vector<CostRow>& rows, std::string_view name,
                      std::string_view help, std::string_view extra, std::optional<double> GpuCostCounters::*member,
                      double MigInstanceCostCounters::*instance_member = nullptr) {
  const bool any = std::ranges::any_of(rows, [&](const CostRow& r) { return (r.counters->*member).has_value(); });
  if (!any) return;
  w.family(name, MetricType::kCounter, help);
  for (const auto& r : rows) {
    const auto& v = r.counters->*member;
    if (!v) continue;
    w.sample(name, r.labels, *v, extra);
    if (instance_member == nullptr) continue;
    for (std::size_t i = 0; i < r.counters->mig_instances.size(); ++i) {
      w.sample(name, r.instance_labels[i], r.counters->mig_instances[i].*instance_member, extra);
    }
  }
}

}  // namespace

void write_cost_metrics(ExpositionWriter& w, const CostCounters& counters, std::span<const model::GpuInfo> gpus,
                        const model::SystemInfo& system, const MetricSet& set, const GpuMetricsOptions& options) {
  struct TimestampScope {
    ExpositionWriter& w;
    ~TimestampScope() { w.set_timestamp(std::nullopt); }
  } timestamp_scope{w};
  if (options.timestamps) w.set_timestamp(counters.t_ms);

  std::vector<CostRow> rows;
  rows.reserve(counters.gpus.size());
  for (const auto& info : gpus) {
    const auto it = std::ranges::find(counters.gpus, info.index, &GpuCostCounters::gpu_index);
    if (it == counters.gpus.end()) continue;
    CostRow row{&*it, gpu_labels(info, system, set, options).text(), {}};
    for (const auto& mi : it->mig_instances) {
      model::MigInstanceSample instance;
      instance.gpu_instance_id = mi.gpu_instance_id;
      instance.profile = mi.profile;
      row.instance_labels.push_back(gpu_labels(info, system, set, options, &instance).text() + pod_label_text(mi.pod));
    }
    rows.push_back(std::move(row));
  }
  const std::string tier = LabelSet().add("tier", options.price_tier).text();

  write_gpu_family(w, rows, kCostDollarsTotal,
                   "USD paid for the GPU's time held, at its hourly price in the tier of the tier label, counted "
                   "across the agent's restarts (from its history). MIG: per GPU instance (GPU_I_ID) its slices' "
                   "share; the GPU's series without GPU_I_ID holds its unallocated slices.",
                   tier, &GpuCostCounters::dollars, &MigInstanceCostCounters::dollars);
  write_gpu_family(w, rows, kCostIdleDollarsTotal,
                   "USD paid for the GPU's time while no kernels and no copies ran on it (part of "
                   "gpuscope_cost_dollars_total; MIG: an instance's GR engine idle, all unallocated slices).",
                   tier, &GpuCostCounters::idle_dollars, &MigInstanceCostCounters::idle_dollars);
  write_gpu_family(w, rows, kCostUnusedDollarsTotal,
                   "USD paid for the GPU's time while its SMs were idle: idle, down, and busy times the share of "
                   "SMs not active (part of gpuscope_cost_dollars_total).",
                   tier, &GpuCostCounters::unused_dollars, &MigInstanceCostCounters::unused_dollars);
  write_gpu_family(w, rows, kEnergyJoulesTotal,
                   "Energy the GPU drew (in J), from its energy counter (a driver reload handled) or its power "
                   "draw, counted across the agent's restarts.",
                   {}, &GpuCostCounters::energy_joules);
  write_gpu_family(w, rows, kEnergyCostDollarsTotal,
                   "USD the GPU's energy cost at the price catalog's energy_usd_per_kwh.", {},
                   &GpuCostCounters::energy_dollars);

  // Per process, the largest memory holders first, as the gpuscope_process_* gauges keep them.
  struct ProcessRow {
    std::string labels;
    double dollars;
  };
  std::vector<ProcessRow> kept;
  for (const auto& r : rows) {
    std::vector<const ProcessCostCounter*> ps;
    for (const auto& p : r.counters->processes) ps.push_back(&p);
    std::ranges::stable_sort(ps, [](const auto* a, const auto* b) {
      return a->memory_bytes.value_or(0) > b->memory_bytes.value_or(0);
    });
    const std::size_t keep = std::min(ps.size(), options.max_processes_per_gpu);
    for (std::size_t i = 0; i < keep; ++i) {
      LabelSet extra;
      extra.add("tier", options.price_tier)
          .add("pid", std::to_string(ps[i]->pid))
          .add("process_name", ps[i]->process_name)
          .add("container_id", ps[i]->container_id);
      // A process in a MIG instance has that instance's labels, as its gpuscope_process_* gauges.
      std::string labels = r.labels;
      if (ps[i]->gpu_instance_id) {
        const auto& instances = r.counters->mig_instances;
        const auto in = std::ranges::find(instances, *ps[i]->gpu_instance_id, &MigInstanceCostCounters::gpu_instance_id);
        if (in != instances.end()) labels = r.instance_labels[static_cast<std::size_t>(in - instances.begin())];
      }
      kept.push_back({labels + "," + extra.text(), ps[i]->dollars});
    }
  }
  if (!kept.empty()) {
    w.family(kProcessCostDollarsTotal, MetricType::kCounter,
             "USD of the GPU's time (gpuscope_cost_dollars_total) charged to the process: split by SM utilization, "
             "else by memory held, else evenly among the GPU's processes.");
    for (const auto& k : kept) w.sample(kProcessCostDollarsTotal, k.labels, k.dollars);
  }
}

}  // namespace gpuscope::exporter
