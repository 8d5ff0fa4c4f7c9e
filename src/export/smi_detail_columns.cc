#include "export/smi_detail_columns.h"

#include <array>
#include <cstddef>

#include <fmt/format.h>

#include "export/nvml_error_text.h"

namespace gpuscope::exporter {
namespace {

using model::Answer;
using model::GpuDetails;

using SdcReader = DetailCell (*)(const GpuDetails&);

struct SdcDef {
  std::string_view name;
  std::string_view unit;
  std::string_view help;
  SdcReader read;
};

constexpr int kSdcNotSupported = 3;
constexpr int kSdcFunctionNotFound = 13;
constexpr int kSdcDeprecated = 26;

DetailCell sdc_error(int code) { return {{}, code == 0 ? kSdcNotSupported : code, std::nullopt}; }
DetailCell sdc_word(std::string text) { return {std::move(text), 0, std::nullopt}; }
DetailCell sdc_number(std::string text, double number) { return {std::move(text), 0, number}; }

template <class T, class F>
DetailCell sdc_from(const Answer<T>& a, F&& f) {
  if (!a.ok()) return sdc_error(a.error);
  return f(*a.value);
}

template <class T>
DetailCell sdc_integer(const Answer<T>& a) {
  return sdc_from(a, [](const T& v) { return sdc_number(fmt::format("{}", v), static_cast<double>(v)); });
}

DetailCell sdc_enabled(const Answer<int>& a) {
  return sdc_from(a, [](int v) { return sdc_word(v != 0 ? "Enabled" : "Disabled"); });
}

DetailCell sdc_mode_word(const Answer<model::ModePair>& a, bool other) {
  return sdc_from(a, [other](const model::ModePair& m) { return sdc_word((other ? m.other : m.current) != 0 ? "Enabled" : "Disabled"); });
}

// Power in mW as nvidia-smi prints watts: two decimals.
DetailCell sdc_watts(const Answer<std::uint32_t>& a) {
  return sdc_from(a, [](std::uint32_t mw) {
    const double w = mw / 1000.0;
    return sdc_number(fmt::format("{:.2f}", w), w);
  });
}

DetailCell sdc_hex(std::uint64_t v, int digits, bool number) {
  DetailCell c = sdc_word(fmt::format("0x{:0{}X}", v, digits));
  if (number) c.number = static_cast<double>(v);
  return c;
}

template <class T>
std::string_view sdc_enum_word(const T& words, std::size_t v, std::string_view fallback) {
  return v < words.size() ? words[v] : fallback;
}

// ---- PCI, modes, board.

DetailCell sdc_pci(const GpuDetails& x, std::uint32_t model::PciIds::*member, int digits) {
  return sdc_from(x.pci, [&](const model::PciIds& p) { return sdc_hex(p.*member, digits, false); });
}

DetailCell sdc_compute_mode(const GpuDetails& x) {
  static constexpr std::array<std::string_view, 4> kWords{"Default", "Exclusive_Thread", "Prohibited", "Exclusive_Process"};
  return sdc_from(x.compute_mode, [](int v) { return sdc_word(std::string(sdc_enum_word(kWords, static_cast<std::size_t>(v), "Unknown"))); });
}

DetailCell sdc_gom(const Answer<model::ModePair>& a, bool pending) {
  static constexpr std::array<std::string_view, 3> kWords{"All On", "Compute", "Low Double Precision"};
  return sdc_from(a, [pending](const model::ModePair& m) {
    return sdc_word(std::string(sdc_enum_word(kWords, static_cast<std::size_t>(pending ? m.other : m.current), "Unknown")));
  });
}

DetailCell sdc_driver_model(const Answer<model::ModePair>& a, bool pending) {
  static constexpr std::array<std::string_view, 3> kWords{"WDDM", "TCC", "MCDM"};
  return sdc_from(a, [pending](const model::ModePair& m) {
    return sdc_word(std::string(sdc_enum_word(kWords, static_cast<std::size_t>(pending ? m.other : m.current), "Unknown")));
  });
}

DetailCell sdc_addressing_mode(const GpuDetails& x) {
  static constexpr std::array<std::string_view, 3> kWords{"None", "HMM", "ATS"};
  return sdc_from(x.addressing_mode, [](std::uint32_t v) { return sdc_word(std::string(sdc_enum_word(kWords, v, "Unknown"))); });
}

DetailCell sdc_recovery_action(const GpuDetails& x) {
  static constexpr std::array<std::string_view, 6> kWords{"None",      "Reset",           "Reboot",
                                                          "Drain P2P", "Drain and Reset", "Recover IMEX Domain"};
  return sdc_from(x.gpu_recovery_action, [](std::uint32_t v) { return sdc_word(std::string(sdc_enum_word(kWords, v, "Unknown"))); });
}

DetailCell sdc_inforom_validation(const GpuDetails& x) {
  if (x.inforom_validation == 0) return sdc_word("valid");
  if (x.inforom_validation == 14) return sdc_word("invalid");  // NVML_ERROR_CORRUPTED_INFOROM
  return sdc_error(x.inforom_validation);
}

DetailCell sdc_string(const Answer<std::string>& a) {
  return sdc_from(a, [](const std::string& s) { return sdc_word(s); });
}

// ---- Clocks.

template <std::uint64_t Bit>
DetailCell sdc_reason(const GpuDetails& x) {
  if (x.clocks_event_reasons_supported.ok() && (*x.clocks_event_reasons_supported.value & Bit) == 0) {
    return sdc_error(kSdcNotSupported);
  }
  return sdc_from(x.clocks_event_reasons_active,
                  [](std::uint64_t v) { return sdc_word((v & Bit) != 0 ? "Active" : "Not Active"); });
}

// NVML counts ns; nvidia-smi prints whole µs.
template <std::size_t K>
DetailCell sdc_event_counter(const GpuDetails& x) {
  return sdc_from(x.clocks_event_ns[K], [](std::uint64_t ns) {
    const std::uint64_t us = ns / 1000;
    return sdc_number(fmt::format("{}", us), static_cast<double>(us));
  });
}

// ---- ECC.

template <int Uncorrected, int Aggregate, model::EccLocation Where>
DetailCell sdc_ecc(const GpuDetails& x) {
  return sdc_integer(x.ecc_errors[Uncorrected][Aggregate][static_cast<std::size_t>(Where)]);
}

template <std::uint64_t model::SramEccStatus::*Member>
DetailCell sdc_sram(const GpuDetails& x) {
  return sdc_from(x.sram_ecc, [](const model::SramEccStatus& s) {
    return sdc_number(fmt::format("{}", s.*Member), static_cast<double>(s.*Member));
  });
}

template <std::uint32_t model::RemapHistogram::*Member>
DetailCell sdc_histogram(const GpuDetails& x) {
  return sdc_from(x.remap_histogram, [](const model::RemapHistogram& h) {
    return sdc_number(fmt::format("{}", h.*Member), static_cast<double>(h.*Member));
  });
}

// ---- Power smoothing (fields 275-288): watts, ms, plain multipliers or a supported flag.
enum class SdcSmoothing { kWatts, kMs, kPlain, kSupported };

template <std::size_t K, SdcSmoothing Kind>
DetailCell sdc_smoothing(const GpuDetails& x) {
  return sdc_from(x.power_smoothing_floors[K], [](std::uint64_t v) {
    switch (Kind) {
      case SdcSmoothing::kWatts: return sdc_number(fmt::format("{:.2f}", static_cast<double>(v)), static_cast<double>(v));
      case SdcSmoothing::kSupported: return sdc_word(v != 0 ? "Supported" : "Not Supported");
      case SdcSmoothing::kMs:
      case SdcSmoothing::kPlain: break;
    }
    return sdc_number(fmt::format("{}", v), static_cast<double>(v));
  });
}

// ---- Fabric: nvidia-smi prints a bare N/A (no brackets) while the GPU has no fabric.

DetailCell sdc_fabric_na() { return {"N/A", kSdcNotSupported, std::nullopt}; }

template <class F>
DetailCell sdc_fabric(const GpuDetails& x, F&& f) {
  if (!x.fabric.ok()) {
    if (x.fabric.error == kSdcNotSupported || x.fabric.error == kSdcFunctionNotFound) return sdc_fabric_na();
    return sdc_error(x.fabric.error);
  }
  if (x.fabric.value->state == 0) return sdc_fabric_na();  // NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
  return f(*x.fabric.value);
}

DetailCell sdc_fabric_state(const GpuDetails& x) {
  static constexpr std::array<std::string_view, 4> kWords{"N/A", "Not Started", "In Progress", "Completed"};
  return sdc_fabric(x, [](const model::FabricInfo& f) { return sdc_word(std::string(sdc_enum_word(kWords, f.state, "Unknown"))); });
}

DetailCell sdc_fabric_status(const GpuDetails& x) {
  return sdc_fabric(x, [](const model::FabricInfo& f) {
    if (f.state != 3) return sdc_fabric_na();  // meaningful once COMPLETED
    return sdc_word(f.status == 0 ? std::string("Success") : nvml_error_text(f.status));
  });
}

DetailCell sdc_fabric_summary(const GpuDetails& x) {
  static constexpr std::array<std::string_view, 4> kWords{"N/A", "Healthy", "Unhealthy", "Limited Capacity"};
  return sdc_fabric(x, [](const model::FabricInfo& f) { return sdc_word(std::string(sdc_enum_word(kWords, f.health_summary, "Unknown"))); });
}

// A 2-bit health mask field: 0 not supported, 1 true, 2 false.
template <unsigned Shift>
DetailCell sdc_fabric_flag(const GpuDetails& x) {
  return sdc_fabric(x, [](const model::FabricInfo& f) {
    static constexpr std::array<std::string_view, 3> kWords{"N/A", "True", "False"};
    return sdc_word(std::string(sdc_enum_word(kWords, (f.health_mask >> Shift) & 0x3U, "Unknown")));
  });
}

DetailCell sdc_fabric_bandwidth(const GpuDetails& x) {
  return sdc_fabric(x, [](const model::FabricInfo& f) {
    static constexpr std::array<std::string_view, 3> kWords{"N/A", "Degraded", "Full"};
    return sdc_word(std::string(sdc_enum_word(kWords, f.health_mask & 0x3U, "Unknown")));
  });
}

DetailCell sdc_fabric_configuration(const GpuDetails& x) {
  return sdc_fabric(x, [](const model::FabricInfo& f) {
    static constexpr std::array<std::string_view, 9> kWords{
        "N/A", "None", "Incorrect SysGUID", "Incorrect Chassis Serial Number", "No Partition", "Insufficient NVLinks",
        "Incompatible GPU Firmware", "Invalid Location", "GPU State Invalid"};
    return sdc_word(std::string(sdc_enum_word(kWords, (f.health_mask >> 8) & 0xFU, "Unknown")));
  });
}

// ---- Platform.

template <std::uint8_t model::PlatformInfo::*Member>
DetailCell sdc_platform_byte(const GpuDetails& x) {
  return sdc_from(x.platform, [](const model::PlatformInfo& p) {
    return sdc_number(fmt::format("{}", p.*Member), static_cast<double>(p.*Member));
  });
}

DetailCell sdc_peer_type(const GpuDetails& x) {
  static constexpr std::array<std::string_view, 2> kWords{"Direct Connected", "Switch Connected"};
  return sdc_from(x.platform, [](const model::PlatformInfo& p) {
    return sdc_word(p.peer_type < kWords.size() ? std::string(kWords[p.peer_type]) : fmt::format("{}", p.peer_type));
  });
}

// The IB GUID's first 8 bytes (all a Blackwell has), most significant first.
DetailCell sdc_fabric_guid(const GpuDetails& x) {
  return sdc_from(x.platform, [](const model::PlatformInfo& p) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < 8; ++k) v = (v << 8) | p.ib_guid[k];
    return sdc_hex(v, 16, false);
  });
}

