#include "cli/query_verb.h"

#include <gtest/gtest.h>

#include "export/gpu_query.h"

namespace gpuscope::cli {
namespace {

using namespace std::chrono_literals;

std::expected<QueryOptions, ParseExit> parse_query(std::vector<std::string> args) { return parse_query_args(args); }

void expect_usage(const std::expected<QueryOptions, ParseExit>& r, const std::string& text) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 2);
  EXPECT_EQ(r.error().text, text);
}

TEST(QueryArgs, GpuQueryDefaultsToCsvWithHeaderAndUnits) {
  auto r = parse_query({"--query-gpu=index,name,memory.used"});
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->apps);
  EXPECT_EQ(r->gpu_columns.size(), 3u);
  EXPECT_FALSE(r->json);
  EXPECT_TRUE(r->csv.header);
  EXPECT_TRUE(r->csv.units);
  EXPECT_FALSE(r->loop.has_value());
}

TEST(QueryArgs, HelpQueryGpuListsEveryNameItsSpellingsAndMeaningAndExitsZero) {
  auto r = parse_query({"--help-query-gpu"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 0);
  const std::string& text = r.error().text;
  EXPECT_TRUE(text.starts_with("List of valid properties to query for the switch \"--query-gpu=\":\n\n")) << text;
  for (const auto& name : exporter::gpu_query_names()) {
    const auto at = text.find("\n\"" + name + "\"");
    ASSERT_NE(at, std::string::npos) << name;
    // Its meaning on the next line, not an empty one.
    const auto line_end = text.find('\n', at + 1);
    ASSERT_NE(line_end, std::string::npos);
    EXPECT_NE(text[line_end + 1], '\n') << name << " has no description";
  }
  EXPECT_NE(text.find("\"clocks.current.sm\" or \"clocks.sm\"\n"), std::string::npos) << "aliases are named";
  EXPECT_NE(text.find("\"name\" or \"gpu_name\"\n"), std::string::npos);
  EXPECT_NE(text.find("\"DCGM_FI_PROF_SM_ACTIVE\"\n"), std::string::npos) << "the DCGM columns are listed";
  EXPECT_EQ(text.find("\"pcie.replay_counter\""), std::string::npos);
}

TEST(QueryArgs, SpaceSeparatedValuesToo) {
  auto r = parse_query({"--query-gpu", "index", "--format", "json"});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->json);
}

TEST(QueryArgs, CsvModifiersInAnyOrder) {
  auto r = parse_query({"--query-gpu=index", "--format=nounits,csv,noheader"});
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->csv.header);
  EXPECT_FALSE(r->csv.units);
}

TEST(QueryArgs, JsonTakesNoCsvModifiers) {
  expect_usage(parse_query({"--query-gpu=index", "--format=json,noheader"}), "noheader and nounits apply to --format=csv only");
}

TEST(QueryArgs, FormatMustNameCsvOrJson) {
  expect_usage(parse_query({"--query-gpu=index", "--format=noheader"}), "--format 'noheader' must name one of csv or json");
  expect_usage(parse_query({"--query-gpu=index", "--format=csv,xml"}),
               "unknown format 'xml' in --format (csv[,noheader][,nounits] or json)");
}

TEST(QueryArgs, UnknownGpuFieldIsNamed) {
  expect_usage(parse_query({"--query-gpu=index,temprature.gpu"}), "unknown field 'temprature.gpu' in --query-gpu");
  expect_usage(parse_query({"--query-gpu=index,"}), "empty field name in --query-gpu");
}

TEST(QueryArgs, ComputeApps) {
  auto r = parse_query({"--query-compute-apps=pid,process_name,used_memory,gpu_uuid,gpu_bus_id"});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->apps);
  EXPECT_EQ(r->app_columns.size(), 5u);
  expect_usage(parse_query({"--query-compute-apps=pid,name"}), "unknown field 'name' in --query-compute-apps");
}

TEST(QueryArgs, ExactlyOneQuery) {
  expect_usage(parse_query({}), "query needs --query-gpu=NAMES, --query-compute-apps=NAMES, --query-remapped-rows=NAMES, "
                                "--query-retired-pages=NAMES or --query-mig=NAMES");
  expect_usage(parse_query({"--query-gpu=index", "--query-compute-apps=pid"}),
               "--query-gpu and --query-compute-apps cannot be combined");
}

TEST(QueryArgs, LoopSeconds) {
  auto r = parse_query({"--query-gpu=index", "-l", "5"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->loop, 5000ms);
  auto l = parse_query({"--query-gpu=index", "--loop=2"});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->loop, 2000ms);
}

TEST(QueryArgs, LoopMillisecondsNvidiaSmiSpelling) {
  for (auto args : {std::vector<std::string>{"--query-gpu=index", "-lms", "250"},
                    std::vector<std::string>{"--query-gpu=index", "-lms=250"},
                    std::vector<std::string>{"--query-gpu=index", "--loop-ms", "250"}}) {
    auto r = parse_query(args);
    ASSERT_TRUE(r.has_value()) << args[1];
    EXPECT_EQ(r->loop, 250ms);
  }
}

TEST(QueryArgs, BadLoopValues) {
  expect_usage(parse_query({"--query-gpu=index", "-l", "0"}), "invalid value '0' for -l (a whole number of seconds > 0)");
  expect_usage(parse_query({"--query-gpu=index", "-l", "abc"}), "invalid value 'abc' for -l (a whole number of seconds > 0)");
  expect_usage(parse_query({"--query-gpu=index", "-l", "1.5"}), "invalid value '1.5' for -l (a whole number of seconds > 0)");
  expect_usage(parse_query({"--query-gpu=index", "-lms", "-5"}),
               "invalid value '-5' for -lms (a whole number of milliseconds > 0)");
  expect_usage(parse_query({"--query-gpu=index", "-l", "1", "-lms", "5"}), "-l and -lms cannot be combined");
}

TEST(QueryArgs, GpuIdsAreKeptForLater) {
  auto r = parse_query({"--query-gpu=index", "-i", "0,GPU-abc,0000:18:00.0"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ids, "0,GPU-abc,0000:18:00.0");
  expect_usage(parse_query({"--query-gpu=index", "-i", "0,,1"}), "empty GPU id in -i");
  expect_usage(parse_query({"--query-gpu=index", "-i", ""}), "empty GPU id in -i");
}

TEST(QueryArgs, HelpIsNotAnError) {
  auto r = parse_query({"--help"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 0);
  EXPECT_NE(r.error().text.find("temperature.gpu"), std::string::npos);
}

TEST(QueryArgs, StrayPositionalIsRejected) {
  auto r = parse_query({"--query-gpu=index", "extra"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 2);
  EXPECT_NE(r.error().text.find("extra"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::cli
