#include "export/gpu_list.h"

#include <fmt/format.h>

#include "export/nvml_error_text.h"

namespace gpuscope::exporter {

std::string gpu_list_text(std::span<const model::GpuInfo> gpus) {
  std::string out;
  for (const auto& g : gpus) {
    // A GPU whose handle failed at discovery still gets a line, saying why: hiding it would hide the failure.
    const std::string unknown =
        g.discovery_error != 0 ? fmt::format("[{}]", nvml_error_text(g.discovery_error)) : "[Unknown]";
    out += fmt::format("GPU {}: {} (UUID: {})\n", g.index, g.name.empty() ? unknown : g.name,
                       g.uuid.empty() ? unknown : g.uuid);
  }
  return out;
}

nlohmann::ordered_json gpu_list_json(std::span<const model::GpuInfo> gpus) {
  auto list = nlohmann::ordered_json::array();
  for (const auto& g : gpus) {
    nlohmann::ordered_json row = {{"index", g.index}};
    if (!g.name.empty()) row["name"] = g.name;
    if (!g.uuid.empty()) row["uuid"] = g.uuid;
    if (!g.pci_bus_id.empty()) row["pci_bus_id"] = g.pci_bus_id;
    if (g.discovery_error != 0) {
      row["error"] = nvml_error_text(g.discovery_error);
      row["error_code"] = g.discovery_error;
    }
    list.push_back(std::move(row));
  }
  return {{"gpus", std::move(list)}};
}

}  // namespace gpuscope::exporter
