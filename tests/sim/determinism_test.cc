// Values are a pure function of (seed, GPU, signal, t): the same whatever was read before, in
// another process, and different under another seed. Plus thread safety under concurrent callers.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

// A fingerprint of everything time-dependent one GPU reports at the current t.
std::vector<unsigned long long> fingerprint(nvmlDevice_t dev) {
  const GpuReading r = read_gpu(dev);
  std::vector<unsigned long long> v{r.power_mw, r.temp_c, r.sm_mhz, r.util_gpu, r.util_mem, r.pcie_rx_kbps,
                                    r.pcie_tx_kbps, r.energy_mj, r.reasons, r.mem_v2.used};
  for (auto ns : r.violation_ns) v.push_back(ns);
  for (const auto& p : processes(dev)) {
    v.push_back(p.pid);
    v.push_back(p.usedGpuMemory);
  }
  nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 0};
  NVML(nvmlGpmQueryDeviceSupport)(dev, &support);
  if (support.isSupportedDevice) {
    const auto m = gpm_now(dev);
    for (unsigned id : {1U, 2U, 3U, 5U, 10U, 21U, 60U}) {
      double x = m.at(id);
      unsigned long long bits = 0;
      std::memcpy(&bits, &x, sizeof bits);
      v.push_back(bits);
    }
  }
  return v;
}

std::vector<std::vector<unsigned long long>> node_fingerprint(Session& s) {
  std::vector<std::vector<unsigned long long>> out;
  for (unsigned i = 0; i < s.count(); ++i) out.push_back(fingerprint(s.gpu(i)));
  return out;
}

TEST(Determinism, SameTimeSameValuesWhateverCameBefore) {
  std::vector<std::vector<unsigned long long>> direct;
  {
    Session s("demo", 7300.25);
    ASSERT_TRUE(s.ok());
    direct = node_fingerprint(s);
  }
  Session s("demo", 100.0);
  ASSERT_TRUE(s.ok());
  node_fingerprint(s);
  s.at(20000.5);  // far ahead ...
  node_fingerprint(s);
  s.at(7300.25);  // ... then back
  EXPECT_EQ(node_fingerprint(s), direct);
  s.at(7300.25);
  EXPECT_EQ(node_fingerprint(s), direct);  // and again, from the cache
}

TEST(Determinism, AnotherProcessFrozenAtTheSameTimeReadsTheSameNumbers) {
  std::vector<std::vector<unsigned long long>> here;
  {
    Session s("golden", 4321.75);
    ASSERT_TRUE(s.ok());
    here = node_fingerprint(s);
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    Session s("golden", 4321.75);
    const auto there = node_fingerprint(s);
    for (const auto& gpu : there) {
      const std::size_t n = gpu.size();
      if (write(fds[1], &n, sizeof n) != sizeof n) _exit(2);
      if (write(fds[1], gpu.data(), n * sizeof gpu[0]) != static_cast<ssize_t>(n * sizeof gpu[0])) _exit(2);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::vector<std::vector<unsigned long long>> there;
  std::size_t n = 0;
  while (read(fds[0], &n, sizeof n) == sizeof n) {
    std::vector<unsigned long long> gpu(n);
    ASSERT_EQ(read(fds[0], gpu.data(), n * sizeof gpu[0]), static_cast<ssize_t>(n * sizeof gpu[0]));
    there.push_back(gpu);
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(there, here);
}

TEST(Determinism, AnotherSeedGivesOtherValues) {
  const std::string base = "gpus: {count: 2, model: NVIDIA H100 80GB HBM3}\nworkload: {profile: training}\n";
  std::vector<std::vector<unsigned long long>> a, b, a_again;
  {
    Session s(base + "seed: 1\n", 500.5);
    a = node_fingerprint(s);
  }
  {
    Session s(base + "seed: 2\n", 500.5);
    b = node_fingerprint(s);
  }
  {
    Session s(base + "seed: 1\n", 500.5);
    a_again = node_fingerprint(s);
  }
  EXPECT_EQ(a, a_again);
  EXPECT_NE(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
  EXPECT_NE(a[0], a[1]);  // and GPUs of one node differ from each other
}

TEST(Determinism, SeedFromTheEnvironmentOverridesTheScenarios) {
  const std::string base = "gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\nworkload: {profile: training}\n";
  std::vector<std::vector<unsigned long long>> two, overridden;
  {
    Session s(base + "seed: 2\n", 500.5);
    two = node_fingerprint(s);
  }
  setenv("GPUSCOPE_SIM_SEED", "2", 1);
  {
    Session s(base + "seed: 1\n", 500.5);
    overridden = node_fingerprint(s);
  }
  setenv("GPUSCOPE_SIM_SEED", "not-a-seed", 1);
  {
    Session s(base, 500.5);
    EXPECT_FALSE(s.ok()) << "a bad seed fails init";
  }
  unsetenv("GPUSCOPE_SIM_SEED");
  EXPECT_EQ(overridden, two);
}

TEST(ThreadSafety, SamplerAndEventThreadsAtOnce) {
  Session s("demo", std::nullopt);
  ASSERT_TRUE(s.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<nvmlDevice_t> devs;
  for (unsigned i = 0; i < 8; ++i) devs.push_back(s.gpu(i));
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(NVML(nvmlEventSetCreate)(&set), NVML_SUCCESS);
  for (auto d : devs) ASSERT_EQ(NVML(nvmlDeviceRegisterEvents)(d, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  std::vector<std::thread> threads;
  for (int k = 0; k < 3; ++k) {
    threads.emplace_back([&] {
      while (!stop) {
        for (auto d : devs) {
          unsigned mw = 0;
          nvmlMemory_v2_t mem{};
          mem.version = nvmlMemory_v2;
          unsigned n = 0;
          if (NVML(nvmlDeviceGetPowerUsage)(d, &mw) != NVML_SUCCESS) ++failures;
          if (NVML(nvmlDeviceGetMemoryInfo_v2)(d, &mem) != NVML_SUCCESS) ++failures;
          if (mem.used + mem.free + mem.reserved != mem.total) ++failures;
          if (NVML(nvmlDeviceGetComputeRunningProcesses_v3)(d, &n, nullptr) != NVML_ERROR_INSUFFICIENT_SIZE) {
            ++failures;
          }
        }
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop) {
      nvmlEventData_t data{};
      const nvmlReturn_t r = NVML(nvmlEventSetWait_v2)(set, &data, 20);
      if (r != NVML_ERROR_TIMEOUT && r != NVML_SUCCESS) ++failures;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(NVML(nvmlEventSetFree)(set), NVML_SUCCESS);
}

}  // namespace
}  // namespace gpuscope::sim::testing
