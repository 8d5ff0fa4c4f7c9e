// NVML's board and platform queries beyond the catalog's identity: InfoROM, brand, board and module
// ids, fans, memory bus, NUMA, C2C, platform and fabric info, virtualization, GSP firmware,
// confidential compute, NVLink state. What nvidia-smi -q prints in its header block.
#include <cstdio>
#include <cstring>
#include <functional>

#include "nvml/nvml_abi.h"
#include "sim/query_helpers.h"

using namespace gpuscope::sim;

namespace {

constexpr unsigned kBoardNvlinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
constexpr unsigned kBoardNvlinkDeviceGpu = 0;     // NVML_NVLINK_DEVICE_TYPE_GPU
constexpr unsigned kBoardNvlinkDeviceSwitch = 2;  // NVML_NVLINK_DEVICE_TYPE_SWITCH
constexpr unsigned kBoardFirstIrq = 41;           // the real H100's (one GPU a VM); one more per GPU

// SXM modules sit in numbered sockets of a baseboard; a PCIe card is module 1 of itself.
unsigned module_id(const SimDevice& d) { return d.model.sxm ? d.index + 1 : 1; }

bool has_gsp(const GpuModel& m) { return m.architecture >= NVML_DEVICE_ARCH_TURING; }
bool hopper_or_newer(const GpuModel& m) { return m.architecture >= NVML_DEVICE_ARCH_HOPPER && m.architecture != NVML_DEVICE_ARCH_UNKNOWN; }

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char* version,
                                                                  unsigned int length) {
  return device_call("nvmlDeviceGetInforomImageVersion", device, [&](Simulator&, SimDevice& d, double) {
    return copy_string(board_facts(d.model).inforom_image, version, length);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, int object, char* version,
                                                             unsigned int length) {
  return device_call("nvmlDeviceGetInforomVersion", device, [&](Simulator&, SimDevice& d, double) {
    const BoardFacts& f = board_facts(d.model);
    switch (object) {
      case NVML_INFOROM_OEM:
        return copy_string(f.inforom_oem, version, length);
      case NVML_INFOROM_ECC:
        return copy_string(f.inforom_ecc, version, length);
      case NVML_INFOROM_POWER:  // nvidia-smi: "Power Management Object: N/A"
      case NVML_INFOROM_DEN:
        return version == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

// A checksum of the InfoROM's configuration: stable per board, derived from its serial.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetInforomConfigurationChecksum(nvmlDevice_t device,
                                                                           unsigned int* checksum) {
  return out_value("nvmlDeviceGetInforomConfigurationChecksum", device, checksum,
                   [](Simulator&, SimDevice& d, double) {
                     return static_cast<unsigned>(std::hash<std::string>{}(d.identity.serial) & 0xFFFFFFFFU);
                   });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device) {
  return device_call("nvmlDeviceValidateInforom", device, [](Simulator&, SimDevice&, double) { return NVML_SUCCESS; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, int* type) {
  return out_value("nvmlDeviceGetBrand", device, type,
                   [](Simulator&, SimDevice& d, double) { return board_facts(d.model).brand; });
}

// The driver's board id: the PCI bus and device (0x6 for the real H100 at 00:06.0).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetBoardId(nvmlDevice_t device, unsigned int* boardId) {
  return out_value("nvmlDeviceGetBoardId", device, boardId,
                   [](Simulator&, SimDevice& d, double) { return (d.identity.bus << 8) | d.identity.device; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int* multiGpuBool) {
  return out_value("nvmlDeviceGetMultiGpuBoard", device, multiGpuBool, [](Simulator&, SimDevice&, double) { return 0U; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetModuleId(nvmlDevice_t device, unsigned int* moduleId) {
  return out_value("nvmlDeviceGetModuleId", device, moduleId,
                   [](Simulator&, SimDevice& d, double) { return module_id(d); });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans) {
  return out_value("nvmlDeviceGetNumFans", device, numFans,
                   [](Simulator&, SimDevice& d, double) { return d.model.fan ? board_facts(d.model).fans : 0U; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device, unsigned int* busWidth) {
  return out_value("nvmlDeviceGetMemoryBusWidth", device, busWidth,
                   [](Simulator&, SimDevice& d, double) { return board_facts(d.model).memory_bus_width; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetIrqNum(nvmlDevice_t device, unsigned int* irqNum) {
  return out_value("nvmlDeviceGetIrqNum", device, irqNum,
                   [](Simulator&, SimDevice& d, double) { return kBoardFirstIrq + d.index; });
}

// A NUMA node of its own only for GPU memory onlined to the OS (Grace Hopper's C2C).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  return not_supported("nvmlDeviceGetNumaNodeId", device, node != nullptr);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetC2cModeInfoV(nvmlDevice_t device, nvmlC2cModeInfo_v1_t* c2cModeInfo) {
  return out_value("nvmlDeviceGetC2cModeInfoV", device, c2cModeInfo,
                   [](Simulator&, SimDevice&, double) { return nvmlC2cModeInfo_v1_t{.isC2cEnabled = 0}; });
}

// SXM modules report where they sit (nvidia-smi --query-gpu platform.*: slot 0, tray 0, host 1, peer
// type 0, shown "Direct Connected"); a PCIe card has no platform record.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPlatformInfo(nvmlDevice_t device, nvmlPlatformInfo_t* platformInfo) {
  return device_call("nvmlDeviceGetPlatformInfo", device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (platformInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (platformInfo->version != nvmlPlatformInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (!d.model.sxm || !hopper_or_newer(d.model)) return NVML_ERROR_NOT_SUPPORTED;
    const unsigned version = platformInfo->version;
    std::memset(platformInfo, 0, sizeof *platformInfo);
    platformInfo->version = version;
    platformInfo->hostId = 1;
    platformInfo->moduleId = static_cast<unsigned char>(module_id(d));
    return NVML_SUCCESS;
  });
}

// Fabric state exists for GPUs on an NVSwitch fabric (HGX Hopper and newer). Elsewhere the call
// succeeds and says NOT_SUPPORTED in the state, as nvidia-smi -q's "Fabric State: N/A" shows.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t* gpuFabricInfo) {
  return device_call("nvmlDeviceGetGpuFabricInfoV", device, [&](Simulator& sim, SimDevice& d, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (gpuFabricInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (gpuFabricInfo->version != nvmlGpuFabricInfo_v3) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const unsigned version = gpuFabricInfo->version;
    std::memset(gpuFabricInfo, 0, sizeof *gpuFabricInfo);
    gpuFabricInfo->version = version;
    if (nvlink_links(d) > 0 && d.model.sxm && hopper_or_newer(d.model)) {
      gpuFabricInfo->status = NVML_SUCCESS;
      gpuFabricInfo->state = NVML_GPU_FABRIC_STATE_COMPLETED;
      gpuFabricInfo->healthSummary = NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY;
      // One cluster per node: the UUID's bytes from the node's hostname.
      const std::size_t h = std::hash<std::string>{}(sim.scenario().node.hostname);
      for (unsigned i = 0; i < NVML_GPU_FABRIC_UUID_LEN; ++i) {
        gpuFabricInfo->clusterUuid[i] = static_cast<unsigned char>(h >> (8 * (i % 8)));
      }
    } else {
      gpuFabricInfo->status = NVML_ERROR_NOT_SUPPORTED;
      gpuFabricInfo->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
      gpuFabricInfo->healthSummary = NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED;
    }
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int* isActive) {
  return device_call("nvmlDeviceGetNvLinkState", device, [&](Simulator&, SimDevice& d, double) {
    if (isActive == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned links = nvlink_links(d);
    if (links == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= kBoardNvlinkMaxLinks) return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= links) return NVML_ERROR_NOT_SUPPORTED;
    *isActive = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
  });
}

// HGX baseboards since Ampere wire every link to an NVSwitch; the V100 SXM2 boards link GPU to GPU.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                                     int* pNvLinkDeviceType) {
  return device_call("nvmlDeviceGetNvLinkRemoteDeviceType", device, [&](Simulator&, SimDevice& d, double) {
    if (pNvLinkDeviceType == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned links = nvlink_links(d);
    if (links == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= kBoardNvlinkMaxLinks) return NVML_ERROR_INVALID_ARGUMENT;
    if (link >= links) return NVML_ERROR_NOT_SUPPORTED;
    *pNvLinkDeviceType = static_cast<int>(d.model.architecture >= NVML_DEVICE_ARCH_AMPERE ? kBoardNvlinkDeviceSwitch
                                                                                          : kBoardNvlinkDeviceGpu);
    return NVML_SUCCESS;
  });
}

// NVML_GPU_VIRTUALIZATION_MODE_NONE (bare metal) or _PASSTHROUGH (node.virtualization: passthrough).
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device, int* pVirtualMode) {
  return out_value("nvmlDeviceGetVirtualizationMode", device, pVirtualMode,
                   [](Simulator& sim, SimDevice&, double) { return sim.scenario().node.passthrough ? 1 : 0; });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHostVgpuMode(nvmlDevice_t device, int* pHostVgpuMode) {
  return not_supported("nvmlDeviceGetHostVgpuMode", device, pHostVgpuMode != nullptr);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetVgpuCapabilities(nvmlDevice_t device, int capability,
                                                               unsigned int* capResult) {
  return not_supported("nvmlDeviceGetVgpuCapabilities", device, capResult != nullptr && capability >= 0);
}

// GSP firmware runs the GPU since Turing (driver 580 enables it by default); its version is the driver's.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGspFirmwareMode(nvmlDevice_t device, unsigned int* isEnabled,
                                                              unsigned int* defaultMode) {
  return device_call("nvmlDeviceGetGspFirmwareMode", device, [&](Simulator&, SimDevice& d, double) {
    if (isEnabled == nullptr || defaultMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *isEnabled = *defaultMode = has_gsp(d.model) ? 1 : 0;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t device, char* version) {
  return device_call("nvmlDeviceGetGspFirmwareVersion", device, [&](Simulator& sim, SimDevice& d, double) {
    if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!has_gsp(d.model)) return NVML_ERROR_NOT_SUPPORTED;
    return copy_string(sim.scenario().node.driver_version, version, NVML_GSP_FIRMWARE_VERSION_BUF_SIZE);
  });
}

// Confidential computing exists on Hopper and newer; off, nothing is protected and the rest of the
// framebuffer (total less the driver's reservation) is unprotected.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device,
                                                                     nvmlConfComputeMemSizeInfo_t* memInfo) {
  return device_call("nvmlDeviceGetConfComputeMemSizeInfo", device, [&](Simulator&, SimDevice& d, double) {
    if (memInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!hopper_or_newer(d.model)) return NVML_ERROR_NOT_SUPPORTED;
    memInfo->protectedMemSizeKib = 0;
    memInfo->unprotectedMemSizeKib = (d.model.memory_mib - d.model.reserved_mib) * 1024ULL;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetConfComputeProtectedMemoryUsage(nvmlDevice_t device,
                                                                              nvmlMemory_t* memory) {
  return device_call("nvmlDeviceGetConfComputeProtectedMemoryUsage", device, [&](Simulator&, SimDevice& d, double) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!hopper_or_newer(d.model)) return NVML_ERROR_NOT_SUPPORTED;
    *memory = nvmlMemory_t{};
    return NVML_SUCCESS;
  });
}

// Addressing mode: none (no HMM, no ATS) on x86 hosts without HMM enabled.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetAddressingMode(nvmlDevice_t device, nvmlDeviceAddressingMode_t* mode) {
  return device_call("nvmlDeviceGetAddressingMode", device, [&](Simulator& sim, SimDevice&, double) {
    if (predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (mode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (mode->version != nvmlDeviceAddressingMode_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    mode->value = 0;
    return NVML_SUCCESS;
  });
}

// The hostname a GPU carries for fabric management (set by the platform on GB200 racks): nvidia-smi's
// `hostname` reads [N/A] elsewhere.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHostname_v1(nvmlDevice_t device, nvmlHostname_v1_t* hostname) {
  return not_supported("nvmlDeviceGetHostname_v1", device, hostname != nullptr, true);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlGpmQueryIfStreamingEnabled(nvmlDevice_t device, unsigned int* state) {
  return device_call("nvmlGpmQueryIfStreamingEnabled", device, [&](Simulator&, SimDevice& d, double) {
    if (state == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!d.model.gpm) return NVML_ERROR_NOT_SUPPORTED;
    *state = 0;
    return NVML_SUCCESS;
  });
}

// PowerMizer modes are a GeForce/workstation setting: data-center boards answer NOT_SUPPORTED.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerMizerMode_v1(nvmlDevice_t device,
                                                                nvmlDevicePowerMizerModes_v1_t* powerMizerMode) {
  return not_supported("nvmlDeviceGetPowerMizerMode_v1", device, powerMizerMode != nullptr);
}

// The GPUs close to a CPU: the simulated node has one NUMA domain, so every GPU is close to every CPU.
// The count protocol as the process lists': a short count gets the number and INSUFFICIENT_SIZE.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTopologyGpuSet(unsigned int cpuNumber, unsigned int* count,
                                                             nvmlDevice_t* deviceArray) {
  return node_call("nvmlDeviceGetTopologyGpuSet", [&](Simulator& sim, double) {
    (void)cpuNumber;
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned n = sim.device_count();
    if (*count < n || deviceArray == nullptr) {
      *count = n;
      return *count == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) deviceArray[i] = Simulator::handle(sim.device(i));
    *count = n;
    return NVML_SUCCESS;
  });
}
