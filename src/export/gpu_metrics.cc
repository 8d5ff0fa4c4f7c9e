#include "export/gpu_metrics.h"

#include <algorithm>
#include <array>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "export/mig_metrics.h"

namespace gpuscope::exporter {
namespace {

using model::FieldId;
using model::MetricType;

constexpr std::array<ThrottleReason, 9> kThrottleReasons{{
    {0x1, "gpu_idle"},
    {0x2, "applications_clocks_setting"},
    {0x4, "sw_power_cap"},
    {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},
    {0x20, "sw_thermal_slowdown"},
    {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},
    {0x100, "display_clock_setting"},
}};

// One GPU as the writer needs it: its sample (null when the snapshot lacks it), its labels, and its MIG
// instances' rows when its instance fields go per instance.
struct GpuRow {
  const model::GpuSample* sample;
  std::string labels;
  unsigned index;
  std::vector<MigRow> mig;
  bool mig_capable = false;  // GpuInfo::mig_enabled known: gpuscope_mig_mode_enabled
};

// A per-GPU gauge taken straight from one catalog field, written only where the field is valid.
void write_field_family(ExpositionWriter& w, const std::vector<GpuRow>& rows, std::string_view name,
                        std::string_view help, FieldId id) {
  bool any = std::ranges::any_of(rows, [&](const GpuRow& r) { return (*r.sample)[id].valid(); });
  if (!any) return;
  w.family(name, MetricType::kGauge, help);
  for (const auto& r : rows) {
    if ((*r.sample)[id].valid()) w.sample(name, r.labels, (*r.sample)[id].value);
  }
}

void write_processes(ExpositionWriter& w, const std::vector<GpuRow>& rows, const GpuMetricsOptions& options) {
  struct ProcessRow {
    std::string labels;
    const model::ProcessSample* p;
  };
  std::vector<ProcessRow> kept;
  std::vector<std::pair<const GpuRow*, std::size_t>> dropped;
  for (const auto& r : rows) {
    if (r.sample->processes_error_code) continue;
    std::vector<const model::ProcessSample*> ps;
    std::set<unsigned> pids;
    for (const auto& p : r.sample->processes) {
      if (pids.insert(p.pid).second) ps.push_back(&p);  // one series per pid, even if listed twice
    }
    std::ranges::stable_sort(ps, [](const auto* a, const auto* b) {
      return a->used_memory_bytes.value_or(0) > b->used_memory_bytes.value_or(0);
    });
    const std::size_t keep = std::min(ps.size(), options.max_processes_per_gpu);
    for (std::size_t i = 0; i < keep; ++i) {
      LabelSet extra;
      extra.add("pid", std::to_string(ps[i]->pid))
          .add("process_name", ps[i]->identity.name)
          .add("container_id", ps[i]->identity.container_id);
      // In a Kubernetes pod: its UID from the process's cgroup, its own whatever the GPU's pod labels say (a
      // GPU several pods share names one of them); kube-state-metrics' kube_pod_info{uid} gives its name.
      if (!ps[i]->identity.pod_uid.empty()) extra.add("pod_uid", ps[i]->identity.pod_uid);
      // A process in a MIG instance has the instance's labels (GPU_I_PROFILE, GPU_I_ID, its container's,
      // none where the instance is time-sliced among several containers).
      const std::string* labels = &r.labels;
      if (const auto* instance = mig_instance_of(*r.sample, *ps[i])) {
        const auto m = std::ranges::find(r.mig, instance, &MigRow::instance);
        if (m != r.mig.end()) labels = &m->process_labels;
      }
      kept.push_back({*labels + "," + extra.text(), ps[i]});
    }
    dropped.emplace_back(&r, ps.size() - keep);
  }
  auto family = [&](std::string_view name, std::string_view help, auto value_of) {
    bool any = std::ranges::any_of(kept, [&](const ProcessRow& k) { return value_of(*k.p).has_value(); });
    if (!any) return;
    w.family(name, MetricType::kGauge, help);
    for (const auto& k : kept) {
      if (auto v = value_of(*k.p)) w.sample(name, k.labels, *v);
    }
  };
  family("gpuscope_process_memory_bytes", "GPU memory used by the process (in bytes).",
         [](const model::ProcessSample& p) -> std::optional<double> {
           if (!p.used_memory_bytes) return std::nullopt;
           return static_cast<double>(*p.used_memory_bytes);
         });
  family("gpuscope_process_sm_utilization_ratio", "Share of the GPU's SM time the process used (0 to 1).",
         [](const model::ProcessSample& p) -> std::optional<double> {
           if (!p.sm_util_percent) return std::nullopt;
           return *p.sm_util_percent / 100.0;
         });
  family("gpuscope_process_memory_utilization_ratio",
         "Share of the GPU's memory-interface time the process used (0 to 1).",
         [](const model::ProcessSample& p) -> std::optional<double> {
           if (!p.mem_util_percent) return std::nullopt;
           return *p.mem_util_percent / 100.0;
         });
  if (!dropped.empty()) {
    w.family("gpuscope_process_series_dropped", MetricType::kGauge,
             "Processes on the GPU left out of the per-process series by --max-processes.");
    for (const auto& [row, n] : dropped) w.sample("gpuscope_process_series_dropped", row->labels, static_cast<double>(n));
  }
}

}  // namespace

std::span<const ThrottleReason> throttle_reasons() { return kThrottleReasons; }

LabelSet gpu_labels(const model::GpuInfo& info, const model::SystemInfo& system, const MetricSet& set,
                    const GpuMetricsOptions& options, const model::MigInstanceSample* instance) {
  LabelSet labels;
  labels.add("gpu", std::to_string(info.index))
      .add("UUID", info.uuid)
      .add("pci_bus_id", info.pci_bus_id)
      .add("device", info.device_name())
      .add("modelName", info.name);
  if (instance != nullptr) {
    labels.add("GPU_I_PROFILE", instance->profile).add("GPU_I_ID", std::to_string(instance->gpu_instance_id));
  }
  if (options.hostname_label == HostnameLabel::kHostname) labels.add("Hostname", system.hostname);
  if (options.hostname_label == HostnameLabel::kLowercase) labels.add("hostname", system.hostname);
  if (set.driver_version_label) labels.add("DCGM_FI_DRIVER_VERSION", system.driver_version);
  return labels;
}

void write_gpu_metrics(ExpositionWriter& w, const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                       const model::SystemInfo& system, const MetricSet& set, const GpuMetricsOptions& options) {
  struct TimestampScope {
    ExpositionWriter& w;
    ~TimestampScope() { w.set_timestamp(std::nullopt); }
  } timestamp_scope{w};
  if (options.timestamps) {
    w.set_timestamp(std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.time.time_since_epoch()).count());
  }
  std::vector<GpuRow> all;  // every GPU found at start, up or down
  std::vector<GpuRow> up;
  std::vector<GpuRow> process_rows;  // `up`, with the pod labels only where they are the processes' own
  for (const auto& info : gpus) {
    const auto it = std::ranges::find(snapshot.gpus, info.index, &model::GpuSample::index);
    const model::GpuSample* sample = it == snapshot.gpus.end() ? nullptr : &*it;
    const std::string labels = gpu_labels(info, system, set, options).text();
    // serve --kubernetes, as dcgm-exporter: the container holding the GPU, and no such labels while none does.
    const std::string pod_labels = sample != nullptr ? pod_label_text(sample->kubernetes_pod) : std::string();
    // A process is in the GPU's container when that is the GPU's only one; on a GPU several containers share,
    // the GPU's labels name one of them, which may not be the process's.
    const bool shared = sample != nullptr && sample->kubernetes_gpu_shared;
    const std::string process_pod_labels = shared ? std::string() : pod_labels;
    // As dcgm-exporter: a GPU shared by several HPC jobs has each of its series once per job.
    std::vector<std::string> per_job;
    if (sample != nullptr) {
      for (const auto& job : sample->hpc_jobs) per_job.push_back("," + LabelSet().add("hpc_job", job).text());
    }
    if (per_job.empty()) per_job.emplace_back();
    for (const auto& job : per_job) {
      GpuRow row{sample, labels + pod_labels + job, info.index, {}, info.mig_enabled.has_value()};
      if (sample != nullptr && sample->up) {
        row.mig = mig_rows(info, *sample, system, set, options, job);
        up.push_back(row);
        process_rows.push_back({sample, labels + process_pod_labels + job, info.index, row.mig, row.mig_capable});
      }
      all.push_back(std::move(row));
    }
  }

