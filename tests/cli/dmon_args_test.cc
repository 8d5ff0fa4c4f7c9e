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

TEST(DmonArgs, FormatWordsAreNvidiaSmisPlusJson) {
  auto csv = parse_dmon({"--format", "csv,nounit"});
  ASSERT_TRUE(csv.has_value());
  EXPECT_TRUE(csv->layout.csv);
  EXPECT_FALSE(csv->layout.units);
  EXPECT_TRUE(csv->layout.names);
  EXPECT_FALSE(csv->json);
  auto text = parse_dmon({"--format=noheader"});
  ASSERT_TRUE(text.has_value());
  EXPECT_FALSE(text->layout.csv);
  EXPECT_FALSE(text->layout.names);
  EXPECT_TRUE(text->layout.units);
  auto both = parse_dmon({"--format", "noheader,csv,nounit"});
  ASSERT_TRUE(both.has_value());
  EXPECT_TRUE(both->layout.csv && !both->layout.names && !both->layout.units);
  expect_usage(parse_dmon({"--format", "csv,json"}), "--format 'csv,json': csv and json cannot be combined");
  expect_usage(parse_dmon({"--format", "json,nounit"}),
               "--format 'json,nounit': json has no header lines, so nounit and noheader do not apply");
  expect_usage(parse_dmon({"--format", "csv,nounits"}),
               "unknown format 'nounits' in --format (text, csv or json; csv and text take nounit and noheader)");
}

TEST(DmonArgs, DateAndTimeColumns) {
  auto dt = parse_dmon({"-o", "DT"});
  ASSERT_TRUE(dt.has_value());
  EXPECT_TRUE(dt->layout.time.date && dt->layout.time.time);
  auto t = parse_dmon({"-o", "T", "--format", "csv"});
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(!t->layout.time.date && t->layout.time.time);
  expect_usage(parse_dmon({"-o", "DX"}), "invalid value 'DX' for -o (D, T or DT)");
  expect_usage(parse_dmon({"-o", "dt"}), "invalid value 'dt' for -o (D, T or DT)");
  expect_usage(parse_dmon({"-o", "DT", "--format", "json"}),
               "-o adds columns to the text and CSV tables; --format json rows carry a timestamp");
}

TEST(DmonArgs, FileAndDcgmFields) {
  auto r = parse_dmon({"-f", "/tmp/x.log", "-e", "150,155,156"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->file, "/tmp/x.log");
  EXPECT_EQ(r->dcgm_fields, "150,155,156");
  expect_usage(parse_dmon({"-f", ""}), "empty file name for -f");
  expect_usage(parse_dmon({"-e", "150,155", "-s", "p"}),
               "-e and -s cannot be combined (-e picks DCGM fields, -s nvidia-smi's groups)");
  expect_usage(parse_dmon({"-e", "150", "--format", "csv"}), "-e prints dcgmi dmon's layout: --format and -o do not apply");
  expect_usage(parse_dmon({"-e", "150", "-o", "T"}), "-e prints dcgmi dmon's layout: --format and -o do not apply");
  expect_usage(parse_dmon({"-e", "150,x1"}), "invalid DCGM field id 'x1' in -e (comma-separated numbers)");
  expect_usage(parse_dmon({"-e", "150,,155"}), "empty DCGM field id in -e '150,,155'");
  auto unknown = parse_dmon({"-e", "150,9999"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, 2);
  EXPECT_TRUE(unknown.error().text.starts_with("unknown DCGM field id '9999' in -e (gpuscope reads 92, 100-102, "))
      << unknown.error().text;
  EXPECT_EQ(unknown.error().text.find('\n'), std::string::npos);
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
