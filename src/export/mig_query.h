// `gpuscope query --query-mig=...`: one row per MIG device of every selected GPU in MIG mode, in
// --query-gpu's CSV (", " separators, units in the header and after values, [N/A]) or numeric JSON.
// gpuscope's own query (nvidia-smi has none for MIG devices); the names follow --query-gpu's spelling.
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

enum class MigSource : std::uint8_t;
struct MigColumn;  // one name: its header, and how its value is read (mig_query.cc)

// Resolves "gpu_index,mig.index,profile,memory.used" once; unknown or empty names as --query-gpu's.
std::expected<std::vector<const MigColumn*>, UnknownQueryName> parse_mig_query(std::string_view names);

// The names with a line each on what they mean, for --help.
std::string mig_query_help();

// "gpu_index, mig.index, profile, memory.used [MiB]\n"
std::string mig_query_csv_header(std::span<const MigColumn* const> columns);

// One line per MIG device of each GPU that is up and in MIG mode, in device index order. The memory and
// activity columns are the device's GPU instance's (what NVML reads per instance); [N/A] where the
// instance has no value (the activity ratios need GPM and two readings).
std::string mig_query_csv_rows(std::span<const MigColumn* const> columns, const QueryContext& context,
                               std::span<const GpuView> gpus, CsvStyle style);

// {"timestamp":"...","timestamp_unix_seconds":...,"mig_devices":[{"gpu_index":0,"mig.index":0,
// "memory.used_mib":10240,"sm_active_ratio":0.62,...}]}: names as asked, units in the key, absent values
// left out.
nlohmann::ordered_json mig_query_json(std::span<const MigColumn* const> columns, const QueryContext& context,
                                      std::span<const GpuView> gpus);

}  // namespace gpuscope::exporter
