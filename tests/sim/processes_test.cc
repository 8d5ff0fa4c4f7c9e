// Running processes in all three struct versions, NVML's count-probe protocol, per-process
// utilization samples and the simulator's process names.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

TEST(Processes, ThreeVersionsAgree) {
  Session s("golden", 700.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);  // pid 1000 and the leaking 1001
  unsigned n = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 2U);
  std::vector<nvmlProcessInfo_t> v3(n);
  ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, v3.data()), NVML_SUCCESS);
  // _v2 fills the same 24-byte entries as _v3 (NVIDIA's nvmlProcessInfo_v2_t); v1 16-byte ones.
  std::vector<nvmlProcessInfo_t> v2(n);
  std::vector<nvmlProcessInfo_v1_t> v1(n);
  ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v2)(dev, &n, v2.data()), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses)(dev, &n, v1.data()), NVML_SUCCESS);
  for (unsigned i = 0; i < n; ++i) {
    EXPECT_EQ(v3[i].pid, v2[i].pid);
    EXPECT_EQ(v3[i].pid, v1[i].pid);
    EXPECT_EQ(v3[i].usedGpuMemory, v2[i].usedGpuMemory);
    EXPECT_EQ(v3[i].usedGpuMemory, v1[i].usedGpuMemory);
    EXPECT_EQ(v2[i].gpuInstanceId, 0xFFFFFFFFU);
    EXPECT_EQ(v3[i].gpuInstanceId, 0xFFFFFFFFU);
    EXPECT_EQ(v3[i].computeInstanceId, 0xFFFFFFFFU);
  }
  EXPECT_EQ(v3[0].pid, 1000U);
  EXPECT_EQ(v3[0].usedGpuMemory, 48ULL << 30);
  EXPECT_EQ(v3[1].pid, 1001U);
  EXPECT_EQ(v3[1].usedGpuMemory, (4096ULL + 64 * 400 / 60) << 20);  // 64 MiB/min since 5m, whole MiB
  unsigned none = 5;
  EXPECT_EQ(NVML(nvmlDeviceGetGraphicsRunningProcesses_v3)(dev, &none, nullptr), NVML_SUCCESS);
  EXPECT_EQ(none, 0U);
  none = 5;
  EXPECT_EQ(NVML(nvmlDeviceGetMPSComputeRunningProcesses_v3)(dev, &none, nullptr), NVML_SUCCESS);
  EXPECT_EQ(none, 0U);
}

TEST(Processes, GraphicsProcessesAreListedApart) {
  Session s("golden", 10.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(3);
  unsigned n = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetGraphicsRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 1U);
  nvmlProcessInfo_t info{};
  ASSERT_EQ(NVML(nvmlDeviceGetGraphicsRunningProcesses_v3)(dev, &n, &info), NVML_SUCCESS);
  EXPECT_EQ(info.pid, 1003U);
  nvmlProcessInfo_v1_t old{};
  ASSERT_EQ(NVML(nvmlDeviceGetGraphicsRunningProcesses)(dev, &n, &old), NVML_SUCCESS);
  EXPECT_EQ(old.pid, 1003U);
  nvmlProcessInfo_t v2{};
  ASSERT_EQ(NVML(nvmlDeviceGetGraphicsRunningProcesses_v2)(dev, &n, &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.pid, 1003U);
  EXPECT_EQ(v2.computeInstanceId, 0xFFFFFFFFU);
  n = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 1U);  // pid 1000 spans GPUs 0, 2 and 3
}

TEST(Processes, CountProbeProtocol) {
  Session s("golden", 700.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  unsigned n = 1;
  nvmlProcessInfo_t one[1];
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, one), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2U);
  nvmlProcessInfo_t many[8];
  n = 8;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, many), NVML_SUCCESS);
  EXPECT_EQ(n, 2U);
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, nullptr, many), NVML_ERROR_INVALID_ARGUMENT);
  n = 2;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(dev, &n, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  // A GPU without processes answers SUCCESS with 0 to a count of 0.
  s.at(300);
  n = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetComputeRunningProcesses_v3)(s.gpu(1), &n, nullptr), NVML_SUCCESS);
  EXPECT_EQ(n, 0U);
}

