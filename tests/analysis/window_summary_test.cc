// Span summaries: time-weighted statistics over unevenly spaced readings, and a GPU history's summary
// with the quantities clients see.
#include "analysis/window_summary.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscope::analysis {
namespace window_summary_test {

constexpr std::int64_t kT0 = 1'800'000'000'000;  // ms
constexpr std::int64_t kLongGap = 3'600'000;

TEST(TimeWeighted, NoPoints) { EXPECT_FALSE(time_weighted({}, kLongGap).has_value()); }

TEST(TimeWeighted, SinglePoint) {
  const std::vector<Point> p{{kT0, 42.5}};
  const auto s = time_weighted(p, kLongGap);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->mean, 42.5);
  EXPECT_DOUBLE_EQ(s->min, 42.5);
  EXPECT_DOUBLE_EQ(s->max, 42.5);
}

TEST(TimeWeighted, EvenSpacingIsThePlainMean) {
  const std::vector<Point> p{{kT0, 10}, {kT0 + 1000, 20}, {kT0 + 2000, 60}, {kT0 + 3000, 30}};
  const auto s = time_weighted(p, kLongGap);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->mean, 30);
  EXPECT_DOUBLE_EQ(s->min, 10);
  EXPECT_DOUBLE_EQ(s->max, 60);
}

