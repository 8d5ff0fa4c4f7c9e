// The CPU side of a trace (cpu_op, user_annotation, gpu_user_annotation events and the runtime calls'
// names and threads), as RankTimeline keeps it: read the same by Kineto's fast cpu_op path, the plain
// decoder and simdjson's, and counted the same as a separate Python computation counts them.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::parse_text;

// One CPU event with its name spelled out, to compare timelines whose name ids differ.
using CpuEventRow = std::tuple<std::string, std::int64_t, std::int64_t, std::int32_t, int>;
using RuntimeCallRow = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int32_t>;

std::vector<CpuEventRow> cpu_event_rows(const RankTimeline& t) {
  std::vector<CpuEventRow> rows;
  for (const CpuEvent& e : t.cpu_events) {
    rows.emplace_back(t.names.at(e.name_id), e.start_ns, e.duration_ns, e.tid, static_cast<int>(e.kind));
  }
  return rows;
}

std::vector<RuntimeCallRow> runtime_call_rows(const RankTimeline& t) {
  std::vector<RuntimeCallRow> rows;
  for (const RuntimeCall& c : t.runtime_calls) {
    rows.emplace_back(t.names.at(c.name_id), c.correlation, c.start_ns, c.duration_ns, c.tid);
  }
  return rows;
}

// Kineto's own layout (line breaks, four-space indents) for the cpu_op, and compact JSON for the rest.
const std::string kCpuEventsTrace = R"({"traceEvents": [
  {
    "ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 10, "tid": 11,
    "ts": 1000, "dur": 50.5,
    "args": {
      "External id": 7, "Input Dims": [[2, 3], [3]], "Input type": ["float", "float"]
    }
  },
  {"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":10,"tid":11,"ts":1001.25,"dur":40,"args":{"External id":8}},
  {"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":10,"tid":11,"ts":990,"dur":100,"args":{}},
  {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":10,"tid":12,"ts":1002,"dur":5,"args":{"correlation":91,"cbid":211}},
  {"ph":"X","cat":"cuda_driver","name":"cuLaunchKernelEx","pid":10,"tid":11,"ts":1010,"dur":3,"args":{"correlation":92}},
  {"ph":"X","cat":"gpu_user_annotation","name":"forward","pid":0,"tid":7,"ts":1003,"dur":20,"args":{"External id":1}},
  {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":1004,"dur":9,"args":{"device":0,"stream":7,"correlation":91}},
  {"ph":"X","cat":"cpu_op","name":"aten::empty","pid":10,"tid":"main thread","ts":1060,"dur":1,"args":{}},
  {"ph":"X","cat":"cpu_op","name":"aten::zero_","ts":1070,"dur":2},
  {"ph":"X","cat":"cpu_op","name":"aten::\"quoted\"","pid":10,"tid":11,"ts":1080,"dur":0,"args":{}}
]})";