TEST(Processes, ProcessesStartAndEndOnTime) {
  Session s("golden", 599.0);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(processes(s.gpu(1)).empty());
  s.at(600.0);
  const auto procs = processes(s.gpu(1));
  ASSERT_EQ(procs.size(), 1U);
  EXPECT_EQ(procs[0].pid, 1002U);
}

TEST(Processes, UtilizationSamplesNewerThanLastSeen) {
  Session s("golden", 700.5);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  unsigned n = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, nullptr, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(n, 2U);
  nvmlProcessUtilizationSample_t samples[2] = {};
  ASSERT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, samples, &n, 0), NVML_SUCCESS);
  const unsigned long long stamp = samples[0].timeStamp;
  EXPECT_EQ(stamp, static_cast<unsigned long long>((s.epoch_ns() + 700LL * kNsPerS) / 1000));
  nvmlUtilization_t util{};
  ASSERT_EQ(NVML(nvmlDeviceGetUtilizationRates)(dev, &util), NVML_SUCCESS);
  EXPECT_NEAR(samples[0].smUtil + samples[1].smUtil, util.gpu, 1.0);
  EXPECT_GT(samples[0].smUtil, 40U);
  // Nothing newer within the same second; the next second brings new samples.
  EXPECT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, samples, &n, stamp), NVML_ERROR_NOT_FOUND);
  s.at(701.5);
  n = 2;
  ASSERT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, samples, &n, stamp), NVML_SUCCESS);
  EXPECT_EQ(samples[0].timeStamp, stamp + 1'000'000);
  // A GPU with no processes has no samples.
  s.at(300);
  EXPECT_EQ(NVML(nvmlDeviceGetProcessUtilization)(s.gpu(1), nullptr, &n, 0), NVML_ERROR_NOT_FOUND);
}

// The driver answers each process's utilization over the samples since lastSeenTimeStamp (NVML's
// header; the real H100's process figure stayed at 17-20 % while the sawtooth's 1 s device utilization
// read 0-28 %): a read after 6 s averages 6 cells, checked against the per-cell history
// nvmlDeviceGetSamples hands back for the same cells; a read with 0 averages the whole ring buffer.
TEST(Processes, UtilizationIsTheAverageSinceLastSeen) {
  Session s("gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\n"
            "workload: {gpus: {0: {profile: data_starved, period: 12s}}}\nprocesses: [{pid: 7, gpu: 0, memory: 10GiB}]\n",
            600.5);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  // The per-cell GPU utilization newer than `since`, oldest first.
  const auto cells_since = [&](unsigned long long since) {
    int type = 0;
    unsigned n = 64;
    std::vector<nvmlSample_t> samples(n);
    EXPECT_EQ(NVML(nvmlDeviceGetSamples)(dev, NVML_GPU_UTILIZATION_SAMPLES, since, &type, &n, samples.data()),
              NVML_SUCCESS);
    std::vector<unsigned> values;
    for (unsigned i = 0; i < n; ++i) values.push_back(samples[i].sampleValue.uiVal);
    return values;
  };
  const auto mean = [](const std::vector<unsigned>& v) {
    double sum = 0;
    for (unsigned x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  const auto since = static_cast<unsigned long long>((s.epoch_ns() + 594LL * kNsPerS) / 1000);  // cells 595-600
  const std::vector<unsigned> six = cells_since(since);
  ASSERT_EQ(six.size(), 6U);
  ASSERT_NE(*std::min_element(six.begin(), six.end()), *std::max_element(six.begin(), six.end()))
      << "the sawtooth moves within the window";
  nvmlProcessUtilizationSample_t sample{};
  unsigned n = 1;
  ASSERT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, &sample, &n, since), NVML_SUCCESS);
  ASSERT_EQ(n, 1U);
  EXPECT_EQ(sample.pid, 7U);
  EXPECT_EQ(sample.timeStamp, static_cast<unsigned long long>((s.epoch_ns() + 600LL * kNsPerS) / 1000))
      << "stamped with the newest sample";
  EXPECT_NEAR(sample.smUtil, mean(six), 1.0);
  EXPECT_NE(sample.smUtil, six.back()) << "not just the newest cell";
  // The v1 struct's call answers the same average and moves lastSeenTimeStamp to the newest sample.
  nvmlProcessUtilizationInfo_v1_t info_sample{};
  nvmlProcessesUtilizationInfo_t info{};
  info.version = nvmlProcessesUtilizationInfo_v1;
  info.processSamplesCount = 1;
  info.lastSeenTimeStamp = since;
  info.procUtilArray = &info_sample;
  ASSERT_EQ(NVML(nvmlDeviceGetProcessesUtilizationInfo)(dev, &info), NVML_SUCCESS);
  EXPECT_EQ(info_sample.smUtil, sample.smUtil);
  EXPECT_EQ(info.lastSeenTimeStamp, sample.timeStamp);
  // 0 reads the whole buffer: the last 20 cells.
  const std::vector<unsigned> all = cells_since(0);
  ASSERT_EQ(all.size(), 20U);
  ASSERT_EQ(NVML(nvmlDeviceGetProcessUtilization)(dev, &sample, &n, 0), NVML_SUCCESS);
  EXPECT_NEAR(sample.smUtil, mean(all), 1.0);
}

