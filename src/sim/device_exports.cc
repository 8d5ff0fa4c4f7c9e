// NVML's per-device queries: identity, memory, utilization, power, thermals, clocks, throttling,
// ECC and memory repair, PCIe, MIG (field values: field_exports.cc).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/library_state.h"

using namespace gpuscope::sim;

namespace {

constexpr unsigned kCodecPeriodUs = 100000;  // the real H100's, idle

unsigned percent(double ratio) { return static_cast<unsigned>(std::lround(std::clamp(ratio, 0.0, 1.0) * 100.0)); }
unsigned milli(double x) { return static_cast<unsigned>(std::lround(x * 1000.0)); }
unsigned long long mib_bytes(std::uint64_t mib) { return static_cast<unsigned long long>(mib) * 1048576ULL; }

// A GPU with nothing running and nothing resident parks its clocks, memory clock and PCIe link.
bool parked(Simulator& sim, const SimDevice& d, const Reading& r, double t) {
  return !r.activity.busy() && sim.processes(d.index, t).empty();
}

unsigned mem_clock(Simulator& sim, const SimDevice& d, const Reading& r, double t) {
  // HBM runs at one clock; GDDR boards drop theirs when parked.
  if (!d.model.hbm && parked(sim, d, r, t)) return d.model.idle_mem_mhz;
  return d.model.max_mem_mhz;
}

unsigned video_clock(const SimDevice& d, const Reading& r) {
  const double mhz = static_cast<double>(d.model.max_video_mhz) * r.sm_mhz / d.model.max_sm_mhz;
  return static_cast<unsigned>(std::lround(mhz / 15.0) * 15);
}

struct MemoryUse {
  unsigned long long total, reserved, used, free;
};

// A MIG device's memory: its profile's, nothing reserved apart (the GPU keeps the reservation), used =
// its processes + its driver state.
MemoryUse mig_memory_use(Simulator& sim, const MigDevice& m, double t) {
  MemoryUse u{};
  u.total = mib_bytes(m.spec.profile->memory_mib);
  u.reserved = 0;
  double used = kMigInstanceOverheadBytes;
  for (const GpuProcess& p : sim.processes(m.gpu, t)) {
    if (p.gpu_instance == m.spec.id) used += p.used_bytes;
  }
  u.used = std::min(static_cast<unsigned long long>(used), u.total);
  u.free = u.total - u.used;
  return u;
}

// nvmlMemory_v2_t semantics: total = reserved + used + free, used = processes + driver overhead.
MemoryUse memory_use(Simulator& sim, const SimDevice& d, double t) {
  MemoryUse m{};
  m.total = mib_bytes(d.model.memory_mib);
  m.reserved = mib_bytes(d.model.reserved_mib);
  // In MIG mode each instance's own driver state adds to the GPU's, so the instances' used memory
  // sums to the GPU's less its own overhead.
  double used = kDriverOverheadBytes + kMigInstanceOverheadBytes * static_cast<double>(sim.mig_devices(d.index, t).size());
  for (const GpuProcess& p : sim.processes(d.index, t)) used += p.used_bytes;
  m.used = std::min(static_cast<unsigned long long>(used), m.total - m.reserved);
  m.free = m.total - m.reserved - m.used;
  return m;
}

nvmlReturn_t pci_info(std::string_view function, nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return device_call(function, device, [&](Simulator&, SimDevice& d, double) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::memset(pci, 0, sizeof *pci);
    const GpuIdentity& id = d.identity;
    std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", id.bus_id_legacy.c_str());
    std::snprintf(pci->busId, sizeof pci->busId, "%s", id.bus_id.c_str());
    pci->domain = id.domain;
    pci->bus = id.bus;
    pci->device = id.device;
    pci->pciDeviceId = d.model.pci_device_id;
    pci->pciSubSystemId = d.model.pci_subsystem_id;
    return NVML_SUCCESS;
  });
}

