#include "export/mig_metrics.h"

#include <algorithm>

#include "export/mig_instance_rows.h"

namespace gpuscope::exporter {

bool exports_per_mig_instance(const model::GpuSample& sample) {
  return sample.mig_enabled && !sample.mig_instances.empty();
}

std::string pod_label_text(const std::optional<model::KubernetesPod>& pod) {
  if (!pod) return {};
  LabelSet labels;
  labels.add("pod", pod->pod).add("namespace", pod->namespace_name).add("container", pod->container);
  return "," + labels.text();
}

std::vector<MigRow> mig_rows(const model::GpuInfo& info, const model::GpuSample& sample,
                             const model::SystemInfo& system, const MetricSet& set, const GpuMetricsOptions& options,
                             std::string_view suffix) {
  std::vector<MigRow> rows;
  if (!exports_per_mig_instance(sample)) return rows;
  rows.reserve(sample.mig_instances.size());
  const auto firsts = gpu_instances_of(sample);
  for (const auto& instance : sample.mig_instances) {
    const std::string base = gpu_labels(info, system, set, options, &instance).text();
    std::string labels = base + pod_label_text(instance.kubernetes_pod) + std::string(suffix);
    std::string process_labels = instance.kubernetes_shared ? base + std::string(suffix) : labels;
    const bool first = std::ranges::find(firsts, &instance) != firsts.end();
    rows.push_back({&instance, std::move(labels), first, std::move(process_labels)});
  }
  return rows;
}

const model::MigInstanceSample* mig_instance_of(const model::GpuSample& sample, const model::ProcessSample& process) {
  if (!process.gpu_instance_id) return nullptr;
  const model::MigInstanceSample* first_of_gi = nullptr;
  for (const auto& instance : sample.mig_instances) {
    if (instance.gpu_instance_id != *process.gpu_instance_id) continue;
    if (process.compute_instance_id && instance.compute_instance_id == *process.compute_instance_id) return &instance;
    if (first_of_gi == nullptr) first_of_gi = &instance;
  }
  // A GPU instance split into several compute instances: without the process's compute instance, its GPU
  // instance's first MIG device (GPU_I_PROFILE and GPU_I_ID are the GPU instance's, the same for all).
  return process.compute_instance_id ? nullptr : first_of_gi;
}

void write_mig_families(ExpositionWriter& w, std::span<const MigModeRow> gpus, std::span<const MigRow> instances) {
  if (!gpus.empty()) {
    w.family("gpuscope_mig_mode_enabled", model::MetricType::kGauge,
             "Whether the MIG-capable GPU is in MIG mode at the last reading (1) or not (0); in MIG mode its memory "
             "and profiling series are per MIG instance (GPU_I_ID).");
    for (const auto& g : gpus) w.sample("gpuscope_mig_mode_enabled", g.labels, g.sample->mig_enabled ? 1 : 0);
  }
  if (instances.empty()) return;
  w.family("gpuscope_mig_instance_info", model::MetricType::kGauge,
           "A MIG device of the GPU (1): its GPU instance's profile and ID, its compute instance ID and its own UUID "
           "(what CUDA_VISIBLE_DEVICES and the kubelet name).");
  for (const auto& r : instances) {
    LabelSet extra;
    extra.add("GPU_CI_ID", std::to_string(r.instance->compute_instance_id)).add("mig_uuid", r.instance->uuid);
    w.sample("gpuscope_mig_instance_info", r.labels, 1, extra.text());
  }
  // Per GPU instance, as its memory and profiling series (a compute instance would repeat its labels).
  const auto optional_family = [&](std::string_view name, std::string_view help, auto member) {
    const auto has = [&](const MigRow& r) { return r.first_of_gpu_instance && (r.instance->*member).has_value(); };
    if (std::ranges::none_of(instances, has)) return;
    w.family(name, model::MetricType::kGauge, help);
    for (const auto& r : instances) {
      if (has(r)) w.sample(name, r.labels, static_cast<double>(*(r.instance->*member)));
    }
  };
  optional_family("gpuscope_mig_instance_sms",
                  "Streaming multiprocessors of the MIG device (the first one where its GPU instance has several "
                  "compute instances).",
                  &model::MigInstanceSample::sm_count);
  optional_family("gpuscope_mig_instance_slices",
                  "Compute slices of the GPU (of 7 on A100 and H100) the MIG device's GPU instance holds.",
                  &model::MigInstanceSample::gpu_instance_slices);
}

}  // namespace gpuscope::exporter
