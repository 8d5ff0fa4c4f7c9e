// TraceDiff on traces whose difference is known by construction: two synthetic runs written here (as
// PyTorch traces and as Nsight Systems databases) where one kernel is added, one removed, one takes twice
// as long, one runs twice as often, one is replaced by another template instance and the GPU stalls in
// every step; every expected figure is computed from the specs the test wrote. Then the real traces:
// the 35 MB trace and the H100 traces against themselves (no change), and the H100 launch-bound trace
// against the compute-bound one, with the expected figures computed here from the JSON.
#include "trace/trace_diff.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace_analyzer.h"
#include "trace/trace_diff_format.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::TempDir;

struct DiffKernelSpec {
  std::string name;
  int per_step = 1;
  std::int64_t duration_ns = 0;
};

// One run: `steps` ProfilerSteps, each running the kernels in order on one stream, 1 us apart (kernel
// wait), with a stall of `stall_ns` after the first kernel of each step (the CPU launches the second
// kernel late: host wait).
struct DiffRunSpec {
  int steps = 5;
  std::vector<DiffKernelSpec> kernels;
  std::int64_t stall_ns = 0;
  std::string gpu = "NVIDIA H100 80GB HBM3";
  std::optional<std::int64_t> rank, world_size;
  bool annotate_steps = true;  // false: the same events without ProfilerStep annotations
};

constexpr std::int64_t kDiffLeadNs = 2'000;     // step start to first kernel
constexpr std::int64_t kDiffGapNs = 1'000;      // between kernels
constexpr std::int64_t kDiffTailNs = 3'000;     // last kernel end to step end
constexpr std::int64_t kDiffBetweenNs = 4'000;  // step end to next step start

// The step length the geometry above gives: the test's own arithmetic, not the trace reader's.
std::int64_t diff_step_length(const DiffRunSpec& spec) {
  std::int64_t kernels = 0;
  int count = 0;
  for (const auto& k : spec.kernels) {
    kernels += k.per_step * k.duration_ns;
    count += k.per_step;
  }
  return kDiffLeadNs + kernels + (count - 1) * kDiffGapNs + spec.stall_ns + kDiffTailNs;
}

struct DiffEvents {
  struct Kernel {
    std::string name;
    std::int64_t start, end, correlation;
  };
  struct Call {
    std::int64_t start, end, correlation;
  };
  struct Range {
    std::string text;
    std::int64_t start, end;
  };
  std::vector<Kernel> kernels;
  std::vector<Call> calls;
  std::vector<Range> steps;
};

DiffEvents diff_events(const DiffRunSpec& spec) {
  DiffEvents e;
  std::int64_t t = 1'000'000, correlation = 100;
  for (int s = 0; s < spec.steps; ++s) {
    std::int64_t gpu = t + kDiffLeadNs;
    int in_step = 0;
    for (const auto& k : spec.kernels) {
      for (int i = 0; i < k.per_step; ++i, ++in_step) {
        std::int64_t call_start = gpu - 1'500;  // before the previous kernel ended: no host wait
        if (in_step == 1 && spec.stall_ns > 0) {
          gpu += spec.stall_ns;
          call_start = gpu - 500;  // the CPU launches it only after the GPU went idle: host wait
        }
        e.calls.push_back({call_start, call_start + 400, correlation});
        e.kernels.push_back({k.name, gpu, gpu + k.duration_ns, correlation});
        ++correlation;
        gpu += k.duration_ns + kDiffGapNs;
      }
    }
    const std::int64_t end = gpu - kDiffGapNs + kDiffTailNs;
    if (spec.annotate_steps) e.steps.push_back({fmt::format("ProfilerStep#{}", s + 1), t, end});
    t = end + kDiffBetweenNs;
  }
  return e;
}

std::string diff_micros(std::int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

std::string diff_kineto_json(const DiffRunSpec& spec) {
  const DiffEvents e = diff_events(spec);
  std::vector<std::string> events;
  for (const auto& k : e.kernels) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": 0, "tid": 7, "ts": {}, "dur": {}, )"
                                 R"("args": {{"device": 0, "stream": 7, "correlation": {}}}}})",
                                 k.name, diff_micros(k.start), diff_micros(k.end - k.start), k.correlation));
  }
  for (const auto& c : e.calls) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 77, "tid": 77, )"
                                 R"("ts": {}, "dur": {}, "args": {{"correlation": {}}}}})",
                                 diff_micros(c.start), diff_micros(c.end - c.start), c.correlation));
  }
  for (const auto& r : e.steps) {
    events.push_back(
        fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 77, "tid": 77, "ts": {}, "dur": {}}})", r.text,
                    diff_micros(r.start), diff_micros(r.end - r.start)));
  }
  std::string distributed;
  if (spec.rank || spec.world_size) {
    distributed = fmt::format(R"("distributedInfo": {{"backend": "nccl", "rank": {}, "world_size": {}}}, )",
                              spec.rank.value_or(0), spec.world_size.value_or(1));
  }
  return fmt::format(R"({{"schemaVersion": 1, {}"deviceProperties": [{{"id": 0, "name": "{}"}}], "traceEvents": [{}]}})",
                     distributed, spec.gpu, fmt::join(events, ",\n"));
}

