// NVML's calling conventions as clients rely on them: return codes before init and for bad
// arguments, buffer sizes, versioned structs, error strings, reference-counted init, static identity.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <set>
#include <string>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

TEST(Lifecycle, EverythingIsUninitializedBeforeInitAndAfterTheLastShutdown) {
  const auto check_uninitialized = [] {
    unsigned n = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
    nvmlDevice_t dev = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(0, &dev), NVML_ERROR_UNINITIALIZED);
    char buf[96];
    EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(buf, sizeof buf), NVML_ERROR_UNINITIALIZED);
    nvmlEventSet_t set = nullptr;
    EXPECT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_ERROR_UNINITIALIZED);
    nvmlGpmSample_t sample = nullptr;
    EXPECT_EQ(NVML(nvmlGpmSampleAlloc)(&sample), NVML_ERROR_UNINITIALIZED);
    unsigned long long ns = 0;
    EXPECT_EQ(NVML(gpuscopeSimGetTime)(&ns), NVML_ERROR_UNINITIALIZED);
    EXPECT_EQ(NVML(gpuscopeSimSetTime)(1), NVML_ERROR_UNINITIALIZED);
    EXPECT_EQ(NVML(nvmlShutdown)(), NVML_ERROR_UNINITIALIZED);
  };
  check_uninitialized();
  nvmlDevice_t dev = nullptr;
  {
    Session s("");
    ASSERT_TRUE(s.ok());
    dev = s.gpu(0);
  }
  check_uninitialized();
  unsigned mw = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(dev, &mw), NVML_ERROR_UNINITIALIZED);
}

TEST(Lifecycle, InitIsReferenceCounted) {
  Session s("");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(NVML(nvmlInit)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlInitWithFlags)(0), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);  // the session's reference remains
  EXPECT_EQ(n, 8U);
}

TEST(Lifecycle, ALaterInitLoadsAnotherScenario) {
  {
    Session a("idle");
    EXPECT_EQ(a.count(), 8U);
  }
  Session b("memory_bound");
  EXPECT_EQ(b.count(), 2U);
}

TEST(ReturnCodes, NullPointersBadHandlesAndBadIndices) {
  Session s("");
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t out = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(8, &out), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex)(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(dev, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  int not_a_device = 0;
  unsigned v = 0;
  const auto bogus = reinterpret_cast<nvmlDevice_t>(&not_a_device);
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(bogus, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(nullptr, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetTemperature)(dev, 5, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetClockInfo)(dev, 9, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetPcieThroughput)(dev, 2, &v), NVML_ERROR_INVALID_ARGUMENT);
  nvmlViolationTime_t viol{};
  EXPECT_EQ(NVML(nvmlDeviceGetViolationStatus)(dev, 6, &viol), NVML_ERROR_INVALID_ARGUMENT);
  unsigned long long ull = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetTotalEccErrors)(dev, 2, NVML_VOLATILE_ECC, &ull), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)("GPU-nope", &out), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlEventSetFree)(reinterpret_cast<nvmlEventSet_t>(&not_a_device)), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpmSampleGet)(dev, reinterpret_cast<nvmlGpmSample_t>(&not_a_device)),
            NVML_ERROR_INVALID_ARGUMENT);
}

