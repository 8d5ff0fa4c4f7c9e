// The answers beyond the sampled catalog that the real H100's json cannot hold the simulator to: how
// the boards differ (H100, A100, L4), what an old driver (r535) lacks, the calls the reference probe
// could not make, and that the new answers agree with the existing ones (ECC by location sums to the
// totals, per-process utilization, samples, power and thermal fields).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim_library.h"

namespace gpuscope::sim::testing {

extern const char* const kRealH100Vm;  // nvml_answers_test.cc

namespace {

// GPU 0 an H100 (NVLink), 1 an A100 SXM4, 2 an L4 (PCIe, GDDR6).
constexpr const char* kBoardsYaml = R"(gpus:
  count: 3
  model: NVIDIA H100 80GB HBM3
  overrides:
    - {gpu: 1, model: NVIDIA A100-SXM4-80GB}
    - {gpu: 2, model: NVIDIA L4}
workload:
  profile: idle
)";

TEST(BoardAnswers, ModelsDifferWhereTheBoardsDo) {
  Session s(kBoardsYaml);
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t h100 = s.gpu(0), a100 = s.gpu(1), l4 = s.gpu(2);
  unsigned lo = 0, hi = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetPowerManagementLimitConstraints)(a100, &lo, &hi), NVML_SUCCESS);
  EXPECT_EQ(lo, 100000U);
  EXPECT_EQ(hi, 400000U);
  ASSERT_EQ(NVML(nvmlDeviceGetPowerManagementLimitConstraints)(l4, &lo, &hi), NVML_SUCCESS);
  EXPECT_EQ(lo, 40000U);
  EXPECT_EQ(hi, 72000U);

  // PCIe gen 5 on Hopper, gen 4 on the A100 and the L4.
  const auto max_speed = [](nvmlDevice_t d) {
    unsigned v = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetPcieLinkMaxSpeed)(d, &v), NVML_SUCCESS);
    return v;
  };
  EXPECT_EQ(max_speed(h100), 5U);  // NVML_PCIE_LINK_MAX_SPEED_32000MBPS
  EXPECT_EQ(max_speed(a100), 4U);
  EXPECT_EQ(max_speed(l4), 4U);

  // GPM on Hopper only.
  nvmlGpmSupport_t gpm{.version = NVML_GPM_SUPPORT_VERSION, .isSupportedDevice = 9};
  ASSERT_EQ(NVML(nvmlGpmQueryDeviceSupport)(a100, &gpm), NVML_SUCCESS);
  EXPECT_EQ(gpm.isSupportedDevice, 0U);
  unsigned streaming = 0;
  EXPECT_EQ(NVML(nvmlGpmQueryIfStreamingEnabled)(a100, &streaming), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlGpmQueryIfStreamingEnabled)(h100, &streaming), NVML_SUCCESS);

  // NVLink to NVSwitches on the SXM boards; none on the L4.
  int active = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(h100, 17, &active), NVML_SUCCESS);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(a100, 11, &active), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(a100, 12, &active), NVML_ERROR_NOT_SUPPORTED);  // 12 links
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(h100, 18, &active), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkState)(l4, 0, &active), NVML_ERROR_NOT_SUPPORTED);
  int remote = -1;
  ASSERT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(a100, 0, &remote), NVML_SUCCESS);
  EXPECT_EQ(remote, 2);  // NVML_NVLINK_DEVICE_TYPE_SWITCH

  // Row remapper banks: HBM3 H100 2560 (measured), HBM2e A100 640.
  nvmlRowRemapperHistogramValues_t hist{};
  ASSERT_EQ(NVML(nvmlDeviceGetRowRemapperHistogram)(h100, &hist), NVML_SUCCESS);
  EXPECT_EQ(hist.max, 2560U);
  ASSERT_EQ(NVML(nvmlDeviceGetRowRemapperHistogram)(a100, &hist), NVML_SUCCESS);
  EXPECT_EQ(hist.max, 640U);

  unsigned width = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryBusWidth)(l4, &width), NVML_SUCCESS);
  EXPECT_EQ(width, 192U);  // GDDR6, 6 x 32 bit

  // Hopper's driver has no video application clock; the A100's is its maximum video clock.
  unsigned mhz = 0, max_video = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetApplicationsClock)(h100, NVML_CLOCK_VIDEO, &mhz), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(NVML(nvmlDeviceGetApplicationsClock)(a100, NVML_CLOCK_VIDEO, &mhz), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(a100, NVML_CLOCK_VIDEO, &max_video), NVML_SUCCESS);
  EXPECT_EQ(mhz, max_video);

  // Confidential computing and platform records exist on Hopper SXM only.
  nvmlConfComputeMemSizeInfo_t cc{};
  EXPECT_EQ(NVML(nvmlDeviceGetConfComputeMemSizeInfo)(h100, &cc), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetConfComputeMemSizeInfo)(a100, &cc), NVML_ERROR_NOT_SUPPORTED);
  nvmlPlatformInfo_t platform{};
  platform.version = nvmlPlatformInfo_v2;
  EXPECT_EQ(NVML(nvmlDeviceGetPlatformInfo)(l4, &platform), NVML_ERROR_NOT_SUPPORTED);

  // The L4 is passively cooled GDDR6: no fan to read, no memory temperature, no MIG.
  unsigned fans = 9, speed = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetNumFans)(l4, &fans), NVML_SUCCESS);
  EXPECT_EQ(fans, 0U);
  EXPECT_EQ(NVML(nvmlDeviceGetFanSpeed)(l4, &speed), NVML_ERROR_NOT_SUPPORTED);
  std::vector<nvmlFieldValue_t> f(3);
  f[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  f[1].fieldId = NVML_FI_DEV_NVLINK_LINK_COUNT;
  f[2].fieldId = NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT;
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(l4, 3, f.data()), NVML_SUCCESS);
  for (const nvmlFieldValue_t& v : f) EXPECT_EQ(v.nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << v.fieldId;
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(a100, 3, f.data()), NVML_SUCCESS);
  for (const nvmlFieldValue_t& v : f) EXPECT_EQ(v.nvmlReturn, NVML_SUCCESS) << v.fieldId;
  EXPECT_EQ(f[1].value.uiVal, 12U);
}

