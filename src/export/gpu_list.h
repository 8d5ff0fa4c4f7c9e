// `gpuscope list`: nvidia-smi -L's one line per GPU ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)"),
// or the same facts as JSON.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "model/gpu_info.h"

namespace gpuscope::exporter {

std::string gpu_list_text(std::span<const model::GpuInfo> gpus);

// {"gpus":[{"index":0,"name":"...","uuid":"GPU-...","pci_bus_id":"00000000:18:00.0"}]}; facts the driver
// did not report are absent.
nlohmann::ordered_json gpu_list_json(std::span<const model::GpuInfo> gpus);

}  // namespace gpuscope::exporter