DetailCell sdc_mib(const Answer<model::MemoryBytes>& a, std::uint64_t model::MemoryBytes::*member) {
  return sdc_from(a, [member](const model::MemoryBytes& m) {
    const std::uint64_t mib = m.*member / kMiB;
    return sdc_number(fmt::format("{}", mib), static_cast<double>(mib));
  });
}

using model::EccLocation;
using model::PlatformInfo;
using model::RemapHistogram;
using model::SramEccStatus;

#define SDC_ECC_ROW(kind, U, scope, A)                                                                              \
  {"ecc.errors." kind "." scope ".device_memory", "", "Errors in global device memory.",                          \
   &sdc_ecc<U, A, EccLocation::kDeviceMemory>},                                                                    \
      {"ecc.errors." kind "." scope ".dram", "", "Errors in the DRAM.", &sdc_ecc<U, A, EccLocation::kDram>},       \
      {"ecc.errors." kind "." scope ".register_file", "", "Errors in the register file.",                         \
       &sdc_ecc<U, A, EccLocation::kRegisterFile>},                                                                \
      {"ecc.errors." kind "." scope ".texture_memory", "", "Parity errors in texture memory.",                    \
       &sdc_ecc<U, A, EccLocation::kTextureMemory>},                                                               \
      {"ecc.errors." kind "." scope ".cbu", "", "Parity errors in the CBU.", &sdc_ecc<U, A, EccLocation::kCbu>}, \
      {"ecc.errors." kind "." scope ".sram", "", "Errors in the GPU's SRAM (caches, register file, ...).",        \
       &sdc_ecc<U, A, EccLocation::kSram>}

