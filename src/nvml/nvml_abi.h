// Our own declarations of the NVML C ABI (x86-64), written from ../shared/reference/nvml-abi.md.
// No NVIDIA header is used at build time; the backend dlsym()s these names, the simulator defines them.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

// Versioned structs carry sizeof(struct) | (version << 24) in their first field.
#define NVML_STRUCT_VERSION(type, ver) (static_cast<unsigned int>(sizeof(type) | ((ver) << 24U)))

enum : unsigned {
  NVML_DEVICE_NAME_BUFFER_SIZE = 96,
  NVML_DEVICE_UUID_BUFFER_SIZE = 96,
  NVML_DEVICE_SERIAL_BUFFER_SIZE = 30,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
  NVML_INIT_FLAG_NO_GPUS = 1,
};

typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)

typedef struct nvmlBAR1Memory_st {
  unsigned long long bar1Total;
  unsigned long long bar1Free;
  unsigned long long bar1Used;
} nvmlBAR1Memory_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// nvmlProcessInfo_v2_t in NVIDIA's header: the `_v3` AND `_v2` process functions fill this one
// (24 bytes; NVIDIA's Python binding and Debian's generated 11.8 bindings agree). Only the
// unversioned v1 functions fill the 16-byte nvmlProcessInfo_v1_t.
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

// Filled by the unversioned (v1) process functions only.
typedef nvmlProcessInfo_t nvmlProcessInfo_v2_t;

typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlViolationTime_st {
  unsigned long long referenceTime;
  unsigned long long violationTime;
} nvmlViolationTime_t;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
} nvmlValueType_t;

typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

