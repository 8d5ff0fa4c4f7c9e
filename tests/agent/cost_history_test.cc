// read_cost_seeds over a hand-made history: what a restarted agent's cost counters continue from.
#include "agent/cost_history.h"

#include <gtest/gtest.h>

#include "store/series_set.h"

namespace gpuscope::agent {
namespace {

constexpr std::int64_t kNow = 1'767'225'600'000;
constexpr std::int64_t kMinute = 60'000;
constexpr std::int64_t kRetention = 15LL * 24 * 60 * kMinute;

store::Labels gpu(const std::string& name, const std::string& uuid, std::vector<store::Label> extra = {}) {
  std::vector<store::Label> labels{{"__name__", name}, {"gpu", "0"}, {"UUID", uuid}, {"Hostname", "n"}};
  for (auto& l : extra) labels.push_back(std::move(l));
  return store::Labels(std::move(labels));
}

// The history, and the look-backs asked of it for the GPUs' last readings.
class RecordingHistory : public store::SeriesSet {
 public:
  std::expected<void, std::string> select_each(std::span<const store::LabelMatcher> matchers, std::int64_t mint_ms,
                                               std::int64_t maxt_ms, const SeriesVisitor& visitor) const override {
    for (const auto& m : matchers) {
      if (m.value().find("gpuscope_gpu_up") != std::string::npos) lookbacks.push_back(maxt_ms - mint_ms);
    }
    return store::SeriesSet::select_each(matchers, mint_ms, maxt_ms, visitor);
  }
  mutable std::vector<std::int64_t> lookbacks;
};

// One reading of GPU `uuid` at `t` as the agent records it, with its counters.
void record(store::SeriesSet& h, const std::string& uuid, std::int64_t t, double dollars) {
  h.add(gpu("gpuscope_gpu_up", uuid), t, 1);
  h.add(gpu("DCGM_FI_PROF_GR_ENGINE_ACTIVE", uuid), t, 0.01);
  h.add(gpu("DCGM_FI_PROF_SM_ACTIVE", uuid), t, 0);
  h.add(gpu("DCGM_FI_DEV_GPU_UTIL", uuid), t, 0);
  h.add(gpu("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", uuid), t, 123'456 + static_cast<double>(t - kNow));
  h.add(gpu("DCGM_FI_DEV_POWER_USAGE", uuid), t, 70);
  h.add(gpu("gpuscope_gpu_hourly_price_dollars", uuid, {{"tier", "on_demand"}}), t, 36);
  h.add(gpu("gpuscope_cost_dollars_total", uuid, {{"tier", "on_demand"}}), t, dollars);
  h.add(gpu("gpuscope_cost_idle_dollars_total", uuid, {{"tier", "on_demand"}}), t, dollars / 2);
  h.add(gpu("gpuscope_cost_unused_dollars_total", uuid, {{"tier", "on_demand"}}), t, dollars / 4);
  h.add(gpu("gpuscope_energy_joules_total", uuid), t, 1000);
  h.add(gpu("gpuscope_energy_cost_dollars_total", uuid), t, 0.1);
}

TEST(CostHistory, EachGpuContinuesFromItsLastRecordedCountersInTheTierAndItsLastReading) {
  RecordingHistory h;
  record(h, "GPU-a", kNow - 2 * kMinute, 4.0);
  record(h, "GPU-a", kNow - kMinute, 5.0);
  h.add(gpu("gpuscope_cost_dollars_total", "GPU-a", {{"tier", "spot"}}), kNow - kMinute, 1.0);  // another counter
  h.add(gpu("gpuscope_process_cost_dollars_total", "GPU-a",
            {{"tier", "on_demand"}, {"pid", "7"}, {"process_name", "python"}, {"container_id", "c1"}}),
        kNow - kMinute, 0.4);
  // Ended 7 minutes ago: not continued, even if its pid comes back.
  h.add(gpu("gpuscope_process_cost_dollars_total", "GPU-a", {{"tier", "on_demand"}, {"pid", "8"}, {"process_name", "python"}}),
        kNow - 7 * kMinute, 0.6);
  const std::vector<std::string> uuids{"GPU-a"};
  auto seeds = read_cost_seeds(h, uuids, "on_demand", kNow, kRetention, {});
  ASSERT_TRUE(seeds) << seeds.error();
  ASSERT_EQ(seeds->size(), 1U);
  const analysis::CostSeed& s = seeds->front();
  EXPECT_EQ(s.uuid, "GPU-a");
  EXPECT_EQ(s.dollars, 5.0);
  EXPECT_EQ(s.idle_dollars, 2.5);
  EXPECT_EQ(s.unused_dollars, 1.25);
  EXPECT_EQ(s.energy_joules, 1000);
  EXPECT_EQ(s.energy_dollars, 0.1);
  ASSERT_TRUE(s.last_reading);
  EXPECT_EQ(s.last_reading->t_ms, kNow - kMinute);
  EXPECT_TRUE(s.last_reading->up);
  EXPECT_EQ(s.last_reading->gr_active, 0.01);
  EXPECT_EQ(s.last_reading->utilization_percent, 0);
  EXPECT_EQ(s.last_reading->energy_millijoules, 123'456 - kMinute);
  EXPECT_EQ(s.last_reading->power_watts, 70);
  EXPECT_EQ(s.last_reading->usd_per_hour, 36);
  ASSERT_EQ(s.processes.size(), 1U);
  EXPECT_EQ(s.processes[0].key, (analysis::ProcessKey{7, "python", "c1"}));
  EXPECT_EQ(s.processes[0].dollars, 0.4);
  EXPECT_EQ(s.processes[0].last_seen_ms, kNow - kMinute);
  EXPECT_EQ(h.lookbacks, (std::vector<std::int64_t>{5 * kMinute})) << "found in the first 5 minutes: no further";

  // In another tier the dollar counters are others (they start at 0); energy is the same.
  seeds = read_cost_seeds(h, uuids, "spot", kNow, kRetention, {});
  ASSERT_TRUE(seeds);
  EXPECT_EQ(seeds->front().dollars, 1.0);
  EXPECT_FALSE(seeds->front().idle_dollars);
  EXPECT_EQ(seeds->front().energy_joules, 1000);
  EXPECT_FALSE(seeds->front().last_reading->usd_per_hour);
}

TEST(CostHistory, TheLookBackGrowsUntilEveryGpuIsFoundAndOnlyARecentReadingIsBilledFrom) {
  RecordingHistory h;
  record(h, "GPU-a", kNow - 2 * kMinute, 1.0);
  record(h, "GPU-b", kNow - 3 * 60 * kMinute, 2.0);  // 3 hours ago: the agent was away
  std::vector<std::string> uuids{"GPU-a", "GPU-b"};
  auto seeds = read_cost_seeds(h, uuids, "on_demand", kNow, kRetention, {});
  ASSERT_TRUE(seeds) << seeds.error();
  ASSERT_EQ(seeds->size(), 2U);
  EXPECT_EQ(h.lookbacks, (std::vector<std::int64_t>{5 * kMinute, 60 * kMinute, 24 * 60 * kMinute}));
  EXPECT_EQ((*seeds)[0].uuid, "GPU-a");
  EXPECT_TRUE((*seeds)[0].last_reading);
  EXPECT_EQ((*seeds)[1].uuid, "GPU-b");
  EXPECT_EQ((*seeds)[1].dollars, 2.0);
  EXPECT_FALSE((*seeds)[1].last_reading) << "3 hours ago is longer than a reading may stand for";

  // A GPU the history never saw is looked for back to the retention, once, and starts at 0.
  h.lookbacks.clear();
  uuids.push_back("GPU-new");
  seeds = read_cost_seeds(h, uuids, "on_demand", kNow, kRetention, {});
  ASSERT_TRUE(seeds);
  EXPECT_EQ(seeds->size(), 2U);
  EXPECT_EQ(h.lookbacks, (std::vector<std::int64_t>{5 * kMinute, 60 * kMinute, 24 * 60 * kMinute, kRetention}));

  // A retention shorter than a step ends the look-back there.
  h.lookbacks.clear();
  seeds = read_cost_seeds(h, uuids, "on_demand", kNow, 30 * kMinute, {});
  ASSERT_TRUE(seeds);
  EXPECT_EQ(h.lookbacks, (std::vector<std::int64_t>{5 * kMinute, 30 * kMinute}));
  EXPECT_EQ(seeds->size(), 1U) << "GPU-b's last reading is past the retention";
}

TEST(CostHistory, AStalenessMarkerIsNotAValue) {
  RecordingHistory h;
  record(h, "GPU-a", kNow - 2 * kMinute, 3.0);
  h.add(gpu("gpuscope_cost_dollars_total", "GPU-a", {{"tier", "on_demand"}}), kNow - kMinute, store::stale_marker());
  const std::vector<std::string> uuids{"GPU-a"};
  auto seeds = read_cost_seeds(h, uuids, "on_demand", kNow, kRetention, {});
  ASSERT_TRUE(seeds);
  EXPECT_EQ(seeds->front().dollars, 3.0);
}

}  // namespace
}  // namespace gpuscope::agent
