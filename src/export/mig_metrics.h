// The MIG part of /metrics: on a GPU in MIG mode with MIG devices, the fields a MIG device has of its own
// (model::is_mig_instance_field: its memory, GPM's profiling ratios) are written once per instance with
// dcgm-exporter's GPU_I_PROFILE and GPU_I_ID labels and not for the GPU (so sum() over a node stays right);
// plus gpuscope's MIG mode and instance-info series.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "export/exposition_writer.h"
#include "export/gpu_metrics.h"
#include "export/metric_set.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

// One MIG device of one GPU reading as the writer needs it (one per HPC job, as the GPU's rows). A GPU
// instance split into several compute instances has several MIG devices with the same GPU_I_ID, whose
// memory and GPM ratios are the GPU instance's: only its first device's row writes them, so no series is
// written twice.
struct MigRow {
  const model::MigInstanceSample* instance;
  std::string labels;
  bool first_of_gpu_instance = true;
  // The labels of the processes in it: `labels`, less the pod labels where several containers time-slice the
  // MIG device (its pod labels name one of them, which may not be the process's).
  std::string process_labels;
};

// Whether the GPU's instance fields go per MIG instance: MIG mode is on and it has MIG devices. A GPU in
// MIG mode without instances keeps them at GPU level, as dcgm-exporter (which sees no GPU instance there).
bool exports_per_mig_instance(const model::GpuSample& sample);

// The rows of the sample's MIG devices, in index order: the GPU's labels with GPU_I_PROFILE and GPU_I_ID where
// dcgm-exporter puts them (after modelName), the instance's own pod labels, then `suffix` (the hpc_job
// label, or empty). Empty unless exports_per_mig_instance. first_of_gpu_instance is gpu_instances_of's
// choice (mig_instance_rows.h), the row the views show for the GPU instance.
std::vector<MigRow> mig_rows(const model::GpuInfo& info, const model::GpuSample& sample,
                             const model::SystemInfo& system, const MetricSet& set, const GpuMetricsOptions& options,
                             std::string_view suffix);

// ",pod=…,namespace=…,container=…" (dcgm-exporter's labels of the container holding a GPU), or "".
std::string pod_label_text(const std::optional<model::KubernetesPod>& pod);

// The MIG instance a process runs in, by its GPU and compute instance IDs; null outside MIG or when the
// reading has no such instance.
const model::MigInstanceSample* mig_instance_of(const model::GpuSample& sample, const model::ProcessSample& process);

// A MIG-capable GPU's reading (GpuInfo::mig_enabled known) and its labels, for gpuscope_mig_mode_enabled.
struct MigModeRow {
  const model::GpuSample* sample;
  std::string_view labels;
};

// gpuscope_mig_mode_enabled per MIG-capable GPU, and per MIG instance gpuscope_mig_instance_info (1, with the
// compute instance ID and the MIG device's UUID), gpuscope_mig_instance_sms and
// gpuscope_mig_instance_slices where known.
void write_mig_families(ExpositionWriter& w, std::span<const MigModeRow> gpus, std::span<const MigRow> instances);

}  // namespace gpuscope::exporter
