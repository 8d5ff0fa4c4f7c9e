// The history store's health in the agent's /metrics: every figure, its type and help, both formats,
// and promtool's lint.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "export/agent_metrics.h"
#include "export/exposition_parser.h"
#include "export/exposition_test_support.h"

namespace gpuscope::exporter {
namespace {

TsdbStatus sample_tsdb() {
  TsdbStatus t;
  t.head_series = 412;
  t.head_samples_appended_total = 1483200;
  t.samples_rejected_out_of_order_total = 3;
  t.samples_rejected_duplicate_total = 1;
  t.flushes_total = 58;
  t.flush_failures_total = 4;
  t.flush_duration_seconds_sum = 1.75;
  t.flush_duration_seconds_count = 62;
  t.last_successful_flush_timestamp_seconds = 1767229200;
  t.chunks_corrupt_total = 2;
  t.unflushed_samples_dropped_total = 0;
  t.databases_moved_aside_total = 1;
  t.databases_recreated_total = 0;
  t.disk_bytes = 5242880;
  t.oldest_sample_timestamp_seconds = 1767225600.5;
  return t;
}

AgentStatus with_tsdb() {
  AgentStatus s;
  s.interval_seconds = 1;
  s.version = "0.3.0";
  s.tsdb = sample_tsdb();
  return s;
}

constexpr std::string_view kTsdbText =
    "# HELP gpuscope_tsdb_head_series Series in the history store's in-memory head.\n"
    "# TYPE gpuscope_tsdb_head_series gauge\n"
    "gpuscope_tsdb_head_series 412\n"
    "# HELP gpuscope_tsdb_head_samples_appended_total Samples appended to the history store (staleness markers included).\n"
    "# TYPE gpuscope_tsdb_head_samples_appended_total counter\n"
    "gpuscope_tsdb_head_samples_appended_total 1483200\n"
    "# HELP gpuscope_tsdb_samples_rejected_total Samples the history store refused: not after the series' last sample "
    "(out_of_order) or at the same time (duplicate); a clock that stepped back.\n"
    "# TYPE gpuscope_tsdb_samples_rejected_total counter\n"
    "gpuscope_tsdb_samples_rejected_total{reason=\"out_of_order\"} 3\n"
    "gpuscope_tsdb_samples_rejected_total{reason=\"duplicate\"} 1\n"
    "# HELP gpuscope_tsdb_flushes_total Flushes of the history to the data directory that succeeded.\n"
    "# TYPE gpuscope_tsdb_flushes_total counter\n"
    "gpuscope_tsdb_flushes_total 58\n"
    "# HELP gpuscope_tsdb_flush_failures_total Flushes of the history that failed (disk full, read-only, I/O error); "
    "the samples stay in memory and the flush is retried with backoff.\n"
    "# TYPE gpuscope_tsdb_flush_failures_total counter\n"
    "gpuscope_tsdb_flush_failures_total 4\n"
    "# HELP gpuscope_tsdb_flush_duration_seconds Time spent flushing the history to disk, failed flushes included.\n"
    "# TYPE gpuscope_tsdb_flush_duration_seconds summary\n"
    "gpuscope_tsdb_flush_duration_seconds_sum 1.75\n"
    "gpuscope_tsdb_flush_duration_seconds_count 62\n"
    "# HELP gpuscope_tsdb_last_successful_flush_timestamp_seconds Unix time of the last successful flush of the "
    "history (the agent's start counts as one).\n"
    "# TYPE gpuscope_tsdb_last_successful_flush_timestamp_seconds gauge\n"
    "gpuscope_tsdb_last_successful_flush_timestamp_seconds 1767229200\n"
    "# HELP gpuscope_tsdb_chunks_corrupt_total Chunks of history skipped because they failed their CRC or did not "
    "decode, each counted once.\n"
    "# TYPE gpuscope_tsdb_chunks_corrupt_total counter\n"
    "gpuscope_tsdb_chunks_corrupt_total 2\n"
    "# HELP gpuscope_tsdb_unflushed_samples_dropped_total Samples dropped from memory without reaching disk because "
    "flushes failed for longer than memory keeps them.\n"
    "# TYPE gpuscope_tsdb_unflushed_samples_dropped_total counter\n"
    "gpuscope_tsdb_unflushed_samples_dropped_total 0\n"
    "# HELP gpuscope_tsdb_databases_moved_aside_total History databases found damaged at start, moved aside "
    "(chunks.sqlite.corrupt-<ms>) and started anew.\n"
    "# TYPE gpuscope_tsdb_databases_moved_aside_total counter\n"
    "gpuscope_tsdb_databases_moved_aside_total 1\n"
    "# HELP gpuscope_tsdb_databases_recreated_total History databases deleted under the running agent and recreated "
    "with what memory held.\n"
    "# TYPE gpuscope_tsdb_databases_recreated_total counter\n"
    "gpuscope_tsdb_databases_recreated_total 0\n"
    "# HELP gpuscope_tsdb_disk_bytes Size of the history database and its write-ahead log.\n"
    "# TYPE gpuscope_tsdb_disk_bytes gauge\n"
    "gpuscope_tsdb_disk_bytes 5242880\n"
    "# HELP gpuscope_tsdb_oldest_sample_timestamp_seconds Unix time of the oldest sample the history store holds, in "
    "memory or on disk.\n"
    "# TYPE gpuscope_tsdb_oldest_sample_timestamp_seconds gauge\n"
    "gpuscope_tsdb_oldest_sample_timestamp_seconds 1767225600.5\n";

TEST(WriteAgentTsdbMetrics, EveryFigureWithItsTypeAndHelp) {
  const std::string text = testing::render_agent_metrics(with_tsdb(), ExpositionFormat::kPrometheusText);
  EXPECT_NE(text.find(kTsdbText), std::string::npos) << text;
  // Before build_info, after the agent's own reading series.
  EXPECT_LT(text.find("gpuscope_samples_total"), text.find("gpuscope_tsdb_head_series"));
  EXPECT_LT(text.find("gpuscope_tsdb_oldest_sample_timestamp_seconds"), text.find("gpuscope_build_info"));
}

TEST(WriteAgentTsdbMetrics, NoTsdbFamiliesWithoutHistory) {
  AgentStatus s = with_tsdb();
  s.tsdb.reset();
  EXPECT_EQ(testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText).find("gpuscope_tsdb"), std::string::npos);
}

TEST(WriteAgentTsdbMetrics, NoOldestSampleWhileTheStoreIsEmpty) {
  AgentStatus s = with_tsdb();
  s.tsdb->oldest_sample_timestamp_seconds.reset();
  const std::string text = testing::render_agent_metrics(s, ExpositionFormat::kPrometheusText);
  EXPECT_EQ(text.find("gpuscope_tsdb_oldest_sample_timestamp_seconds"), std::string::npos) << text;
  EXPECT_NE(text.find("gpuscope_tsdb_disk_bytes 5242880\n"), std::string::npos) << text;
}

TEST(WriteAgentTsdbMetrics, OpenMetricsNamesTheCounterAndSummaryFamilies) {
  const std::string om = testing::render_agent_metrics(with_tsdb(), ExpositionFormat::kOpenMetrics);
  EXPECT_NE(om.find("# TYPE gpuscope_tsdb_flush_failures counter\ngpuscope_tsdb_flush_failures_total 4\n"),
            std::string::npos)
      << om;
  EXPECT_NE(om.find("# TYPE gpuscope_tsdb_flush_duration_seconds summary\n"
                    "gpuscope_tsdb_flush_duration_seconds_sum 1.75\n"
                    "gpuscope_tsdb_flush_duration_seconds_count 62\n"),
            std::string::npos)
      << om;
  for (const bool openmetrics : {false, true}) {
    auto p = testing::parse_exposition(testing::render_agent_metrics(with_tsdb(), openmetrics ? ExpositionFormat::kOpenMetrics
                                                                       : ExpositionFormat::kPrometheusText),
                                       openmetrics);
    ASSERT_TRUE(p.has_value()) << p.error();
    EXPECT_EQ(p->value("gpuscope_tsdb_samples_rejected_total", {{"reason", "out_of_order"}}), 3);
    EXPECT_EQ(p->value("gpuscope_tsdb_flush_duration_seconds_count"), 62);
  }
}

// Prometheus's own linter finds nothing to say about the store's series (names, suffixes, types).
TEST(WriteAgentTsdbMetrics, PromtoolFindsNoProblem) {
  constexpr const char* kPromtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(kPromtool)) GTEST_SKIP() << kPromtool << " is not installed";
  AgentStatus s;
  s.tsdb = sample_tsdb();
  std::string text;
  {
    ExpositionWriter w(ExpositionFormat::kPrometheusText, text);
    // Only the store's families: the rest of the agent's are linted elsewhere.
    write_agent_metrics(w, s);
  }
  const auto begin = text.find("# HELP gpuscope_tsdb_");
  const auto end = text.find("# HELP gpuscope_build_info");
  ASSERT_NE(begin, std::string::npos);
  text = text.substr(begin, end - begin);
  const auto dir = std::filesystem::path(::testing::TempDir());
  const std::string stem = "agent_tsdb_metrics_test_" + std::to_string(::getpid());
  const std::string metrics = (dir / (stem + ".prom")).string();
  const std::string report = (dir / (stem + ".out")).string();
  std::ofstream(metrics, std::ios::binary) << text;
  const int status = std::system((std::string(kPromtool) + " check metrics < '" + metrics + "' > '" + report + "' 2>&1").c_str());
  const std::string out = testing::read_file(report);
  std::filesystem::remove(metrics);
  std::filesystem::remove(report);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(WEXITSTATUS(status), 0) << out << "\n" << text;
}

}  // namespace
}  // namespace gpuscope::exporter
