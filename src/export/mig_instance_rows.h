// What the nvidia-smi style views show of a GPU in MIG mode: one row per GPU instance under its GPU,
// named "<gpu index>/<GPU instance id>" (dcgmi's spelling of a GPU-I entity, `dcgmi dmon -i 0/1`), with
// the values a MIG instance has of its own (model::is_mig_instance_field) and nothing else.
#pragma once

#include <string>
#include <vector>

#include "model/snapshot.h"

namespace gpuscope::exporter {

// "0/1": GPU 0, GPU instance 1.
std::string mig_instance_id(unsigned gpu_index, unsigned gpu_instance_id);

// The first MIG device of each GPU instance of `gpu`, in index order; empty outside MIG mode. A GPU
// instance split into several compute instances has several MIG devices, but its memory and GPM ratios
// are the GPU instance's (NVML reads them per GPU instance): one row says it once.
std::vector<const model::MigInstanceSample*> gpu_instances_of(const model::GpuSample& gpu);

// A GpuSample holding only the instance's own fields (the rest unsupported) and the parent's up state,
// so a view that reads a GpuSample prints '-' or N/A for everything an instance does not have.
model::GpuSample mig_instance_as_sample(const model::GpuSample& parent, const model::MigInstanceSample& instance);

}  // namespace gpuscope::exporter
