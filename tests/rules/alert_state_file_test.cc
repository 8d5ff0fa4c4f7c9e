#include "rules/alert_state_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "store/series_set.h"

namespace gpuscope::rules {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t kMin = 60'000;

class NullAppender : public SampleAppender {
 public:
  std::expected<void, std::string> append(const store::Labels&, std::int64_t, double) override { return {}; }
};

std::vector<RuleGroupDefinition> groups(std::string_view expr = "temp > 85") {
  auto file = parse_rule_file(fmt::format(R"(groups:
- name: g
  rules:
  - alert: SlowHot
    expr: {}
    for: 10m
  - alert: Hot
    expr: {}
)",
                                          expr, expr),
                              "gpu.rules.yml");
  EXPECT_TRUE(file);
  return file->groups;
}

class AlertStateFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("gpuscope_alert_state_" + std::to_string(::getpid()) + "_" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    for (int m = 0; m <= 60; ++m) data_.add(store::Labels{{"__name__", "temp"}, {"gpu", "0"}}, m * kMin, 90);
  }
  void TearDown() override {
    fs::remove(path_);
    fs::remove(path_ + ".tmp");
  }
  // A manager that evaluated every minute from 0 to `until` (inclusive).
  std::unique_ptr<RuleManager> evaluated(std::int64_t until) {
    auto m = std::make_unique<RuleManager>(groups(), RuleManagerOptions{});
    for (std::int64_t t = 0; t <= until; t += kMin) m->evaluate_due(data_, out_, t);
    return m;
  }
  static Alert alert_of(const RuleManager& m, std::size_t rule) {
    Alert a;
    m.visit([&](const std::vector<RuleGroup>& g) { a = std::get<AlertingRule>(g[0].rules()[rule].rule).alerts().at(0); });
    return a;
  }
  std::string path_;
  store::SeriesSet data_;
  NullAppender out_;
};

TEST_F(AlertStateFileTest, RestartKeepsForProgressAndSentFiringAlerts) {
  auto before_ptr = evaluated(4 * kMin);
  RuleManager& before = *before_ptr;
  before.update([](std::vector<RuleGroup>& g) {
    (void)std::get<AlertingRule>(g[0].rules()[1].rule).take_alerts_to_send(4 * kMin, kMin, kMin);
  });
  AlertStateFile file(path_);
  ASSERT_TRUE(file.save(before, 4 * kMin));

  // Down for 3 minutes.
  RuleManager after(groups(), RuleManagerOptions{});
  auto restored = AlertStateFile(path_).restore(after, 7 * kMin);
  ASSERT_TRUE(restored) << restored.error();
  EXPECT_EQ(*restored, 2u);
  EXPECT_EQ(alert_of(after, 0).state, AlertState::kPending);
  EXPECT_EQ(alert_of(after, 0).active_at_ms, 3 * kMin);  // 0 + 3 minutes down: 4 of 10 minutes done
  const Alert hot = alert_of(after, 1);
  EXPECT_EQ(hot.state, AlertState::kFiring);
  EXPECT_EQ(hot.last_sent_at_ms, 4 * kMin);
  after.evaluate_due(data_, out_, 7 * kMin);
  after.update([](std::vector<RuleGroup>& g) {
    // Sent at 4m, resend delay 10m: nothing to send again right after the restart.
    EXPECT_TRUE(std::get<AlertingRule>(g[0].rules()[1].rule).take_alerts_to_send(7 * kMin, 10 * kMin, kMin).empty());
  });
  for (std::int64_t t = 8 * kMin; t <= 12 * kMin; t += kMin) after.evaluate_due(data_, out_, t);
  EXPECT_EQ(alert_of(after, 0).state, AlertState::kPending);
  after.evaluate_due(data_, out_, 13 * kMin);
  EXPECT_EQ(alert_of(after, 0).state, AlertState::kFiring);
}

TEST_F(AlertStateFileTest, LongOutageOrChangedRuleStartsAfresh) {
  auto before = evaluated(2 * kMin);
  ASSERT_TRUE(AlertStateFile(path_).save(*before, 2 * kMin));
  RuleManager after(groups(), RuleManagerOptions{});
  auto restored = AlertStateFile(path_).restore(after, 2 * kMin + kAlertStateOutageToleranceMs + 1);
  ASSERT_TRUE(restored);
  EXPECT_EQ(*restored, 0u);

  RuleManager changed(groups("temp > 80"), RuleManagerOptions{});
  restored = AlertStateFile(path_).restore(changed, 3 * kMin);
  ASSERT_TRUE(restored);
  EXPECT_EQ(*restored, 0u);
}

TEST_F(AlertStateFileTest, MissingFileIsNothingAndDamagedFileIsAnError) {
  RuleManager m(groups(), RuleManagerOptions{});
  auto none = AlertStateFile(path_).restore(m, 0);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u);
  std::ofstream(path_) << R"({"version":1,"saved_at_ms":0,"rules":[{"key":"gpu.rules.yml\ng\nHot\ntemp > 85","alerts":[{"labels":{}}]}]})";
  auto damaged = AlertStateFile(path_).restore(m, kMin);
  ASSERT_FALSE(damaged);
  EXPECT_NE(damaged.error().find("damaged alert state"), std::string::npos);
  std::ofstream(path_) << "{not json";
  EXPECT_FALSE(AlertStateFile(path_).restore(m, kMin));
}

TEST_F(AlertStateFileTest, SavesOnlyWhenStateChanged) {
  auto owned = evaluated(1 * kMin);
  RuleManager& m = *owned;
  AlertStateFile file(path_);
  ASSERT_TRUE(file.save(m, kMin));
  fs::remove(path_);
  m.evaluate_due(data_, out_, 2 * kMin);  // same states, new values
  ASSERT_TRUE(file.save(m, 2 * kMin));
  EXPECT_FALSE(fs::exists(path_));
  for (std::int64_t t = 3 * kMin; t <= 10 * kMin; t += kMin) m.evaluate_due(data_, out_, t);  // SlowHot fires
  ASSERT_TRUE(file.save(m, 10 * kMin));
  EXPECT_TRUE(fs::exists(path_));
}

}  // namespace
}  // namespace gpuscope::rules
