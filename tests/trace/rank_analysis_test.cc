// Every analysis on a small hand-built trace whose answers were worked out by hand (the derivation is in
// the comments). Events are written out of time order, and kernels overlap across two streams.
#include "trace/rank_analysis.h"

#include <limits>
#include <map>
#include <random>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "trace/verdict.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::analyze_text;

// Device 0, times in us. Launch (cuda_runtime, correlation) -> activity:
//   c1 launch [0,5)     -> gemm  stream 7 [10,30)
//   c2 launch [6,10)    -> gemm  stream 7 [40,50)
//   c3 launch [62,67)   -> relu  stream 7 [70,75)
//   c4 launch [8,10)    -> ncclKernel_AllReduce stream 9 [20,60)
//   c5 launch [9,10)    -> Memcpy HtoD stream 9 [120,130), 1e6 bytes
//   c6 launch [100,103) -> Memset stream 7 [128,133), 2000 bytes
// Device 1: one kernel [50,60) on stream 3 whose launch is not in the trace (correlation 99).
// Union on device 0: [10,60) [70,75) [120,133) -> busy 68, window [10,133) = 123, idle 55:
//   gap [60,70): relu's launch (62) started after the GPU went idle -> host wait 10
//   gap [75,120): memcpy launched at 9, gap >= 30 -> other 45
// Stream 7: busy 40, window 123, idle 83 = kernel wait 10 ([30,40), launch 6 < 30, gap < 30)
//   + host wait 20 ([50,70), launch 62 > 50) + host wait 53 ([75,128), launch 100 > 75).
// Stream 9: busy 50, window [20,130) = 110, idle 60 = other ([60,120), launch 9, gap >= 30).
// Computation 20+10+5 = 35, communication 40, memory 10+5 = 15; overlap of NCCL [20,60) with
// computation [10,30) [40,50) = 20. Launch delays 10 34 8 12 111 28 (mean 203/6), call durations
// 5 4 5 2 1 3. DataLoader [55,85) meets the idle gaps in [60,70) and [75,85) = 20.
const char* const kHandBuiltTrace = R"json({
  "schemaVersion": 1,
  "traceEvents": [
    {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 128, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 6, "bytes": 2000}},
    {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 70.0, "dur": 5.0,
     "args": {"device": 0, "stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 1, "ts": 100, "dur": 3, "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 9, "ts": 20, "dur": 40,
     "args": {"device": 0, "stream": 9, "correlation": 4}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 9, "ts": 120, "dur": 10,
     "args": {"device": 0, "stream": 9, "correlation": 5, "bytes": 1000000}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 40, "dur": 10,
     "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 20,
     "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "other_gpu_kernel", "pid": 1, "tid": 3, "ts": 50, "dur": 10,
     "args": {"device": 1, "stream": 3, "correlation": 99}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 62, "dur": 5, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 0, "dur": 5, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6, "dur": 4, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": 1, "ts": 8, "dur": 2, "args": {"correlation": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 9, "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_Iter.__next__", "pid": 1, "tid": 1, "ts": 55, "dur": 30},
    {"ph": "X", "cat": "user_annotation", "name": "## forward ##", "pid": 1, "tid": 1, "ts": 0, "dur": 140},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 3, "args": {"Input Dims": [[2, 3], [3]]}},
    {"ph": "X", "cat": "python_function", "name": "train.py(1): <module>", "pid": 1, "tid": 1, "ts": -50, "dur": 500},
    {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 0, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 10, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": -1000, "dur": 5000}
  ],
  "distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8},
  "deviceProperties": [{"id": 0, "name": "Test GPU"}]
})json";

constexpr std::int64_t us = 1000;

const DeviceReport& device(const RankReport& r, std::int64_t id) {
  for (const auto& d : r.devices) {
    if (d.device == id) return d;
  }
  ADD_FAILURE() << "no device " << id;
  static DeviceReport none;
  return none;
}

