// The critical path of a step: hand-made steps with the path worked out by hand, the real H100 traces
// (launch bound: the CPU; compute bound: the GPU, with the step's kernels summed here from the raw
// events), and traces missing a side.
#include "trace/critical_path.h"

#include <gtest/gtest.h>

#include <string>

#include "trace/ops_report.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::parse_text;

CriticalPathReport path_of(const std::string& json) {
  auto parsed = parse_text(json);
  EXPECT_TRUE(parsed.summary.has_value()) << (parsed.summary ? "" : parsed.summary.error().what());
  return critical_paths(parsed.timeline, nest_cpu_events(parsed.timeline), 10);
}

const PathElement* find_element(const std::vector<PathElement>& elements, PathElementKind kind, const std::string& name) {
  for (const auto& e : elements) {
    if (e.kind == kind && e.name == name) return &e;
  }
  return nullptr;
}

// One step [0, 700) us on thread 1: op A [0, 100) launches k1 (cudaLaunchKernel [10, 20), k1 [30, 530));
// cudaStreamSynchronize [110, 560) waits for k1; op B [560, 600).
// By hand: A before the launch (10) -> k1 (500) -> the sync after k1 ended (560 - 530 = 30) -> B (40)
// -> the step outside ops to its end (100) = 680 us, 500 of it GPU: GPU bound. The CPU's own chain is
// shorter: A 10 + launch 10 + A 80 + step 10 + sync tail 30 + B 40 + step 100 = 280.
const std::string kSyncStep = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "tid": 1, "ts": 0, "dur": 700},
  {"ph": "X", "cat": "cpu_op", "name": "A", "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 10, "dur": 10, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "tid": 1, "ts": 110, "dur": 450, "args": {"correlation": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "B", "tid": 1, "ts": 560, "dur": 40},
  {"ph": "X", "cat": "kernel", "name": "k1", "ts": 30, "dur": 500, "args": {"device": 0, "stream": 7, "correlation": 1}}
]})";