TEST(BoardAnswers, AnOldDriverLacksTheNewerFunctions) {
  const auto newer_codes = [](nvmlDevice_t d) {
    std::vector<nvmlReturn_t> codes;
    unsigned u = 0, period = 0;
    codes.push_back(NVML(nvmlDeviceGetJpgUtilization)(d, &u, &period));
    codes.push_back(NVML(nvmlDeviceGetOfaUtilization)(d, &u, &period));
    nvmlProcessesUtilizationInfo_t procs{};
    procs.version = nvmlProcessesUtilizationInfo_v1;
    codes.push_back(NVML(nvmlDeviceGetProcessesUtilizationInfo)(d, &procs));
    nvmlMarginTemperature_t margin{.version = nvmlMarginTemperature_v1, .marginTemperature = 0};
    codes.push_back(NVML(nvmlDeviceGetMarginTemperature)(d, &margin));
    nvmlDeviceAddressingMode_t mode{.version = nvmlDeviceAddressingMode_v1, .value = 9};
    codes.push_back(NVML(nvmlDeviceGetAddressingMode)(d, &mode));
    nvmlPlatformInfo_t platform{};
    platform.version = nvmlPlatformInfo_v2;
    codes.push_back(NVML(nvmlDeviceGetPlatformInfo)(d, &platform));
    nvmlGpuFabricInfoV_t fabric{};
    fabric.version = nvmlGpuFabricInfo_v3;
    codes.push_back(NVML(nvmlDeviceGetGpuFabricInfoV)(d, &fabric));
    return codes;
  };
  {
    Session old("driver_r535");
    ASSERT_TRUE(old.ok());
    char version[80];
    ASSERT_EQ(NVML(nvmlSystemGetDriverVersion)(version, sizeof version), NVML_SUCCESS);
    EXPECT_STREQ(version, "535.98");  // a scenario's own driver stays
    for (const nvmlReturn_t r : newer_codes(old.gpu(0))) EXPECT_EQ(r, NVML_ERROR_FUNCTION_NOT_FOUND);
    // What 535 already had still answers.
    unsigned long long reasons = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetSupportedClocksEventReasons)(old.gpu(0), &reasons), NVML_SUCCESS);
  }
  Session current(kRealH100Vm);
  ASSERT_TRUE(current.ok());
  for (const nvmlReturn_t r : newer_codes(current.gpu(0))) {
    // A process-less GPU has no utilization sample yet; everything else answers.
    EXPECT_TRUE(r == NVML_SUCCESS || r == NVML_ERROR_NOT_FOUND) << r;
  }
}