// nvidia-smi 580's --query-gpu order.
const SdcDef kSdcDetails[] = {
    {"pci.domain", "", "PCI domain number, in hex.", [](const GpuDetails& x) { return sdc_pci(x, &model::PciIds::domain, 4); }},
    {"pci.bus", "", "PCI bus number, in hex.", [](const GpuDetails& x) { return sdc_pci(x, &model::PciIds::bus, 2); }},
    {"pci.device", "", "PCI device number, in hex.", [](const GpuDetails& x) { return sdc_pci(x, &model::PciIds::device, 2); }},
    {"pci.device_id", "", "PCI vendor device id, in hex (device << 16 | vendor).",
     [](const GpuDetails& x) { return sdc_pci(x, &model::PciIds::device_id, 8); }},
    {"pci.sub_device_id", "", "PCI sub system id, in hex.",
     [](const GpuDetails& x) { return sdc_pci(x, &model::PciIds::subsystem_id, 8); }},
    {"vgpu_device_capability.homogeneous_placements", "",
     "Whether the GPU can report placements of time-sliced vGPU profiles with identical framebuffer sizes.",
     [](const GpuDetails& x) {
       return sdc_from(x.vgpu_homogeneous_placements, [](std::uint32_t v) { return sdc_word(v != 0 ? "Supported" : "Not Supported"); });
     }},
    {"pcie.link.gen.gpucurrent", "", "The current PCIe link generation of the GPU's side of the link.",
     [](const GpuDetails& x) { return sdc_integer(x.pcie_gen_current); }},
    {"pcie.link.gen.gpumax", "", "The highest PCIe link generation the GPU supports.",
     [](const GpuDetails& x) { return sdc_integer(x.pcie_gen_gpu_max); }},
    // NVML has no call for the host's side alone; nvidia-smi prints [N/A] for it on Linux.
    {"pcie.link.gen.hostmax", "", "The highest PCIe link generation the host (root port) supports; not reported on Linux.",
     [](const GpuDetails&) { return sdc_error(kSdcNotSupported); }},
    {"display_mode", "", "Deprecated by nvidia-smi 580 (see display_attached); prints that it is deprecated.",
     [](const GpuDetails&) { return sdc_error(kSdcDeprecated); }},
    {"display_attached", "", "Whether a physical display is attached to one of the GPU's connectors.",
     [](const GpuDetails& x) { return sdc_from(x.display_mode, [](int v) { return sdc_word(v != 0 ? "Yes" : "No"); }); }},
    {"display_active", "", "Whether a display is initialized on the GPU (memory allocated for it).",
     [](const GpuDetails& x) { return sdc_enabled(x.display_active); }},
    {"persistence_mode", "", "Whether the driver stays loaded with no client (Linux only).",
     [](const GpuDetails& x) { return sdc_enabled(x.persistence_mode); }},
    {"addressing_mode", "", "The GPU's system memory addressing mode: None, HMM or ATS.", &sdc_addressing_mode},
    {"accounting.mode", "", "Whether per-process accounting is on.", [](const GpuDetails& x) { return sdc_enabled(x.accounting_mode); }},
    {"accounting.buffer_size", "", "How many processes the accounting buffer holds.",
     [](const GpuDetails& x) { return sdc_integer(x.accounting_buffer_size); }},
    {"driver_model.current", "", "The current Windows driver model (WDDM, TCC, MCDM); [N/A] on Linux.",
     [](const GpuDetails& x) { return sdc_driver_model(x.driver_model, false); }},
    {"driver_model.pending", "", "The Windows driver model after the next reboot; [N/A] on Linux.",
     [](const GpuDetails& x) { return sdc_driver_model(x.driver_model, true); }},
    {"inforom.img", "", "The version of the InfoROM image.", [](const GpuDetails& x) { return sdc_string(x.inforom_image); }},
    {"inforom.oem", "", "The version of the InfoROM's OEM configuration object.",
     [](const GpuDetails& x) { return sdc_string(x.inforom_oem); }},
    {"inforom.ecc", "", "The version of the InfoROM's ECC object.", [](const GpuDetails& x) { return sdc_string(x.inforom_ecc); }},
    {"inforom.pwr", "", "The version of the InfoROM's power management object.",
     [](const GpuDetails& x) { return sdc_string(x.inforom_power); }},
    {"inforom.checksum_validation", "", "Whether the InfoROM's checksum is valid (valid or invalid).", &sdc_inforom_validation},
    {"gpu_recovery_action", "", "What the GPU needs to recover: None, Reset, Reboot, Drain P2P, Drain and Reset.",
     &sdc_recovery_action},
    {"gom.current", "", "The GPU operation mode: All On, Compute or Low Double Precision.",
     [](const GpuDetails& x) { return sdc_gom(x.gpu_operation_mode, false); }},
    {"gom.pending", "", "The GPU operation mode after the next reboot.",
     [](const GpuDetails& x) { return sdc_gom(x.gpu_operation_mode, true); }},
    {"clocks_event_reasons.supported", "", "Bitmask of the clock event reasons the GPU reports.",
     [](const GpuDetails& x) {
       return sdc_from(x.clocks_event_reasons_supported, [](std::uint64_t v) { return sdc_hex(v, 16, true); });
     }},
    {"clocks_event_reasons.gpu_idle", "", "Nothing runs on the GPU and the clocks are dropping to idle.",
     &sdc_reason<0x1ULL>},
    {"clocks_event_reasons.applications_clocks_setting", "", "The clocks are limited by the applications clocks setting.",
     &sdc_reason<0x2ULL>},
    {"clocks_event_reasons.sw_power_cap", "", "The power draw is at the power limit: the clocks are held back.",
     &sdc_reason<0x4ULL>},
    {"clocks_event_reasons.hw_slowdown", "", "Hardware slowdown (factor 2 or more): high temperature, power brake or power supply.",
     &sdc_reason<0x8ULL>},
    {"clocks_event_reasons.hw_thermal_slowdown", "", "Hardware slowdown because the GPU or memory is too hot.",
     &sdc_reason<0x40ULL>},
    {"clocks_event_reasons.hw_power_brake_slowdown", "", "Hardware slowdown from an external power brake (e.g. the power supply).",
     &sdc_reason<0x80ULL>},
    {"clocks_event_reasons.sw_thermal_slowdown", "", "The clocks are held back to keep GPU and memory below their max operating temperature.",
     &sdc_reason<0x20ULL>},
    {"clocks_event_reasons.sync_boost", "", "The clocks are held to those of the GPU's sync boost group.", &sdc_reason<0x10ULL>},
    {"clocks_event_reasons_counters.sw_power_cap", "us", "Time the clocks were held back by the power cap, since boot.",
     &sdc_event_counter<0>},
    {"clocks_event_reasons_counters.sync_boost", "us", "Time the clocks were held back by sync boost, since boot.",
     &sdc_event_counter<1>},
    {"clocks_event_reasons_counters.sw_thermal_slowdown", "us", "Time the clocks were held back by software thermal slowdown.",
     &sdc_event_counter<2>},
    {"clocks_event_reasons_counters.hw_thermal_slowdown", "us", "Time the clocks were cut by hardware thermal slowdown.",
     &sdc_event_counter<3>},
    {"clocks_event_reasons_counters.hw_power_brake_slowdown", "us", "Time the clocks were cut by a hardware power brake.",
     &sdc_event_counter<4>},
    {"compute_mode", "", "Who may create contexts: Default, Exclusive_Thread, Prohibited or Exclusive_Process.", &sdc_compute_mode},
    {"utilization.jpeg", "%", "Percent of time the JPEG decoder was busy over the last sample period.",
     [](const GpuDetails& x) { return sdc_integer(x.jpg_util); }},
    {"utilization.ofa", "%", "Percent of time the optical flow accelerator was busy over the last sample period.",
     [](const GpuDetails& x) { return sdc_integer(x.ofa_util); }},
    {"ecc.mode.current", "", "Whether ECC is on.", [](const GpuDetails& x) { return sdc_mode_word(x.ecc_mode, false); }},
    {"ecc.mode.pending", "", "Whether ECC is on after the next reboot.", [](const GpuDetails& x) { return sdc_mode_word(x.ecc_mode, true); }},
    SDC_ECC_ROW("corrected", 0, "volatile", 0),
    SDC_ECC_ROW("corrected", 0, "aggregate", 1),
    SDC_ECC_ROW("uncorrected", 1, "volatile", 0),
    SDC_ECC_ROW("uncorrected", 1, "aggregate", 1),
    {"ecc.errors.uncorrected.volatile.sram.parity", "", "Uncorrected parity errors in SRAM since the driver loaded.",
     &sdc_sram<&SramEccStatus::volatile_uncorrected_parity>},
    {"ecc.errors.uncorrected.volatile.sram.secded", "", "Uncorrected SEC-DED errors in SRAM since the driver loaded.",
     &sdc_sram<&SramEccStatus::volatile_uncorrected_secded>},
    {"ecc.errors.uncorrected.aggregate.sram.parity", "", "Uncorrected parity errors in SRAM over the GPU's life.",
     &sdc_sram<&SramEccStatus::aggregate_uncorrected_parity>},
    {"ecc.errors.uncorrected.aggregate.sram.secded", "", "Uncorrected SEC-DED errors in SRAM over the GPU's life.",
     &sdc_sram<&SramEccStatus::aggregate_uncorrected_secded>},
    {"ecc.errors.uncorrected.aggregate.sram.sm", "", "Uncorrected SRAM errors in the SMs over the GPU's life.",
     &sdc_sram<&SramEccStatus::aggregate_bucket_sm>},
    {"ecc.errors.uncorrected.aggregate.sram.mcu", "", "Uncorrected SRAM errors in the microcontrollers over the GPU's life.",
     &sdc_sram<&SramEccStatus::aggregate_bucket_mcu>},
    {"ecc.errors.uncorrected.aggregate.sram.pcie", "", "Uncorrected SRAM errors in the PCIe interface over the GPU's life.",
     &sdc_sram<&SramEccStatus::aggregate_bucket_pcie>},
    {"ecc.errors.uncorrected.aggregate.sram.other", "", "Uncorrected SRAM errors elsewhere (L2 and other units) over the GPU's life.",
     &sdc_sram<&SramEccStatus::aggregate_bucket_other>},
    {"remapped_rows.correctable_inactive", "", "Rows remapped for correctable errors that are not active yet.",
     [](const GpuDetails& x) {
       return sdc_from(x.remap_inactive, [](const model::RemapInactive& r) { return sdc_number(fmt::format("{}", r.correctable), r.correctable); });
     }},
    {"remapped_rows.uncorrectable_inactive", "", "Rows remapped for uncorrectable errors that are not active yet.",
     [](const GpuDetails& x) {
       return sdc_from(x.remap_inactive, [](const model::RemapInactive& r) { return sdc_number(fmt::format("{}", r.uncorrectable), r.uncorrectable); });
     }},
    {"remapped_rows.histogram.max", "", "Memory banks with all their spare rows still available.", &sdc_histogram<&RemapHistogram::max>},
    {"remapped_rows.histogram.high", "", "Memory banks with most of their spare rows available.", &sdc_histogram<&RemapHistogram::high>},
    {"remapped_rows.histogram.partial", "", "Memory banks with some of their spare rows available.", &sdc_histogram<&RemapHistogram::partial>},
    {"remapped_rows.histogram.low", "", "Memory banks with few spare rows left.", &sdc_histogram<&RemapHistogram::low>},
    {"remapped_rows.histogram.none", "", "Memory banks with no spare rows left.", &sdc_histogram<&RemapHistogram::none>},
    {"temperature.gpu.tlimit", "", "Degrees C the GPU is below its max operating temperature (negative: above).",
     [](const GpuDetails& x) { return sdc_integer(x.temperature_margin); }},
    {"power.management", "", "Whether power management (a settable power limit) is on.",
     [](const GpuDetails& x) { return sdc_enabled(x.power_management_mode); }},
    {"power.draw.average", "W", "The GPU's power draw averaged over the last second.",
     [](const GpuDetails& x) { return sdc_watts(x.power_average_mw); }},
    {"power.draw.instant", "W", "The GPU's instantaneous power draw.", [](const GpuDetails& x) { return sdc_watts(x.power_instant_mw); }},
    {"power.default_limit", "W", "The power limit the GPU boots with.", [](const GpuDetails& x) { return sdc_watts(x.power_default_limit_mw); }},
    {"power.min_limit", "W", "The lowest power limit that may be set.", [](const GpuDetails& x) { return sdc_watts(x.power_min_limit_mw); }},
    {"power.max_limit", "W", "The highest power limit that may be set.", [](const GpuDetails& x) { return sdc_watts(x.power_max_limit_mw); }},
    {"module.power.draw.average", "W", "The whole module's power draw (GPU, memory, CPU on Grace Hopper) averaged over a second.",
     [](const GpuDetails& x) { return sdc_watts(x.module_power_average_mw); }},
    {"module.power.draw.instant", "W", "The whole module's instantaneous power draw.",
     [](const GpuDetails& x) { return sdc_watts(x.module_power_instant_mw); }},
    {"module.power.limit", "W", "The module's requested power limit.", [](const GpuDetails& x) { return sdc_watts(x.module_power_limit_mw); }},
    {"module.enforced.power.limit", "W", "The module's power limit in force (the lowest of all limits).",
     [](const GpuDetails& x) { return sdc_watts(x.module_enforced_power_limit_mw); }},
    {"module.power.default_limit", "W", "The module's default power limit.",
     [](const GpuDetails& x) { return sdc_watts(x.module_power_default_limit_mw); }},
    {"module.power.min_limit", "W", "The module's lowest settable power limit.",
     [](const GpuDetails& x) { return sdc_watts(x.module_power_min_limit_mw); }},
    {"module.power.max_limit", "W", "The module's highest settable power limit.",
     [](const GpuDetails& x) { return sdc_watts(x.module_power_max_limit_mw); }},
    {"power_smoothing.delayed_power_smoothing_supported", "", "Whether delayed power smoothing is supported.",
     &sdc_smoothing<5, SdcSmoothing::kSupported>},
    {"power_smoothing.primary_power_floor", "W", "The current primary power floor.", &sdc_smoothing<0, SdcSmoothing::kWatts>},
    {"power_smoothing.secondary_power_floor", "W", "The current secondary power floor.", &sdc_smoothing<1, SdcSmoothing::kWatts>},
    {"power_smoothing.min_primary_floor_activation_offset", "W", "The smallest primary floor activation offset the driver accepts.",
     &sdc_smoothing<2, SdcSmoothing::kWatts>},
    {"power_smoothing.min_primary_floor_activation_point", "W", "The lowest point at which the driver switches between the floors.",
     &sdc_smoothing<3, SdcSmoothing::kWatts>},
    {"power_smoothing.window_multiplier", "ms", "The unit of the profiles' window multipliers.", &sdc_smoothing<4, SdcSmoothing::kMs>},
    {"power_smoothing.curr_profile.secondary_power_floor", "W", "The current profile's secondary power floor.",
     &sdc_smoothing<6, SdcSmoothing::kWatts>},
    {"power_smoothing.curr_profile.primary_floor_act_window_multiplier", "", "The current profile's activation window multiplier.",
     &sdc_smoothing<7, SdcSmoothing::kPlain>},
    {"power_smoothing.curr_profile.primary_floor_tar_window_multiplier", "", "The current profile's target window multiplier.",
     &sdc_smoothing<8, SdcSmoothing::kPlain>},
    {"power_smoothing.curr_profile.primary_floor_act_offset", "W", "The current profile's primary floor activation offset.",
     &sdc_smoothing<9, SdcSmoothing::kWatts>},
    {"power_smoothing.admin_override.secondary_power_floor", "W", "The admin override's secondary power floor.",
     &sdc_smoothing<10, SdcSmoothing::kWatts>},
    {"power_smoothing.admin_override.primary_floor_act_window_multiplier", "", "The admin override's activation window multiplier.",
     &sdc_smoothing<11, SdcSmoothing::kPlain>},
    {"power_smoothing.admin_override.primary_floor_tar_window_multiplier", "", "The admin override's target window multiplier.",
     &sdc_smoothing<12, SdcSmoothing::kPlain>},
    {"power_smoothing.admin_override.primary_floor_act_offset", "W", "The admin override's primary floor activation offset.",
     &sdc_smoothing<13, SdcSmoothing::kWatts>},
    {"clocks.applications.graphics", "MHz", "The graphics clock applications run at unless they set their own.",
     [](const GpuDetails& x) { return sdc_integer(x.applications_clock_graphics); }},
    {"clocks.applications.memory", "MHz", "The memory clock applications run at unless they set their own.",
     [](const GpuDetails& x) { return sdc_integer(x.applications_clock_memory); }},
    {"clocks.default_applications.graphics", "MHz", "The default applications graphics clock.",
     [](const GpuDetails& x) { return sdc_integer(x.default_applications_clock_graphics); }},
    {"clocks.default_applications.memory", "MHz", "The default applications memory clock.",
     [](const GpuDetails& x) { return sdc_integer(x.default_applications_clock_memory); }},
    {"mig.mode.current", "", "Whether MIG mode is on.", [](const GpuDetails& x) { return sdc_mode_word(x.mig_mode, false); }},
    {"mig.mode.pending", "", "Whether MIG mode is on after the next GPU reset.",
     [](const GpuDetails& x) { return sdc_mode_word(x.mig_mode, true); }},
    {"gsp.mode.current", "", "Whether the GSP firmware runs the GPU.", [](const GpuDetails& x) { return sdc_mode_word(x.gsp_mode, false); }},
    {"gsp.mode.default", "", "Whether the GSP firmware runs the GPU by default.",
     [](const GpuDetails& x) { return sdc_mode_word(x.gsp_mode, true); }},
    {"protected_memory.total", "MiB", "Confidential computing protected memory in total.",
     [](const GpuDetails& x) { return sdc_mib(x.protected_memory, &model::MemoryBytes::total); }},
    {"protected_memory.used", "MiB", "Confidential computing protected memory in use.",
     [](const GpuDetails& x) { return sdc_mib(x.protected_memory, &model::MemoryBytes::used); }},
    {"protected_memory.free", "MiB", "Confidential computing protected memory free.",
     [](const GpuDetails& x) { return sdc_mib(x.protected_memory, &model::MemoryBytes::free); }},
    {"fabric.state", "", "The GPU's NVLink fabric registration: Not Started, In Progress, Completed; N/A without a fabric.",
     &sdc_fabric_state},
    {"fabric.status", "", "How the fabric registration ended (Success or NVML's error) once Completed.", &sdc_fabric_status},
    {"fabric.health.summary", "", "The fabric's health: Healthy, Unhealthy or Limited Capacity.", &sdc_fabric_summary},
    {"fabric.health.bandwidth", "", "The fabric's bandwidth: Full or Degraded.", &sdc_fabric_bandwidth},
    {"fabric.health.route_recovery_in_progress", "", "Whether a route recovery is in progress (True/False).", &sdc_fabric_flag<2>},
    {"fabric.health.route_unhealthy", "", "Whether a fabric route is unhealthy (True/False).", &sdc_fabric_flag<4>},
    {"fabric.health.access_timeout_recovery", "", "Whether an access timeout recovery is in progress (True/False).",
     &sdc_fabric_flag<6>},
    {"fabric.health.incorrect_configuration", "", "What is wrong with the fabric's configuration; None when nothing.",
     &sdc_fabric_configuration},
    {"fabric.health.partition_assigned", "", "Whether the GPU is assigned to a fabric partition (True/False).", &sdc_fabric_flag<12>},
    {"platform.chassis_serial_number", "", "The serial number of the chassis holding the GPU.",
     [](const GpuDetails& x) { return sdc_from(x.platform, [](const PlatformInfo& p) { return sdc_word(p.chassis_serial); }); }},
    {"platform.slot_number", "", "The chassis slot holding the GPU.", &sdc_platform_byte<&PlatformInfo::slot>},
    {"platform.tray_index", "", "The tray index of the GPU within the chassis.", &sdc_platform_byte<&PlatformInfo::tray>},
    {"platform.host_id", "", "The host the GPU belongs to within its tray.", &sdc_platform_byte<&PlatformInfo::host_id>},
    {"platform.peer_type", "", "How the GPU's NVLink peers are reached: Direct Connected or Switch Connected.", &sdc_peer_type},
    {"platform.module_id", "", "The GPU's module id within its host.", &sdc_platform_byte<&PlatformInfo::module_id>},
    {"platform.gpu_fabric_guid", "", "The GPU's fabric (InfiniBand) GUID, in hex.", &sdc_fabric_guid},
    {"hostname", "", "The hostname an administrator set for the GPU in NVML (not the OS's hostname).",
     [](const GpuDetails& x) { return sdc_string(x.hostname); }},
};