TEST(CriticalPath, ASyncPutsTheKernelItWaitedForOnThePath) {
  const CriticalPathReport r = path_of(kSyncStep);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_FALSE(r.whole_trace);
  const StepCriticalPath& s = r.steps[0];
  EXPECT_EQ(s.step, "ProfilerStep#7");
  EXPECT_EQ(s.duration_ns(), 700'000);
  EXPECT_EQ(s.length_ns, 680'000);
  EXPECT_EQ(s.gpu_ns, 500'000);
  EXPECT_EQ(s.cpu_ns, 180'000);
  EXPECT_TRUE(s.gpu_bound());
  EXPECT_EQ(r.gpu_bound_steps, 1u);
  const PathElement* k1 = find_element(s.top, PathElementKind::kKernel, "k1");
  ASSERT_NE(k1, nullptr);
  EXPECT_NEAR(k1->share, 500.0 / 680.0, 1e-12);
  const PathElement* sync = find_element(s.top, PathElementKind::kRuntimeCall, "cudaStreamSynchronize");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->total_ns, 30'000);  // only the part after k1 ended: the wait is nobody's work
  const PathElement* a = find_element(s.top, PathElementKind::kCpu, "A");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->total_ns, 10'000);  // the part before the launch; the launch call itself is not on the way to k1
  const PathElement* outside = find_element(s.top, PathElementKind::kCpu, "ProfilerStep#* (outside ops)");
  ASSERT_NE(outside, nullptr);
  EXPECT_EQ(outside->total_ns, 100'000);
  EXPECT_EQ(s.top.front().name, "k1");
}

TEST(CriticalPath, WithoutTheSyncTheCpuBoundsTheStep) {
  // The same step without the sync: the CPU never waits; its chain is the step's busy time, 700 - the
  // launch = A 90 + launch 10 + the step outside ops 560 (100..560 and 600..700) + B 40 = 700.
  std::string json = kSyncStep;
  json.erase(json.find("  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\""),
             json.find("  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"B\"") -
                 json.find("  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\""));
  const CriticalPathReport r = path_of(json);
  ASSERT_EQ(r.steps.size(), 1u);
  const StepCriticalPath& s = r.steps[0];
  EXPECT_FALSE(s.gpu_bound());
  EXPECT_EQ(s.length_ns, 700'000);
  EXPECT_EQ(s.cpu_ns, 700'000);
  EXPECT_EQ(s.gpu_ns, 0);
}

TEST(CriticalPath, KernelsQueuedBackToBackAreOneChain) {
  // A short CPU step launches three long kernels on one stream: the step runs to the end of the last,
  // and the path is the first launch's CPU time plus the three kernels.
  const CriticalPathReport r = path_of(R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "tid": 1, "ts": 0, "dur": 30},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "tid": 1, "ts": 1, "dur": 28},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 2, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 10, "dur": 2, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 20, "dur": 2, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 5, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 105, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 205, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 3}}
  ]})");
  ASSERT_EQ(r.steps.size(), 1u);
  const StepCriticalPath& s = r.steps[0];
  EXPECT_EQ(s.cpu_end_ns - s.start_ns, 30'000);
  EXPECT_EQ(s.duration_ns(), 305'000);
  EXPECT_EQ(s.gpu_ns, 300'000);
  EXPECT_EQ(s.cpu_ns, 2'000);  // the step outside ops [0, 1) and aten::mm [1, 2) before the first launch
  ASSERT_FALSE(s.top.empty());
  EXPECT_EQ(s.top.front().name, "gemm");
  EXPECT_EQ(s.top.front().count, 3u);
}

TEST(CriticalPath, TracesMissingASideGiveAPathOrANoteNeverACrash) {
  // No steps: the whole trace; no CPU events: only the calls and the GPU work.
  const CriticalPathReport no_cpu = path_of(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  ASSERT_EQ(no_cpu.steps.size(), 1u);
  EXPECT_TRUE(no_cpu.whole_trace);
  EXPECT_EQ(no_cpu.steps[0].gpu_ns, 50'000);
  EXPECT_FALSE(no_cpu.note.empty());
  // Kernels without runtime calls: the GPU work alone.
  const CriticalPathReport orphans = path_of(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 50, "args": {"device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 70, "dur": 50, "args": {"device": 0, "stream": 7}}]})");
  ASSERT_EQ(orphans.steps.size(), 1u);
  EXPECT_EQ(orphans.steps[0].gpu_ns, 100'000);
  EXPECT_NE(orphans.note.find("no cpu_op"), std::string::npos);
  // Only CPU events: nothing links them to a GPU.
  const CriticalPathReport cpu_only = path_of(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 0, "dur": 10}]})");
  EXPECT_TRUE(cpu_only.steps.empty());
  EXPECT_FALSE(cpu_only.note.empty());
  // Misnested ops and a call that overlaps the one before it (clocks out of step).
  const CriticalPathReport odd = path_of(R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 0, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "b", "tid": 1, "ts": 40, "dur": 40},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 45, "dur": 10, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "tid": 1, "ts": 50, "dur": 30, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 30, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  ASSERT_EQ(odd.steps.size(), 1u);
  EXPECT_LE(odd.steps[0].length_ns, odd.steps[0].duration_ns());
  // An empty trace.
  const CriticalPathReport empty = path_of(R"({"traceEvents": []})");
  EXPECT_TRUE(empty.steps.empty());
}

RankTimeline real_timeline(const std::string& name) {
  auto reader = TraceByteReader::open(std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/") + name);
  EXPECT_TRUE(reader.has_value());
  auto parsed = parse_text(testing::read_all(*reader).value_or(""));
  EXPECT_TRUE(parsed.summary.has_value());
  return std::move(parsed.timeline);
}

TEST(CriticalPath, RealH100TracesAreBoundWhereTheyWereMadeToBe) {
  // trace_launch_bound: 200 tiny kernels a step, each launched by its own aten::add_: the CPU.
  {
    const RankTimeline t = real_timeline("trace_launch_bound.json.gz");
    const CriticalPathReport r = critical_paths(t, nest_cpu_events(t), 10);
    ASSERT_EQ(r.steps.size(), 4u);
    EXPECT_EQ(r.gpu_bound_steps, 0u);
    for (const auto& s : r.steps) {
      EXPECT_LE(s.length_ns, s.duration_ns());
      std::int64_t sum = 0;
      for (const auto& e : s.top) sum += e.total_ns;
      EXPECT_LE(sum, s.length_ns);
    }
    ASSERT_NE(find_element(r.top, PathElementKind::kRuntimeCall, "cudaLaunchKernel"), nullptr);
  }
  // trace_compute_bound: matmuls of 1.4 ms launched in 0.1 ms steps: the GPU. On one stream, the path
  // through a step's GPU work holds every kernel the step's calls launched, and at most every memset
  // too (a 1 us memset launched before more CPU work is off the path: the CPU's way to the next launch
  // is longer): computed here from the raw events (calls in the step's range, activities by id).
  {
    const RankTimeline t = real_timeline("trace_compute_bound.json.gz");
    const CriticalPathReport r = critical_paths(t, nest_cpu_events(t), 10);
    ASSERT_EQ(r.steps.size(), 4u);
    EXPECT_EQ(r.gpu_bound_steps, 4u);
    for (const auto& s : r.steps) {
      std::int64_t launched_ns = 0, kernels_ns = 0;
      for (const GpuActivity& a : t.activities) {
        for (const RuntimeCall& c : t.runtime_calls) {
          if (c.correlation == a.correlation && c.start_ns >= s.start_ns && c.start_ns < s.cpu_end_ns) {
            launched_ns += a.duration_ns;
            if (a.kind == ActivityKind::kComputeKernel) kernels_ns += a.duration_ns;
            break;
          }
        }
      }
      EXPECT_GT(kernels_ns, 1'000'000) << s.step;
      EXPECT_GE(s.gpu_ns, kernels_ns) << s.step;
      EXPECT_LE(s.gpu_ns, launched_ns) << s.step;
      EXPECT_LT(s.cpu_ns, s.gpu_ns / 50) << s.step;
    }
  }
}

TEST(CriticalPath, TextAndJsonNameTheBoundAndTheElements) {
  auto parsed = parse_text(kSyncStep);
  ASSERT_TRUE(parsed.summary.has_value());
  TraceReport report;
  report.ranks.push_back(analyze_rank(parsed.timeline, AnalysisOptions{}));
  report.ranks[0].file = "sync.json";
  const std::string text = critical_path_view_text(report);
  EXPECT_NE(text.find("ProfilerStep#7"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU  kernel k1 73.5%"), std::string::npos) << text;
  const auto json = critical_path_view_json(report);
  const auto& cp = json["ranks"][0]["critical_path"];
  EXPECT_EQ(cp["bound"], "gpu");
  EXPECT_DOUBLE_EQ(cp["steps"][0]["path_seconds"].get<double>(), 680e-6);
  EXPECT_EQ(cp["top"][0]["kind"], "kernel");
  const std::string by_op = attribution_view_text(report, AttributionView::kOps);
  EXPECT_NE(by_op.find("A "), std::string::npos) << by_op;
}

}  // namespace
}  // namespace gpuscope::trace
