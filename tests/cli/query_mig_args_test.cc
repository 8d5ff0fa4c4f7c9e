// `query --query-mig`: its flags, its help and its one-line usage errors.
#include <gtest/gtest.h>

#include "cli/query_verb.h"

namespace gpuscope::cli {
namespace {

std::expected<QueryOptions, ParseExit> parse_query_mig(std::vector<std::string> args) { return parse_query_args(args); }

void expect_query_mig_usage(const std::expected<QueryOptions, ParseExit>& r, const std::string& text) {
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 2);
  EXPECT_EQ(r.error().text, text);
}

TEST(QueryMigArgs, NamesResolveInOrderWithCsvOrJson) {
  auto r = parse_query_mig({"--query-mig=gpu_index, mig.index,profile,memory.used", "--format=csv,noheader"});
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->mig);
  EXPECT_FALSE(r->apps);
  EXPECT_EQ(r->mig_columns.size(), 4u);
  EXPECT_EQ(exporter::mig_query_csv_header(r->mig_columns), "gpu_index, mig.index, profile, memory.used [MiB]\n");
  EXPECT_FALSE(r->csv.header);
  auto json = parse_query_mig({"--query-mig=uuid", "--format=json", "-l", "5"});
  ASSERT_TRUE(json.has_value());
  EXPECT_TRUE(json->json);
  EXPECT_EQ(json->loop, std::chrono::milliseconds(5000));
}

TEST(QueryMigArgs, UnknownOrEmptyNameIsOneLineExitTwo) {
  expect_query_mig_usage(parse_query_mig({"--query-mig=gpu_index,utilization.gpu"}),
                         "unknown field 'utilization.gpu' in --query-mig (see --help-query-mig)");
  expect_query_mig_usage(parse_query_mig({"--query-mig=gpu_index,"}), "empty field name in --query-mig");
}

TEST(QueryMigArgs, CannotBeCombinedWithTheOtherQueries) {
  expect_query_mig_usage(parse_query_mig({"--query-gpu=index", "--query-mig=uuid"}),
                         "--query-gpu and --query-mig cannot be combined");
  expect_query_mig_usage(parse_query_mig({"-q", "--query-mig=uuid"}), "-q and --query-mig cannot be combined");
}

TEST(QueryMigArgs, HelpQueryMigListsTheNamesAndExitsZero) {
  auto r = parse_query_mig({"--help-query-mig"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, 0);
  EXPECT_TRUE(r.error().text.starts_with("Fields for --query-mig")) << r.error().text;
  EXPECT_NE(r.error().text.find("\n  memory.used [MiB]"), std::string::npos);
  EXPECT_NE(r.error().text.find("\n  compute_instance_id"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::cli
