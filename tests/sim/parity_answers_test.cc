// The simulator's answers to the queries behind nvidia-smi -q's last keys and --query-retired-pages:
// the real idle H100's values (nvidia-smi-q.txt), each function's version and argument checks, the
// architectures that lack a feature, and the count-probe protocol of nvmlDeviceGetRetiredPages_v2.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

TEST(ParityAnswers, AnIdleH100EncodesAndCapturesNothing) {
  Session s("gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\n");
  ASSERT_TRUE(s.ok());
  unsigned sessions = 7, fps = 7, latency = 7;
  EXPECT_EQ(NVML(nvmlDeviceGetEncoderStats)(s.gpu(0), &sessions, &fps, &latency), NVML_SUCCESS);
  EXPECT_EQ(sessions + fps + latency, 0U);
  EXPECT_EQ(NVML(nvmlDeviceGetEncoderStats)(s.gpu(0), nullptr, &fps, &latency), NVML_ERROR_INVALID_ARGUMENT);
  nvmlFBCStats_t fbc{7, 7, 7};
  EXPECT_EQ(NVML(nvmlDeviceGetFBCStats)(s.gpu(0), &fbc), NVML_SUCCESS);
  EXPECT_EQ(fbc.sessionsCount + fbc.averageFPS + fbc.averageLatency, 0U);
}

TEST(ParityAnswers, PciInfoExtIsPciInfoWithTheClassCodesOfA3dController) {
  Session s("mixed_a100");
  ASSERT_TRUE(s.ok());
  for (unsigned i = 0; i < s.count(); ++i) {
    nvmlPciInfo_t base{};
    ASSERT_EQ(NVML(nvmlDeviceGetPciInfo_v3)(s.gpu(i), &base), NVML_SUCCESS);
    nvmlPciInfoExt_v1_t ext{};
    ext.version = nvmlPciInfoExt_v1;
    ASSERT_EQ(NVML(nvmlDeviceGetPciInfoExt)(s.gpu(i), &ext), NVML_SUCCESS);
    EXPECT_EQ(ext.domain, base.domain);
    EXPECT_EQ(ext.bus, base.bus);
    EXPECT_EQ(ext.device, base.device);
    EXPECT_EQ(ext.pciDeviceId, base.pciDeviceId);
    EXPECT_EQ(ext.pciSubSystemId, base.pciSubSystemId);
    EXPECT_STREQ(ext.busId, base.busId);
    EXPECT_EQ(ext.baseClass, 0x3U);
    EXPECT_EQ(ext.subClass, 0x2U);
  }
  nvmlPciInfoExt_v1_t wrong{};
  wrong.version = 1U << 24;  // version 1 with the wrong size
  EXPECT_EQ(NVML(nvmlDeviceGetPciInfoExt)(s.gpu(0), &wrong), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST(ParityAnswers, RepairStatusFollowsTheArchitectureAndTheDriver) {
  Session s("ecc");  // GPU 0 an H100, GPU 1 a V100
  ASSERT_TRUE(s.ok());
  nvmlRepairStatus_v1_t repair{};
  repair.version = nvmlRepairStatus_v1;
  repair.bChannelRepairPending = repair.bTpcRepairPending = 7;
  EXPECT_EQ(NVML(nvmlDeviceGetRepairStatus)(s.gpu(0), &repair), NVML_SUCCESS);
  EXPECT_EQ(repair.bChannelRepairPending + repair.bTpcRepairPending, 0U);
  EXPECT_EQ(NVML(nvmlDeviceGetRepairStatus)(s.gpu(1), &repair), NVML_ERROR_NOT_SUPPORTED);
  nvmlUnrepairableMemoryStatus_v1_t unrepairable{7};
  EXPECT_EQ(NVML(nvmlDeviceGetUnrepairableMemoryFlag_v1)(s.gpu(0), &unrepairable), NVML_SUCCESS);
  EXPECT_EQ(unrepairable.bUnrepairableMemory, 0U);
  EXPECT_EQ(NVML(nvmlDeviceGetUnrepairableMemoryFlag_v1)(s.gpu(1), &unrepairable), NVML_ERROR_NOT_SUPPORTED);
  nvmlDeviceCapabilities_v1_t caps{};
  caps.version = nvmlDeviceCapabilities_v1;
  caps.capMask = 0xFF;
  EXPECT_EQ(NVML(nvmlDeviceGetCapabilities)(s.gpu(0), &caps), NVML_SUCCESS);
  EXPECT_EQ(caps.capMask & NVML_DEV_CAP_EGM, 0U);
}

TEST(ParityAnswers, Driver535LacksTheRepairAndCapabilityQueries) {
  Session old("driver_r535");
  ASSERT_TRUE(old.ok());
  nvmlRepairStatus_v1_t repair{};
  repair.version = nvmlRepairStatus_v1;
  nvmlDeviceCapabilities_v1_t caps{};
  caps.version = nvmlDeviceCapabilities_v1;
  nvmlPciInfoExt_v1_t ext{};
  ext.version = nvmlPciInfoExt_v1;
  EXPECT_EQ(NVML(nvmlDeviceGetPciInfoExt)(old.gpu(0), &ext), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetRepairStatus)(old.gpu(0), &repair), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetCapabilities)(old.gpu(0), &caps), NVML_ERROR_FUNCTION_NOT_FOUND);
}

