// Event sets: XID / ECC delivery once per set, in order, with blocking waits on either clock.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

struct Delivery {
  nvmlReturn_t result;
  unsigned gpu;
  unsigned long long type, data;
};

Delivery wait(nvmlEventSet_t set, unsigned timeout_ms = 0) {
  nvmlEventData_t data{};
  Delivery d{NVML(nvmlEventSetWait_v2)(set, &data, timeout_ms), 99, data.eventType, data.eventData};
  if (d.result == NVML_SUCCESS) {
    EXPECT_EQ(NVML(nvmlDeviceGetIndex)(data.device, &d.gpu), NVML_SUCCESS);
    EXPECT_EQ(data.gpuInstanceId, 0xFFFFFFFFU);
  }
  return d;
}

nvmlEventSet_t make_set(Session& s, std::initializer_list<unsigned> gpus, unsigned long long types) {
  nvmlEventSet_t set = nullptr;
  EXPECT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  for (unsigned g : gpus) EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(s.gpu(g), types, set), NVML_SUCCESS);
  return set;
}

TEST(Events, EachEventOnceInOrderAndEqualXidsTwice) {
  Session s("xid", 0.0);
  ASSERT_TRUE(s.ok());
  nvmlEventSet_t set = make_set(s, {0, 1}, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(wait(set).result, NVML_ERROR_TIMEOUT);
  s.at(100);
  for (int i = 0; i < 2; ++i) {
    const Delivery d = wait(set);
    ASSERT_EQ(d.result, NVML_SUCCESS);
    EXPECT_EQ(d.gpu, 0U);
    EXPECT_EQ(d.type, nvmlEventTypeXidCriticalError);
    EXPECT_EQ(d.data, 13U);
  }
  EXPECT_EQ(wait(set).result, NVML_ERROR_TIMEOUT);
  s.at(240);
  Delivery d = wait(set);
  ASSERT_EQ(d.result, NVML_SUCCESS);
  EXPECT_EQ(d.data, 31U);
  d = wait(set);
  ASSERT_EQ(d.result, NVML_SUCCESS);
  EXPECT_EQ(d.gpu, 1U);
  EXPECT_EQ(d.data, 79U);
  EXPECT_EQ(wait(set).result, NVML_ERROR_TIMEOUT);
  s.at(3600);
  EXPECT_EQ(wait(set).result, NVML_ERROR_TIMEOUT);
  EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
}

TEST(Events, ASetSeesOnlyWhatHappensAfterItIsCreatedForWhatItRegistered) {
  Session s("xid", 75.0);
  ASSERT_TRUE(s.ok());
  nvmlEventSet_t only_gpu1 = make_set(s, {1}, nvmlEventTypeXidCriticalError);
  nvmlEventSet_t both = make_set(s, {0, 1}, nvmlEventTypeXidCriticalError);
  nvmlEventSet_t ecc_only = make_set(s, {0, 1}, nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError);
  s.at(600);
  int count = 0;
  while (wait(both).result == NVML_SUCCESS) ++count;
  EXPECT_EQ(count, 3);  // the XID at 60 s predates the set
  const Delivery d = wait(only_gpu1);
  ASSERT_EQ(d.result, NVML_SUCCESS);
  EXPECT_EQ(d.data, 79U);
  EXPECT_EQ(wait(only_gpu1).result, NVML_ERROR_TIMEOUT);
  EXPECT_EQ(wait(ecc_only).result, NVML_ERROR_TIMEOUT);
  for (auto set : {only_gpu1, both, ecc_only}) EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
}

TEST(Events, EccEvents) {
  Session s("ecc", 0.0);
  ASSERT_TRUE(s.ok());
  nvmlEventSet_t set = make_set(s, {0}, nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError);
  s.at(400);
  std::vector<unsigned long long> types;
  for (Delivery d = wait(set); d.result == NVML_SUCCESS; d = wait(set)) types.push_back(d.type);
  EXPECT_EQ(types, (std::vector<unsigned long long>{nvmlEventTypeSingleBitEccError, nvmlEventTypeSingleBitEccError,
                                                    nvmlEventTypeDoubleBitEccError}));
  NVML(nvmlEventSetFree)(set);
}

TEST(Events, SupportedTypesAndBadArguments) {
  Session s("xid", 0.0);
  ASSERT_TRUE(s.ok());
  unsigned long long types = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetSupportedEventTypes)(s.gpu(0), &types), NVML_SUCCESS);
  EXPECT_EQ(types, nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypeXidCriticalError);
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceRegisterEvents)(s.gpu(0), nvmlEventTypePState, set), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(NVML(nvmlEventSetWait_v2)(set, nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlEventSetCreate)(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlEventData_t data{};
  EXPECT_EQ(NVML(nvmlEventSetWait)(set, &data, 0), NVML_ERROR_TIMEOUT);  // the v1 name works too
  EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlEventSetWait_v2)(set, &data, 0), NVML_ERROR_INVALID_ARGUMENT);
}

TEST(Events, VirtualClockWaitWakesWhenTheClockMoves) {
  Session s("xid", 0.0);
  ASSERT_TRUE(s.ok());
  nvmlEventSet_t set = make_set(s, {0}, nvmlEventTypeXidCriticalError);
  const auto start = std::chrono::steady_clock::now();
  auto waiter = std::async(std::launch::async, [&] { return wait(set, 10000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  s.at(61);
  const Delivery d = waiter.get();
  EXPECT_EQ(d.result, NVML_SUCCESS);
  EXPECT_EQ(d.data, 13U);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  NVML(nvmlEventSetFree)(set);
}

TEST(Events, RealClockWaitBlocksUntilTheEventOrTheTimeout) {
  Session s(
      "gpus: {count: 1, model: NVIDIA L4}\nevents:\n  - {at: 400ms, xid: 43}\n  - {at: 2h, xid: 44}\n",
      std::nullopt);
  ASSERT_TRUE(s.ok());
  nvmlEventSet_t set = make_set(s, {0}, nvmlEventTypeXidCriticalError);
  auto start = std::chrono::steady_clock::now();
  const Delivery d = wait(set, 5000);
  EXPECT_EQ(d.result, NVML_SUCCESS);
  EXPECT_EQ(d.data, 43U);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(wait(set, 150).result, NVML_ERROR_TIMEOUT);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(140));
  EXPECT_LT(waited, std::chrono::seconds(2));
  NVML(nvmlEventSetFree)(set);
}

TEST(Events, ShutdownReleasesAWaiter) {
  auto s = std::make_unique<Session>("xid", 0.0);
  ASSERT_TRUE(s->ok());
  nvmlEventSet_t set = make_set(*s, {0}, nvmlEventTypeXidCriticalError);
  auto waiter = std::async(std::launch::async, [&] {
    nvmlEventData_t data{};
    return NVML(nvmlEventSetWait_v2)(set, &data, 20000);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  s.reset();  // nvmlShutdown
  EXPECT_EQ(waiter.get(), NVML_ERROR_UNINITIALIZED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace gpuscope::sim::testing
