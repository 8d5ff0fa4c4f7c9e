// `gpuscope rules check|test` on what a CI job may hand it: directories (expanded to their rule or
// test files, never read as a file), folders and files with nothing in them (an error, not a pass),
// files that cannot be read (the reason) and YAML the parser refuses (one line, file and position).
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace gpuscope::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::run_gpuscope;

const std::string kRulePackDir = std::string(GPUSCOPE_SOURCE_DIR) + "/rules";

class RulesVerb : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gpuscope_rules_verb_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

TEST_F(RulesVerb, CheckExpandsADirectoryToItsRuleFilesNotItsTests) {
  auto r = run_gpuscope({"rules", "check", kRulePackDir});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Checking " + kRulePackDir + "/gpu.rules.yml\n  SUCCESS: 48 rules found"));
  EXPECT_THAT(r.out, Not(HasSubstr("gpu.rules.test.yml")));
  EXPECT_THAT(r.out, Not(HasSubstr(": 0 rules found")));
}

TEST_F(RulesVerb, CheckOfAFileAndItsDirectoryReadsItOnce) {
  auto r = run_gpuscope({"rules", "check", kRulePackDir + "/gpu.rules.yml", kRulePackDir});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("Checking"), r.out.rfind("Checking")) << r.out;
}

TEST_F(RulesVerb, CheckOfAnEmptyDirectoryFails) {
  auto r = run_gpuscope({"rules", "check", dir_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(dir_.string() + ": no rule files (*.yml, *.yaml; *.test.yml are tests) in this directory"));
  // Tests alone are no rule files either.
  write("a.test.yml", "tests: []\n");
  EXPECT_EQ(run_gpuscope({"rules", "check", dir_.string()}).code, 1);
}

TEST_F(RulesVerb, CheckThatFindsNoRuleAtAllFails) {
  const std::string empty = write("empty.yml", "");
  const std::string no_groups = write("none.yml", "groups: []\n");
  auto r = run_gpuscope({"rules", "check", empty, no_groups});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("SUCCESS: 0 rules found"));  // each file is valid, as in promtool
  EXPECT_THAT(r.err, HasSubstr("gpuscope: no rules found in " + empty + ", " + no_groups + ": nothing was checked"));
  // One rule anywhere is enough.
  const std::string one = write("one.yml", "groups:\n  - name: g\n    rules:\n      - record: a:b\n        expr: vector(1)\n");
  EXPECT_EQ(run_gpuscope({"rules", "check", empty, one}).code, 0);
}

TEST_F(RulesVerb, CheckGivesTheReasonAFileCannotBeRead) {
  auto missing = run_gpuscope({"rules", "check", (dir_ / "missing.yml").string()});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr((dir_ / "missing.yml").string() + ": cannot be read: No such file or directory"));
}

TEST_F(RulesVerb, DeeplyNestedYamlIsOneLineNamingFileAndPosition) {
  const std::string deep = write("deep.yml", std::string(10000, '[') + "\n");
  for (const char* verb : {"check", "test"}) {
    auto r = run_gpuscope({"rules", verb, deep});
    EXPECT_EQ(r.code, 1) << verb;
    EXPECT_THAT(r.err, HasSubstr(deep + ": 2:1: nested too deeply")) << verb;
    EXPECT_THAT(r.err, Not(HasSubstr("bad file"))) << verb;
  }
}

TEST_F(RulesVerb, TestExpandsADirectoryToItsTestFiles) {
  auto r = run_gpuscope({"rules", "test", kRulePackDir});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Unit Testing:  " + kRulePackDir + "/gpu.rules.test.yml\n  SUCCESS"));
  EXPECT_THAT(r.err, Not(HasSubstr("internal error")));
}

TEST_F(RulesVerb, TestOfAnEmptyDirectoryOrAFileWithoutTestsFails) {
  auto r = run_gpuscope({"rules", "test", dir_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(dir_.string() + ": no rule test files (*.test.yml, *.test.yaml) in this directory"));
  const std::string none = write("none.test.yml", "rule_files: []\ntests: []\n");
  auto no_tests = run_gpuscope({"rules", "test", none});
  EXPECT_EQ(no_tests.code, 1);
  EXPECT_THAT(no_tests.err, HasSubstr(none + ": no tests in it"));
  const std::string empty = write("empty.test.yml", "");
  EXPECT_EQ(run_gpuscope({"rules", "test", empty}).code, 1);
}

TEST_F(RulesVerb, TestGivesTheReasonAFileCannotBeRead) {
  auto r = run_gpuscope({"rules", "test", (dir_ / "missing.test.yml").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr((dir_ / "missing.test.yml").string() + ": cannot be read: No such file or directory"));
}

}  // namespace
}  // namespace gpuscope::cli
