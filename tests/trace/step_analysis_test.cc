// Per-step rows on hand-built traces whose answers follow from their construction, bad input
// (no steps, steps without GPU work, no GPU at all), the report text and JSON, and the CLI flag.
#include "trace/step_analysis.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "e2e/command_runner.h"
#include "extras_test_support.h"
#include "trace/extras_report.h"
#include "trace/trace_report_json.h"
#include "trace/trace_report_text.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::analyze_text;
using testing::ExtrasTrace;

constexpr std::int64_t step_us = 1000;

// Three steps [0,100) [100,200) [200,300) us; device 0, stream 7. Launch -> activity:
//   c1 at 10  -> a [20,50)       c2 at 20  -> b [50,60)
//   c3 at 110 -> a [130,170)     c4 at 120 -> memcpy [170,180)
//   c5 at 210 -> c [290,320): nothing of any kind ends after it -> the last step is cut.
// Device gaps: [60,130) host wait (c3 launched at 110 > 60); [180,290) host wait (c5 at 210 > 180).
// Step 1: busy [20,60) = 40, host wait [60,100) = 40; launched a (30) and b (10).
// Step 2: busy [130,180) = 50, host wait [100,130) + [180,200) = 50; launched a (40) and the memcpy.
// Step 3: busy [290,300) = 10, host wait [200,290) = 90; launched c (30), which runs 20 past the step.
ExtrasTrace step_three_steps() {
  ExtrasTrace t;
  t.step(1, 0, 100).step(2, 100, 100).step(3, 200, 100);
  t.launch(1, 10).kernel("a", 7, 20, 30, 1).launch(2, 20).kernel("b", 7, 50, 10, 2);
  t.launch(3, 110).kernel("a", 7, 130, 40, 3).launch(4, 120, 1, "cudaMemcpyAsync").memcpy(7, 170, 10, 4);
  t.launch(5, 210).kernel("c", 7, 290, 30, 5);
  return t;
}

