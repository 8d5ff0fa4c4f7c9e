#include "nvml/nvml_library.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "nvml/nvml_backend.h"

namespace gpuscope::nvml {
namespace {

std::string resolved_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0') {
    return fallback;
  }
  char buf[PATH_MAX];
  if (realpath(map->l_name, buf) != nullptr) return buf;
  return map->l_name;
}

// Whether a library that counts its calls is open (CountedCall's state is per process).
std::atomic<bool> counting_library_open{false};

}  // namespace

std::expected<std::unique_ptr<NvmlLibrary>, BackendError> NvmlLibrary::open(
    const std::vector<std::string>& candidates, std::string_view named_by, bool count_calls) {
  std::string tried;
  for (const auto& name : candidates) {
    // RTLD_LOCAL: two different NVML libraries in one process (tests) must not see each other's symbols.
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      if (!tried.empty()) tried += "; ";
      tried += why != nullptr ? std::string(why) : name + ": cannot open";
      continue;
    }
    std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
    lib->handle_ = handle;
    lib->path_ = resolved_path(handle, name);
    // Counting goes through per-slot static thunks: a second counting library in the process would
    // take them over, so it is opened without counting.
    lib->counting_ = count_calls && !counting_library_open.exchange(true);
    lib->resolve_all();
    if (lib->nvmlInit_v2 == nullptr || lib->nvmlDeviceGetCount_v2 == nullptr ||
        lib->nvmlDeviceGetHandleByIndex_v2 == nullptr) {
      return std::unexpected(BackendError{
          BackendErrorKind::kSymbolMissing, 0,
          fmt::format("{} is not a usable NVML library: it lacks nvmlInit, nvmlDeviceGetCount or "
                      "nvmlDeviceGetHandleByIndex (a stub library?)",
                      lib->path_)});
    }
    return lib;
  }
  if (!named_by.empty()) {
    // The library was named on purpose: the fix is there, not in installing a driver.
    const bool simulator = named_by.find("--simulate") != std::string_view::npos;
    return std::unexpected(BackendError{
        BackendErrorKind::kLibraryNotFound, 0,
        fmt::format("cannot load the NVML library named by {} ({}){}", named_by, tried,
                    simulator ? "" : "; fix the path, or use --simulate to run on a simulated GPU node")});
  }
  std::string names;
  for (const auto& c : candidates) names += (names.empty() ? "" : ", ") + c;
  return std::unexpected(BackendError{
      BackendErrorKind::kLibraryNotFound, 0,
      fmt::format("NVML library not found (searched {}: {}); is the NVIDIA driver installed? "
                  "Use --nvml-lib PATH to name it, or --simulate to run on a simulated GPU node",
                  names, tried)});
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
  if (counting_) counting_library_open.store(false);
}

std::string NvmlLibrary::error_string(nvmlReturn_t code) const {
  if (nvmlErrorString != nullptr) {
    if (const char* s = nvmlErrorString(code); s != nullptr) return s;
  }
  return fmt::format("NVML error {}", static_cast<int>(code));
}

namespace {

// A slot's stand-in while calls are counted: counts, then calls the library's function. One per slot
// (Id), so its state is static: one counting library per process (NvmlLibrary::open enforces it).
template <int Id, class R, class... A>
struct CountedCall {
  static inline R (*real)(A...) = nullptr;
  static inline std::atomic<std::uint64_t>* count = nullptr;
  static R call(A... args) {
    count->fetch_add(1, std::memory_order_relaxed);
    return real(args...);
  }
};

template <int Id, class R, class... A>
void count_through(R (*&slot)(A...), std::atomic<std::uint64_t>* count) {
  using Thunk = CountedCall<Id, R, A...>;
  Thunk::real = slot;
  Thunk::count = count;
  slot = &Thunk::call;
}

}  // namespace

template <int Id, class Fn>
void NvmlLibrary::resolve(Fn& slot, std::initializer_list<const char*> names) {
  std::string found;
  for (const char* name : names) {
    if (void* sym = dlsym(handle_, name); sym != nullptr) {
      slot = reinterpret_cast<Fn>(sym);
      found = name;
      break;
    }
  }
  const char* symbol = *names.begin();
  resolved_.emplace_back(symbol, found);
  if (counting_ && slot != nullptr && std::string_view(symbol).starts_with("nvml")) {
    call_counts_.push_back({symbol, std::make_unique<std::atomic<std::uint64_t>>(0)});
    count_through<Id>(slot, call_counts_.back().second.get());
  }
}

