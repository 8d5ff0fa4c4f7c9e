#include "export/gpu_list.h"

#include <fmt/format.h>

#include "export/nvml_error_text.h"

namespace gpuscope::exporter {
namespace {

const std::vector<model::MigInstanceSample>* gpu_list_mig_of(MigDevicesByGpu mig_devices, std::size_t k) {
  return k < mig_devices.size() ? &mig_devices[k] : nullptr;
}

}  // namespace

std::string gpu_list_text(std::span<const model::GpuInfo> gpus, MigDevicesByGpu mig_devices) {
  std::string out;
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const auto& g = gpus[k];
    // A GPU whose handle failed at discovery still gets a line, saying why: hiding it would hide the failure.
    const std::string unknown =
        g.discovery_error != 0 ? fmt::format("[{}]", nvml_error_text(g.discovery_error)) : "[Unknown]";
    out += fmt::format("GPU {}: {} (UUID: {})\n", g.index, g.name.empty() ? unknown : g.name,
                       g.uuid.empty() ? unknown : g.uuid);
    const auto* migs = gpu_list_mig_of(mig_devices, k);
    if (migs == nullptr) continue;
    // nvidia-smi's spacing: the profile left-aligned in 11 then a space (a longer profile still gets
    // its space, so `awk '{print $6}'` finds the UUID), the device index right-aligned in 2.
    for (const auto& m : *migs) {
      out += fmt::format("  MIG {:<11} Device {:>2}: (UUID: {})\n", m.profile.empty() ? "[Unknown]" : m.profile,
                         m.device_index, m.uuid.empty() ? "[Unknown]" : m.uuid);
    }
  }
  return out;
}

nlohmann::ordered_json gpu_list_json(std::span<const model::GpuInfo> gpus, MigDevicesByGpu mig_devices) {
  auto list = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < gpus.size(); ++k) {
    const auto& g = gpus[k];
    nlohmann::ordered_json row = {{"index", g.index}};
    if (!g.name.empty()) row["name"] = g.name;
    if (!g.uuid.empty()) row["uuid"] = g.uuid;
    if (!g.pci_bus_id.empty()) row["pci_bus_id"] = g.pci_bus_id;
    if (g.discovery_error != 0) {
      row["error"] = nvml_error_text(g.discovery_error);
      row["error_code"] = g.discovery_error;
    }
    if (const auto* migs = gpu_list_mig_of(mig_devices, k); migs != nullptr && !migs->empty()) {
      auto devices = nlohmann::ordered_json::array();
      for (const auto& m : *migs) {
        nlohmann::ordered_json d = {{"index", m.device_index}};
        if (!m.profile.empty()) d["profile"] = m.profile;
        if (!m.uuid.empty()) d["uuid"] = m.uuid;
        d["gpu_instance_id"] = m.gpu_instance_id;
        d["compute_instance_id"] = m.compute_instance_id;
        devices.push_back(std::move(d));
      }
      row["mig_devices"] = std::move(devices);
    }
    list.push_back(std::move(row));
  }
  return {{"gpus", std::move(list)}};
}

}  // namespace gpuscope::exporter
