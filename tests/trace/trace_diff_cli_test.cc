// `gpuscope trace diff` as a user runs it: the real binary, its exit codes, the text and the JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/command_runner.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

e2e::CommandResult trace_diff_cli(std::vector<std::string> args) {
  args.insert(args.begin(), {GPUSCOPE_EXE, "trace", "diff"});
  return e2e::run_command(args, {{"LD_LIBRARY_PATH", "/nonexistent"}}, 120);
}

std::string trace_diff_h100(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/") + name;
}

std::size_t trace_diff_lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST(TraceDiffCli, TheRealTraceAgainstItselfHasNoChanges) {
  const std::string trace = testing::conformance_trace("trace_diff__control__control.json.gz");
  auto r = trace_diff_cli({trace, trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("figures per step: totals divided by the ProfilerStep count (BEFORE 6 steps, AFTER 6)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("No changes:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("warning:"), std::string::npos) << r.out;

  auto json = trace_diff_cli({trace, trace, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_TRUE(doc["no_changes"].get<bool>());
  EXPECT_EQ(doc["per"], "step");
  EXPECT_EQ(doc["before"]["steps"], 6);
  EXPECT_EQ(doc["metrics"]["busy_seconds"]["change"], 0.0);
  EXPECT_TRUE(doc["biggest_changes"].empty());
  EXPECT_EQ(doc["tables"][0]["kind"], "kernel");
  EXPECT_EQ(
      doc["tables"][0]["added"].get<int>() + doc["tables"][0]["removed"].get<int>() + doc["tables"][0]["changed"].get<int>(), 0);
  EXPECT_GT(doc["tables"][0]["unchanged"].get<int>(), 10);
}

TEST(TraceDiffCli, TwoUnrelatedH100TracesWarnAndShowTheBiggestChange) {
  auto r = trace_diff_cli(
      {trace_diff_h100("trace_launch_bound.json.gz"), trace_diff_h100("trace_compute_bound.json.gz"), "--top", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nwarning: BEFORE and AFTER have no kernel name in common"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Biggest changes (per step):\n  +"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is new ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("... 1 more changed rows (--top N shows more)"), std::string::npos) << r.out;

  auto json = trace_diff_cli({trace_diff_h100("trace_launch_bound.json.gz"), trace_diff_h100("trace_compute_bound.json.gz"),
                              "--format", "json", "--per", "trace"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["per"], "trace");
  EXPECT_EQ(doc["before_divisor"], 1.0);
  EXPECT_FALSE(doc["warnings"].empty());
  EXPECT_LT(doc["metrics"]["step_median_seconds"]["change"].get<double>(), 0);
}

TEST(TraceDiffCli, AMissingOrBadSideIsOneLineNamingTheSide) {
  testing::TempDir dir;
  const std::string good = testing::conformance_trace("trace_filter__sampled_rank-0.json.gz");
  auto after = trace_diff_cli({good, dir.path() + "/nope.json"});
  EXPECT_EQ(after.exit_code, 1);
  EXPECT_TRUE(after.out.empty()) << after.out;
  EXPECT_EQ(after.err, "gpuscope: trace diff: AFTER: " + dir.path() + "/nope.json: no such file or directory\n");

  const std::string truncated = dir.write("cut.json", R"({"traceEvents": [{"ph": "X", "ts": 1)");
  auto before = trace_diff_cli({truncated, good});
  EXPECT_EQ(before.exit_code, 1);
  EXPECT_TRUE(before.err.starts_with("gpuscope: trace diff: BEFORE: " + truncated + ": ")) << before.err;
  EXPECT_NE(before.err.find("truncated"), std::string::npos) << before.err;
  EXPECT_EQ(trace_diff_lines(before.err), 1u) << before.err;
  EXPECT_EQ(trace_diff_cli({truncated, good, "--lenient"}).exit_code, 0);

  // A directory that is not one run is a wrong request, as for `trace`.
  auto mixed = trace_diff_cli({GPUSCOPE_SOURCE_DIR "/../shared/conformance/traces/", good});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_TRUE(mixed.err.starts_with("gpuscope: trace diff: BEFORE: ")) << mixed.err;
  EXPECT_EQ(trace_diff_lines(mixed.err), 1u) << mixed.err;
}

TEST(TraceDiffCli, BadFlagsExitTwo) {
  const std::string good = testing::conformance_trace("trace_filter__sampled_rank-0.json.gz");
  EXPECT_EQ(trace_diff_cli({}).exit_code, 2);
  EXPECT_EQ(trace_diff_cli({good}).exit_code, 2);
  EXPECT_EQ(trace_diff_cli({good, good, "--per", "minute"}).exit_code, 2);
  EXPECT_EQ(trace_diff_cli({good, good, "--top", "0"}).exit_code, 2);
  EXPECT_EQ(trace_diff_cli({good, good, "--format", "xml"}).exit_code, 2);
  EXPECT_EQ(trace_diff_cli({good, good, "--rank", "7"}).exit_code, 2);  // no such rank on either side
  auto help = trace_diff_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("BEFORE"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace gpuscope::trace