TEST(ReturnCodes, StringBuffersTooSmallAreInsufficientSize) {
  Session s("");
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  char small[8];
  EXPECT_EQ(NVML(nvmlDeviceGetName)(dev, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(dev, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(NVML(nvmlSystemGetDriverVersion)(small, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  char exact[22];  // "NVIDIA H100 80GB HBM3" is 21 characters
  EXPECT_EQ(NVML(nvmlDeviceGetName)(dev, exact, 21), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(NVML(nvmlDeviceGetName)(dev, exact, 22), NVML_SUCCESS);
  EXPECT_STREQ(exact, "NVIDIA H100 80GB HBM3");
}

TEST(ReturnCodes, VersionedStructsCheckTheirVersion) {
  Session s("mixed_a100");
  ASSERT_TRUE(s.ok());
  nvmlDevice_t h100 = s.gpu(0);
  nvmlMemory_v2_t mem{};
  mem.version = 2;  // what nvtop passes
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(h100, &mem), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  mem.version = nvmlMemory_v2;
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(h100, &mem), NVML_SUCCESS);

  nvmlGpmSupport_t support{};
  support.version = 2;
  EXPECT_EQ(NVML(nvmlGpmQueryDeviceSupport)(h100, &support), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  support.version = NVML_GPM_SUPPORT_VERSION;
  EXPECT_EQ(NVML(nvmlGpmQueryDeviceSupport)(h100, &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 1U);

  nvmlGpmSample_t a = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&a), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(h100, a), NVML_SUCCESS);
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = 2;
  get->numMetrics = 1;
  get->sample1 = a;
  get->sample2 = a;
  get->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  get->version = NVML_GPM_METRICS_GET_VERSION;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_SUCCESS);
  get->numMetrics = NVML_GPM_METRIC_MAX + 1;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(a), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(a), NVML_ERROR_INVALID_ARGUMENT);
}

TEST(ReturnCodes, FeaturesAModelLacksAreNotSupported) {
  Session s("mixed_a100");
  ASSERT_TRUE(s.ok());
  nvmlDevice_t h100 = s.gpu(0);
  nvmlDevice_t a100 = s.gpu(4);
  unsigned v = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetFanSpeed)(h100, &v), NVML_ERROR_NOT_SUPPORTED);  // SXM
  EXPECT_EQ(NVML(nvmlDeviceGetFanSpeed)(s.gpu(6), &v), NVML_ERROR_NOT_SUPPORTED);  // passive PCIe
  int cur = 0, pend = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetDriverModel)(h100, &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 7};
  EXPECT_EQ(NVML(nvmlGpmQueryDeviceSupport)(a100, &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 0U);
  nvmlGpmSample_t sample = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&sample), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleGet)(a100, sample), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(sample), NVML_SUCCESS);
  unsigned count = 0;
  unsigned long long addresses[4];
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages)(a100, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &count, addresses),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned c = 0, u = 0, p = 0, f = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRemappedRows)(a100, &c, &u, &p, &f), NVML_SUCCESS);

}

TEST(ReturnCodes, MemoryRepairApisFollowTheArchitecture) {
  Session s("ecc");
  ASSERT_TRUE(s.ok());
  nvmlDevice_t h100 = s.gpu(0);
  nvmlDevice_t v100 = s.gpu(1);
  unsigned c = 0, u = 0, p = 0, f = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRemappedRows)(v100, &c, &u, &p, &f), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetRemappedRows)(h100, &c, &u, &p, &f), NVML_SUCCESS);
  int pending = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPagesPendingStatus)(v100, &pending), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPagesPendingStatus)(h100, &pending), NVML_ERROR_NOT_SUPPORTED);
  unsigned mig = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(v100, &mig), NVML_ERROR_NOT_SUPPORTED);
}

TEST(ReturnCodes, MigOnAFullGpu) {
  Session s("mixed_a100");
  ASSERT_TRUE(s.ok());
  for (unsigned i : {0U, 4U}) {
    nvmlDevice_t dev = s.gpu(i);
    unsigned cur = 9, pend = 9, max = 0, id = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(dev, &cur, &pend), NVML_SUCCESS);
    EXPECT_EQ(cur, 0U);
    EXPECT_EQ(pend, 0U);
    EXPECT_EQ(NVML(nvmlDeviceGetMaxMigDeviceCount)(dev, &max), NVML_SUCCESS);
    EXPECT_EQ(max, 7U);
    nvmlDevice_t mig = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(dev, 0, &mig), NVML_ERROR_NOT_FOUND);
    EXPECT_EQ(NVML(nvmlDeviceGetGpuInstanceId)(dev, &id), NVML_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(NVML(nvmlDeviceGetComputeInstanceId)(dev, &id), NVML_ERROR_NOT_SUPPORTED);
  }
}

TEST(ReturnCodes, MigModeFromTheScenarioAndNotOnBoardsWithoutMig) {
  Session s(
      "gpus:\n  count: 2\n  model: NVIDIA A100-SXM4-80GB\n  overrides:\n    - {gpu: 1, mig: true}\n");
  ASSERT_TRUE(s.ok());
  unsigned cur = 0, pend = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(s.gpu(1), &cur, &pend), NVML_SUCCESS);
  EXPECT_EQ(cur, 1U);
  EXPECT_EQ(pend, 1U);
  nvmlDevice_t mig = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetMigDeviceHandleByIndex)(s.gpu(1), 0, &mig), NVML_ERROR_NOT_FOUND);
}

