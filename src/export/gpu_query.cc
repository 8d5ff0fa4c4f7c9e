#include "export/gpu_query.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "export/smi_field_order.h"
#include "export/timestamp_text.h"

namespace gpuscope::exporter {
namespace {

using model::FieldCatalog;

struct IdentityName {
  std::string_view name;
  IdentityColumn column;
  std::string_view help;
};

// nvidia-smi 580's names (a name it rejects, gpuscope rejects too: a script must not read something else).
constexpr std::array<IdentityName, 10> kIdentityNames{{
    {"index", IdentityColumn::kIndex, "The GPU's index in NVML's enumeration (0-based)."},
    {"name", IdentityColumn::kName, "The GPU's product name."},
    {"uuid", IdentityColumn::kUuid, "The GPU's globally unique, immutable identifier (GPU-...)."},
    {"serial", IdentityColumn::kSerial, "The serial number printed on the board."},
    {"pci.bus_id", IdentityColumn::kPciBusId, "PCI bus id as domain:bus:device.function (00000000:18:00.0)."},
    {"driver_version", IdentityColumn::kDriverVersion, "The version of the installed NVIDIA driver."},
    {"timestamp", IdentityColumn::kTimestamp, "When the reading was taken, YYYY/MM/DD HH:MM:SS.msec (local time)."},
    {"count", IdentityColumn::kCount, "The number of GPUs in the system."},
    {"vbios_version", IdentityColumn::kVbiosVersion, "The BIOS of the GPU board."},
    {"compute_cap", IdentityColumn::kComputeCap, "The CUDA compute capability (major.minor)."},
}};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::vector<std::string_view> split_name_list(std::string_view list) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    std::string_view part = list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!part.empty() && is_blank(part.front())) part.remove_prefix(1);
    while (!part.empty() && is_blank(part.back())) part.remove_suffix(1);
    parts.push_back(part);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parts;
}

std::expected<std::vector<GpuColumn>, UnknownQueryName> parse_gpu_query(std::string_view names) {
  std::vector<GpuColumn> columns;
  for (std::string_view asked : split_name_list(names)) {
    if (asked.empty()) return std::unexpected(UnknownQueryName{});
    const std::string_view name = canonical_detail_name(model::FieldCatalog::canonical_smi_name(asked));
    bool found = false;
    for (const auto& id : kIdentityNames) {
      if (id.name == name) {
        columns.push_back({std::string(name), id.column});
        found = true;
        break;
      }
    }
    if (found) continue;
    if (auto field = FieldCatalog::by_smi_name(name)) {
      columns.push_back({std::string(name), *field});
      continue;
    }
    if (auto detail = detail_column_by_name(name)) {
      columns.push_back({std::string(name), *detail});
      continue;
    }
    // nvidia-smi has no names for the profiling ratios (SM active, tensor pipes, DRAM) that show
    // whether the chip is busy: DCGM's names reach every catalog field.
    if (auto field = FieldCatalog::by_dcgm_name(asked)) {
      columns.push_back({std::string(asked), *field});
      continue;
    }
    return std::unexpected(UnknownQueryName{std::string(asked)});
  }
  return columns;
}

bool needs_details(std::span<const GpuColumn> columns) {
  for (const auto& column : columns) {
    if (std::holds_alternative<DetailColumn>(column.source)) return true;
  }
  return false;
}

namespace {

// nvidia-smi 580's --query-remapped-rows list (../shared/reference/real-h100/nvidia-smi/).
constexpr std::array<std::string_view, 16> kRemappedRowsNames{
    "timestamp",
    "gpu_name",
    "gpu_bus_id",
    "gpu_serial",
    "gpu_uuid",
    "remapped_rows.correctable",
    "remapped_rows.correctable_inactive",
    "remapped_rows.uncorrectable",
    "remapped_rows.uncorrectable_inactive",
    "remapped_rows.pending",
    "remapped_rows.failure",
    "remapped_rows.histogram.max",
    "remapped_rows.histogram.high",
    "remapped_rows.histogram.partial",
    "remapped_rows.histogram.low",
    "remapped_rows.histogram.none",
};

}  // namespace

std::expected<std::vector<GpuColumn>, UnknownQueryName> parse_remapped_rows_query(std::string_view names) {
  std::vector<GpuColumn> columns;
  for (std::string_view asked : split_name_list(names)) {
    if (asked.empty()) return std::unexpected(UnknownQueryName{});
    if (std::find(kRemappedRowsNames.begin(), kRemappedRowsNames.end(), asked) == kRemappedRowsNames.end()) {
      return std::unexpected(UnknownQueryName{std::string(asked)});
    }
    auto one = parse_gpu_query(asked);
    if (!one || one->size() != 1) return std::unexpected(UnknownQueryName{std::string(asked)});
    GpuColumn column = std::move(one->front());
    column.name = std::string(asked);
    columns.push_back(std::move(column));
  }
  return columns;
}

