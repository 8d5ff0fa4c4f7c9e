// NVML's mode, power-management and clock-policy queries beyond the sampled catalog: power limits'
// range, power source and state, supported clock event reasons, accounting, operation mode,
// application and boost clocks, VF offsets, clock strings, dynamic P-states, margin temperature and
// the PCIe link's speeds. What nvidia-smi -q prints around its clocks and power sections.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/query_helpers.h"

using namespace gpuscope::sim;

namespace {

constexpr unsigned long long kModeAllClockEventReasons = 0x1FF;  // every bit nvml_abi.h names, as the H100 says
constexpr unsigned kModeAccountingBuffer = 4000;                  // processes the driver keeps accounting for

// As device_exports.cc: nothing running and nothing resident parks the clocks; GDDR drops its clock.
bool mode_parked(Simulator& sim, const SimDevice& d, const Reading& r, double t) {
  return !r.activity.busy() && sim.processes(d.index, t).empty();
}
unsigned mode_mem_clock(Simulator& sim, const SimDevice& d, const Reading& r, double t) {
  return !d.model.hbm && mode_parked(sim, d, r, t) ? d.model.idle_mem_mhz : d.model.max_mem_mhz;
}

// Application clocks are the boost clocks on these boards (nobody set them); Hopper's driver has no
// video application clock.
nvmlReturn_t app_clock(std::string_view function, nvmlDevice_t device, int type, unsigned int* clockMHz) {
  return device_call(function, device, [&](Simulator&, SimDevice& d, double) {
    if (clockMHz == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
        *clockMHz = d.model.max_sm_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_MEM:
        *clockMHz = d.model.max_mem_mhz;
        return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO:
        if (!board_facts(d.model).video_app_clock) return NVML_ERROR_NOT_SUPPORTED;
        *clockMHz = d.model.max_video_mhz;
        return NVML_SUCCESS;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

nvmlReturn_t supported_reasons(std::string_view function, nvmlDevice_t device, unsigned long long* reasons) {
  return out_value(function, device, reasons, [](Simulator&, SimDevice&, double) { return kModeAllClockEventReasons; });
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                              unsigned int* minLimit,
                                                                              unsigned int* maxLimit) {
  return device_call("nvmlDeviceGetPowerManagementLimitConstraints", device, [&](Simulator&, SimDevice& d, double) {
    if (minLimit == nullptr || maxLimit == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minLimit = static_cast<unsigned>(std::lround(d.model.min_limit_w * 1000.0));
    *maxLimit = static_cast<unsigned>(std::lround(d.model.tdp_w * 1000.0));
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, int* mode) {
  return out_value("nvmlDeviceGetPowerManagementMode", device, mode,
                   [](Simulator&, SimDevice&, double) { return NVML_FEATURE_ENABLED; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerSource(nvmlDevice_t device, unsigned int* powerSource) {
  return out_value("nvmlDeviceGetPowerSource", device, powerSource, [](Simulator&, SimDevice&, double) { return 0U; });
}

// The deprecated name of the performance state: the same answer as nvmlDeviceGetPerformanceState.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, int* pState) {
  return out_value("nvmlDeviceGetPowerState", device, pState, [](Simulator& sim, SimDevice& d, double t) {
    return mode_parked(sim, d, d.physics.at(t), t) ? 8 : NVML_PSTATE_0;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                                         unsigned long long* supportedClocksEventReasons) {
  return supported_reasons("nvmlDeviceGetSupportedClocksEventReasons", device, supportedClocksEventReasons);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* supportedClocksThrottleReasons) {
  return supported_reasons("nvmlDeviceGetSupportedClocksThrottleReasons", device, supportedClocksThrottleReasons);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, int* mode) {
  return out_value("nvmlDeviceGetAccountingMode", device, mode,
                   [](Simulator&, SimDevice&, double) { return NVML_FEATURE_DISABLED; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device, unsigned int* bufferSize) {
  return out_value("nvmlDeviceGetAccountingBufferSize", device, bufferSize,
                   [](Simulator&, SimDevice&, double) { return kModeAccountingBuffer; });
}

// GPU operation modes (GOM) exist on GeForce Titan and old Tesla boards only.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuOperationMode(nvmlDevice_t device, int* current, int* pending) {
  return not_supported("nvmlDeviceGetGpuOperationMode", device, current != nullptr && pending != nullptr);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, int clockType,
                                                                unsigned int* clockMHz) {
  return app_clock("nvmlDeviceGetApplicationsClock", device, clockType, clockMHz);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, int clockType,
                                                                       unsigned int* clockMHz) {
  return app_clock("nvmlDeviceGetDefaultApplicationsClock", device, clockType, clockMHz);
}

// nvidia-smi -q's "Max Customer Boost Clocks" shows the graphics clock alone.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxCustomerBoostClock(nvmlDevice_t device, int clockType,
                                                                    unsigned int* clockMHz) {
  return device_call("nvmlDeviceGetMaxCustomerBoostClock", device, [&](Simulator&, SimDevice& d, double) {
    if (clockMHz == nullptr || clockType < NVML_CLOCK_GRAPHICS || clockType > NVML_CLOCK_VIDEO) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (clockType != NVML_CLOCK_GRAPHICS) return NVML_ERROR_NOT_SUPPORTED;
    *clockMHz = d.model.max_sm_mhz;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int* count,
                                                                    unsigned int* clocksMHz) {
  return device_call("nvmlDeviceGetSupportedMemoryClocks", device, [&](Simulator&, SimDevice& d, double) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const BoardFacts& f = board_facts(d.model);
    std::vector<unsigned> clocks;
    for (const unsigned c : f.memory_clocks) {
      if (c != 0) clocks.push_back(c);
    }
    if (clocks.empty()) clocks.push_back(d.model.max_mem_mhz);
    const auto n = static_cast<unsigned>(clocks.size());
    if (*count < n || clocksMHz == nullptr) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    std::copy(clocks.begin(), clocks.end(), clocksMHz);
    *count = n;
    return NVML_SUCCESS;
  });
}

// Auto boost is a GeForce/Kepler-era policy; data-center boards answer NOT_SUPPORTED.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetAutoBoostedClocksEnabled(nvmlDevice_t device, int* isEnabled,
                                                                       int* defaultIsEnabled) {
  return not_supported("nvmlDeviceGetAutoBoostedClocksEnabled", device,
                       isEnabled != nullptr && defaultIsEnabled != nullptr);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetAdaptiveClockInfoStatus(nvmlDevice_t device,
                                                                      unsigned int* adaptiveClockStatus) {
  return out_value("nvmlDeviceGetAdaptiveClockInfoStatus", device, adaptiveClockStatus,
                   [](Simulator&, SimDevice&, double) { return 1U; });  // NVML_ADAPTIVE_CLOCKING_INFO_STATUS_ENABLED
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpcClkVfOffset(nvmlDevice_t device, int* offset) {
  return out_value("nvmlDeviceGetGpcClkVfOffset", device, offset, [](Simulator&, SimDevice&, double) { return 0; });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemClkVfOffset(nvmlDevice_t device, int* offset) {
  return out_value("nvmlDeviceGetMemClkVfOffset", device, offset, [](Simulator&, SimDevice&, double) { return 0; });
}

// The driver's clock string (what nvidia-settings shows): the current graphics and memory clocks with
// their range in the current P-state, and the memory's transfer rate (double data rate).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClockFreqs(nvmlDevice_t device,
                                                                nvmlDeviceCurrentClockFreqs_t* currentClockFreqs) {
  return device_call("nvmlDeviceGetCurrentClockFreqs", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (currentClockFreqs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (currentClockFreqs->version != nvmlDeviceCurrentClockFreqs_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const Reading& r = d.physics.at(t);
    const unsigned mem = mode_mem_clock(sim, d, r, t);
    const unsigned mem_min = d.model.hbm ? d.model.max_mem_mhz : d.model.idle_mem_mhz;
    std::snprintf(currentClockFreqs->str, sizeof currentClockFreqs->str,
                  "nvclock=%u, nvclockmin=%u, nvclockmax=%u, nvclockeditable=0, memclock=%u, memclockmin=%u, "
                  "memclockmax=%u, memclockeditable=0, memTransferRate=%u, memTransferRatemin=%u, "
                  "memTransferRatemax=%u, memTransferRateeditable=0",
                  r.sm_mhz, d.model.idle_sm_mhz, d.model.max_sm_mhz, mem, mem_min, d.model.max_mem_mhz, 2 * mem,
                  2 * mem_min, 2 * d.model.max_mem_mhz);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetClkMonStatus(nvmlDevice_t device, nvmlClkMonStatus_t* status) {
  return not_supported("nvmlDeviceGetClkMonStatus", device, status != nullptr);
}

// The driver's P-state controller: utilization of the graphics, framebuffer, video and bus domains
// with the thresholds it moves P-states at.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDynamicPstatesInfo(nvmlDevice_t device,
                                                                 nvmlGpuDynamicPstatesInfo_t* pDynamicPstatesInfo) {
  return device_call("nvmlDeviceGetDynamicPstatesInfo", device, [&](Simulator&, SimDevice& d, double t) {
    if (pDynamicPstatesInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const Reading& r = d.physics.at(t);
    *pDynamicPstatesInfo = nvmlGpuDynamicPstatesInfo_t{};
    const auto pct = [](double ratio) { return static_cast<unsigned>(std::lround(std::clamp(ratio, 0.0, 1.0) * 100)); };
    const double pcie_ratio = std::clamp(
        (r.activity.metric[kPcieTxMiBps] + r.activity.metric[kPcieRxMiBps]) /
            std::max(1.0, 2.0 * pcie_link_mibps(d.spec.pcie_gen, d.spec.pcie_width)), 0.0, 1.0);
    const unsigned domains[4] = {pct(r.activity.util_gpu), pct(r.activity.util_mem), 0, pct(pcie_ratio)};
    for (unsigned i = 0; i < 4; ++i) {
      auto& u = pDynamicPstatesInfo->utilization[i];
      u.bIsPresent = 1;
      u.percentage = domains[i];
      u.incThreshold = 30;
      u.decThreshold = 15;
    }
    return NVML_SUCCESS;
  });
}

// How far the die is below its maximum operating temperature (nvidia-smi's "GPU T.Limit Temp").
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMarginTemperature(nvmlDevice_t device,
                                                                nvmlMarginTemperature_t* marginTempInfo) {
  return device_call("nvmlDeviceGetMarginTemperature", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (marginTempInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (marginTempInfo->version != nvmlMarginTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    marginTempInfo->marginTemperature =
        static_cast<int>(d.model.gpu_max_c) - static_cast<int>(std::lround(d.physics.at(t).temp_c));
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                       unsigned int* maxLinkGenDevice) {
  return out_value("nvmlDeviceGetGpuMaxPcieLinkGeneration", device, maxLinkGenDevice,
                   [](Simulator&, SimDevice& d, double) { return d.model.pcie_gen; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieLinkMaxSpeed(nvmlDevice_t device, unsigned int* maxSpeed) {
  return out_value("nvmlDeviceGetPcieLinkMaxSpeed", device, maxSpeed,
                   [](Simulator&, SimDevice& d, double) { return pcie_max_speed_enum(d.spec.pcie_gen); });
}

// The link's current per-lane speed: follows nvmlDeviceGetCurrPcieLinkGeneration (a parked link
// trains down to gen 1).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPcieSpeed(nvmlDevice_t device, unsigned int* pcieSpeed) {
  return out_value("nvmlDeviceGetPcieSpeed", device, pcieSpeed, [](Simulator& sim, SimDevice& d, double t) {
    return pcie_speed_mbps(mode_parked(sim, d, d.physics.at(t), t) ? 1U : d.spec.pcie_gen);
  });
}
