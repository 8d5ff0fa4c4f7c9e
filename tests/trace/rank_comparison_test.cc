// A directory of rank traces is compared as one job only when it is one (one file per rank, one world size
// and backend), and a straggler is named only for a difference that matters, from enough steps.
#include "trace/rank_comparison.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "trace/trace_analyzer.h"
#include "trace/trace_report_json.h"
#include "trace/trace_report_text.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

struct RankSpec {
  std::int64_t rank = 0;
  std::int64_t world_size = 4;
  std::string backend = "nccl";
  std::vector<double> step_ms;  // one ProfilerStep each, back to back
  int first_step = 1;           // the first one's number
  double busy_share = 0.8;      // of each step, one kernel
};

// A Kineto-like trace: distributedInfo, then per step a ProfilerStep annotation and one kernel that keeps
// the GPU busy for `busy_share` of the step.
std::string rank_trace(const RankSpec& spec) {
  std::string events;
  double t_us = 1000;
  for (std::size_t i = 0; i < spec.step_ms.size(); ++i) {
    const double step_us = spec.step_ms[i] * 1000;
    events += fmt::format(
        R"({}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": {:.3f}}},)"
        R"({{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}, )"
        R"("args": {{"device": {}, "stream": 7, "correlation": {}}}}})",
        i == 0 ? "" : ",", spec.first_step + static_cast<int>(i), t_us, step_us, t_us, step_us * spec.busy_share, spec.rank, i + 1);
    t_us += step_us;
  }
  return fmt::format(R"({{"distributedInfo": {{"backend": "{}", "rank": {}, "world_size": {}}}, "traceEvents": [{}]}})",
                     spec.backend, spec.rank, spec.world_size, events);
}

std::expected<TraceReport, TraceError> analyze_ranks(const std::vector<RankSpec>& specs) {
  testing::TempDir dir;
  for (const auto& s : specs) dir.write(fmt::format("rank-{}.json", s.rank), rank_trace(s));
  return analyze_traces(dir.path(), {});
}

// Two copies of one rank's file were compared as two ranks: "rank 0 has the slowest steps (+0.0%)".
TEST(RankComparison, TwoFilesOfOneRankAreNotTwoRanks) {
  testing::TempDir dir;
  const std::string trace = rank_trace({.rank = 0, .step_ms = {100, 100, 100}});
  dir.write("rank-0.json", trace);
  dir.write("rank-0-copy.json", trace);
  dir.write("rank-1.json", rank_trace({.rank = 1, .step_ms = {100, 100, 100}}));
  auto report = analyze_traces(dir.path(), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().kind, TraceErrorKind::kNotOneRun);
  EXPECT_EQ(report.error().what(),
            dir.path() + ": rank 0 is in 2 files (rank-0-copy.json, rank-0.json); a directory holds one trace per rank of "
                         "one run: give one file, or one directory per run");

  // --rank 1 asks for a rank with one file: the copies of rank 0 are not read and do not matter.
  TraceAnalysisOptions one;
  one.rank = 1;
  auto rank1 = analyze_traces(dir.path(), one);
  ASSERT_TRUE(rank1.has_value()) << rank1.error().what();
  EXPECT_EQ(rank1->ranks.size(), 1u);
}