// Both versions: the count probe (a short *pageCount answers INSUFFICIENT_SIZE with the count), then the
// addresses and, for _v2, when each page was retired (µs since the Unix epoch, the simulated wall clock).
nvmlReturn_t retired_page_list(std::string_view function, nvmlDevice_t device, int cause, unsigned int* pageCount,
                               unsigned long long* addresses, unsigned long long* timestamps) {
  return device_call(function, device, [&](Simulator& sim, SimDevice& d, double t) {
    if (pageCount == nullptr || (cause != NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS &&
                                 cause != NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!d.model.has_page_retirement()) return NVML_ERROR_NOT_SUPPORTED;
    std::vector<RetiredPage> pages;
    for (const RetiredPage& p : sim.health(d.index, t).retired_pages) {
      if (p.cause == cause) pages.push_back(p);
    }
    const auto n = static_cast<unsigned>(pages.size());
    if (*pageCount < n) {
      *pageCount = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned k = 0; k < n; ++k) {
      addresses[k] = pages[k].address;
      if (timestamps != nullptr) {
        timestamps[k] = static_cast<unsigned long long>(sim.clock().wall_ns_at(pages[k].at_s) / 1000);
      }
    }
    *pageCount = n;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t clock_reasons(std::string_view function, nvmlDevice_t device, unsigned long long* reasons) {
  return device_call(function, device, [&](Simulator&, SimDevice& d, double t) {
    if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = d.physics.at(t).reasons;
    return NVML_SUCCESS;
  });
}

template <class Field>
nvmlReturn_t unsigned_value(std::string_view function, nvmlDevice_t device, unsigned int* out, Field&& field) {
  return device_call(function, device, [&](Simulator& sim, SimDevice& d, double t) -> nvmlReturn_t {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = field(sim, d, t);
    return NVML_SUCCESS;
  });
}

template <class Text>
nvmlReturn_t string_value(std::string_view function, nvmlDevice_t device, char* buffer, unsigned int length,
                          Text&& text) {
  return device_call(function, device,
                     [&](Simulator&, SimDevice& d, double) { return copy_string(text(d), buffer, length); });
}

nvmlReturn_t codec_utilization(std::string_view function, nvmlDevice_t device, unsigned int* utilization,
                               unsigned int* period) {
  return device_call(function, device, [&](Simulator&, SimDevice&, double) {
    if (utilization == nullptr || period == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = 0;  // no scenario profile decodes or encodes video
    *period = kCodecPeriodUs;
    return NVML_SUCCESS;
  });
}

}  // namespace

// Name and UUID answer for MIG devices too: "NVIDIA H100 80GB HBM3 MIG 3g.40gb", "MIG-...".
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return any_device_call("nvmlDeviceGetName", device, [&](Simulator&, SimDevice& d, MigDevice* mig, double) {
    return copy_string(mig != nullptr ? std::string_view(mig->name) : d.model.name, name, length);
  });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return any_device_call("nvmlDeviceGetUUID", device, [&](Simulator&, SimDevice& d, MigDevice* mig, double) {
    return copy_string(mig != nullptr ? std::string_view(mig->uuid) : std::string_view(d.identity.uuid), uuid, length);
  });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) {
  return string_value("nvmlDeviceGetSerial", device, serial, length,
                      [](const SimDevice& d) -> std::string_view { return d.identity.serial; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber,
                                                              unsigned int length) {
  return string_value("nvmlDeviceGetBoardPartNumber", device, partNumber, length,
                      [](const SimDevice& d) { return d.model.board_part_number; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version, unsigned int length) {
  return string_value("nvmlDeviceGetVbiosVersion", device, version, length,
                      [](const SimDevice& d) { return d.model.vbios_version; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return unsigned_value("nvmlDeviceGetIndex", device, index, [](Simulator&, SimDevice& d, double) { return d.index; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return unsigned_value("nvmlDeviceGetMinorNumber", device, minorNumber,
                        [](Simulator&, SimDevice& d, double) { return d.index; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info("nvmlDeviceGetPciInfo_v3", device, pci);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info("nvmlDeviceGetPciInfo_v2", device, pci);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return pci_info("nvmlDeviceGetPciInfo", device, pci);
}

// v1 predates the reserved field: like the driver, it counts reserved memory as used.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return any_device_call("nvmlDeviceGetMemoryInfo", device, [&](Simulator& sim, SimDevice& d, MigDevice* mig, double t) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MemoryUse m = mig != nullptr ? mig_memory_use(sim, *mig, t) : memory_use(sim, d, t);
    memory->total = m.total;
    memory->used = m.used + m.reserved;
    memory->free = m.free;
    return NVML_SUCCESS;
  });
}

#if !GPUSCOPE_SIM_LEGACY
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return any_device_call("nvmlDeviceGetMemoryInfo_v2", device, [&](Simulator& sim, SimDevice& d, MigDevice* mig, double t) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const MemoryUse m = mig != nullptr ? mig_memory_use(sim, *mig, t) : memory_use(sim, d, t);
    memory->total = m.total;
    memory->reserved = m.reserved;
    memory->used = m.used;
    memory->free = m.free;
    return NVML_SUCCESS;
  });
}
#endif

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t* bar1Memory) {
  return device_call("nvmlDeviceGetBAR1MemoryInfo", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (bar1Memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // The driver maps a couple of MiB per context through BAR1.
    const auto contexts = static_cast<unsigned long long>(sim.processes(d.index, t).size());
    bar1Memory->bar1Total = mib_bytes(d.model.bar1_mib);
    bar1Memory->bar1Used = std::min(bar1Memory->bar1Total, mib_bytes(1) + contexts * mib_bytes(2));
    bar1Memory->bar1Free = bar1Memory->bar1Total - bar1Memory->bar1Used;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return device_call("nvmlDeviceGetUtilizationRates", device, [&](Simulator&, SimDevice& d, double t) {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // NVML: "On MIG-enabled GPUs, querying device utilization rates is not currently supported."
    if (d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;
    const Reading& r = d.physics.at(t);
    utilization->gpu = percent(r.activity.util_gpu);
    utilization->memory = percent(r.activity.util_mem);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int* temp) {
  return device_call("nvmlDeviceGetTemperature", device, [&](Simulator&, SimDevice& d, double t) {
    if (temp == nullptr || sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = static_cast<unsigned>(std::lround(d.physics.at(t).temp_c));
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, int thresholdType,
                                                                   unsigned int* temp) {
  return device_call("nvmlDeviceGetTemperatureThreshold", device, [&](Simulator&, SimDevice& d, double) {
    if (temp == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    switch (thresholdType) {
      case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        *temp = d.model.shutdown_c;
        return NVML_SUCCESS;
      case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        *temp = d.model.slowdown_c;
        return NVML_SUCCESS;
      case NVML_TEMPERATURE_THRESHOLD_MEM_MAX:
        if (!d.model.hbm) return NVML_ERROR_NOT_SUPPORTED;
        *temp = d.model.mem_max_c;
        return NVML_SUCCESS;
      case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
        *temp = d.model.gpu_max_c;
        return NVML_SUCCESS;
      default:
        // Newer thresholds (acoustic limits, TLimit) exist in NVML but not on these boards.
        return thresholdType > 0 && thresholdType < 8 ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return unsigned_value("nvmlDeviceGetPowerUsage", device, power,
                        [](Simulator&, SimDevice& d, double t) { return milli(d.physics.at(t).power_w); });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit) {
  return unsigned_value("nvmlDeviceGetEnforcedPowerLimit", device, limit,
                        [](Simulator&, SimDevice& d, double t) { return milli(d.physics.at(t).limit_w); });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit) {
  return unsigned_value("nvmlDeviceGetPowerManagementLimit", device, limit,
                        [](Simulator&, SimDevice& d, double) { return milli(d.spec.power_limit_w); });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* limit) {
  return unsigned_value("nvmlDeviceGetPowerManagementDefaultLimit", device, limit,
                        [](Simulator&, SimDevice& d, double) { return milli(d.model.tdp_w); });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  return device_call("nvmlDeviceGetTotalEnergyConsumption", device, [&](Simulator&, SimDevice& d, double t) {
    if (energy == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *energy = static_cast<unsigned long long>(d.physics.at(t).energy_j * 1000.0);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  return device_call("nvmlDeviceGetClockInfo", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (clock == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const Reading& r = d.physics.at(t);
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *clock = r.sm_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *clock = mem_clock(sim, d, r, t);
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        *clock = video_clock(d, r);
        return NVML_SUCCESS;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int* clock) {
  return device_call("nvmlDeviceGetMaxClockInfo", device, [&](Simulator&, SimDevice& d, double) {
    if (clock == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *clock = d.model.max_sm_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *clock = d.model.max_mem_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        *clock = d.model.max_video_mhz;
        return NVML_SUCCESS;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, int* pState) {
  return device_call("nvmlDeviceGetPerformanceState", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (pState == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *pState = parked(sim, d, d.physics.at(t), t) ? 8 : NVML_PSTATE_0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  return device_call("nvmlDeviceGetFanSpeed", device, [&](Simulator&, SimDevice& d, double t) {
    if (speed == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.model.fan) return NVML_ERROR_NOT_SUPPORTED;
    const double temp = d.physics.at(t).temp_c;
    *speed = static_cast<unsigned>(std::lround(std::clamp(30.0 + 1.2 * (temp - 35.0), 30.0, 100.0)));
    return NVML_SUCCESS;
  });
}

#if !GPUSCOPE_SIM_LEGACY
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                       unsigned long long* reasons) {
  return clock_reasons("nvmlDeviceGetCurrentClocksEventReasons", device, reasons);
}
#endif
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                          unsigned long long* reasons) {
  return clock_reasons("nvmlDeviceGetCurrentClocksThrottleReasons", device, reasons);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int perfPolicyType,
                                                              nvmlViolationTime_t* violTime) {
  return device_call("nvmlDeviceGetViolationStatus", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (violTime == nullptr || perfPolicyType < 0 || perfPolicyType >= NVML_PERF_POLICY_COUNT) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const Reading& r = d.physics.at(t);
    violTime->referenceTime = static_cast<unsigned long long>(sim.clock().wall_ns_at(t) / 1000);
    violTime->violationTime = static_cast<unsigned long long>(std::llround(r.violation_s[perfPolicyType] * 1e9));
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                                             unsigned long long* eccCounts) {
  return device_call("nvmlDeviceGetTotalEccErrors", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (eccCounts == nullptr || (errorType != NVML_MEMORY_ERROR_TYPE_CORRECTED &&
                                 errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
        (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const HealthCounts h = sim.health(d.index, t);
    *eccCounts = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? h.sbe : h.dbe;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current, int* pending) {
  return device_call("nvmlDeviceGetEccMode", device, [&](Simulator&, SimDevice&, double) {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *current = 1;
    *pending = 1;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                           unsigned int* uncRows, unsigned int* isPending,
                                                           unsigned int* failureOccurred) {
  return device_call("nvmlDeviceGetRemappedRows", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (corrRows == nullptr || uncRows == nullptr || isPending == nullptr || failureOccurred == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!d.model.has_row_remapping()) return NVML_ERROR_NOT_SUPPORTED;
    const HealthCounts h = sim.health(d.index, t);
    *corrRows = h.remapped_correctable;
    *uncRows = h.remapped_uncorrectable;
    *isPending = h.remap_pending ? 1 : 0;
    *failureOccurred = h.remap_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int* pageCount,
                                                           unsigned long long* addresses) {
  return retired_page_list("nvmlDeviceGetRetiredPages", device, cause, pageCount, addresses, nullptr);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, int cause, unsigned int* pageCount,
                                                              unsigned long long* addresses,
                                                              unsigned long long* timestamps) {
  return retired_page_list("nvmlDeviceGetRetiredPages_v2", device, cause, pageCount, addresses, timestamps);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int* isPending) {
  return device_call("nvmlDeviceGetRetiredPagesPendingStatus", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (isPending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.model.has_page_retirement()) return NVML_ERROR_NOT_SUPPORTED;
    // A retired page takes effect at the next driver reload, which the scenario never has.
    *isPending = sim.health(d.index, t).retired_pages.empty() ? 0 : 1;
    return NVML_SUCCESS;
  });
}

// KB/s where NVML's KB is 1024 bytes, so it matches GPM's MiB/s times 1024.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int* value) {
  return device_call("nvmlDeviceGetPcieThroughput", device, [&](Simulator&, SimDevice& d, double t) {
    if (value == nullptr || (counter != NVML_PCIE_UTIL_TX_BYTES && counter != NVML_PCIE_UTIL_RX_BYTES)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const Reading& r = d.physics.at(t);
    const double mibps = r.activity.metric[counter == NVML_PCIE_UTIL_TX_BYTES ? kPcieTxMiBps : kPcieRxMiBps];
    *value = static_cast<unsigned>(std::lround(mibps * 1024.0));
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return unsigned_value("nvmlDeviceGetPcieReplayCounter", device, value, [](Simulator&, SimDevice& d, double t) {
    return static_cast<unsigned>(d.physics.at(t).pcie_replays);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* currLinkGen) {
  return unsigned_value("nvmlDeviceGetCurrPcieLinkGeneration", device, currLinkGen,
                        [](Simulator& sim, SimDevice& d, double t) {
                          // ASPM drops a parked GPU's link to gen 1 until traffic returns.
                          return parked(sim, d, d.physics.at(t), t) ? 1U : d.spec.pcie_gen;
                        });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGen) {
  return unsigned_value("nvmlDeviceGetMaxPcieLinkGeneration", device, maxLinkGen,
                        [](Simulator&, SimDevice& d, double) { return d.model.pcie_gen; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* currLinkWidth) {
  return unsigned_value("nvmlDeviceGetCurrPcieLinkWidth", device, currLinkWidth,
                        [](Simulator&, SimDevice& d, double) { return d.spec.pcie_width; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth) {
  return unsigned_value("nvmlDeviceGetMaxPcieLinkWidth", device, maxLinkWidth,
                        [](Simulator&, SimDevice& d, double) { return d.model.pcie_width; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                                 unsigned int* samplingPeriodUs) {
  return codec_utilization("nvmlDeviceGetEncoderUtilization", device, utilization, samplingPeriodUs);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                                 unsigned int* samplingPeriodUs) {
  return codec_utilization("nvmlDeviceGetDecoderUtilization", device, utilization, samplingPeriodUs);
}

// MIG: mig_exports.cc.

namespace {
template <class Value>
nvmlReturn_t int_value(std::string_view function, nvmlDevice_t device, int* out, Value&& value) {
  return device_call(function, device, [&](Simulator&, SimDevice& d, double) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = value(d);
    return NVML_SUCCESS;
  });
}
}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode) {
  return int_value("nvmlDeviceGetPersistenceMode", device, mode, [](const SimDevice&) { return 1; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int* mode) {
  return int_value("nvmlDeviceGetComputeMode", device, mode, [](const SimDevice&) { return 0; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, int* isActive) {
  return int_value("nvmlDeviceGetDisplayActive", device, isActive, [](const SimDevice&) { return 0; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, int* display) {
  // 1 as the real H100 answers: nvidia-smi -q reads "Display Attached: Yes" (the VGA stub), nothing active.
  return int_value("nvmlDeviceGetDisplayMode", device, display, [](const SimDevice&) { return 1; });
}

// The driver model (WDDM/TCC) is a Windows notion.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, int* current, int* pending) {
  return device_call("nvmlDeviceGetDriverModel", device, [&](Simulator&, SimDevice&, double) {
    return current == nullptr && pending == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch) {
  return unsigned_value("nvmlDeviceGetArchitecture", device, arch,
                        [](Simulator&, SimDevice& d, double) { return d.model.architecture; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return device_call("nvmlDeviceGetCudaComputeCapability", device, [&](Simulator&, SimDevice& d, double) {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *major = d.model.cc_major;
    *minor = d.model.cc_minor;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* numCores) {
  return unsigned_value("nvmlDeviceGetNumGpuCores", device, numCores,
                        [](Simulator&, SimDevice& d, double) { return d.model.sm_count * d.model.cores_per_sm; });
}
