// The columns of `gpuscope query --query-gpu=...`: nvidia-smi's names, resolved once to either a
// GPU identity column (index, name, uuid, ...) or a field of the catalog, so rendering never re-parses.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "export/gpu_view.h"
#include "export/smi_detail_columns.h"
#include "model/field_catalog.h"

namespace gpuscope::exporter {

// Columns that come from GpuInfo, SystemInfo or the Snapshot's time rather than from a field reading.
enum class IdentityColumn : std::uint8_t {
  kIndex,
  kName,
  kUuid,
  kSerial,
  kPciBusId,
  kDriverVersion,
  kTimestamp,
  kCount,
  kVbiosVersion,
  kComputeCap,
};

struct GpuColumn {
  std::string name;  // nvidia-smi's canonical name, printed in the header whatever alias was asked for
  // DetailColumn: read from model::GpuDetails (NvmlBackend::details), not from the sampled reading.
  std::variant<IdentityColumn, model::FieldId, DetailColumn> source;
};

// Whether any of `columns` reads model::GpuDetails: only then is NvmlBackend::details worth its calls.
bool needs_details(std::span<const GpuColumn> columns);

// The name a query list could not resolve; empty when the list had an empty entry ("index,,name").
struct UnknownQueryName {
  std::string name;
};

// Splits a comma-separated list ("index, name,memory.used"), trimming blanks around each name.
// Accepts nvidia-smi's aliases (gpu_name, gpu_uuid, gpu_bus_id, clocks.current.sm, ...) and the
// DCGM_FI_* name of any catalog field (DCGM_FI_PROF_SM_ACTIVE), which nvidia-smi cannot query.
std::expected<std::vector<GpuColumn>, UnknownQueryName> parse_gpu_query(std::string_view names);

// `query --query-remapped-rows=...`: nvidia-smi's 16 names (timestamp, gpu_name, gpu_bus_id, gpu_serial,
// gpu_uuid, remapped_rows.*), one row per GPU with the values --query-gpu prints under the same names. The
// header spells each as asked (gpu_name, not --query-gpu's name). Any other name is unknown.
std::expected<std::vector<GpuColumn>, UnknownQueryName> parse_remapped_rows_query(std::string_view names);

// Every name parse_gpu_query accepts as canonical, for --help.
std::vector<std::string> gpu_query_names();

// `query --help-query-gpu`: every --query-gpu name with its other spellings and what it means, as
// nvidia-smi --help-query-gpu lists them, then the DCGM names that reach the fields nvidia-smi has none for.
std::string gpu_query_help();

// An identity column's value as text ("0", "NVIDIA H100 80GB HBM3", "9.0"); nullopt when the driver
// did not report it.
std::optional<std::string> identity_text(IdentityColumn column, const QueryContext& context, const GpuView& gpu);

// NVML's code for why an identity column the GPU itself reports (name, UUID, bus id, ...) is unknown:
// the GPU's handle failed at discovery (a lost GPU). 0 when it is known or simply not reported.
int identity_error(IdentityColumn column, const GpuView& gpu);

// Splits "a, b,c" on commas and trims each part; shared by the query lists.
std::vector<std::string_view> split_name_list(std::string_view list);

}  // namespace gpuscope::exporter
