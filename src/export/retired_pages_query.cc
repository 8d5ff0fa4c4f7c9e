#include "export/retired_pages_query.h"

#include <algorithm>
#include <array>
#include <chrono>

#include <fmt/format.h>

#include "export/nvml_error_text.h"
#include "export/smi_value_text.h"
#include "export/timestamp_text.h"

namespace gpuscope::exporter {
namespace {

struct RpColumnName {
  std::string_view name;
  RetiredPageColumn column;
};

// nvidia-smi's order (query-retired-pages-fields.txt).
constexpr std::array<RpColumnName, 8> kRpNames{{
    {"timestamp", RetiredPageColumn::kTimestamp},
    {"gpu_name", RetiredPageColumn::kGpuName},
    {"gpu_bus_id", RetiredPageColumn::kGpuBusId},
    {"gpu_serial", RetiredPageColumn::kGpuSerial},
    {"gpu_uuid", RetiredPageColumn::kGpuUuid},
    {"retired_pages.address", RetiredPageColumn::kAddress},
    {"retired_pages.timestamp", RetiredPageColumn::kRetiredAt},
    {"retired_pages.cause", RetiredPageColumn::kCause},
}};

std::string_view rp_name(RetiredPageColumn column) {
  for (const auto& n : kRpNames) {
    if (n.column == column) return n.name;
  }
  return "";
}

std::string_view rp_cause_text(model::RetirementCause cause) {
  return cause == model::RetirementCause::kDoubleBitEcc ? "Double Bit ECC" : "Single Bit ECC";
}

std::chrono::system_clock::time_point rp_time(std::uint64_t us) {
  return std::chrono::system_clock::time_point(std::chrono::microseconds(us));
}

std::string rp_or_na(const std::string& s) { return s.empty() ? std::string(kNotAvailable) : s; }

std::string rp_text(RetiredPageColumn column, const QueryContext& context, const GpuView& gpu,
                    const model::RetiredPage& p) {
  switch (column) {
    case RetiredPageColumn::kTimestamp: return smi_timestamp(context.time);
    case RetiredPageColumn::kGpuName: return rp_or_na(gpu.info.name);
    case RetiredPageColumn::kGpuBusId: return rp_or_na(gpu.info.pci_bus_id);
    case RetiredPageColumn::kGpuSerial: return rp_or_na(gpu.info.serial.value_or(""));
    case RetiredPageColumn::kGpuUuid: return rp_or_na(gpu.info.uuid);
    case RetiredPageColumn::kAddress: return fmt::format("0x{:016x}", p.address);
    case RetiredPageColumn::kRetiredAt:
      return p.timestamp_us ? smi_timestamp(rp_time(*p.timestamp_us)) : std::string(kNotAvailable);
    case RetiredPageColumn::kCause: return std::string(rp_cause_text(p.cause));
  }
  return kNotAvailable;
}

}  // namespace

std::expected<std::vector<RetiredPageColumn>, UnknownQueryName> parse_retired_pages_query(std::string_view names) {
  std::vector<RetiredPageColumn> columns;
  for (std::string_view asked : split_name_list(names)) {
    if (asked.empty()) return std::unexpected(UnknownQueryName{});
    const auto* it = std::find_if(kRpNames.begin(), kRpNames.end(), [asked](const RpColumnName& n) { return n.name == asked; });
    if (it == kRpNames.end()) return std::unexpected(UnknownQueryName{std::string(asked)});
    columns.push_back(it->column);
  }
  return columns;
}

std::string retired_pages_csv_header(std::span<const RetiredPageColumn> columns) {
  std::string line;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) line += ", ";
    line += rp_name(columns[i]);
  }
  line += '\n';
  return line;
}

std::string retired_pages_csv_rows(std::span<const RetiredPageColumn> columns, const QueryContext& context,
                                   std::span<const GpuView> gpus,
                                   std::span<const model::RetiredPagesReading> readings) {
  std::string out;
  for (std::size_t k = 0; k < gpus.size() && k < readings.size(); ++k) {
    if (readings[k].error != 0) continue;
    for (const auto& p : readings[k].pages) {
      for (std::size_t i = 0; i < columns.size(); ++i) {
        if (i > 0) out += ", ";
        out += rp_text(columns[i], context, gpus[k], p);
      }
      out += '\n';
    }
  }
  return out;
}

nlohmann::ordered_json retired_pages_json(std::span<const RetiredPageColumn> columns, const QueryContext& context,
                                          std::span<const GpuView> gpus,
                                          std::span<const model::RetiredPagesReading> readings) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["timestamp"] = iso_timestamp(context.time);
  doc["timestamp_unix_seconds"] = unix_seconds(context.time);
  auto pages = nlohmann::ordered_json::array();
  auto errors = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < gpus.size() && k < readings.size(); ++k) {
    const GpuView& gpu = gpus[k];
    if (readings[k].error != 0) {
      nlohmann::ordered_json e = {{"gpu_index", gpu.info.index}};
      if (!gpu.info.uuid.empty()) e["gpu_uuid"] = gpu.info.uuid;
      e["error"] = nvml_error_text(readings[k].error);
      errors.push_back(std::move(e));
      continue;
    }
    for (const auto& p : readings[k].pages) {
      nlohmann::ordered_json row = nlohmann::ordered_json::object();
      for (const auto column : columns) {
        const std::string key(rp_name(column));
        switch (column) {
          case RetiredPageColumn::kTimestamp: break;  // the document's
          case RetiredPageColumn::kGpuName:
            if (!gpu.info.name.empty()) row[key] = gpu.info.name;
            break;
          case RetiredPageColumn::kGpuBusId:
            if (!gpu.info.pci_bus_id.empty()) row[key] = gpu.info.pci_bus_id;
            break;
          case RetiredPageColumn::kGpuSerial:
            if (gpu.info.serial && !gpu.info.serial->empty()) row[key] = *gpu.info.serial;
            break;
          case RetiredPageColumn::kGpuUuid:
            if (!gpu.info.uuid.empty()) row[key] = gpu.info.uuid;
            break;
          case RetiredPageColumn::kAddress: row[key] = p.address; break;
          case RetiredPageColumn::kRetiredAt:
            if (p.timestamp_us) {
              row[key] = iso_timestamp(rp_time(*p.timestamp_us));
              row[key + "_unix_seconds"] = unix_seconds(rp_time(*p.timestamp_us));
            }
            break;
          case RetiredPageColumn::kCause: row[key] = rp_cause_text(p.cause); break;
        }
      }
      pages.push_back(std::move(row));
    }
  }
  doc["retired_pages"] = std::move(pages);
  if (!errors.empty()) doc["errors"] = std::move(errors);
  return doc;
}

}  // namespace gpuscope::exporter