void expect_hand_built_answers(const RankReport& r) {
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 8);
  // Span: CPU and GPU events, not python_function (skipped) and not the profiler's own "Trace" span.
  EXPECT_EQ(r.span_start_ns, 0);
  EXPECT_EQ(r.span_ns(), 150 * us);
  EXPECT_EQ(r.steps.count, 2u);
  EXPECT_EQ(r.steps.mean_ns, 75 * us);
  EXPECT_EQ(r.steps.median_ns, 75 * us);  // two steps: the mean of the middle two
  EXPECT_EQ(r.steps.max_ns, 100 * us);
  EXPECT_EQ(r.data_loading_ns, 30 * us);
  ASSERT_EQ(r.devices.size(), 2u);

  const DeviceReport& d = device(r, 0);
  EXPECT_EQ(d.name, "Test GPU");
  EXPECT_EQ(d.window_start_ns, 10 * us);
  EXPECT_EQ(d.window_ns(), 123 * us);
  EXPECT_EQ(d.busy_ns, 68 * us);
  EXPECT_EQ(d.idle_ns(), 55 * us);
  EXPECT_EQ(d.idle.host_wait_ns, 10 * us);
  EXPECT_EQ(d.idle.kernel_wait_ns, 0);
  EXPECT_EQ(d.idle.other_ns, 45 * us);

  ASSERT_EQ(d.streams.size(), 2u);
  EXPECT_EQ(d.streams[0].stream, 7);
  EXPECT_EQ(d.streams[0].activities, 4u);
  EXPECT_EQ(d.streams[0].busy_ns, 40 * us);
  EXPECT_EQ(d.streams[0].window_ns, 123 * us);
  EXPECT_EQ(d.streams[0].idle.kernel_wait_ns, 10 * us);
  EXPECT_EQ(d.streams[0].idle.host_wait_ns, 73 * us);
  EXPECT_EQ(d.streams[0].idle.other_ns, 0);
  EXPECT_EQ(d.streams[1].stream, 9);
  EXPECT_EQ(d.streams[1].busy_ns, 50 * us);
  EXPECT_EQ(d.streams[1].window_ns, 110 * us);
  EXPECT_EQ(d.streams[1].idle.other_ns, 60 * us);
  EXPECT_EQ(d.streams[1].idle.host_wait_ns + d.streams[1].idle.kernel_wait_ns, 0);

  EXPECT_EQ(d.computation_ns, 35 * us);
  EXPECT_EQ(d.communication_ns, 40 * us);
  EXPECT_EQ(d.memory_ns, 15 * us);
  EXPECT_EQ(d.communication_union_ns, 40 * us);
  EXPECT_EQ(d.computation_union_ns, 35 * us);
  EXPECT_EQ(d.overlap_ns, 20 * us);

  EXPECT_EQ(d.kernel_count, 4u);
  EXPECT_EQ(d.kernel_total_ns, 75 * us);
  ASSERT_EQ(d.top_kernels.size(), 3u);
  EXPECT_EQ(d.top_kernels[0].name, "ncclKernel_AllReduce_RING_LL_Sum_float");
  EXPECT_EQ(d.top_kernels[1].name, "gemm");
  EXPECT_EQ(d.top_kernels[1].count, 2u);
  EXPECT_EQ(d.top_kernels[1].total_ns, 30 * us);
  EXPECT_EQ(d.top_kernels[1].max_ns, 20 * us);
  EXPECT_DOUBLE_EQ(d.top_kernels[1].share, 30.0 / 75.0);
  EXPECT_EQ(d.top_kernels[2].name, "relu");

  ASSERT_EQ(d.transfers.size(), 2u);
  EXPECT_EQ(d.transfers[0].direction, "H2D");
  EXPECT_EQ(d.transfers[0].bytes, 1000000);
  EXPECT_DOUBLE_EQ(d.transfers[0].bytes_per_second(), 1e6 / 10e-6);
  EXPECT_EQ(d.transfers[1].direction, "memset");
  EXPECT_EQ(d.transfers[1].bytes, 2000);
  EXPECT_DOUBLE_EQ(d.transfers[1].bytes_per_second(), 2000 / 5e-6);

  EXPECT_EQ(d.launch.launched, 6u);
  EXPECT_EQ(d.launch.unmatched, 0u);
  EXPECT_EQ(d.launch.calls, 6u);
  EXPECT_EQ(d.launch.call_total_ns, 20 * us);
  EXPECT_EQ(d.launch.call_max_ns, 5 * us);
  EXPECT_EQ(d.launch.delay_mean_ns, 203 * us / 6);
  EXPECT_EQ(d.launch.delay_p50_ns, 28 * us);   // sorted 8 10 12 28 34 111: index round(0.5 * 5) = 3
  EXPECT_EQ(d.launch.delay_p95_ns, 111 * us);
  EXPECT_EQ(d.launch.delay_max_ns, 111 * us);
  EXPECT_EQ(d.launch.kernels, 4u);
  EXPECT_EQ(d.launch.short_kernels, 1u);  // relu, 5 us
  EXPECT_EQ(d.launch.short_kernel_ns, 5 * us);
  EXPECT_EQ(d.data_loading_idle_ns, 20 * us);
  // Idle 55/123 = 45%: not mostly data loading (20/55) nor host wait (10/55); NCCL not hidden behind
  // computation is 20/123 = 16% of the window (>= 15%): communication bound.
  EXPECT_EQ(d.verdict.kind, VerdictKind::kCommunicationBound);

  const DeviceReport& other = device(r, 1);
  EXPECT_EQ(other.busy_ns, 10 * us);
  EXPECT_EQ(other.idle_ns(), 0);
  EXPECT_EQ(other.launch.unmatched, 1u);
  EXPECT_EQ(other.verdict.kind, VerdictKind::kComputeBound);
  EXPECT_EQ(r.main_device()->device, 0);
}