typedef struct nvmlGpmSupport_st {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1U

typedef struct nvmlGpmMetric_st {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
} nvmlGpmMetric_t;

// 333 in header 13, 98 in 11.8: a library reads only numMetrics entries, so either size works.
#define NVML_GPM_METRIC_MAX 333
typedef struct nvmlGpmMetricsGet_st {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1U

// Enumerations passed as plain integers.
enum nvmlTemperatureSensors_enum : int { NVML_TEMPERATURE_GPU = 0 };
enum nvmlTemperatureThresholds_enum : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
};
enum nvmlClockType_enum : int { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum nvmlPcieUtilCounter_enum : int { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum nvmlPerfPolicyType_enum : int {
  NVML_PERF_POLICY_POWER = 0,
  NVML_PERF_POLICY_THERMAL = 1,
  NVML_PERF_POLICY_SYNC_BOOST = 2,
  NVML_PERF_POLICY_BOARD_LIMIT = 3,
  NVML_PERF_POLICY_LOW_UTILIZATION = 4,
  NVML_PERF_POLICY_RELIABILITY = 5,
  NVML_PERF_POLICY_COUNT = 6,
};
enum nvmlMemoryErrorType_enum : int { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum nvmlEccCounterType_enum : int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum nvmlPageRetirementCause_enum : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
enum nvmlPstates_enum : int { NVML_PSTATE_0 = 0, NVML_PSTATE_15 = 15, NVML_PSTATE_UNKNOWN = 32 };
enum nvmlDeviceArchitecture_enum : unsigned {
  NVML_DEVICE_ARCH_KEPLER = 2,
  NVML_DEVICE_ARCH_MAXWELL = 3,
  NVML_DEVICE_ARCH_PASCAL = 4,
  NVML_DEVICE_ARCH_VOLTA = 5,
  NVML_DEVICE_ARCH_TURING = 6,
  NVML_DEVICE_ARCH_AMPERE = 7,
  NVML_DEVICE_ARCH_ADA = 8,
  NVML_DEVICE_ARCH_HOPPER = 9,
  NVML_DEVICE_ARCH_BLACKWELL = 10,
  NVML_DEVICE_ARCH_UNKNOWN = 0xffffffff,
};

// ---- What nvidia-smi shows beyond the sampled catalog (query's other --query-gpu names, -q, dmon's
// jpg/ofa/ccpm, pmon). Layouts from NVML 13 (driver 580); sizes asserted at the end of this file.
typedef struct nvmlRowRemapperHistogramValues_st {
  unsigned int max;
  unsigned int high;
  unsigned int partial;
  unsigned int low;
  unsigned int none;
} nvmlRowRemapperHistogramValues_t;

// No version field (NVML 13.1's header); a newer symbol than driver 580 may export.
typedef struct {
  unsigned int corrActiveRemaps;
  unsigned int corrInactiveRemaps;
  unsigned int uncActiveRemaps;
  unsigned int uncInactiveRemaps;
  unsigned int bPending;
  unsigned int bFailureOccurred;
} nvmlRemappedRowsInfo_v2_t;

typedef struct nvmlConfComputeMemSizeInfo_st {
  unsigned long long protectedMemSizeKib;
  unsigned long long unprotectedMemSizeKib;
} nvmlConfComputeMemSizeInfo_t;

typedef struct {
  unsigned int version;  // nvmlEccSramErrorStatus_v1
  unsigned long long aggregateUncParity;
  unsigned long long aggregateUncSecDed;
  unsigned long long aggregateCor;
  unsigned long long volatileUncParity;
  unsigned long long volatileUncSecDed;
  unsigned long long volatileCor;
  unsigned long long aggregateUncBucketL2;
  unsigned long long aggregateUncBucketSm;
  unsigned long long aggregateUncBucketPcie;
  unsigned long long aggregateUncBucketMcu;
  unsigned long long aggregateUncBucketOther;
  unsigned int bThresholdExceeded;
} nvmlEccSramErrorStatus_t;
#define nvmlEccSramErrorStatus_v1 NVML_STRUCT_VERSION(nvmlEccSramErrorStatus_t, 1U)

typedef unsigned char nvmlGpuFabricState_t;
enum : unsigned {
  NVML_GPU_FABRIC_UUID_LEN = 16,
  NVML_GPU_FABRIC_STATE_NOT_SUPPORTED = 0,
  NVML_GPU_FABRIC_STATE_NOT_STARTED = 1,
  NVML_GPU_FABRIC_STATE_IN_PROGRESS = 2,
  NVML_GPU_FABRIC_STATE_COMPLETED = 3,
  // healthMask: 2-bit fields at these shifts (degraded bandwidth, route recovery, route unhealthy,
  // access timeout recovery, incorrect configuration, partition assigned).
  NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW = 0,
  NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY = 2,
  NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY = 4,
  NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY = 6,
  NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION = 8,
  NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_PARTITION_ASSIGNED = 12,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_NOT_SUPPORTED = 0,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY = 1,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY = 2,
  NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY = 3,
};
typedef struct {
  unsigned int version;  // nvmlGpuFabricInfo_v3
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  nvmlGpuFabricState_t state;
  unsigned int healthMask;
  unsigned char healthSummary;
} nvmlGpuFabricInfoV_t;
#define nvmlGpuFabricInfo_v3 NVML_STRUCT_VERSION(nvmlGpuFabricInfoV_t, 3U)

typedef struct {
  unsigned int version;  // nvmlPlatformInfo_v2
  unsigned char ibGuid[16];
  unsigned char chassisSerialNumber[16];
  unsigned char slotNumber;
  unsigned char trayIndex;
  unsigned char hostId;
  unsigned char peerType;
  unsigned char moduleId;
} nvmlPlatformInfo_t;
#define nvmlPlatformInfo_v2 NVML_STRUCT_VERSION(nvmlPlatformInfo_t, 2U)

typedef struct {
  unsigned int version;  // nvmlDeviceAddressingMode_v1
  unsigned int value;    // 0 none, 1 HMM, 2 ATS
} nvmlDeviceAddressingMode_t;
#define nvmlDeviceAddressingMode_v1 NVML_STRUCT_VERSION(nvmlDeviceAddressingMode_t, 1U)

typedef struct {
  unsigned int version;  // nvmlMarginTemperature_v1
  int marginTemperature;
} nvmlMarginTemperature_t;
#define nvmlMarginTemperature_v1 NVML_STRUCT_VERSION(nvmlMarginTemperature_t, 1U)

typedef struct {
  char value[64];
} nvmlHostname_v1_t;

typedef struct {
  unsigned int isC2cEnabled;
} nvmlC2cModeInfo_v1_t;

// PCI identity with the class codes (nvmlDeviceGetPciInfoExt); version = sizeof | 1 << 24.
typedef struct nvmlPciInfoExt_v1_st {
  unsigned int version;
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  unsigned int baseClass;  // 8-bit PCI base class (0x3: display controller)
  unsigned int subClass;   // 8-bit PCI sub class (0x2: 3D controller)
  char busId[32];
} nvmlPciInfoExt_v1_t;
#define nvmlPciInfoExt_v1 ((unsigned int)(sizeof(nvmlPciInfoExt_v1_t) | (1U << 24)))

// Frame buffer capture sessions (nvmlDeviceGetFBCStats); latency in microseconds.
typedef struct nvmlFBCStats_st {
  unsigned int sessionsCount;
  unsigned int averageFPS;
  unsigned int averageLatency;
} nvmlFBCStats_t;

// Pending TPC or memory channel repair (nvmlDeviceGetRepairStatus); flags are 0 or 1.
typedef struct nvmlRepairStatus_v1_st {
  unsigned int version;
  unsigned int bChannelRepairPending;
  unsigned int bTpcRepairPending;
} nvmlRepairStatus_v1_t;
#define nvmlRepairStatus_v1 ((unsigned int)(sizeof(nvmlRepairStatus_v1_t) | (1U << 24)))

// nvmlDeviceGetUnrepairableMemoryFlag_v1: 1 once memory errors exceed what repair can fix. No version field.
typedef struct nvmlUnrepairableMemoryStatus_v1_st {
  unsigned int bUnrepairableMemory;
} nvmlUnrepairableMemoryStatus_v1_t;

// nvmlDeviceGetCapabilities: a mask of NVML_DEV_CAP_* bits.
typedef struct nvmlDeviceCapabilities_v1_st {
  unsigned int version;
  unsigned int capMask;
} nvmlDeviceCapabilities_v1_t;
#define nvmlDeviceCapabilities_v1 ((unsigned int)(sizeof(nvmlDeviceCapabilities_v1_t) | (1U << 24)))
enum : unsigned { NVML_DEV_CAP_EGM = 1U << 0 };

// nvmlDeviceGetPdi: the GPU's 64-bit per-device identifier.
typedef struct nvmlPdi_v1_st {
  unsigned int version;
  unsigned long long value;
} nvmlPdi_v1_t;
#define nvmlPdi_v1 ((unsigned int)(sizeof(nvmlPdi_v1_t) | (1U << 24)))

// nvmlDeviceGetRunningProcessDetailList: the processes of one mode with their memory and, unlike
// nvmlProcessInfo_t, their confidential-compute protected memory (bytes).
enum : unsigned {
  NVML_PROCESS_MODE_COMPUTE = 0,
  NVML_PROCESS_MODE_GRAPHICS = 1,
  NVML_PROCESS_MODE_MPS = 2,
  NVML_PROCESS_MODE_ALL = 3,
};
typedef struct nvmlProcessDetail_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // 0xFFFFFFFF outside MIG
  unsigned int computeInstanceId;  // 0xFFFFFFFF outside MIG
  unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;
typedef struct nvmlProcessDetailList_v1_st {
  unsigned int version;
  unsigned int mode;                 // NVML_PROCESS_MODE_*
  unsigned int numProcArrayEntries;  // in: the array's size; out: the count (INSUFFICIENT_SIZE when short)
  nvmlProcessDetail_v1_t* procArray;
} nvmlProcessDetailList_v1_t;
#define nvmlProcessDetailList_v1 ((unsigned int)(sizeof(nvmlProcessDetailList_v1_t) | (1U << 24)))  // extended GPU memory (Grace Hopper's CPU memory as GPU memory)

typedef struct {
  unsigned long long timeStamp;  // CPU time, µs
  unsigned int pid;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
  unsigned int jpgUtil;
  unsigned int ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;
typedef struct {
  unsigned int version;              // nvmlProcessesUtilizationInfo_v1
  unsigned int processSamplesCount;  // in: capacity of procUtilArray; out: processes
  unsigned long long lastSeenTimeStamp;
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;
} nvmlProcessesUtilizationInfo_t;
#define nvmlProcessesUtilizationInfo_v1 NVML_STRUCT_VERSION(nvmlProcessesUtilizationInfo_t, 1U)

typedef struct {
  unsigned int version;  // nvmlDeviceCurrentClockFreqs_v1
  char str[2048];
} nvmlDeviceCurrentClockFreqs_t;
#define nvmlDeviceCurrentClockFreqs_v1 NVML_STRUCT_VERSION(nvmlDeviceCurrentClockFreqs_t, 1U)

// ---- MIG: GPU instances, their profiles and the MIG devices (compute instances) inside them.
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct {
  unsigned int start;  // first memory slice occupied
  unsigned int size;   // memory slices occupied
} nvmlGpuInstancePlacement_t;
typedef struct {
  nvmlDevice_t device;  // the parent GPU
  unsigned int id;      // GPU instance id, unique within the GPU
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
// A GPU instance profile (nvmlDeviceGetGpuInstanceProfileInfoV). `name` is the driver's, "MIG 1g.10gb".
typedef struct {
  unsigned int version;  // nvmlGpuInstanceProfileInfo_v2
  unsigned int id;       // profile id (19 = 1g.10gb on an H100), as nvmlGpuInstanceInfo_t.profileId
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[96];  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION(nvmlGpuInstanceProfileInfo_v2_t, 2U)
// Profile indices for nvmlDeviceGetGpuInstanceProfileInfoV (not profile ids); the driver answers
// INVALID_ARGUMENT past the last and NOT_SUPPORTED for one the GPU lacks.
enum : unsigned {
  NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE = 1,
  NVML_GPU_INSTANCE_PROFILE_3_SLICE = 2,
  NVML_GPU_INSTANCE_PROFILE_4_SLICE = 3,
  NVML_GPU_INSTANCE_PROFILE_7_SLICE = 4,
  NVML_GPU_INSTANCE_PROFILE_8_SLICE = 5,
  NVML_GPU_INSTANCE_PROFILE_6_SLICE = 6,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 7,  // 1g with all media engines ("+me")
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 8,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 9,  // 1g with twice the memory (1g.20gb on an H100 80GB)
  NVML_GPU_INSTANCE_PROFILE_COUNT = 0x12,
};
// A device's (or MIG device's) resources: nvmlDeviceGetAttributes_v2.
typedef struct {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef struct nvmlGpuDynamicPstatesInfo_st {
  unsigned int flags;
  struct {
    unsigned int bIsPresent;
    unsigned int percentage;
    unsigned int incThreshold;
    unsigned int decThreshold;
  } utilization[8];
} nvmlGpuDynamicPstatesInfo_t;

typedef struct nvmlClkMonFaultInfo_struct {
  unsigned int clkApiDomain;
  unsigned int clkDomainFaultMask;
} nvmlClkMonFaultInfo_t;
typedef struct nvmlClkMonStatus_status {
  unsigned int bGlobalStatus;
  unsigned int clkMonListSize;
  nvmlClkMonFaultInfo_t clkMonList[32];
} nvmlClkMonStatus_t;

typedef struct {
  unsigned int currentMode;
  unsigned int mode;
  unsigned int supportedPowerMizerModes;
} nvmlDevicePowerMizerModes_v1_t;

typedef struct nvmlSample_st {
  unsigned long long timeStamp;  // CPU time, µs
  nvmlValue_t sampleValue;
} nvmlSample_t;

enum nvmlEnableState_enum : int { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum nvmlComputeMode_enum : int {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
enum nvmlGpuOperationMode_enum : int { NVML_GOM_ALL_ON = 0, NVML_GOM_COMPUTE = 1, NVML_GOM_LOW_DP = 2 };
enum nvmlInforomObject_enum : int { NVML_INFOROM_OEM = 0, NVML_INFOROM_ECC = 1, NVML_INFOROM_POWER = 2, NVML_INFOROM_DEN = 3 };
enum nvmlMemoryLocation_enum : int {
  NVML_MEMORY_LOCATION_L1_CACHE = 0,
  NVML_MEMORY_LOCATION_L2_CACHE = 1,
  NVML_MEMORY_LOCATION_DEVICE_MEMORY = 2,  // also NVML_MEMORY_LOCATION_DRAM (Turing+)
  NVML_MEMORY_LOCATION_REGISTER_FILE = 3,
  NVML_MEMORY_LOCATION_TEXTURE_MEMORY = 4,
  NVML_MEMORY_LOCATION_TEXTURE_SHM = 5,
  NVML_MEMORY_LOCATION_CBU = 6,
  NVML_MEMORY_LOCATION_SRAM = 7,
};
enum nvmlSamplingType_enum : int {
  NVML_TOTAL_POWER_SAMPLES = 0,
  NVML_GPU_UTILIZATION_SAMPLES = 1,
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,
  NVML_ENC_UTILIZATION_SAMPLES = 3,
  NVML_DEC_UTILIZATION_SAMPLES = 4,
  NVML_PROCESSOR_CLK_SAMPLES = 5,
  NVML_MEMORY_CLK_SAMPLES = 6,
  NVML_MODULE_POWER_SAMPLES = 7,
  NVML_JPG_UTILIZATION_SAMPLES = 8,
  NVML_OFA_UTILIZATION_SAMPLES = 9,
};
enum : unsigned { NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE = 16, NVML_GSP_FIRMWARE_VERSION_BUF_SIZE = 0x40 };
enum : unsigned { NVML_DEVICE_VGPU_CAP_HOMOGENEOUS_PLACEMENTS = 9 };
enum : unsigned { NVML_POWER_SCOPE_GPU = 0, NVML_POWER_SCOPE_MODULE = 1, NVML_POWER_SCOPE_MEMORY = 2 };
enum : unsigned {
  NVML_GPU_RECOVERY_ACTION_NONE = 0,
  NVML_GPU_RECOVERY_ACTION_GPU_RESET = 1,
  NVML_GPU_RECOVERY_ACTION_NODE_REBOOT = 2,
  NVML_GPU_RECOVERY_ACTION_DRAIN_P2P = 3,
  NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET = 4,
};

// Clock event (throttle) reason bits.
enum : unsigned long long {
  nvmlClocksEventReasonGpuIdle = 0x1ULL,
  nvmlClocksEventReasonApplicationsClocksSetting = 0x2ULL,
  nvmlClocksEventReasonSwPowerCap = 0x4ULL,
  nvmlClocksThrottleReasonHwSlowdown = 0x8ULL,
  nvmlClocksEventReasonSyncBoost = 0x10ULL,
  nvmlClocksEventReasonSwThermalSlowdown = 0x20ULL,
  nvmlClocksThrottleReasonHwThermalSlowdown = 0x40ULL,
  nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x80ULL,
  nvmlClocksEventReasonDisplayClockSetting = 0x100ULL,
};

// Event types.
enum : unsigned long long {
  nvmlEventTypeSingleBitEccError = 0x1ULL,
  nvmlEventTypeDoubleBitEccError = 0x2ULL,
  nvmlEventTypePState = 0x4ULL,
  nvmlEventTypeXidCriticalError = 0x8ULL,
};

// Field ids for nvmlDeviceGetFieldValues.
enum : unsigned {
  NVML_FI_DEV_ECC_SBE_VOL_TOTAL = 3,
  NVML_FI_DEV_ECC_DBE_VOL_TOTAL = 4,
  // Nanoseconds the clocks were held down by each policy, as nvmlDeviceGetViolationStatus (one batched
  // query instead of one call per policy).
  NVML_FI_DEV_PERF_POLICY_POWER = 74,
  NVML_FI_DEV_PERF_POLICY_THERMAL = 75,
  NVML_FI_DEV_PERF_POLICY_SYNC_BOOST = 76,
  NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT = 77,
  NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION = 78,
  NVML_FI_DEV_PERF_POLICY_RELIABILITY = 79,
  NVML_FI_DEV_MEMORY_TEMP = 82,
  NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83,
  NVML_FI_DEV_NVLINK_LINK_COUNT = 91,
  NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
  NVML_FI_DEV_REMAPPED_COR = 142,
  NVML_FI_DEV_REMAPPED_UNC = 143,
  NVML_FI_DEV_REMAPPED_PENDING = 144,
  NVML_FI_DEV_REMAPPED_FAILURE = 145,
  NVML_FI_DEV_POWER_AVERAGE = 185,
  NVML_FI_DEV_POWER_INSTANT = 186,
  NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT = 193,
  NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT = 194,
  NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT = 195,
  NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT = 196,
  NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230,
  // Power smoothing (Blackwell): NOT_SUPPORTED on H100.
  NVML_FI_PWR_SMOOTHING_ENABLED = 251,
  NVML_FI_PWR_SMOOTHING_PRIV_LVL = 252,
  NVML_FI_PWR_SMOOTHING_IMM_RAMP_DOWN_ENABLED = 253,
  NVML_FI_PWR_SMOOTHING_APPLIED_TMP_CEIL = 254,
  NVML_FI_PWR_SMOOTHING_APPLIED_TMP_FLOOR = 255,
  NVML_FI_PWR_SMOOTHING_MAX_PERCENT_TMP_FLOOR_SETTING = 256,
  NVML_FI_PWR_SMOOTHING_MIN_PERCENT_TMP_FLOOR_SETTING = 257,
  NVML_FI_PWR_SMOOTHING_HW_CIRCUITRY_PERCENT_LIFETIME_REMAINING = 258,
  NVML_FI_PWR_SMOOTHING_MAX_NUM_PRESET_PROFILES = 259,
  NVML_FI_PWR_SMOOTHING_PROFILE_PERCENT_TMP_FLOOR = 260,
  NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_UP_RATE = 261,
  NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_DOWN_RATE = 262,
  NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_DOWN_HYST_VAL = 263,
  NVML_FI_PWR_SMOOTHING_ACTIVE_PRESET_PROFILE = 264,
  NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_PERCENT_TMP_FLOOR = 265,
  NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_RAMP_UP_RATE = 266,
  NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_RAMP_DOWN_RATE = 267,
  NVML_FI_PWR_SMOOTHING_ADMIN_OVERRIDE_RAMP_DOWN_HYST_VAL = 268,
  // Clock event reason counters (ns) beyond the perf policies 74 (sw power cap) and 76 (sync boost).
  NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN = 269,
  NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN = 270,
  NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN = 271,
};

// GPM metric ids.
enum : unsigned {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_INTEGER_UTIL = 4,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
  NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
  NVML_GPM_METRIC_DMMA_TENSOR_UTIL = 8,
  NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
};

// ---- Functions. The backend never links these: it takes their types (decltype) and dlsym()s them.
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion);

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device);

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length);
nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t device, char* partNumber, unsigned int length);
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version, unsigned int length);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci);

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, nvmlBAR1Memory_t* bar1Memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int* temp);
nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, int thresholdType, unsigned int* temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit);
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int* limit);
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int* limit);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int* clock);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int* clock);
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, int* pState);
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed);
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long* reasons);
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons);
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int perfPolicyType, nvmlViolationTime_t* violTime);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, int errorType, int counterType,
                                         unsigned long long* eccCounts);
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, int* current, int* pending);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows, unsigned int* uncRows,
                                       unsigned int* isPending, unsigned int* failureOccurred);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, int cause, unsigned int* pageCount,
                                       unsigned long long* addresses);
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, int* isPending);
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter, unsigned int* value);
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* currLinkGen);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGen);
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* currLinkWidth);
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth);

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                      nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                   nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values);

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info);
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t* gpuInstances,
                                       unsigned int* count);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t device, unsigned int profileId,
                                                      nvmlGpuInstanceProfileInfo_v2_t* info);
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, int* mode);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, int* mode);
nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device, int* isActive);
nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, int* display);
nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t device, int* current, int* pending);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* numCores);