#undef SDC_ECC_ROW

constexpr std::size_t kSdcCount = std::size(kSdcDetails);

const std::array<DetailColumn, kSdcCount> kSdcColumns = [] {
  std::array<DetailColumn, kSdcCount> out{};
  for (std::size_t k = 0; k < kSdcCount; ++k) out[k].index = static_cast<std::uint16_t>(k);
  return out;
}();

// nvidia-smi 580's other spellings of these names.
constexpr std::pair<std::string_view, std::string_view> kSdcAliases[] = {
    {"inforom.image", "inforom.img"},
    {"inforom.power", "inforom.pwr"},
    {"gpu_operation_mode.current", "gom.current"},
    {"gpu_operation_mode.pending", "gom.pending"},
    {"clocks_throttle_reasons.supported", "clocks_event_reasons.supported"},
    {"clocks_throttle_reasons.gpu_idle", "clocks_event_reasons.gpu_idle"},
    {"clocks_throttle_reasons.applications_clocks_setting", "clocks_event_reasons.applications_clocks_setting"},
    {"clocks_throttle_reasons.sw_power_cap", "clocks_event_reasons.sw_power_cap"},
    {"clocks_throttle_reasons.hw_slowdown", "clocks_event_reasons.hw_slowdown"},
    {"clocks_throttle_reasons.hw_thermal_slowdown", "clocks_event_reasons.hw_thermal_slowdown"},
    {"clocks_throttle_reasons.hw_power_brake_slowdown", "clocks_event_reasons.hw_power_brake_slowdown"},
    {"clocks_throttle_reasons.sw_thermal_slowdown", "clocks_event_reasons.sw_thermal_slowdown"},
    {"clocks_throttle_reasons.sync_boost", "clocks_event_reasons.sync_boost"},
    {"clocks.applications.gr", "clocks.applications.graphics"},
    {"clocks.applications.mem", "clocks.applications.memory"},
    {"clocks.default_applications.gr", "clocks.default_applications.graphics"},
    {"clocks.default_applications.mem", "clocks.default_applications.memory"},
    {"retired_pages.sbe", "retired_pages.single_bit_ecc.count"},
    {"retired_pages.dbe", "retired_pages.double_bit.count"},
};

