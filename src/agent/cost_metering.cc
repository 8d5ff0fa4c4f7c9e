#include "agent/cost_metering.h"

#include <algorithm>
#include <chrono>

#include "analysis/mig_cost.h"

namespace gpuscope::agent {
namespace {

// A field as the history records it (in DCGM's unit); absent when the GPU (or MIG device) did not give it.
template <typename Sample>
std::optional<double> recorded_value(const Sample& sample, model::FieldId id) {
  const auto& v = sample[id];
  if (!v.valid()) return std::nullopt;
  return v.value / model::FieldCatalog::get(id).dcgm_divisor;
}

}  // namespace

std::vector<analysis::MeteredGpu> metered_gpus(const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                                               const std::map<unsigned, double>& hourly_price_dollars) {
  const auto t_ms = std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.time.time_since_epoch()).count();
  std::vector<analysis::MeteredGpu> out;
  out.reserve(gpus.size());
  for (const auto& info : gpus) {
    analysis::MeteredGpu g;
    g.uuid = info.uuid;
    g.reading.t_ms = t_ms;
    if (const auto price = hourly_price_dollars.find(info.index); price != hourly_price_dollars.end()) {
      g.reading.usd_per_hour = price->second;
    }
    const auto it = std::ranges::find(snapshot.gpus, info.index, &model::GpuSample::index);
    if (it == snapshot.gpus.end() || !it->up) {
      g.reading.up = false;
      out.push_back(std::move(g));
      continue;
    }
    const model::GpuSample& s = *it;
    g.reading.gr_active = recorded_value(s, model::FieldId::kGrEngineActive);
    g.reading.sm_active = recorded_value(s, model::FieldId::kSmActive);
    g.reading.utilization_percent = recorded_value(s, model::FieldId::kGpuUtil);
    g.reading.energy_millijoules = recorded_value(s, model::FieldId::kTotalEnergy);
    g.reading.power_watts = recorded_value(s, model::FieldId::kPowerUsage);
    g.processes_read = !s.processes_error_code.has_value();
    for (const auto& p : s.processes) {
      analysis::MeteredProcess mp;
      mp.key = {p.pid, p.identity.name, p.identity.container_id};
      mp.use.sm_util_percent = p.sm_util_percent;
      if (p.used_memory_bytes) mp.use.memory_bytes = static_cast<double>(*p.used_memory_bytes);
      if (s.mig_enabled) mp.gpu_instance_id = p.gpu_instance_id;
      g.processes.push_back(std::move(mp));
    }
    // MIG mode: one entry per GPU instance, from its first MIG device (its compute instances share its
    // memory, its GPM ratios and its slices), as /metrics writes it.
    if (s.mig_enabled) {
      g.mig_total_slices = analysis::mig_total_slices(info.name);
      for (const auto& mi : s.mig_instances) {
        if (std::ranges::any_of(g.mig_instances, [&](const analysis::MeteredMigInstance& m) {
              return m.key.gpu_instance_id == mi.gpu_instance_id;
            })) {
          continue;
        }
        analysis::MeteredMigInstance m;
        m.key.gpu_instance_id = mi.gpu_instance_id;
        m.key.profile = mi.profile;
        if (mi.kubernetes_pod) {
          m.key.pod = mi.kubernetes_pod->pod;
          m.key.namespace_name = mi.kubernetes_pod->namespace_name;
          m.key.container = mi.kubernetes_pod->container;
        }
        m.slices = mi.gpu_instance_slices.value_or(analysis::mig_profile_slices(mi.profile).value_or(0));
        m.gr_active = recorded_value(mi, model::FieldId::kGrEngineActive);
        m.sm_active = recorded_value(mi, model::FieldId::kSmActive);
        g.mig_instances.push_back(std::move(m));
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

exporter::CostCounters cost_counters(const std::vector<analysis::GpuCostTotals>& totals,
                                     std::span<const model::GpuInfo> gpus, bool energy_priced) {
  exporter::CostCounters out;
  out.gpus.reserve(gpus.size());
  for (const auto& info : gpus) {
    const auto it = std::ranges::find(totals, info.uuid, &analysis::GpuCostTotals::uuid);
    if (it == totals.end()) continue;
    const analysis::GpuCostTotals& g = *it;
    if (g.last_t_ms) out.t_ms = std::max(out.t_ms.value_or(*g.last_t_ms), *g.last_t_ms);
    exporter::GpuCostCounters c;
    c.gpu_index = info.index;
    if (g.priced) {
      c.dollars = g.totals.dollars;
      c.idle_dollars = g.totals.idle_dollars;
      c.unused_dollars = g.totals.unused_dollars;
      for (const auto& p : g.processes) {
        c.processes.push_back(
            {p.key.pid, p.key.name, p.key.container_id, p.memory_bytes, p.totals.dollars, p.gpu_instance_id});
      }
      for (const auto& mi : g.mig_instances) {
        exporter::MigInstanceCostCounters ic;
        ic.gpu_instance_id = mi.key.gpu_instance_id;
        ic.profile = mi.key.profile;
        if (!mi.key.pod.empty()) ic.pod = model::KubernetesPod{mi.key.pod, mi.key.namespace_name, mi.key.container};
        ic.dollars = mi.totals.dollars;
        ic.idle_dollars = mi.totals.idle_dollars;
        ic.unused_dollars = mi.totals.unused_dollars;
        c.mig_instances.push_back(std::move(ic));
      }
    }
    if (g.energy_measured) {
      c.energy_joules = g.totals.energy_joules;
      if (energy_priced || g.totals.energy_dollars > 0) c.energy_dollars = g.totals.energy_dollars;
    }
    out.gpus.push_back(std::move(c));
  }
  return out;
}

}  // namespace gpuscope::agent