TEST(RankAnalysis, HandBuiltTraceHasTheWorkedOutAnswers) { expect_hand_built_answers(analyze_text(kHandBuiltTrace)); }

TEST(RankAnalysis, SameAnswersWhenEveryEventCrossesAWindowBoundary) {
  // A 64-byte window: every event is cut by a refill; with the plain decoder and with simdjson alone.
  for (const bool plain : {true, false}) {
    ParseOptions tiny;
    tiny.window_bytes = 64;
    tiny.plain_decoder = plain;
    expect_hand_built_answers(analyze_text(kHandBuiltTrace, tiny));
    ParseOptions odd;
    odd.window_bytes = 97;
    odd.plain_decoder = plain;
    expect_hand_built_answers(analyze_text(kHandBuiltTrace, odd));
  }
}

TEST(RankAnalysis, SameAnswersFromGzip) {
  const std::string gz = testing::gzip_text(kHandBuiltTrace);
  auto reader = TraceByteReader::from_memory(gz.data(), gz.size());
  RankTimeline timeline;
  const std::regex pattern("DataLoader");
  TimelineBuilder builder(timeline, pattern);
  auto summary = parse_trace(reader, builder, timeline.header, {});
  ASSERT_TRUE(summary.has_value()) << summary.error().what();
  EXPECT_TRUE(reader.gzip());
  expect_hand_built_answers(analyze_rank(timeline, {}));
}

// The launch join, whatever the correlation ids look like: the hand-built trace with runtime calls that
// launch nothing added (cudaGetDevice and the like: most calls in a real trace), with its ids as they
// are (dense) and then multiplied by 10^12 (too spread out for the bitmap the join uses when ids are
// dense). The extra calls are not launches, so every answer stays the same.
TEST(RankAnalysis, SameLaunchAnswersWithSparseIdsAndCallsThatLaunchNothing) {
  const std::string extra =
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaGetDevice", "pid": 1, "tid": 1, "ts": 1, "dur": 7, "args": {"correlation": 50}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "pid": 1, "tid": 1, "ts": 2, "dur": 9, "args": {"correlation": 7}},
    )";
  std::string dense = kHandBuiltTrace;
  dense.insert(dense.find("{\"ph\": \"X\", \"cat\": \"cuda_runtime\""), extra);
  expect_hand_built_answers(analyze_text(dense));
  const std::string sparse = std::regex_replace(dense, std::regex(R"("correlation": (\d+))"), R"("correlation": $01000000000000)");
  ASSERT_NE(sparse.find("\"correlation\": 99000000000000"), std::string::npos);
  expect_hand_built_answers(analyze_text(sparse));
}