  // A MIG instance field of a GPU with MIG instances is written per instance, in the GPU's place; not for the
  // GPU, so that sum() over a node counts each MiB and each SM once (dcgm-exporter's scope).
  const auto for_each_value = [&](FieldId id, auto&& visit) {
    const bool per_instance = model::is_mig_instance_field(id);
    for (const auto& r : up) {
      if (per_instance && !r.mig.empty()) {
        for (const auto& m : r.mig) {
          if (m.first_of_gpu_instance) visit(m.labels, (*m.instance)[id]);
        }
      } else {
        visit(r.labels, (*r.sample)[id]);
      }
    }
  };
  for (const auto& f : set.fields) {
    const auto& def = model::FieldCatalog::get(f.id);
    bool any = false;
    for_each_value(f.id, [&](const std::string&, const model::FieldValue& v) { any = any || v.valid(); });
    if (!any) continue;
    const std::string_view name = f.name.empty() ? def.dcgm_name : std::string_view(f.name);
    w.family(name, f.type, f.help);
    for_each_value(f.id, [&](const std::string& labels, const model::FieldValue& v) {
      if (v.valid()) w.sample(name, labels, v.value / def.dcgm_divisor);
    });
  }

  w.family("gpuscope_gpu_up", MetricType::kGauge,
           "Whether the GPU answered NVML at the last reading (1) or is lost or unreachable (0).");
  for (const auto& r : all) {
    w.sample("gpuscope_gpu_up", r.labels, r.sample != nullptr && r.sample->up ? 1 : 0);
  }

