// `gpuscope list`: nvidia-smi -L's one line per GPU ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)") and,
// under a GPU in MIG mode, one line per MIG device ("  MIG 3g.40gb     Device  0: (UUID: MIG-...)"), or
// the same facts as JSON.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

// `mig_devices[k]` holds the MIG devices of gpus[k] (a reading's GpuSample::mig_instances); a GPU past
// its end, or with none, has no MIG lines.
using MigDevicesByGpu = std::span<const std::vector<model::MigInstanceSample>>;

std::string gpu_list_text(std::span<const model::GpuInfo> gpus, MigDevicesByGpu mig_devices = {});

// {"gpus":[{"index":0,"name":"...","uuid":"GPU-...","pci_bus_id":"00000000:18:00.0"}]}; facts the driver
// did not report are absent. A GPU with MIG devices gets "mig_devices":[{"index":0,"profile":"3g.40gb",
// "uuid":"MIG-...","gpu_instance_id":1,"compute_instance_id":0}].
nlohmann::ordered_json gpu_list_json(std::span<const model::GpuInfo> gpus, MigDevicesByGpu mig_devices = {});

}  // namespace gpuscope::exporter