// What the reference probe called without arguments (the binding raised TypeError), answered here.
TEST(BoardAnswers, CallsTheReferenceProbeCouldNotMake) {
  Session s(kRealH100Vm, 30.0);
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(0);
  unsigned boost = 0, max_sm = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxCustomerBoostClock)(dev, NVML_CLOCK_GRAPHICS, &boost), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(dev, NVML_CLOCK_GRAPHICS, &max_sm), NVML_SUCCESS);
  EXPECT_EQ(boost, max_sm);  // nvidia-smi -q: "Max Customer Boost Clocks / Graphics: 1980 MHz"
  EXPECT_EQ(NVML(nvmlDeviceGetMaxCustomerBoostClock)(dev, NVML_CLOCK_MEM, &boost), NVML_ERROR_NOT_SUPPORTED);
  int remote = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetNvLinkRemoteDeviceType)(dev, 0, &remote), NVML_ERROR_NOT_SUPPORTED);  // no NVLink
  unsigned gpus = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetTopologyGpuSet)(0, &gpus, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(gpus, 1U);
  nvmlDevice_t near = nullptr;
  ASSERT_EQ(NVML(nvmlDeviceGetTopologyGpuSet)(0, &gpus, &near), NVML_SUCCESS);
  EXPECT_EQ(near, dev);
  nvmlDevicePowerMizerModes_v1_t mizer{};
  EXPECT_EQ(NVML(nvmlDeviceGetPowerMizerMode_v1)(dev, &mizer), NVML_ERROR_NOT_SUPPORTED);

  // nvidia-smi --query-gpu platform.*: slot 0, tray 0, host 1; module id as nvmlDeviceGetModuleId.
  nvmlPlatformInfo_t platform{};
  platform.version = nvmlPlatformInfo_v2 + 1;
  EXPECT_EQ(NVML(nvmlDeviceGetPlatformInfo)(dev, &platform), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  platform.version = nvmlPlatformInfo_v2;
  ASSERT_EQ(NVML(nvmlDeviceGetPlatformInfo)(dev, &platform), NVML_SUCCESS);
  unsigned module = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetModuleId)(dev, &module), NVML_SUCCESS);
  EXPECT_EQ(platform.moduleId, module);
  EXPECT_EQ(platform.slotNumber, 0);
  EXPECT_EQ(platform.hostId, 1);

  // A lone passed-through H100: fabric state NOT_SUPPORTED, addressing mode none, hostname [N/A].
  nvmlGpuFabricInfoV_t fabric{};
  fabric.version = nvmlGpuFabricInfo_v3;
  ASSERT_EQ(NVML(nvmlDeviceGetGpuFabricInfoV)(dev, &fabric), NVML_SUCCESS);
  EXPECT_EQ(fabric.state, NVML_GPU_FABRIC_STATE_NOT_SUPPORTED);
  nvmlDeviceAddressingMode_t mode{.version = nvmlDeviceAddressingMode_v1, .value = 9};
  ASSERT_EQ(NVML(nvmlDeviceGetAddressingMode)(dev, &mode), NVML_SUCCESS);
  EXPECT_EQ(mode.value, 0U);
  nvmlHostname_v1_t host{};
  EXPECT_EQ(NVML(nvmlDeviceGetHostname_v1)(dev, &host), NVML_ERROR_NOT_SUPPORTED);

  // The InfoROM objects nvidia-smi -q lists: OEM 2.1, ECC 7.16, power N/A.
  char text[16];
  ASSERT_EQ(NVML(nvmlDeviceGetInforomVersion)(dev, NVML_INFOROM_OEM, text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, "2.1");
  ASSERT_EQ(NVML(nvmlDeviceGetInforomVersion)(dev, NVML_INFOROM_ECC, text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, "7.16");
  EXPECT_EQ(NVML(nvmlDeviceGetInforomVersion)(dev, NVML_INFOROM_POWER, text, sizeof text), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceValidateInforom)(dev), NVML_SUCCESS);

  nvmlMemory_t protected_mem{.total = 1, .free = 1, .used = 1};
  ASSERT_EQ(NVML(nvmlDeviceGetConfComputeProtectedMemoryUsage)(dev, &protected_mem), NVML_SUCCESS);
  EXPECT_EQ(protected_mem.total, 0U);
}

