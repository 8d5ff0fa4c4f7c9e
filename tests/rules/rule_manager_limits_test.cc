// The rules loop goes through the agent's query limits (issue 14): the same engine options, the same
// QueryLimiter as the HTTP API, so a rule's query is counted, bounded in samples, and canceled by the
// agent's stop like any other.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "promql/query_limiter.h"
#include "rules/rule_manager.h"
#include "store/series_set.h"

namespace gpuscope::rules {
namespace {

constexpr std::int64_t kLimitsMinute = 60'000;

class DiscardingAppender : public SampleAppender {
 public:
  std::expected<void, std::string> append(const store::Labels&, std::int64_t, double) override { return {}; }
};

std::vector<RuleGroupDefinition> hot_groups(std::string_view expr) {
  auto file = parse_rule_file(fmt::format(R"(groups:
- name: g
  rules:
  - alert: Hot
    expr: {}
)",
                                          expr),
                              "gpu.rules.yml");
  EXPECT_TRUE(file);
  return file->groups;
}

RuleStatus status_of(const RuleManager& m) {
  RuleStatus s;
  m.visit([&](const std::vector<RuleGroup>& g) { s = g[0].rules()[0].status; });
  return s;
}

class RuleManagerLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int m = 0; m <= 60; ++m) {
      for (int gpu = 0; gpu < 4; ++gpu) data_.add(store::Labels{{"__name__", "temp"}, {"gpu", std::to_string(gpu)}}, m * kLimitsMinute, 90);
    }
  }
  RuleManagerOptions options() {
    RuleManagerOptions o;
    o.engine.limiter = &limiter_;
    return o;
  }
  store::SeriesSet data_;
  DiscardingAppender out_;
  promql::QueryLimiter limiter_;
};

TEST_F(RuleManagerLimitsTest, RuleQueriesAreCountedByTheSharedLimiter) {
  RuleManager m(hot_groups("temp > 85"), options());
  m.evaluate_due(data_, out_, 60 * kLimitsMinute);
  EXPECT_EQ(status_of(m).health, RuleHealth::kOk) << status_of(m).last_error;
  EXPECT_EQ(limiter_.stats().queries_total, 1u);
}

TEST_F(RuleManagerLimitsTest, ARuleOverTheSampleLimitFailsWithPrometheusError) {
  auto o = options();
  o.engine.max_samples = 100;  // 4 series x 61 readings over the hour
  RuleManager m(hot_groups("max_over_time(temp[1h]) > 85"), o);
  m.evaluate_due(data_, out_, 60 * kLimitsMinute);
  EXPECT_EQ(status_of(m).health, RuleHealth::kError);
  EXPECT_EQ(status_of(m).last_error, "query processing would load too many samples into memory in query execution");
  EXPECT_EQ(limiter_.stats().too_many_samples_total, 1u);
}

TEST_F(RuleManagerLimitsTest, CancelAllEndsRuleEvaluationsAndKeepsTheAlertsAsTheyWere) {
  RuleManager m(hot_groups("temp > 85"), options());
  m.evaluate_due(data_, out_, 59 * kLimitsMinute);
  std::size_t firing = 0;
  m.visit([&](const std::vector<RuleGroup>& g) { firing = std::get<AlertingRule>(g[0].rules()[0].rule).alerts().size(); });
  ASSERT_EQ(firing, 4u);
  limiter_.cancel_all();
  m.evaluate_due(data_, out_, 60 * kLimitsMinute);
  EXPECT_EQ(status_of(m).health, RuleHealth::kError);
  EXPECT_EQ(status_of(m).last_error, "query was canceled in query queue");
  m.visit([&](const std::vector<RuleGroup>& g) { firing = std::get<AlertingRule>(g[0].rules()[0].rule).alerts().size(); });
  EXPECT_EQ(firing, 4u) << "a canceled evaluation resolves nothing";
  EXPECT_EQ(limiter_.stats().canceled_total, 1u);
}

}  // namespace
}  // namespace gpuscope::rules
