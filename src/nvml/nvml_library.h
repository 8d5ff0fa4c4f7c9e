// NvmlLibrary: one dlopen()ed NVML library and its symbol table, filled by dlsym with the newest
// versioned name first and older fallbacks; a missing symbol leaves its slot null (that field unsupported).
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nvml/nvml_abi.h"

namespace gpuscope::nvml {

struct BackendError;

class NvmlLibrary {
 public:
  // Opens the first of `candidates` that loads (a path, or a bare soname for the linker's search).
  // Fails with kLibraryNotFound naming every candidate tried, or kSymbolMissing for a library that
  // is not NVML. `named_by`: what chose the one candidate ("--nvml-lib", "GPUSCOPE_NVML_LIB", ...),
  // for an error that points there and not at the driver's installation; empty for the default search.
  // `count_calls`: every NVML call goes through a counter (call_counts()); one such library per process.
  static std::expected<std::unique_ptr<NvmlLibrary>, BackendError> open(const std::vector<std::string>& candidates,
                                                                        std::string_view named_by = {},
                                                                        bool count_calls = false);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // The file actually loaded, resolved through symlinks.
  const std::string& path() const { return path_; }
  // For each slot, the symbol name that filled it ("" when missing): shown by `gpuscope info`, tested.
  const std::vector<std::pair<std::string, std::string>>& resolved() const { return resolved_; }
  bool is_simulator() const { return SimGetTime != nullptr; }
  // Calls made to each resolved NVML function (its newest symbol name) since open; empty unless the
  // library was opened counting (the second counting library of a process does not count).
  std::vector<std::pair<std::string_view, std::uint64_t>> call_counts() const;
  bool counts_calls() const { return counting_; }
  // nvmlErrorString, or a fallback when the library lacks it.
  std::string error_string(nvmlReturn_t code) const;

#define GPUSCOPE_NVML_SLOT(name) decltype(&::name) name = nullptr
  // Slots are named after the newest symbol they may hold.
  GPUSCOPE_NVML_SLOT(nvmlInit_v2);  // ← nvmlInit
  GPUSCOPE_NVML_SLOT(nvmlShutdown);
  GPUSCOPE_NVML_SLOT(nvmlErrorString);
  GPUSCOPE_NVML_SLOT(nvmlSystemGetDriverVersion);
  GPUSCOPE_NVML_SLOT(nvmlSystemGetNVMLVersion);
  GPUSCOPE_NVML_SLOT(nvmlSystemGetCudaDriverVersion_v2);  // ← nvmlSystemGetCudaDriverVersion
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetCount_v2);              // ← nvmlDeviceGetCount
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetHandleByIndex_v2);      // ← nvmlDeviceGetHandleByIndex
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetHandleByPciBusId_v2);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetName);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetUUID);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetSerial);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetBoardPartNumber);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetVbiosVersion);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetIndex);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMinorNumber);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPciInfo_v3);  // ← nvmlDeviceGetPciInfo_v2
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMemoryInfo_v2);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMemoryInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetBAR1MemoryInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetUtilizationRates);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetTemperature);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetTemperatureThreshold);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPowerUsage);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetEnforcedPowerLimit);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPowerManagementLimit);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPowerManagementDefaultLimit);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetTotalEnergyConsumption);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetClockInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMaxClockInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPerformanceState);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetFanSpeed);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetCurrentClocksEventReasons);  // ← ...ThrottleReasons
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetViolationStatus);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetTotalEccErrors);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetEccMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRemappedRows);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRetiredPages);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRetiredPagesPendingStatus);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPcieThroughput);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPcieReplayCounter);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetCurrPcieLinkGeneration);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMaxPcieLinkGeneration);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetCurrPcieLinkWidth);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMaxPcieLinkWidth);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetComputeRunningProcesses_v3);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetComputeRunningProcesses_v2);  // 24-byte entries, like _v3
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetComputeRunningProcesses);     // 16-byte entries (v1)
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGraphicsRunningProcesses_v3);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGraphicsRunningProcesses_v2);  // 24-byte entries, like _v3
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGraphicsRunningProcesses);     // 16-byte entries (v1)
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetProcessUtilization);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetEncoderUtilization);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetDecoderUtilization);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetFieldValues);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMigMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPersistenceMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetArchitecture);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetCudaComputeCapability);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetNumGpuCores);
  // What nvidia-smi shows beyond the catalog (NvmlBackend::details, pmon).
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetJpgUtilization);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetOfaUtilization);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetProcessesUtilizationInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPowerManagementLimitConstraints);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPowerManagementMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetSupportedClocksEventReasons);  // ← ...SupportedClocksThrottleReasons
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetComputeMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetDisplayMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetDisplayActive);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetDriverModel);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetAccountingMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetAccountingBufferSize);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRowRemapperHistogram);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRemappedRows_v2);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGpuMaxPcieLinkGeneration);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPcieSpeed);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetIrqNum);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGpuOperationMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetInforomImageVersion);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetInforomVersion);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetInforomConfigurationChecksum);
  GPUSCOPE_NVML_SLOT(nvmlDeviceValidateInforom);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetApplicationsClock);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetDefaultApplicationsClock);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMaxCustomerBoostClock);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGspFirmwareMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGspFirmwareVersion);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetConfComputeProtectedMemoryUsage);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMemoryErrorCounter);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetSramEccErrorStatus);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetDefaultEccMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGpuFabricInfoV);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPlatformInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetAddressingMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMarginTemperature);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetHostname_v1);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetVgpuCapabilities);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetVirtualizationMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetHostVgpuMode);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetBrand);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetBoardId);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMultiGpuBoard);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetModuleId);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetNumFans);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMemoryBusWidth);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetNumaNodeId);
  GPUSCOPE_NVML_SLOT(nvmlEventSetCreate);
  GPUSCOPE_NVML_SLOT(nvmlDeviceRegisterEvents);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetSupportedEventTypes);
  GPUSCOPE_NVML_SLOT(nvmlEventSetWait_v2);  // ← nvmlEventSetWait
  GPUSCOPE_NVML_SLOT(nvmlEventSetFree);
  GPUSCOPE_NVML_SLOT(nvmlGpmQueryDeviceSupport);
  GPUSCOPE_NVML_SLOT(nvmlGpmSampleAlloc);
  GPUSCOPE_NVML_SLOT(nvmlGpmSampleFree);
  GPUSCOPE_NVML_SLOT(nvmlGpmSampleGet);
  GPUSCOPE_NVML_SLOT(nvmlGpmMetricsGet);
  // MIG (mig_reader.cc).
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMaxMigDeviceCount);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetMigDeviceHandleByIndex);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGpuInstanceId);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetComputeInstanceId);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGpuInstanceById);
  GPUSCOPE_NVML_SLOT(nvmlGpuInstanceGetInfo);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetGpuInstanceProfileInfoV);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetAttributes_v2);
  GPUSCOPE_NVML_SLOT(nvmlGpmMigSampleGet);
  // query --query-retired-pages and query -q's encoder, FBC, C2C, PCI class, repair and capability keys.
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRetiredPages_v2);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetEncoderStats);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetFBCStats);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetC2cModeInfoV);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPciInfoExt);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRepairStatus);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetUnrepairableMemoryFlag_v1);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetCapabilities);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetPdi);
  GPUSCOPE_NVML_SLOT(nvmlDeviceGetRunningProcessDetailList);  // pmon -s m's ccpm
#undef GPUSCOPE_NVML_SLOT
  // gpuscope's simulator only; null on a real driver.
  decltype(&::gpuscopeSimSetTime) SimSetTime = nullptr;
  decltype(&::gpuscopeSimGetTime) SimGetTime = nullptr;
  decltype(&::gpuscopeSimGetProcessName) SimGetProcessName = nullptr;
  decltype(&::gpuscopeSimGetProcessUser) SimGetProcessUser = nullptr;
  decltype(&::gpuscopeSimGetHostname) SimGetHostname = nullptr;
  decltype(&::gpuscopeSimUpdateSysfs) SimUpdateSysfs = nullptr;
  decltype(&::gpuscopeSimGetInitFailure) SimGetInitFailure = nullptr;

 private:
  NvmlLibrary() = default;
  template <int Id, class Fn>
  void resolve(Fn& slot, std::initializer_list<const char*> names);
  void resolve_all();

  void* handle_ = nullptr;
  std::string path_;
  std::vector<std::pair<std::string, std::string>> resolved_;
  bool counting_ = false;
  std::vector<std::pair<std::string_view, std::unique_ptr<std::atomic<std::uint64_t>>>> call_counts_;
};

}  // namespace gpuscope::nvml