// What nvidia-smi shows beyond the sampled catalog.
nvmlReturn_t nvmlDeviceGetJpgUtilization(nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetOfaUtilization(nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device, nvmlProcessesUtilizationInfo_t* procesesUtilInfo);
nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, int type, unsigned long long lastSeenTimeStamp,
                                  int* sampleValType, unsigned int* sampleCount, nvmlSample_t* samples);
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int* minLimit, unsigned int* maxLimit);
nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t device, int* mode);
nvmlReturn_t nvmlDeviceGetPowerSource(nvmlDevice_t device, unsigned int* powerSource);
nvmlReturn_t nvmlDeviceGetPowerState(nvmlDevice_t device, int* pState);
nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device, unsigned long long* supportedClocksEventReasons);
nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device, unsigned long long* supportedClocksThrottleReasons);
nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device, int* mode);
nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device, unsigned int* bufferSize);
nvmlReturn_t nvmlDeviceGetRemappedRows_v2(nvmlDevice_t device, nvmlRemappedRowsInfo_v2_t* info);
nvmlReturn_t nvmlDeviceGetRowRemapperHistogram(nvmlDevice_t device, nvmlRowRemapperHistogramValues_t* values);
nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGenDevice);
nvmlReturn_t nvmlDeviceGetPcieLinkMaxSpeed(nvmlDevice_t device, unsigned int* maxSpeed);
nvmlReturn_t nvmlDeviceGetPcieSpeed(nvmlDevice_t device, unsigned int* pcieSpeed);
nvmlReturn_t nvmlDeviceGetIrqNum(nvmlDevice_t device, unsigned int* irqNum);
nvmlReturn_t nvmlDeviceGetGpuOperationMode(nvmlDevice_t device, int* current, int* pending);
nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char* version, unsigned int length);
nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device, int object, char* version, unsigned int length);
nvmlReturn_t nvmlDeviceGetInforomConfigurationChecksum(nvmlDevice_t device, unsigned int* checksum);
nvmlReturn_t nvmlDeviceValidateInforom(nvmlDevice_t device);
nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t device, int clockType, unsigned int* clockMHz);
nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t device, int clockType, unsigned int* clockMHz);
nvmlReturn_t nvmlDeviceGetMaxCustomerBoostClock(nvmlDevice_t device, int clockType, unsigned int* clockMHz);
nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t device, unsigned int* count, unsigned int* clocksMHz);
nvmlReturn_t nvmlDeviceGetAutoBoostedClocksEnabled(nvmlDevice_t device, int* isEnabled, int* defaultIsEnabled);
nvmlReturn_t nvmlDeviceGetAdaptiveClockInfoStatus(nvmlDevice_t device, unsigned int* adaptiveClockStatus);
nvmlReturn_t nvmlDeviceGetGpcClkVfOffset(nvmlDevice_t device, int* offset);
nvmlReturn_t nvmlDeviceGetMemClkVfOffset(nvmlDevice_t device, int* offset);
nvmlReturn_t nvmlDeviceGetCurrentClockFreqs(nvmlDevice_t device, nvmlDeviceCurrentClockFreqs_t* currentClockFreqs);
nvmlReturn_t nvmlDeviceGetClkMonStatus(nvmlDevice_t device, nvmlClkMonStatus_t* status);
nvmlReturn_t nvmlDeviceGetDynamicPstatesInfo(nvmlDevice_t device, nvmlGpuDynamicPstatesInfo_t* pDynamicPstatesInfo);
nvmlReturn_t nvmlDeviceGetGspFirmwareMode(nvmlDevice_t device, unsigned int* isEnabled, unsigned int* defaultMode);
nvmlReturn_t nvmlDeviceGetGspFirmwareVersion(nvmlDevice_t device, char* version);
nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t device, nvmlConfComputeMemSizeInfo_t* memInfo);
nvmlReturn_t nvmlDeviceGetConfComputeProtectedMemoryUsage(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, int errorType, int counterType, int locationType,
                                             unsigned long long* count);
