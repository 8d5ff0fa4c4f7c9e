// `gpuscope info`: what does not change while the node runs (driver, NVML, CUDA, the NVML library file
// actually loaded, and each GPU's identity and limits), as aligned text or as JSON.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "model/gpu_info.h"

namespace gpuscope::exporter {

// Facts the driver did not report read "N/A".
// `attached` is every GPU NVML reports; `gpus` those shown (all, or the ones -i picked).
std::string gpu_info_text(const model::SystemInfo& system, std::size_t attached, std::span<const model::GpuInfo> gpus);

// {"system":{"hostname":...,"driver_version":...,"nvml_version":...,"cuda_driver_version":"13.0",
//  "library_path":...,"simulated":false,"gpu_count":8},
//  "gpus":[{"index":0,"name":...,"memory_total_bytes":...,"max_sm_clock_mhz":1980,"power_limit_watts":700,
//  "architecture":"Hopper","compute_capability":"9.0","pcie_max_gen":5,"gpm_supported":true,...}]}.
// Numbers are numbers, units are in the keys; facts the driver did not report are absent.
nlohmann::ordered_json gpu_info_json(const model::SystemInfo& system, std::size_t attached,
                                     std::span<const model::GpuInfo> gpus);

}  // namespace gpuscope::exporter