TEST(ParityAnswers, PdiIsStablePerBoardAndDiffersBetweenBoards) {
  std::vector<unsigned long long> first;
  for (int run = 0; run < 2; ++run) {
    Session s("mixed_a100");
    ASSERT_TRUE(s.ok());
    std::vector<unsigned long long> values;
    for (unsigned i = 0; i < s.count(); ++i) {
      nvmlPdi_v1_t pdi{};
      pdi.version = nvmlPdi_v1;
      ASSERT_EQ(NVML(nvmlDeviceGetPdi)(s.gpu(i), &pdi), NVML_SUCCESS);
      values.push_back(pdi.value);
    }
    if (run == 0) {
      first = values;
      EXPECT_EQ(std::set<unsigned long long>(values.begin(), values.end()).size(), values.size());
    } else {
      EXPECT_EQ(values, first);
    }
    nvmlPdi_v1_t unversioned{};
    EXPECT_EQ(NVML(nvmlDeviceGetPdi)(s.gpu(0), &unversioned), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  }
}

TEST(ParityAnswers, RetiredPagesV2ProbesTheCountThenGivesAddressesAndWhen) {
  Session s("ecc", 150.0);  // the V100's double-bit error at 2m retired one page
  ASSERT_TRUE(s.ok());
  nvmlDevice_t v100 = s.gpu(1);
  constexpr int kDbe = NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR;
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages_v2)(v100, kDbe, &count, nullptr, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(count, 1U);
  unsigned long long address = 0, when = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages_v2)(v100, kDbe, &count, &address, &when), NVML_SUCCESS);
  EXPECT_EQ(count, 1U);
  unsigned long long v1_address = 0;
  unsigned v1_count = 1;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages)(v100, kDbe, &v1_count, &v1_address), NVML_SUCCESS);
  EXPECT_EQ(address, v1_address);
  EXPECT_EQ(address % 4096, 0U);
  // µs since the epoch of the scenario's 2m.
  EXPECT_EQ(when, static_cast<unsigned long long>((s.epoch_ns() + 120'000'000'000LL) / 1000));
  count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages_v2)(v100, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                                               &count, nullptr, nullptr),
            NVML_SUCCESS);  // none: an empty list needs no buffer
  EXPECT_EQ(count, 0U);
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages_v2)(s.gpu(0), kDbe, &count, nullptr, nullptr), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages_v2)(v100, 9, &count, nullptr, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

// The detail list is the v3 lists of the mode with each process's protected memory (none: CC is off).
TEST(ParityAnswers, ProcessDetailListIsTheRunningProcessListsWithProtectedMemory) {
  Session s("golden", 600.0);  // GPU 0: two compute processes
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  const std::vector<nvmlProcessInfo_t> v3 = processes(dev);  // compute + graphics
  ASSERT_FALSE(v3.empty());
  nvmlProcessDetailList_v1_t list{};
  list.version = nvmlProcessDetailList_v1;
  list.mode = NVML_PROCESS_MODE_ALL;
  EXPECT_EQ(NVML(nvmlDeviceGetRunningProcessDetailList)(dev, &list), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(list.numProcArrayEntries, v3.size());
  std::vector<nvmlProcessDetail_v1_t> procs(list.numProcArrayEntries);
  list.procArray = procs.data();
  ASSERT_EQ(NVML(nvmlDeviceGetRunningProcessDetailList)(dev, &list), NVML_SUCCESS);
  for (std::size_t k = 0; k < v3.size(); ++k) {
    EXPECT_EQ(procs[k].pid, v3[k].pid);
    EXPECT_EQ(procs[k].usedGpuMemory, v3[k].usedGpuMemory);
    EXPECT_EQ(procs[k].gpuInstanceId, v3[k].gpuInstanceId);
    EXPECT_EQ(procs[k].usedGpuCcProtectedMemory, 0U);
  }
  list.mode = NVML_PROCESS_MODE_MPS;  // no scenario runs an MPS server
  list.numProcArrayEntries = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRunningProcessDetailList)(dev, &list), NVML_SUCCESS);
  EXPECT_EQ(list.numProcArrayEntries, 0U);
  list.version = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRunningProcessDetailList)(dev, &list), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gpuscope::sim::testing