// The decoder leaves "args" once it has the members it reads; whatever follows, nested or not, in args
// or after it, is still read right.
TEST(RankAnalysis, MembersAfterTheArgsAnEventNeedsAreStillRead) {
  const RankReport r = analyze_text(R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "args": {"device": 1, "stream": 7, "correlation": 1,
     "grid": [1, 2, {"x": [3]}], "bytes": "not read for a kernel", "stream": "nor this"}, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {"correlation": 1, "cbid": [211]}, "ts": 2, "dur": 1},
    {"args": {"device": 1, "stream": 8, "correlation": 2, "bytes": 4096, "junk": [[]]}, "ph": "X", "cat": "gpu_memcpy",
     "name": "Memcpy HtoD (Pinned -> Device)", "ts": 20, "dur": 2}]})json");
  const DeviceReport& d = device(r, 1);
  EXPECT_EQ(d.window_start_ns, 10 * us);
  EXPECT_EQ(d.window_ns(), 12 * us);
  ASSERT_EQ(d.streams.size(), 2u);
  EXPECT_EQ(d.streams[0].stream, 7);
  EXPECT_EQ(d.streams[1].stream, 8);
  EXPECT_EQ(d.launch.launched, 1u);
  EXPECT_EQ(d.launch.delay_max_ns, 8 * us);
  EXPECT_EQ(d.launch.call_total_ns, 1 * us);
  ASSERT_EQ(d.transfers.size(), 1u);
  EXPECT_EQ(d.transfers[0].bytes, 4096);
}

// One call can start several activities (a CUDA graph launch): each gets the call's start, and the call
// counts once. Two calls with one id (a malformed trace): the earlier one is the launch.
TEST(RankAnalysis, GraphLaunchCountsOnceAndTheEarlierOfTwoCallsWins) {
  for (const char* id : {"3", "3000000000000"}) {
    SCOPED_TRACE(id);
    const std::string events = fmt::format(
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","ts":10,"dur":4,"args":{{"correlation":{0}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"a","ts":20,"dur":5,"args":{{"device":0,"stream":7,"correlation":{0}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"b","ts":30,"dur":5,"args":{{"device":0,"stream":7,"correlation":{0}}}}},)"
        R"({{"ph":"X","cat":"kernel","name":"c","ts":40,"dur":5,"args":{{"device":0,"stream":7,"correlation":1}}}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":36,"dur":3,"args":{{"correlation":1}}}},)"
        R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":32,"dur":2,"args":{{"correlation":1}}}})",
        id);
    const RankReport r = analyze_text(std::string(R"({"traceEvents": [)") + events + "]}");
    const LaunchReport& l = device(r, 0).launch;
    EXPECT_EQ(l.launched, 3u);
    EXPECT_EQ(l.unmatched, 0u);
    EXPECT_EQ(l.calls, 2u);
    EXPECT_EQ(l.call_total_ns, 6 * us);  // 4 + 2: the graph launch once, the earlier call of id 1
    EXPECT_EQ(l.call_max_ns, 4 * us);
    EXPECT_EQ(l.delay_max_ns, 20 * us);             // b: 30 - 10
    EXPECT_EQ(l.delay_mean_ns, (10 + 20 + 8) * us / 3);  // a 10, b 20, c 40 - 32 = 8
  }
}

// The launch join on random traces: activities in runs of rising ids with jumps back and forth (the
// lookup starts where the last one ended), ids with no call, calls that launch nothing, ids with two
// calls. Against a plain map from id to its earliest call.
TEST(RankAnalysis, LaunchJoinMatchesAMapFromIdToTheEarliestCall) {
  std::mt19937 random(5);
  for (int round = 0; round < 40; ++round) {
    std::string events;
    std::map<int, std::pair<int, int>> earliest;  // id -> (start, duration) of its earliest call
    const int ids = 20 + static_cast<int>(random() % 400);
    for (int id = 0; id < ids; ++id) {
      for (int calls = static_cast<int>(random() % 4) - 1; calls > 0; --calls) {  // 0, 1 or 2 calls
        const int start = static_cast<int>(random() % 1000), duration = 1 + static_cast<int>(random() % 9);
        events += fmt::format(R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":{},"dur":{},"args":{{"correlation":{}}}}},)",
                              start, duration, id);
        auto [it, fresh] = earliest.try_emplace(id, start, duration);
        if (!fresh && start < it->second.first) it->second = {start, duration};
      }
    }
    std::uint64_t launched = 0, unmatched = 0;
    std::int64_t delay_max = std::numeric_limits<std::int64_t>::min();
    int id = static_cast<int>(random() % ids);
    const int activities = 10 + static_cast<int>(random() % 300);
    for (int k = 0; k < activities; ++k) {
      id = random() % 5 == 0 ? static_cast<int>(random() % ids) : std::min(ids - 1, id + static_cast<int>(random() % 3));
      const int start = 2000 + k;
      events += fmt::format(R"({{"ph":"X","cat":"kernel","name":"k","ts":{},"dur":1,"args":{{"device":0,"stream":7,"correlation":{}}}}},)",
                            start, id);
      if (auto it = earliest.find(id); it != earliest.end()) {
        ++launched;
        delay_max = std::max<std::int64_t>(delay_max, (start - it->second.first) * us);
      } else {
        ++unmatched;
      }
    }
    events.pop_back();
    const RankReport r = analyze_text(R"({"traceEvents": [)" + events + "]}");
    const LaunchReport& l = device(r, 0).launch;
    ASSERT_EQ(l.launched, launched) << "round " << round;
    ASSERT_EQ(l.unmatched, unmatched) << "round " << round;
    if (launched > 0) {
      ASSERT_EQ(l.delay_max_ns, delay_max) << "round " << round;
    }
  }
}

