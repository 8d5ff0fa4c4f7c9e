// Nsight Systems SQLite exports: small report databases built here with SQLite's C API, in the layout of
// NVIDIA's "Nsight Systems User Guide", section "SQLite Export Schema Reference" (the tables and columns
// `nsys export --type sqlite` writes: StringIds, CUPTI_ACTIVITY_KIND_KERNEL/_MEMCPY/_MEMSET/_RUNTIME,
// NVTX_EVENTS, TARGET_INFO_GPU; only the columns gpuscope reads plus a few others, so a reader that
// depended on a column order would fail). Every expected number is computed from the rows the test
// inserted, and the same events written as a PyTorch (Kineto) trace must give the same report.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <variant>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "e2e/command_runner.h"
#include "trace/critical_path.h"
#include "trace/nsys_kernel_summary.h"
#include "trace/nsys_reader.h"
#include "trace/trace_analyzer.h"
#include "trace/trace_report_json.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::TempDir;

enum class Kind { kKernel, kMemcpy, kMemset };

struct Activity {
  Kind kind = Kind::kKernel;
  std::int64_t start = 0, end = 0;
  std::int64_t device = 0, stream = 0, correlation = 0;
  std::string name;        // kernels
  std::int64_t copy_kind = 0;  // memcpy: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD)
  std::int64_t bytes = 0;
};

struct Call {
  std::int64_t start = 0, end = 0, correlation = 0;
  std::string name;
};

struct Range {
  std::int64_t start = 0, end = 0;
  std::string text;
};

struct Report {
  std::vector<Activity> activities;
  std::vector<Call> calls;
  std::vector<Range> ranges;
  std::map<std::int64_t, std::string> gpus;
};

struct Tables {
  bool kernels = true, memcpy = true, memset = true, runtime = true, nvtx = true, gpus = true;
  bool registered_nvtx_text = false;  // NVTX text through textId -> StringIds instead of inline
};

class Database {
 public:
  explicit Database(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK);
    exec("BEGIN");
  }
  ~Database() {
    exec("COMMIT");
    sqlite3_close(db_);
  }
  void exec(const std::string& sql) {
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << sql << ": " << (error ? error : "");
    sqlite3_free(error);
  }
  // Inserts one row; values are bound in order (int64 or text).
  void insert(const std::string& sql, const std::vector<std::variant<std::int64_t, std::string>>& values) {
    sqlite3_stmt* statement = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (const auto* n = std::get_if<std::int64_t>(&values[i])) {
        sqlite3_bind_int64(statement, static_cast<int>(i + 1), *n);
      } else {
        const auto& s = std::get<std::string>(values[i]);
        sqlite3_bind_text(statement, static_cast<int>(i + 1), s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
    }
    EXPECT_EQ(sqlite3_step(statement), SQLITE_DONE) << sqlite3_errmsg(db_);
    sqlite3_finalize(statement);
  }
  std::int64_t string_id(const std::string& value) {
    if (auto it = ids_.find(value); it != ids_.end()) return it->second;
    const auto id = static_cast<std::int64_t>(ids_.size()) + 1;
    insert("INSERT INTO StringIds (id, value) VALUES (?, ?)", {id, value});
    return ids_[value] = id;
  }

 private:
  sqlite3* db_ = nullptr;
  std::map<std::string, std::int64_t> ids_;
};