// Margin = maximum operating temperature - current temperature, along a heating run.
TEST(BoardAnswers, MarginTemperatureFollowsTheTemperature) {
  Session s("thermal_runaway");
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(1);  // the one whose cooling fails
  unsigned gpu_max = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetTemperatureThreshold)(dev, NVML_TEMPERATURE_THRESHOLD_GPU_MAX, &gpu_max), NVML_SUCCESS);
  for (const double t : {0.0, 60.0, 600.0, 1800.0}) {
    s.at(t);
    unsigned temp = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetTemperature)(dev, NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
    nvmlMarginTemperature_t margin{.version = nvmlMarginTemperature_v1, .marginTemperature = 0};
    ASSERT_EQ(NVML(nvmlDeviceGetMarginTemperature)(dev, &margin), NVML_SUCCESS);
    EXPECT_EQ(margin.marginTemperature, static_cast<int>(gpu_max) - static_cast<int>(temp)) << t;
  }
}

// ECC by location adds up to the totals; the field values say the same.
TEST(BoardAnswers, EccByLocationSumsToTheTotals) {
  Session s("ecc", 240.0);  // after GPU 0's 5 corrected and 1 uncorrected error, GPU 1's double-bit one
  ASSERT_TRUE(s.ok());
  for (unsigned gpu = 0; gpu < 2; ++gpu) {
    const nvmlDevice_t dev = s.gpu(gpu);
    for (const int type : {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED}) {
      unsigned long long total = 0, sum = 0;
      ASSERT_EQ(NVML(nvmlDeviceGetTotalEccErrors)(dev, type, NVML_VOLATILE_ECC, &total), NVML_SUCCESS);
      for (int loc = NVML_MEMORY_LOCATION_L1_CACHE; loc <= NVML_MEMORY_LOCATION_SRAM; ++loc) {
        unsigned long long n = 0;
        const nvmlReturn_t r = NVML(nvmlDeviceGetMemoryErrorCounter)(dev, type, NVML_VOLATILE_ECC, loc, &n);
        ASSERT_TRUE(r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED) << loc;
        if (r == NVML_SUCCESS) sum += n;
      }
      EXPECT_EQ(sum, total) << "gpu " << gpu << " type " << type;
    }
    nvmlFieldValue_t f[2] = {};
    f[0].fieldId = NVML_FI_DEV_ECC_SBE_VOL_TOTAL;
    f[1].fieldId = NVML_FI_DEV_ECC_DBE_VOL_TOTAL;
    ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, 2, f), NVML_SUCCESS);
    unsigned long long sbe = 0, dbe = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetTotalEccErrors)(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &sbe),
              NVML_SUCCESS);
    ASSERT_EQ(NVML(nvmlDeviceGetTotalEccErrors)(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &dbe),
              NVML_SUCCESS);
    EXPECT_EQ(f[0].value.ullVal, sbe);
    EXPECT_EQ(f[1].value.ullVal, dbe);
  }
  unsigned long long n = 0;
  // H100 counts SRAM/DRAM, not register file; the V100 the other way round.
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryErrorCounter)(s.gpu(0), 0, 0, NVML_MEMORY_LOCATION_REGISTER_FILE, &n),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryErrorCounter)(s.gpu(1), 0, 0, NVML_MEMORY_LOCATION_SRAM, &n),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlEccSramErrorStatus_t sram{};
  sram.version = nvmlEccSramErrorStatus_v1;
  EXPECT_EQ(NVML(nvmlDeviceGetSramEccErrorStatus)(s.gpu(0), &sram), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetSramEccErrorStatus)(s.gpu(1), &sram), NVML_ERROR_NOT_SUPPORTED);
}