// The tables and columns of NVIDIA's "SQLite Export Schema Reference" (Nsight Systems User Guide) that
// the reader uses, as nsys_reader_test.cc writes them.
class DiffNsysDatabase {
 public:
  explicit DiffNsysDatabase(const std::string& path) {
    std::filesystem::remove(path);
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    exec("BEGIN");
  }
  ~DiffNsysDatabase() {
    exec("COMMIT");
    sqlite3_close(db_);
  }
  void exec(const std::string& sql) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }
  std::int64_t string_id(const std::string& value) {
    if (auto it = ids_.find(value); it != ids_.end()) return it->second;
    const auto id = static_cast<std::int64_t>(ids_.size()) + 1;
    exec(fmt::format("INSERT INTO StringIds VALUES ({}, '{}')", id, value));
    return ids_[value] = id;
  }

 private:
  sqlite3* db_ = nullptr;
  std::map<std::string, std::int64_t> ids_;
};

void diff_write_nsys(const std::string& path, const DiffRunSpec& spec) {
  const DiffEvents e = diff_events(spec);
  DiffNsysDatabase db(path);
  db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
  db.exec(
      "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT, "
      "totalMemory INTEGER, smCount INTEGER)");
  db.exec(fmt::format("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, '{}', '0000:00:00.0', 85899345920, 132)", spec.gpu));
  db.exec(
      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
      "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
      "demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, "
      "gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL)");
  db.exec(
      "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
      "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL)");
  db.exec(
      "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
      "category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER)");
  for (const auto& k : e.kernels) {
    const auto name = db.string_id(k.name);
    const auto short_name = db.string_id(k.name.substr(0, k.name.find('<')));
    db.exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({}, {}, 0, 1, 7, {}, 4242, {}, {}, 128, 1, 1, 256, 1, 1)",
                        k.start, k.end, k.correlation, name, short_name));
  }
  const auto launch = db.string_id("cudaLaunchKernel_v7000");
  for (const auto& c : e.calls) {
    db.exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({}, {}, 1, 77, {}, {}, 0)", c.start, c.end,
                        c.correlation, launch));
  }
  for (const auto& r : e.steps) {
    db.exec(fmt::format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES ({}, {}, 59, '{}', 77)", r.start,
                        r.end, r.text));
  }
}

