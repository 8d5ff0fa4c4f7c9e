// `gpuscope query --query-retired-pages=...`: one row per retired page per GPU, nvidia-smi's names and CSV,
// or JSON. Only pre-Ampere GPUs retire pages; Ampere and newer (the H100) remap rows instead and list none.
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
#include "model/retired_pages.h"

namespace gpuscope::exporter {

enum class RetiredPageColumn : std::uint8_t {
  kTimestamp,
  kGpuName,
  kGpuBusId,
  kGpuSerial,
  kGpuUuid,
  kAddress,
  kRetiredAt,
  kCause,
};

// nvidia-smi 580's eight names: timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid,
// retired_pages.address, retired_pages.timestamp, retired_pages.cause.
std::expected<std::vector<RetiredPageColumn>, UnknownQueryName> parse_retired_pages_query(std::string_view names);

// The names, comma-separated, as nvidia-smi prints them (they carry no units).
std::string retired_pages_csv_header(std::span<const RetiredPageColumn> columns);

// `readings[k]` is the list of `gpus[k]`. The address prints as 0x and 16 hex digits, the retirement
// time as nvidia-smi's timestamps ([N/A] from a driver without the _v2 call), the cause as
// "Single Bit ECC" (repeated single-bit errors) or "Double Bit ECC". A GPU whose list could not be read
// adds no row (the caller reports why).
std::string retired_pages_csv_rows(std::span<const RetiredPageColumn> columns, const QueryContext& context,
                                   std::span<const GpuView> gpus, std::span<const model::RetiredPagesReading> readings);

// {"timestamp":"...","timestamp_unix_seconds":...,"retired_pages":[{"gpu_uuid":"GPU-...",
// "retired_pages.address":123456,"retired_pages.timestamp":"...","retired_pages.timestamp_unix_seconds":...,
// "retired_pages.cause":"Double Bit ECC"}],"errors":[{"gpu_index":0,"gpu_uuid":"GPU-...",
// "error":"Not Supported"}]}: each GPU without a list (Ampere and newer: Not Supported) under "errors".
nlohmann::ordered_json retired_pages_json(std::span<const RetiredPageColumn> columns, const QueryContext& context,
                                          std::span<const GpuView> gpus,
                                          std::span<const model::RetiredPagesReading> readings);

}  // namespace gpuscope::exporter