TEST(BoardAnswers, RemapRecordsAgree) {
  Session s("row_remap", 300.0);  // after a correctable, an uncorrectable (pending) remap and a failure
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(0);
  unsigned c = 0, u = 0, pending = 0, failed = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetRemappedRows)(dev, &c, &u, &pending, &failed), NVML_SUCCESS);
  nvmlRemappedRowsInfo_v2_t v2{};
  ASSERT_EQ(NVML(nvmlDeviceGetRemappedRows_v2)(dev, &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.corrActiveRemaps, c);
  EXPECT_EQ(v2.uncActiveRemaps, u);
  EXPECT_EQ(v2.bPending, pending);
  EXPECT_EQ(v2.bFailureOccurred, failed);
  nvmlRowRemapperHistogramValues_t h{};
  ASSERT_EQ(NVML(nvmlDeviceGetRowRemapperHistogram)(dev, &h), NVML_SUCCESS);
  EXPECT_EQ(h.max + h.high + h.partial + h.low + h.none, 640U);  // every bank counted once
  EXPECT_EQ(h.high, c + u);
  EXPECT_EQ(h.none, failed);
  nvmlFieldValue_t f[4] = {};
  for (unsigned i = 0; i < 4; ++i) f[i].fieldId = NVML_FI_DEV_REMAPPED_COR + i;
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, 4, f), NVML_SUCCESS);
  EXPECT_EQ(f[0].value.ullVal, c);
  EXPECT_EQ(f[1].value.ullVal, u);
  EXPECT_EQ(f[2].value.ullVal, pending);
  EXPECT_EQ(f[3].value.ullVal, failed);
}