TEST(RankAnalysis, PythonFunctionsOnlyWhenAsked) {
  ParseOptions with;
  with.python_functions = true;
  const RankReport r = analyze_text(kHandBuiltTrace, with);
  ASSERT_EQ(r.python_functions.size(), 1u);
  EXPECT_EQ(r.python_functions[0].total_ns, 500 * us);
  EXPECT_EQ(r.span_start_ns, -50 * us);  // now part of the span
  EXPECT_TRUE(analyze_text(kHandBuiltTrace).python_functions.empty());
}

TEST(RankAnalysis, KernelWaitThresholdIsAnOption) {
  // With a 50 us threshold the 45 us "other" gap on device 0 becomes kernel wait.
  AnalysisOptions options;
  options.kernel_wait_threshold_ns = 50 * us;
  const RankReport r = analyze_text(kHandBuiltTrace, {}, options);
  EXPECT_EQ(device(r, 0).idle.kernel_wait_ns, 45 * us);
  EXPECT_EQ(device(r, 0).idle.other_ns, 0);
}

// Many kernel names, each seen three times (once in reverse order): each name gets one id, and every
// kernel is counted under its own name.
TEST(RankAnalysis, EveryKernelNameKeepsItsOwnCount) {
  std::string events;
  constexpr int kNames = 1500;
  for (int round = 0; round < 3; ++round) {
    for (int n = 0; n < kNames; ++n) {
      const int name = round == 1 ? kNames - 1 - n : n;  // backwards once
      events += fmt::format(R"json({{"ph":"X","cat":"kernel","name":"void kernel_{}<float>(int)","ts":{},"dur":{},)json"
                            R"json("args":{{"device":0,"stream":7,"correlation":-1}}}},)json",
                            name, 10 * (round * kNames + n), 1 + name % 5);
    }
  }
  events.pop_back();
  AnalysisOptions options;
  options.top = 2 * kNames;
  const RankReport r = analyze_text(R"({"traceEvents": [)" + events + "]}", {}, options);
  const DeviceReport& d = device(r, 0);
  ASSERT_EQ(d.top_kernels.size(), static_cast<std::size_t>(kNames));
  for (const auto& k : d.top_kernels) {
    ASSERT_EQ(k.count, 3u) << k.name;
    ASSERT_TRUE(k.name.starts_with("void kernel_")) << k.name;
    const int name = std::stoi(k.name.substr(std::string("void kernel_").size()));
    ASSERT_EQ(k.total_ns, 3 * (1 + name % 5) * us) << k.name;
  }
}

TEST(RankAnalysis, TopNLimitsTheKernelList) {
  AnalysisOptions options;
  options.top = 1;
  EXPECT_EQ(device(analyze_text(kHandBuiltTrace, {}, options), 0).top_kernels.size(), 1u);
}

// A trace built to hit each verdict: one device, one stream, kernels and gaps chosen per case.
std::string single_stream_trace(const std::string& events) {
  return std::string(R"({"traceEvents": [)") + events + "]}";
}

std::string kernel(const std::string& name, int ts, int dur, int correlation, int stream = 7) {
  return fmt::format(R"({{"ph":"X","cat":"kernel","name":"{}","ts":{},"dur":{},"args":{{"device":0,"stream":{},"correlation":{}}}}})",
                     name, ts, dur, stream, correlation);
}
std::string launch(int ts, int correlation) {
  return fmt::format(R"({{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":{},"dur":2,"args":{{"correlation":{}}}}})", ts,
                     correlation);
}

