#include "rules/rule_unit_tests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpuscope::rules {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class RuleUnitTests : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope_rule_unit_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    write("rules.yml", R"(groups:
- name: gpu
  rules:
  - record: gpu:temp:max
    expr: max by (host) (temp)
  - alert: GpuHot
    expr: temp > 85
    for: 2m
    labels:
      severity: warning
    annotations:
      summary: 'GPU {{ $labels.gpu }} on {{ $labels.host }} is at {{ $value }} C ({{ $externalLabels.site }})'
)");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  int run(const std::string& test_file) {
    out_.str("");
    err_.str("");
    return run_rule_unit_tests({test_file}, out_, err_);
  }
  fs::path dir_;
  std::ostringstream out_, err_;
};

constexpr const char* kPassing = R"(rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    external_labels: {site: lab}
    input_series:
      - series: 'temp{gpu="0", host="a"}'
        values: '80 90 90 90 90 70'
      - series: 'temp{gpu="1", host="a"}'
        values: '60x5'
    alert_rule_test:
      - eval_time: 1m
        alertname: GpuHot
        exp_alerts: []
      - eval_time: 3m
        alertname: GpuHot
        exp_alerts:
          - exp_labels: {severity: warning, gpu: "0", host: a}
            exp_annotations:
              summary: 'GPU 0 on a is at 90 C (lab)'
      - eval_time: 5m
        alertname: GpuHot
    promql_expr_test:
      - expr: gpu:temp:max
        eval_time: 2m
        exp_samples:
          - labels: 'gpu:temp:max{host="a"}'
            value: 90
      - expr: ALERTS{alertname="GpuHot"}
        eval_time: 3m
        exp_samples:
          - labels: 'ALERTS{alertname="GpuHot", alertstate="firing", gpu="0", host="a", severity="warning"}'
            value: 1
)";

TEST_F(RuleUnitTests, PassingFileSaysSuccess) {
  EXPECT_EQ(run(write("t.yml", kPassing)), 0) << err_.str();
  EXPECT_EQ(out_.str(), "Unit Testing:  " + (dir_ / "t.yml").string() + "\n  SUCCESS\n\n");
}

TEST_F(RuleUnitTests, WrongExpectedAlertShowsExpAndGot) {
  std::string text = kPassing;
  text.replace(text.find("exp_labels: {severity: warning"), 30, "exp_labels: {severity: critical");
  EXPECT_EQ(run(write("t.yml", text)), 1);
  EXPECT_THAT(err_.str(), HasSubstr("  FAILED:\n    alertname: GpuHot, time: 3m, \n        exp:[\n            0:\n"));
  EXPECT_THAT(err_.str(), HasSubstr("Labels:{alertname=\"GpuHot\", gpu=\"0\", host=\"a\", severity=\"critical\"}"));
  EXPECT_THAT(err_.str(), HasSubstr("got:[\n            0:\n              Labels:{alertname=\"GpuHot\", gpu=\"0\", host=\"a\", severity=\"warning\"}"));
  EXPECT_THAT(err_.str(), HasSubstr("Annotations:{summary=\"GPU 0 on a is at 90 C (lab)\"}"));
}

TEST_F(RuleUnitTests, AlertExpectedBeforeForElapsedFails) {
  std::string text = kPassing;
  text.replace(text.find("eval_time: 3m"), 13, "eval_time: 2m");
  EXPECT_EQ(run(write("t.yml", text)), 1);
  EXPECT_THAT(err_.str(), HasSubstr("alertname: GpuHot, time: 2m"));
  EXPECT_THAT(err_.str(), HasSubstr("got:[]"));
}

TEST_F(RuleUnitTests, WrongSampleValueShowsPromtoolsDiff) {
  std::string text = kPassing;
  text.replace(text.find("value: 90"), 9, "value: 91");
  EXPECT_EQ(run(write("t.yml", text)), 1);
  EXPECT_THAT(err_.str(), HasSubstr("    expr: \"gpu:temp:max\", time: 2m,\n        exp: {__name__=\"gpu:temp:max\", host=\"a\"} 9.1E+01\n"
                                    "        got: {__name__=\"gpu:temp:max\", host=\"a\"} 9E+01\n"));
}

TEST_F(RuleUnitTests, EvaluationTimeBetweenStepsUsesTheEarlierEvaluation) {
  std::string text = kPassing;
  text.replace(text.find("eval_time: 3m"), 13, "eval_time: 3m30s");
  EXPECT_EQ(run(write("t.yml", text)), 0) << err_.str();
}

TEST_F(RuleUnitTests, RuleEvaluationErrorIsReported) {
  write("bad_rules.yml", "groups:\n- name: g\n  rules:\n  - record: same\n    expr: '{__name__=~\"x|y\"}'\n");
  EXPECT_EQ(run(write("t.yml", R"(rule_files: [bad_rules.yml]
tests:
  - input_series:
      - {series: 'x{a="1"}', values: '1 1'}
      - {series: 'y{a="1"}', values: '1 1'}
    promql_expr_test:
      - {expr: same, eval_time: 1m}
)")),
            1);
  EXPECT_THAT(err_.str(), HasSubstr("    rule: same, time: 0s, err: vector contains metrics with the same labelset"));
}

TEST_F(RuleUnitTests, BadInputIsOneClearFailure) {
  EXPECT_EQ(run(write("t.yml", "rule_files: [rules.yml]\ntests:\n  - interval: 1m\n    input_series:\n      - series: 'x'\n        values: '1 two'\n")), 1);
  EXPECT_THAT(err_.str(), HasSubstr("t.yml: 5:9: input series \"x\": "));
  EXPECT_EQ(run(write("t.yml", "rule_files: [rules.yml]\ntests:\n  - intervals: 1m\n")), 1);
  EXPECT_THAT(err_.str(), HasSubstr("field intervals not found in a test group"));
  EXPECT_EQ(run(write("t.yml", "tests:\n  - alert_rule_test:\n      - eval_time: 1m\n")), 1);
  EXPECT_THAT(err_.str(), HasSubstr("an item under alert_rule_test misses required attribute alertname at eval_time 1m"));
  EXPECT_EQ(run((dir_ / "missing.yml").string()), 1);
  EXPECT_THAT(err_.str(), HasSubstr("missing.yml"));
  write("broken_rules.yml", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: 'up =='\n");
  EXPECT_EQ(run(write("t.yml", "rule_files: [broken_rules.yml]\ntests: []\n")), 1);
  EXPECT_THAT(err_.str(), HasSubstr("could not parse expression"));
}

TEST_F(RuleUnitTests, GroupEvalOrderDecidesWhatARuleSees) {
  write("order.yml", R"(groups:
- name: second
  rules:
  - record: b
    expr: a + 1
- name: first
  rules:
  - record: a
    expr: x
)");
  const std::string test = R"(rule_files: [order.yml]
group_eval_order: [first, second]
tests:
  - input_series:
      - {series: 'x', values: '1'}
    promql_expr_test:
      - expr: b
        eval_time: 0m
        exp_samples:
          - {labels: 'b', value: 2}
)";
  EXPECT_EQ(run(write("t.yml", test)), 0) << err_.str();
  std::string reversed = test;
  reversed.replace(reversed.find("[first, second]"), 15, "[second, first]");
  EXPECT_EQ(run(write("t.yml", reversed)), 1);  // b ran before a existed
}

}  // namespace
}  // namespace gpuscope::rules
