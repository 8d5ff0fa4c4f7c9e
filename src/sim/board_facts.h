// What a board answers beyond the spec-sheet catalog (gpu_catalog.h): InfoROM versions, memory bus,
// supported memory clocks, engines, the row remapper's bank count, and which NVML queries the board
// supports at all. The H100's figures are the real driver's answers
// (shared/reference/real-h100/nvml_answers.json, nvidia-smi-q.txt); the other boards' come from their
// public datasheets and nvidia-smi -q, and only need to be plausible.
#pragma once

#include <array>
#include <string_view>

#include "sim/gpu_catalog.h"

namespace gpuscope::sim {

struct BoardFacts {
  std::string_view inforom_image;  // nvmlDeviceGetInforomImageVersion
  std::string_view inforom_oem, inforom_ecc;  // InforomVersion(OEM), (ECC); (POWER) is never there
  unsigned memory_bus_width;  // bits
  std::array<unsigned, 4> memory_clocks;  // nvmlDeviceGetSupportedMemoryClocks, highest first; 0 ends
  unsigned brand;  // nvmlBrandType_t
  unsigned row_remap_banks;  // nvmlDeviceGetRowRemapperHistogram max; 0: no row remapper
  unsigned fans;  // nvmlDeviceGetNumFans
  bool sram_ecc;  // ECC counted by location SRAM/DRAM (Hopper, Ampere, Ada); else by L1/L2/device
  unsigned jpg_engines, ofa_engines;  // NVJPG and OFA engines (nvidia-smi's JPEG and OFA utilization)
  bool resetless_mig;  // NVML_FI_DEV_IS_RESETLESS_MIG_SUPPORTED
  bool video_app_clock;  // ApplicationsClock(VIDEO) answers; Hopper's driver says NOT_SUPPORTED
};

const BoardFacts& board_facts(const GpuModel& model);

// NVML_PCIE_LINK_MAX_SPEED_* of a PCIe generation (gen 5: 5 = 32000 MB/s) and the per-lane speed
// nvmlDeviceGetPcieSpeed answers (MB/s).
unsigned pcie_max_speed_enum(unsigned gen);
unsigned pcie_speed_mbps(unsigned gen);

}  // namespace gpuscope::sim