nvmlReturn_t nvmlDeviceGetSramEccErrorStatus(nvmlDevice_t device, nvmlEccSramErrorStatus_t* status);
nvmlReturn_t nvmlDeviceGetDefaultEccMode(nvmlDevice_t device, int* defaultMode);
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t* gpuFabricInfo);
nvmlReturn_t nvmlDeviceGetPlatformInfo(nvmlDevice_t device, nvmlPlatformInfo_t* platformInfo);
nvmlReturn_t nvmlDeviceGetAddressingMode(nvmlDevice_t device, nvmlDeviceAddressingMode_t* mode);
nvmlReturn_t nvmlDeviceGetMarginTemperature(nvmlDevice_t device, nvmlMarginTemperature_t* marginTempInfo);
nvmlReturn_t nvmlDeviceGetHostname_v1(nvmlDevice_t device, nvmlHostname_v1_t* hostname);
nvmlReturn_t nvmlDeviceGetVgpuCapabilities(nvmlDevice_t device, int capability, unsigned int* capResult);
nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device, int* pVirtualMode);
nvmlReturn_t nvmlDeviceGetHostVgpuMode(nvmlDevice_t device, int* pHostVgpuMode);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, int* type);
nvmlReturn_t nvmlDeviceGetBoardId(nvmlDevice_t device, unsigned int* boardId);
nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int* multiGpuBool);
nvmlReturn_t nvmlDeviceGetModuleId(nvmlDevice_t device, unsigned int* moduleId);
nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t device, unsigned int* numFans);
nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t device, unsigned int* busWidth);
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node);
nvmlReturn_t nvmlDeviceGetC2cModeInfoV(nvmlDevice_t device, nvmlC2cModeInfo_v1_t* c2cModeInfo);
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int* isActive);
nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int* pNvLinkDeviceType);
nvmlReturn_t nvmlGpmQueryIfStreamingEnabled(nvmlDevice_t device, unsigned int* state);
nvmlReturn_t nvmlDeviceGetTopologyGpuSet(unsigned int cpuNumber, unsigned int* count, nvmlDevice_t* deviceArray);
nvmlReturn_t nvmlDeviceGetPowerMizerMode_v1(nvmlDevice_t device, nvmlDevicePowerMizerModes_v1_t* powerMizerMode);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                        nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v1_t* infos);
nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, int cause, unsigned int* pageCount,
                                          unsigned long long* addresses, unsigned long long* timestamps);
