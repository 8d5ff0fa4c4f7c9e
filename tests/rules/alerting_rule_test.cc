#include "rules/alerting_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "promql/engine.h"
#include "rules/rule_group.h"
#include "store/series_set.h"

namespace gpuscope::rules {
namespace {

constexpr std::int64_t kMinute = 60'000;

RuleGroupDefinition group_of(std::string_view yaml) {
  auto file = parse_rule_file(yaml, "t.yml");
  EXPECT_TRUE(file) << (file ? "" : file.error().front());
  return file->groups.at(0);
}

class SetAppender : public SampleAppender {
 public:
  explicit SetAppender(store::SeriesSet& set) : set_(set) {}
  std::expected<void, std::string> append(const store::Labels& labels, std::int64_t t, double v) override {
    writes.push_back({labels, v});
    if (!set_.add(labels, t, v)) return std::unexpected("out of order");
    return {};
  }
  std::vector<RuleSample> writes;

 private:
  store::SeriesSet& set_;
};

class AlertingRuleTest : public ::testing::Test {
 protected:
  // temp{gpu="0"}: one sample a minute, as given.
  void load_temperature(const std::vector<double>& per_minute) {
    for (std::size_t i = 0; i < per_minute.size(); ++i) {
      data_.add(store::Labels{{"__name__", "temp"}, {"gpu", "0"}}, static_cast<std::int64_t>(i) * kMinute, per_minute[i]);
    }
  }
  EvaluationContext ctx() {
    EvaluationContext c;
    c.engine = &engine_;
    c.data = &data_;
    c.external_labels = store::Labels{{"cluster", "c1"}};
    return c;
  }
  AlertingRule rule(std::string_view extra = "") {
    std::string yaml = "groups:\n- name: g\n  rules:\n  - alert: GpuHot\n    expr: temp > 85\n    for: 2m\n"
                       "    labels: {severity: warning}\n"
                       "    annotations: {summary: 'GPU {{ $labels.gpu }} at {{ $value }} in {{ $externalLabels.cluster }}'}\n";
    yaml += extra;
    auto def = group_of(yaml).rules.at(0);
    return AlertingRule(def);
  }
  store::SeriesSet data_;
  promql::Engine engine_;
};

TEST_F(AlertingRuleTest, PendingThenFiringAfterForThenResolved) {
  load_temperature({90, 91, 92, 80, 80});
  AlertingRule r = rule();
  auto at0 = r.evaluate(ctx(), 0, 0);
  ASSERT_TRUE(at0) << at0.error();
  ASSERT_EQ(r.alerts().size(), 1u);
  Alert a = r.alerts()[0];
  EXPECT_EQ(a.state, AlertState::kPending);
  EXPECT_EQ(a.labels, (store::Labels{{"alertname", "GpuHot"}, {"gpu", "0"}, {"severity", "warning"}}));
  EXPECT_EQ(a.annotations.get("summary"), "GPU 0 at 90 in c1");
  // ALERTS and ALERTS_FOR_STATE, as Prometheus writes them.
  ASSERT_EQ(at0->size(), 2u);
  store::Labels alerts_series = a.labels;
  alerts_series.set("__name__", "ALERTS");
  alerts_series.set("alertstate", "pending");
  store::Labels for_state = a.labels;
  for_state.set("__name__", "ALERTS_FOR_STATE");
  EXPECT_THAT(*at0, ::testing::UnorderedElementsAre(
                        ::testing::AllOf(::testing::Field(&RuleSample::labels, alerts_series), ::testing::Field(&RuleSample::value, 1.0)),
                        ::testing::AllOf(::testing::Field(&RuleSample::labels, for_state), ::testing::Field(&RuleSample::value, 0.0))));

  ASSERT_TRUE(r.evaluate(ctx(), 1 * kMinute, 0));
  EXPECT_EQ(r.alerts()[0].state, AlertState::kPending);
  EXPECT_EQ(r.alerts()[0].annotations.get("summary"), "GPU 0 at 91 in c1");  // refreshed each time
  auto at2 = r.evaluate(ctx(), 2 * kMinute, 0);
  ASSERT_TRUE(at2);
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  EXPECT_EQ(r.alerts()[0].fired_at_ms, 2 * kMinute);
  EXPECT_EQ(r.alerts()[0].active_at_ms, 0);
  EXPECT_EQ(r.alerts()[0].value, 92);

  auto at3 = r.evaluate(ctx(), 3 * kMinute, 0);
  ASSERT_TRUE(at3);
  EXPECT_TRUE(at3->empty());  // no ALERTS sample for a resolved alert
  ASSERT_EQ(r.alerts().size(), 1u);  // kept for the resolved retention
  EXPECT_EQ(r.alerts()[0].state, AlertState::kInactive);
  EXPECT_EQ(r.alerts()[0].resolved_at_ms, 3 * kMinute);
  ASSERT_TRUE(r.evaluate(ctx(), 3 * kMinute + kResolvedRetentionMs, 0));
  EXPECT_EQ(r.alerts().size(), 1u);
  ASSERT_TRUE(r.evaluate(ctx(), 3 * kMinute + kResolvedRetentionMs + 1, 0));
  EXPECT_TRUE(r.alerts().empty());
}

TEST_F(AlertingRuleTest, PendingAlertThatGoesAwayIsForgotten) {
  load_temperature({90, 80, 90, 90});
  AlertingRule r = rule();
  ASSERT_TRUE(r.evaluate(ctx(), 0, 0));
  ASSERT_TRUE(r.evaluate(ctx(), kMinute, 0));
  EXPECT_TRUE(r.alerts().empty());
  ASSERT_TRUE(r.evaluate(ctx(), 2 * kMinute, 0));
  EXPECT_EQ(r.alerts()[0].active_at_ms, 2 * kMinute);  // `for` starts again
  ASSERT_TRUE(r.evaluate(ctx(), 3 * kMinute, 0));
  EXPECT_EQ(r.alerts()[0].state, AlertState::kPending);
}

TEST_F(AlertingRuleTest, ZeroForFiresAtOnce) {
  load_temperature({90});
  auto def = group_of("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: temp > 85\n").rules.at(0);
  AlertingRule r(def);
  ASSERT_TRUE(r.evaluate(ctx(), 0, 0));
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
}

TEST_F(AlertingRuleTest, KeepFiringForHoldsAFiringAlert) {
  load_temperature({90, 90, 90, 80, 80, 80, 80});
  AlertingRule r = rule("    keep_firing_for: 2m\n");
  for (int m = 0; m <= 2; ++m) ASSERT_TRUE(r.evaluate(ctx(), m * kMinute, 0));
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  ASSERT_TRUE(r.evaluate(ctx(), 3 * kMinute, 0));
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  EXPECT_EQ(r.alerts()[0].keep_firing_since_ms, 3 * kMinute);
  ASSERT_TRUE(r.evaluate(ctx(), 4 * kMinute, 0));
  EXPECT_EQ(r.alerts()[0].state, AlertState::kFiring);
  ASSERT_TRUE(r.evaluate(ctx(), 5 * kMinute, 0));  // 2m since it stopped: resolved
  EXPECT_EQ(r.alerts()[0].state, AlertState::kInactive);
  EXPECT_EQ(r.alerts()[0].resolved_at_ms, 5 * kMinute);
}

TEST_F(AlertingRuleTest, LimitExceededClearsAlerts) {
  data_.add(store::Labels{{"__name__", "temp"}, {"gpu", "0"}}, 0, 90);
  data_.add(store::Labels{{"__name__", "temp"}, {"gpu", "1"}}, 0, 90);
  AlertingRule r = rule();
  auto result = r.evaluate(ctx(), 0, 1);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "exceeded limit of 1 with 2 alerts");
  EXPECT_TRUE(r.alerts().empty());
  EXPECT_TRUE(r.evaluate(ctx(), 0, 2));
}

TEST_F(AlertingRuleTest, SameLabelsAfterDroppingTheNameIsAnError) {
  data_.add(store::Labels{{"__name__", "temp"}, {"gpu", "0"}}, 0, 90);
  data_.add(store::Labels{{"__name__", "temp2"}, {"gpu", "0"}}, 0, 90);
  auto def = group_of("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: '{__name__=~\"temp.*\"} > 85'\n").rules.at(0);
  AlertingRule r(def);
  auto result = r.evaluate(ctx(), 0, 0);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), "vector contains metrics with the same labelset after applying alert labels");
}

