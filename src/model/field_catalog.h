// The one field catalog: every per-GPU metric gpuscope reads is one row here (key, DCGM name and id,
// nvidia-smi query name, unit, Prometheus type, help). Exporters, CSV/JSON views and docs read this table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace gpuscope::model {

// kSummary is for the agent's own series only (a count and a sum, without quantiles); kHistogram for the
// training step times (buckets, a count and a sum). No field is either.
enum class MetricType : std::uint8_t { kGauge, kCounter, kSummary, kHistogram };

// How nvidia-smi prints a value in CSV (units aside).
enum class SmiFormat : std::uint8_t {
  kInteger,   // 1980
  kFixed2,    // 250.12
  kPstateName,  // P0
  kHex64,     // 0x0000000000000004
  kYesNo,     // Yes / No (remapped_rows.pending, .failure)
};

// Order is the storage order inside a GpuSample; append new fields before kCount.
enum class FieldId : std::uint16_t {
  kSmClock,
  kMemClock,
  kGraphicsClock,
  kVideoClock,
  kMaxSmClock,
  kMaxMemClock,
  kMaxGraphicsClock,
  kMemoryTemp,
  kGpuTemp,
  kSlowdownTemp,
  kShutdownTemp,
  kPowerUsage,
  kPowerLimit,
  kEnforcedPowerLimit,
  kTotalEnergy,
  kPcieReplay,
  kGpuUtil,
  kMemCopyUtil,
  kEncUtil,
  kDecUtil,
  kXidErrors,
  kPowerViolation,
  kThermalViolation,
  kSyncBoostViolation,
  kBoardLimitViolation,
  kLowUtilViolation,
  kReliabilityViolation,
  kFbTotal,
  kFbFree,
  kFbUsed,
  kFbReserved,
  kBar1Used,
  kEccSbeVolTotal,
  kEccDbeVolTotal,
  kEccSbeAggTotal,
  kEccDbeAggTotal,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kUncorrectableRemappedRows,
  kCorrectableRemappedRows,
  kRowRemapFailure,
  kRowRemapPending,
  kNvlinkBandwidthTotal,
  kGrEngineActive,
  kSmActive,
  kSmOccupancy,
  kPipeTensorActive,
  kDramActive,
  kPipeFp64Active,
  kPipeFp32Active,
  kPipeFp16Active,
  kPcieTxBytes,
  kPcieRxBytes,
  kNvlinkTxBytes,
  kNvlinkRxBytes,
  kPcieTxThroughput,
  kPcieRxThroughput,
  kFanSpeed,
  kPstate,
  kPcieLinkGenCurrent,
  kPcieLinkGenMax,
  kPcieLinkWidthCurrent,
  kPcieLinkWidthMax,
  kClocksEventReasons,
  kCount
};

inline constexpr std::size_t kFieldCount = static_cast<std::size_t>(FieldId::kCount);

struct FieldDef {
  FieldId id;
  std::string_view key;        // stable snake_case key: JSON output, store series, docs
  std::string_view dcgm_name;  // DCGM_FI_* name, empty when DCGM has none
  int dcgm_id;                 // DCGM field id, 0 when none
  std::string_view smi_name;   // nvidia-smi --query-gpu name, empty when none
  std::string_view unit;       // unit of the stored value (DCGM's unit where DCGM has the field)
  std::string_view smi_unit;   // unit nvidia-smi prints, empty when it prints none
  SmiFormat smi_format;
  MetricType type;
  bool dcgm_default;           // in dcgm-exporter's default counter set (or gpuscope's additions to it)
  std::string_view help;
  // Divisor from the stored value to DCGM's unit where they differ: NVML reports violation time in
  // ns, DCGM (and dcgm-exporter's dashboards) in us.
  double dcgm_divisor = 1.0;
};

class FieldCatalog {
 public:
  static std::span<const FieldDef> all();
  static const FieldDef& get(FieldId id);
  static std::optional<FieldId> by_smi_name(std::string_view name);
  // nvidia-smi accepts several spellings of one --query-gpu column (gpu_name, clocks.current.sm, ...)
  // and prints a header as it was asked for: the name gpuscope knows it by, or `name` itself.
  static std::string_view canonical_smi_name(std::string_view name);
  // nvidia-smi's other spellings of its names (alias, canonical), as canonical_smi_name maps them.
  static std::span<const std::pair<std::string_view, std::string_view>> smi_aliases();
  static std::optional<FieldId> by_dcgm_name(std::string_view name);
  static std::optional<FieldId> by_key(std::string_view key);
};

constexpr std::size_t index_of(FieldId id) { return static_cast<std::size_t>(id); }

// Whether a MIG device has the field of its own (its framebuffer memory, GPM's profiling ratios), so
// it is read and exported per MIG instance; every other field belongs to the whole GPU.
constexpr bool is_mig_instance_field(FieldId id) {
  switch (id) {
    case FieldId::kFbTotal:
    case FieldId::kFbFree:
    case FieldId::kFbUsed:
    case FieldId::kFbReserved:
    case FieldId::kGrEngineActive:
    case FieldId::kSmActive:
    case FieldId::kSmOccupancy:
    case FieldId::kPipeTensorActive:
    case FieldId::kDramActive:
    case FieldId::kPipeFp64Active:
    case FieldId::kPipeFp32Active:
    case FieldId::kPipeFp16Active:
      return true;
    default:
      return false;
  }
}

}  // namespace gpuscope::model