nvmlReturn_t nvmlDeviceGetEncoderStats(nvmlDevice_t device, unsigned int* sessionCount, unsigned int* averageFps,
                                       unsigned int* averageLatency);
nvmlReturn_t nvmlDeviceGetFBCStats(nvmlDevice_t device, nvmlFBCStats_t* fbcStats);
nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t device, nvmlPciInfoExt_v1_t* pci);
nvmlReturn_t nvmlDeviceGetRepairStatus(nvmlDevice_t device, nvmlRepairStatus_v1_t* repairStatus);
nvmlReturn_t nvmlDeviceGetUnrepairableMemoryFlag_v1(nvmlDevice_t device,
                                                    nvmlUnrepairableMemoryStatus_v1_t* unrepairableMemoryStatus);
nvmlReturn_t nvmlDeviceGetCapabilities(nvmlDevice_t device, nvmlDeviceCapabilities_v1_t* caps);
nvmlReturn_t nvmlDeviceGetPdi(nvmlDevice_t device, nvmlPdi_v1_t* pdi);
nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, nvmlProcessDetailList_v1_t* plist);

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet);

// ---- gpuscope's simulator only (src/sim/). Not part of NVML; a real driver lacks them, so the
// backend looks them up like any optional symbol.
// Drives the simulator's virtual clock: from the first call on, simulated time stands still at
// `unixNs` (nanoseconds since the Unix epoch) until the next call.
nvmlReturn_t gpuscopeSimSetTime(unsigned long long unixNs);
// The simulator's current time (virtual or real), ns since the Unix epoch.
nvmlReturn_t gpuscopeSimGetTime(unsigned long long* unixNs);
// The scenario's name for a simulated pid (its pids live in no PID namespace of this host).
// NOT_FOUND for a pid the scenario does not have.
nvmlReturn_t gpuscopeSimGetProcessName(unsigned int pid, char* name, unsigned int length);
// The scenario's user of a simulated pid (what /proc would say on a host); NOT_FOUND for a pid it does
// not have or that names no user.
nvmlReturn_t gpuscopeSimGetProcessUser(unsigned int pid, char* user, unsigned int length);
// The scenario's node hostname (node.hostname), so labels match the simulated node, not this machine.
nvmlReturn_t gpuscopeSimGetHostname(char* name, unsigned int length);
// The scenario's fabric (`fabric:`) as a sysfs tree under a temporary directory (made on the first call,
// removed at the last nvmlShutdown): its counter files are rewritten for the simulator's current time
// on every call, and `root` gets the directory to read as /sys. NOT_SUPPORTED for a scenario without one.
nvmlReturn_t gpuscopeSimUpdateSysfs(char* root, unsigned int length);
// How many times `function` (an NVML function name) was called since the library was loaded, for
// tests that assert what a reader calls rather than how long it took.
nvmlReturn_t gpuscopeSimGetCallCount(const char* function, unsigned long long* count);
// The index-th (0-based, by name) function called so far and its count; NOT_FOUND past the last. What
// the call cost model charges one call of `function` (plus, for nvmlDeviceGetFieldValues, a batch of
// `fieldCount` field ids), in ns of CPU and of blocking. See scenarios/README.md, "cost_profile".
nvmlReturn_t gpuscopeSimGetCallCountByIndex(unsigned int index, char* function, unsigned int length, unsigned long long* count);
nvmlReturn_t gpuscopeSimGetCallCost(const char* function, unsigned int fieldCount, const unsigned int* fieldIds, unsigned long long* cpuNs, unsigned long long* blockedNs);
// Why the latest nvmlInit failed when the simulator's input was at fault, not the simulated driver:
// `*source` is GPUSCOPE_SIM_INIT_FAILURE_SCENARIO (the scenario file: `message` is "FILE:LINE: what")
// or GPUSCOPE_SIM_INIT_FAILURE_ENVIRONMENT (a GPUSCOPE_SIM_* variable: "NAME: what"). NOT_FOUND when
// the latest nvmlInit succeeded or failed as a driver does (a scenario's driver_not_loaded, an
// injected fault). Works without nvmlInit. A client of the real NVML API sees only nvmlInit's code.
nvmlReturn_t gpuscopeSimGetInitFailure(unsigned int* source, char* message, unsigned int length);
#define GPUSCOPE_SIM_INIT_FAILURE_SCENARIO 1U
#define GPUSCOPE_SIM_INIT_FAILURE_ENVIRONMENT 2U

}  // extern "C"

