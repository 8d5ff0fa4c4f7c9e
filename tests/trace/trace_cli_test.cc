// `gpuscope trace` as a user runs it: the real binary, its exit codes, the report and the JSON.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "e2e/command_runner.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using e2e::run_command;
using testing::conformance_trace;

e2e::CommandResult gpuscope(std::vector<std::string> args) {
  args.insert(args.begin(), {GPUSCOPE_EXE, "trace"});
  // No NVML anywhere: the verb must not need it.
  return run_command(args, {{"LD_LIBRARY_PATH", "/nonexistent"}}, 120);
}

TEST(TraceCli, ReportOnTheRealTrace) {
  auto r = gpuscope({conformance_trace("trace_diff__control__control.json.gz")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rank 3 of 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 3 (NVIDIA A100-PG509-200)"), std::string::npos);
  EXPECT_NE(r.out.find("host wait"), std::string::npos);
  EXPECT_NE(r.out.find("top 10 kernels"), std::string::npos);
  EXPECT_NE(r.out.find("Verdict: launch bound"), std::string::npos);
  EXPECT_NE(r.out.find("Fix: "), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;  // no progress bar when stderr is not a terminal
}

TEST(TraceCli, JsonInBaseUnits) {
  auto r = gpuscope({conformance_trace("trace_diff__control__control.json.gz"), "--format", "json", "--top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& rank = doc["ranks"][0];
  EXPECT_EQ(rank["rank"], 3);
  const auto& d = rank["devices"][0];
  EXPECT_NEAR(d["busy_seconds"].get<double>(), 0.388587, 1e-9);
  EXPECT_NEAR(d["busy_seconds"].get<double>() + d["idle_seconds"].get<double>(), d["window_seconds"].get<double>(), 1e-9);
  EXPECT_NEAR(d["idle_ratio"].get<double>(), 0.076007 / 0.464594, 1e-9);
  EXPECT_EQ(d["top_kernels"].size(), 3u);
  EXPECT_EQ(d["verdict"]["kind"], "launch_bound");
  EXPECT_TRUE(d["launch"].contains("launch_delay_mean_seconds"));
  EXPECT_TRUE(d["transfers"][0].contains("bandwidth_bytes_per_second"));
  EXPECT_EQ(rank["parse"]["json_bytes"], 34825284);
}

std::string conformance_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(TraceCli, DirectoryTableAndStraggler) {
  testing::TempDir dir;
  for (const char* name : {"trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"}) {
    dir.write(name, conformance_bytes(conformance_trace(name)));
  }
  auto r = gpuscope({dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 ranks of 128 (the other 126 are not in the directory)"), std::string::npos) << r.out;
  // Two steps a rank, 0.7% apart: it named rank 1 the straggler.
  EXPECT_EQ(r.out.find("Straggler:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No straggler: too few profiler steps to judge: rank 0 has 2"), std::string::npos) << r.out;
  auto json = gpuscope({dir.path(), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_FALSE(doc.contains("straggler"));
  EXPECT_EQ(doc["no_straggler"]["reason"], "too_few_steps");
  EXPECT_NEAR(doc["ranks"][1]["steps"]["median_seconds"].get<double>(), 0.6192715, 1e-12);
  EXPECT_EQ(doc["ranks"][1]["backend"], "nccl");
  EXPECT_EQ(doc["ranks"][1]["steps"]["first_number"], 551);
  EXPECT_EQ(doc["ranks"][1]["steps"]["last_number"], 552);
  auto one = gpuscope({dir.path(), "--rank", "0"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("(rank 0 of 128)"), std::string::npos) << one.out;
  auto missing = gpuscope({dir.path(), "--rank", "5"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no trace for rank 5"), std::string::npos) << missing.err;
}

// A directory that is not one job's ranks is a wrong request, not a bad trace: exit 2, one line, the files.
TEST(TraceCli, DirectoryOfDifferentRunsOrRepeatedRanksExitsTwo) {
  auto mixed = gpuscope({GPUSCOPE_SOURCE_DIR "/../shared/conformance/traces/"});
  EXPECT_EQ(mixed.exit_code, 2) << mixed.out;
  EXPECT_TRUE(mixed.out.empty()) << mixed.out;
  EXPECT_NE(mixed.err.find("the traces are not one run (world size 128: trace_filter__sampled_rank-0.json.gz, "
                           "trace_filter__sampled_rank-1.json.gz; world size 8: trace_diff__control__control.json.gz)"),
            std::string::npos)
      << mixed.err;
  EXPECT_EQ(std::count(mixed.err.begin(), mixed.err.end(), '\n'), 1) << mixed.err;

  testing::TempDir dir;
  const std::string rank0 = conformance_bytes(conformance_trace("trace_filter__sampled_rank-0.json.gz"));
  dir.write("rank-0.json.gz", rank0);
  dir.write("rank-0-again.json.gz", rank0);
  auto twice = gpuscope({dir.path(), "--format", "json"});
  EXPECT_EQ(twice.exit_code, 2) << twice.out;
  EXPECT_EQ(twice.err, "gpuscope: " + dir.path() +
                           ": rank 0 is in 2 files (rank-0-again.json.gz, rank-0.json.gz); a directory holds one trace per "
                           "rank of one run: give one file, or one directory per run\n");
}

TEST(TraceCli, BadDataExitsOneWithTheOffset) {
  testing::TempDir dir;
  const std::string truncated = dir.write("t.json", R"({"traceEvents": [{"ph": "X", "ts": 1)");
  auto r = gpuscope({truncated});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at byte 36"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  const std::string negative =
      dir.write("n.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": -5}]})");
  auto n = gpuscope({negative});
  EXPECT_EQ(n.exit_code, 1);
  EXPECT_NE(n.err.find("negative duration at byte 62"), std::string::npos) << n.err;

  auto lenient = gpuscope({truncated, "--lenient"});
  EXPECT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_NE(lenient.out.find("lenient: skipped"), std::string::npos) << lenient.out;

  auto missing = gpuscope({dir.path() + "/nope.json"});
  EXPECT_EQ(missing.exit_code, 1);
  auto not_json = gpuscope({dir.write("x.json", "PK\x03\x04 zip")});
  EXPECT_EQ(not_json.exit_code, 1);
  EXPECT_NE(not_json.err.find("at byte 0"), std::string::npos) << not_json.err;
}

TEST(TraceCli, BadFlagsExitTwo) {
  EXPECT_EQ(gpuscope({}).exit_code, 2);
  EXPECT_EQ(gpuscope({conformance_trace("trace_diff__control__control.json.gz"), "--format", "xml"}).exit_code, 2);
  EXPECT_EQ(gpuscope({conformance_trace("trace_diff__control__control.json.gz"), "--top", "0"}).exit_code, 2);
  EXPECT_EQ(gpuscope({conformance_trace("trace_diff__control__control.json.gz"), "--rank", "x"}).exit_code, 2);
  EXPECT_EQ(gpuscope({conformance_trace("trace_diff__control__control.json.gz"), "--dataloader-pattern", "("}).exit_code, 2);
  EXPECT_EQ(gpuscope({conformance_trace("trace_diff__control__control.json.gz"), "--no-such-flag"}).exit_code, 2);
}

// libmicrohttpd (with GnuTLS) and libcurl (with OpenSSL, Kerberos, LDAP, ...) are opened only when a
// server starts or something is sent: linked, they cost every command about 6 ms of start-up and
// 6 MiB resident (`gpuscope --version`: 9.7 -> 3.5 ms of CPU, 11.7 -> 5.5 MiB).
TEST(TraceCli, LoadsNoNetworkLibrary) {
  testing::TempDir dir;
  const std::string trace =
      dir.write("k.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]})");
  auto r = run_command({GPUSCOPE_EXE, "trace", trace}, {{"LD_DEBUG", "files"}}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_NE(r.err.find("libsimdjson"), std::string::npos) << "LD_DEBUG lists the libraries loaded:\n" << r.err;
  for (const char* library : {"libmicrohttpd", "libgnutls", "libcurl", "libssl"}) {
    EXPECT_EQ(r.err.find(library), std::string::npos) << library << " was loaded";
  }
}

TEST(TraceCli, HelpHasAnExample) {
  auto r = gpuscope({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Example:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpuscope trace trace.json.gz"), std::string::npos);
  EXPECT_NE(r.out.find("--lenient"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::trace
