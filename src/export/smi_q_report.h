// `gpuscope query -q`: nvidia-smi -q's report (same sections, keys, order, indentation and value
// formats) for every key NVML gives gpuscope, N/A where nvidia-smi prints N/A for an unsupported key and
// where gpuscope has no reading for the key; and the same tree as JSON.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gpu_details.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

struct SmiQGpu {
  const model::GpuInfo& info;
  const model::GpuSample& sample;
  const model::GpuDetails& details;
};

struct SmiQInput {
  const model::SystemInfo& system;
  std::chrono::system_clock::time_point time;  // the reading's time, printed in local time as nvidia-smi does
  std::size_t attached_gpus = 0;               // every GPU found, not only those shown (-i)
  std::vector<SmiQGpu> gpus;
};

// The text of `nvidia-smi -q`: "==============NVSMI LOG==============", the header, then one
// "GPU <bus id>" block per GPU, keys padded so " : " sits in nvidia-smi's column. A key whose read
// failed prints NVML's error text, as nvidia-smi does.
std::string smi_q_text(const SmiQInput& input);

// {"timestamp":"2026-11-25T10:49:46.000Z","timestamp_unix_seconds":...,"driver_version":"580.159.04",
//  "cuda_version":"13.0","attached_gpus":1,"gpus":[{"id":"00000000:00:06.0","product_name":...,
//  "fb_memory_usage":{"total_mib":81559,...},"gpu_power_readings":{"average_power_draw_watts":84.93,...},
//  ...,"errors":{"temperature.gpu_temp":"Unknown Error"}}]}
// Keys are nvidia-smi -q -x's element names (snake_case), with the unit in the key for quantities
// (machine_value.h's rule); Yes/No, Active/Not Active become booleans; modes and ids stay the strings
// nvidia-smi prints. A key gpuscope cannot answer is absent (a section with none left is absent too);
// a failed read is absent and named, by its dotted path, under the GPU's "errors".
nlohmann::ordered_json smi_q_json(const SmiQInput& input);

}  // namespace gpuscope::exporter