// The power, limit and clock-event fields are the single queries' numbers.
TEST(BoardAnswers, PowerAndThermalFieldsMatchTheirQueries) {
  Session s("thermal_runaway");
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(1);  // the one whose cooling fails
  for (const double t : {30.0, 900.0, 1800.0}) {
    s.at(t);
    nvmlFieldValue_t f[5] = {};
    f[0].fieldId = NVML_FI_DEV_POWER_INSTANT;
    f[1].fieldId = NVML_FI_DEV_POWER_AVERAGE;
    f[2].fieldId = 190;  // NVML_FI_DEV_POWER_CURRENT_LIMIT
    f[3].fieldId = NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN;
    f[4].fieldId = NVML_FI_DEV_PERF_POLICY_THERMAL;
    ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, 5, f), NVML_SUCCESS);
    unsigned power = 0, limit = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetPowerUsage)(dev, &power), NVML_SUCCESS);
    ASSERT_EQ(NVML(nvmlDeviceGetEnforcedPowerLimit)(dev, &limit), NVML_SUCCESS);
    nvmlViolationTime_t thermal{};
    ASSERT_EQ(NVML(nvmlDeviceGetViolationStatus)(dev, NVML_PERF_POLICY_THERMAL, &thermal), NVML_SUCCESS);
    EXPECT_EQ(f[0].value.uiVal, power) << t;
    EXPECT_EQ(f[1].value.uiVal, power) << t;
    EXPECT_EQ(f[2].value.uiVal, limit) << t;
    EXPECT_EQ(f[3].value.ullVal, thermal.violationTime) << t;
    EXPECT_EQ(f[4].value.ullVal, thermal.violationTime) << t;
    // The module's power (scope 1) is not the GPU's: nvidia-smi's module.power.* read [N/A] on an H100.
    f[0].scopeId = NVML_POWER_SCOPE_MODULE;
    ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, 1, f), NVML_SUCCESS);
    EXPECT_EQ(f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << t;
    // The supported reasons cover every active one.
    unsigned long long active = 0, supported = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetCurrentClocksEventReasons)(dev, &active), NVML_SUCCESS);
    ASSERT_EQ(NVML(nvmlDeviceGetSupportedClocksEventReasons)(dev, &supported), NVML_SUCCESS);
    EXPECT_EQ(active & ~supported, 0U) << t;
  }
  s.at(1800.0);
  nvmlViolationTime_t thermal{};
  ASSERT_EQ(NVML(nvmlDeviceGetViolationStatus)(dev, NVML_PERF_POLICY_THERMAL, &thermal), NVML_SUCCESS);
  EXPECT_GT(thermal.violationTime, 0U);  // the run does throttle, so the comparisons above compared something
}

// nvmlDeviceGetProcessesUtilizationInfo answers what nvmlDeviceGetProcessUtilization does, plus jpg/ofa.
TEST(BoardAnswers, ProcessesUtilizationInfoMatchesProcessUtilization) {
  Session s("", 42.5);  // the built-in training node: one process per GPU
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(3);
  nvmlProcessUtilizationSample_t old_style[8];
  unsigned n = 8;
  ASSERT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, old_style, &n, 0), NVML_SUCCESS);
  ASSERT_EQ(n, 1U);

  nvmlProcessUtilizationInfo_v1_t infos[8];
  nvmlProcessesUtilizationInfo_t req{};
  req.version = nvmlProcessesUtilizationInfo_v1;
  EXPECT_EQ(NVML(nvmlDeviceGetProcessesUtilizationInfo)(dev, &req), NVML_ERROR_INSUFFICIENT_SIZE);  // count probe
  EXPECT_EQ(req.processSamplesCount, 1U);
  req.procUtilArray = infos;
  req.processSamplesCount = 8;
  ASSERT_EQ(NVML(nvmlDeviceGetProcessesUtilizationInfo)(dev, &req), NVML_SUCCESS);
  ASSERT_EQ(req.processSamplesCount, 1U);
  EXPECT_EQ(infos[0].pid, old_style[0].pid);
  EXPECT_EQ(infos[0].timeStamp, old_style[0].timeStamp);
  EXPECT_EQ(infos[0].smUtil, old_style[0].smUtil);
  EXPECT_EQ(infos[0].memUtil, old_style[0].memUtil);
  EXPECT_GT(infos[0].smUtil, 0U);  // training: the comparison compares something
  EXPECT_EQ(infos[0].jpgUtil, 0U);
  EXPECT_EQ(infos[0].ofaUtil, 0U);
  // Nothing newer than what was just seen.
  req.lastSeenTimeStamp = infos[0].timeStamp;
  EXPECT_EQ(NVML(nvmlDeviceGetProcessesUtilizationInfo)(dev, &req), NVML_ERROR_NOT_FOUND);
  req.version = nvmlProcessesUtilizationInfo_v1 + 1;
  EXPECT_EQ(NVML(nvmlDeviceGetProcessesUtilizationInfo)(dev, &req), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

// nvmlDeviceGetSamples: one sample a second, each what the single query answered at that second.
TEST(BoardAnswers, SamplesAreThePastReadings) {
  Session s("", 0.0);
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t dev = s.gpu(0);
  std::vector<unsigned> power_at;
  for (int t = 0; t <= 10; ++t) {
    s.at(t);
    unsigned mw = 0;
    ASSERT_EQ(NVML(nvmlDeviceGetPowerUsage)(dev, &mw), NVML_SUCCESS);
    power_at.push_back(mw);
  }
  int type = -1;
  unsigned count = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetSamples)(dev, NVML_TOTAL_POWER_SAMPLES, 0, &type, &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(type, NVML_VALUE_TYPE_UNSIGNED_INT);
  ASSERT_EQ(count, 11U);
  std::vector<nvmlSample_t> samples(count);
  ASSERT_EQ(NVML(nvmlDeviceGetSamples)(dev, NVML_TOTAL_POWER_SAMPLES, 0, &type, &count, samples.data()), NVML_SUCCESS);
  ASSERT_EQ(count, 11U);
  for (unsigned i = 0; i < count; ++i) {
    EXPECT_EQ(samples[i].sampleValue.uiVal, power_at[i]) << i;
    EXPECT_EQ(static_cast<std::int64_t>(samples[i].timeStamp),
              (s.epoch_ns() + static_cast<std::int64_t>(i) * kNsPerS) / 1000) << i;
  }
  // Only the newer ones after a timestamp; none newer than the last.
  ASSERT_EQ(NVML(nvmlDeviceGetSamples)(dev, NVML_TOTAL_POWER_SAMPLES, samples[7].timeStamp, &type, &count,
                                       samples.data()), NVML_SUCCESS);
  EXPECT_EQ(count, 3U);
  EXPECT_EQ(NVML(nvmlDeviceGetSamples)(dev, NVML_TOTAL_POWER_SAMPLES, samples[2].timeStamp, &type, &count,
                                       samples.data()), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetSamples)(dev, NVML_MODULE_POWER_SAMPLES, 0, &type, &count, nullptr),
            NVML_ERROR_NOT_SUPPORTED);
}

