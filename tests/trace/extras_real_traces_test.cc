// Issue 22's analyses on the real traces (../shared/conformance/traces, ../shared/reference/real-h100),
// against trace_extras_reference.py: the same definitions written again in Python (stdlib, exact
// integer nanoseconds), run on the file by the test. Skipped where python3 is missing.
#include <gtest/gtest.h>

#include "extras_test_support.h"
#include "trace/extras_report.h"
#include "trace/trace_analyzer.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

std::string extras_h100_trace(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/") + name;
}

void expect_distribution(const GapDistribution& g, const nlohmann::json& want, std::int64_t span_start, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(g.count, want["count"].get<std::uint64_t>());
  if (g.count == 0) return;
  EXPECT_EQ(g.total_ns, want["total"].get<std::int64_t>());
  EXPECT_EQ(g.p50_ns, want["p50"].get<std::int64_t>());
  EXPECT_EQ(g.p90_ns, want["p90"].get<std::int64_t>());
  EXPECT_EQ(g.p99_ns, want["p99"].get<std::int64_t>());
  EXPECT_EQ(g.longest_ns, want["longest"].get<std::int64_t>());
  EXPECT_EQ(g.longest_start_ns + span_start, want["longest_start"].get<std::int64_t>());
  EXPECT_EQ(gap_kind_key(g.longest_kind), want["longest_kind"].get<std::string>());
}

void expect_matches_reference(const std::string& file, bool first_cut, bool last_cut) {
  SCOPED_TRACE(file);
  const auto want = testing::extras_reference(file);
  if (want.is_null()) GTEST_SKIP() << "python3 or the reference script failed";
  TraceAnalysisOptions options;
  options.analysis.sequence_top = 8;
  auto r = analyze_trace_file(file, options);
  ASSERT_TRUE(r.has_value()) << r.error().what();

  // Per step, on the main device.
  ASSERT_EQ(r->per_step.device, want["main_device"].get<std::int64_t>());
  const auto& rows = r->per_step.rows;
  ASSERT_EQ(rows.size(), want["steps"].size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& w = want["steps"][i];
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i].number, w["number"].get<std::int64_t>());
    EXPECT_EQ(rows[i].duration_ns, w["duration"].get<std::int64_t>());
    EXPECT_EQ(rows[i].busy_ns, w["busy"].get<std::int64_t>());
    EXPECT_EQ(rows[i].host_wait_ns, w["host_wait"].get<std::int64_t>());
    EXPECT_EQ(rows[i].kernels, w["kernels"].get<std::uint64_t>());
    EXPECT_EQ(rows[i].kernel_ns, w["kernel_ns"].get<std::int64_t>());
    EXPECT_EQ(rows[i].top_kernel, w["top"].get<std::string>());
    EXPECT_EQ(rows[i].top_kernel_ns, w["top_ns"].get<std::int64_t>());
    EXPECT_EQ(rows[i].gpu_tail_ns, w["tail"].get<std::int64_t>());
  }
  EXPECT_EQ(want["first_incomplete"].get<bool>(), first_cut);
  EXPECT_EQ(want["last_incomplete"].get<bool>(), last_cut);
  EXPECT_EQ(!rows.front().incomplete.empty(), first_cut) << rows.front().incomplete;
  EXPECT_EQ(!rows.back().incomplete.empty(), last_cut) << rows.back().incomplete;

  for (const auto& d : r->devices) {
    const auto& wd = want["devices"][std::to_string(d.device)];
    SCOPED_TRACE(d.device);
    // Idle gaps, device-wide and per stream.
    expect_distribution(d.idle_intervals.device, wd["device_gaps"], r->span_start_ns, "device-wide");
    ASSERT_EQ(d.idle_intervals.streams.size(), wd["stream_gaps"].size());
    for (const auto& s : d.idle_intervals.streams) {
      expect_distribution(s.gaps, wd["stream_gaps"][std::to_string(s.stream)], r->span_start_ns, "stream " + std::to_string(s.stream));
    }
    // Kernel sequences: each listed one as the reference counts it, and the first is the best of all.
    EXPECT_EQ(d.launch.calls > 0 ? d.launch.call_total_ns / static_cast<std::int64_t>(d.launch.calls) : 0,
              wd["mean_launch"].get<std::int64_t>());
    const auto& candidates = wd["sequences"];
    if (candidates.empty()) {
      EXPECT_TRUE(d.kernel_sequences.empty());
      continue;
    }
    ASSERT_FALSE(d.kernel_sequences.empty());
    EXPECT_EQ(d.kernel_sequences[0].saving_ns(), candidates[0]["saving"].get<std::int64_t>());
    for (const auto& s : d.kernel_sequences) {
      const auto it = std::find_if(candidates.begin(), candidates.end(), [&](const nlohmann::json& c) {
        return c["stream"].get<std::int64_t>() == s.stream && c["kernels"].get<std::vector<std::string>>() == s.kernels;
      });
      ASSERT_NE(it, candidates.end()) << "not among the reference's top 200: " << s.kernels.front();
      EXPECT_EQ(s.repeats, (*it)["repeats"].get<std::uint64_t>());
      EXPECT_EQ(s.kernel_ns, (*it)["kernel_ns"].get<std::int64_t>());
      EXPECT_EQ(s.inner_idle_ns, (*it)["idle"].get<std::int64_t>());
      EXPECT_EQ(s.saving_ns(), (*it)["saving"].get<std::int64_t>());
    }
  }
}

TEST(ExtrasRealTraces, ControlTrace) {
  expect_matches_reference(testing::conformance_trace("trace_diff__control__control.json.gz"), false, false);
}

TEST(ExtrasRealTraces, SampledRank) {
  expect_matches_reference(testing::conformance_trace("trace_filter__sampled_rank-0.json.gz"), false, false);
}

TEST(ExtrasRealTraces, H100LaunchBound) { expect_matches_reference(extras_h100_trace("trace_launch_bound.json.gz"), false, false); }

// The GPU still ran 8 activities launched before the profiler started when step 2 began.
TEST(ExtrasRealTraces, H100ComputeBoundFirstStepIsCut) {
  expect_matches_reference(extras_h100_trace("trace_compute_bound.json.gz"), true, false);
  TraceAnalysisOptions options;
  options.analysis.drop_incomplete_steps = true;
  auto r = analyze_trace_file(extras_h100_trace("trace_compute_bound.json.gz"), options);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->per_step.dropped.size(), 1u);
  EXPECT_EQ(r->per_step.dropped[0].number, 2);
  EXPECT_EQ(r->per_step.rows.size(), 3u);
  std::string text;
  per_step_text(text, *r, 10);
  EXPECT_NE(text.find("dropped step #2: the GPU was still running work launched before the trace began"), std::string::npos) << text;
  EXPECT_NE(text.find("the GPU runs behind the CPU"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::trace
