#include "sim/faults.h"

#include <algorithm>
#include <array>
#include <utility>

namespace gpuscope::sim {
namespace {

// Kept in the order of nvml_abi.h; tests check that it names exactly the header's functions.
constexpr std::array kFunctionNames = std::to_array<std::string_view>({
    "nvmlInit_v2",
    "nvmlInit",
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetNVMLVersion",
    "nvmlSystemGetCudaDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetHandleByUUID",
    "nvmlDeviceGetHandleByPciBusId_v2",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetBoardPartNumber",
    "nvmlDeviceGetVbiosVersion",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetPciInfo_v2",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetBAR1MemoryInfo",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetTemperatureThreshold",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetFanSpeed",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetViolationStatus",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetRetiredPages",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetComputeRunningProcesses_v2",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v2",
    "nvmlDeviceGetGraphicsRunningProcesses",
    "nvmlDeviceGetMPSComputeRunningProcesses_v3",
    "nvmlDeviceGetProcessUtilization",
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetDecoderUtilization",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceIsMigDeviceHandle",
    "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    "nvmlDeviceGetGpuInstanceById",
    "nvmlGpuInstanceGetInfo",
    "nvmlDeviceGetGpuInstances",
    "nvmlDeviceGetGpuInstanceProfileInfoV",
    "nvmlDeviceGetGpuInstanceProfileInfoByIdV",
    "nvmlDeviceGetAttributes_v2",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetComputeMode",
    "nvmlDeviceGetDisplayActive",
    "nvmlDeviceGetDisplayMode",
    "nvmlDeviceGetDriverModel",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetCudaComputeCapability",
    "nvmlDeviceGetNumGpuCores",
    "nvmlDeviceGetAccountingBufferSize",
    "nvmlDeviceGetAccountingMode",
    "nvmlDeviceGetAdaptiveClockInfoStatus",
    "nvmlDeviceGetAddressingMode",
    "nvmlDeviceGetApplicationsClock",
    "nvmlDeviceGetAutoBoostedClocksEnabled",
    "nvmlDeviceGetBoardId",
    "nvmlDeviceGetBrand",
    "nvmlDeviceGetC2cModeInfoV",
    "nvmlDeviceGetClkMonStatus",
    "nvmlDeviceGetConfComputeMemSizeInfo",
    "nvmlDeviceGetConfComputeProtectedMemoryUsage",
    "nvmlDeviceGetCurrentClockFreqs",
    "nvmlDeviceGetDefaultApplicationsClock",
    "nvmlDeviceGetDefaultEccMode",
    "nvmlDeviceGetDynamicPstatesInfo",
    "nvmlDeviceGetGpcClkVfOffset",
    "nvmlDeviceGetGpuFabricInfoV",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetGpuOperationMode",
    "nvmlDeviceGetGspFirmwareMode",
    "nvmlDeviceGetGspFirmwareVersion",
    "nvmlDeviceGetHostVgpuMode",
    "nvmlDeviceGetHostname_v1",
    "nvmlDeviceGetInforomConfigurationChecksum",
    "nvmlDeviceGetInforomImageVersion",
    "nvmlDeviceGetInforomVersion",
    "nvmlDeviceGetIrqNum",
    "nvmlDeviceGetJpgUtilization",
    "nvmlDeviceGetMPSComputeRunningProcesses",
    "nvmlDeviceGetMPSComputeRunningProcesses_v2",
    "nvmlDeviceGetMarginTemperature",
    "nvmlDeviceGetMaxCustomerBoostClock",
    "nvmlDeviceGetMemClkVfOffset",
    "nvmlDeviceGetMemoryBusWidth",
    "nvmlDeviceGetMemoryErrorCounter",
    "nvmlDeviceGetModuleId",
    "nvmlDeviceGetMultiGpuBoard",
    "nvmlDeviceGetNumFans",
    "nvmlDeviceGetNumaNodeId",
    "nvmlDeviceGetNvLinkRemoteDeviceType",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetOfaUtilization",
    "nvmlDeviceGetPcieLinkMaxSpeed",
    "nvmlDeviceGetPcieSpeed",
    "nvmlDeviceGetPlatformInfo",
    "nvmlDeviceGetPowerManagementLimitConstraints",
    "nvmlDeviceGetPowerManagementMode",
    "nvmlDeviceGetPowerMizerMode_v1",
    "nvmlDeviceGetTopologyGpuSet",
    "nvmlDeviceGetPowerSource",
    "nvmlDeviceGetPowerState",
    "nvmlDeviceGetProcessesUtilizationInfo",
    "nvmlDeviceGetRemappedRows_v2",
    "nvmlDeviceGetRowRemapperHistogram",
    "nvmlDeviceGetSamples",
    "nvmlDeviceGetSramEccErrorStatus",
    "nvmlDeviceGetSupportedClocksEventReasons",
    "nvmlDeviceGetSupportedClocksThrottleReasons",
    "nvmlDeviceGetSupportedMemoryClocks",
    "nvmlDeviceGetVgpuCapabilities",
    "nvmlDeviceGetVirtualizationMode",
    "nvmlDeviceValidateInforom",
    "nvmlGpmQueryIfStreamingEnabled",
    "nvmlDeviceGetRetiredPages_v2",
    "nvmlDeviceGetEncoderStats",
    "nvmlDeviceGetFBCStats",
    "nvmlDeviceGetPciInfoExt",
    "nvmlDeviceGetRepairStatus",
    "nvmlDeviceGetUnrepairableMemoryFlag_v1",
    "nvmlDeviceGetCapabilities",
    "nvmlDeviceGetPdi",
    "nvmlDeviceGetRunningProcessDetailList",
    "nvmlEventSetCreate",
    "nvmlDeviceRegisterEvents",
    "nvmlDeviceGetSupportedEventTypes",
    "nvmlEventSetWait_v2",
    "nvmlEventSetWait",
    "nvmlEventSetFree",
    "nvmlGpmQueryDeviceSupport",
    "nvmlGpmSampleAlloc",
    "nvmlGpmSampleFree",
    "nvmlGpmSampleGet",
    "nvmlGpmMigSampleGet",
    "nvmlGpmMetricsGet",
    "gpuscopeSimSetTime",
    "gpuscopeSimGetTime",
    "gpuscopeSimGetProcessName",
    "gpuscopeSimGetProcessUser",
    "gpuscopeSimGetHostname",
    "gpuscopeSimGetCallCount",
    "gpuscopeSimGetCallCountByIndex",
    "gpuscopeSimGetCallCost",
    "gpuscopeSimGetInitFailure",
    "gpuscopeSimUpdateSysfs",
});

// Lifecycle calls must work for a client to even see a fault, so "*" leaves them alone.
bool is_lifecycle(std::string_view fn) {
  return fn.starts_with("nvmlInit") || fn == "nvmlShutdown" || fn == "nvmlErrorString" || fn.starts_with("gpuscopeSim");
}

}  // namespace

std::span<const std::string_view> nvml_function_names() { return kFunctionNames; }

bool is_nvml_function(std::string_view name) {
  return std::find(kFunctionNames.begin(), kFunctionNames.end(), name) != kFunctionNames.end();
}

FaultBook::FaultBook(std::vector<FaultSpec> faults) : faults_(std::move(faults)), probes_(faults_.size(), 0) {}

bool FaultBook::matches_gpu(const FaultSpec& f, std::optional<unsigned> gpu) {
  return !f.gpu.has_value() || (gpu.has_value() && *gpu == *f.gpu);
}

FaultDecision FaultBook::decide(std::string_view function, std::optional<unsigned> gpu, double t) const {
  FaultDecision d;
  const bool lifecycle = is_lifecycle(function);
  for (const FaultSpec& f : faults_) {
    if (!active(f, t)) continue;
    switch (f.type) {
      case FaultType::kGpuLost:
        if (!lifecycle && gpu.has_value() && f.gpu.has_value() && *gpu == *f.gpu) d.lost = true;
        break;
      case FaultType::kError:
      case FaultType::kSlow: {
        const bool fn_match = f.function == function || (f.function == "*" && !lifecycle);
        if (!fn_match || !matches_gpu(f, gpu)) break;
        if (f.type == FaultType::kError && d.error == 0) d.error = f.error;
        if (f.type == FaultType::kSlow) d.delay_s = std::max(d.delay_s, f.delay_s);
        break;
      }
      case FaultType::kProcessListGrows:
        break;
    }
  }
  return d;
}

unsigned FaultBook::extra_processes(unsigned gpu, double t) const {
  unsigned extra = 0;
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const FaultSpec& f = faults_[i];
    if (f.type == FaultType::kProcessListGrows && active(f, t) && matches_gpu(f, gpu)) {
      extra += std::min(probes_[i], f.times) * f.extra;
    }
  }
  return extra;
}

void FaultBook::note_count_probe(unsigned gpu, double t) {
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    const FaultSpec& f = faults_[i];
    if (f.type == FaultType::kProcessListGrows && active(f, t) && matches_gpu(f, gpu) && probes_[i] < f.times) {
      ++probes_[i];
    }
  }
}

}  // namespace gpuscope::sim