// Under the real H100's cost profile the new queries cost what the measured query reading the same
// driver state costs, and none is free.
TEST(BoardAnswers, NewQueriesAreChargedLikeTheirMeasuredSiblings) {
  Session s("cost_profile: h100-580\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\n");
  ASSERT_TRUE(s.ok());
  const auto cpu_ns = [](const char* function) {
    unsigned long long cpu = 0, blocked = 0;
    EXPECT_EQ(NVML(gpuscopeSimGetCallCost)(function, 0, nullptr, &cpu, &blocked), NVML_SUCCESS) << function;
    return cpu;
  };
  EXPECT_EQ(cpu_ns("nvmlDeviceGetProcessesUtilizationInfo"), cpu_ns("nvmlDeviceGetProcessUtilization"));
  EXPECT_EQ(cpu_ns("nvmlDeviceGetMemoryErrorCounter"), cpu_ns("nvmlDeviceGetTotalEccErrors"));
  EXPECT_EQ(cpu_ns("nvmlDeviceGetJpgUtilization"), cpu_ns("nvmlDeviceGetEncoderUtilization"));
  EXPECT_EQ(cpu_ns("nvmlDeviceGetRowRemapperHistogram"), cpu_ns("nvmlDeviceGetRemappedRows"));
  for (const char* f : {"nvmlDeviceGetSamples", "nvmlDeviceGetCurrentClockFreqs", "nvmlDeviceGetPlatformInfo",
                        "nvmlDeviceGetInforomImageVersion", "nvmlDeviceGetSupportedClocksEventReasons",
                        "nvmlDeviceGetPowerManagementLimitConstraints", "nvmlDeviceGetMarginTemperature"}) {
    const unsigned long long ns = cpu_ns(f);
    EXPECT_GT(ns, 0U) << f;
    EXPECT_LE(ns, 10'000U) << f;  // cheap queries: 10 us at most
  }
}

}  // namespace
}  // namespace gpuscope::sim::testing