TEST(CpuEvents, KeptWithTheirThreadNameAndKind) {
  auto parsed = parse_text(kCpuEventsTrace);
  ASSERT_TRUE(parsed.summary.has_value()) << parsed.summary.error().what();
  const auto rows = cpu_event_rows(parsed.timeline);
  constexpr int op = static_cast<int>(CpuEventKind::kCpuOp);
  constexpr int annotation = static_cast<int>(CpuEventKind::kUserAnnotation);
  constexpr int gpu_annotation = static_cast<int>(CpuEventKind::kGpuUserAnnotation);
  const std::vector<CpuEventRow> expected{
      {"aten::linear", 1'000'000, 50'500, 11, op},
      {"aten::addmm", 1'001'250, 40'000, 11, op},
      {"ProfilerStep#3", 990'000, 100'000, 11, annotation},
      {"forward", 1'003'000, 20'000, 7, gpu_annotation},  // the stream, as Kineto writes it
      {"aten::empty", 1'060'000, 1'000, -1, op},           // a label for a thread names none
      {"aten::zero_", 1'070'000, 2'000, -1, op},           // no tid at all
      {"aten::\"quoted\"", 1'080'000, 0, 11, op},          // an escape: read by the decoders, unescaped
  };
  EXPECT_EQ(rows, expected);
  const std::vector<RuntimeCallRow> calls{{"cudaLaunchKernel", 91, 1'002'000, 5'000, 12},
                                          {"cuLaunchKernelEx", 92, 1'010'000, 3'000, 11}};
  EXPECT_EQ(runtime_call_rows(parsed.timeline), calls);
  EXPECT_EQ(parsed.timeline.cpu_ops, 5u);
  EXPECT_EQ(parsed.timeline.annotations, 1u);
  ASSERT_EQ(parsed.timeline.steps.size(), 1u);
  // The GPU's copy of an annotation is not an event of its own for the span: CPU ops, calls, kernels are.
  EXPECT_EQ(parsed.timeline.first_ns, 990'000);
  EXPECT_EQ(parsed.timeline.last_ns, 1'090'000);
}

// The three ways an event can be read give the same CPU events and runtime calls: Kineto's cpu_op
// layout by its first members (default), and with --all-events every event through the plain decoder,
// or through simdjson.
void expect_three_ways_agree(const std::string& json, const std::string& what) {
  ParseOptions plain, simdjson;
  plain.parse_unused_events = simdjson.parse_unused_events = true;
  simdjson.plain_decoder = false;
  simdjson.window_bytes = 4096;  // and window boundaries inside events
  auto fast = parse_text(json);
  auto by_plain = parse_text(json, plain);
  auto by_simdjson = parse_text(json, simdjson);
  ASSERT_TRUE(fast.summary.has_value()) << what << ": " << fast.summary.error().what();
  ASSERT_TRUE(by_plain.summary.has_value()) << what << ": " << by_plain.summary.error().what();
  ASSERT_TRUE(by_simdjson.summary.has_value()) << what << ": " << by_simdjson.summary.error().what();
  const auto rows = cpu_event_rows(fast.timeline);
  EXPECT_EQ(rows, cpu_event_rows(by_plain.timeline)) << what;
  EXPECT_EQ(rows, cpu_event_rows(by_simdjson.timeline)) << what;
  const auto calls = runtime_call_rows(fast.timeline);
  EXPECT_EQ(calls, runtime_call_rows(by_plain.timeline)) << what;
  EXPECT_EQ(calls, runtime_call_rows(by_simdjson.timeline)) << what;
  EXPECT_EQ(fast.summary->complete_events, by_simdjson.summary->complete_events) << what;
}

TEST(CpuEvents, TheFastPathAndBothDecodersAgree) {
  expect_three_ways_agree(kCpuEventsTrace, "synthetic");
  for (const char* name : {"trace_diff__control__control.json.gz", "trace_filter__sampled_rank-0.json.gz"}) {
    auto reader = TraceByteReader::open(testing::conformance_trace(name));
    ASSERT_TRUE(reader.has_value()) << name;
    expect_three_ways_agree(testing::read_all(*reader).value_or(""), name);
  }
  for (const char* name : {"trace_launch_bound.json.gz", "trace_compute_bound.json.gz"}) {
    auto reader = TraceByteReader::open(std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/") + name);
    ASSERT_TRUE(reader.has_value()) << name;
    expect_three_ways_agree(testing::read_all(*reader).value_or(""), name);
  }
}

TEST(CpuEvents, ABadCpuOpIsAnErrorNamingItsPlace) {
  // The fast path declines what it cannot read plainly; the decoders then report it, with the offset.
  auto negative = parse_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 1, "dur": -2, "args": {}}]})");
  ASSERT_FALSE(negative.summary.has_value());
  EXPECT_EQ(negative.summary.error().kind, TraceErrorKind::kBadValue);
  EXPECT_NE(std::string(negative.summary.error().what()).find("negative duration"), std::string::npos);
  auto bad_tid = parse_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1x, "ts": 1, "dur": 2}]})");
  ASSERT_FALSE(bad_tid.summary.has_value());
  // Lenient: the bad op is skipped and counted, the good one kept.
  ParseOptions lenient;
  lenient.lenient = true;
  auto kept = parse_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 1, "dur": -2},
      {"ph": "X", "cat": "cpu_op", "name": "b", "tid": 1, "ts": 5, "dur": 2, "args": {}}]})", lenient);
  ASSERT_TRUE(kept.summary.has_value());
  EXPECT_EQ(kept.summary->skipped_events, 1u);
  ASSERT_EQ(kept.timeline.cpu_events.size(), 1u);
  EXPECT_EQ(kept.timeline.names[kept.timeline.cpu_events[0].name_id], "b");
}

