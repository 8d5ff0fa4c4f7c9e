#include "model/field_catalog.h"

#include <utility>

namespace gpuscope::model {
namespace {

using enum FieldId;
using enum MetricType;
using enum SmiFormat;

// clang-format off
constexpr std::array<FieldDef, kFieldCount> kFields{{
  // id, key, dcgm_name, dcgm_id, smi_name, unit, smi_unit, smi_format, type, dcgm_default, help
  {kSmClock, "sm_clock_mhz", "DCGM_FI_DEV_SM_CLOCK", 100, "clocks.current.sm", "MHz", "MHz", kInteger, kGauge, true,
   "SM clock frequency (in MHz)."},
  {kMemClock, "mem_clock_mhz", "DCGM_FI_DEV_MEM_CLOCK", 101, "clocks.current.memory", "MHz", "MHz", kInteger, kGauge, true,
   "Memory clock frequency (in MHz)."},
  {kGraphicsClock, "graphics_clock_mhz", "", 0, "clocks.current.graphics", "MHz", "MHz", kInteger, kGauge, false,
   "Graphics clock frequency (in MHz)."},
  {kVideoClock, "video_clock_mhz", "DCGM_FI_DEV_VIDEO_CLOCK", 102, "clocks.current.video", "MHz", "MHz", kInteger, kGauge, false,
   "Video encoder/decoder clock frequency (in MHz)."},
  {kMaxSmClock, "max_sm_clock_mhz", "DCGM_FI_DEV_MAX_SM_CLOCK", 113, "clocks.max.sm", "MHz", "MHz", kInteger, kGauge,
   true, "Maximum SM clock frequency (in MHz)."},
  {kMaxMemClock, "max_mem_clock_mhz", "DCGM_FI_DEV_MAX_MEM_CLOCK", 114, "clocks.max.memory", "MHz", "MHz", kInteger,
   kGauge, false, "Maximum memory clock frequency (in MHz)."},
  {kMaxGraphicsClock, "max_graphics_clock_mhz", "", 0, "clocks.max.graphics", "MHz", "MHz", kInteger, kGauge, false,
   "Maximum graphics clock frequency (in MHz)."},
  {kMemoryTemp, "memory_temp_celsius", "DCGM_FI_DEV_MEMORY_TEMP", 140, "temperature.memory", "C", "", kInteger,
   kGauge, true, "Memory (HBM) temperature (in C)."},
  {kGpuTemp, "gpu_temp_celsius", "DCGM_FI_DEV_GPU_TEMP", 150, "temperature.gpu", "C", "", kInteger, kGauge, true,
   "GPU temperature (in C)."},
  {kSlowdownTemp, "slowdown_temp_celsius", "DCGM_FI_DEV_SLOWDOWN_TEMP", 158, "", "C",
   "", kInteger, kGauge, true, "Temperature at which the GPU starts to slow its clocks (in C)."},
  {kShutdownTemp, "shutdown_temp_celsius", "DCGM_FI_DEV_SHUTDOWN_TEMP", 159, "", "C",
   "", kInteger, kGauge, false, "Temperature at which the GPU shuts down (in C)."},
  {kPowerUsage, "power_usage_watts", "DCGM_FI_DEV_POWER_USAGE", 155, "power.draw", "W", "W", kFixed2, kGauge, true,
   "Power draw (in W)."},
  {kPowerLimit, "power_limit_watts", "DCGM_FI_DEV_POWER_MGMT_LIMIT", 160, "power.limit", "W", "W", kFixed2, kGauge,
   false, "Power management limit (in W)."},
  {kEnforcedPowerLimit, "enforced_power_limit_watts", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 164, "enforced.power.limit",
   "W", "W", kFixed2, kGauge, true, "Power limit the driver enforces, the lowest of all limits (in W)."},
  {kTotalEnergy, "total_energy_mj", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156, "", "mJ", "", kInteger, kCounter,
   true, "Total energy consumption since the driver was loaded (in mJ)."},
  {kPcieReplay, "pcie_replay_total", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 202, "", "count", "",
   kInteger, kCounter, true, "Total number of PCIe retries."},
  {kGpuUtil, "gpu_util_percent", "DCGM_FI_DEV_GPU_UTIL", 203, "utilization.gpu", "%", "%", kInteger, kGauge, true,
   "GPU utilization: share of time a kernel was running (in %)."},
  {kMemCopyUtil, "mem_copy_util_percent", "DCGM_FI_DEV_MEM_COPY_UTIL", 204, "utilization.memory", "%", "%", kInteger,
   kGauge, true, "Memory utilization: share of time device memory was read or written (in %)."},
  {kEncUtil, "enc_util_percent", "DCGM_FI_DEV_ENC_UTIL", 206, "utilization.encoder", "%", "%", kInteger, kGauge, true,
   "Encoder utilization (in %)."},
  {kDecUtil, "dec_util_percent", "DCGM_FI_DEV_DEC_UTIL", 207, "utilization.decoder", "%", "%", kInteger, kGauge, true,
   "Decoder utilization (in %)."},
  {kXidErrors, "xid_last", "DCGM_FI_DEV_XID_ERRORS", 230, "", "xid", "", kInteger, kGauge, true,
   "Value of the last XID error seen."},
  {kPowerViolation, "power_violation_ns", "DCGM_FI_DEV_POWER_VIOLATION", 240, "", "ns", "", kInteger, kCounter, true,
   "Time the clocks were held down by the power limit.", 1000},
  {kThermalViolation, "thermal_violation_ns", "DCGM_FI_DEV_THERMAL_VIOLATION", 241, "", "ns", "", kInteger, kCounter,
   true, "Time the clocks were held down by the thermal limit.", 1000},
  {kSyncBoostViolation, "sync_boost_violation_ns", "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", 242, "", "ns", "", kInteger,
   kCounter, true, "Time the clocks were held down by sync boost.", 1000},
  {kBoardLimitViolation, "board_limit_violation_ns", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", 243, "", "ns", "", kInteger,
   kCounter, true, "Time the clocks were held down by the board limit.", 1000},
  {kLowUtilViolation, "low_util_violation_ns", "DCGM_FI_DEV_LOW_UTIL_VIOLATION", 244, "", "ns", "", kInteger,
   kCounter, true, "Time the clocks were held down by low utilization.", 1000},
  {kReliabilityViolation, "reliability_violation_ns", "DCGM_FI_DEV_RELIABILITY_VIOLATION", 245, "", "ns", "",
   kInteger, kCounter, true, "Time the clocks were held down by the board reliability limit.", 1000},
  {kFbTotal, "fb_total_mib", "DCGM_FI_DEV_FB_TOTAL", 250, "memory.total", "MiB", "MiB", kInteger, kGauge, false,
   "Total framebuffer memory (in MiB)."},
  {kFbFree, "fb_free_mib", "DCGM_FI_DEV_FB_FREE", 251, "memory.free", "MiB", "MiB", kInteger, kGauge, true,
   "Framebuffer memory free (in MiB)."},
  {kFbUsed, "fb_used_mib", "DCGM_FI_DEV_FB_USED", 252, "memory.used", "MiB", "MiB", kInteger, kGauge, true,
   "Framebuffer memory used (in MiB)."},
  {kFbReserved, "fb_reserved_mib", "DCGM_FI_DEV_FB_RESERVED", 253, "memory.reserved", "MiB", "MiB", kInteger, kGauge,
   false, "Framebuffer memory reserved by the driver and firmware (in MiB)."},
  {kBar1Used, "bar1_used_mib", "DCGM_FI_DEV_BAR1_USED", 92, "", "MiB", "MiB", kInteger, kGauge, false,
   "BAR1 memory used (in MiB)."},
  {kEccSbeVolTotal, "ecc_sbe_volatile_total", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 310,
   "ecc.errors.corrected.volatile.total", "count", "", kInteger, kCounter, true,
   "Single-bit (corrected) ECC errors since the driver was loaded."},
  {kEccDbeVolTotal, "ecc_dbe_volatile_total", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 311,
   "ecc.errors.uncorrected.volatile.total", "count", "", kInteger, kCounter, true,
   "Double-bit (uncorrected) ECC errors since the driver was loaded."},
  {kEccSbeAggTotal, "ecc_sbe_aggregate_total", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 312,
   "ecc.errors.corrected.aggregate.total", "count", "", kInteger, kCounter, true,
   "Single-bit (corrected) ECC errors over the GPU's lifetime."},
  {kEccDbeAggTotal, "ecc_dbe_aggregate_total", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 313,
   "ecc.errors.uncorrected.aggregate.total", "count", "", kInteger, kCounter, true,
   "Double-bit (uncorrected) ECC errors over the GPU's lifetime."},
  {kRetiredSbe, "retired_pages_sbe", "DCGM_FI_DEV_RETIRED_SBE", 390, "retired_pages.single_bit_ecc.count", "count",
   "", kInteger, kCounter, false, "Pages retired after multiple single-bit ECC errors."},
  {kRetiredDbe, "retired_pages_dbe", "DCGM_FI_DEV_RETIRED_DBE", 391, "retired_pages.double_bit.count", "count", "",
   kInteger, kCounter, false, "Pages retired after a double-bit ECC error."},
  {kRetiredPending, "retired_pages_pending", "DCGM_FI_DEV_RETIRED_PENDING", 392, "retired_pages.pending", "count", "",
   kInteger, kGauge, false, "Pages waiting to be retired at the next driver reload (1 if any)."},
  {kUncorrectableRemappedRows, "remapped_rows_uncorrectable", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 393,
   "remapped_rows.uncorrectable", "count", "", kInteger, kCounter, true,
   "Rows remapped after uncorrectable errors."},
  {kCorrectableRemappedRows, "remapped_rows_correctable", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 394,
   "remapped_rows.correctable", "count", "", kInteger, kCounter, true, "Rows remapped after correctable errors."},
  {kRowRemapFailure, "row_remap_failure", "DCGM_FI_DEV_ROW_REMAP_FAILURE", 395, "remapped_rows.failure", "bool", "",
   kYesNo, kGauge, true, "Whether a row remapping has failed (1) or not (0)."},
  {kRowRemapPending, "row_remap_pending", "DCGM_FI_DEV_ROW_REMAP_PENDING", 396, "remapped_rows.pending", "bool", "",
   kYesNo, kGauge, false, "Whether a row remapping waits for a GPU reset (1) or not (0)."},
  {kNvlinkBandwidthTotal, "nvlink_bandwidth_total_kib", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449, "", "KiB", "",
   kInteger, kCounter, true, "NVLink data transmitted and received over all links (in KiB)."},
  {kGrEngineActive, "gr_engine_active_ratio", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001, "", "ratio", "", kFixed2, kGauge,
   true, "Ratio of time the graphics engine was active."},
  {kSmActive, "sm_active_ratio", "DCGM_FI_PROF_SM_ACTIVE", 1002, "", "ratio", "", kFixed2, kGauge, true,
   "Ratio of cycles at least one warp was resident on an SM, averaged over all SMs."},
  {kSmOccupancy, "sm_occupancy_ratio", "DCGM_FI_PROF_SM_OCCUPANCY", 1003, "", "ratio", "", kFixed2, kGauge, true,
   "Ratio of resident warps to the maximum an SM holds, averaged over all SMs."},
  {kPipeTensorActive, "pipe_tensor_active_ratio", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004, "", "ratio", "", kFixed2,
   kGauge, true, "Ratio of cycles any tensor pipe was active."},
  {kDramActive, "dram_active_ratio", "DCGM_FI_PROF_DRAM_ACTIVE", 1005, "", "ratio", "", kFixed2, kGauge, true,
   "Ratio of cycles the device memory interface was sending or receiving data."},
  {kPipeFp64Active, "pipe_fp64_active_ratio", "DCGM_FI_PROF_PIPE_FP64_ACTIVE", 1006, "", "ratio", "", kFixed2, kGauge,
   true, "Ratio of cycles the FP64 pipe was active."},
  {kPipeFp32Active, "pipe_fp32_active_ratio", "DCGM_FI_PROF_PIPE_FP32_ACTIVE", 1007, "", "ratio", "", kFixed2, kGauge,
   true, "Ratio of cycles the FP32 pipe was active."},
  {kPipeFp16Active, "pipe_fp16_active_ratio", "DCGM_FI_PROF_PIPE_FP16_ACTIVE", 1008, "", "ratio", "", kFixed2, kGauge,
   true, "Ratio of cycles the FP16 pipe was active."},
  {kPcieTxBytes, "pcie_tx_bytes_per_second", "DCGM_FI_PROF_PCIE_TX_BYTES", 1009, "", "B/s", "", kInteger, kGauge,
   true, "PCIe bytes transmitted per second, headers and payload."},
  {kPcieRxBytes, "pcie_rx_bytes_per_second", "DCGM_FI_PROF_PCIE_RX_BYTES", 1010, "", "B/s", "", kInteger, kGauge,
   true, "PCIe bytes received per second, headers and payload."},
  {kNvlinkTxBytes, "nvlink_tx_bytes_per_second", "DCGM_FI_PROF_NVLINK_TX_BYTES", 1011, "", "B/s", "", kInteger,
   kGauge, false, "NVLink bytes transmitted per second."},
  {kNvlinkRxBytes, "nvlink_rx_bytes_per_second", "DCGM_FI_PROF_NVLINK_RX_BYTES", 1012, "", "B/s", "", kInteger,
   kGauge, false, "NVLink bytes received per second."},
  {kPcieTxThroughput, "pcie_tx_throughput_kbps", "", 0, "", "KB/s", "", kInteger, kGauge, false,
   "PCIe transmit throughput over the driver's last ~20 ms window (in KB/s)."},
  {kPcieRxThroughput, "pcie_rx_throughput_kbps", "", 0, "", "KB/s", "", kInteger, kGauge, false,
   "PCIe receive throughput over the driver's last ~20 ms window (in KB/s)."},
  {kFanSpeed, "fan_speed_percent", "DCGM_FI_DEV_FAN_SPEED", 191, "fan.speed", "%", "%", kInteger, kGauge, false,
   "Fan speed as a share of its maximum (in %)."},
  {kPstate, "pstate", "DCGM_FI_DEV_PSTATE", 190, "pstate", "pstate", "", kPstateName, kGauge, false,
   "Performance state, 0 (P0, fastest) to 15."},
  {kPcieLinkGenCurrent, "pcie_link_gen_current", "DCGM_FI_DEV_PCIE_LINK_GEN", 237, "pcie.link.gen.current", "gen", "",
   kInteger, kGauge, false, "Current PCIe link generation."},
  {kPcieLinkGenMax, "pcie_link_gen_max", "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", 235, "pcie.link.gen.max", "gen", "",
   kInteger, kGauge, false, "Maximum PCIe link generation of the GPU and its slot."},
  {kPcieLinkWidthCurrent, "pcie_link_width_current", "DCGM_FI_DEV_PCIE_LINK_WIDTH", 238, "pcie.link.width.current",
   "lanes", "", kInteger, kGauge, false, "Current PCIe link width (lanes)."},
  {kPcieLinkWidthMax, "pcie_link_width_max", "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 236, "pcie.link.width.max", "lanes",
   "", kInteger, kGauge, false, "Maximum PCIe link width (lanes)."},
  {kClocksEventReasons, "clocks_event_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112,
   "clocks_event_reasons.active", "bitmask", "", kHex64, kGauge, false,
   "Bit mask of the reasons the clocks are held below their maximum."},
}};
// clang-format on

constexpr bool ids_match_positions() {
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    if (index_of(kFields[i].id) != i) return false;
  }
  return true;
}
static_assert(ids_match_positions(), "kFields rows must be in FieldId order");

}  // namespace