TEST_F(AlertingRuleTest, SendsFiringAgainAfterResendDelayAndResolvedOnce) {
  load_temperature({90, 90, 90, 90, 90, 80, 80});
  AlertingRule r = rule();
  ASSERT_TRUE(r.evaluate(ctx(), 0, 0));
  EXPECT_TRUE(r.take_alerts_to_send(0, kMinute, kMinute).empty());  // pending is never sent
  ASSERT_TRUE(r.evaluate(ctx(), 2 * kMinute, 0));
  auto sent = r.take_alerts_to_send(2 * kMinute, kMinute, kMinute);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].valid_until_ms, 2 * kMinute + 4 * kMinute);
  ASSERT_TRUE(r.evaluate(ctx(), 3 * kMinute, 0));
  EXPECT_TRUE(r.take_alerts_to_send(3 * kMinute, kMinute, kMinute).empty());  // within the resend delay
  ASSERT_TRUE(r.evaluate(ctx(), 4 * kMinute, 0));
  EXPECT_EQ(r.take_alerts_to_send(4 * kMinute, kMinute, kMinute).size(), 1u);
  ASSERT_TRUE(r.evaluate(ctx(), 5 * kMinute, 0));
  sent = r.take_alerts_to_send(5 * kMinute, kMinute, kMinute);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].state, AlertState::kInactive);
  EXPECT_EQ(sent[0].resolved_at_ms, 5 * kMinute);
  ASSERT_TRUE(r.evaluate(ctx(), 6 * kMinute, 0));
  EXPECT_TRUE(r.take_alerts_to_send(6 * kMinute, kMinute, kMinute).empty());
}

