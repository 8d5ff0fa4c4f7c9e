#include "remote_write/batch_planner.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace gpuscope::remote_write {
namespace {

store::SeriesSamples planner_series(const std::string& name, std::vector<std::int64_t> times) {
  store::SeriesSamples s{store::Labels{{"__name__", name}}, {}};
  for (std::int64_t t : times) s.samples.push_back({t, static_cast<double>(t) * 10});
  return s;
}

// What every plan must satisfy: each batch holds a series at most once, batches are in time order, and
// together they hold every sample of the window exactly once, each series' in its order.
void expect_valid_plan(const std::vector<store::SeriesSamples>& window, const std::vector<WriteBatch>& plan,
                       std::size_t max_samples) {
  std::map<std::uint32_t, std::vector<std::int64_t>> sent;
  std::int64_t last_t = std::numeric_limits<std::int64_t>::min();
  for (const WriteBatch& b : plan) {
    EXPECT_LE(b.samples.size(), max_samples);
    EXPECT_FALSE(b.samples.empty());
    std::set<std::uint32_t> in_batch;
    for (const PlannedSample& p : b.samples) {
      EXPECT_TRUE(in_batch.insert(p.series).second) << "series " << p.series << " twice in one batch";
      EXPECT_GE(p.sample.t_ms, last_t);
      sent[p.series].push_back(p.sample.t_ms);
    }
    for (const PlannedSample& p : b.samples) last_t = std::max(last_t, p.sample.t_ms);
  }
  for (std::uint32_t i = 0; i < window.size(); ++i) {
    std::vector<std::int64_t> want;
    for (const auto& s : window[i].samples) want.push_back(s.t_ms);
    EXPECT_EQ(sent[i], want) << "series " << i;
  }
}

TEST(RemoteWriteBatchPlanner, SeriesSampledTogetherGoOneTimestampPerBatch) {
  const std::vector<store::SeriesSamples> window = {planner_series("a", {1000, 2000, 3000}),
                                                    planner_series("b", {1000, 2000, 3000})};
  const auto plan = plan_batches(window, 3500, 2000);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].cursor_after, 1000);
  EXPECT_EQ(plan[1].cursor_after, 2000);
  EXPECT_EQ(plan[2].cursor_after, 3500);  // the last completes the window
  expect_valid_plan(window, plan, 2000);
}

TEST(RemoteWriteBatchPlanner, DisjointSeriesShareABatch) {
  const std::vector<store::SeriesSamples> window = {planner_series("a", {1000}), planner_series("b", {1500}),
                                                    planner_series("c", {2000, 2500})};
  const auto plan = plan_batches(window, 3000, 10);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].samples.size(), 3u);  // a@1000, b@1500, c@2000
  EXPECT_EQ(plan[0].cursor_after, 2000);
  EXPECT_EQ(plan[1].samples.size(), 1u);
  EXPECT_EQ(plan[1].cursor_after, 3000);
  expect_valid_plan(window, plan, 10);
}

TEST(RemoteWriteBatchPlanner, ATimestampLargerThanABatchIsSplitAndOnlyItsLastPartMovesTheCursor) {
  std::vector<store::SeriesSamples> window;
  for (int i = 0; i < 5; ++i) window.push_back(planner_series("s" + std::to_string(i), {1000, 2000}));
  const auto plan = plan_batches(window, 2000, 2);
  // 5 at 1000: 2 + 2 + 1; the last part of 1000 has room for nothing of 2000 (same series): 2 + 2 + 1 again.
  ASSERT_EQ(plan.size(), 6u);
  EXPECT_FALSE(plan[0].cursor_after.has_value());
  EXPECT_FALSE(plan[1].cursor_after.has_value());
  EXPECT_EQ(plan[2].cursor_after, 1000);
  EXPECT_FALSE(plan[3].cursor_after.has_value());
  EXPECT_EQ(plan[5].cursor_after, 2000);
  expect_valid_plan(window, plan, 2);
}

TEST(RemoteWriteBatchPlanner, BatchesStayWithinTheSampleLimit) {
  std::vector<store::SeriesSamples> window;
  for (int i = 0; i < 7; ++i) window.push_back(planner_series("s" + std::to_string(i), {1000 + i, 2000 + 3 * i, 3000}));
  const auto plan = plan_batches(window, 4000, 3);
  expect_valid_plan(window, plan, 3);
  EXPECT_EQ(plan.back().cursor_after, 4000);
}

TEST(RemoteWriteBatchPlanner, AnEmptyWindowPlansNothing) {
  EXPECT_TRUE(plan_batches({}, 5000, 100).empty());
  const std::vector<store::SeriesSamples> window = {planner_series("a", {})};
  EXPECT_TRUE(plan_batches(window, 5000, 100).empty());
}

}  // namespace
}  // namespace gpuscope::remote_write
