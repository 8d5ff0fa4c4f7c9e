// NVML's MIG queries: MIG mode over the scenario's time, MIG device handles and their ids, GPU
// instances and their profiles, and device attributes of GPUs and MIG devices. (Name, UUID, memory,
// processes and GPM of a MIG device: device_exports.cc, process_exports.cc, gpm_exports.cc; every
// other query on a MIG device answers NOT_SUPPORTED through device_call.)
#include <cstdio>
#include <cstring>

#include "nvml/nvml_abi.h"
#include "sim/library_state.h"
#include "sim/mig_profiles.h"

using namespace gpuscope::sim;

namespace {

void fill_mig_profile_info(nvmlGpuInstanceProfileInfo_v2_t& info, const MigProfile& p) {
  const unsigned version = info.version;
  std::memset(&info, 0, sizeof info);
  info.version = version;
  info.id = p.id;
  info.isP2pSupported = 0;
  info.sliceCount = p.slices;
  info.instanceCount = p.max_instances;
  info.multiprocessorCount = p.sm_count;
  info.copyEngineCount = p.copy_engines;
  info.decoderCount = p.decoders;
  info.encoderCount = p.encoders;
  info.jpegCount = p.jpegs;
  info.ofaCount = p.ofas;
  info.memorySizeMB = p.memory_mib;
  std::snprintf(info.name, sizeof info.name, "MIG %.*s", static_cast<int>(p.name.size()), p.name.data());
}

// The profile lookups' shared checks: NOT_SUPPORTED without MIG (the board's or the mode's).
template <class Find>
nvmlReturn_t mig_profile_info(std::string_view function, nvmlDevice_t device, nvmlGpuInstanceProfileInfo_v2_t* info,
                              Find&& find) {
  return device_call(function, device, [&](Simulator&, SimDevice& d, double t) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (d.model.max_mig_devices == 0) return NVML_ERROR_NOT_SUPPORTED;
    return find(d, t);
  });
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                      unsigned int* pendingMode) {
  return device_call("nvmlDeviceGetMigMode", device, [&](Simulator&, SimDevice& d, double t) {
    if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.model.max_mig_devices == 0) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = d.spec.mig_enabled_at(t) ? 1 : 0;
    *pendingMode = *currentMode;  // the scenario switches modes as if the GPU were reset at once
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return device_call("nvmlDeviceGetMaxMigDeviceCount", device, [&](Simulator&, SimDevice& d, double) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.model.max_mig_devices == 0) return NVML_ERROR_NOT_SUPPORTED;
    *count = d.model.max_mig_devices;
    return NVML_SUCCESS;
  });
}

// Index i of the MIG devices alive now (by GPU instance id); NOT_FOUND past them, INVALID_ARGUMENT past
// the GPU's maximum.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                                     nvmlDevice_t* migDevice) {
  return device_call("nvmlDeviceGetMigDeviceHandleByIndex", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.model.max_mig_devices == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (index >= d.model.max_mig_devices) return NVML_ERROR_INVALID_ARGUMENT;
    const std::vector<MigDevice*> migs = sim.mig_devices(d.index, t);
    if (index >= migs.size()) return NVML_ERROR_NOT_FOUND;
    *migDevice = Simulator::handle(*migs[index]);
    return NVML_SUCCESS;
  });
}

