// The --query-gpu names nvidia-smi 580 answers from beyond gpuscope's sampled catalog (PCI ids, modes,
// InfoROM, ECC by location, application clocks, power limits' range, fabric, platform, ...): each one
// read from model::GpuDetails (NvmlBackend::details) and printed in nvidia-smi's exact format.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "model/gpu_details.h"

namespace gpuscope::exporter {

// An index into the table of detail columns (smi_detail_columns.cc); stable only within one build.
struct DetailColumn {
  std::uint16_t index = 0;
  friend bool operator==(DetailColumn, DetailColumn) = default;
};

// One column's value for one GPU: nvidia-smi's text without the unit, or NVML's code for why there is
// none (3 and 13 print [N/A]).
struct DetailCell {
  // With an error: what nvidia-smi prints instead of the code's text (fabric.*'s bare "N/A"), if set.
  std::string text;
  int error = 0;
  // For JSON: the value as a number in the column's unit (71.14 for W, 81559 for MiB), when it is one;
  // a cell with text and no number is a word ("Enabled", "0x233010DE") and stays a string.
  std::optional<double> number;
};

// The detail column nvidia-smi calls `name` (canonical, aliases already resolved), if it is one.
std::optional<DetailColumn> detail_column_by_name(std::string_view name);

// nvidia-smi's name, header unit ("W", "MiB", "" for none) and a one-line description.
std::string_view detail_column_name(DetailColumn column);
std::string_view detail_column_unit(DetailColumn column);
std::string_view detail_column_help(DetailColumn column);
// The unit a JSON key carries: the header's, or one the header leaves out ("C" for temperature.gpu.tlimit).
std::string_view detail_column_json_unit(DetailColumn column);

// Every detail column, in nvidia-smi's --query-gpu order.
std::span<const DetailColumn> detail_columns();

// nvidia-smi's other spellings of the detail names (clocks_throttle_reasons.*, inforom.image, ...),
// alias → canonical; the header prints the canonical name, as for the catalog's aliases.
std::span<const std::pair<std::string_view, std::string_view>> detail_aliases();
std::string_view canonical_detail_name(std::string_view name);

// The column's value from what details() read.
DetailCell detail_cell(DetailColumn column, const model::GpuDetails& details);

// As nvidia-smi prints it in CSV: "71.14 W" (or "71.14" without units), "Enabled", "0x0000", "[N/A]",
// "N/A" (fabric.*: nvidia-smi's own brackets-less text), "[Requested functionality has been deprecated]",
// "[GPU is lost]".
std::string detail_csv_text(DetailColumn column, const DetailCell& cell, bool with_unit);

// The text NVML's code prints as in a CSV cell: [N/A] for not supported / not in the library, nvidia-smi's
// wording for DEPRECATED, else [<nvmlErrorString>].
std::string detail_error_text(int code);

}  // namespace gpuscope::exporter
