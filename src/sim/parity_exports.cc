// The queries behind nvidia-smi -q's last keys: encoder and frame-buffer-capture sessions, the PCI class
// codes, pending TPC/channel repairs, unrepairable memory and the device capabilities (EGM). The
// simulated workloads encode and capture nothing, repair nothing and have no extended GPU memory: every
// GPU answers as the real idle H100 does (nvidia-smi-q.txt: sessions 0, 3D controller 0x3/0x2, repairs
// No, EGM disabled).
#include <cstdint>
#include <cstdio>

#include "nvml/nvml_abi.h"
#include "sim/query_helpers.h"

using namespace gpuscope::sim;

namespace {

constexpr unsigned kParityPciClassDisplay = 0x3;   // display controller
constexpr unsigned kParityPciSubclass3d = 0x2;     // 3D controller: a GPU without display outputs

bool parity_hopper_or_newer(const GpuModel& m) {
  return m.architecture >= NVML_DEVICE_ARCH_HOPPER && m.architecture != NVML_DEVICE_ARCH_UNKNOWN;
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEncoderStats(nvmlDevice_t device, unsigned int* sessionCount,
                                                           unsigned int* averageFps, unsigned int* averageLatency) {
  return device_call("nvmlDeviceGetEncoderStats", device, [&](Simulator&, SimDevice&, double) {
    if (sessionCount == nullptr || averageFps == nullptr || averageLatency == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *sessionCount = 0;
    *averageFps = 0;
    *averageLatency = 0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetFBCStats(nvmlDevice_t device, nvmlFBCStats_t* fbcStats) {
  return out_value("nvmlDeviceGetFBCStats", device, fbcStats,
                   [](Simulator&, SimDevice&, double) { return nvmlFBCStats_t{0, 0, 0}; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t device, nvmlPciInfoExt_v1_t* pci) {
  return device_call("nvmlDeviceGetPciInfoExt", device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (pci->version != nvmlPciInfoExt_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const GpuIdentity& id = d.identity;
    pci->domain = id.domain;
    pci->bus = id.bus;
    pci->device = id.device;
    pci->pciDeviceId = d.model.pci_device_id;
    pci->pciSubSystemId = d.model.pci_subsystem_id;
    pci->baseClass = kParityPciClassDisplay;
    pci->subClass = kParityPciSubclass3d;
    std::snprintf(pci->busId, sizeof pci->busId, "%s", id.bus_id.c_str());
    return NVML_SUCCESS;
  });
}

// TPC and channel repair came with Hopper; older boards answer NOT_SUPPORTED.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetRepairStatus(nvmlDevice_t device, nvmlRepairStatus_v1_t* repairStatus) {
  return device_call("nvmlDeviceGetRepairStatus", device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (repairStatus == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (repairStatus->version != nvmlRepairStatus_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!parity_hopper_or_newer(d.model)) return NVML_ERROR_NOT_SUPPORTED;
    repairStatus->bChannelRepairPending = 0;
    repairStatus->bTpcRepairPending = 0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUnrepairableMemoryFlag_v1(
    nvmlDevice_t device, nvmlUnrepairableMemoryStatus_v1_t* unrepairableMemoryStatus) {
  return device_call("nvmlDeviceGetUnrepairableMemoryFlag_v1", device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (unrepairableMemoryStatus == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!parity_hopper_or_newer(d.model)) return NVML_ERROR_NOT_SUPPORTED;
    unrepairableMemoryStatus->bUnrepairableMemory = 0;
    return NVML_SUCCESS;
  });
}

// A stable 64-bit identifier per board, from its UUID (the real one is opaque; it changed between two
// nvidia-smi runs of the reference H100).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPdi(nvmlDevice_t device, nvmlPdi_v1_t* pdi) {
  return device_call("nvmlDeviceGetPdi", device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (pdi == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (pdi->version != nvmlPdi_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    // FNV-1a: the same on every platform and run, unlike std::hash.
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char c : d.identity.uuid) h = (h ^ c) * 0x100000001b3ULL;
    pdi->value = h;
    return NVML_SUCCESS;
  });
}

// No simulated board has extended GPU memory (Grace Hopper's): an empty mask.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCapabilities(nvmlDevice_t device, nvmlDeviceCapabilities_v1_t* caps) {
  return device_call("nvmlDeviceGetCapabilities", device, [&](Simulator& sim, SimDevice&, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (caps == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (caps->version != nvmlDeviceCapabilities_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    caps->capMask = 0;
    return NVML_SUCCESS;
  });
}
