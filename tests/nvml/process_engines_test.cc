// NvmlBackend::process_engines (pmon's per-process engine utilization) on the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "sim_fixture.h"

namespace gpuscope::nvml {
namespace {

std::string process_engines_scenario(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/" + name;
}

// golden.yaml at 10 min: GPU 0 runs pids 1000 and 1001; the simulator shares the GPU's utilization evenly.
TEST(ProcessEngines, OneSamplePerProcessThenOnlyNewerOnes) {
  auto backend = testing::open_sim(process_engines_scenario("golden.yaml"));
  ASSERT_NE(backend, nullptr);
  const auto first = backend->process_engines(0, 0);
  EXPECT_EQ(first.error, 0);
  ASSERT_EQ(first.samples.size(), 2u);
  std::set<unsigned> pids;
  for (const auto& s : first.samples) {
    pids.insert(s.pid);
    EXPECT_TRUE(s.jpg.has_value() && s.ofa.has_value()) << "a 550 driver reports jpg and ofa";
    EXPECT_EQ(s.sm, first.samples[0].sm);
  }
  EXPECT_EQ(pids, (std::set<unsigned>{1000, 1001}));
  unsigned long long newest = 0;
  for (const auto& s : first.samples) newest = std::max(newest, s.time_us);
  const auto again = backend->process_engines(0, newest);
  EXPECT_EQ(again.error, 0) << "no newer sample is an answer, not an error";
  EXPECT_TRUE(again.samples.empty());
  EXPECT_EQ(backend->process_engines(99, 0).error, NVML_ERROR_GPU_IS_LOST) << "no such GPU";
}

// driver_r535.yaml: no nvmlDeviceGetProcessesUtilizationInfo; nvmlDeviceGetProcessUtilization answers.
TEST(ProcessEngines, OlderDriverFallsBackWithoutJpgOrOfa) {
  auto backend = testing::open_sim(process_engines_scenario("driver_r535.yaml"));
  ASSERT_NE(backend, nullptr);
  const auto reading = backend->process_engines(0, 0);
  EXPECT_EQ(reading.error, 0);
  ASSERT_FALSE(reading.samples.empty());
  for (const auto& s : reading.samples) {
    EXPECT_FALSE(s.jpg.has_value());
    EXPECT_FALSE(s.ofa.has_value());
    EXPECT_GT(s.sm, 0u);
  }
}

}  // namespace
}  // namespace gpuscope::nvml