TEST(ReturnCodes, MigModeOnATeslaT4IsNotSupported) {
  Session s("gpus: {count: 1, model: Tesla T4}\n");
  ASSERT_TRUE(s.ok());
  unsigned cur = 0, pend = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetMigMode)(s.gpu(0), &cur, &pend), NVML_ERROR_NOT_SUPPORTED);
}

TEST(ErrorStrings, NvmlsWordingAndNeverNull) {
  const auto text = [](int code) { return std::string(NVML(nvmlErrorString)(static_cast<nvmlReturn_t>(code))); };
  EXPECT_EQ(text(NVML_SUCCESS), "Success");
  EXPECT_EQ(text(NVML_ERROR_UNINITIALIZED), "Uninitialized");
  EXPECT_EQ(text(NVML_ERROR_INVALID_ARGUMENT), "Invalid Argument");
  EXPECT_EQ(text(NVML_ERROR_NOT_SUPPORTED), "Not Supported");
  EXPECT_EQ(text(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");
  EXPECT_EQ(text(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
  EXPECT_EQ(text(NVML_ERROR_TIMEOUT), "Timeout");
  EXPECT_EQ(text(NVML_ERROR_FUNCTION_NOT_FOUND), "Function Not Found");
  EXPECT_EQ(text(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_EQ(text(NVML_ERROR_ARGUMENT_VERSION_MISMATCH), "Argument Version Mismatch");
  EXPECT_EQ(text(NVML_ERROR_UNKNOWN), "Unknown Error");
  for (int code : {-1, 28, 100, 998, 1000, 123456}) EXPECT_EQ(text(code), "Unknown Error") << code;
  for (int code = 0; code <= 27; ++code) EXPECT_NE(NVML(nvmlErrorString)(static_cast<nvmlReturn_t>(code)), nullptr);
}

TEST(Identity, StaticValuesLookLikeAnHgxBoard) {
  Session s("");
  ASSERT_TRUE(s.ok());
  const std::regex uuid_re("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  const char* buses[] = {"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"};
  std::set<std::string> uuids;
  for (unsigned i = 0; i < 8; ++i) {
    nvmlDevice_t dev = s.gpu(i);
    char buf[96];
    ASSERT_EQ(NVML(nvmlDeviceGetUUID)(dev, buf, sizeof buf), NVML_SUCCESS);
    EXPECT_TRUE(std::regex_match(buf, uuid_re)) << buf;
    uuids.insert(buf);
    nvmlDevice_t again = nullptr;
    EXPECT_EQ(NVML(nvmlDeviceGetHandleByUUID)(buf, &again), NVML_SUCCESS);
    EXPECT_EQ(again, dev);
    ASSERT_EQ(NVML(nvmlDeviceGetSerial)(dev, buf, NVML_DEVICE_SERIAL_BUFFER_SIZE), NVML_SUCCESS);
    EXPECT_TRUE(std::regex_match(buf, std::regex("[0-9]{13}"))) << buf;
    nvmlPciInfo_t pci{};
    ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(dev, &pci), NVML_SUCCESS);
    EXPECT_EQ(std::string(pci.busId), "00000000:" + std::string(buses[i]) + ":00.0");
    EXPECT_EQ(std::string(pci.busIdLegacy), "0000:" + std::string(buses[i]) + ":00.0");
    EXPECT_EQ(pci.pciDeviceId, 0x233010DEU);
    EXPECT_EQ(NVML(nvmlDeviceGetHandleByPciBusId_v2)(pci.busId, &again), NVML_SUCCESS);
    EXPECT_EQ(again, dev);
    unsigned index = 99, minor = 99;
    EXPECT_EQ(NVML(nvmlDeviceGetIndex)(dev, &index), NVML_SUCCESS);
    EXPECT_EQ(NVML(nvmlDeviceGetMinorNumber)(dev, &minor), NVML_SUCCESS);
    EXPECT_EQ(index, i);
    EXPECT_EQ(minor, i);
    int mode = -1;
    EXPECT_EQ(NVML(nvmlDeviceGetPersistenceMode)(dev, &mode), NVML_SUCCESS);
    EXPECT_EQ(mode, 1);
    EXPECT_EQ(NVML(nvmlDeviceGetComputeMode)(dev, &mode), NVML_SUCCESS);
    EXPECT_EQ(mode, 0);
    EXPECT_EQ(NVML(nvmlDeviceGetDisplayActive)(dev, &mode), NVML_SUCCESS);
    EXPECT_EQ(mode, 0);
    int ecc_cur = 0, ecc_pend = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetEccMode)(dev, &ecc_cur, &ecc_pend), NVML_SUCCESS);
    EXPECT_EQ(ecc_cur, 1);
    EXPECT_EQ(ecc_pend, 1);
    unsigned arch = 0, cores = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetArchitecture)(dev, &arch), NVML_SUCCESS);
    EXPECT_EQ(arch, NVML_DEVICE_ARCH_HOPPER);
    EXPECT_EQ(NVML(nvmlDeviceGetNumGpuCores)(dev, &cores), NVML_SUCCESS);
    EXPECT_EQ(cores, 16896U);
    int major = 0, minor_cc = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetCudaComputeCapability)(dev, &major, &minor_cc), NVML_SUCCESS);
    EXPECT_EQ(major, 9);
    EXPECT_EQ(minor_cc, 0);
    ASSERT_EQ(NVML(nvmlDeviceGetBoardPartNumber)(dev, buf, sizeof buf), NVML_SUCCESS);
    EXPECT_STRNE(buf, "");
    ASSERT_EQ(NVML(nvmlDeviceGetVbiosVersion)(dev, buf, sizeof buf), NVML_SUCCESS);
    EXPECT_STRNE(buf, "");
  }
  EXPECT_EQ(uuids.size(), 8U);
}