std::vector<std::pair<std::string_view, std::uint64_t>> NvmlLibrary::call_counts() const {
  std::vector<std::pair<std::string_view, std::uint64_t>> out;
  out.reserve(call_counts_.size());
  for (const auto& [name, count] : call_counts_) out.emplace_back(name, count->load(std::memory_order_relaxed));
  return out;
}

void NvmlLibrary::resolve_all() {
  // Same signature, newer first: the unversioned names are the oldest ABI.
  resolve<__COUNTER__>(nvmlInit_v2, {"nvmlInit_v2", "nvmlInit"});
  resolve<__COUNTER__>(nvmlShutdown, {"nvmlShutdown"});
  resolve<__COUNTER__>(nvmlErrorString, {"nvmlErrorString"});
  resolve<__COUNTER__>(nvmlSystemGetDriverVersion, {"nvmlSystemGetDriverVersion"});
  resolve<__COUNTER__>(nvmlSystemGetNVMLVersion, {"nvmlSystemGetNVMLVersion"});
  resolve<__COUNTER__>(nvmlSystemGetCudaDriverVersion_v2, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  resolve<__COUNTER__>(nvmlDeviceGetCount_v2, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  resolve<__COUNTER__>(nvmlDeviceGetHandleByIndex_v2, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  resolve<__COUNTER__>(nvmlDeviceGetHandleByPciBusId_v2, {"nvmlDeviceGetHandleByPciBusId_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetName, {"nvmlDeviceGetName"});
  resolve<__COUNTER__>(nvmlDeviceGetUUID, {"nvmlDeviceGetUUID"});
  resolve<__COUNTER__>(nvmlDeviceGetSerial, {"nvmlDeviceGetSerial"});
  resolve<__COUNTER__>(nvmlDeviceGetBoardPartNumber, {"nvmlDeviceGetBoardPartNumber"});
  resolve<__COUNTER__>(nvmlDeviceGetVbiosVersion, {"nvmlDeviceGetVbiosVersion"});
  resolve<__COUNTER__>(nvmlDeviceGetIndex, {"nvmlDeviceGetIndex"});
  resolve<__COUNTER__>(nvmlDeviceGetMinorNumber, {"nvmlDeviceGetMinorNumber"});
  resolve<__COUNTER__>(nvmlDeviceGetPciInfo_v3, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetMemoryInfo_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetMemoryInfo, {"nvmlDeviceGetMemoryInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetBAR1MemoryInfo, {"nvmlDeviceGetBAR1MemoryInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetUtilizationRates, {"nvmlDeviceGetUtilizationRates"});
  resolve<__COUNTER__>(nvmlDeviceGetTemperature, {"nvmlDeviceGetTemperature"});
  resolve<__COUNTER__>(nvmlDeviceGetTemperatureThreshold, {"nvmlDeviceGetTemperatureThreshold"});
  resolve<__COUNTER__>(nvmlDeviceGetPowerUsage, {"nvmlDeviceGetPowerUsage"});
  resolve<__COUNTER__>(nvmlDeviceGetEnforcedPowerLimit, {"nvmlDeviceGetEnforcedPowerLimit"});
  resolve<__COUNTER__>(nvmlDeviceGetPowerManagementLimit, {"nvmlDeviceGetPowerManagementLimit"});
  resolve<__COUNTER__>(nvmlDeviceGetPowerManagementDefaultLimit, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  resolve<__COUNTER__>(nvmlDeviceGetTotalEnergyConsumption, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve<__COUNTER__>(nvmlDeviceGetClockInfo, {"nvmlDeviceGetClockInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetMaxClockInfo, {"nvmlDeviceGetMaxClockInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetPerformanceState, {"nvmlDeviceGetPerformanceState"});
  resolve<__COUNTER__>(nvmlDeviceGetFanSpeed, {"nvmlDeviceGetFanSpeed"});
  resolve<__COUNTER__>(nvmlDeviceGetCurrentClocksEventReasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve<__COUNTER__>(nvmlDeviceGetViolationStatus, {"nvmlDeviceGetViolationStatus"});
  resolve<__COUNTER__>(nvmlDeviceGetTotalEccErrors, {"nvmlDeviceGetTotalEccErrors"});
  resolve<__COUNTER__>(nvmlDeviceGetEccMode, {"nvmlDeviceGetEccMode"});
  resolve<__COUNTER__>(nvmlDeviceGetRemappedRows, {"nvmlDeviceGetRemappedRows"});
  resolve<__COUNTER__>(nvmlDeviceGetRetiredPages, {"nvmlDeviceGetRetiredPages"});
  resolve<__COUNTER__>(nvmlDeviceGetRetiredPagesPendingStatus, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  resolve<__COUNTER__>(nvmlDeviceGetPcieThroughput, {"nvmlDeviceGetPcieThroughput"});
  resolve<__COUNTER__>(nvmlDeviceGetPcieReplayCounter, {"nvmlDeviceGetPcieReplayCounter"});
  resolve<__COUNTER__>(nvmlDeviceGetCurrPcieLinkGeneration, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  resolve<__COUNTER__>(nvmlDeviceGetMaxPcieLinkGeneration, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  resolve<__COUNTER__>(nvmlDeviceGetCurrPcieLinkWidth, {"nvmlDeviceGetCurrPcieLinkWidth"});
  resolve<__COUNTER__>(nvmlDeviceGetMaxPcieLinkWidth, {"nvmlDeviceGetMaxPcieLinkWidth"});
  // _v3 and _v2 fill the 24-byte nvmlProcessInfo_t, the unversioned v1 a 16-byte struct: each has
  // its own slot, since each fallback may answer FUNCTION_NOT_FOUND on its own.
  resolve<__COUNTER__>(nvmlDeviceGetComputeRunningProcesses_v3, {"nvmlDeviceGetComputeRunningProcesses_v3"});
  resolve<__COUNTER__>(nvmlDeviceGetComputeRunningProcesses_v2, {"nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetComputeRunningProcesses, {"nvmlDeviceGetComputeRunningProcesses"});
  resolve<__COUNTER__>(nvmlDeviceGetGraphicsRunningProcesses_v3, {"nvmlDeviceGetGraphicsRunningProcesses_v3"});
  resolve<__COUNTER__>(nvmlDeviceGetGraphicsRunningProcesses_v2, {"nvmlDeviceGetGraphicsRunningProcesses_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetGraphicsRunningProcesses, {"nvmlDeviceGetGraphicsRunningProcesses"});
  resolve<__COUNTER__>(nvmlDeviceGetProcessUtilization, {"nvmlDeviceGetProcessUtilization"});
  resolve<__COUNTER__>(nvmlDeviceGetEncoderUtilization, {"nvmlDeviceGetEncoderUtilization"});
  resolve<__COUNTER__>(nvmlDeviceGetDecoderUtilization, {"nvmlDeviceGetDecoderUtilization"});
  resolve<__COUNTER__>(nvmlDeviceGetFieldValues, {"nvmlDeviceGetFieldValues"});
  resolve<__COUNTER__>(nvmlDeviceGetMigMode, {"nvmlDeviceGetMigMode"});
  resolve<__COUNTER__>(nvmlDeviceGetPersistenceMode, {"nvmlDeviceGetPersistenceMode"});
  resolve<__COUNTER__>(nvmlDeviceGetArchitecture, {"nvmlDeviceGetArchitecture"});
  resolve<__COUNTER__>(nvmlDeviceGetCudaComputeCapability, {"nvmlDeviceGetCudaComputeCapability"});
  resolve<__COUNTER__>(nvmlDeviceGetNumGpuCores, {"nvmlDeviceGetNumGpuCores"});
  resolve<__COUNTER__>(nvmlDeviceGetJpgUtilization, {"nvmlDeviceGetJpgUtilization"});
  resolve<__COUNTER__>(nvmlDeviceGetOfaUtilization, {"nvmlDeviceGetOfaUtilization"});
  resolve<__COUNTER__>(nvmlDeviceGetProcessesUtilizationInfo, {"nvmlDeviceGetProcessesUtilizationInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetPowerManagementLimitConstraints, {"nvmlDeviceGetPowerManagementLimitConstraints"});
  resolve<__COUNTER__>(nvmlDeviceGetPowerManagementMode, {"nvmlDeviceGetPowerManagementMode"});
  resolve<__COUNTER__>(nvmlDeviceGetSupportedClocksEventReasons, {"nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons"});
  resolve<__COUNTER__>(nvmlDeviceGetComputeMode, {"nvmlDeviceGetComputeMode"});
  resolve<__COUNTER__>(nvmlDeviceGetDisplayMode, {"nvmlDeviceGetDisplayMode"});
  resolve<__COUNTER__>(nvmlDeviceGetDisplayActive, {"nvmlDeviceGetDisplayActive"});
  resolve<__COUNTER__>(nvmlDeviceGetDriverModel, {"nvmlDeviceGetDriverModel"});
  resolve<__COUNTER__>(nvmlDeviceGetAccountingMode, {"nvmlDeviceGetAccountingMode"});
  resolve<__COUNTER__>(nvmlDeviceGetAccountingBufferSize, {"nvmlDeviceGetAccountingBufferSize"});
  resolve<__COUNTER__>(nvmlDeviceGetRowRemapperHistogram, {"nvmlDeviceGetRowRemapperHistogram"});
  resolve<__COUNTER__>(nvmlDeviceGetRemappedRows_v2, {"nvmlDeviceGetRemappedRows_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetGpuMaxPcieLinkGeneration, {"nvmlDeviceGetGpuMaxPcieLinkGeneration"});
  resolve<__COUNTER__>(nvmlDeviceGetPcieSpeed, {"nvmlDeviceGetPcieSpeed"});
  resolve<__COUNTER__>(nvmlDeviceGetIrqNum, {"nvmlDeviceGetIrqNum"});
  resolve<__COUNTER__>(nvmlDeviceGetGpuOperationMode, {"nvmlDeviceGetGpuOperationMode"});
  resolve<__COUNTER__>(nvmlDeviceGetInforomImageVersion, {"nvmlDeviceGetInforomImageVersion"});
  resolve<__COUNTER__>(nvmlDeviceGetInforomVersion, {"nvmlDeviceGetInforomVersion"});
  resolve<__COUNTER__>(nvmlDeviceGetInforomConfigurationChecksum, {"nvmlDeviceGetInforomConfigurationChecksum"});
  resolve<__COUNTER__>(nvmlDeviceValidateInforom, {"nvmlDeviceValidateInforom"});
  resolve<__COUNTER__>(nvmlDeviceGetApplicationsClock, {"nvmlDeviceGetApplicationsClock"});
  resolve<__COUNTER__>(nvmlDeviceGetDefaultApplicationsClock, {"nvmlDeviceGetDefaultApplicationsClock"});
  resolve<__COUNTER__>(nvmlDeviceGetMaxCustomerBoostClock, {"nvmlDeviceGetMaxCustomerBoostClock"});
  resolve<__COUNTER__>(nvmlDeviceGetGspFirmwareMode, {"nvmlDeviceGetGspFirmwareMode"});
  resolve<__COUNTER__>(nvmlDeviceGetGspFirmwareVersion, {"nvmlDeviceGetGspFirmwareVersion"});
  resolve<__COUNTER__>(nvmlDeviceGetConfComputeProtectedMemoryUsage, {"nvmlDeviceGetConfComputeProtectedMemoryUsage"});
  resolve<__COUNTER__>(nvmlDeviceGetMemoryErrorCounter, {"nvmlDeviceGetMemoryErrorCounter"});
  resolve<__COUNTER__>(nvmlDeviceGetSramEccErrorStatus, {"nvmlDeviceGetSramEccErrorStatus"});
  resolve<__COUNTER__>(nvmlDeviceGetDefaultEccMode, {"nvmlDeviceGetDefaultEccMode"});
  resolve<__COUNTER__>(nvmlDeviceGetGpuFabricInfoV, {"nvmlDeviceGetGpuFabricInfoV"});
  resolve<__COUNTER__>(nvmlDeviceGetPlatformInfo, {"nvmlDeviceGetPlatformInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetAddressingMode, {"nvmlDeviceGetAddressingMode"});
  resolve<__COUNTER__>(nvmlDeviceGetMarginTemperature, {"nvmlDeviceGetMarginTemperature"});
  resolve<__COUNTER__>(nvmlDeviceGetHostname_v1, {"nvmlDeviceGetHostname_v1"});
  resolve<__COUNTER__>(nvmlDeviceGetVgpuCapabilities, {"nvmlDeviceGetVgpuCapabilities"});
  resolve<__COUNTER__>(nvmlDeviceGetVirtualizationMode, {"nvmlDeviceGetVirtualizationMode"});
  resolve<__COUNTER__>(nvmlDeviceGetHostVgpuMode, {"nvmlDeviceGetHostVgpuMode"});
  resolve<__COUNTER__>(nvmlDeviceGetBrand, {"nvmlDeviceGetBrand"});
  resolve<__COUNTER__>(nvmlDeviceGetBoardId, {"nvmlDeviceGetBoardId"});
  resolve<__COUNTER__>(nvmlDeviceGetMultiGpuBoard, {"nvmlDeviceGetMultiGpuBoard"});
  resolve<__COUNTER__>(nvmlDeviceGetModuleId, {"nvmlDeviceGetModuleId"});
  resolve<__COUNTER__>(nvmlDeviceGetNumFans, {"nvmlDeviceGetNumFans"});
  resolve<__COUNTER__>(nvmlDeviceGetMemoryBusWidth, {"nvmlDeviceGetMemoryBusWidth"});
  resolve<__COUNTER__>(nvmlDeviceGetNumaNodeId, {"nvmlDeviceGetNumaNodeId"});
  resolve<__COUNTER__>(nvmlEventSetCreate, {"nvmlEventSetCreate"});
  resolve<__COUNTER__>(nvmlDeviceRegisterEvents, {"nvmlDeviceRegisterEvents"});
  resolve<__COUNTER__>(nvmlDeviceGetSupportedEventTypes, {"nvmlDeviceGetSupportedEventTypes"});
  resolve<__COUNTER__>(nvmlEventSetWait_v2, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  resolve<__COUNTER__>(nvmlEventSetFree, {"nvmlEventSetFree"});
  resolve<__COUNTER__>(nvmlGpmQueryDeviceSupport, {"nvmlGpmQueryDeviceSupport"});
  resolve<__COUNTER__>(nvmlGpmSampleAlloc, {"nvmlGpmSampleAlloc"});
  resolve<__COUNTER__>(nvmlGpmSampleFree, {"nvmlGpmSampleFree"});
  resolve<__COUNTER__>(nvmlGpmSampleGet, {"nvmlGpmSampleGet"});
  resolve<__COUNTER__>(nvmlGpmMetricsGet, {"nvmlGpmMetricsGet"});
  resolve<__COUNTER__>(nvmlDeviceGetMaxMigDeviceCount, {"nvmlDeviceGetMaxMigDeviceCount"});
  resolve<__COUNTER__>(nvmlDeviceGetMigDeviceHandleByIndex, {"nvmlDeviceGetMigDeviceHandleByIndex"});
  resolve<__COUNTER__>(nvmlDeviceGetGpuInstanceId, {"nvmlDeviceGetGpuInstanceId"});
  resolve<__COUNTER__>(nvmlDeviceGetComputeInstanceId, {"nvmlDeviceGetComputeInstanceId"});
  resolve<__COUNTER__>(nvmlDeviceGetGpuInstanceById, {"nvmlDeviceGetGpuInstanceById"});
  resolve<__COUNTER__>(nvmlGpuInstanceGetInfo, {"nvmlGpuInstanceGetInfo"});
  resolve<__COUNTER__>(nvmlDeviceGetGpuInstanceProfileInfoV, {"nvmlDeviceGetGpuInstanceProfileInfoV"});
  resolve<__COUNTER__>(nvmlDeviceGetAttributes_v2, {"nvmlDeviceGetAttributes_v2"});
  resolve<__COUNTER__>(nvmlGpmMigSampleGet, {"nvmlGpmMigSampleGet"});
  resolve<__COUNTER__>(nvmlDeviceGetRetiredPages_v2, {"nvmlDeviceGetRetiredPages_v2"});
  resolve<__COUNTER__>(nvmlDeviceGetEncoderStats, {"nvmlDeviceGetEncoderStats"});
  resolve<__COUNTER__>(nvmlDeviceGetFBCStats, {"nvmlDeviceGetFBCStats"});
  resolve<__COUNTER__>(nvmlDeviceGetC2cModeInfoV, {"nvmlDeviceGetC2cModeInfoV"});
  resolve<__COUNTER__>(nvmlDeviceGetPciInfoExt, {"nvmlDeviceGetPciInfoExt"});
  resolve<__COUNTER__>(nvmlDeviceGetRepairStatus, {"nvmlDeviceGetRepairStatus"});
  resolve<__COUNTER__>(nvmlDeviceGetUnrepairableMemoryFlag_v1, {"nvmlDeviceGetUnrepairableMemoryFlag_v1"});
  resolve<__COUNTER__>(nvmlDeviceGetCapabilities, {"nvmlDeviceGetCapabilities"});
  resolve<__COUNTER__>(nvmlDeviceGetPdi, {"nvmlDeviceGetPdi"});
  resolve<__COUNTER__>(nvmlDeviceGetRunningProcessDetailList, {"nvmlDeviceGetRunningProcessDetailList"});
  resolve<__COUNTER__>(SimSetTime, {"gpuscopeSimSetTime"});
  resolve<__COUNTER__>(SimGetTime, {"gpuscopeSimGetTime"});
  resolve<__COUNTER__>(SimGetProcessName, {"gpuscopeSimGetProcessName"});
  resolve<__COUNTER__>(SimGetProcessUser, {"gpuscopeSimGetProcessUser"});
  resolve<__COUNTER__>(SimGetHostname, {"gpuscopeSimGetHostname"});
  resolve<__COUNTER__>(SimUpdateSysfs, {"gpuscopeSimUpdateSysfs"});
  resolve<__COUNTER__>(SimGetInitFailure, {"gpuscopeSimGetInitFailure"});
}

}  // namespace gpuscope::nvml