  // XIDs: a total from 0 (so increase() sees the first one) and one series per XID code seen.
  const bool any_xid_watch = std::ranges::any_of(up, [](const GpuRow& r) { return (*r.sample)[FieldId::kXidErrors].valid(); });
  if (any_xid_watch) {
    w.family("gpuscope_xid_events_total", MetricType::kCounter,
             "XID errors reported by the driver since the agent started, all codes; equal XIDs in a row all count.");
    for (const auto& r : up) {
      if ((*r.sample)[FieldId::kXidErrors].valid()) {
        w.sample("gpuscope_xid_events_total", r.labels, static_cast<double>(r.sample->events.xid_total));
      }
    }
    const bool any_code = std::ranges::any_of(up, [](const GpuRow& r) { return !r.sample->events.xid_by_code.empty(); });
    if (any_code) {
      w.family("gpuscope_xid_errors_total", MetricType::kCounter,
               "XID errors reported by the driver since the agent started, by XID code.");
      for (const auto& r : up) {
        for (const auto& [code, count] : r.sample->events.xid_by_code) {
          LabelSet xid;
          xid.add("xid", std::to_string(code));
          w.sample("gpuscope_xid_errors_total", r.labels, static_cast<double>(count), xid.text());
        }
      }
    }
  }

  const bool any_reasons =
      std::ranges::any_of(up, [](const GpuRow& r) { return (*r.sample)[FieldId::kClocksEventReasons].valid(); });
  if (any_reasons) {
    w.family("gpuscope_throttle_reason_active", MetricType::kGauge,
             "Whether this reason holds the GPU's clocks below their maximum (1) or not (0); NVML's clocks event "
             "reasons.");
    for (const auto& r : up) {
      const auto& v = (*r.sample)[FieldId::kClocksEventReasons];
      if (!v.valid()) continue;
      const auto bits = static_cast<unsigned long long>(v.value);
      for (const auto& reason : kThrottleReasons) {
        LabelSet extra;
        extra.add("reason", reason.name);
        w.sample("gpuscope_throttle_reason_active", r.labels, (bits & reason.bit) != 0 ? 1 : 0, extra.text());
      }
    }
  }

  write_field_family(w, up, "gpuscope_pcie_link_gen", "Current PCIe link generation.", FieldId::kPcieLinkGenCurrent);
  write_field_family(w, up, "gpuscope_pcie_link_gen_max", "Maximum PCIe link generation of the GPU and its slot.",
                     FieldId::kPcieLinkGenMax);
  write_field_family(w, up, "gpuscope_pcie_link_width", "Current PCIe link width (lanes).",
                     FieldId::kPcieLinkWidthCurrent);
  write_field_family(w, up, "gpuscope_pcie_link_width_max", "Maximum PCIe link width (lanes).",
                     FieldId::kPcieLinkWidthMax);

  std::vector<MigModeRow> mig_modes;
  std::vector<MigRow> mig_instances;
  for (const auto& r : up) {
    if (r.mig_capable) mig_modes.push_back({r.sample, r.labels});
    mig_instances.insert(mig_instances.end(), r.mig.begin(), r.mig.end());
  }
  write_mig_families(w, mig_modes, mig_instances);

  // A GPU costs the same whether or not it answers NVML, so the price follows every GPU found at start,
  // with the same labels as its other series (PromQL joins on UUID or on all GPU labels both work).
  const bool any_price = std::ranges::any_of(gpus, [&](const model::GpuInfo& g) {
    return options.hourly_price_dollars.contains(g.index);
  });
  if (any_price) {
    w.family("gpuscope_gpu_hourly_price_dollars", MetricType::kGauge,
             "Price of the GPU in USD per GPU-hour from the price catalog, in the pricing tier of the tier label.");
    LabelSet tier;
    tier.add("tier", options.price_tier);
    for (const auto& r : all) {
      const auto price = options.hourly_price_dollars.find(r.index);
      if (price != options.hourly_price_dollars.end()) {
        w.sample("gpuscope_gpu_hourly_price_dollars", r.labels, price->second, tier.text());
      }
    }
  }

  write_processes(w, process_rows, options);
}

}  // namespace gpuscope::exporter