TEST(Verdict, LaunchBoundWhenIdleIsMostlyHostWait) {
  // Kernels of 5 us every 20 us, each launched after the previous one ended.
  std::string events;
  for (int i = 0; i < 10; ++i) {
    if (i > 0) events += ",";
    events += launch(i * 20 + 6, i) + "," + kernel("tiny", i * 20 + 10, 5, i);
  }
  const auto r = analyze_text(single_stream_trace(events));
  EXPECT_EQ(r.devices.at(0).verdict.kind, VerdictKind::kLaunchBound) << r.devices.at(0).verdict.evidence;
}

TEST(Verdict, DataLoadingBoundWhenIdleIsInsideDataLoader) {
  const std::string events = kernel("k", 0, 100, 1) + "," + kernel("k", 1000, 100, 2) + "," +
                             R"({"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#x","ts":100,"dur":900})";
  EXPECT_EQ(analyze_text(single_stream_trace(events)).devices.at(0).verdict.kind, VerdictKind::kDataLoadingBound);
}

TEST(Verdict, MemoryCopyBoundWhenCopiesDominateBusyTime) {
  const std::string events =
      kernel("k", 0, 100, 1) + "," +
      R"json({"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","ts":100,"dur":100,"args":{"device":0,"stream":7,"correlation":2,"bytes":4096}})json";
  const auto r = analyze_text(single_stream_trace(events));
  EXPECT_EQ(r.devices.at(0).verdict.kind, VerdictKind::kMemoryCopyBound);
  EXPECT_EQ(r.devices.at(0).transfers.at(0).direction, "D2H");
}

TEST(Verdict, ComputeBoundWhenBusy) {
  const std::string events = kernel("k", 0, 100, 1) + "," + kernel("k", 101, 100, 2);
  EXPECT_EQ(analyze_text(single_stream_trace(events)).devices.at(0).verdict.kind, VerdictKind::kComputeBound);
}

TEST(Verdict, NoGpuWorkWithoutDevices) {
  DeviceReport empty;
  EXPECT_EQ(decide_verdict(empty).kind, VerdictKind::kNoGpuWork);
}

TEST(TransferDirection, FromKinetoMemcpyNames) {
  EXPECT_EQ(direction_of_memcpy("Memcpy HtoD (Pageable -> Device)"), TransferDirection::kHostToDevice);
  EXPECT_EQ(direction_of_memcpy("Memcpy DtoH (Device -> Pinned)"), TransferDirection::kDeviceToHost);
  EXPECT_EQ(direction_of_memcpy("Memcpy DtoD (Device -> Device)"), TransferDirection::kDeviceToDevice);
  EXPECT_EQ(direction_of_memcpy("Memcpy PtoP (Device -> Device)"), TransferDirection::kPeerToPeer);
  EXPECT_EQ(direction_of_memcpy("Memcpy"), TransferDirection::kOther);
  EXPECT_TRUE(is_communication_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)"));
  EXPECT_TRUE(is_communication_kernel("void NCCL_kernel()"));
  EXPECT_FALSE(is_communication_kernel("void gemm()"));
}

// Room for a trace's activities and calls up front, but never more than 64 MiB of address space each:
// a 30 GB trace must not ask for 20 GB it may not get.
TEST(TimelineBuilder, ReservesRoomByInputSizeUpToACap) {
  RankTimeline timeline;
  const std::regex pattern("DataLoader");
  TimelineBuilder builder(timeline, pattern);
  builder.reserve_for(35'000'000);
  EXPECT_GE(timeline.activities.capacity(), 35'000'000u / 64);
  EXPECT_GE(timeline.runtime_calls.capacity(), 35'000'000u / 64);
  RankTimeline huge;
  TimelineBuilder huge_builder(huge, pattern);
  huge_builder.reserve_for(30'000'000'000);
  EXPECT_LE(huge.activities.capacity() * sizeof(GpuActivity), 64u << 20);
  EXPECT_LE(huge.runtime_calls.capacity() * sizeof(RuntimeCall), 64u << 20);
  EXPECT_GT(huge.activities.capacity(), 35'000'000u / 64);
}

}  // namespace
}  // namespace gpuscope::trace
