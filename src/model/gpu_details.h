// What nvidia-smi shows of a GPU beyond the sampled field catalog: modes, PCI ids, InfoROM versions, ECC
// counts by location, application clocks, power limits' range, fabric and platform facts, JPEG/OFA
// utilization, confidential-compute memory. Read on demand (query's other --query-gpu names, query -q,
// dmon's jpg/ofa/ccpm columns), never by the agent's sampler: most of it never changes, and each is one
// more driver call per GPU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace gpuscope::model {

// One NVML answer: the value, or NVML's return code for why there is none (3 NOT_SUPPORTED, 2
// INVALID_ARGUMENT, 26 DEPRECATED, 13 FUNCTION_NOT_FOUND: the library lacks the symbol, or the
// answer was never asked for).
template <class T>
struct Answer {
  std::optional<T> value;
  int error = 13;
  bool ok() const { return value.has_value(); }
};

struct PciIds {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;
  std::uint32_t device = 0;
  std::uint32_t device_id = 0;     // nvmlPciInfo_t.pciDeviceId: device << 16 | vendor (0x233010DE)
  std::uint32_t subsystem_id = 0;  // pciSubSystemId
};

// Current and pending (or, for GSP, current and default) of a two-state setting; NVML's values as
// they are (1 enabled, 0 disabled; driver model and GPU operation mode: their enums).
struct ModePair {
  int current = 0;
  int other = 0;
};

// nvmlDeviceGetMemoryErrorCounter's locations, in nvidia-smi's column order.
enum class EccLocation : std::uint8_t { kDeviceMemory, kDram, kRegisterFile, kTextureMemory, kCbu, kSram };
inline constexpr std::size_t kEccLocationCount = 6;

// [uncorrected 0/1][aggregate 0/1][location].
using EccByLocation = std::array<std::array<std::array<Answer<std::uint64_t>, kEccLocationCount>, 2>, 2>;

struct SramEccStatus {
  std::uint64_t volatile_uncorrected_parity = 0;
  std::uint64_t volatile_uncorrected_secded = 0;
  std::uint64_t aggregate_uncorrected_parity = 0;
  std::uint64_t aggregate_uncorrected_secded = 0;
  std::uint64_t aggregate_bucket_sm = 0;
  std::uint64_t aggregate_bucket_mcu = 0;
  std::uint64_t aggregate_bucket_pcie = 0;
  std::uint64_t aggregate_bucket_other = 0;  // NVML's L2 and other buckets together, as nvidia-smi prints them
  bool threshold_exceeded = false;
};

struct RemapHistogram {
  std::uint32_t max = 0;
  std::uint32_t high = 0;
  std::uint32_t partial = 0;
  std::uint32_t low = 0;
  std::uint32_t none = 0;
};

struct RemapInactive {
  std::uint32_t correctable = 0;
  std::uint32_t uncorrectable = 0;
};

struct MemoryBytes {
  std::uint64_t total = 0;
  std::uint64_t used = 0;
  std::uint64_t free = 0;
};

struct FabricInfo {
  std::uint8_t state = 0;  // NVML_GPU_FABRIC_STATE_*
  int status = 0;          // an NVML return code, meaningful once state is COMPLETED
  std::uint32_t clique_id = 0;
  std::array<std::uint8_t, 16> cluster_uuid{};
  std::uint32_t health_mask = 0;
  std::uint8_t health_summary = 0;  // NVML_GPU_FABRIC_HEALTH_SUMMARY_*
};

struct PlatformInfo {
  std::string chassis_serial;  // up to 16 bytes, NUL-trimmed
  std::uint8_t slot = 0;
  std::uint8_t tray = 0;
  std::uint8_t host_id = 0;
  std::uint8_t peer_type = 0;
  std::uint8_t module_id = 0;
  std::array<std::uint8_t, 16> ib_guid{};
};

// Encoder or frame-buffer-capture sessions (nvmlDeviceGetEncoderStats, nvmlDeviceGetFBCStats): the
// active ones and their moving averages.
struct SessionStats {
  std::uint32_t sessions = 0;
  std::uint32_t average_fps = 0;
  std::uint32_t average_latency_us = 0;
};

struct PciClass {
  std::uint32_t base = 0;  // 0x3: display controller
  std::uint32_t sub = 0;   // 0x2: 3D controller
};

struct RepairStatus {
  bool channel_pending = false;
  bool tpc_pending = false;
};

// The clock event reason counters nvidia-smi prints (ns held back): sw power cap, sync boost, sw
// thermal, hw thermal, hw power brake (field ids 74, 76, 269, 270, 271).
inline constexpr std::size_t kClockEventCounterCount = 5;

struct GpuDetails {
  // PCI and the link.
  Answer<PciIds> pci;
  Answer<std::uint32_t> pcie_gen_current;
  Answer<std::uint32_t> pcie_gen_max;      // nvmlDeviceGetMaxPcieLinkGeneration: what GPU and system allow
  Answer<std::uint32_t> pcie_gen_gpu_max;  // nvmlDeviceGetGpuMaxPcieLinkGeneration: the GPU alone
  Answer<std::uint32_t> pcie_width_current;
  Answer<std::uint32_t> pcie_width_max;
  Answer<std::uint32_t> pcie_speed_mbps;  // nvmlDeviceGetPcieSpeed, per lane
  Answer<std::uint32_t> irq;
  Answer<PciClass> pci_class;                   // nvmlDeviceGetPciInfoExt
  Answer<std::uint64_t> pcie_replay_rollovers;  // field 95

