// NVML's process queries: running compute/graphics/MPS processes in their three struct versions,
// with NVML's count-probe protocol, and per-process utilization samples.
#include <cmath>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/library_state.h"
#include "sim/process_samples.h"

using namespace gpuscope::sim;

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFU;

enum class ListKind { kCompute, kGraphics, kMps };

void fill(nvmlProcessInfo_t& info, const GpuProcess& p) {
  info.pid = p.pid;
  info.usedGpuMemory = static_cast<unsigned long long>(p.used_bytes);
  // MIG: the instance it runs in, in its one compute instance (0); kNoInstance outside MIG.
  info.gpuInstanceId = p.gpu_instance.value_or(kNoInstance);
  info.computeInstanceId = p.gpu_instance ? 0 : kNoInstance;
}

// Driver 535 predates nvmlDeviceGetRunningProcessDetailList.
bool predates_detail_list(const Simulator& sim) { return sim.scenario().node.driver_profile == DriverProfile::kR535; }

void fill(nvmlProcessInfo_v1_t& info, const GpuProcess& p) {
  info.pid = p.pid;
  info.usedGpuMemory = static_cast<unsigned long long>(p.used_bytes);
}

// NVML's protocol: a count smaller than the list gets the list's size and INSUFFICIENT_SIZE
// (infos may be NULL then); a count large enough gets the list and its size.
template <class Info>
nvmlReturn_t running_processes(std::string_view function, ListKind kind, bool v3, nvmlDevice_t device,
                               unsigned int* infoCount, Info* infos) {
  // On a MIG device: the processes in its instance; on the GPU: all, each with its instance ids.
  return any_device_call(function, device, [&](Simulator& sim, SimDevice& d, MigDevice* mig, double t) {
    if (v3 && sim.scenario().node.driver_profile == DriverProfile::kR535) {
      // Driver 535.98 shipped these symbols but answered as if they were missing.
      return NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::vector<GpuProcess> list;
    if (kind != ListKind::kMps) {  // no scenario runs an MPS server
      const ProcessType want = kind == ListKind::kCompute ? ProcessType::kCompute : ProcessType::kGraphics;
      for (const GpuProcess& p : sim.processes(d.index, t)) {
        if (p.type == want && (mig == nullptr || p.gpu_instance == mig->spec.id)) list.push_back(p);
      }
    }
    const auto n = static_cast<unsigned>(list.size());
    if (*infoCount < n) {
      *infoCount = n;
      if (kind == ListKind::kCompute) sim.faults().note_count_probe(d.index, t);
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < n; ++i) fill(infos[i], list[i]);
    *infoCount = n;
    return NVML_SUCCESS;
  });
}

}  // namespace

// One list for a mode, each process with its protected memory: none, as confidential compute is off on
// every simulated GPU (nvmlDeviceGetConfComputeProtectedMemoryUsage answers 0 used). Same count probe.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device,
                                                                       nvmlProcessDetailList_v1_t* plist) {
  return any_device_call("nvmlDeviceGetRunningProcessDetailList", device,
                         [&](Simulator& sim, SimDevice& d, MigDevice* mig, double t) {
    if (predates_detail_list(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (plist == nullptr || plist->version != nvmlProcessDetailList_v1 || plist->mode > NVML_PROCESS_MODE_ALL) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    std::vector<GpuProcess> list;
    for (const GpuProcess& p : sim.processes(d.index, t)) {
      const bool wanted = plist->mode == NVML_PROCESS_MODE_ALL ||
                          (plist->mode == NVML_PROCESS_MODE_COMPUTE && p.type == ProcessType::kCompute) ||
                          (plist->mode == NVML_PROCESS_MODE_GRAPHICS && p.type == ProcessType::kGraphics);
      if (wanted && (mig == nullptr || p.gpu_instance == mig->spec.id)) list.push_back(p);
    }
    const auto n = static_cast<unsigned>(list.size());
    if (plist->numProcArrayEntries < n) {
      plist->numProcArrayEntries = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (n > 0 && plist->procArray == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < n; ++i) {
      nvmlProcessDetail_v1_t& out = plist->procArray[i];
      out.pid = list[i].pid;
      out.usedGpuMemory = static_cast<unsigned long long>(list[i].used_bytes);
      out.gpuInstanceId = list[i].gpu_instance.value_or(kNoInstance);
      out.computeInstanceId = list[i].gpu_instance ? 0 : kNoInstance;
      out.usedGpuCcProtectedMemory = 0;
    }
    plist->numProcArrayEntries = n;
    return NVML_SUCCESS;
  });
}

#if !GPUSCOPE_SIM_LEGACY
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                         nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetComputeRunningProcesses_v3", ListKind::kCompute, true, device, infoCount,
                           infos);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                          unsigned int* infoCount,
                                                                          nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetGraphicsRunningProcesses_v3", ListKind::kGraphics, true, device,
                           infoCount, infos);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                            unsigned int* infoCount,
                                                                            nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetMPSComputeRunningProcesses_v3", ListKind::kMps, true, device, infoCount,
                           infos);
}
#endif

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                                         nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetComputeRunningProcesses_v2", ListKind::kCompute, false, device, infoCount,
                           infos);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                      nvmlProcessInfo_v1_t* infos) {
  return running_processes("nvmlDeviceGetComputeRunningProcesses", ListKind::kCompute, false, device, infoCount,
                           infos);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                          unsigned int* infoCount,
                                                                          nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetGraphicsRunningProcesses_v2", ListKind::kGraphics, false, device,
                           infoCount, infos);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                       nvmlProcessInfo_v1_t* infos) {
  return running_processes("nvmlDeviceGetGraphicsRunningProcesses", ListKind::kGraphics, false, device, infoCount,
                           infos);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                            unsigned int* infoCount,
                                                                            nvmlProcessInfo_t* infos) {
  return running_processes("nvmlDeviceGetMPSComputeRunningProcesses_v2", ListKind::kMps, false, device, infoCount,
                           infos);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                         nvmlProcessInfo_v1_t* infos) {
  return running_processes("nvmlDeviceGetMPSComputeRunningProcesses", ListKind::kMps, false, device, infoCount,
                           infos);
}

// Each process's utilization averaged over the samples newer than lastSeenTimeStamp (process_samples.h):
// the GPU's activity shared evenly among the processes of each 1 s cell, stamped with the newest cell's
// start.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                                 nvmlProcessUtilizationSample_t* utilization,
                                                                 unsigned int* processSamplesCount,
                                                                 unsigned long long lastSeenTimeStamp) {
  return device_call("nvmlDeviceGetProcessUtilization", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // NVML: "On MIG-enabled GPUs, querying process utilization is not currently supported."
    if (d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;
    const std::vector<ProcessUtilizationAverage> found = process_utilization_since(sim, d, t, lastSeenTimeStamp);
    if (found.empty()) return NVML_ERROR_NOT_FOUND;
    const auto n = static_cast<unsigned>(found.size());
    if (utilization == nullptr || *processSamplesCount < n) {
      *processSamplesCount = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) {
      nvmlProcessUtilizationSample_t& s = utilization[i];
      s.pid = found[i].pid;
      s.timeStamp = found[i].stamp_us;
      s.smUtil = found[i].sm_percent;
      s.memUtil = found[i].mem_percent;
      s.encUtil = 0;
      s.decUtil = 0;
    }
    *processSamplesCount = n;
    return NVML_SUCCESS;
  });
}