TEST_F(AlertingRuleTest, RestoredAlertKeepsItsForProgress) {
  load_temperature({90, 90, 90});
  AlertingRule before = rule();
  ASSERT_TRUE(before.evaluate(ctx(), 0, 0));
  ASSERT_TRUE(before.evaluate(ctx(), kMinute, 0));
  AlertingRule after = rule();
  after.restore(before.alerts());
  ASSERT_TRUE(after.evaluate(ctx(), 2 * kMinute, 0));
  EXPECT_EQ(after.alerts()[0].state, AlertState::kFiring);
  EXPECT_EQ(after.alerts()[0].active_at_ms, 0);
}

TEST(RuleGroupTest, LaterRulesSeeEarlierOutputAndEndedSeriesGoStale) {
  store::SeriesSet data;
  const store::Labels a0{{"__name__", "util"}, {"gpu", "0"}};
  const store::Labels a1{{"__name__", "util"}, {"gpu", "1"}};
  data.add(a0, 0, 10);
  data.add(a1, 0, 30);
  data.add(a0, kMinute, 10);  // gpu 1 stops reporting
  RuleGroup group(group_of(R"(groups:
- name: g
  labels: {source: pack}
  rules:
  - record: gpu:util:x2
    expr: util * 2
  - alert: Busy
    expr: gpu:util:x2 > 50
)"),
                  kMinute);
  EXPECT_EQ(group.interval_ms(), kMinute);
  promql::Engine engine;
  EvaluationContext ctx;
  ctx.engine = &engine;
  ctx.data = &data;
  SetAppender out(data);
  EXPECT_EQ(group.evaluate(ctx, out, 0), 0u);
  const auto& busy = std::get<AlertingRule>(group.rules()[1].rule);
  ASSERT_EQ(busy.alerts().size(), 1u);  // saw gpu 1's recorded 60 in the same evaluation
  EXPECT_EQ(busy.alerts()[0].labels.get("gpu"), "1");
  EXPECT_EQ(busy.alerts()[0].labels.get("source"), "pack");
  EXPECT_EQ(group.rules()[0].status.health, RuleHealth::kOk);

  out.writes.clear();
  // util{gpu="1"} is still within the lookback at 1m, so make it end: a stale marker at 1m.
  data.add(a1, kMinute, store::stale_marker());
  EXPECT_EQ(group.evaluate(ctx, out, kMinute), 0u);
  bool stale_written = false;
  for (const RuleSample& w : out.writes) {
    if (w.labels.get("__name__") == "gpu:util:x2" && w.labels.get("gpu") == "1") stale_written = store::is_stale_marker(w.value);
  }
  EXPECT_TRUE(stale_written);
}

TEST(RuleGroupTest, AFailingRuleIsMarkedAndTheOthersStillRun) {
  store::SeriesSet data;
  data.add(store::Labels{{"__name__", "x"}, {"a", "1"}}, 0, 1);
  data.add(store::Labels{{"__name__", "y"}, {"a", "1"}}, 0, 1);
  RuleGroup group(group_of(R"(groups:
- name: g
  rules:
  - record: same
    expr: '{__name__=~"x|y"}'
  - record: fine
    expr: x
)"),
                  kMinute);
  promql::Engine engine;
  EvaluationContext ctx{&engine, &data, {}, ""};
  SetAppender out(data);
  EXPECT_EQ(group.evaluate(ctx, out, 0), 1u);
  EXPECT_EQ(group.rules()[0].status.health, RuleHealth::kError);
  EXPECT_EQ(group.rules()[0].status.last_error, "vector contains metrics with the same labelset after applying rule labels");
  EXPECT_EQ(group.rules()[1].status.health, RuleHealth::kOk);
}

}  // namespace
}  // namespace gpuscope::rules