// Instance ids exist on MIG device handles only.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return any_device_call("nvmlDeviceGetGpuInstanceId", device, [&](Simulator&, SimDevice&, MigDevice* mig, double) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *id = mig->spec.id;
    return NVML_SUCCESS;
  });
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return any_device_call("nvmlDeviceGetComputeInstanceId", device, [&](Simulator&, SimDevice&, MigDevice* mig, double) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mig == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *id = 0;  // one compute instance covering the GPU instance
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  return any_device_call("nvmlDeviceIsMigDeviceHandle", device, [&](Simulator&, SimDevice&, MigDevice* mig, double) {
    if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = mig != nullptr ? 1 : 0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                             nvmlDevice_t* device) {
  return any_device_call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice,
                         [&](Simulator&, SimDevice& d, MigDevice* mig, double) {
                           if (device == nullptr || mig == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
                           *device = Simulator::handle(d);
                           return NVML_SUCCESS;
                         });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                              nvmlGpuInstance_t* gpuInstance) {
  return device_call("nvmlDeviceGetGpuInstanceById", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.model.max_mig_devices == 0 || !d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;
    MigDevice* mig = sim.mig_device(d.index, id, t);
    if (mig == nullptr) return NVML_ERROR_NOT_FOUND;
    *gpuInstance = Simulator::gpu_instance_handle(*mig);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  return gpu_instance_call("nvmlGpuInstanceGetInfo", gpuInstance, [&](Simulator& sim, MigDevice& mig, double) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::memset(info, 0, sizeof *info);
    info->device = Simulator::handle(sim.device(mig.gpu));
    info->id = mig.spec.id;
    info->profileId = mig.spec.profile->id;
    info->placement.start = mig.spec.start;
    info->placement.size = mig.spec.profile->memory_slices;
    return NVML_SUCCESS;
  });
}

// The GPU instances of profile id `profileId` alive now; `gpuInstances` has room for the profile's
// instanceCount, as NVML asks of its callers.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                           nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  return device_call("nvmlDeviceGetGpuInstances", device, [&](Simulator& sim, SimDevice& d, double t) {
    if (gpuInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.model.max_mig_devices == 0 || !d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;
    if (find_mig_profile_by_id(d.model, profileId) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (MigDevice* mig : sim.mig_devices(d.index, t)) {
      if (mig->spec.profile->id == profileId) gpuInstances[n++] = Simulator::gpu_instance_handle(*mig);
    }
    *count = n;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                                      nvmlGpuInstanceProfileInfo_v2_t* info) {
  return mig_profile_info("nvmlDeviceGetGpuInstanceProfileInfoV", device, info, [&](SimDevice& d, double t) {
    if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const MigProfile* p = find_mig_profile_by_index(d.model, profile);
    if (p == nullptr || !d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;
    fill_mig_profile_info(*info, *p);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId,
                                                                          nvmlGpuInstanceProfileInfo_v2_t* info) {
  return mig_profile_info("nvmlDeviceGetGpuInstanceProfileInfoByIdV", device, info, [&](SimDevice& d, double t) {
    const MigProfile* p = find_mig_profile_by_id(d.model, profileId);
    if (p == nullptr || !d.spec.mig_enabled_at(t)) return NVML_ERROR_NOT_SUPPORTED;
    fill_mig_profile_info(*info, *p);
    return NVML_SUCCESS;
  });
}

// A MIG device: its profile's resources; a GPU: all of them (engine counts those of its whole-GPU
// profile, slice counts 7 where it has MIG).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  return any_device_call("nvmlDeviceGetAttributes_v2", device, [&](Simulator&, SimDevice& d, MigDevice* mig, double) {
    if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::memset(attributes, 0, sizeof *attributes);
    const MigProfile* p = mig != nullptr ? mig->spec.profile : find_mig_profile_by_index(d.model, NVML_GPU_INSTANCE_PROFILE_7_SLICE);
    if (p != nullptr) {
      attributes->sharedCopyEngineCount = p->copy_engines;
      attributes->sharedDecoderCount = p->decoders;
      attributes->sharedEncoderCount = p->encoders;
      attributes->sharedJpegCount = p->jpegs;
      attributes->sharedOfaCount = p->ofas;
      attributes->gpuInstanceSliceCount = p->slices;
      attributes->computeInstanceSliceCount = p->slices;
    }
    attributes->multiprocessorCount = mig != nullptr ? mig->spec.profile->sm_count : d.model.sm_count;
    attributes->memorySizeMB = mig != nullptr ? mig->spec.profile->memory_mib : d.model.memory_mib;
    return NVML_SUCCESS;
  });
}
