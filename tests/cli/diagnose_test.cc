// `gpuscope diagnose` given what it cannot use: each a one-line error naming the flag or the source,
// the exit code (2 for usage and bad input, 1 when a source fails), and nothing on stdout. And the
// reading of a Prometheus answer into series (what --url diagnoses).
#include <filesystem>

#include <gtest/gtest.h>

#include "cli/cli_runner.h"
#include "cli/diagnose_verb.h"
#include "cli/prometheus_source.h"
#include "cli/scratch_dir.h"

namespace gpuscope::cli {
namespace {

using testing::ScratchDir;

const std::string kRecording = std::string(GPUSCOPE_SOURCE_DIR) + "/../shared/reference/real-h100/history.json.gz";

void expect_one_line_error(const std::vector<std::string>& args, int code, const std::string& err) {
  auto r = testing::run_gpuscope(args);
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.err, "gpuscope: " + err + "\n");
  EXPECT_EQ(r.out, "");
}

TEST(DiagnoseArgs, NeedsExactlyOneSource) {
  const std::string both = "diagnose needs exactly one of --url, --data-dir and --simulate[=SCENARIO]";
  expect_one_line_error({"diagnose"}, 2, both);
  expect_one_line_error({"diagnose", "--url", "http://127.0.0.1:1", "--data-dir", "/tmp"}, 2, both);
  expect_one_line_error({"--simulate", "diagnose", "--data-dir", "/tmp"}, 2, both);
}

TEST(DiagnoseArgs, WindowSinceStepAndAtAreChecked) {
  const std::vector<std::string> src{"diagnose", "--data-dir", "/nowhere"};
  auto with = [&](std::vector<std::string> more) {
    auto args = src;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  expect_one_line_error(with({"--window", "0"}), 2, "invalid value '0' for --window (1s to 1h, e.g. 30s)");
  expect_one_line_error(with({"--window", "2d"}), 2, "invalid value '2d' for --window (1s to 1h, e.g. 30s)");
  expect_one_line_error(with({"--window", "soon"}), 2, "invalid value 'soon' for --window (1s to 1h, e.g. 30s)");
  expect_one_line_error(with({"--at", "1e300"}), 2, "invalid value '1e300' for --at: not between 1970 and 9999");
  auto r = testing::run_gpuscope(with({"--at", "yesterday"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.starts_with("gpuscope: invalid value 'yesterday' for --at: ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
  expect_one_line_error(with({"--since", "1h"}), 2, "--since is for --timeline");
  expect_one_line_error(with({"--step", "5s"}), 2, "--step is for --timeline");
  expect_one_line_error(with({"--timeline", "--since", "60d"}), 2, "invalid value '60d' for --since (1s to 30d, e.g. 1h)");
  expect_one_line_error(with({"--timeout", "5s"}), 2, "--timeout is for --url");
  expect_one_line_error(with({"--format", "yaml"}), 2, "unknown format 'yaml' in --format (text or json)");
}

TEST(DiagnoseArgs, ThresholdsAreSetByNameAndChecked) {
  auto o = parse_diagnose_args(std::vector<std::string>{"--data-dir", "d", "--threshold", "memory_bound_dram_active=0.8",
                                                        "--threshold", "idle_gr_active=0.1"},
                               {}, 0);
  ASSERT_TRUE(o) << o.error().text;
  EXPECT_EQ(o->thresholds.memory_bound_dram_active, 0.8);
  EXPECT_EQ(o->thresholds.idle_gr_active, 0.1);

  auto r = testing::run_gpuscope({"diagnose", "--data-dir", "d", "--threshold", "unknown=1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.starts_with("gpuscope: --threshold: unknown threshold 'unknown' (one of: ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = testing::run_gpuscope({"diagnose", "--data-dir", "d", "--threshold", "idle_gr_active=7"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.err.starts_with("gpuscope: --threshold: threshold idle_gr_active: 7 is out of range")) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(DiagnoseArgs, SimulateTakesAtAsATimeIntoTheScenario) {
  GlobalOptions sim{true, "scenarios/idle.yaml", ""};
  auto o = parse_diagnose_args(std::vector<std::string>{"--at", "12m"}, sim, 0);
  ASSERT_TRUE(o) << o.error().text;
  EXPECT_EQ(o->source, DiagnoseOptions::Source::kSimulate);
  EXPECT_EQ(o->at_ms, 12 * 60'000);
  o = parse_diagnose_args(std::vector<std::string>{}, sim, 0);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->at_ms, 30'000) << "the window, from the scenario's start";
  o = parse_diagnose_args(std::vector<std::string>{"--timeline", "--since", "20m"}, sim, 0);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->at_ms, 20 * 60'000);
  auto bad = parse_diagnose_args(std::vector<std::string>{"--at", "2026-11-25T10:00:00Z"}, sim, 0);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().text,
            "invalid value '2026-11-25T10:00:00Z' for --at (with --simulate, a time into the scenario, 1s to 30d, e.g. 12m)");
}

TEST(DiagnoseSources, AMissingDataDirOrANonRecordingIsOneLine) {
  ScratchDir dir;
  const std::string missing = (dir.path / "nowhere").string();
  expect_one_line_error({"diagnose", "--data-dir", missing}, 2, "--data-dir " + missing + ": no such directory");
  EXPECT_FALSE(std::filesystem::exists(missing));
  // A file where a data directory belongs, and a directory that holds no store.
  const std::string file = dir.write("history.json", "not a recording");
  expect_one_line_error({"diagnose", "--data-dir", file}, 2, "--data-dir " + file + ": not a directory");
  expect_one_line_error({"diagnose", "--data-dir", dir.path.string()}, 2,
                        "--data-dir " + dir.path.string() +
                            ": holds no history (no chunks.sqlite; is it the directory an agent's --data-dir names?)");
}

TEST(DiagnoseSources, AnUnreachableUrlIsOneLineNamingIt) {
  auto r = testing::run_gpuscope({"diagnose", "--url", "http://127.0.0.1:1", "--timeout", "2s"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(r.err.starts_with("gpuscope: http://127.0.0.1:1/api/v1/query?query=")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(DiagnoseSources, AnImportedRecordingIsDiagnosedAtItsEnd) {
  ScratchDir dir;
  auto imported = testing::run_gpuscope({"import", "--data-dir", dir.data_dir(), kRecording});
  ASSERT_EQ(imported.code, 0) << imported.err;
  // The h2d_pcie_copy phase ends at 1795603925.98.
  auto r = testing::run_gpuscope({"diagnose", "--data-dir", dir.data_dir(), "--at", "1795603925", "--window", "15s"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("  verdict   transfer bound (host→device)\n"), std::string::npos) << r.out;
  // -i of a GPU the recording lacks: no readings, and where the recording's are.
  r = testing::run_gpuscope({"diagnose", "--data-dir", dir.data_dir(), "--at", "1795603925", "-i", "3"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "gpuscope: --data-dir " + dir.data_dir() +
                       ": no GPU readings of GPU 3 in the 30s before 2026-11-25T10:52:05Z; none within 10 years either side\n");
}

TEST(PrometheusAnswer, AMatrixBecomesSeriesWithinTheLeftOpenRange) {
  bool too_many = true;
  auto series = parse_matrix_answer(
      R"({"status":"success","data":{"resultType":"matrix","result":[
          {"metric":{"__name__":"DCGM_FI_PROF_SM_ACTIVE","gpu":"0"},"values":[[10,"0.5"],[11,"NaN"],[12.5,"+Inf"]]},
          {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[10,"1"]]}]}})",
      10'000, 12'500, too_many);
  ASSERT_TRUE(series) << series.error();
  EXPECT_FALSE(too_many);
  // The sample at 10 s is the range's left end (Prometheus 2 includes it): left out, and so is the
  // series left without a sample.
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].labels.get("__name__"), "DCGM_FI_PROF_SM_ACTIVE");
  ASSERT_EQ((*series)[0].samples.size(), 2u);
  EXPECT_EQ((*series)[0].samples[0].t_ms, 11'000);
  EXPECT_TRUE(std::isnan((*series)[0].samples[0].value));
  EXPECT_EQ((*series)[0].samples[1].t_ms, 12'500);
  EXPECT_TRUE(std::isinf((*series)[0].samples[1].value));
}

TEST(PrometheusAnswer, WhatIsNotAMatrixIsOneLine) {
  bool too_many = false;
  auto vector = parse_matrix_answer(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 0, 1, too_many);
  ASSERT_FALSE(vector);
  EXPECT_EQ(vector.error(), "the answer is a vector, not a matrix of raw samples");
  auto limit = parse_matrix_answer(
      R"({"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"})",
      0, 1, too_many);
  ASSERT_FALSE(limit);
  EXPECT_TRUE(too_many);
  auto page = parse_matrix_answer("<html>\n</html>", 0, 1, too_many);
  ASSERT_FALSE(page);
  EXPECT_FALSE(too_many);
  EXPECT_EQ(page.error(), "not Prometheus API JSON: \"<html>\\n</html>\"");
  auto bad_value = parse_matrix_answer(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x"]]}]}})", 0, 1000,
      too_many);
  ASSERT_FALSE(bad_value);
  EXPECT_EQ(bad_value.error(), "a sample value 'x' is not a number");
}

}  // namespace
}  // namespace gpuscope::cli