std::optional<std::string> identity_text(IdentityColumn column, const QueryContext& context, const GpuView& gpu) {
  const auto& info = gpu.info;
  auto non_empty = [](const std::string& s) -> std::optional<std::string> {
    if (s.empty()) return std::nullopt;
    return s;
  };
  switch (column) {
    case IdentityColumn::kIndex: return fmt::format("{}", info.index);
    case IdentityColumn::kName: return non_empty(info.name);
    case IdentityColumn::kUuid: return non_empty(info.uuid);
    case IdentityColumn::kSerial: return info.serial ? non_empty(*info.serial) : std::nullopt;
    case IdentityColumn::kPciBusId: return non_empty(info.pci_bus_id);
    case IdentityColumn::kDriverVersion: return non_empty(context.system.driver_version);
    case IdentityColumn::kTimestamp: return smi_timestamp(context.time);
    case IdentityColumn::kCount: return fmt::format("{}", context.gpu_count);
    case IdentityColumn::kVbiosVersion: return info.vbios_version ? non_empty(*info.vbios_version) : std::nullopt;
    case IdentityColumn::kComputeCap:
      if (!info.cuda_cc_major || !info.cuda_cc_minor) return std::nullopt;
      return fmt::format("{}.{}", *info.cuda_cc_major, *info.cuda_cc_minor);
  }
  return std::nullopt;
}

int identity_error(IdentityColumn column, const GpuView& gpu) {
  switch (column) {
    case IdentityColumn::kIndex:
    case IdentityColumn::kDriverVersion:
    case IdentityColumn::kTimestamp:
    case IdentityColumn::kCount: return 0;  // known without the GPU's handle
    default: break;
  }
  return gpu.info.discovery_error;
}

std::string gpu_query_help() {
  // Each name with its other spellings, listed in nvidia-smi's order under the spelling nvidia-smi lists
  // first; gpuscope's names that nvidia-smi does not list come after.
  struct HelpEntry {
    std::vector<std::string_view> spellings;
    std::string text;
    std::size_t rank = SIZE_MAX;
  };
  std::vector<HelpEntry> entries;
  const auto add = [&entries](std::string_view name, std::string text) {
    HelpEntry e{{name}, std::move(text)};
    for (const auto& [alias, real] : FieldCatalog::smi_aliases()) {
      if (real == name) e.spellings.push_back(alias);
    }
    for (const auto& [alias, real] : detail_aliases()) {
      if (real == name) e.spellings.push_back(alias);
    }
    for (std::size_t k = 0; k < e.spellings.size(); ++k) {
      const auto rank = smi_query_gpu_rank(e.spellings[k]);
      if (rank && *rank < e.rank) {
        e.rank = *rank;
        std::rotate(e.spellings.begin(), e.spellings.begin() + static_cast<std::ptrdiff_t>(k),
                    e.spellings.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      }
    }
    entries.push_back(std::move(e));
  };
  for (const auto& id : kIdentityNames) add(id.name, std::string(id.help));
  for (const auto& def : FieldCatalog::all()) {
    if (def.smi_name.empty()) continue;
    add(def.smi_name, fmt::format("{}{}", def.help,
                                  def.dcgm_name.empty() ? std::string() : fmt::format(" (also {})", def.dcgm_name)));
  }
  for (const DetailColumn column : detail_columns()) {
    const std::string_view unit = detail_column_unit(column);
    add(detail_column_name(column), fmt::format("{}{}", detail_column_help(column),
                                                unit.empty() ? std::string() : fmt::format(" In {}.", unit)));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const HelpEntry& a, const HelpEntry& b) { return a.rank < b.rank; });
  std::string out = "List of valid properties to query for the switch \"--query-gpu=\":\n\n";
  for (const auto& e : entries) {
    for (std::size_t k = 0; k < e.spellings.size(); ++k) out += fmt::format("{}\"{}\"", k > 0 ? " or " : "", e.spellings[k]);
    out += fmt::format("\n{}\n\n", e.text);
  }
  out += "Beyond nvidia-smi's names, these DCGM names of gpuscope's catalog are columns too:\n\n";
  for (const auto& def : FieldCatalog::all()) {
    if (def.dcgm_name.empty() || !def.smi_name.empty()) continue;
    out += fmt::format("\"{}\"\n{}\n\n", def.dcgm_name, def.help);
  }
  return out;
}

std::vector<std::string> gpu_query_names() {
  std::vector<std::string> names;
  for (const auto& id : kIdentityNames) names.emplace_back(id.name);
  for (const auto& def : FieldCatalog::all()) {
    if (!def.smi_name.empty()) names.emplace_back(def.smi_name);
  }
  for (const DetailColumn column : detail_columns()) names.emplace_back(detail_column_name(column));
  return names;
}

}  // namespace gpuscope::exporter
