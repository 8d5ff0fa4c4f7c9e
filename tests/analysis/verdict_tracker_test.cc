#include <gtest/gtest.h>

#include "analysis/diagnosis_series.h"
#include "analysis/verdict_tracker.h"
#include "store/queryable.h"

namespace gpuscope::analysis {
namespace {

Diagnosis of(std::int64_t at, std::vector<std::pair<std::string, Verdict>> gpus) {
  Diagnosis d;
  d.at_ms = at;
  d.window_ms = 30'000;
  for (auto& [gpu, verdict] : gpus) {
    GpuDiagnosis g;
    g.identity.key = "node/" + gpu;
    g.identity.gpu = gpu;
    g.identity.labels = store::Labels({{"gpu", gpu}, {"UUID", "GPU-" + gpu}});
    g.verdict = verdict;
    g.at_ms = at;
    d.gpus.push_back(g);
  }
  return d;
}

TEST(VerdictTracker, AVerdictCountsOnceItHoldsMinHoldDiagnoses) {
  VerdictTracker tracker(2);
  auto d1 = of(1000, {{"0", Verdict::kComputeBound}});
  ASSERT_EQ(tracker.update(d1).size(), 1U);  // the first verdict
  auto blip = of(2000, {{"0", Verdict::kInputStarved}});
  EXPECT_TRUE(tracker.update(blip).empty());
  auto back = of(3000, {{"0", Verdict::kComputeBound}});
  EXPECT_TRUE(tracker.update(back).empty());
  auto idle1 = of(4000, {{"0", Verdict::kIdle}});
  EXPECT_TRUE(tracker.update(idle1).empty());
  auto idle2 = of(5000, {{"0", Verdict::kIdle}});
  const auto changes = tracker.update(idle2);
  ASSERT_EQ(changes.size(), 1U);
  EXPECT_EQ(changes[0].at_ms, 4000) << "the change dates from the first diagnosis that gave it";
  EXPECT_EQ(changes[0].from, Verdict::kComputeBound);
  EXPECT_EQ(tracker.states().at("node/0").changes, 1U);
  EXPECT_EQ(tracker.states().at("node/0").since_ms, 4000);
  EXPECT_EQ(*idle2.gpus[0].since_ms, 4000) << "the diagnosis learns since when its verdict holds";
}

TEST(VerdictTracker, MinHoldOneCountsEveryChange) {
  VerdictTracker tracker(1);
  for (int i = 0; i < 4; ++i) {
    auto d = of(1000 * i, {{"0", i % 2 ? Verdict::kIdle : Verdict::kComputeBound}});
    tracker.update(d);
  }
  EXPECT_EQ(tracker.states().at("node/0").changes, 3U);
}

TEST(DiagnosisSeries, OneInfoSeriesPerGpuAndAStalenessMarkerWhenTheVerdictChanges) {
  DiagnosisSeries series;
  auto d1 = of(1000, {{"0", Verdict::kComputeBound}, {"1", Verdict::kIdle}});
  auto s1 = series.update(d1);
  ASSERT_EQ(s1.size(), 4U);  // info and changes, per GPU
  for (const auto& s : s1) EXPECT_FALSE(store::is_stale_marker(s.value));

  auto d2 = of(2000, {{"0", Verdict::kInputStarved}, {"1", Verdict::kIdle}});
  auto s2 = series.update(d2);
  int markers = 0;
  for (const auto& s : s2) {
    if (store::is_stale_marker(s.value)) {
      ++markers;
      EXPECT_EQ(s.labels.metric_name(), kDiagnosisInfoName);
      EXPECT_EQ(s.labels.get("verdict"), "compute_bound");
      EXPECT_EQ(s.labels.get("gpu"), "0");
    } else if (s.labels.metric_name() == kDiagnosisInfoName && s.labels.get("gpu") == "0") {
      EXPECT_EQ(s.labels.get("verdict"), "input_starved");
    } else if (s.labels.metric_name() == kDiagnosisChangesName) {
      EXPECT_EQ(s.value, s.labels.get("gpu") == "0" ? 1 : 0);
    }
  }
  EXPECT_EQ(markers, 1);
  EXPECT_EQ(series.current().size(), 4U);

  // GPU 1 gone: its series end.
  auto d3 = of(3000, {{"0", Verdict::kInputStarved}});
  auto s3 = series.update(d3);
  markers = 0;
  for (const auto& s : s3) markers += store::is_stale_marker(s.value) ? 1 : 0;
  EXPECT_EQ(markers, 2);
  EXPECT_EQ(series.current().size(), 2U);
}

}  // namespace
}  // namespace gpuscope::analysis