TEST(Identity, NodeAndDriverFromTheScenario) {
  Session s("");
  ASSERT_TRUE(s.ok());
  char buf[96];
  ASSERT_EQ(NVML(nvmlSystemGetDriverVersion)(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "580.159.04");
  ASSERT_EQ(NVML(nvmlSystemGetNVMLVersion)(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "13.580.159.04");
  int cuda = 0;
  EXPECT_EQ(NVML(nvmlSystemGetCudaDriverVersion_v2)(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 13000);
  EXPECT_EQ(NVML(nvmlSystemGetCudaDriverVersion)(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 13000);
  ASSERT_EQ(NVML(gpuscopeSimGetHostname)(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "dgx-h100-sim-01");
  EXPECT_EQ(NVML(gpuscopeSimGetHostname)(buf, 4), NVML_ERROR_INSUFFICIENT_SIZE);
}

TEST(Identity, ModelsFromTheCatalog) {
  Session s("mixed_a100");
  ASSERT_TRUE(s.ok());
  nvmlDevice_t pcie = s.gpu(6);
  char name[96];
  ASSERT_EQ(NVML(nvmlDeviceGetName)(pcie, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA A100-PCIE-40GB");
  unsigned v = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetPowerManagementLimit)(pcie, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 250000U);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxPcieLinkGeneration)(pcie, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 4U);
  EXPECT_EQ(NVML(nvmlDeviceGetCurrPcieLinkGeneration)(pcie, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 3U);
  EXPECT_EQ(NVML(nvmlDeviceGetCurrPcieLinkWidth)(pcie, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 8U);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxPcieLinkWidth)(pcie, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 16U);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(s.gpu(4), NVML_CLOCK_SM, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 1410U);
  EXPECT_EQ(NVML(nvmlDeviceGetTemperatureThreshold)(s.gpu(0), NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &v),
            NVML_SUCCESS);
  EXPECT_GE(v, 85U);
  unsigned shutdown = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetTemperatureThreshold)(s.gpu(0), NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &shutdown),
            NVML_SUCCESS);
  EXPECT_GT(shutdown, v);
  nvmlMemory_t mem{};
  ASSERT_EQ(NVML(nvmlDeviceGetMemoryInfo)(s.gpu(0), &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 81559ULL * 1048576ULL);
}

TEST(Identity, AnotherSeedGivesOtherUuids) {
  std::string first;
  {
    Session s("gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\nseed: 1\n");
    char buf[96];
    ASSERT_EQ(NVML(nvmlDeviceGetUUID)(s.gpu(0), buf, sizeof buf), NVML_SUCCESS);
    first = buf;
  }
  Session s("gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\nseed: 2\n");
  char buf[96];
  ASSERT_EQ(NVML(nvmlDeviceGetUUID)(s.gpu(0), buf, sizeof buf), NVML_SUCCESS);
  EXPECT_NE(first, buf);
}

}  // namespace
}  // namespace gpuscope::sim::testing