TEST(StepAnalysis, RowsFollowFromTheConstruction) {
  const RankReport r = analyze_text(step_three_steps().json());
  const StepsReport& p = r.per_step;
  EXPECT_EQ(p.device, 0);
  ASSERT_EQ(p.rows.size(), 3u);
  EXPECT_TRUE(p.dropped.empty());
  const std::int64_t busy[] = {40, 50, 10}, host[] = {40, 50, 90}, kernel_time[] = {40, 40, 30}, tail[] = {0, 0, 20};
  const std::uint64_t kernels[] = {2, 1, 1};
  const char* top[] = {"a", "a", "c"};
  for (std::size_t i = 0; i < 3; ++i) {
    const StepRow& s = p.rows[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(s.number, static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(s.duration_ns, 100 * step_us);
    EXPECT_EQ(s.start_offset_ns, static_cast<std::int64_t>(i) * 100 * step_us);
    EXPECT_EQ(s.busy_ns, busy[i] * step_us);
    EXPECT_EQ(s.idle_ns, (100 - busy[i]) * step_us);
    EXPECT_EQ(s.host_wait_ns, host[i] * step_us);
    EXPECT_EQ(s.kernels, kernels[i]);
    EXPECT_EQ(s.kernel_ns, kernel_time[i] * step_us);
    EXPECT_EQ(s.top_kernel, top[i]);
    EXPECT_EQ(s.gpu_tail_ns, tail[i] * step_us);
  }
  EXPECT_EQ(p.rows[0].top_kernel_ns, 30 * step_us);
  EXPECT_TRUE(p.rows[0].incomplete.empty());
  EXPECT_TRUE(p.rows[1].incomplete.empty());
  EXPECT_NE(p.rows[2].incomplete.find("trace ends while the GPU still runs"), std::string::npos);
  // The per-step host wait is the device-wide host wait, split at step boundaries.
  EXPECT_EQ(p.rows[0].host_wait_ns + p.rows[1].host_wait_ns + p.rows[2].host_wait_ns, r.devices.at(0).idle.host_wait_ns);
}

TEST(StepAnalysis, ExcludeLastStepFollowsHtasConventionEverywhereStepsCount) {
  const RankReport all = analyze_text(step_three_steps().json());
  ASSERT_EQ(all.critical_path.steps.size(), 3u);
  EXPECT_FALSE(all.steps.last_excluded);
  EXPECT_EQ(per_step_json(all)["step_statistics_convention"], "all_steps");

  AnalysisOptions options;
  options.exclude_last_step = true;
  const RankReport r = analyze_text(step_three_steps().json(), {}, options);
  EXPECT_EQ(r.steps.count, 2u);
  EXPECT_EQ(r.steps.mean_ns, 100 * step_us);
  EXPECT_EQ(r.steps.last_number, 2);
  EXPECT_TRUE(r.steps.last_excluded);
  EXPECT_EQ(r.steps.excluded_number, 3);
  ASSERT_EQ(r.per_step.rows.size(), 2u);
  EXPECT_EQ(r.per_step.rows[1].number, 2);
  ASSERT_EQ(r.critical_path.steps.size(), 2u);
  EXPECT_EQ(r.critical_path.steps[0].step, "ProfilerStep#1");
  EXPECT_EQ(r.critical_path.steps[1].step, "ProfilerStep#2");
  // The excluded step's GPU work still counts where steps do not: busy time is the whole trace's.
  EXPECT_EQ(r.devices.at(0).busy_ns, all.devices.at(0).busy_ns);
  const auto j = per_step_json(r);
  EXPECT_EQ(j["step_statistics_convention"], "last_step_excluded");
  EXPECT_EQ(j["excluded_step"], 3);
  std::string text;
  per_step_text(text, r, 10);
  EXPECT_NE(text.find("The last step (#3) is left out"), std::string::npos) << text;
}

TEST(StepAnalysis, DropIncompleteLeavesOutTheCutStepAndSaysSo) {
  AnalysisOptions options;
  options.drop_incomplete_steps = true;
  const RankReport r = analyze_text(step_three_steps().json(), {}, options);
  ASSERT_EQ(r.per_step.rows.size(), 2u);
  ASSERT_EQ(r.per_step.dropped.size(), 1u);
  EXPECT_EQ(r.per_step.dropped[0].number, 3);
  EXPECT_EQ(r.steps.count, 3u);  // the step statistics still count every step
  std::string text;
  per_step_text(text, r, 10);
  EXPECT_NE(text.find("dropped step #3: the trace ends while"), std::string::npos) << text;
  EXPECT_EQ(text.find("the GPU runs behind the CPU"), std::string::npos) << text;  // 20 us past a 100 us step
  const auto j = per_step_json(r);
  EXPECT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["dropped"][0]["number"], 3);
  EXPECT_EQ(j["drop_incomplete"], true);
}

TEST(StepAnalysis, LastStepCompleteWhenTheTraceGoesOnAfterItsWork) {
  // A cudaDeviceSynchronize that returns after kernel c: the profiler saw the GPU finish.
  ExtrasTrace t = step_three_steps();
  t.launch(6, 300, 25, "cudaDeviceSynchronize");
  const RankReport r = analyze_text(t.json());
  ASSERT_EQ(r.per_step.rows.size(), 3u);
  EXPECT_TRUE(r.per_step.rows[2].incomplete.empty()) << r.per_step.rows[2].incomplete;
}

TEST(StepAnalysis, LastStepWithoutGpuWorkUnlikeTheOthersIsCut) {
  ExtrasTrace t;
  t.step(1, 0, 100).step(2, 100, 100).step(3, 200, 100);
  t.launch(1, 10).kernel("a", 7, 20, 30, 1).launch(2, 110).kernel("a", 7, 120, 30, 2).cpu_op("aten::mm", 210, 80);
  const RankReport r = analyze_text(t.json());
  ASSERT_EQ(r.per_step.rows.size(), 3u);
  EXPECT_EQ(r.per_step.rows[2].kernels, 0u);
  EXPECT_EQ(r.per_step.rows[2].busy_ns, 0);
  EXPECT_NE(r.per_step.rows[2].incomplete.find("launched no GPU work"), std::string::npos);
}

TEST(StepAnalysis, FirstStepCutWhenTheGpuStillRunsWorkLaunchedBeforeTheTrace) {
  // "warm" has no launch in the trace (correlation 99) and runs [0,25) while step 1 launches k at 1,
  // which waits for it: [25,40). Step 2 is complete; a CPU op ends the trace at 200.
  ExtrasTrace t;
  t.step(1, 0, 50).step(2, 50, 50);
  t.kernel("warm", 7, 0, 25, 99).launch(1, 1).kernel("k", 7, 25, 15, 1).launch(2, 60).kernel("k", 7, 70, 10, 2);
  t.cpu_op("aten::item", 100, 100);
  const RankReport r = analyze_text(t.json());
  ASSERT_EQ(r.per_step.rows.size(), 2u);
  EXPECT_NE(r.per_step.rows[0].incomplete.find("launched before the trace began"), std::string::npos);
  EXPECT_TRUE(r.per_step.rows[1].incomplete.empty());
  EXPECT_EQ(r.per_step.unattributed, 1u);
  EXPECT_EQ(r.per_step.rows[0].busy_ns, 40 * step_us);  // warm and k, clipped to [0,50)
  EXPECT_EQ(r.per_step.rows[0].kernels, 1u);            // only k was launched in it
}

TEST(StepAnalysis, NoProfilerStepsGivesAClearLine) {
  ExtrasTrace t;
  t.launch(1, 0).kernel("a", 7, 5, 10, 1);
  const RankReport r = analyze_text(t.json());
  EXPECT_TRUE(r.per_step.rows.empty());
  std::string text;
  per_step_text(text, r, 10);
  EXPECT_NE(text.find("no ProfilerStep#N annotations"), std::string::npos) << text;
  EXPECT_EQ(per_step_json(r)["steps"].size(), 0u);
}

TEST(StepAnalysis, StepsWithoutGpuWork) {
  ExtrasTrace t;
  t.step(1, 0, 100).step(2, 100, 100).cpu_op("aten::add", 10, 20);
  const RankReport r = analyze_text(t.json());
  EXPECT_EQ(r.per_step.device, -1);
  ASSERT_EQ(r.per_step.rows.size(), 2u);
  for (const auto& s : r.per_step.rows) {
    EXPECT_EQ(s.busy_ns, 0);
    EXPECT_EQ(s.idle_ns, s.duration_ns);
    EXPECT_EQ(s.kernels, 0u);
    EXPECT_TRUE(s.top_kernel.empty());
    EXPECT_TRUE(s.incomplete.empty());
  }
  std::string text;
  per_step_text(text, r, 10);
  EXPECT_NE(text.find("no GPU activity"), std::string::npos) << text;
  EXPECT_NE(text.find("no step launched a kernel"), std::string::npos) << text;
  TraceReport report;
  report.ranks.push_back(r);
  EXPECT_NO_THROW((void)trace_report_json(report).dump());
  EXPECT_NE(trace_report_text(report).find("per step"), std::string::npos);
}

TEST(StepAnalysis, TextShowsTheLongestStepsWhenThereAreMany) {
  ExtrasTrace t;
  for (int i = 0; i < 30; ++i) t.step(i, i * 100, i == 17 ? 90 : 50);
  t.launch(1, 1).kernel("a", 7, 2, 10, 1).cpu_op("aten::x", 0, 3000);
  const RankReport r = analyze_text(t.json());
  std::string text;
  per_step_text(text, r, 5);
  EXPECT_NE(text.find("#17"), std::string::npos) << text;
  EXPECT_NE(text.find("5 longest of 30 steps"), std::string::npos) << text;
}

TEST(StepAnalysis, CliDropIncompleteFlag) {
  testing::TempDir dir;
  const std::string file = dir.write("cut.json", step_three_steps().json());
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{GPUSCOPE_EXE, "trace", file};
    args.insert(args.end(), extra.begin(), extra.end());
    return e2e::run_command(args, {{"LD_LIBRARY_PATH", "/nonexistent"}}, 60);
  };
  auto plain = run({});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("step #3 looks incomplete"), std::string::npos) << plain.out;
  auto dropped = run({"--drop-incomplete", "--format", "json"});
  ASSERT_EQ(dropped.exit_code, 0) << dropped.err;
  const auto doc = nlohmann::json::parse(dropped.out);
  EXPECT_EQ(doc["ranks"][0]["per_step"]["dropped"][0]["number"], 3);
  EXPECT_EQ(doc["ranks"][0]["per_step"]["steps"].size(), 2u);
  auto bad = run({"--sequence-length", "1"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--sequence-length"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace gpuscope::trace
