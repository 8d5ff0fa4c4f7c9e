// GPU time by op and by annotation: a hand-made trace with known answers, the three ways of reading a
// trace agreeing, the real traces against a separate Python computation, and bad input.
#include "trace/op_attribution.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>
#include <string>

#include "e2e/command_runner.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::parse_text;

// Thread 1: ProfilerStep#1 [0, 100) > forward [5, 60) > aten::linear [10, 40) > aten::addmm [12, 30);
// thread 2: aten::mm [50, 70). Times in microseconds.
const std::string kOpsTrace = R"({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {}},
  {"ph": "X", "cat": "user_annotation", "name": "forward", "pid": 1, "tid": 1, "ts": 5, "dur": 55, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 10, "dur": 30, "args": {}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 12, "dur": 18, "args": {}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 15, "dur": 3, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 35, "dur": 2, "args": {"correlation": 2}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 50, "dur": 20, "args": {}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 55, "dur": 2, "args": {"correlation": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 80, "dur": 2, "args": {"correlation": 4}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "bias", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "mm", "pid": 0, "tid": 7, "ts": 60, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 3}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "pid": 0, "tid": 7, "ts": 85, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 4, "bytes": 4}},
  {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 91, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 99}}
]})";

const AttributionRow* find_row(const std::vector<AttributionRow>& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

OpAttribution attribution_of(const std::string& json, ParseOptions options = {}) {
  auto parsed = parse_text(json, options);
  EXPECT_TRUE(parsed.summary.has_value()) << (parsed.summary ? "" : parsed.summary.error().what());
  return attribute_ops(parsed.timeline, nest_cpu_events(parsed.timeline));
}

TEST(OpAttribution, KernelsGoToTheInnermostOpAndEveryAnnotationAroundTheLaunch) {
  const OpAttribution a = attribution_of(kOpsTrace);
  EXPECT_EQ(a.activities, 5u);
  EXPECT_EQ(a.activity_ns, 41'000);
  EXPECT_EQ(a.without_launch, 1u);  // "orphan": no call with correlation 99
  EXPECT_EQ(a.without_launch_ns, 1'000);
  EXPECT_EQ(a.outside_ops, 1u);  // the copy: its call is in the step but in no op
  EXPECT_EQ(a.outside_ops_ns, 5'000);
  EXPECT_EQ(a.cpu_ops, 3u);
  EXPECT_EQ(a.misnested, 0u);
  EXPECT_EQ(a.threads, 2u);
  ASSERT_EQ(a.ops.size(), 3u);
  // Most GPU time first.
  EXPECT_EQ(a.ops[0].name, "aten::mm");  // on the other thread: its own nesting
  EXPECT_EQ(a.ops[0].gpu_ns, 20'000);
  EXPECT_EQ(a.ops[0].launch_delay_mean_ns(), 5'000);
  EXPECT_EQ(a.ops[1].name, "aten::addmm");  // gemm, not to aten::linear around it
  EXPECT_EQ(a.ops[1].gpu_ns, 10'000);
  EXPECT_EQ(a.ops[1].activities, 1u);
  EXPECT_EQ(a.ops[1].launches, 1u);
  EXPECT_EQ(a.ops[1].cpu_ns, 18'000);
  EXPECT_EQ(a.ops[1].launch_delay_max_ns, 5'000);  // 20 - 15 us
  EXPECT_EQ(a.ops[2].name, "aten::linear");  // bias, launched by aten::linear itself
  EXPECT_EQ(a.ops[2].gpu_ns, 5'000);
  EXPECT_EQ(a.ops[2].instances, 1u);
  EXPECT_NEAR(a.ops[2].gpu_share, 5.0 / 41.0, 1e-12);
  const AttributionRow* step = find_row(a.annotations, "ProfilerStep#*");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->gpu_ns, 20'000);  // gemm, bias and the copy; aten::mm ran on another thread
  EXPECT_EQ(step->activities, 3u);
  EXPECT_EQ(step->instances, 1u);
  const AttributionRow* forward = find_row(a.annotations, "forward");
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->gpu_ns, 15'000);
  EXPECT_EQ(forward->launch_delay_total_ns, 10'000);
}

TEST(OpAttribution, TheThreeWaysOfReadingGiveTheSameRows) {
  ParseOptions plain, simdjson;
  plain.parse_unused_events = simdjson.parse_unused_events = true;
  simdjson.plain_decoder = false;
  const OpAttribution fast = attribution_of(kOpsTrace), a = attribution_of(kOpsTrace, plain), b = attribution_of(kOpsTrace, simdjson);
  for (const OpAttribution* other : {&a, &b}) {
    ASSERT_EQ(other->ops.size(), fast.ops.size());
    for (std::size_t i = 0; i < fast.ops.size(); ++i) {
      EXPECT_EQ(other->ops[i].name, fast.ops[i].name);
      EXPECT_EQ(other->ops[i].gpu_ns, fast.ops[i].gpu_ns);
      EXPECT_EQ(other->ops[i].cpu_ns, fast.ops[i].cpu_ns);
    }
    EXPECT_EQ(other->annotations.size(), fast.annotations.size());
  }
}

TEST(OpAttribution, AnnotationGroupsFoldAStepNumber) {
  EXPECT_EQ(annotation_group("ProfilerStep#1009"), "ProfilerStep#*");
  EXPECT_EQ(annotation_group("Optimizer.step#FusedAdam.step"), "Optimizer.step#FusedAdam.step");
  EXPECT_EQ(annotation_group("## forward ##"), "## forward ##");
  EXPECT_EQ(annotation_group("x#"), "x#");
}

TEST(OpAttribution, BadInputGivesCountsNotACrash) {
  // No CPU events at all: everything is outside ops, nothing is misattributed.
  const OpAttribution none = attribution_of(R"({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 1}}]})");
  EXPECT_TRUE(none.ops.empty());
  EXPECT_EQ(none.outside_ops, 1u);
  // Kernels without any runtime call.
  const OpAttribution orphans = attribution_of(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 6, "dur": 2, "args": {"device": 0, "stream": 7}}]})");
  EXPECT_EQ(orphans.without_launch, 2u);
  // Ops that overlap without nesting (clocks from two sources, a profiler bug): counted, taken as nested.
  const OpAttribution misnested = attribution_of(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": 0, "dur": 10},
    {"ph": "X", "cat": "cpu_op", "name": "b", "tid": 1, "ts": 5, "dur": 10},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 6, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 12, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 8, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 14, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 2}}]})");
  EXPECT_EQ(misnested.misnested, 1u);
  ASSERT_EQ(misnested.ops.size(), 2u);
  EXPECT_EQ(misnested.ops[0].name, "b");  // both launches: inside b (the second after a ended)
  EXPECT_EQ(misnested.ops[0].activities, 2u);
  // An empty trace.
  const OpAttribution empty = attribution_of(R"({"traceEvents": []})");
  EXPECT_EQ(empty.activities, 0u);
  EXPECT_TRUE(empty.annotations.empty());
}

// Written again in Python (stdlib): a launch belongs to the cpu_op on its thread that contains its
// start and started last (ops sorted by start, the longer first, then in file order: Kineto writes a
// parent before a child of the same start and length); a kernel to the earliest call with its
// correlation id. Prints per op: instances, activities, GPU ns, summed launch delay.
constexpr const char* kOpsPython = R"(
import bisect, gzip, json, sys
from decimal import Decimal
def ns(v):
    return int(Decimal(str(v)) * 1000)
with gzip.open(sys.argv[1], 'rt') as f:
    events = [e for e in json.load(f)['traceEvents'] if e.get('ph') == 'X']
def tid_of(e):
    t = e.get('tid')
    return t if isinstance(t, int) else -1
ops = {}
calls = {}
rows = {}
for e in events:
    cat = e.get('cat')
    if cat == 'cpu_op':
        s, d = ns(e['ts']), ns(e['dur'])
        ops.setdefault(tid_of(e), []).append((s, -d, len(ops.get(tid_of(e), [])), e['name']))
        r = rows.setdefault(e['name'], [0, 0, 0, 0])
        r[0] += 1
    elif cat in ('cuda_runtime', 'cuda_driver') and 'correlation' in e.get('args', {}):
        c = e['args']['correlation']
        s = ns(e['ts'])
        if c not in calls or s < calls[c][0]:
            calls[c] = (s, tid_of(e))
starts = {}
for t in ops:
    ops[t].sort()
    starts[t] = [o[0] for o in ops[t]]
def innermost(tid, t):
    if tid not in ops:
        return None
    i = bisect.bisect_right(starts[tid], t) - 1
    while i >= 0:
        s, negd, _, name = ops[tid][i]
        if s - negd >= t:
            return name
        i -= 1
    return None
for e in events:
    if e.get('cat') not in ('kernel', 'gpu_memcpy', 'gpu_memset'):
        continue
    c = e.get('args', {}).get('correlation', -1)
    if c not in calls:
        continue
    call_start, tid = calls[c]
    name = innermost(tid, call_start)
    if name is None:
        continue
    r = rows[name]
    r[1] += 1
    r[2] += ns(e['dur'])
    r[3] += ns(e['ts']) - call_start
for name in sorted(rows):
    r = rows[name]
    print(name, r[0], r[1], r[2], r[3])
)";

TEST(OpAttribution, RealTracesAsPythonAttributesThem) {
  for (const std::string& path :
       {testing::conformance_trace("trace_diff__control__control.json.gz"),
        std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/trace_launch_bound.json.gz"),
        std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/trace_compute_bound.json.gz")}) {
    const std::string expected = testing::python_program_output(kOpsPython, path);
    if (expected.empty()) GTEST_SKIP() << "no python3 to compute the expected figures";
    auto reader = TraceByteReader::open(path);
    ASSERT_TRUE(reader.has_value());
    const OpAttribution a = attribution_of(testing::read_all(*reader).value_or(""));
    std::map<std::string, const AttributionRow*> by_name;
    for (const auto& r : a.ops) by_name[r.name] = &r;
    std::ostringstream got;
    for (const auto& [name, r] : by_name) {
      got << name << ' ' << r->instances << ' ' << r->activities << ' ' << r->gpu_ns << ' ' << r->launch_delay_total_ns << '\n';
    }
    EXPECT_EQ(got.str(), expected) << path;
    EXPECT_EQ(a.misnested, 0u) << path;
  }
}

TEST(OpAttribution, TheCommandPrintsTheTablesAndRefusesBadFlags) {
  testing::TempDir dir;
  const std::string trace = dir.write("ops.json", kOpsTrace);
  auto by_op = e2e::run_command({GPUSCOPE_EXE, "trace", trace, "--by", "op"}, {}, 60);
  ASSERT_EQ(by_op.exit_code, 0) << by_op.err;
  EXPECT_NE(by_op.out.find("aten::addmm"), std::string::npos) << by_op.out;
  EXPECT_NE(by_op.out.find("1 (1.0 us) without a runtime call"), std::string::npos) << by_op.out;
  auto json = e2e::run_command({GPUSCOPE_EXE, "trace", trace, "--by", "annotation", "--format", "json"}, {}, 60);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["by"], "annotation");
  EXPECT_EQ(doc["ranks"][0]["by"]["annotations"][0]["name"], "ProfilerStep#*");
  EXPECT_DOUBLE_EQ(doc["ranks"][0]["by"]["annotations"][0]["gpu_seconds"].get<double>(), 20e-6);
  auto path = e2e::run_command({GPUSCOPE_EXE, "trace", trace, "--critical-path"}, {}, 60);
  ASSERT_EQ(path.exit_code, 0) << path.err;
  EXPECT_NE(path.out.find("ProfilerStep#1"), std::string::npos) << path.out;
  auto bad = e2e::run_command({GPUSCOPE_EXE, "trace", trace, "--by", "kernel"}, {}, 60);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--by"), std::string::npos) << bad.err;
  auto both = e2e::run_command({GPUSCOPE_EXE, "trace", trace, "--by", "op", "--critical-path"}, {}, 60);
  EXPECT_EQ(both.exit_code, 2);
}

}  // namespace
}  // namespace gpuscope::trace