// Units the CSV header leaves out (as nvidia-smi's does) but a JSON key carries, like the catalog's
// temperature.gpu -> temperature.gpu_celsius.
constexpr std::pair<std::string_view, std::string_view> kSdcJsonUnits[] = {{"temperature.gpu.tlimit", "C"}};

const SdcDef& sdc_def(DetailColumn column) { return kSdcDetails[column.index < kSdcCount ? column.index : 0]; }

}  // namespace

std::optional<DetailColumn> detail_column_by_name(std::string_view name) {
  for (std::size_t k = 0; k < kSdcCount; ++k) {
    if (kSdcDetails[k].name == name) return DetailColumn{static_cast<std::uint16_t>(k)};
  }
  return std::nullopt;
}

std::string_view detail_column_name(DetailColumn column) { return sdc_def(column).name; }
std::string_view detail_column_unit(DetailColumn column) { return sdc_def(column).unit; }
std::string_view detail_column_json_unit(DetailColumn column) {
  for (const auto& [name, unit] : kSdcJsonUnits) {
    if (name == sdc_def(column).name) return unit;
  }
  return sdc_def(column).unit;
}
std::string_view detail_column_help(DetailColumn column) { return sdc_def(column).help; }
std::span<const DetailColumn> detail_columns() { return kSdcColumns; }

std::span<const std::pair<std::string_view, std::string_view>> detail_aliases() { return kSdcAliases; }

std::string_view canonical_detail_name(std::string_view name) {
  for (const auto& [alias, real] : kSdcAliases) {
    if (alias == name) return real;
  }
  return name;
}

DetailCell detail_cell(DetailColumn column, const model::GpuDetails& details) { return sdc_def(column).read(details); }

std::string detail_error_text(int code) {
  if (code == kSdcNotSupported || code == kSdcFunctionNotFound) return "[N/A]";
  return fmt::format("[{}]", nvml_error_text(code));
}

std::string detail_csv_text(DetailColumn column, const DetailCell& cell, bool with_unit) {
  if (cell.error != 0) return cell.text.empty() ? detail_error_text(cell.error) : cell.text;
  const std::string_view unit = detail_column_unit(column);
  if (!with_unit || unit.empty()) return cell.text;
  return fmt::format("{} {}", cell.text, unit);
}

}  // namespace gpuscope::exporter