TEST(TimeWeighted, EachPointWeighsTheTimeSinceTheOneBefore) {
  // Readings at 1 s, 2 s, 3 s and 13 s: the last weighs 10 s, the first the median spacing (1 s).
  const std::vector<Point> p{{kT0 + 1000, 10}, {kT0 + 2000, 20}, {kT0 + 3000, 30}, {kT0 + 13'000, 40}};
  const auto s = time_weighted(p, kLongGap);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->mean, (10.0 + 20.0 + 30.0 + 40.0 * 10) / 13.0);
  EXPECT_DOUBLE_EQ(s->min, 10);
  EXPECT_DOUBLE_EQ(s->max, 40);
}

TEST(TimeWeighted, TheFirstPointWeighsTheMedianSpacing) {
  // Spacings 2 s, 2 s, 8 s: the first point weighs 2 s, not 8 s nor the 4 s mean spacing.
  const std::vector<Point> p{{kT0, 100}, {kT0 + 2000, 0}, {kT0 + 4000, 0}, {kT0 + 12'000, 0}};
  const auto s = time_weighted(p, kLongGap);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->mean, 100.0 * 2 / 14);
}

TEST(TimeWeighted, AGapCountsAsMaxGap) {
  // The agent was away for ten minutes: the reading after the gap weighs max_gap (5 min), not 10.
  const std::int64_t max_gap = 300'000;
  const std::vector<Point> p{{kT0, 10}, {kT0 + 1000, 10}, {kT0 + 2000, 10}, {kT0 + 602'000, 100}};
  const auto s = time_weighted(p, max_gap);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->mean, (10.0 * 3000 + 100.0 * 300'000) / 303'000);
  EXPECT_DOUBLE_EQ(s->min, 10);
  EXPECT_DOUBLE_EQ(s->max, 100);
  // A gap within max_gap weighs in full.
  const auto full = time_weighted(p, 600'000);
  ASSERT_TRUE(full.has_value());
  EXPECT_DOUBLE_EQ(full->mean, (10.0 * 3000 + 100.0 * 600'000) / 603'000);
}

TEST(TimeWeighted, MinAndMaxAnywhere) {
  const std::vector<Point> p{{kT0, 5}, {kT0 + 1000, -3}, {kT0 + 2000, 9}, {kT0 + 3000, 4}};
  const auto s = time_weighted(p, kLongGap);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->min, -3);
  EXPECT_DOUBLE_EQ(s->max, 9);
}

TEST(SpanSummary, QuantitiesAndTheirNames) {
  const auto q = summary_quantities();
  ASSERT_EQ(q.size(), 6U);
  EXPECT_EQ(q[0].name, "utilization_percent");
  EXPECT_EQ(q[0].signal, Signal::kUtilization);
  EXPECT_EQ(q[1].name, "sm_active");
  EXPECT_EQ(q[1].signal, Signal::kSmActive);
  EXPECT_EQ(q[2].name, "tensor_active");
  EXPECT_EQ(q[2].signal, Signal::kTensorActive);
  EXPECT_EQ(q[3].name, "memory_used_mib");
  EXPECT_EQ(q[3].signal, Signal::kFbUsed);
  EXPECT_EQ(q[4].name, "power_watts");
  EXPECT_EQ(q[4].signal, Signal::kPower);
  EXPECT_EQ(q[5].name, "temperature_celsius");
  EXPECT_EQ(q[5].signal, Signal::kGpuTemp);
}

// One GPU's history with `signal` at kT0 + s seconds for s in [from_s, to_s), value f(s).
template <typename F>
void fill(GpuHistory& h, Signal signal, int from_s, int to_s, F f) {
  auto& pts = h.signals[static_cast<std::size_t>(signal)];
  for (int s = from_s; s < to_s; ++s) pts.push_back({kT0 + s * 1000LL, static_cast<double>(f(s))});
}

GpuHistory history(std::string gpu) {
  GpuHistory h;
  h.identity.key = "node-1/GPU-" + gpu;
  h.identity.gpu = gpu;
  h.identity.uuid = "GPU-" + gpu;
  h.identity.host = "node-1";
  return h;
}

const SpanStat* stat_of(const GpuSpanSummary& s, std::string_view name) {
  for (const auto& [n, stat] : s.stats) {
    if (n == name) return &stat;
  }
  return nullptr;
}

TEST(SpanSummary, StatsInOrderAndAbsentQuantitiesLeftOut) {
  auto h = history("0");
  // Readings each second over [0, 100): the span (10 s, 40 s] holds those at 11 s ... 40 s.
  fill(h, Signal::kGpuTemp, 0, 100, [](int s) { return 50 + s % 3; });
  fill(h, Signal::kPower, 0, 100, [](int s) { return s < 25 ? 300 : 500; });
  fill(h, Signal::kUtilization, 0, 100, [](int s) { return s; });
  fill(h, Signal::kFbUsed, 0, 100, [](int) { return 40'000; });
  fill(h, Signal::kSmActive, 0, 100, [](int s) { return s <= 30 ? 0.5 : 0.8; });
  // No tensor activity recorded (a GPU without profiling metrics).
  const std::vector<GpuHistory> hs{h};
  const auto out = summarize_span(hs, kT0 + 10'000, kT0 + 40'000, Thresholds{});
  ASSERT_EQ(out.size(), 1U);
  const auto& s = out[0];
  EXPECT_EQ(s.identity.key, "node-1/GPU-0");
  EXPECT_EQ(s.readings, 30U);
  std::vector<std::string_view> names;
  for (const auto& [name, stat] : s.stats) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"utilization_percent", "sm_active", "memory_used_mib", "power_watts",
                                                  "temperature_celsius"}));
  EXPECT_EQ(stat_of(s, "tensor_active"), nullptr) << "absent, not 0";

  const auto* util = stat_of(s, "utilization_percent");
  ASSERT_NE(util, nullptr);
  EXPECT_DOUBLE_EQ(util->min, 11);
  EXPECT_DOUBLE_EQ(util->max, 40);
  EXPECT_DOUBLE_EQ(util->mean, (11 + 40) / 2.0);
  const auto* sm = stat_of(s, "sm_active");
  ASSERT_NE(sm, nullptr);
  EXPECT_DOUBLE_EQ(sm->mean, (20 * 0.5 + 10 * 0.8) / 30);
  const auto* power = stat_of(s, "power_watts");
  ASSERT_NE(power, nullptr);
  EXPECT_DOUBLE_EQ(power->mean, (14 * 300.0 + 16 * 500.0) / 30);
  EXPECT_DOUBLE_EQ(power->min, 300);
  EXPECT_DOUBLE_EQ(power->max, 500);
  const auto* mem = stat_of(s, "memory_used_mib");
  ASSERT_NE(mem, nullptr);
  EXPECT_DOUBLE_EQ(mem->mean, 40'000);
  const auto* temp = stat_of(s, "temperature_celsius");
  ASSERT_NE(temp, nullptr);
  EXPECT_DOUBLE_EQ(temp->min, 50);
  EXPECT_DOUBLE_EQ(temp->max, 52);
  EXPECT_DOUBLE_EQ(temp->mean, 51);
}

TEST(SpanSummary, UnevenReadingsAreTimeWeighted) {
  auto h = history("1");
  // Power at 1 s, 2 s, 3 s, then once more at 13 s.
  auto& power = h.signals[static_cast<std::size_t>(Signal::kPower)];
  power = {{kT0 + 1000, 100}, {kT0 + 2000, 100}, {kT0 + 3000, 100}, {kT0 + 13'000, 700}};
  const std::vector<GpuHistory> hs{h};
  const auto out = summarize_span(hs, kT0, kT0 + 20'000, Thresholds{});
  ASSERT_EQ(out.size(), 1U);
  EXPECT_EQ(out[0].readings, 4U);
  ASSERT_EQ(out[0].stats.size(), 1U);
  EXPECT_EQ(out[0].stats[0].first, "power_watts");
  EXPECT_DOUBLE_EQ(out[0].stats[0].second.mean, (3 * 100.0 + 10 * 700.0) / 13);
}

TEST(SpanSummary, GpuWithoutReadingsInTheSpan) {
  auto busy = history("0");
  fill(busy, Signal::kPower, 0, 61, [](int) { return 400; });
  auto earlier = history("1");
  fill(earlier, Signal::kPower, 0, 10, [](int) { return 80; });
  const std::vector<GpuHistory> hs{busy, earlier};
  const auto out = summarize_span(hs, kT0 + 20'000, kT0 + 60'000, Thresholds{});
  ASSERT_EQ(out.size(), 2U);
  EXPECT_EQ(out[0].identity.gpu, "0");
  EXPECT_EQ(out[0].readings, 40U);
  EXPECT_EQ(out[1].identity.gpu, "1");
  EXPECT_EQ(out[1].readings, 0U);
  EXPECT_TRUE(out[1].stats.empty());
  EXPECT_FALSE(out[1].verdict.has_value());
  EXPECT_TRUE(out[1].verdict_summary.empty());
}

TEST(SpanSummary, VerdictOverTheSpan) {
  // Busy for a minute, then idle for a minute: each span has its own verdict.
  auto h = history("0");
  fill(h, Signal::kGrActive, 0, 121, [](int s) { return s < 60 ? 0.95 : 0.0; });
  fill(h, Signal::kSmActive, 0, 121, [](int s) { return s < 60 ? 0.9 : 0.0; });
  fill(h, Signal::kUtilization, 0, 121, [](int s) { return s < 60 ? 100 : 0; });
  const std::vector<GpuHistory> hs{h};
  const auto idle = summarize_span(hs, kT0 + 60'000, kT0 + 120'000, Thresholds{});
  ASSERT_EQ(idle.size(), 1U);
  EXPECT_EQ(idle[0].verdict, Verdict::kIdle);
  EXPECT_FALSE(idle[0].verdict_summary.empty());
  const auto busy = summarize_span(hs, kT0, kT0 + 59'000, Thresholds{});
  ASSERT_EQ(busy.size(), 1U);
  ASSERT_TRUE(busy[0].verdict.has_value());
  EXPECT_NE(busy[0].verdict, Verdict::kIdle);
  ASSERT_NE(stat_of(busy[0], "utilization_percent"), nullptr);
  EXPECT_DOUBLE_EQ(stat_of(busy[0], "utilization_percent")->mean, 100);
}

TEST(SpanSummary, NoHistories) { EXPECT_TRUE(summarize_span({}, kT0, kT0 + 1000, Thresholds{}).empty()); }

}  // namespace window_summary_test
}  // namespace gpuscope::analysis