static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(nvmlMemory_v2 == 0x02000028U);
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlBAR1Memory_t) == 24);
static_assert(sizeof(nvmlProcessInfo_t) == 24);
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(sizeof(nvmlViolationTime_t) == 16);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(sizeof(nvmlGpmSupport_t) == 8);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlRowRemapperHistogramValues_t) == 20);
static_assert(sizeof(nvmlConfComputeMemSizeInfo_t) == 16);
static_assert(sizeof(nvmlRemappedRowsInfo_v2_t) == 24);
static_assert(sizeof(nvmlEccSramErrorStatus_t) == 104);
static_assert(sizeof(nvmlGpuFabricInfoV_t) == 40);
static_assert(offsetof(nvmlGpuFabricInfoV_t, healthMask) == 32);
static_assert(sizeof(nvmlPlatformInfo_t) == 44);
static_assert(sizeof(nvmlDeviceAddressingMode_t) == 8);
static_assert(sizeof(nvmlMarginTemperature_t) == 8);
static_assert(sizeof(nvmlProcessUtilizationInfo_v1_t) == 40);
static_assert(sizeof(nvmlProcessesUtilizationInfo_t) == 24);
static_assert(sizeof(nvmlDeviceCurrentClockFreqs_t) == 2052);
static_assert(sizeof(nvmlGpuDynamicPstatesInfo_t) == 132);
static_assert(sizeof(nvmlClkMonStatus_t) == 264);
static_assert(sizeof(nvmlSample_t) == 16);
static_assert(sizeof(nvmlDevicePowerMizerModes_v1_t) == 12);
static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48);
static_assert(sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(sizeof(nvmlPciInfoExt_v1_t) == 64);
static_assert(sizeof(nvmlRepairStatus_v1_t) == 12);
static_assert(sizeof(nvmlDeviceCapabilities_v1_t) == 8);
static_assert(sizeof(nvmlPdi_v1_t) == 16);
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32);
static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24);
