// What does not change while a GPU is attached (identity, limits, versions), read once at discovery.
// Optional members are absent when the driver does not report them (unsupported is not zero).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuscope::model {

struct GpuInfo {
  unsigned index = 0;
  std::optional<unsigned> minor_number;  // /dev/nvidia<minor>
  std::string name;
  std::string uuid;
  std::optional<std::string> serial;
  std::string pci_bus_id;  // "00000000:18:00.0", as NVML's busId
  std::optional<std::string> board_part_number;
  std::optional<std::string> vbios_version;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<unsigned> max_sm_clock_mhz;
  std::optional<unsigned> max_mem_clock_mhz;
  std::optional<unsigned> max_graphics_clock_mhz;
  std::optional<double> power_limit_watts;          // management limit
  std::optional<double> power_default_limit_watts;  // default management limit
  std::optional<double> enforced_power_limit_watts;
  std::optional<unsigned> architecture;  // NVML's enum: 7 Ampere, 8 Ada, 9 Hopper, 10 Blackwell
  std::optional<int> cuda_cc_major;
  std::optional<int> cuda_cc_minor;
  std::optional<unsigned> pcie_max_gen;
  std::optional<unsigned> pcie_max_width;
  std::optional<unsigned> num_cores;
  bool gpm_supported = false;
  std::optional<bool> mig_enabled;
  std::optional<bool> persistence_mode;
  std::optional<bool> ecc_enabled;
  std::optional<unsigned> slowdown_temp_celsius;
  std::optional<unsigned> shutdown_temp_celsius;
  // NVML's return code when the GPU's handle could not be had at discovery (e.g. 15, GPU is lost): its
  // identity above is then unknown, and views say why rather than "[Unknown]" or "[N/A]". 0 otherwise.
  int discovery_error = 0;

  // "nvidia<minor>", dcgm-exporter's `device` label; empty when the minor number is unknown.
  std::string device_name() const;
};

struct SystemInfo {
  std::string library_path;  // the NVML library file actually loaded (resolved, not the name asked for)
  bool simulated = false;    // the library is gpuscope's simulator
  std::string driver_version;
  std::string nvml_version;
  std::optional<int> cuda_driver_version;  // 13000 = 13.0
  std::string hostname;

  // "13.0", or empty.
  std::string cuda_version_string() const;
};

// Human name of NVML's architecture enum ("Hopper"), "Unknown" for values it does not know.
std::string architecture_name(unsigned arch);

}  // namespace gpuscope::model