TEST(Processes, NamesComeFromTheScenario) {
  Session s("demo", 0.0);
  ASSERT_TRUE(s.ok());
  char name[128];
  ASSERT_EQ(NVML(gpuscopeSimGetProcessName)(4242, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "python train.py --config llama-8b.yaml");
  ASSERT_EQ(NVML(gpuscopeSimGetProcessName)(4249, name, sizeof name), NVML_SUCCESS);
  EXPECT_EQ(NVML(gpuscopeSimGetProcessName)(4250, name, sizeof name), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(gpuscopeSimGetProcessName)(4242, name, 4), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(NVML(gpuscopeSimGetProcessName)(4242, nullptr, 4), NVML_ERROR_INVALID_ARGUMENT);
}

TEST(Processes, UsersComeFromTheScenarioAndAProcessWithoutOneHasNone) {
  Session s("demo", 0.0);
  ASSERT_TRUE(s.ok());
  char user[64];
  ASSERT_EQ(NVML(gpuscopeSimGetProcessUser)(4242, user, sizeof user), NVML_SUCCESS);
  EXPECT_STREQ(user, "alice");
  ASSERT_EQ(NVML(gpuscopeSimGetProcessUser)(4249, user, sizeof user), NVML_SUCCESS) << "per_gpu pids share it";
  EXPECT_STREQ(user, "alice");
  ASSERT_EQ(NVML(gpuscopeSimGetProcessUser)(5300, user, sizeof user), NVML_SUCCESS);
  EXPECT_STREQ(user, "bob");
  EXPECT_EQ(NVML(gpuscopeSimGetProcessUser)(4250, user, sizeof user), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(NVML(gpuscopeSimGetProcessUser)(4242, user, 3), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(NVML(gpuscopeSimGetProcessUser)(4242, nullptr, 3), NVML_ERROR_INVALID_ARGUMENT);
}

TEST(Processes, AProcessTheScenarioGivesNoUserHasNone) {
  Session s("stalled", 0.0);
  ASSERT_TRUE(s.ok());
  char user[64];
  char name[128];
  ASSERT_EQ(NVML(gpuscopeSimGetProcessName)(3800, name, sizeof name), NVML_SUCCESS);
  EXPECT_EQ(NVML(gpuscopeSimGetProcessUser)(3800, user, sizeof user), NVML_ERROR_NOT_FOUND);
}

TEST(Processes, LegacyBuildServesTheOldFunctions) {
  auto& legacy = SimLibrary::legacy();
  Session s("golden", 700.0, legacy);
  ASSERT_TRUE(s.ok());
  unsigned n = 0;
  ASSERT_EQ(NVML_IN(legacy, nvmlDeviceGetComputeRunningProcesses_v2)(s.gpu(0), &n, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2U);
  unsigned long long reasons = 0;
  EXPECT_EQ(NVML_IN(legacy, nvmlDeviceGetCurrentClocksThrottleReasons)(s.gpu(0), &reasons), NVML_SUCCESS);
  nvmlMemory_t mem{};
  EXPECT_EQ(NVML_IN(legacy, nvmlDeviceGetMemoryInfo)(s.gpu(0), &mem), NVML_SUCCESS);
  EXPECT_GT(mem.used, 52ULL << 30);
  // Its state is its own: the main build is not initialized.
  unsigned count = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCount_v2)(&count), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace gpuscope::sim::testing
