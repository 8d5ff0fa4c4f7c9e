// NvmlBackend::details on the simulator: what it reads, in how many calls, and what a lost GPU answers.
#include <gtest/gtest.h>

#include <array>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "nvml/nvml_library.h"
#include "sim_fixture.h"

namespace gpuscope::nvml {
namespace {

using DdtCallMap = std::map<std::string, std::uint64_t>;

DdtCallMap ddt_counts(const NvmlBackend& b) {
  DdtCallMap out;
  for (const auto& [name, n] : b.library().call_counts()) out[std::string(name)] = n;
  return out;
}

// Calls made between two counts, by function; functions not called are left out.
DdtCallMap ddt_delta(const DdtCallMap& before, const DdtCallMap& after) {
  DdtCallMap out;
  for (const auto& [name, n] : after) {
    const auto it = before.find(name);
    const std::uint64_t d = n - (it == before.end() ? 0 : it->second);
    if (d > 0) out[name] = d;
  }
  return out;
}

std::uint64_t ddt_total(const DdtCallMap& calls) {
  std::uint64_t n = 0;
  for (const auto& [name, k] : calls) n += k;
  return n;
}

const std::string kDdtScenario = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/idle.yaml";

TEST(DeviceDetails, ReadsTheIdleH100AsTheRealDriverAnswers) {
  auto b = testing::open_sim(kDdtScenario);
  ASSERT_TRUE(b);
  const model::GpuDetails d = b->details(0);
  // Facts of an H100 SXM on driver 580 (reference/real-h100/nvml_answers.json).
  ASSERT_TRUE(d.pci.ok()) << d.pci.error;
  EXPECT_EQ(d.pci.value->device_id, 0x233010DEu);
  EXPECT_EQ(d.pci.value->subsystem_id, 0x16C110DEu);
  ASSERT_TRUE(d.power_min_limit_mw.ok() && d.power_max_limit_mw.ok());
  EXPECT_EQ(*d.power_min_limit_mw.value, 200000u);
  EXPECT_EQ(*d.power_max_limit_mw.value, 700000u);
  ASSERT_TRUE(d.clocks_event_reasons_supported.ok());
  EXPECT_EQ(*d.clocks_event_reasons_supported.value, 0x1FFu);
  ASSERT_TRUE(d.remap_histogram.ok());
  EXPECT_EQ(d.remap_histogram.value->max, 2560u);
  EXPECT_EQ(d.inforom_validation, 0);
  EXPECT_FALSE(d.gpu_operation_mode.ok());
  EXPECT_EQ(d.gpu_operation_mode.error, 3);  // NOT_SUPPORTED on H100
  // What nvidia-smi -q prints for Max Clocks/Video, BAR1 Total and the T.Limit offsets (signed).
  ASSERT_TRUE(d.max_video_clock.ok());
  EXPECT_EQ(*d.max_video_clock.value, 1545u);
  ASSERT_TRUE(d.bar1.ok());
  EXPECT_EQ(d.bar1.value->total, 137438953472ULL);
  EXPECT_EQ(d.bar1.value->total, d.bar1.value->used + d.bar1.value->free);
  const std::array<std::int64_t, 4> tlimit{-8, -2, 0, 0};  // shutdown, slowdown, memory max, GPU max
  for (std::size_t k = 0; k < tlimit.size(); ++k) {
    ASSERT_TRUE(d.temperature_tlimit[k].ok()) << k;
    EXPECT_EQ(*d.temperature_tlimit[k].value, tlimit[k]) << k;
  }
  // Power smoothing is Blackwell's.
  EXPECT_FALSE(d.power_smoothing_floors[0].ok());
}

TEST(DeviceDetails, OneFieldValuesBatchNoEnergyAndDmonReadsOnlyItsThree) {
  BackendOptions o;
  o.count_calls = true;
  auto b = testing::open_sim_with(o, kDdtScenario);
  ASSERT_TRUE(b);
  ASSERT_TRUE(b->library().counts_calls());

  auto before = ddt_counts(*b);
  (void)b->details(0);
  const DdtCallMap all = ddt_delta(before, ddt_counts(*b));
  EXPECT_EQ(all.count("nvmlDeviceGetFieldValues") ? all.at("nvmlDeviceGetFieldValues") : 0, 1u);
  EXPECT_EQ(all.count("nvmlDeviceGetTotalEnergyConsumption"), 0u);
  // Twenty ECC counters (device memory and DRAM are one NVML location, asked once).
  EXPECT_EQ(all.count("nvmlDeviceGetMemoryErrorCounter") ? all.at("nvmlDeviceGetMemoryErrorCounter") : 0, 20u);
  // Every call of details(0) is on the list of those it makes: no sampler function slipped in.
  for (const char* sampled : {"nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage", "nvmlGpmSampleGet"}) {
    EXPECT_EQ(all.count(sampled), 0u) << sampled;
  }
  RecordProperty("details_calls", std::to_string(ddt_total(all)));
  std::cout << "details(): " << ddt_total(all) << " NVML calls, " << all.size() << " functions:";
  for (const auto& [name, n] : all) std::cout << ' ' << name << '=' << n;
  std::cout << '\n';

  before = ddt_counts(*b);
  const model::GpuDetails dmon = b->details(0, NvmlBackend::DetailSet::kDmon);
  const DdtCallMap few = ddt_delta(before, ddt_counts(*b));
  std::set<std::string> called;
  for (const auto& [name, n] : few) called.insert(name);
  const std::set<std::string> expected{"nvmlDeviceGetJpgUtilization", "nvmlDeviceGetOfaUtilization",
                                       "nvmlDeviceGetConfComputeProtectedMemoryUsage"};
  // Functions the simulator lacks are not called (their slot is empty): a subset of the three.
  for (const auto& name : called) EXPECT_TRUE(expected.contains(name)) << name;
  EXPECT_EQ(ddt_total(few), called.size());
  EXPECT_EQ(dmon.pci.error, 13);  // not read
  EXPECT_FALSE(dmon.pci.ok());
  EXPECT_EQ(dmon.inforom_validation, 13);
}

TEST(DeviceDetails, ALostGpuAnswersGpuIsLostEverywhere) {
  // scenarios/gpu_lost.yaml: GPU 1 answers NVML_ERROR_GPU_IS_LOST from 1m to 2m.
  auto b = testing::open_sim(std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/gpu_lost.yaml", 90);
  ASSERT_TRUE(b);
  ASSERT_GE(b->gpus().size(), 2u);
  (void)b->sample();
  const model::GpuDetails d = b->details(1);
  EXPECT_EQ(d.pci.error, 15);
  EXPECT_EQ(d.jpg_util.error, 15);
  EXPECT_EQ(d.inforom_validation, 15);
  EXPECT_EQ(d.power_average_mw.error, 15);
  EXPECT_EQ(d.ecc_errors[1][1][5].error, 15);
  EXPECT_EQ(d.hostname.error, 15);
  EXPECT_FALSE(d.fabric.ok());
  EXPECT_EQ(d.fabric.error, 15);
  // GPU 0 is fine.
  EXPECT_TRUE(b->details(0).pci.ok());
}

}  // namespace
}  // namespace gpuscope::nvml