void write_nsys(const std::string& path, const Report& report, const Tables& tables = {}) {
  std::filesystem::remove(path);
  Database db(path);
  db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
  if (tables.gpus) {
    db.exec("CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT, "
            "totalMemory INTEGER, smCount INTEGER)");
    for (const auto& [id, name] : report.gpus) {
      db.insert("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, ?, '0000:00:00.0', 85899345920, 132)", {id, name});
    }
  }
  if (tables.kernels) {
    db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
            "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
            "demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id), "
            "gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, "
            "blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL)");
  }
  if (tables.memcpy) {
    db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
            "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
            "bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER)");
  }
  if (tables.memset) {
    db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
            "contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, "
            "value INTEGER NOT NULL, bytes INTEGER NOT NULL)");
  }
  if (tables.runtime) {
    db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, "
            "globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id), returnValue INTEGER NOT NULL)");
  }
  if (tables.nvtx) {
    db.exec("CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, "
            "category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, "
            "textId INTEGER REFERENCES StringIds(id), domainId INTEGER)");
  }
  for (const auto& a : report.activities) {
    switch (a.kind) {
      case Kind::kKernel: {
        const auto name = db.string_id(a.name);
        const auto short_name = db.string_id(a.name.substr(0, a.name.find('<')));
        db.insert("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, ?, ?, 4242, ?, ?, 128, 1, 1, 256, 1, 1)",
                  {a.start, a.end, a.device, a.stream, a.correlation, name, short_name});
        break;
      }
      case Kind::kMemcpy:
        db.insert("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1, ?, ?, 4242, ?, ?, 0, 0)",
                  {a.start, a.end, a.device, a.stream, a.correlation, a.bytes, a.copy_kind});
        break;
      case Kind::kMemset:
        db.insert("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, 1, ?, ?, 4242, 0, ?)",
                  {a.start, a.end, a.device, a.stream, a.correlation, a.bytes});
        break;
    }
  }
  for (const auto& c : tables.runtime ? report.calls : std::vector<Call>{}) {
    db.insert("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, 77, ?, ?, 0)", {c.start, c.end, c.correlation, db.string_id(c.name)});
  }
  // A mark (eventType 34) has no duration and is no range: it must not show up anywhere.
  if (tables.nvtx) db.insert("INSERT INTO NVTX_EVENTS (start, end, eventType, text) VALUES (5, NULL, 34, 'DataLoader mark')", {});
  for (const auto& r : tables.nvtx ? report.ranges : std::vector<Range>{}) {
    if (tables.registered_nvtx_text) {
      db.insert("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid) VALUES (?, ?, 59, ?, 77)",
                {r.start, r.end, db.string_id(r.text)});
    } else {
      db.insert("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?, ?, 59, ?, 77)", {r.start, r.end, r.text});
    }
  }
}

// Kineto's microseconds with three decimals: exact nanoseconds.
std::string micros_text(std::int64_t ns) { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

std::string kineto_json(const Report& report) {
  std::vector<std::string> events;
  for (const auto& a : report.activities) {
    std::string cat = "kernel", name = a.name, extra;
    if (a.kind == Kind::kMemcpy) {
      cat = "gpu_memcpy";
      name = a.copy_kind == 1 ? "Memcpy HtoD (Pageable -> Device)" : a.copy_kind == 2 ? "Memcpy DtoH (Device -> Pinned)" : "Memcpy DtoD (Device -> Device)";
      extra = fmt::format(", \"bytes\": {}", a.bytes);
    } else if (a.kind == Kind::kMemset) {
      cat = "gpu_memset";
      name = "Memset (Device)";
      extra = fmt::format(", \"bytes\": {}", a.bytes);
    }
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
                                 R"("args": {{"device": {}, "stream": {}, "correlation": {}{}}}}})",
                                 cat, name, a.device, a.stream, micros_text(a.start), micros_text(a.end - a.start), a.device, a.stream, a.correlation, extra));
  }
  for (const auto& c : report.calls) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": 77, "tid": 77, "ts": {}, "dur": {}, )"
                                 R"("args": {{"correlation": {}}}}})",
                                 c.name, micros_text(c.start), micros_text(c.end - c.start), c.correlation));
  }
  for (const auto& r : report.ranges) {
    events.push_back(fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": 77, "tid": 77, "ts": {}, "dur": {}}})",
                                 r.text, micros_text(r.start), micros_text(r.end - r.start)));
  }
  std::vector<std::string> devices;
  for (const auto& [id, name] : report.gpus) devices.push_back(fmt::format(R"({{"id": {}, "name": "{}"}})", id, name));
  return fmt::format(R"({{"schemaVersion": 1, "deviceProperties": [{}], "traceEvents": [{}]}})", fmt::join(devices, ", "),
                     fmt::join(events, ",\n"));
}

