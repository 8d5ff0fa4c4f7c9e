// --rules (serve, backtest): an argument that yields no rule is a mistake to warn about; no rule from
// any argument is an error, since nothing would ever be evaluated.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/rule_evaluation_loop.h"
#include "cli/cli_runner.h"

namespace gpuscope::agent {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RuleLoading : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope_rule_loading_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "empty");
    good_ = (dir_ / "good.yml").string();
    std::ofstream(good_) << "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: vector(1)\n";
    none_ = (dir_ / "none.yml").string();
    std::ofstream(none_) << "groups: []\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string good_, none_;
};

TEST_F(RuleLoading, AnArgumentWithoutRulesIsNamedBesideOnesWithRules) {
  const std::string empty = (dir_ / "empty").string();
  auto loaded = load_rules({good_, empty, none_});
  ASSERT_TRUE(loaded) << loaded.error().at(0);
  EXPECT_EQ(loaded->rule_count, 1u);
  EXPECT_THAT(loaded->empty, ElementsAre("--rules " + empty + ": no rule files (*.yml, *.yaml) in this directory",
                                         "--rules " + none_ + ": no rules in it"));
}

TEST_F(RuleLoading, NoRuleFromAnyArgumentIsAnError) {
  const std::string empty = (dir_ / "empty").string();
  auto loaded = load_rules({empty, none_});
  ASSERT_FALSE(loaded);
  EXPECT_THAT(loaded.error(),
              ElementsAre("--rules " + empty + " " + none_ + ": no rules found, nothing would be evaluated"));
}

TEST_F(RuleLoading, BacktestWithNoRuleExitsTwo) {
  auto r = testing::run_gpuscope({"backtest", "--scenario", std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/xid.yaml",
                                  "--duration", "10m", "--rules", (dir_ / "empty").string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("no rules found, nothing would be evaluated"));
}

}  // namespace
}  // namespace gpuscope::agent