std::span<const FieldDef> FieldCatalog::all() { return kFields; }

const FieldDef& FieldCatalog::get(FieldId id) { return kFields[index_of(id)]; }

std::optional<FieldId> FieldCatalog::by_smi_name(std::string_view name) {
  for (const auto& f : kFields) {
    if (!f.smi_name.empty() && f.smi_name == name) return f.id;
  }
  return std::nullopt;
}

namespace {
// Scripts in the wild use every one of these spellings.
constexpr std::pair<std::string_view, std::string_view> kSmiAliases[] = {
    {"gpu_name", "name"},
    {"gpu_uuid", "uuid"},
    {"gpu_serial", "serial"},
    {"gpu_bus_id", "pci.bus_id"},
    // nvidia-smi 580 names the clocks clocks.current.* and prints that name for either spelling.
    {"clocks.sm", "clocks.current.sm"},
    {"clocks.mem", "clocks.current.memory"},
    {"clocks.gr", "clocks.current.graphics"},
    {"clocks.video", "clocks.current.video"},
    {"clocks.max.mem", "clocks.max.memory"},
    {"clocks.max.gr", "clocks.max.graphics"},
    {"clocks_throttle_reasons.active", "clocks_event_reasons.active"},
};
}  // namespace

std::string_view FieldCatalog::canonical_smi_name(std::string_view name) {
  for (const auto& [alias, real] : kSmiAliases) {
    if (alias == name) return real;
  }
  return name;
}

std::span<const std::pair<std::string_view, std::string_view>> FieldCatalog::smi_aliases() { return kSmiAliases; }

std::optional<FieldId> FieldCatalog::by_dcgm_name(std::string_view name) {
  for (const auto& f : kFields) {
    if (!f.dcgm_name.empty() && f.dcgm_name == name) return f.id;
  }
  return std::nullopt;
}

std::optional<FieldId> FieldCatalog::by_key(std::string_view key) {
  for (const auto& f : kFields) {
    if (f.key == key) return f.id;
  }
  return std::nullopt;
}

}  // namespace gpuscope::model