TEST(CpuEvents, CompactThreadIdsKeepLinuxIdsAndFoldLargeOnes) {
  EXPECT_EQ(compact_tid(-1), -1);
  EXPECT_EQ(compact_tid(3113936), 3113936);
  EXPECT_EQ(compact_tid(0x7FFFFFFF), 0x7FFFFFFF);
  EXPECT_EQ(compact_tid(-1029147072), -1029147072);  // as the real trace has one
  const std::int32_t big = compact_tid(std::int64_t{0x100000000} + 5);
  EXPECT_GE(big, 0);
  EXPECT_NE(big, compact_tid(std::int64_t{0x100000000} + 6));
}

// Counted again in Python from json.load: per (kind, tid), the number of events and their summed
// duration in integer nanoseconds (Decimal, so that Kineto's microsecond decimals convert exactly).
constexpr const char* kCpuEventsPython = R"(
import gzip, json, sys
from decimal import Decimal
with gzip.open(sys.argv[1], 'rt') as f:
    events = json.load(f)['traceEvents']
kinds = {'cpu_op': 0, 'user_annotation': 1, 'gpu_user_annotation': 2}
totals = {}
calls = {}
for e in events:
    if e.get('ph') != 'X':
        continue
    tid = e.get('tid')
    tid = tid if isinstance(tid, int) else -1
    ns = int(Decimal(str(e['dur'])) * 1000)
    cat = e.get('cat')
    if cat in kinds:
        key = (kinds[cat], tid)
        n, d = totals.get(key, (0, 0))
        totals[key] = (n + 1, d + ns)
    elif cat in ('cuda_runtime', 'cuda_driver') and 'correlation' in e.get('args', {}):
        key = (e['name'], tid)
        n, d = calls.get(key, (0, 0))
        calls[key] = (n + 1, d + ns)
for (kind, tid), (n, d) in sorted(totals.items()):
    print('event', kind, tid, n, d)
for (name, tid), (n, d) in sorted(calls.items()):
    print('call', name, tid, n, d)
)";

TEST(CpuEvents, RealTracesCountedAsPythonCountsThem) {
  for (const std::string& path :
       {testing::conformance_trace("trace_diff__control__control.json.gz"),
        std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/trace_launch_bound.json.gz"),
        std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/trace_compute_bound.json.gz")}) {
    const std::string expected = testing::python_program_output(kCpuEventsPython, path);
    if (expected.empty()) GTEST_SKIP() << "no python3 to compute the expected figures";
    auto reader = TraceByteReader::open(path);
    ASSERT_TRUE(reader.has_value());
    auto parsed = parse_text(testing::read_all(*reader).value_or(""));
    ASSERT_TRUE(parsed.summary.has_value()) << parsed.summary.error().what();
    const RankTimeline& t = parsed.timeline;
    std::map<std::pair<int, std::int32_t>, std::pair<std::uint64_t, std::int64_t>> events;
    for (const CpuEvent& e : t.cpu_events) {
      auto& [n, d] = events[{static_cast<int>(e.kind), e.tid}];
      ++n;
      d += e.duration_ns;
    }
    std::map<std::pair<std::string, std::int32_t>, std::pair<std::uint64_t, std::int64_t>> calls;
    for (const RuntimeCall& c : t.runtime_calls) {
      auto& [n, d] = calls[{t.names[c.name_id], c.tid}];
      ++n;
      d += c.duration_ns;
    }
    std::ostringstream got;
    for (const auto& [key, value] : events) {
      got << "event " << key.first << ' ' << key.second << ' ' << value.first << ' ' << value.second << '\n';
    }
    for (const auto& [key, value] : calls) {
      got << "call " << key.first << ' ' << key.second << ' ' << value.first << ' ' << value.second << '\n';
    }
    EXPECT_EQ(got.str(), expected) << path;
  }
}

}  // namespace
}  // namespace gpuscope::trace