// The rank can come from the file name alone: a file without distributedInfo still claims one.
TEST(RankComparison, RankFromTheNameCountsToo) {
  testing::TempDir dir;
  dir.write("rank-2.json", rank_trace({.rank = 2, .step_ms = {100, 100, 100}}));
  dir.write("trace_rank_2.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]})");
  auto report = analyze_traces(dir.path(), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_NE(report.error().what().find("rank 2 is in 2 files (rank-2.json, trace_rank_2.json)"), std::string::npos)
      << report.error().what();
}

// The conformance traces: two ranks of a 128-rank job and one rank of an 8-rank job were compared as
// three ranks of one, without a word.
TEST(RankComparison, DifferentWorldSizesAreDifferentRuns) {
  testing::TempDir dir;
  for (const char* name : {"trace_diff__control__control.json.gz", "trace_filter__sampled_rank-0.json.gz",
                           "trace_filter__sampled_rank-1.json.gz"}) {
    std::ifstream in(testing::conformance_trace(name), std::ios::binary);
    dir.write(name, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  auto report = analyze_traces(dir.path(), {});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().kind, TraceErrorKind::kNotOneRun);
  EXPECT_EQ(report.error().what(),
            dir.path() + ": the traces are not one run (world size 128: trace_filter__sampled_rank-0.json.gz, "
                         "trace_filter__sampled_rank-1.json.gz; world size 8: trace_diff__control__control.json.gz); "
                         "give one file, or one directory per run");
}

TEST(RankComparison, DifferentBackendsAreDifferentRuns) {
  auto report = analyze_ranks({{.rank = 0, .backend = "nccl", .step_ms = {100, 100, 100}},
                               {.rank = 1, .backend = "gloo", .step_ms = {100, 100, 100}},
                               {.rank = 2, .backend = "nccl", .step_ms = {100, 100, 100}}});
  ASSERT_FALSE(report.has_value());
  EXPECT_NE(report.error().what().find("(backend nccl: rank-0.json, rank-2.json; backend gloo: rank-1.json)"), std::string::npos)
      << report.error().what();
}

// Each rank of two profiling windows (torch.profiler.schedule(repeat=2)): same world size, one file per
// rank, but step times of different windows are not comparable.
TEST(RankComparison, DifferentProfilingWindowsAreRefused) {
  auto report = analyze_ranks({{.rank = 0, .step_ms = {100, 100, 100}, .first_step = 11},
                               {.rank = 1, .step_ms = {100, 100, 100}, .first_step = 21},
                               {.rank = 2, .step_ms = {100}, .first_step = 11},
                               {.rank = 3, .step_ms = {}}});
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().kind, TraceErrorKind::kNotOneRun);
  EXPECT_NE(report.error().what().find("the traces are not one profiling window, no ProfilerStep is in all of them "
                                       "(steps 11-13: rank-0.json; steps 21-23: rank-1.json; step 11: rank-2.json)"),
            std::string::npos)
      << report.error().what();

  // Windows that overlap are one window, a rank cut short included.
  auto overlapping = analyze_ranks({{.rank = 0, .step_ms = {100, 100, 100}, .first_step = 11},
                                    {.rank = 1, .step_ms = {100, 100}, .first_step = 12}});
  ASSERT_TRUE(overlapping.has_value()) << overlapping.error().what();
  EXPECT_EQ(overlapping->ranks[0].steps.first_number, 11);
  EXPECT_EQ(overlapping->ranks[0].steps.last_number, 13);
}

// A file that does not say its world size (no distributedInfo) is not taken for another run.
TEST(RankComparison, AnUnstatedWorldSizeMatchesAny) {
  testing::TempDir dir;
  dir.write("rank-0.json", rank_trace({.rank = 0, .step_ms = {100, 100, 100}}));
  dir.write("rank-1.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]})");
  auto report = analyze_traces(dir.path(), {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  EXPECT_EQ(report->ranks.size(), 2u);
}

// Many files of one run in a directory of another: the message stays one line.
TEST(RankComparison, ManyFilesAreCounted) {
  std::vector<RankSpec> specs;
  for (std::int64_t r = 0; r < 6; ++r) specs.push_back({.rank = r, .world_size = r == 5 ? 2 : 64, .step_ms = {100, 100, 100}});
  auto report = analyze_ranks(specs);
  ASSERT_FALSE(report.has_value());
  EXPECT_NE(report.error().what().find("(world size 64: rank-0.json, rank-1.json, rank-2.json and 2 more; world size 2: rank-5.json)"),
            std::string::npos)
      << report.error().what();
}

// The conformance pair's difference (+0.7%) was called a straggler; a straggler is 10% slower.
TEST(RankComparison, ASmallDifferenceIsNoStraggler) {
  auto report = analyze_ranks({{.rank = 0, .step_ms = {100, 101, 99}},
                               {.rank = 1, .step_ms = {100, 100, 100}},
                               {.rank = 2, .step_ms = {107, 108, 109}},
                               {.rank = 3, .step_ms = {101, 100, 100}}});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  EXPECT_FALSE(report->comparison.straggler.has_value());
  ASSERT_TRUE(report->comparison.no_straggler.has_value());
  EXPECT_EQ(report->comparison.no_straggler->reason, NoStragglerReason::kBelowThreshold);
  EXPECT_EQ(report->comparison.no_straggler->evidence,
            "the slowest steps, rank 2's, have a median of 108.00 ms against 100.00 ms, the median of the other 3 ranks "
            "(+8.0%, under the +10% that names a straggler)");
}

TEST(RankComparison, TooFewStepsToJudge) {
  auto report = analyze_ranks({{.rank = 0, .step_ms = {100, 100, 100}}, {.rank = 1, .step_ms = {300, 300}}});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  EXPECT_FALSE(report->comparison.straggler.has_value());
  ASSERT_TRUE(report->comparison.no_straggler.has_value());
  EXPECT_EQ(report->comparison.no_straggler->reason, NoStragglerReason::kTooFewSteps);
  EXPECT_NE(report->comparison.no_straggler->evidence.find("too few profiler steps to judge: rank 1 has 2"), std::string::npos)
      << report->comparison.no_straggler->evidence;
}

// One odd step (a checkpoint) does not make a straggler: the median step ignores it.
TEST(RankComparison, OneOddStepIsNoStraggler) {
  auto report = analyze_ranks({{.rank = 0, .step_ms = {100, 100, 100}}, {.rank = 1, .step_ms = {100, 900, 100}}});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  EXPECT_EQ(report->ranks[1].steps.mean_ns, 366'666'666);
  EXPECT_EQ(report->ranks[1].steps.median_ns, 100'000'000);
  EXPECT_FALSE(report->comparison.straggler.has_value());
  ASSERT_TRUE(report->comparison.no_straggler.has_value());
}

TEST(RankComparison, AClearlySlowerRankIsTheStraggler) {
  auto report = analyze_ranks({{.rank = 0, .step_ms = {100, 100, 100}},
                               {.rank = 1, .step_ms = {100, 102, 101}},
                               {.rank = 2, .step_ms = {130, 125, 128}},
                               {.rank = 3, .step_ms = {99, 100, 100}}});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_TRUE(report->comparison.straggler.has_value());
  EXPECT_FALSE(report->comparison.no_straggler.has_value());
  const Straggler& s = *report->comparison.straggler;
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.basis, StragglerBasis::kSteps);
  EXPECT_NEAR(s.value, 0.128, 1e-9);
  EXPECT_NEAR(s.others_median, 0.100, 1e-9);
  EXPECT_NEAR(s.excess, 0.28, 1e-9);
  EXPECT_EQ(s.evidence,
            "rank 2 has the slowest steps: a median step of 128.00 ms against 100.00 ms, the median of the other 3 ranks "
            "(+28.0%, named from +10%)");
  EXPECT_EQ(report->comparison.world_size, 4);
}

// With two ranks the slowest is measured against the other rank, not against a median that includes itself
// (which halved the difference).
TEST(RankComparison, TwoRanksCompareWithEachOther) {
  auto report = analyze_ranks({{.rank = 0, .step_ms = {100, 100, 100}}, {.rank = 1, .step_ms = {111, 111, 111}}});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_TRUE(report->comparison.straggler.has_value());
  EXPECT_EQ(report->comparison.straggler->rank, 1);
  EXPECT_NEAR(report->comparison.straggler->excess, 0.11, 1e-9);
}

// Without step annotations: the least busy GPU, only when it is clearly less busy.
TEST(RankComparison, LeastBusyGpuNeedsAClearGap) {
  auto close = analyze_ranks({{.rank = 0, .step_ms = {}}, {.rank = 1, .step_ms = {}}});
  ASSERT_TRUE(close.has_value());  // no steps at all: no devices either, both 0% busy
  EXPECT_FALSE(close->comparison.straggler.has_value());

  // A trace without ProfilerStep annotations: kernels only.
  auto kernels = [](std::int64_t rank, double busy_us) {
    return fmt::format(R"({{"distributedInfo": {{"rank": {}, "world_size": 3}}, "traceEvents": [)"
                       R"({{"ph": "X", "cat": "kernel", "name": "a", "ts": 0, "dur": {}, "args": {{"device": 0, "stream": 7}}}},)"
                       R"({{"ph": "X", "cat": "kernel", "name": "b", "ts": 99, "dur": 1, "args": {{"device": 0, "stream": 7}}}}]}})",
                       rank, busy_us);
  };
  testing::TempDir dir;
  dir.write("rank-0.json", kernels(0, 80));
  dir.write("rank-1.json", kernels(1, 75));
  dir.write("rank-2.json", kernels(2, 79));
  auto near = analyze_traces(dir.path(), {});
  ASSERT_TRUE(near.has_value()) << near.error().what();
  EXPECT_FALSE(near->comparison.straggler.has_value());
  ASSERT_TRUE(near->comparison.no_straggler.has_value());
  EXPECT_NE(near->comparison.no_straggler->evidence.find("the least busy GPU, rank 1's, is 76.0% busy against 80.5%"),
            std::string::npos)
      << near->comparison.no_straggler->evidence;

  dir.write("rank-1.json", kernels(1, 40));
  auto far = analyze_traces(dir.path(), {});
  ASSERT_TRUE(far.has_value()) << far.error().what();
  ASSERT_TRUE(far->comparison.straggler.has_value());
  EXPECT_EQ(far->comparison.straggler->rank, 1);
  EXPECT_EQ(far->comparison.straggler->basis, StragglerBasis::kBusy);
  EXPECT_NEAR(far->comparison.straggler->excess, 0.805 - 0.41, 1e-9);
}

// Files that say no rank (no distributedInfo, no rank-N in the name) were shown and named as "rank -1".
TEST(RankComparison, AFileWithoutARankIsNamedByItsFile) {
  auto kernels = [](double busy_us) {
    return fmt::format(R"({{"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "a", "ts": 0, "dur": {}, )"
                       R"("args": {{"device": 0, "stream": 7}}}}, {{"ph": "X", "cat": "kernel", "name": "b", "ts": 99, "dur": 1, )"
                       R"("args": {{"device": 0, "stream": 7}}}}]}})",
                       busy_us);
  };
  testing::TempDir dir;
  dir.write("first.json", kernels(80));
  dir.write("second.json", kernels(20));
  auto report = analyze_traces(dir.path(), {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_TRUE(report->comparison.straggler.has_value());
  EXPECT_EQ(report->comparison.straggler->evidence.rfind("second.json has the least busy GPU", 0), 0u)
      << report->comparison.straggler->evidence;
  const std::string text = trace_report_text(*report, {});
  // The files' paths are in the text; a temp directory's random name can hold "-1" itself.
  std::string without_paths = text;
  for (std::size_t at; (at = without_paths.find(dir.path())) != std::string::npos;) without_paths.erase(at, dir.path().size());
  EXPECT_EQ(without_paths.find("-1"), std::string::npos) << text;
  EXPECT_NE(text.find("\n    ? "), std::string::npos) << text;
  const auto json = trace_report_json(*report);
  EXPECT_TRUE(json["ranks"][0]["rank"].is_null());
  EXPECT_TRUE(json["straggler"]["rank"].is_null());
}

}  // namespace
}  // namespace gpuscope::trace