  // Modes.
  Answer<int> display_mode;
  Answer<int> display_active;
  Answer<int> persistence_mode;
  Answer<int> compute_mode;
  Answer<int> accounting_mode;
  Answer<std::uint32_t> accounting_buffer_size;
  Answer<int> power_management_mode;
  Answer<std::uint32_t> addressing_mode;  // 0 none, 1 HMM, 2 ATS
  Answer<ModePair> driver_model;          // Windows only
  Answer<ModePair> gpu_operation_mode;
  Answer<ModePair> ecc_mode;
  Answer<int> ecc_default_mode;
  Answer<ModePair> mig_mode;
  Answer<ModePair> gsp_mode;  // current, default
  Answer<std::string> gsp_firmware_version;
  Answer<int> virtualization_mode;
  Answer<int> host_vgpu_mode;
  Answer<std::uint32_t> vgpu_homogeneous_placements;
  Answer<bool> c2c_enabled;                   // nvmlDeviceGetC2cModeInfoV
  Answer<std::uint64_t> pdi;                  // nvmlDeviceGetPdi: the per-device identifier
  Answer<std::uint32_t> capabilities;         // nvmlDeviceGetCapabilities: NVML_DEV_CAP_* bits (1: EGM)

  // Board.
  Answer<std::string> board_part_number;
  Answer<int> brand;
  Answer<std::uint32_t> board_id;
  Answer<std::uint32_t> multi_gpu_board;
  Answer<std::uint32_t> module_id;
  Answer<std::uint32_t> memory_bus_width;
  Answer<std::uint32_t> num_fans;
  Answer<std::uint32_t> numa_node;
  Answer<std::uint32_t> gpu_recovery_action;  // field 230: NVML_GPU_RECOVERY_ACTION_*

  // InfoROM.
  Answer<std::string> inforom_image;
  Answer<std::string> inforom_oem;
  Answer<std::string> inforom_ecc;
  Answer<std::string> inforom_power;
  Answer<std::uint32_t> inforom_checksum;
  int inforom_validation = 13;  // nvmlDeviceValidateInforom's code: 0 valid, 14 CORRUPTED_INFOROM, ...

  // Clocks.
  Answer<std::uint64_t> clocks_event_reasons_supported;
  Answer<std::uint64_t> clocks_event_reasons_active;
  std::array<Answer<std::uint64_t>, kClockEventCounterCount> clocks_event_ns;
  Answer<std::uint32_t> applications_clock_graphics;
  Answer<std::uint32_t> applications_clock_memory;
  Answer<std::uint32_t> default_applications_clock_graphics;
  Answer<std::uint32_t> default_applications_clock_memory;
  Answer<std::uint32_t> max_customer_boost_graphics;
  Answer<std::uint32_t> max_video_clock;  // nvmlDeviceGetMaxClockInfo(VIDEO), MHz

  // Utilization beyond the catalog.
  Answer<std::uint32_t> jpg_util;  // %
  Answer<std::uint32_t> ofa_util;  // %
  Answer<SessionStats> encoder_stats;
  Answer<SessionStats> fbc_stats;

  // ECC and row remapping.
  EccByLocation ecc_errors;
  Answer<SramEccStatus> sram_ecc;
  Answer<RemapHistogram> remap_histogram;
  Answer<RemapInactive> remap_inactive;
  Answer<RepairStatus> repair;                // nvmlDeviceGetRepairStatus
  Answer<bool> unrepairable_memory;           // nvmlDeviceGetUnrepairableMemoryFlag_v1

  // Temperature and power.
  Answer<int> temperature_margin;  // °C to the GPU's max operating temperature (temperature.gpu.tlimit)
  // The thresholds as °C relative to T.Limit (fields 193-196): shutdown, slowdown, memory max, GPU max.
  std::array<Answer<std::int64_t>, 4> temperature_tlimit;
  Answer<std::uint32_t> power_default_limit_mw;
  Answer<std::uint32_t> power_min_limit_mw;
  Answer<std::uint32_t> power_max_limit_mw;
  Answer<std::uint32_t> power_average_mw;  // field 185
  Answer<std::uint32_t> power_instant_mw;  // field 186
  // module.* (power of the whole module, field values with scope NVML_POWER_SCOPE_MODULE).
  Answer<std::uint32_t> module_power_average_mw;
  Answer<std::uint32_t> module_power_instant_mw;
  Answer<std::uint32_t> module_power_limit_mw;
  Answer<std::uint32_t> module_enforced_power_limit_mw;
  Answer<std::uint32_t> module_power_default_limit_mw;
  Answer<std::uint32_t> module_power_min_limit_mw;
  Answer<std::uint32_t> module_power_max_limit_mw;
  // Power smoothing (fields 251-268); NOT_SUPPORTED before Blackwell. Keyed by field id - 251.
  std::array<Answer<std::uint64_t>, 18> power_smoothing;
  // The power floors nvidia-smi 580's power_smoothing.* names print (fields 275-288: primary and
  // secondary floor, window multiplier, current profile and admin override). Keyed by field id - 275.
  std::array<Answer<std::uint64_t>, 14> power_smoothing_floors;

  // BAR1 (the sampled catalog keeps only the used part).
  Answer<MemoryBytes> bar1;

  // Confidential compute.
  Answer<MemoryBytes> protected_memory;

  // Fabric, platform, host.
  Answer<FabricInfo> fabric;
  Answer<PlatformInfo> platform;
  Answer<std::string> hostname;  // nvmlDeviceGetHostname_v1: what an admin set for the GPU, not the OS's
};

}  // namespace gpuscope::model
