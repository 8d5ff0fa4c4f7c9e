#include "export/compute_apps_query.h"

#include <array>
#include <optional>

#include <fmt/format.h>

#include "export/nvml_error_text.h"
#include "export/smi_value_text.h"
#include "export/timestamp_text.h"

namespace gpuscope::exporter {
namespace {


struct AppColumnName {
  std::string_view name;  // what the user may write
  AppColumn column;
};

constexpr std::array<AppColumnName, 9> kNames{{
    {"timestamp", AppColumn::kTimestamp},
    {"pid", AppColumn::kPid},
    {"process_name", AppColumn::kProcessName},
    {"used_memory", AppColumn::kUsedMemory},
    {"used_gpu_memory", AppColumn::kUsedMemory},
    {"gpu_uuid", AppColumn::kGpuUuid},
    {"gpu_bus_id", AppColumn::kGpuBusId},
    {"gpu_name", AppColumn::kGpuName},
    {"gpu_serial", AppColumn::kGpuSerial},
}};

std::string_view header_name(AppColumn column) {
  switch (column) {
    case AppColumn::kTimestamp: return "timestamp";
    case AppColumn::kPid: return "pid";
    case AppColumn::kProcessName: return "process_name";
    case AppColumn::kUsedMemory: return "used_gpu_memory [MiB]";
    case AppColumn::kGpuUuid: return "gpu_uuid";
    case AppColumn::kGpuBusId: return "gpu_bus_id";
    case AppColumn::kGpuName: return "gpu_name";
    case AppColumn::kGpuSerial: return "gpu_serial";
  }
  return "";
}

bool is_compute(const model::ProcessSample& p) { return p.kind != model::ProcessKind::kGraphics; }

std::string process_name(const model::ProcessSample& p) {
  // A pid from another PID namespace has no /proc entry here: say so rather than print nothing.
  return p.identity.name.empty() ? std::string("[Not Found]") : p.identity.name;
}

std::string or_na(const std::string& s) { return s.empty() ? std::string(kNotAvailable) : s; }

std::string app_text(AppColumn column, const QueryContext& context, const GpuView& gpu, const model::ProcessSample& p,
                     bool units) {
  switch (column) {
    case AppColumn::kTimestamp: return smi_timestamp(context.time);
    case AppColumn::kPid: return fmt::format("{}", p.pid);
    case AppColumn::kProcessName: return process_name(p);
    case AppColumn::kUsedMemory:
      if (!p.used_memory_bytes) return kNotAvailable;
      return units ? fmt::format("{} MiB", *p.used_memory_bytes / kMiB) : fmt::format("{}", *p.used_memory_bytes / kMiB);
    case AppColumn::kGpuUuid: return or_na(gpu.info.uuid);
    case AppColumn::kGpuBusId: return or_na(gpu.info.pci_bus_id);
    case AppColumn::kGpuName: return or_na(gpu.info.name);
    case AppColumn::kGpuSerial: return or_na(gpu.info.serial.value_or(""));
  }
  return kNotAvailable;
}

}  // namespace

std::expected<std::vector<AppColumn>, UnknownQueryName> parse_compute_apps_query(std::string_view names) {
  std::vector<AppColumn> columns;
  for (std::string_view asked : split_name_list(names)) {
    if (asked.empty()) return std::unexpected(UnknownQueryName{});
    bool found = false;
    for (const auto& n : kNames) {
      if (n.name == asked) {
        columns.push_back(n.column);
        found = true;
        break;
      }
    }
    if (!found) return std::unexpected(UnknownQueryName{std::string(asked)});
  }
  return columns;
}

std::string compute_apps_csv_header(std::span<const AppColumn> columns) {
  std::string line;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) line += ", ";
    line += header_name(columns[i]);
  }
  line += '\n';
  return line;
}

std::string compute_apps_csv_rows(std::span<const AppColumn> columns, const QueryContext& context,
                                  std::span<const GpuView> gpus, CsvStyle style) {
  std::string out;
  for (const auto& gpu : gpus) {
    if (!gpu.sample.up) continue;
    for (const auto& p : gpu.sample.processes) {
      if (!is_compute(p)) continue;
      for (std::size_t i = 0; i < columns.size(); ++i) {
        if (i > 0) out += ", ";
        out += app_text(columns[i], context, gpu, p, style.units);
      }
      out += '\n';
    }
  }
  return out;
}

nlohmann::ordered_json compute_apps_json(std::span<const AppColumn> columns, const QueryContext& context,
                                         std::span<const GpuView> gpus) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["timestamp"] = iso_timestamp(context.time);
  doc["timestamp_unix_seconds"] = unix_seconds(context.time);
  auto processes = nlohmann::ordered_json::array();
  auto errors = nlohmann::ordered_json::array();
  for (const auto& gpu : gpus) {
    std::optional<int> failure;
    if (!gpu.sample.up) {
      failure = gpu.sample.down_error_code != 0 ? gpu.sample.down_error_code : kGpuIsLost;
    } else if (gpu.sample.processes_error_code) {
      failure = *gpu.sample.processes_error_code;
    }
    if (failure) {
      nlohmann::ordered_json e = {{"gpu_index", gpu.info.index}};
      if (!gpu.info.uuid.empty()) e["gpu_uuid"] = gpu.info.uuid;
      e["error"] = nvml_error_text(*failure);
      errors.push_back(std::move(e));
    }
    if (!gpu.sample.up) continue;
    for (const auto& p : gpu.sample.processes) {
      if (!is_compute(p)) continue;
      nlohmann::ordered_json row = nlohmann::ordered_json::object();
      for (auto column : columns) {
        switch (column) {
          case AppColumn::kTimestamp: break;  // the document's timestamp
          case AppColumn::kPid: row["pid"] = p.pid; break;
          case AppColumn::kProcessName:
            if (!p.identity.name.empty()) row["process_name"] = p.identity.name;
            break;
          case AppColumn::kUsedMemory:
            if (p.used_memory_bytes) row["used_memory_bytes"] = *p.used_memory_bytes;
            break;
          case AppColumn::kGpuUuid:
            if (!gpu.info.uuid.empty()) row["gpu_uuid"] = gpu.info.uuid;
            break;
          case AppColumn::kGpuBusId:
            if (!gpu.info.pci_bus_id.empty()) row["gpu_bus_id"] = gpu.info.pci_bus_id;
            break;
          case AppColumn::kGpuName:
            if (!gpu.info.name.empty()) row["gpu_name"] = gpu.info.name;
            break;
          case AppColumn::kGpuSerial:
            if (gpu.info.serial && !gpu.info.serial->empty()) row["gpu_serial"] = *gpu.info.serial;
            break;
        }
      }
      processes.push_back(std::move(row));
    }
  }
  doc["processes"] = std::move(processes);
  if (!errors.empty()) doc["errors"] = std::move(errors);
  return doc;
}

}  // namespace gpuscope::exporter
