#include "export/gpu_info_report.h"

#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "export/machine_value.h"
#include "export/nvml_error_text.h"

namespace gpuscope::exporter {
namespace {

constexpr const char* kNa = "N/A";

template <class T>
std::string or_na_text(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string(kNa);
}

std::string or_na_text(const std::string& s) { return s.empty() ? std::string(kNa) : s; }

std::string yes_no(const std::optional<bool>& v) {
  if (!v) return kNa;
  return *v ? "Enabled" : "Disabled";
}

std::string with_unit(const std::optional<unsigned>& v, std::string_view unit) {
  return v ? fmt::format("{} {}", *v, unit) : std::string(kNa);
}

std::string watts(const std::optional<double>& w) { return w ? fmt::format("{:.2f} W", *w) : std::string(kNa); }

std::optional<std::string> compute_capability(const model::GpuInfo& g) {
  if (!g.cuda_cc_major || !g.cuda_cc_minor) return std::nullopt;
  return fmt::format("{}.{}", *g.cuda_cc_major, *g.cuda_cc_minor);
}

void line(std::string& out, std::string_view indent, std::string_view label, std::string_view value) {
  out += fmt::format("{}{:<28}: {}\n", indent, label, value);
}

}  // namespace

std::string gpu_info_text(const model::SystemInfo& system, std::size_t attached, std::span<const model::GpuInfo> gpus) {
  std::string out;
  line(out, "", "Hostname", or_na_text(system.hostname));
  line(out, "", "Driver Version", or_na_text(system.driver_version));
  line(out, "", "NVML Version", or_na_text(system.nvml_version));
  line(out, "", "CUDA Driver Version", or_na_text(system.cuda_version_string()));
  line(out, "", "NVML Library",
       system.simulated ? fmt::format("{} (gpuscope simulator)", or_na_text(system.library_path)) : or_na_text(system.library_path));
  line(out, "", "Attached GPUs", fmt::format("{}", attached));
  for (const auto& g : gpus) {
    out += fmt::format("\nGPU {}: {}\n", g.index, or_na_text(g.name));
    constexpr std::string_view in = "    ";
    line(out, in, "UUID", or_na_text(g.uuid));
    line(out, in, "Serial Number", or_na_text(g.serial));
    line(out, in, "PCI Bus Id", or_na_text(g.pci_bus_id));
    line(out, in, "Minor Number",
         g.minor_number ? fmt::format("{} (/dev/{})", *g.minor_number, g.device_name()) : std::string(kNa));
    line(out, in, "Board Part Number", or_na_text(g.board_part_number));
    line(out, in, "VBIOS Version", or_na_text(g.vbios_version));
    line(out, in, "Architecture", g.architecture ? model::architecture_name(*g.architecture) : std::string(kNa));
    line(out, in, "Compute Capability", compute_capability(g).value_or(kNa));
    line(out, in, "CUDA Cores", or_na_text(g.num_cores));
    line(out, in, "Memory Total",
         g.memory_total_bytes ? fmt::format("{} MiB", *g.memory_total_bytes / kMiB) : std::string(kNa));
    line(out, in, "Max SM Clock", with_unit(g.max_sm_clock_mhz, "MHz"));
    line(out, in, "Max Memory Clock", with_unit(g.max_mem_clock_mhz, "MHz"));
    line(out, in, "Max Graphics Clock", with_unit(g.max_graphics_clock_mhz, "MHz"));
    line(out, in, "Power Limit", watts(g.power_limit_watts));
    line(out, in, "Default Power Limit", watts(g.power_default_limit_watts));
    line(out, in, "Enforced Power Limit", watts(g.enforced_power_limit_watts));
    line(out, in, "PCIe Max Link",
         fmt::format("Gen {} x{}", or_na_text(g.pcie_max_gen), or_na_text(g.pcie_max_width)));
    line(out, in, "Slowdown Temperature", with_unit(g.slowdown_temp_celsius, "C"));
    line(out, in, "Shutdown Temperature", with_unit(g.shutdown_temp_celsius, "C"));
    line(out, in, "GPM (profiling metrics)", g.gpm_supported ? "Supported" : "Not Supported");
    line(out, in, "MIG Mode", yes_no(g.mig_enabled));
    line(out, in, "Persistence Mode", yes_no(g.persistence_mode));
    line(out, in, "ECC Mode", yes_no(g.ecc_enabled));
  }
  return out;
}

nlohmann::ordered_json gpu_info_json(const model::SystemInfo& system, std::size_t attached,
                                     std::span<const model::GpuInfo> gpus) {
  nlohmann::ordered_json sys = nlohmann::ordered_json::object();
  auto put_text = [](nlohmann::ordered_json& j, const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  put_text(sys, "hostname", system.hostname);
  put_text(sys, "driver_version", system.driver_version);
  put_text(sys, "nvml_version", system.nvml_version);
  put_text(sys, "cuda_driver_version", system.cuda_version_string());
  if (system.cuda_driver_version) sys["cuda_driver_version_number"] = *system.cuda_driver_version;
  put_text(sys, "library_path", system.library_path);
  sys["simulated"] = system.simulated;
  sys["gpu_count"] = attached;

  auto list = nlohmann::ordered_json::array();
  for (const auto& g : gpus) {
    nlohmann::ordered_json j = {{"index", g.index}};
    auto put = [&j](const char* key, const auto& opt) {
      if (opt) j[key] = *opt;
    };
    auto put_watts = [&j](const char* key, const std::optional<double>& w) {
      if (w) j[key] = json_number(*w);
    };
    put("minor_number", g.minor_number);
    put_text(j, "name", g.name);
    put_text(j, "uuid", g.uuid);
    if (g.serial && !g.serial->empty()) j["serial"] = *g.serial;
    put_text(j, "pci_bus_id", g.pci_bus_id);
    if (g.board_part_number && !g.board_part_number->empty()) j["board_part_number"] = *g.board_part_number;
    if (g.vbios_version && !g.vbios_version->empty()) j["vbios_version"] = *g.vbios_version;
    if (g.architecture) {
      j["architecture"] = model::architecture_name(*g.architecture);
      j["architecture_id"] = *g.architecture;
    }
    if (auto cc = compute_capability(g)) {
      j["compute_capability"] = *cc;
      j["compute_capability_major"] = *g.cuda_cc_major;
      j["compute_capability_minor"] = *g.cuda_cc_minor;
    }
    put("cuda_cores", g.num_cores);
    put("memory_total_bytes", g.memory_total_bytes);
    put("max_sm_clock_mhz", g.max_sm_clock_mhz);
    put("max_mem_clock_mhz", g.max_mem_clock_mhz);
    put("max_graphics_clock_mhz", g.max_graphics_clock_mhz);
    put_watts("power_limit_watts", g.power_limit_watts);
    put_watts("power_default_limit_watts", g.power_default_limit_watts);
    put_watts("enforced_power_limit_watts", g.enforced_power_limit_watts);
    put("pcie_max_gen", g.pcie_max_gen);
    put("pcie_max_width", g.pcie_max_width);
    put("slowdown_temp_celsius", g.slowdown_temp_celsius);
    put("shutdown_temp_celsius", g.shutdown_temp_celsius);
    j["gpm_supported"] = g.gpm_supported;
    put("mig_enabled", g.mig_enabled);
    put("persistence_mode", g.persistence_mode);
    put("ecc_enabled", g.ecc_enabled);
    list.push_back(std::move(j));
  }
  return {{"system", std::move(sys)}, {"gpus", std::move(list)}};
}

}  // namespace gpuscope::exporter
