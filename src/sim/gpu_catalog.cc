#include "sim/gpu_catalog.h"

#include <array>

#include "nvml/nvml_abi.h"

namespace gpuscope::sim {
namespace {

// Idle power, thresholds and ids come from nvidia-smi -q of the real boards, rounded; they only
// need to be plausible and self-consistent. The H100's power, thermal and memory figures are measured
// (shared/reference/real-h100: 72 W parked, 130 W with a context, 480 MiB reserved, shutdown 95 °C,
// ~47 °C parked, ~82 °C steady at 700 W, software thermal slowdown from 79 °C); the H200 shares its
// cooling. The other boards' context power is the H100's ratio (1.8x parked idle), and their thermal
// line is the one the simulator used before the calibration (27 °C intercept, 68 °C at TDP for SXM,
// 76 °C for passive PCIe boards, slowdown 5 °C under the hardware threshold).
constexpr std::array<GpuModel, 8> kCatalog{{
    {.name = "NVIDIA H100 80GB HBM3", .architecture = NVML_DEVICE_ARCH_HOPPER, .cc_major = 9, .cc_minor = 0,
     .memory_mib = 81559, .reserved_mib = 480, .bar1_mib = 131072, .tdp_w = 700, .min_limit_w = 200, .idle_w = 72,
     .context_idle_w = 130,
     .max_sm_mhz = 1980, .max_mem_mhz = 2619, .max_video_mhz = 1545, .idle_sm_mhz = 345, .idle_mem_mhz = 2619,
     .pcie_gen = 5, .pcie_width = 16, .sm_count = 132, .cores_per_sm = 128, .gpm = true, .sxm = true, .fan = false,
     .hbm = true, .nvlink_links = 18, .nvlink_mibps = 60000, .slowdown_c = 89, .shutdown_c = 95, .gpu_max_c = 87,
     .mem_max_c = 95, .idle_temp_c = 47, .tdp_temp_c = 82, .soft_throttle_c = 79,
     .pci_device_id = 0x233010DE, .pci_subsystem_id = 0x16C110DE,
     .board_part_number = "695-2G520-0200-000", .vbios_version = "96.00.DA.00.0C", .serial_prefix = "165",
     .max_mig_devices = 7},
    {.name = "NVIDIA H200", .architecture = NVML_DEVICE_ARCH_HOPPER, .cc_major = 9, .cc_minor = 0,
     .memory_mib = 143771, .reserved_mib = 567, .bar1_mib = 262144, .tdp_w = 700, .min_limit_w = 200, .idle_w = 76,
     .context_idle_w = 137,
     .max_sm_mhz = 1980, .max_mem_mhz = 3201, .max_video_mhz = 1755, .idle_sm_mhz = 345, .idle_mem_mhz = 3201,
     .pcie_gen = 5, .pcie_width = 16, .sm_count = 132, .cores_per_sm = 128, .gpm = true, .sxm = true, .fan = false,
     .hbm = true, .nvlink_links = 18, .nvlink_mibps = 64000, .slowdown_c = 89, .shutdown_c = 92, .gpu_max_c = 87,
     .mem_max_c = 95, .idle_temp_c = 47, .tdp_temp_c = 82, .soft_throttle_c = 79,
     .pci_device_id = 0x233510DE, .pci_subsystem_id = 0x18BE10DE,
     .board_part_number = "692-2G520-0280-000", .vbios_version = "96.00.A5.00.01", .serial_prefix = "165",
     .max_mig_devices = 7},
    {.name = "NVIDIA A100-SXM4-80GB", .architecture = NVML_DEVICE_ARCH_AMPERE, .cc_major = 8, .cc_minor = 0,
     .memory_mib = 81920, .reserved_mib = 512, .bar1_mib = 131072, .tdp_w = 400, .min_limit_w = 100, .idle_w = 58,
     .context_idle_w = 104,
     .max_sm_mhz = 1410, .max_mem_mhz = 1593, .max_video_mhz = 1290, .idle_sm_mhz = 210, .idle_mem_mhz = 1593,
     .pcie_gen = 4, .pcie_width = 16, .sm_count = 108, .cores_per_sm = 64, .gpm = false, .sxm = true, .fan = false,
     .hbm = true, .nvlink_links = 12, .nvlink_mibps = 30000, .slowdown_c = 89, .shutdown_c = 92, .gpu_max_c = 85,
     .mem_max_c = 95, .idle_temp_c = 32.9, .tdp_temp_c = 68, .soft_throttle_c = 84,
     .pci_device_id = 0x20B210DE, .pci_subsystem_id = 0x147F10DE,
     .board_part_number = "692-2G506-0210-002", .vbios_version = "92.00.36.00.02", .serial_prefix = "132",
     .max_mig_devices = 7},
    {.name = "NVIDIA A100-PCIE-40GB", .architecture = NVML_DEVICE_ARCH_AMPERE, .cc_major = 8, .cc_minor = 0,
     .memory_mib = 40960, .reserved_mib = 448, .bar1_mib = 65536, .tdp_w = 250, .min_limit_w = 150, .idle_w = 35,
     .context_idle_w = 63,
     .max_sm_mhz = 1410, .max_mem_mhz = 1215, .max_video_mhz = 1290, .idle_sm_mhz = 210, .idle_mem_mhz = 1215,
     .pcie_gen = 4, .pcie_width = 16, .sm_count = 108, .cores_per_sm = 64, .gpm = false, .sxm = false,
     .fan = false, .hbm = true, .nvlink_links = 0, .nvlink_mibps = 0, .slowdown_c = 89, .shutdown_c = 92,
     .gpu_max_c = 85, .mem_max_c = 95,
     .idle_temp_c = 33.9, .tdp_temp_c = 76, .soft_throttle_c = 84,
     .pci_device_id = 0x20F110DE, .pci_subsystem_id = 0x145F10DE,
     .board_part_number = "900-21001-0000-000", .vbios_version = "92.00.25.00.08", .serial_prefix = "132",
     .max_mig_devices = 7},
    {.name = "NVIDIA L4", .architecture = NVML_DEVICE_ARCH_ADA, .cc_major = 8, .cc_minor = 9, .memory_mib = 23034,
     .reserved_mib = 432, .bar1_mib = 32768, .tdp_w = 72, .min_limit_w = 40, .idle_w = 16,
     .context_idle_w = 29,
     .max_sm_mhz = 2040,
     .max_mem_mhz = 6251, .max_video_mhz = 1770, .idle_sm_mhz = 210, .idle_mem_mhz = 405, .pcie_gen = 4,
     .pcie_width = 16, .sm_count = 58, .cores_per_sm = 128, .gpm = false, .sxm = false, .fan = false, .hbm = false,
     .nvlink_links = 0, .nvlink_mibps = 0, .slowdown_c = 92, .shutdown_c = 95, .gpu_max_c = 87, .mem_max_c = 0,
     .idle_temp_c = 37.9, .tdp_temp_c = 76, .soft_throttle_c = 87,
     .pci_device_id = 0x27B810DE, .pci_subsystem_id = 0x16CA10DE, .board_part_number = "900-2G193-0000-001",
     .vbios_version = "95.04.29.00.01", .serial_prefix = "156", .max_mig_devices = 0},
    {.name = "NVIDIA A10G", .architecture = NVML_DEVICE_ARCH_AMPERE, .cc_major = 8, .cc_minor = 6,
     .memory_mib = 23028, .reserved_mib = 420, .bar1_mib = 32768, .tdp_w = 300, .min_limit_w = 100, .idle_w = 25,
     .context_idle_w = 45,
     .max_sm_mhz = 1710, .max_mem_mhz = 6251, .max_video_mhz = 1500, .idle_sm_mhz = 210, .idle_mem_mhz = 405,
     .pcie_gen = 4, .pcie_width = 16, .sm_count = 80, .cores_per_sm = 128, .gpm = false, .sxm = false, .fan = true,
     .hbm = false, .nvlink_links = 0, .nvlink_mibps = 0, .slowdown_c = 95, .shutdown_c = 98, .gpu_max_c = 88,
     .mem_max_c = 0, .idle_temp_c = 31.1, .tdp_temp_c = 76, .soft_throttle_c = 90,
     .pci_device_id = 0x223710DE, .pci_subsystem_id = 0x152F10DE,
     .board_part_number = "900-2G133-A840-000", .vbios_version = "94.02.75.00.01", .serial_prefix = "132",
     .max_mig_devices = 0},
    {.name = "Tesla T4", .architecture = NVML_DEVICE_ARCH_TURING, .cc_major = 7, .cc_minor = 5, .memory_mib = 15360,
     .reserved_mib = 256, .bar1_mib = 256, .tdp_w = 70, .min_limit_w = 60, .idle_w = 10,
     .context_idle_w = 18,
     .max_sm_mhz = 1590,
     .max_mem_mhz = 5001, .max_video_mhz = 1470, .idle_sm_mhz = 300, .idle_mem_mhz = 405, .pcie_gen = 3,
     .pcie_width = 16, .sm_count = 40, .cores_per_sm = 64, .gpm = false, .sxm = false, .fan = false, .hbm = false,
     .nvlink_links = 0, .nvlink_mibps = 0, .slowdown_c = 93, .shutdown_c = 96, .gpu_max_c = 85, .mem_max_c = 0,
     .idle_temp_c = 34, .tdp_temp_c = 76, .soft_throttle_c = 88,
     .pci_device_id = 0x1EB810DE, .pci_subsystem_id = 0x12A210DE, .board_part_number = "900-2G183-0000-001",
     .vbios_version = "90.04.96.00.02", .serial_prefix = "132", .max_mig_devices = 0},
    {.name = "Tesla V100-SXM2-32GB", .architecture = NVML_DEVICE_ARCH_VOLTA, .cc_major = 7, .cc_minor = 0,
     .memory_mib = 32768, .reserved_mib = 0, .bar1_mib = 32768, .tdp_w = 300, .min_limit_w = 150, .idle_w = 42,
     .context_idle_w = 76,
     .max_sm_mhz = 1530, .max_mem_mhz = 877, .max_video_mhz = 1372, .idle_sm_mhz = 135, .idle_mem_mhz = 877,
     .pcie_gen = 3, .pcie_width = 16, .sm_count = 80, .cores_per_sm = 64, .gpm = false, .sxm = true, .fan = false,
     .hbm = true, .nvlink_links = 6, .nvlink_mibps = 20000, .slowdown_c = 87, .shutdown_c = 90, .gpu_max_c = 83,
     .mem_max_c = 85, .idle_temp_c = 32.7, .tdp_temp_c = 68, .soft_throttle_c = 82,
     .pci_device_id = 0x1DB510DE, .pci_subsystem_id = 0x124910DE,
     .board_part_number = "900-2G503-0430-000", .vbios_version = "88.00.80.00.01", .serial_prefix = "032",
     .max_mig_devices = 0},
}};

}  // namespace

bool GpuModel::has_row_remapping() const { return architecture >= NVML_DEVICE_ARCH_AMPERE; }
bool GpuModel::has_page_retirement() const {
  return architecture == NVML_DEVICE_ARCH_VOLTA || architecture == NVML_DEVICE_ARCH_TURING;
}

std::span<const GpuModel> gpu_catalog() { return kCatalog; }

const GpuModel* find_gpu_model(std::string_view name) {
  for (const GpuModel& m : kCatalog) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string gpu_model_names() {
  std::string out;
  for (const GpuModel& m : kCatalog) {
    if (!out.empty()) out += ", ";
    out += m.name;
  }
  return out;
}

}  // namespace gpuscope::sim
