// `gpuscope query --query-compute-apps=...`: one row per compute process per GPU, as nvidia-smi prints
// them in CSV, or as JSON with the unit in the key ("used_memory_bytes").
#pragma once

#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/gpu_query.h"
#include "export/gpu_query_csv.h"
#include "export/gpu_view.h"

namespace gpuscope::exporter {

enum class AppColumn : std::uint8_t {
  kTimestamp,
  kPid,
  kProcessName,
  kUsedMemory,
  kGpuUuid,
  kGpuBusId,
  kGpuName,
  kGpuSerial,
};

// Accepts nvidia-smi's names: timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name,
// used_gpu_memory (alias used_memory).
std::expected<std::vector<AppColumn>, UnknownQueryName> parse_compute_apps_query(std::string_view names);

// "pid, process_name, used_gpu_memory [MiB]\n": nvidia-smi's header names.
std::string compute_apps_csv_header(std::span<const AppColumn> columns);

// Compute processes (compute-and-graphics ones included) of every GPU that is up; a process whose name is
// unknown reads "[Not Found]", memory NVML could not report reads "[N/A]". `timestamp` is the reading's
// (context.time), as nvidia-smi prints it.
std::string compute_apps_csv_rows(std::span<const AppColumn> columns, const QueryContext& context,
                                  std::span<const GpuView> gpus, CsvStyle style);

// {"timestamp":"...","timestamp_unix_seconds":...,"processes":[{"pid":4242,"used_memory_bytes":...}]}; the
// timestamp column is the document's (one reading).
// GPUs whose process list could not be read (or that are down) are named under "errors":
// [{"gpu_index":0,"gpu_uuid":"GPU-...","error":"Insufficient Permissions"}].
nlohmann::ordered_json compute_apps_json(std::span<const AppColumn> columns, const QueryContext& context,
                                         std::span<const GpuView> gpus);

}  // namespace gpuscope::exporter
