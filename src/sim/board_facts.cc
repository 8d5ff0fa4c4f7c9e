#include "sim/board_facts.h"

#include <utility>

#include "nvml/nvml_abi.h"

namespace gpuscope::sim {
namespace {

constexpr unsigned kBrandTesla = 2;    // NVML_BRAND_TESLA: the Volta/Turing data-center boards
constexpr unsigned kBrandNvidia = 14;  // NVML_BRAND_NVIDIA: what the driver calls Ampere and newer ones

// By exact model name (gpu_catalog.cc). Row-remapper banks: the H100's 2560 is measured; the H200's
// scales with its six HBM3e stacks, the A100's 640 is what nvidia-smi -q prints on A100 boards, and the
// GDDR boards' figure is a plausible one.
constexpr std::pair<std::string_view, BoardFacts> kFacts[] = {
    {"NVIDIA H100 80GB HBM3",
     {.inforom_image = "G520.0200.00.05", .inforom_oem = "2.1", .inforom_ecc = "7.16", .memory_bus_width = 5120,
      .memory_clocks = {2619, 1593}, .brand = kBrandNvidia, .row_remap_banks = 2560, .fans = 0, .sram_ecc = true,
      .jpg_engines = 7, .ofa_engines = 1, .resetless_mig = true, .video_app_clock = false}},
    {"NVIDIA H200",
     {.inforom_image = "G525.0200.00.03", .inforom_oem = "2.1", .inforom_ecc = "7.16", .memory_bus_width = 6144,
      .memory_clocks = {3201, 1593}, .brand = kBrandNvidia, .row_remap_banks = 3072, .fans = 0, .sram_ecc = true,
      .jpg_engines = 7, .ofa_engines = 1, .resetless_mig = true, .video_app_clock = false}},
    {"NVIDIA A100-SXM4-80GB",
     {.inforom_image = "G506.0210.00.04", .inforom_oem = "2.0", .inforom_ecc = "6.16", .memory_bus_width = 5120,
      .memory_clocks = {1593}, .brand = kBrandNvidia, .row_remap_banks = 640, .fans = 0, .sram_ecc = true,
      .jpg_engines = 1, .ofa_engines = 1, .resetless_mig = false, .video_app_clock = true}},
    {"NVIDIA A100-PCIE-40GB",
     {.inforom_image = "G500.0202.00.02", .inforom_oem = "2.0", .inforom_ecc = "6.16", .memory_bus_width = 5120,
      .memory_clocks = {1215}, .brand = kBrandNvidia, .row_remap_banks = 640, .fans = 0, .sram_ecc = true,
      .jpg_engines = 1, .ofa_engines = 1, .resetless_mig = false, .video_app_clock = true}},
    {"NVIDIA L4",
     {.inforom_image = "G193.0200.00.01", .inforom_oem = "2.1", .inforom_ecc = "6.16", .memory_bus_width = 192,
      .memory_clocks = {6251, 405}, .brand = kBrandNvidia, .row_remap_banks = 192, .fans = 0, .sram_ecc = true,
      .jpg_engines = 4, .ofa_engines = 1, .resetless_mig = false, .video_app_clock = true}},
    {"NVIDIA A10G",
     {.inforom_image = "G133.0210.00.01", .inforom_oem = "2.0", .inforom_ecc = "6.16", .memory_bus_width = 384,
      .memory_clocks = {6251, 405}, .brand = kBrandNvidia, .row_remap_banks = 192, .fans = 1, .sram_ecc = true,
      .jpg_engines = 0, .ofa_engines = 1, .resetless_mig = false, .video_app_clock = true}},
    {"Tesla T4",
     {.inforom_image = "G183.0200.00.02", .inforom_oem = "1.1", .inforom_ecc = "5.0", .memory_bus_width = 256,
      .memory_clocks = {5001, 405}, .brand = kBrandTesla, .row_remap_banks = 0, .fans = 0, .sram_ecc = false,
      .jpg_engines = 0, .ofa_engines = 0, .resetless_mig = false, .video_app_clock = true}},
    {"Tesla V100-SXM2-32GB",
     {.inforom_image = "G503.0203.00.04", .inforom_oem = "1.1", .inforom_ecc = "5.0", .memory_bus_width = 4096,
      .memory_clocks = {877}, .brand = kBrandTesla, .row_remap_banks = 0, .fans = 0, .sram_ecc = false,
      .jpg_engines = 0, .ofa_engines = 0, .resetless_mig = false, .video_app_clock = true}},
};

// A model the table lacks (a catalog entry added later) answers like a generic data-center board.
constexpr BoardFacts kGeneric{.inforom_image = "G500.0200.00.01", .inforom_oem = "2.0", .inforom_ecc = "6.16",
                              .memory_bus_width = 4096, .memory_clocks = {0}, .brand = kBrandNvidia,
                              .row_remap_banks = 0, .fans = 0, .sram_ecc = true, .jpg_engines = 0,
                              .ofa_engines = 0, .resetless_mig = false, .video_app_clock = true};

}  // namespace

const BoardFacts& board_facts(const GpuModel& model) {
  for (const auto& [name, facts] : kFacts) {
    if (name == model.name) return facts;
  }
  return kGeneric;
}

unsigned pcie_max_speed_enum(unsigned gen) { return gen == 0 ? 0 : gen <= 5 ? gen : 6; }

unsigned pcie_speed_mbps(unsigned gen) {
  switch (gen) {
    case 1: return 2500;
    case 2: return 5000;
    case 3: return 8000;
    case 4: return 16000;
    case 5: return 32000;
    default: return gen > 5 ? 64000 : 0;
  }
}

}  // namespace gpuscope::sim
