// A GPU in MIG mode as /metrics (and so the agent's history) has it: memory and profiling series per MIG
// instance (GPU_I_PROFILE, GPU_I_ID, each instance's pod), power and temperature once for the GPU. The
// diagnosis' grouping gives one history per instance plus the GPU's own, each with its own signals.
#include <gtest/gtest.h>

#include "analysis/gpu_signals.h"

namespace gpuscope::analysis {
namespace {

constexpr std::int64_t kMigGroupT0 = 1'800'000'000'000;  // ms
constexpr const char* kMigGroupUuid = "GPU-5e5c1a8a-1111-2222-3333-444455556666";

// `name` of GPU 0 (of GPU instance `gi` with `profile` when gi is not empty) at 0, 1, 2 s with `values`.
store::SeriesSamples mig_group_series(const std::string& name, const std::string& gi, const std::string& profile,
                                      const std::string& pod, std::vector<double> values) {
  std::vector<store::Label> labels = {{std::string(store::kMetricNameLabel), name},
                                      {"gpu", "0"},
                                      {"UUID", kMigGroupUuid},
                                      {"pci_bus_id", "00000000:18:00.0"},
                                      {"device", "nvidia0"},
                                      {"modelName", "NVIDIA H100 80GB HBM3"},
                                      {"GPU_I_PROFILE", profile},
                                      {"GPU_I_ID", gi},
                                      {"Hostname", "node01"},
                                      {"pod", pod}};
  store::SeriesSamples s;
  s.labels = store::Labels(labels);
  for (std::size_t i = 0; i < values.size(); ++i) {
    s.samples.push_back({kMigGroupT0 + static_cast<std::int64_t>(i) * 1000, values[i]});
  }
  return s;
}

std::vector<double> mig_group_values(const GpuHistory& h, Signal s) {
  std::vector<double> out;
  for (const auto& p : h.points(s)) out.push_back(p.value);
  return out;
}

TEST(MigGrouping, OneHistoryPerInstanceAndOneForTheGpuEachWithItsOwnSignals) {
  std::vector<store::SeriesSamples> series{
      // The GPU's own: power and temperature (and the GPU's pod, the last of its containers).
      mig_group_series("DCGM_FI_DEV_POWER_USAGE", "", "", "infer-1", {300, 310, 320}),
      mig_group_series("DCGM_FI_DEV_GPU_TEMP", "", "", "infer-1", {50, 51, 52}),
      mig_group_series("gpuscope_mig_mode_enabled", "", "", "infer-1", {1, 1, 1}),  // no signal: ignored
      // GPU instance 1 (3g.40gb, train-0) and 13 (1g.10gb, infer-1).
      mig_group_series("DCGM_FI_PROF_SM_ACTIVE", "1", "3g.40gb", "train-0", {0.5, 0.5, 0.75}),
      mig_group_series("DCGM_FI_DEV_FB_USED", "1", "3g.40gb", "train-0", {30000, 30000, 30000}),
      mig_group_series("gpuscope_mig_instance_info", "1", "3g.40gb", "train-0", {1, 1, 1}),
      mig_group_series("DCGM_FI_PROF_SM_ACTIVE", "13", "1g.10gb", "infer-1", {0.25, 0.125, 0}),
      mig_group_series("DCGM_FI_DEV_FB_USED", "13", "1g.10gb", "infer-1", {9000, 9001, 9002}),
  };
  const auto h = group_by_gpu(series);
  ASSERT_EQ(h.size(), 3u);
  const std::string gpu_key = std::string("node01/") + kMigGroupUuid;
  EXPECT_EQ(h[0].identity.key, gpu_key);
  EXPECT_EQ(h[1].identity.key, gpu_key + "/mig1");
  EXPECT_EQ(h[2].identity.key, gpu_key + "/mig13");

  // The GPU: power and temperature, none of its instances' ratios or memory.
  EXPECT_EQ(mig_group_values(h[0], Signal::kPower), (std::vector<double>{300, 310, 320}));
  EXPECT_EQ(mig_group_values(h[0], Signal::kGpuTemp), (std::vector<double>{50, 51, 52}));
  EXPECT_TRUE(h[0].points(Signal::kSmActive).empty());
  EXPECT_TRUE(h[0].points(Signal::kFbUsed).empty());
  EXPECT_EQ(h[0].identity.labels.get("GPU_I_ID"), "");

  // Each instance: its own SM active and memory, no power.
  EXPECT_EQ(mig_group_values(h[1], Signal::kSmActive), (std::vector<double>{0.5, 0.5, 0.75}));
  EXPECT_EQ(mig_group_values(h[1], Signal::kFbUsed), (std::vector<double>{30000, 30000, 30000}));
  EXPECT_TRUE(h[1].points(Signal::kPower).empty());
  EXPECT_EQ(h[1].identity.labels.get("GPU_I_PROFILE"), "3g.40gb");
  EXPECT_EQ(h[1].identity.labels.get("pod"), "train-0");
  EXPECT_EQ(mig_group_values(h[2], Signal::kSmActive), (std::vector<double>{0.25, 0.125, 0}));
  EXPECT_EQ(mig_group_values(h[2], Signal::kFbUsed), (std::vector<double>{9000, 9001, 9002}));
  EXPECT_EQ(h[2].identity.labels.get("GPU_I_ID"), "13");
  for (const auto& g : h) {
    EXPECT_EQ(g.identity.gpu, "0");
    EXPECT_EQ(g.identity.uuid, kMigGroupUuid);
  }
}

}  // namespace
}  // namespace gpuscope::analysis