// The runs the first tests compare: A the same, B removed, C twice as long, D added, E twice as often,
// gemm<128> replaced by gemm<64> (one family), and a 200 us stall per step after.
DiffRunSpec diff_before_spec() {
  DiffRunSpec s;
  s.kernels = {{"kernel_a", 2, 10'000},
               {"kernel_b", 1, 50'000},
               {"kernel_c", 3, 20'000},
               {"kernel_e", 1, 30'000},
               {"void gemm<128, float>(float const*, float*)", 1, 100'000}};
  return s;
}

DiffRunSpec diff_after_spec() {
  DiffRunSpec s;
  s.kernels = {{"kernel_a", 2, 10'000},
               {"kernel_c", 3, 40'000},
               {"kernel_d", 4, 15'000},
               {"kernel_e", 2, 30'000},
               {"void gemm<64, float>(float const*, float*)", 1, 80'000}};
  s.stall_ns = 200'000;
  return s;
}

TraceReport diff_report_of(const std::string& path) {
  TraceAnalysisOptions options;
  options.kernel_summary = true;
  auto report = analyze_traces(path, options);
  EXPECT_TRUE(report.has_value()) << (report ? "" : report.error().what());
  return report ? std::move(*report) : TraceReport{};
}

TraceDiff diff_paths(const std::string& before, const std::string& after, TraceDiffOptions options = {}) {
  return diff_traces(diff_side(diff_report_of(before), before), diff_side(diff_report_of(after), after), options);
}

const TableDiff* diff_table_of(const TraceDiff& diff, const std::string& kind) {
  for (const auto& t : diff.tables) {
    if (t.kind == kind) return &t;
  }
  return nullptr;
}

const NamedDelta* diff_row_of(const TableDiff& table, const std::string& name) {
  for (const auto& r : table.rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const MetricDelta* diff_metric_of(const TraceDiff& diff, const std::string& key) {
  for (const auto& m : diff.metrics) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

// Per step: the spec's per-step count and duration; the expected change of each kernel.
void expect_known_changes(const TraceDiff& diff, int ranks = 1) {
  const DiffRunSpec before = diff_before_spec(), after = diff_after_spec();
  EXPECT_EQ(diff.unit, DiffUnit::kStep);
  EXPECT_EQ(diff.before_divisor, ranks * before.steps);
  EXPECT_EQ(diff.after_divisor, ranks * after.steps);
  const TableDiff* kernels = diff_table_of(diff, "kernel");
  ASSERT_NE(kernels, nullptr);
  EXPECT_EQ(kernels->added, 2u);    // kernel_d, gemm<64>
  EXPECT_EQ(kernels->removed, 2u);  // kernel_b, gemm<128>
  EXPECT_EQ(kernels->changed, 2u);  // kernel_c, kernel_e
  EXPECT_EQ(kernels->unchanged, 1u);
  auto expect_row = [&](const std::string& name, ChangeKind change, double before_count, double after_count, double before_ns,
                        double after_ns) {
    const NamedDelta* r = diff_row_of(*kernels, name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->change, change) << name;
    EXPECT_DOUBLE_EQ(r->before_count, before_count) << name;
    EXPECT_DOUBLE_EQ(r->after_count, after_count) << name;
    EXPECT_DOUBLE_EQ(r->before_ns, before_ns) << name;
    EXPECT_DOUBLE_EQ(r->after_ns, after_ns) << name;
  };
  expect_row("kernel_a", ChangeKind::kUnchanged, 2, 2, 20'000, 20'000);
  expect_row("kernel_b", ChangeKind::kRemoved, 1, 0, 50'000, 0);
  expect_row("kernel_c", ChangeKind::kChanged, 3, 3, 60'000, 120'000);
  expect_row("kernel_d", ChangeKind::kAdded, 0, 4, 0, 60'000);
  expect_row("kernel_e", ChangeKind::kChanged, 1, 2, 30'000, 60'000);
  expect_row("void gemm<128, float>(float const*, float*)", ChangeKind::kRemoved, 1, 0, 100'000, 0);
  expect_row("void gemm<64, float>(float const*, float*)", ChangeKind::kAdded, 0, 1, 0, 80'000);
  // By impact: gemm<128> -100 us, gemm<64> +80 us, C +60 us (and D +60 us), B -50 us, E +30 us, A last.
  EXPECT_EQ(kernels->rows[0].name, "void gemm<128, float>(float const*, float*)");
  EXPECT_EQ(kernels->rows[1].name, "void gemm<64, float>(float const*, float*)");
  EXPECT_EQ(kernels->rows[4].name, "kernel_b");
  EXPECT_EQ(kernels->rows[5].name, "kernel_e");
  EXPECT_EQ(kernels->rows[6].name, "kernel_a");

  EXPECT_NE(diff_row_of(*kernels, "kernel_c")->explanation.find("+60.0 us/step: kernel `kernel_c` takes 2.00x as long"),
            std::string::npos)
      << diff_row_of(*kernels, "kernel_c")->explanation;
  EXPECT_NE(
      diff_row_of(*kernels, "kernel_e")->explanation.find("+30.0 us/step: kernel `kernel_e` runs 2 times/step instead of 1"),
      std::string::npos)
      << diff_row_of(*kernels, "kernel_e")->explanation;
  EXPECT_NE(
      diff_row_of(*kernels, "kernel_d")->explanation.find("+60.0 us/step: kernel `kernel_d` is new (4 calls/step, 15.0 us each)"),
      std::string::npos)
      << diff_row_of(*kernels, "kernel_d")->explanation;
  EXPECT_NE(diff_row_of(*kernels, "kernel_b")->explanation.find("-50.0 us/step: kernel `kernel_b` is gone"), std::string::npos);

  // The two gemm instances are one family, -20 us per step.
  const TableDiff* families = diff_table_of(diff, "kernel_family");
  ASSERT_NE(families, nullptr);
  ASSERT_EQ(families->rows.size(), 1u);
  EXPECT_EQ(families->rows[0].name, "gemm<...>(...)");
  EXPECT_DOUBLE_EQ(families->rows[0].delta_ns(), -20'000);
  EXPECT_EQ(families->rows[0].members.size(), 2u);
  EXPECT_NE(families->rows[0].explanation.find("in place of"), std::string::npos) << families->rows[0].explanation;

  // Whole-trace figures.
  const double busy_before = 20'000 + 50'000 + 60'000 + 30'000 + 100'000;
  const double busy_after = 20'000 + 120'000 + 60'000 + 60'000 + 80'000;
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "busy")->before, busy_before);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "busy")->after, busy_after);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "kernel_time")->delta(), busy_after - busy_before);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "kernels")->before, 8);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "kernels")->after, 12);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "step_median")->before, static_cast<double>(diff_step_length(before)));
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "step_median")->after, static_cast<double>(diff_step_length(after)));
  // Host wait: the gap between two steps (the next step's first launch comes after the GPU went idle),
  // in 4 of 5 steps; after, also the stall with the 1 us gap it replaced, in every step.
  const double between_steps = kDiffTailNs + kDiffBetweenNs + kDiffLeadNs;
  EXPECT_NEAR(diff_metric_of(diff, "host_wait")->before, between_steps * 4 / 5, 1e-6);
  EXPECT_NEAR(diff_metric_of(diff, "host_wait")->delta(), 200'000 + kDiffGapNs, 1e-6);
  // Kernel wait per step: the other gaps inside a step (8 kernels, 7 gaps; 12 kernels, 11 gaps less the stall's).
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "kernel_wait")->before, 7 * kDiffGapNs);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "kernel_wait")->after, 10 * kDiffGapNs);
  EXPECT_DOUBLE_EQ(diff_metric_of(diff, "other_idle")->after, 0);
  EXPECT_FALSE(diff.no_changes());

  // The biggest change comes first and says what it is.
  ASSERT_FALSE(diff.biggest.empty());
  EXPECT_EQ(diff.change(0).name, "void gemm<128, float>(float const*, float*)");
  EXPECT_TRUE(diff.warnings.empty()) << diff.warnings.front();
}

TEST(TraceDiff, KnownChangesBetweenTwoPyTorchTraces) {
  TempDir dir;
  const auto before = dir.write("before.json", diff_kineto_json(diff_before_spec()));
  const auto after = dir.write("after.json.gz", testing::gzip_text(diff_kineto_json(diff_after_spec())));
  const TraceDiff diff = diff_paths(before, after);
  expect_known_changes(diff);

  const std::string text = trace_diff_text(diff, 10);
  EXPECT_NE(text.find("figures per step"), std::string::npos) << text;
  EXPECT_NE(
      text.find("Biggest changes (per step):\n  -100.0 us/step: kernel `void gemm<128, float>(float const*, float*)` is gone"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("kernels: 2 added, 2 removed, 2 changed, 1 unchanged"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel families"), std::string::npos) << text;

  const auto json = trace_diff_json(diff, 3);
  EXPECT_EQ(json["per"], "step");
  EXPECT_EQ(json["tables"][0]["kind"], "kernel");
  EXPECT_EQ(json["tables"][0]["rows"].size(), 3u);  // --top 3
  EXPECT_NEAR(json["metrics"]["host_wait_seconds"]["change"].get<double>(), 201e-6, 1e-15);
  EXPECT_EQ(json["biggest_changes"].size(), 3u);  // top 3 of all changes
}

TEST(TraceDiff, KnownChangesBetweenTwoNsysDatabases) {
  TempDir dir;
  const auto before = dir.path() + "/before.sqlite";
  const auto after = dir.path() + "/after.sqlite";
  diff_write_nsys(before, diff_before_spec());
  diff_write_nsys(after, diff_after_spec());
  expect_known_changes(diff_paths(before, after));

  // The same events as a PyTorch trace and as an nsys export: nothing differs.
  const auto kineto = dir.write("before.json", diff_kineto_json(diff_before_spec()));
  const TraceDiff across = diff_paths(kineto, before);
  EXPECT_TRUE(across.no_changes()) << trace_diff_text(across, 10);
}

TEST(TraceDiff, ATraceAgainstItselfShowsNoChanges) {
  TempDir dir;
  const auto file = dir.write("run.json", diff_kineto_json(diff_after_spec()));
  const TraceDiff diff = diff_paths(file, file);
  EXPECT_TRUE(diff.no_changes());
  EXPECT_TRUE(diff.biggest.empty());
  EXPECT_TRUE(diff.warnings.empty());
  const TableDiff* kernels = diff_table_of(diff, "kernel");
  ASSERT_NE(kernels, nullptr);
  EXPECT_EQ(kernels->unchanged, diff_after_spec().kernels.size());
  EXPECT_EQ(diff_table_of(diff, "kernel_family"), nullptr);
  EXPECT_NE(trace_diff_text(diff, 10).find("No changes:"), std::string::npos);
}

TEST(TraceDiff, DirectoriesOfRanksArePerStepOfOneRank) {
  TempDir before_dir, after_dir;
  for (std::int64_t rank = 0; rank < 2; ++rank) {
    DiffRunSpec b = diff_before_spec(), a = diff_after_spec();
    b.rank = a.rank = rank;
    b.world_size = a.world_size = 2;
    before_dir.write(fmt::format("rank-{}.json", rank), diff_kineto_json(b));
    after_dir.write(fmt::format("rank-{}.json", rank), diff_kineto_json(a));
  }
  const TraceDiff diff = diff_paths(before_dir.path(), after_dir.path());
  EXPECT_EQ(diff.before.ranks, 2u);
  EXPECT_EQ(diff.before.steps, 10u);
  // Twice the kernels over twice the steps: the same per-step figures as one rank's files.
  expect_known_changes(diff, 2);
  EXPECT_NE(diff.unit_description.find("per step of one rank"), std::string::npos) << diff.unit_description;
}

TEST(TraceDiff, WithoutStepsFiguresArePerSecondOfTrace) {
  TempDir dir;
  DiffRunSpec before = diff_before_spec(), after;
  after.steps = 1;
  after.annotate_steps = false;
  after.kernels = {{"kernel_a", 1, 10'000}};
  const auto b = dir.write("b.json", diff_kineto_json(before));
  const auto a = dir.write("a.json", diff_kineto_json(after));
  const TraceDiff diff = diff_paths(b, a);
  EXPECT_EQ(diff.unit, DiffUnit::kSecond);
  EXPECT_EQ(diff_metric_of(diff, "step_median"), nullptr);
  // The span runs from the first event (a runtime call 1.5 us before its kernel) to the last end.
  const double after_span_ns = 1'500 + 10'000;
  EXPECT_DOUBLE_EQ(diff.after_divisor, after_span_ns / 1e9);
  const NamedDelta* a_row = diff_row_of(*diff_table_of(diff, "kernel"), "kernel_a");
  ASSERT_NE(a_row, nullptr);
  EXPECT_DOUBLE_EQ(a_row->after_ns, 10'000 / (after_span_ns / 1e9));
  EXPECT_NE(
      std::find(diff.warnings.begin(), diff.warnings.end(), "AFTER has no ProfilerStep annotations: step time is not compared"),
      diff.warnings.end());

  // Per trace when asked: the totals as they are.
  const TraceDiff whole = diff_paths(b, a, TraceDiffOptions{.unit = DiffUnit::kTrace});
  EXPECT_EQ(whole.unit, DiffUnit::kTrace);
  EXPECT_DOUBLE_EQ(diff_row_of(*diff_table_of(whole, "kernel"), "kernel_a")->before_ns, 5 * 2 * 10'000);
  // Per step cannot be had: said, and the next unit used.
  const TraceDiff per_step = diff_paths(b, a, TraceDiffOptions{.unit = DiffUnit::kStep});
  EXPECT_EQ(per_step.unit, DiffUnit::kSecond);
  EXPECT_NE(per_step.warnings.front().find("per step was asked for, but AFTER"), std::string::npos) << per_step.warnings.front();
}

TEST(TraceDiff, UnrelatedTracesGetAWarning) {
  TempDir dir;
  DiffRunSpec before = diff_before_spec(), after;
  after.kernels = {{"other_program_kernel", 3, 7'000}};
  after.gpu = "NVIDIA A100-SXM4-80GB";
  before.rank = after.rank = 0;
  before.world_size = 8;
  after.world_size = 16;
  const TraceDiff diff = diff_paths(dir.write("b.json", diff_kineto_json(before)), dir.write("a.json", diff_kineto_json(after)));
  auto has = [&](const std::string& start) {
    return std::any_of(diff.warnings.begin(), diff.warnings.end(), [&](const std::string& w) { return w.starts_with(start); });
  };
  EXPECT_TRUE(has("BEFORE and AFTER have no kernel name in common (5 and 1 distinct kernels"))
      << fmt::format("{}", fmt::join(diff.warnings, "\n"));
  EXPECT_TRUE(has("the GPUs differ (BEFORE NVIDIA H100 80GB HBM3, AFTER NVIDIA A100-SXM4-80GB)"));
  EXPECT_TRUE(has("the world sizes differ (BEFORE 8, AFTER 16)"));
  EXPECT_NE(trace_diff_text(diff, 10).find("warning: BEFORE and AFTER have no kernel name in common"), std::string::npos);
}

// Named tables beyond kernels (ops, annotations) are diffed the same way, matched by kind; an op whose
// calls launch more kernels says so.
TEST(TraceDiff, OpTablesExplainKernelsPerCall) {
  DiffSide before, after;
  before.steps = 10;
  after.steps = 10;
  before.every_rank_has_steps = after.every_rank_has_steps = true;
  before.ranks = after.ranks = 1;
  // layer_norm: 10 calls/step both sides, 1 kernel each before, 3 after; 2 us -> 5.8 us of GPU time a call.
  before.tables.push_back(
      NamedTable{"op", "CPU ops", {{"aten::layer_norm", 100, 2'000'000, 100}, {"aten::mm", 50, 9'000'000, 50}}});
  after.tables.push_back(
      NamedTable{"op", "CPU ops", {{"aten::layer_norm", 100, 5'800'000, 300}, {"aten::mm", 50, 9'000'000, 50}}});
  after.tables.push_back(NamedTable{"annotation", "annotations", {{"forward", 10, 14'800'000, 350}}});
  const TraceDiff diff = diff_traces(before, after, {});
  const TableDiff* ops = diff_table_of(diff, "op");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->changed, 1u);
  EXPECT_EQ(ops->unchanged, 1u);
  const NamedDelta& layer_norm = ops->rows[0];
  EXPECT_EQ(layer_norm.name, "aten::layer_norm");
  EXPECT_DOUBLE_EQ(layer_norm.delta_ns(), (5'800'000 - 2'000'000) / 10.0);
  EXPECT_EQ(layer_norm.explanation,
            "+380.0 us/step: op `aten::layer_norm` now launches 3 kernels instead of 1 (58.0 us instead of 20.0 us of GPU time "
            "per call)");
  // A table only AFTER has: every row added.
  const TableDiff* annotations = diff_table_of(diff, "annotation");
  ASSERT_NE(annotations, nullptr);
  EXPECT_EQ(annotations->added, 1u);
  // Annotations hold the ops under them: the biggest changes name the op, not the annotation around it.
  ASSERT_EQ(diff.biggest.size(), 1u);
  EXPECT_EQ(diff.change(0).name, "aten::layer_norm");
}

TEST(TraceDiff, KernelFamiliesIgnoreTemplateArgumentsParametersAndNumbers) {
  EXPECT_EQ(kernel_family(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, "
                "at::native::FillFunctor<float>, std::array<char*, 1ul>)"),
            "at::native::vectorized_elementwise_kernel<...>(...)");
  EXPECT_EQ(kernel_family("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x64x32_stage4_warpsize2x2x1_tensor16x8x16_kernel"),
            kernel_family("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize64x64x64_stage3_warpsize2x2x1_tensor16x8x16_kernel"));
  EXPECT_NE(kernel_family("ampere_sgemm_128x64_nn"), kernel_family("ampere_sgemm_128x64_tn"));
  EXPECT_EQ(kernel_family("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"),
            "ncclDevKernel_AllReduce_Sum_f#_RING_LL(...)");
}

// --- the real traces ---------------------------------------------------------------------------------

std::string diff_real_h100(const std::string& name) {
  return std::string(GPUSCOPE_SOURCE_DIR "/../shared/reference/real-h100/") + name;
}

std::string diff_gunzip(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  EXPECT_NE(in, nullptr) << path;
  std::string out;
  char buffer[1 << 16];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(n));
  gzclose(in);
  return out;
}

// What a Kineto trace says, computed from its JSON here: per-kernel totals, the steps, and the busy time
// (union of kernels, memcpys and memsets), all in nanoseconds (rounded from Kineto's microseconds).
struct DiffIndependent {
  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> kernels;  // name -> (count, total)
  std::vector<std::int64_t> steps;
  std::int64_t busy_ns = 0;
  std::int64_t kernel_ns = 0;
  // cpu_op name -> (calls, GPU time of the activities launched by the runtime calls inside them, on
  // their thread): right for ops that launch directly (no op nested inside them launches).
  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> ops;
  std::map<std::string, std::int64_t> op_cpu_ns;  // summed durations of each cpu_op name
};

DiffIndependent diff_independent(const std::string& path) {
  const auto doc = nlohmann::json::parse(diff_gunzip(path));
  DiffIndependent r;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy;
  auto ns = [](const nlohmann::json& v) { return std::llround(v.get<double>() * 1000); };
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", ""), name = e.value("name", "");
    if (cat == "kernel") {
      auto& k = r.kernels[name];
      ++k.first;
      k.second += ns(e["dur"]);
      r.kernel_ns += ns(e["dur"]);
    }
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") busy.emplace_back(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]));
    if (cat == "user_annotation" && name.starts_with("ProfilerStep#")) r.steps.push_back(ns(e["dur"]));
  }
  struct Range {
    std::string name;
    std::int64_t tid, start, end, correlation;
  };
  std::vector<Range> ops, calls;
  std::map<std::int64_t, std::int64_t> gpu_of_correlation;
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    const std::int64_t start = ns(e["ts"]), end = start + ns(e["dur"]);
    if (cat == "cpu_op") ops.push_back({e.value("name", ""), e.value("tid", std::int64_t{-1}), start, end, -1});
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      calls.push_back({"", e.value("tid", std::int64_t{-1}), start, end, e["args"].value("correlation", std::int64_t{-1})});
    }
    if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      gpu_of_correlation[e["args"].value("correlation", std::int64_t{-1})] += end - start;
    }
  }
  for (const auto& op : ops) {
    auto& o = r.ops[op.name];
    ++o.first;
    r.op_cpu_ns[op.name] += op.end - op.start;
    for (const auto& c : calls) {
      if (c.tid == op.tid && c.start >= op.start && c.end <= op.end && gpu_of_correlation.contains(c.correlation)) {
        o.second += gpu_of_correlation[c.correlation];
      }
    }
  }
  std::sort(busy.begin(), busy.end());
  std::int64_t covered = std::numeric_limits<std::int64_t>::min();
  for (const auto& [start, end] : busy) {
    if (end <= covered) continue;
    r.busy_ns += end - std::max(start, covered);
    covered = end;
  }
  std::sort(r.steps.begin(), r.steps.end());
  return r;
}

double diff_median(const std::vector<std::int64_t>& sorted) {
  const std::size_t n = sorted.size();
  return n % 2 == 1 ? static_cast<double>(sorted[n / 2]) : static_cast<double>((sorted[n / 2 - 1] + sorted[n / 2]) / 2);
}

TEST(TraceDiffReal, LaunchBoundAgainstComputeBoundH100) {
  const std::string launch = diff_real_h100("trace_launch_bound.json.gz");
  const std::string compute = diff_real_h100("trace_compute_bound.json.gz");
  const DiffIndependent before = diff_independent(launch), after = diff_independent(compute);
  ASSERT_FALSE(before.steps.empty());
  ASSERT_FALSE(after.steps.empty());
  const double bs = static_cast<double>(before.steps.size()), as = static_cast<double>(after.steps.size());

  const TraceDiff diff = diff_paths(launch, compute);
  EXPECT_EQ(diff.unit, DiffUnit::kStep);
  // Step time: the compute-bound loop's CPU steps are short (it only queues matmuls); the direction and
  // the size as computed here.
  const MetricDelta* median = diff_metric_of(diff, "step_median");
  ASSERT_NE(median, nullptr);
  EXPECT_LT(median->delta(), 0);
  EXPECT_NEAR(median->before, diff_median(before.steps), 1);
  EXPECT_NEAR(median->after, diff_median(after.steps), 1);
  // Busy per step rises: the GPU does the work now.
  const MetricDelta* busy = diff_metric_of(diff, "busy");
  EXPECT_GT(busy->delta(), 0);
  EXPECT_NEAR(busy->before, static_cast<double>(before.busy_ns) / bs, 2);
  EXPECT_NEAR(busy->after, static_cast<double>(after.busy_ns) / as, 2);
  EXPECT_NEAR(diff_metric_of(diff, "kernel_time")->delta(),
              static_cast<double>(after.kernel_ns) / as - static_cast<double>(before.kernel_ns) / bs, 2);

  // Every kernel of one is gone and every kernel of the other new, with its per-step time.
  const TableDiff* kernels = diff_table_of(diff, "kernel");
  ASSERT_NE(kernels, nullptr);
  EXPECT_EQ(kernels->removed, before.kernels.size());
  EXPECT_EQ(kernels->added, after.kernels.size());
  EXPECT_EQ(kernels->changed + kernels->unchanged, 0u);
  for (const auto& [name, k] : after.kernels) {
    const NamedDelta* row = diff_row_of(*kernels, name);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->change, ChangeKind::kAdded);
    EXPECT_NEAR(row->after_ns, static_cast<double>(k.second) / as, 1e-6) << name;
    EXPECT_DOUBLE_EQ(row->after_count, static_cast<double>(k.first) / as) << name;
  }
  for (const auto& [name, k] : before.kernels) {
    const NamedDelta* row = diff_row_of(*kernels, name);
    ASSERT_NE(row, nullptr) << name;
    EXPECT_EQ(row->change, ChangeKind::kRemoved);
    EXPECT_NEAR(row->before_ns, static_cast<double>(k.second) / bs, 1e-6) << name;
  }
  // The ops that launched them: aten::add_ (the adds loop) gone, aten::mm new, with their calls and GPU time.
  const TableDiff* ops = diff_table_of(diff, "op");
  ASSERT_NE(ops, nullptr);
  ASSERT_TRUE(before.ops.contains("aten::add_"));
  ASSERT_TRUE(after.ops.contains("aten::mm"));
  const NamedDelta* add = diff_row_of(*ops, "aten::add_");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->change, ChangeKind::kRemoved);
  EXPECT_DOUBLE_EQ(add->before_count, static_cast<double>(before.ops.at("aten::add_").first) / bs);
  EXPECT_NEAR(add->before_ns, static_cast<double>(before.ops.at("aten::add_").second) / bs, 1);
  const NamedDelta* mm = diff_row_of(*ops, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->change, ChangeKind::kAdded);
  EXPECT_DOUBLE_EQ(mm->after_count, static_cast<double>(after.ops.at("aten::mm").first) / as);
  EXPECT_NEAR(mm->after_ns, static_cast<double>(after.ops.at("aten::mm").second) / as, 1);
  EXPECT_GT(mm->after_ns, 0);
  // Their CPU time, in a table of its own.
  const TableDiff* op_cpu = diff_table_of(diff, "op_cpu");
  ASSERT_NE(op_cpu, nullptr);
  ASSERT_NE(diff_row_of(*op_cpu, "aten::add_"), nullptr);
  EXPECT_NEAR(diff_row_of(*op_cpu, "aten::add_")->before_ns, static_cast<double>(before.op_cpu_ns.at("aten::add_")) / bs, 1);
  EXPECT_NEAR(diff_row_of(*op_cpu, "aten::mm")->after_ns, static_cast<double>(after.op_cpu_ns.at("aten::mm")) / as, 1);

  // The largest change is the largest new kernel.
  std::string largest;
  std::int64_t largest_ns = -1;
  for (const auto& [name, k] : after.kernels) {
    if (k.second > largest_ns) largest = name, largest_ns = k.second;
  }
  ASSERT_FALSE(diff.biggest.empty());
  EXPECT_EQ(diff.change(0).name, largest);
  // Different programs: said in a warning line.
  EXPECT_TRUE(std::any_of(diff.warnings.begin(), diff.warnings.end(),
                          [](const std::string& w) { return w.starts_with("BEFORE and AFTER have no kernel name in common"); }));
}

TEST(TraceDiffReal, RealTracesAgainstThemselvesShowNoChanges) {
  for (const std::string& file : {testing::conformance_trace("trace_diff__control__control.json.gz"),
                                  diff_real_h100("trace_launch_bound.json.gz"), diff_real_h100("trace_compute_bound.json.gz")}) {
    const TraceDiff diff = diff_paths(file, file);
    EXPECT_TRUE(diff.no_changes()) << file;
    EXPECT_TRUE(diff.biggest.empty()) << file;
    EXPECT_TRUE(diff.warnings.empty()) << file;
    const TableDiff* kernels = diff_table_of(diff, "kernel");
    ASSERT_NE(kernels, nullptr);
    // Every distinct kernel name of the file is a row, unchanged.
    const DiffIndependent expected = diff_independent(file);
    EXPECT_EQ(kernels->unchanged, expected.kernels.size()) << file;
    EXPECT_EQ(kernels->rows.size(), expected.kernels.size()) << file;
    for (const auto& m : diff.metrics) EXPECT_EQ(m.delta(), 0) << file << " " << m.key;
  }
}

}  // namespace
}  // namespace gpuscope::trace
