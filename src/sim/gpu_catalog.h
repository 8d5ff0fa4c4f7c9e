// The GPU models the simulator can play, with the spec-sheet numbers the physics and the static
// identity answers come from (shared/reference/metrics-and-catalog.md, plus public datasheets).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gpuscope::sim {

struct GpuModel {
  std::string_view name;  // exactly what nvmlDeviceGetName answers
  unsigned architecture;  // nvmlDeviceArchitecture_enum value
  int cc_major, cc_minor;
  std::uint64_t memory_mib;
  std::uint64_t reserved_mib;  // driver/firmware reservation that memory_v2 reports apart
  std::uint64_t bar1_mib;
  double tdp_w;        // default and maximum power limit
  double min_limit_w;  // lowest power limit the board accepts
  double idle_w;          // parked: no process holds a context, clocks at idle
  double context_idle_w;  // nothing running but a process holds a CUDA context (clocks stay up, P0)
  unsigned max_sm_mhz, max_mem_mhz, max_video_mhz;
  unsigned idle_sm_mhz, idle_mem_mhz;
  unsigned pcie_gen, pcie_width;
  unsigned sm_count, cores_per_sm;
  bool gpm;         // GPU Performance Monitoring: Hopper and newer
  bool sxm;         // SXM module on a baseboard (no fan of its own)
  bool fan;         // a fan NVML can read; false for SXM and passively cooled PCIe boards
  bool hbm;         // HBM reports a memory temperature; GDDR boards do not
  unsigned nvlink_links;
  double nvlink_mibps;  // one direction, per GPU, under an all-reduce heavy training load
  unsigned slowdown_c, shutdown_c, gpu_max_c, mem_max_c;
  // Steady die temperature at idle_w and at TDP under nominal cooling (the physics draws a line
  // through them), and where the driver starts its software thermal slowdown.
  double idle_temp_c, tdp_temp_c, soft_throttle_c;
  std::uint32_t pci_device_id;     // (device << 16) | vendor, as nvmlPciInfo_t.pciDeviceId
  std::uint32_t pci_subsystem_id;
  std::string_view board_part_number;
  std::string_view vbios_version;
  std::string_view serial_prefix;
  unsigned max_mig_devices;  // 0: no MIG

  bool has_row_remapping() const;  // Ampere and newer
  bool has_page_retirement() const;  // Volta and Turing; superseded by row remapping
};

std::span<const GpuModel> gpu_catalog();
const GpuModel* find_gpu_model(std::string_view name);
// "NVIDIA H100 80GB HBM3, NVIDIA H200, ..." for error messages.
std::string gpu_model_names();

}  // namespace gpuscope::sim