// A training-like report: `steps` steps on two GPUs, each step a DataLoader range (the GPUs idle), then
// per device compute kernels on two streams and an all-reduce on a third, an H2D copy of the batch, a
// memset, a D2H copy of the loss; every activity launched by a runtime call, some launched late (host
// wait). Durations are drawn from a seeded generator so the kernel summary has spread.
Report training_report(int steps, std::int64_t step_stretch_ns = 0, unsigned seed = 7) {
  Report r;
  r.gpus = {{0, "NVIDIA H100 80GB HBM3"}, {1, "NVIDIA H100 80GB HBM3"}};
  std::mt19937_64 random(seed);
  auto between = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(random); };
  std::int64_t t = 1'000'000, correlation = 1;
  const std::vector<std::string> compute = {"void gemm<float, 128>(float const*, float*)", "void softmax<float>(float*)",
                                            "elementwise_add"};
  for (int s = 1; s <= steps; ++s) {
    const std::int64_t step_start = t;
    r.ranges.push_back({t, t + 40'000, "DataLoader::__next__"});
    t += 40'000;
    std::int64_t step_end = t;
    for (std::int64_t device = 0; device < 2; ++device) {
      std::int64_t cpu = t, gpu = t + 5'000;
      auto launch = [&](Activity a, std::int64_t call_ns, const std::string& call_name) {
        a.correlation = correlation++;
        a.device = device;
        r.calls.push_back({cpu, cpu + call_ns, a.correlation, call_name});
        cpu += call_ns + between(100, 3'000);
        r.activities.push_back(a);
        step_end = std::max(step_end, a.end);
      };
      Activity copy{Kind::kMemcpy, gpu, gpu + between(8'000, 12'000), 0, 13, 0, "", 1, between(1, 8) << 20};
      launch(copy, 4'000, "cudaMemcpyAsync_v3020");
      gpu = copy.end + between(500, 2'000);
      Activity zero{Kind::kMemset, gpu, gpu + between(1'000, 2'000), 0, 7, 0, "", 0, 1 << 16};
      launch(zero, 2'000, "cudaMemsetAsync_v3020");
      gpu = zero.end;
      for (int k = 0; k < 12; ++k) {
        const std::string& name = compute[static_cast<std::size_t>(between(0, 2))];
        // Every fourth kernel waits for the CPU: its launch starts after the GPU went idle.
        const std::int64_t gap = k % 4 == 3 ? between(40'000, 60'000) + step_stretch_ns / 12 : between(0, 20'000);
        if (k % 4 == 3) cpu = std::max(cpu, gpu + 1'000);
        gpu += gap;
        Activity kernel{Kind::kKernel, gpu, gpu + between(5'000, 80'000), 0, k % 2 == 0 ? 7 : 9, 0, name, 0, 0};
        launch(kernel, between(2'000, 6'000), "cudaLaunchKernel_v7000");
        gpu = std::max(gpu, kernel.start + 1'000);  // the other stream may overlap
        gpu = std::max(gpu, kernel.end - between(0, 2'000));
      }
      Activity all_reduce{Kind::kKernel, gpu, gpu + between(100'000, 200'000), 0, 21, 0,
                          "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 0, 0};
      launch(all_reduce, 5'000, "cudaLaunchKernel_v7000");
      Activity loss{Kind::kMemcpy, all_reduce.end + 1'000, all_reduce.end + 3'000, 0, 7, 0, "", 2, 4};
      launch(loss, 3'000, "cudaMemcpyAsync_v3020");
    }
    r.ranges.push_back({step_start, step_end + 1'000, fmt::format("ProfilerStep#{}", s)});
    t = step_end + 2'000;
  }
  return r;
}

// The report with what differs between the two formats by nature taken out: file names and how the
// file was read (bytes of JSON or of database, rows or events, seconds).
nlohmann::ordered_json comparable(nlohmann::ordered_json report) {
  report.erase("input_bytes");
  for (auto& rank : report["ranks"]) {
    rank.erase("file");
    rank.erase("parse");
  }
  if (report.contains("straggler")) report["straggler"].erase("file");
  return report;
}

std::int64_t union_length(std::vector<std::pair<std::int64_t, std::int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::int64_t total = 0, covered = std::numeric_limits<std::int64_t>::min();
  for (const auto& [start, end] : intervals) {
    if (end <= covered) continue;
    total += end - std::max(start, covered);
    covered = end;
  }
  return total;
}

TEST(NsysReader, GivesTheSameReportAsThePyTorchTraceOfTheSameEvents) {
  TempDir dir;
  Report events = training_report(4);
  // Calls that launch nothing (their ids are no activity's): the nsys reader drops them as it reads.
  const std::size_t launching_calls = events.calls.size();
  for (std::int64_t i = 0; i < 5; ++i) events.calls.push_back({2'000'000 + i * 100, 2'000'050 + i * 100, 900'000 + i, "cudaEventRecord"});
  for (const bool registered : {false, true}) {
    const std::string db = dir.path() + "/report.sqlite";
    write_nsys(db, events, Tables{.registered_nvtx_text = registered});
    const std::string json = dir.write("trace.json", kineto_json(events));
    auto from_nsys = analyze_traces(db, {});
    auto from_kineto = analyze_traces(json, {});
    ASSERT_TRUE(from_nsys.has_value()) << from_nsys.error().what();
    ASSERT_TRUE(from_kineto.has_value()) << from_kineto.error().what();
    EXPECT_EQ(comparable(trace_report_json(*from_nsys)).dump(1), comparable(trace_report_json(*from_kineto)).dump(1));

    // And the numbers are the events' own, not only equal to each other.
    const RankReport& rank = from_nsys->ranks.at(0);
    ASSERT_EQ(rank.devices.size(), 2u);
    for (const auto& d : rank.devices) {
      std::vector<std::pair<std::int64_t, std::int64_t>> busy;
      std::int64_t h2d = 0, d2h = 0, memset = 0, kernels = 0;
      for (const auto& a : events.activities) {
        if (a.device != d.device) continue;
        busy.emplace_back(a.start, a.end);
        if (a.kind == Kind::kMemcpy) (a.copy_kind == 1 ? h2d : d2h) += a.bytes;
        if (a.kind == Kind::kMemset) memset += a.bytes;
        if (a.kind == Kind::kKernel) ++kernels;
      }
      EXPECT_EQ(d.busy_ns, union_length(busy));
      EXPECT_EQ(d.kernel_count, static_cast<std::uint64_t>(kernels));
      EXPECT_EQ(d.name, events.gpus.at(d.device));
      std::map<std::string, std::int64_t> bytes;
      for (const auto& t : d.transfers) bytes[t.direction] = t.bytes;
      EXPECT_EQ(bytes["H2D"], h2d);
      EXPECT_EQ(bytes["D2H"], d2h);
      EXPECT_EQ(bytes["memset"], memset);
      EXPECT_EQ(d.launch.unmatched, 0u);  // every activity found its runtime call by correlation id
      EXPECT_GT(d.idle.host_wait_ns, 0);
    }
    EXPECT_EQ(rank.steps.count, 4u);
    EXPECT_EQ(rank.steps.first_number, 1);
    EXPECT_EQ(rank.steps.last_number, 4);
    std::vector<std::pair<std::int64_t, std::int64_t>> loading;
    for (const auto& r : events.ranges) {
      if (r.text.starts_with("DataLoader")) loading.emplace_back(r.start, r.end);
    }
    EXPECT_EQ(rank.data_loading_ns, union_length(loading));
    EXPECT_EQ(rank.parse.complete_events, events.activities.size() + launching_calls + events.ranges.size());
    EXPECT_EQ(rank.runtime_calls, launching_calls);
    EXPECT_EQ(from_kineto->ranks.at(0).runtime_calls, events.calls.size());
  }
}

// What nsys's cuda_gpu_kern_sum computes, written out plainly from the inserted rows.
struct ExpectedRow {
  std::int64_t total = 0, min = 0, max = 0;
  std::size_t instances = 0;
  double average = 0, median = 0, stddev = 0;
};

std::map<std::string, ExpectedRow> expected_kernel_rows(const Report& report) {
  std::map<std::string, std::vector<std::int64_t>> durations;
  for (const auto& a : report.activities) {
    if (a.kind == Kind::kKernel) durations[a.name].push_back(a.end - a.start);
  }
  std::map<std::string, ExpectedRow> rows;
  for (auto& [name, d] : durations) {
    ExpectedRow e;
    e.instances = d.size();
    e.total = std::accumulate(d.begin(), d.end(), std::int64_t{0});
    e.min = *std::min_element(d.begin(), d.end());
    e.max = *std::max_element(d.begin(), d.end());
    e.average = static_cast<double>(e.total) / static_cast<double>(d.size());
    std::sort(d.begin(), d.end());
    e.median = d.size() % 2 ? static_cast<double>(d[d.size() / 2]) : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2.0;
    double squares = 0;
    for (auto v : d) squares += (static_cast<double>(v) - e.average) * (static_cast<double>(v) - e.average);
    e.stddev = d.size() > 1 ? std::sqrt(squares / static_cast<double>(d.size() - 1)) : 0;  // sample, as nsys
    rows[name] = e;
  }
  return rows;
}

TEST(NsysKernelSummary, ComputesWhatCudaGpuKernSumPrintsFromTheRows) {
  TempDir dir;
  Report events = training_report(3);
  // One kernel with a single instance: nsys prints a standard deviation of 0 for it.
  events.activities.push_back({Kind::kKernel, 900, 1'900, 1, 5, 0, "lonely_kernel", 0, 0});
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events);
  TraceAnalysisOptions options;
  options.kernel_summary = true;
  auto report = analyze_traces(db, options);
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_EQ(report->kernel_summaries.size(), 1u);
  const auto& rows = report->kernel_summaries[0].rows;
  const auto expected = expected_kernel_rows(events);
  ASSERT_EQ(rows.size(), expected.size());
  std::int64_t all = 0;
  for (const auto& [name, e] : expected) all += e.total;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    SCOPED_TRACE(row.name);
    ASSERT_TRUE(expected.contains(row.name));
    const auto& e = expected.at(row.name);
    EXPECT_EQ(row.total_ns, e.total);
    EXPECT_EQ(row.instances, e.instances);
    EXPECT_DOUBLE_EQ(row.average_ns, e.average);
    EXPECT_DOUBLE_EQ(row.median_ns, e.median);
    EXPECT_EQ(row.min_ns, e.min);
    EXPECT_EQ(row.max_ns, e.max);
    EXPECT_NEAR(row.stddev_ns, e.stddev, 1e-6 * std::max(1.0, e.stddev));
    EXPECT_DOUBLE_EQ(row.time_ratio, static_cast<double>(e.total) / static_cast<double>(all));
    if (i > 0) {
      EXPECT_GE(rows[i - 1].total_ns, row.total_ns);  // sorted by total time, largest first
    }
  }
  EXPECT_EQ(expected.at("lonely_kernel").stddev, 0.0);

  // The PyTorch trace of the same events gives the same table.
  options.kernel_summary = true;
  auto from_kineto = analyze_traces(dir.write("trace.json", kineto_json(events)), options);
  ASSERT_TRUE(from_kineto.has_value()) << from_kineto.error().what();
  auto strip = [](nlohmann::ordered_json j) {
    for (auto& s : j["kernel_summaries"]) s.erase("file");
    return j;
  };
  EXPECT_EQ(strip(kernel_summary_json(report->kernel_summaries)), strip(kernel_summary_json(from_kineto->kernel_summaries)));

  // The text table: nsys's columns, the largest kernel first with its total grouped in thousands.
  const std::string text = kernel_summary_text(report->kernel_summaries);
  EXPECT_NE(text.find("Time (%)  Total Time (ns)  Instances"), std::string::npos) << text;
  EXPECT_NE(text.find("StdDev (ns)  Name"), std::string::npos) << text;
  const auto& top = rows.front();
  std::string total = std::to_string(top.total_ns);
  for (int at = static_cast<int>(total.size()) - 3; at > 0; at -= 3) total.insert(static_cast<std::size_t>(at), ",");
  const auto line = text.find(top.name);
  ASSERT_NE(line, std::string::npos);
  const std::string top_line = text.substr(text.rfind('\n', line) + 1, text.find('\n', line) - text.rfind('\n', line) - 1);
  EXPECT_NE(top_line.find(fmt::format("{:.1f}", 100 * top.time_ratio)), std::string::npos) << top_line;
  EXPECT_NE(top_line.find(" " + total + " "), std::string::npos) << top_line;
}

TEST(NsysReader, AReportWithoutNvtxOrCopiesIsRead) {
  TempDir dir;
  Report events = training_report(2);
  std::erase_if(events.activities, [](const Activity& a) { return a.kind != Kind::kKernel; });
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events, Tables{.memcpy = false, .memset = false, .nvtx = false, .gpus = false});
  auto report = analyze_traces(db, {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  const RankReport& rank = report->ranks.at(0);
  EXPECT_EQ(rank.steps.count, 0u);
  EXPECT_EQ(rank.data_loading_ns, 0);
  std::size_t kernels = 0;
  for (const auto& d : rank.devices) {
    kernels += d.kernel_count;
    EXPECT_TRUE(d.transfers.empty());
    EXPECT_TRUE(d.name.empty());
  }
  EXPECT_EQ(kernels, events.activities.size());
}

TEST(NsysReader, AReportWithCopiesButNoKernelsIsRead) {
  TempDir dir;
  Report events = training_report(1);
  std::erase_if(events.activities, [](const Activity& a) { return a.kind != Kind::kMemcpy; });
  const std::string db = dir.path() + "/copies.sqlite";
  write_nsys(db, events, Tables{.kernels = false});
  TraceAnalysisOptions options;
  options.kernel_summary = true;
  auto report = analyze_traces(db, options);
  ASSERT_TRUE(report.has_value()) << report.error().what();
  for (const auto& d : report->ranks.at(0).devices) {
    EXPECT_EQ(d.kernel_count, 0u);
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (const auto& a : events.activities) {
      if (a.device == d.device) busy.emplace_back(a.start, a.end);
    }
    EXPECT_EQ(d.busy_ns, union_length(busy));
  }
  auto from_kineto = analyze_traces(dir.write("copies.json", kineto_json(events)), {});
  ASSERT_TRUE(from_kineto.has_value()) << from_kineto.error().what();
  EXPECT_EQ(comparable(trace_report_json(*report)).dump(1), comparable(trace_report_json(*from_kineto)).dump(1));
  EXPECT_TRUE(report->kernel_summaries.at(0).rows.empty());
  EXPECT_NE(kernel_summary_text(report->kernel_summaries).find("no CUDA kernels"), std::string::npos);
}

TEST(NsysReader, DevicesAreKeptApart) {
  TempDir dir;
  Report events;
  // Four GPUs, one kernel each, of lengths 1..4 us: each device's busy time is its own kernel.
  for (std::int64_t device = 0; device < 4; ++device) {
    events.activities.push_back({Kind::kKernel, 1'000, 1'000 + (device + 1) * 1'000, device, 7, device + 1, "k", 0, 0});
    events.gpus[device] = fmt::format("GPU{}", device);
  }
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events);
  auto report = analyze_traces(db, {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_EQ(report->ranks.at(0).devices.size(), 4u);
  for (const auto& d : report->ranks.at(0).devices) {
    EXPECT_EQ(d.busy_ns, (d.device + 1) * 1'000);
    EXPECT_EQ(d.name, fmt::format("GPU{}", d.device));
  }
}

TEST(NsysReader, IsToldByItsContentNotItsName) {
  TempDir dir;
  const Report events = training_report(1);
  const std::string db = dir.path() + "/export.json";  // an SQLite file under a JSON name
  write_nsys(db, events);
  EXPECT_TRUE(has_sqlite_magic(db));
  auto report = analyze_traces(db, {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  EXPECT_EQ(report->ranks.at(0).parse.complete_events, events.activities.size() + events.calls.size() + events.ranges.size());
}

TraceError error_of(const std::string& path, TraceAnalysisOptions options = {}) {
  auto report = analyze_traces(path, options);
  EXPECT_FALSE(report.has_value());
  return report ? TraceError{} : report.error();
}

TEST(NsysReader, NotADatabaseIsOneLineNamingTheFile) {
  TempDir dir;
  const std::string file = dir.write("report.sqlite", "this is no database, just text long enough to have a header\n");
  const TraceError e = error_of(file);
  EXPECT_EQ(e.kind, TraceErrorKind::kNotATrace);
  EXPECT_EQ(e.what(), file + ": not an SQLite database (no \"SQLite format 3\" header) at byte 0");
  EXPECT_FALSE(has_sqlite_magic(file));
}

TEST(NsysReader, ADatabaseThatIsNoNsysExportIsRefused) {
  TempDir dir;
  const std::string other = dir.path() + "/other.sqlite";
  {
    Database db(other);
    db.exec("CREATE TABLE people (name TEXT)");
  }
  EXPECT_NE(error_of(other).what().find("without a StringIds table: not an Nsight Systems export"), std::string::npos);

  const std::string no_cuda = dir.path() + "/cpu_only.sqlite";
  write_nsys(no_cuda, {}, Tables{.kernels = false, .memcpy = false, .memset = false, .runtime = false});
  const TraceError e = error_of(no_cuda);
  EXPECT_EQ(e.kind, TraceErrorKind::kNotATrace);
  EXPECT_NE(e.what().find(no_cuda + ": an Nsight Systems export with no CUDA activity"), std::string::npos) << e.what();

  const std::string old_schema = dir.path() + "/old.sqlite";
  {
    Database db(old_schema);
    db.exec("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
    db.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, name INTEGER)");
  }
  const TraceError missing = error_of(old_schema);
  EXPECT_EQ(missing.kind, TraceErrorKind::kBadField);
  EXPECT_NE(missing.what().find("table CUPTI_ACTIVITY_KIND_KERNEL has no column correlationId"), std::string::npos) << missing.what();
}

TEST(NsysReader, AReportCutShortIsAnErrorOrWithLenientWhatCouldBeRead) {
  TempDir dir;
  const Report events = training_report(40);  // big enough for many pages
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events);
  const auto size = std::filesystem::file_size(db);
  ASSERT_GT(size, 64u << 10);
  std::filesystem::resize_file(db, size / 2);
  const TraceError e = error_of(db);
  EXPECT_EQ(e.kind, TraceErrorKind::kTruncated);
  EXPECT_EQ(e.what().find(db + ": the SQLite database is cut short"), 0u) << e.what();
  EXPECT_EQ(e.what().find('\n'), std::string::npos);

  TraceAnalysisOptions lenient;
  lenient.lenient = true;
  auto partial = analyze_traces(db, lenient);
  ASSERT_TRUE(partial.has_value()) << partial.error().what();
  const auto& parse = partial->ranks.at(0).parse;
  EXPECT_TRUE(parse.truncated);
  EXPECT_FALSE(parse.problems.empty());
  EXPECT_LT(parse.complete_events, events.activities.size() + events.calls.size() + events.ranges.size());

  // Cut inside the 100-byte header.
  std::filesystem::resize_file(db, 50);
  EXPECT_NE(error_of(db).what().find("cut short inside its header"), std::string::npos);
}

TEST(NsysReader, MalformedRowsAreNamedOrSkippedWhenLenient) {
  TempDir dir;
  Report events = training_report(1);
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events);
  {
    Database d(db);
    d.exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, demangledName, shortName, "
           "gridX, gridY, gridZ, blockX, blockY, blockZ) VALUES ('soon', 10, 0, 1, 7, 0, 1, 1, 1, 1, 1, 1, 1, 1)");
    d.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (500, 400, 0, 1, 7, 0, 0, 0, 8)");
  }
  std::size_t kernels = 0;
  for (const auto& a : events.activities) kernels += a.kind == Kind::kKernel;
  const TraceError e = error_of(db);
  EXPECT_EQ(e.kind, TraceErrorKind::kBadValue);
  EXPECT_EQ(e.what(), fmt::format("{}: CUPTI_ACTIVITY_KIND_KERNEL row {}: start is not an integer", db, kernels + 1));

  TraceAnalysisOptions lenient;
  lenient.lenient = true;
  auto report = analyze_traces(db, lenient);
  ASSERT_TRUE(report.has_value()) << report.error().what();
  const auto& parse = report->ranks.at(0).parse;
  EXPECT_EQ(parse.skipped_events, 2u);
  ASSERT_EQ(parse.problems.size(), 2u);
  EXPECT_NE(parse.problems[1].find("CUPTI_ACTIVITY_KIND_MEMSET row"), std::string::npos);
  EXPECT_NE(parse.problems[1].find("end 400 before start 500"), std::string::npos);
}

TEST(NsysReader, ADirectoryOfRanksNamesTheStraggler) {
  TempDir dir;
  // Rank 1's compute is stretched: each of its steps is longer by the extra idle gaps.
  const Report fast = training_report(4, 0, 11);
  const Report slow = training_report(4, 600'000, 11);
  write_nsys(dir.path() + "/train_rank-0.sqlite", fast);
  write_nsys(dir.path() + "/train_rank-1.sqlite", slow);
  auto report = analyze_traces(dir.path(), {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_EQ(report->ranks.size(), 2u);
  EXPECT_EQ(display_rank(report->ranks[0]), 0);
  EXPECT_EQ(display_rank(report->ranks[1]), 1);
  auto median_step = [](const Report& r) {
    std::vector<std::int64_t> lengths;
    for (const auto& range : r.ranges) {
      if (range.text.starts_with("ProfilerStep#")) lengths.push_back(range.end - range.start);
    }
    std::sort(lengths.begin(), lengths.end());
    return (lengths[1] + lengths[2]) / 2;  // four steps
  };
  ASSERT_TRUE(report->comparison.straggler.has_value());
  const Straggler& s = *report->comparison.straggler;
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.basis, StragglerBasis::kSteps);
  EXPECT_NEAR(s.value, static_cast<double>(median_step(slow)) / 1e9, 1e-12);
  EXPECT_NEAR(s.excess, static_cast<double>(median_step(slow)) / static_cast<double>(median_step(fast)) - 1, 1e-9);
  EXPECT_GT(s.excess, kStragglerStepExcess);

  // --rank reads only the file named for it.
  TraceAnalysisOptions one;
  one.rank = 1;
  auto only = analyze_traces(dir.path(), one);
  ASSERT_TRUE(only.has_value()) << only.error().what();
  ASSERT_EQ(only->ranks.size(), 1u);
  EXPECT_NE(only->ranks[0].file.find("rank-1"), std::string::npos);
}

// The binary, as a user runs it.
e2e::CommandResult run_trace_verb(std::vector<std::string> args) {
  args.insert(args.begin(), {GPUSCOPE_EXE, "trace"});
  return e2e::run_command(args, {{"LD_LIBRARY_PATH", "/nonexistent"}}, 120);
}

TEST(NsysCli, ReportsKernelsAndErrors) {
  TempDir dir;
  const Report events = training_report(3);
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events);

  auto full = run_trace_verb({db});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  EXPECT_NE(full.out.find("Verdict: "), std::string::npos) << full.out;
  EXPECT_NE(full.out.find("NVIDIA H100 80GB HBM3"), std::string::npos) << full.out;
  EXPECT_NE(full.out.find(" of nsys SQLite, "), std::string::npos) << "the report names what it read:\n" << full.out;

  auto table = run_trace_verb({db, "--report", "kernels"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const auto expected = expected_kernel_rows(events);
  for (const auto& [name, e] : expected) EXPECT_NE(table.out.find(name), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(" Time (%)  Total Time (ns)  Instances"), std::string::npos) << table.out;

  auto json = run_trace_verb({db, "--report", "kernels", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& kernels = doc["kernel_summaries"][0]["kernels"];
  ASSERT_EQ(kernels.size(), expected.size());
  for (const auto& k : kernels) {
    const auto& e = expected.at(k["name"].get<std::string>());
    EXPECT_EQ(k["total_ns"].get<std::int64_t>(), e.total);
    EXPECT_EQ(k["instances"].get<std::size_t>(), e.instances);
    EXPECT_DOUBLE_EQ(k["median_ns"].get<double>(), e.median);
  }

  const std::string bad = dir.write("broken.sqlite", "not a database at all, only some words");
  auto error = run_trace_verb({bad});
  EXPECT_EQ(error.exit_code, 1);
  EXPECT_EQ(error.err, "gpuscope: " + bad + ": not an SQLite database (no \"SQLite format 3\" header) at byte 0\n");
  auto flag = run_trace_verb({db, "--report", "everything"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("--report"), std::string::npos) << flag.err;
}

// Issue 22: the runtime calls' names and threads (globalTid's low 24 bits), the NVTX ranges' threads,
// and the syncs kept though they launch nothing (the critical path waits on them).
TEST(NsysReader, KeepsCallNamesThreadsAndTheSyncs) {
  TempDir dir;
  Report events;
  events.activities.push_back(Activity{Kind::kKernel, 2'000, 5'000, 0, 7, 1, "gemm"});
  events.calls.push_back(Call{1'000, 1'500, 1, "cudaLaunchKernel_v7000"});
  events.calls.push_back(Call{1'600, 5'100, 2, "cudaStreamSynchronize_v3020"});
  events.calls.push_back(Call{5'200, 5'300, 3, "cudaEventRecord_v3020"});  // launches nothing: dropped
  events.ranges.push_back(Range{900, 6'000, "ProfilerStep#1"});
  const std::string db = dir.path() + "/report.sqlite";
  write_nsys(db, events);
  RankTimeline timeline;
  const std::regex pattern("DataLoader");
  TimelineBuilder builder(timeline, pattern);
  auto read = read_nsys_report(db, builder, timeline.header, {});
  ASSERT_TRUE(read.has_value()) << read.error().what();
  ASSERT_EQ(timeline.runtime_calls.size(), 2u);
  EXPECT_EQ(timeline.names[timeline.runtime_calls[0].name_id], "cudaLaunchKernel_v7000");
  EXPECT_EQ(timeline.names[timeline.runtime_calls[1].name_id], "cudaStreamSynchronize_v3020");
  for (const RuntimeCall& c : timeline.runtime_calls) EXPECT_EQ(c.tid, 77);  // the helper's globalTid
  ASSERT_EQ(timeline.cpu_events.size(), 1u);
  EXPECT_EQ(timeline.cpu_events[0].kind, CpuEventKind::kUserAnnotation);
  EXPECT_EQ(timeline.cpu_events[0].tid, 77);
  // The kernel the sync waited for is on the step's critical path.
  const CriticalPathReport path = critical_paths(timeline, nest_cpu_events(timeline), 10);
  ASSERT_EQ(path.steps.size(), 1u);
  EXPECT_EQ(path.steps[0].gpu_ns, 3'000);
}

}  // namespace
}  // namespace gpuscope::trace
