#include "nvml/nvml_library.h"

#include <dlfcn.h>
#include <link.h>

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

}  // namespace

std::expected<std::unique_ptr<NvmlLibrary>, BackendError> NvmlLibrary::open(
    const std::vector<std::string>& candidates, std::string_view named_by) {
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
}

std::string NvmlLibrary::error_string(nvmlReturn_t code) const {
  if (nvmlErrorString != nullptr) {
    if (const char* s = nvmlErrorString(code); s != nullptr) return s;
  }
  return fmt::format("NVML error {}", static_cast<int>(code));
}

template <class Fn>
void NvmlLibrary::resolve(Fn& slot, std::initializer_list<const char*> names) {
  std::string found;
  for (const char* name : names) {
    if (void* sym = dlsym(handle_, name); sym != nullptr) {
      slot = reinterpret_cast<Fn>(sym);
      found = name;
      break;
    }
  }
  resolved_.emplace_back(*names.begin(), found);
}

void NvmlLibrary::resolve_all() {
  // Same signature, newer first: the unversioned names are the oldest ABI.
  resolve(nvmlInit_v2, {"nvmlInit_v2", "nvmlInit"});
  resolve(nvmlShutdown, {"nvmlShutdown"});
  resolve(nvmlErrorString, {"nvmlErrorString"});
  resolve(nvmlSystemGetDriverVersion, {"nvmlSystemGetDriverVersion"});
  resolve(nvmlSystemGetNVMLVersion, {"nvmlSystemGetNVMLVersion"});
  resolve(nvmlSystemGetCudaDriverVersion_v2, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
  resolve(nvmlDeviceGetCount_v2, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  resolve(nvmlDeviceGetHandleByIndex_v2, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  resolve(nvmlDeviceGetHandleByPciBusId_v2, {"nvmlDeviceGetHandleByPciBusId_v2"});
  resolve(nvmlDeviceGetName, {"nvmlDeviceGetName"});
  resolve(nvmlDeviceGetUUID, {"nvmlDeviceGetUUID"});
  resolve(nvmlDeviceGetSerial, {"nvmlDeviceGetSerial"});
  resolve(nvmlDeviceGetBoardPartNumber, {"nvmlDeviceGetBoardPartNumber"});
  resolve(nvmlDeviceGetVbiosVersion, {"nvmlDeviceGetVbiosVersion"});
  resolve(nvmlDeviceGetIndex, {"nvmlDeviceGetIndex"});
  resolve(nvmlDeviceGetMinorNumber, {"nvmlDeviceGetMinorNumber"});
  resolve(nvmlDeviceGetPciInfo_v3, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  resolve(nvmlDeviceGetMemoryInfo_v2, {"nvmlDeviceGetMemoryInfo_v2"});
  resolve(nvmlDeviceGetMemoryInfo, {"nvmlDeviceGetMemoryInfo"});
  resolve(nvmlDeviceGetBAR1MemoryInfo, {"nvmlDeviceGetBAR1MemoryInfo"});
  resolve(nvmlDeviceGetUtilizationRates, {"nvmlDeviceGetUtilizationRates"});
  resolve(nvmlDeviceGetTemperature, {"nvmlDeviceGetTemperature"});
  resolve(nvmlDeviceGetTemperatureThreshold, {"nvmlDeviceGetTemperatureThreshold"});
  resolve(nvmlDeviceGetPowerUsage, {"nvmlDeviceGetPowerUsage"});
  resolve(nvmlDeviceGetEnforcedPowerLimit, {"nvmlDeviceGetEnforcedPowerLimit"});
  resolve(nvmlDeviceGetPowerManagementLimit, {"nvmlDeviceGetPowerManagementLimit"});
  resolve(nvmlDeviceGetPowerManagementDefaultLimit, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  resolve(nvmlDeviceGetTotalEnergyConsumption, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(nvmlDeviceGetClockInfo, {"nvmlDeviceGetClockInfo"});
  resolve(nvmlDeviceGetMaxClockInfo, {"nvmlDeviceGetMaxClockInfo"});
  resolve(nvmlDeviceGetPerformanceState, {"nvmlDeviceGetPerformanceState"});
  resolve(nvmlDeviceGetFanSpeed, {"nvmlDeviceGetFanSpeed"});
  resolve(nvmlDeviceGetCurrentClocksEventReasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(nvmlDeviceGetViolationStatus, {"nvmlDeviceGetViolationStatus"});
  resolve(nvmlDeviceGetTotalEccErrors, {"nvmlDeviceGetTotalEccErrors"});
  resolve(nvmlDeviceGetEccMode, {"nvmlDeviceGetEccMode"});
  resolve(nvmlDeviceGetRemappedRows, {"nvmlDeviceGetRemappedRows"});
  resolve(nvmlDeviceGetRetiredPages, {"nvmlDeviceGetRetiredPages"});
  resolve(nvmlDeviceGetRetiredPagesPendingStatus, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  resolve(nvmlDeviceGetPcieThroughput, {"nvmlDeviceGetPcieThroughput"});
  resolve(nvmlDeviceGetPcieReplayCounter, {"nvmlDeviceGetPcieReplayCounter"});
  resolve(nvmlDeviceGetCurrPcieLinkGeneration, {"nvmlDeviceGetCurrPcieLinkGeneration"});
  resolve(nvmlDeviceGetMaxPcieLinkGeneration, {"nvmlDeviceGetMaxPcieLinkGeneration"});
  resolve(nvmlDeviceGetCurrPcieLinkWidth, {"nvmlDeviceGetCurrPcieLinkWidth"});
  resolve(nvmlDeviceGetMaxPcieLinkWidth, {"nvmlDeviceGetMaxPcieLinkWidth"});
  // _v3 and _v2 fill the 24-byte nvmlProcessInfo_t, the unversioned v1 a 16-byte struct: each has
  // its own slot, since each fallback may answer FUNCTION_NOT_FOUND on its own.
  resolve(nvmlDeviceGetComputeRunningProcesses_v3, {"nvmlDeviceGetComputeRunningProcesses_v3"});
  resolve(nvmlDeviceGetComputeRunningProcesses_v2, {"nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(nvmlDeviceGetComputeRunningProcesses, {"nvmlDeviceGetComputeRunningProcesses"});
  resolve(nvmlDeviceGetGraphicsRunningProcesses_v3, {"nvmlDeviceGetGraphicsRunningProcesses_v3"});
  resolve(nvmlDeviceGetGraphicsRunningProcesses_v2, {"nvmlDeviceGetGraphicsRunningProcesses_v2"});
  resolve(nvmlDeviceGetGraphicsRunningProcesses, {"nvmlDeviceGetGraphicsRunningProcesses"});
  resolve(nvmlDeviceGetProcessUtilization, {"nvmlDeviceGetProcessUtilization"});
  resolve(nvmlDeviceGetEncoderUtilization, {"nvmlDeviceGetEncoderUtilization"});
  resolve(nvmlDeviceGetDecoderUtilization, {"nvmlDeviceGetDecoderUtilization"});
  resolve(nvmlDeviceGetFieldValues, {"nvmlDeviceGetFieldValues"});
  resolve(nvmlDeviceGetMigMode, {"nvmlDeviceGetMigMode"});
  resolve(nvmlDeviceGetPersistenceMode, {"nvmlDeviceGetPersistenceMode"});
  resolve(nvmlDeviceGetArchitecture, {"nvmlDeviceGetArchitecture"});
  resolve(nvmlDeviceGetCudaComputeCapability, {"nvmlDeviceGetCudaComputeCapability"});
  resolve(nvmlDeviceGetNumGpuCores, {"nvmlDeviceGetNumGpuCores"});
  resolve(nvmlEventSetCreate, {"nvmlEventSetCreate"});
  resolve(nvmlDeviceRegisterEvents, {"nvmlDeviceRegisterEvents"});
  resolve(nvmlDeviceGetSupportedEventTypes, {"nvmlDeviceGetSupportedEventTypes"});
  resolve(nvmlEventSetWait_v2, {"nvmlEventSetWait_v2", "nvmlEventSetWait"});
  resolve(nvmlEventSetFree, {"nvmlEventSetFree"});
  resolve(nvmlGpmQueryDeviceSupport, {"nvmlGpmQueryDeviceSupport"});
  resolve(nvmlGpmSampleAlloc, {"nvmlGpmSampleAlloc"});
  resolve(nvmlGpmSampleFree, {"nvmlGpmSampleFree"});
  resolve(nvmlGpmSampleGet, {"nvmlGpmSampleGet"});
  resolve(nvmlGpmMetricsGet, {"nvmlGpmMetricsGet"});
  resolve(SimSetTime, {"gpuscopeSimSetTime"});
  resolve(SimGetTime, {"gpuscopeSimGetTime"});
  resolve(SimGetProcessName, {"gpuscopeSimGetProcessName"});
  resolve(SimGetProcessUser, {"gpuscopeSimGetProcessUser"});
  resolve(SimGetHostname, {"gpuscopeSimGetHostname"});
  resolve(SimGetInitFailure, {"gpuscopeSimGetInitFailure"});
}

}  // namespace gpuscope::nvml
