// Injected faults act only inside their windows and only on what they name.
#include <gtest/gtest.h>

#include <chrono>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

nvmlReturn_t power_of(nvmlDevice_t dev) {
  unsigned mw = 0;
  return NVML(nvmlDeviceGetPowerUsage)(dev, &mw);
}

nvmlReturn_t temperature_of(nvmlDevice_t dev) {
  unsigned c = 0;
  return NVML(nvmlDeviceGetTemperature)(dev, NVML_TEMPERATURE_GPU, &c);
}

TEST(Faults, ErrorFaultsOnlyInTheirWindowAndOnTheirGpu) {
  Session s("nvml_errors", 59.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t g0 = s.gpu(0);
  nvmlDevice_t g1 = s.gpu(1);
  EXPECT_EQ(power_of(g0), NVML_SUCCESS);
  s.at(60.0);
  EXPECT_EQ(power_of(g0), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(power_of(g1), NVML_SUCCESS);
  EXPECT_EQ(temperature_of(g0), NVML_SUCCESS);  // other functions unaffected
  s.at(119.9);
  EXPECT_EQ(power_of(g0), NVML_ERROR_UNKNOWN);
  s.at(120.0);
  EXPECT_EQ(power_of(g0), NVML_SUCCESS);

  s.at(179);
  EXPECT_EQ(temperature_of(g0), NVML_SUCCESS);
  s.at(200);
  for (nvmlDevice_t dev : {g0, g1}) EXPECT_EQ(temperature_of(dev), NVML_ERROR_NOT_SUPPORTED);
  s.at(240);
  EXPECT_EQ(temperature_of(g1), NVML_SUCCESS);
}

TEST(Faults, WildcardFaultOnOneGpuHitsEveryCallAboutIt) {
  Session s("nvml_errors", 290.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t g0 = s.gpu(0);
  nvmlDevice_t g1 = s.gpu(1);
  s.at(310.0);
  char name[96];
  EXPECT_EQ(NVML(nvmlDeviceGetName)(g1, name, sizeof name), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(power_of(g1), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(NVML(nvmlDeviceGetName)(g0, name, sizeof name), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);  // names no GPU
  nvmlDevice_t h = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(1, &h), NVML_ERROR_TIMEOUT);
  s.at(330.0);
  EXPECT_EQ(power_of(g1), NVML_SUCCESS);
}

TEST(Faults, GpuLostThenBack) {
  Session s("gpu_lost", 30.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t g0 = s.gpu(0);
  nvmlDevice_t g1 = s.gpu(1);
  EXPECT_EQ(power_of(g1), NVML_SUCCESS);
  s.at(90.0);
  EXPECT_EQ(power_of(g1), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(temperature_of(g1), NVML_ERROR_GPU_IS_LOST);
  char uuid[96];
  EXPECT_EQ(NVML(nvmlDeviceGetUUID)(g1, uuid, sizeof uuid), NVML_ERROR_GPU_IS_LOST);
  unsigned n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(g1, &n, nullptr), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t h = nullptr;
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(1, &h), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(power_of(g0), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 2U);  // still listed, as a real driver keeps it
  s.at(121.0);
  EXPECT_EQ(power_of(g1), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetHandleByIndex_v2)(1, &h), NVML_SUCCESS);
  EXPECT_EQ(h, g1);  // the same handle answers again
}

TEST(Faults, SlowCallsTakeTheirDelayOnlyInTheirWindow) {
  Session s("slow_calls", 5.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t g0 = s.gpu(0);
  nvmlDevice_t g1 = s.gpu(1);
  nvmlFieldValue_t f{};
  f.fieldId = NVML_FI_DEV_POWER_INSTANT;
  const auto timed = [](auto&& call) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(call(), NVML_SUCCESS);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  EXPECT_LT(timed([&] { return NVML(nvmlDeviceGetFieldValues)(g0, 1, &f); }), 0.1);
  s.at(20.0);
  EXPECT_GE(timed([&] { return NVML(nvmlDeviceGetFieldValues)(g0, 1, &f); }), 0.3);
  EXPECT_LT(timed([&] { return power_of(g0); }), 0.04);
  EXPECT_GE(timed([&] { return power_of(g1); }), 0.05);
  s.at(41.0);
  EXPECT_LT(timed([&] { return NVML(nvmlDeviceGetFieldValues)(g0, 1, &f); }), 0.1);
}

TEST(Faults, DriverR535AnswersFunctionNotFoundForV3Processes) {
  Session s("driver_r535", 60.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  unsigned n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetGraphicsRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(NVML(nvmlDeviceGetMPSComputeRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_FUNCTION_NOT_FOUND);
  n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v2)(dev, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 1U);
  nvmlProcessInfo_v1_t info{};
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses)(dev, &n, &info), NVML_SUCCESS);
  EXPECT_EQ(info.pid, 4600U);
  char buf[96];
  ASSERT_EQ(NVML(nvmlSystemGetDriverVersion)(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "535.98");
  ASSERT_EQ(NVML(nvmlSystemGetNVMLVersion)(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "12.535.98");
}

TEST(Faults, DriverNotLoaded) {
  Session s("driver_not_loaded");
  EXPECT_EQ(s.init_result(), NVML_ERROR_DRIVER_NOT_LOADED);
  unsigned n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&n), NVML_ERROR_UNINITIALIZED);
}

TEST(Faults, InitFaultOnANamedInitFunction) {
  const std::string path = write_temp_file(
      "init_fault.yaml",
      "gpus: {count: 1, model: NVIDIA L4}\nfaults:\n  - {type: error, function: nvmlInit_v2, error: "
      "NVML_ERROR_NO_PERMISSION}\n  - {type: error, function: \"*\", error: NVML_ERROR_UNKNOWN, at: 1h}\n");
  {
    Session s(path);
    EXPECT_EQ(s.init_result(), NVML_ERROR_NO_PERMISSION);
  }
  setenv("GPUSCOPE_SIM_SCENARIO", path.c_str(), 1);
  EXPECT_EQ(NVML(nvmlInit)(), NVML_SUCCESS);  // only the named function fails; "*" spares init
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  EXPECT_EQ(NVML(nvmlShutdown)(), NVML_SUCCESS);
}

// What nvtop, pynvml and the backend do: probe the count, read, retry while the list grew.
TEST(Faults, ProcessListGrowingBetweenProbeAndRead) {
  Session s("nvml_errors", 30.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  std::vector<nvmlProcessInfo_t> infos;
  unsigned count = 0;
  nvmlReturn_t r = NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &count, nullptr);
  ASSERT_EQ(r, NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(count, 1U);
  int attempts = 0;
  std::vector<unsigned> counts{count};
  while (r == NVML_ERROR_INSUFFICIENT_SIZE && attempts < 10) {
    ++attempts;
    infos.resize(count);
    r = NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &count, infos.data());
    counts.push_back(count);
  }
  ASSERT_EQ(r, NVML_SUCCESS);
  EXPECT_EQ(counts, (std::vector<unsigned>{1, 2, 3, 4, 4}));  // grew 3 times, then settled
  infos.resize(count);
  EXPECT_EQ(infos[0].pid, 4500U);
  char name[64];
  EXPECT_EQ(NVML(gpuscopeSimGetProcessName)(infos[3].pid, name, sizeof name), NVML_SUCCESS);
  // The late-comers hold memory like any process: the memory books still balance.
  const GpuReading m = read_gpu(dev);
  unsigned long long held = 0;
  for (const auto& p : infos) held += p.usedGpuMemory;
  EXPECT_EQ(m.mem_v2.used, held + 4ULL * 1048576ULL);
  // GPU 1 has no such fault.
  unsigned other = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(s.gpu(1), &other, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlProcessInfo_t one{};
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(s.gpu(1), &other, &one), NVML_SUCCESS);
}

}  // namespace
}  // namespace gpuscope::sim::testing
