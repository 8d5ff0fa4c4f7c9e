#include "cli/dmon_verb.h"

#include <gtest/gtest.h>

#include "cli/info_verb.h"
#include "cli/list_verb.h"

namespace gpuscope::cli {
namespace {

using namespace std::chrono_literals;

template <class T>
void expect_usage(const std::expected<T, ParseExit>& r, const std::string& text) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 2);
  EXPECT_EQ(r.error().text, text);
}

std::expected<DmonOptions, ParseExit> parse_dmon(std::vector<std::string> args) { return parse_dmon_args(args); }

TEST(DmonArgs, Defaults) {
  auto r = parse_dmon({});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->groups, "puc");
  EXPECT_EQ(r->delay, 1s);
  EXPECT_FALSE(r->count.has_value());
  EXPECT_FALSE(r->json);
}

TEST(DmonArgs, AllGroupsDelayCount) {
  auto r = parse_dmon({"-s", "pucvmet", "-d", "5", "-c", "12", "--format", "json", "-i", "1"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->groups, "pucvmet");
  EXPECT_EQ(r->delay, 5s);
  EXPECT_EQ(r->count, 12);
  EXPECT_TRUE(r->json);
  EXPECT_EQ(r->ids, "1");
}

TEST(DmonArgs, GroupLettersAreValidated) {
  expect_usage(parse_dmon({"-s", "puq"}), "unknown metric group 'q' in -s 'puq' (any of pucvmet)");
  expect_usage(parse_dmon({"-s", "P"}), "unknown metric group 'P' in -s 'P' (any of pucvmet)");
  expect_usage(parse_dmon({"-s", ""}), "empty metric group list in -s (any of pucvmet)");
}

TEST(DmonArgs, DelayAndCountMustBePositiveWholeNumbers) {
  expect_usage(parse_dmon({"-d", "0"}), "invalid value '0' for -d (a whole number of seconds > 0)");
  expect_usage(parse_dmon({"-d", "0.5"}), "invalid value '0.5' for -d (a whole number of seconds > 0)");
  expect_usage(parse_dmon({"-c", "x"}), "invalid value 'x' for -c (a count > 0)");
  expect_usage(parse_dmon({"-c", "-1"}), "invalid value '-1' for -c (a count > 0)");
}

TEST(DmonArgs, FormatIsTextOrJson) {
  expect_usage(parse_dmon({"--format", "csv"}), "unknown format 'csv' in --format (text or json)");
}

TEST(ListArgs, Format) {
  std::vector<std::string> json{"--format=json"};
  auto r = parse_list_args(json);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->json);
  std::vector<std::string> bad{"--format=yaml"};
  expect_usage(parse_list_args(bad), "unknown format 'yaml' in --format (text or json)");
}

TEST(InfoArgs, FormatAndIds) {
  std::vector<std::string> args{"--format", "json", "-i", "0,1"};
  auto r = parse_info_args(args);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->json);
  EXPECT_EQ(r->ids, "0,1");
  std::vector<std::string> bad{"-i", ","};
  expect_usage(parse_info_args(bad), "empty GPU id in -i");
}

}  // namespace
}  // namespace gpuscope::cli
