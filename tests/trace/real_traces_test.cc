// The real Kineto traces in ../shared/conformance/traces: cross-totals that must hold, and figures
// computed independently. The expected numbers come from a separate stdlib-only Python script run once by
// hand (json.load, then the same definitions written again in Python: union sweep per device, the HTA
// gap rule per stream with launches matched by correlation id, sums per kernel category); they agree to
// the nanosecond because both convert Kineto's microseconds to integer nanoseconds.
#include <gtest/gtest.h>

#include "trace/trace_analyzer.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::conformance_trace;

constexpr std::int64_t ms = 1'000'000;

void expect_cross_totals(const RankReport& r) {
  for (const auto& d : r.devices) {
    EXPECT_EQ(d.busy_ns + d.idle_ns(), d.window_ns());
    EXPECT_EQ(d.idle.total(), d.idle_ns()) << "device idle breakdown must add up to the idle time";
    EXPECT_GE(d.window_start_ns, r.span_start_ns);  // the span includes every GPU activity
    EXPECT_LE(d.window_end_ns, r.span_end_ns);
    for (const auto& s : d.streams) {
      EXPECT_EQ(s.idle.total(), s.window_ns - s.busy_ns) << "stream " << s.stream;
      EXPECT_LE(s.busy_ns, d.busy_ns);
    }
    EXPECT_EQ(d.launch.launched + d.launch.unmatched,
              d.kernel_count + [&] {
                std::uint64_t n = 0;
                for (const auto& t : d.transfers) n += t.count;
                return n;
              }());
    double shares = 0;
    for (const auto& k : d.top_kernels) shares += k.share;
    EXPECT_LE(shares, 1.0 + 1e-9);
    EXPECT_LE(d.overlap_ns, std::min(d.communication_union_ns, d.computation_union_ns));
    EXPECT_LE(d.data_loading_idle_ns, d.idle_ns());
  }
}

TEST(RealTraces, ControlTraceMatchesTheIndependentComputation) {
  auto r = analyze_trace_file(conformance_trace("trace_diff__control__control.json.gz"), {});
  ASSERT_TRUE(r.has_value()) << r.error().what();
  expect_cross_totals(*r);
  EXPECT_EQ(r->rank, 3);
  EXPECT_EQ(r->world_size, 8);
  EXPECT_EQ(r->parse.json_bytes, 34825284u);  // zcat | wc -c
  EXPECT_EQ(r->parse.event_objects, 109123u);
  EXPECT_EQ(r->parse.complete_events, 74937u);  // every "ph": "X" event, the 40506 cpu_ops among them
  EXPECT_EQ(r->span_ns(), 465275000);  // CPU ops, runtime calls, annotations and GPU activity
  EXPECT_EQ(r->steps.count, 6u);
  EXPECT_EQ(r->steps.mean_ns, 77490833);
  EXPECT_EQ(r->steps.max_ns, 81120000);
  ASSERT_EQ(r->devices.size(), 1u);
  const DeviceReport& d = r->devices[0];
  EXPECT_EQ(d.device, 3);
  EXPECT_EQ(d.name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(d.window_ns(), 464594000);
  EXPECT_EQ(d.busy_ns, 388587000);
  EXPECT_EQ(d.idle.host_wait_ns, 66571000);
  EXPECT_EQ(d.idle.kernel_wait_ns, 9436000);
  EXPECT_EQ(d.idle.other_ns, 0);
  EXPECT_EQ(d.computation_ns, 283278000);
  EXPECT_EQ(d.communication_ns, 163535000);
  EXPECT_EQ(d.memory_ns, 54754000);
  EXPECT_EQ(d.computation_union_ns, 281336000);
  EXPECT_EQ(d.overlap_ns, 75614000);
  EXPECT_EQ(d.kernel_count, 8568u);
  EXPECT_EQ(d.launch.short_kernels, 4463u);
  EXPECT_EQ(d.launch.launched, 9450u);
  EXPECT_EQ(d.launch.delay_mean_ns, 2137031);
  EXPECT_EQ(d.launch.delay_max_ns, 11692000);
  ASSERT_GE(d.top_kernels.size(), 3u);
  EXPECT_EQ(d.top_kernels[0].name.substr(0, 35), "ncclKernel_SendRecv_RING_SIMPLE_Sum");
  EXPECT_EQ(d.top_kernels[0].count, 42u);
  EXPECT_EQ(d.top_kernels[0].total_ns, 130655000);
  EXPECT_EQ(d.top_kernels[0].max_ns, 12621000);
  EXPECT_EQ(d.top_kernels[2].total_ns, 32880000);
  ASSERT_EQ(d.streams.size(), 4u);
  EXPECT_EQ(d.streams[0].stream, 7);
  EXPECT_EQ(d.streams[0].busy_ns, 280227000);
  EXPECT_EQ(d.streams[0].idle.host_wait_ns, 133311000);
  EXPECT_EQ(d.streams[0].idle.kernel_wait_ns, 17152000);
  EXPECT_EQ(d.streams[0].idle.other_ns, 32751000);
  std::map<std::string, TransferReport> transfers;
  for (const auto& t : d.transfers) transfers[t.direction] = t;
  EXPECT_EQ(transfers["H2D"].count, 150u);
  EXPECT_EQ(transfers["H2D"].bytes, 423923260);
  EXPECT_EQ(transfers["H2D"].duration_ns, 50656000);
  EXPECT_EQ(transfers["D2H"].bytes, 100896);
  EXPECT_EQ(transfers["D2D"].bytes, 1821299360);
  EXPECT_EQ(transfers["memset"].count, 654u);
  // 6 DataLoader annotations of 67-73 us.
  EXPECT_EQ(r->data_loading_ns, (71 + 67 + 73 + 70 + 68 + 71) * 1000);
  EXPECT_EQ(d.verdict.kind, VerdictKind::kLaunchBound);
}

TEST(RealTraces, PlainAndSmallWindowGiveTheSameAnswers) {
  // The same trace decompressed, then read through a 4 KiB window with every event through simdjson:
  // identical figures.
  testing::TempDir dir;
  auto reader = TraceByteReader::open(conformance_trace("trace_filter__sampled_rank-0.json.gz"));
  ASSERT_TRUE(reader.has_value());
  std::string json;
  std::string chunk(1 << 16, '\0');
  for (;;) {
    auto n = reader->read(chunk.data(), chunk.size());
    ASSERT_TRUE(n.has_value());
    if (*n == 0) break;
    json.append(chunk.data(), *n);
  }
  auto whole = analyze_trace_file(dir.write("rank-0.json", json), {});
  ASSERT_TRUE(whole.has_value()) << whole.error().what();
  ParseOptions tiny;
  tiny.window_bytes = 4096;
  tiny.plain_decoder = false;  // and every event through simdjson
  const RankReport small = testing::analyze_text(json, tiny);
  ASSERT_EQ(small.devices.size(), whole->devices.size());
  EXPECT_EQ(small.devices[0].busy_ns, whole->devices[0].busy_ns);
  EXPECT_EQ(small.devices[0].idle.host_wait_ns, whole->devices[0].idle.host_wait_ns);
  EXPECT_EQ(small.devices[0].launch.delay_mean_ns, whole->devices[0].launch.delay_mean_ns);
}

TEST(RealTraces, DirectoryOfRanksComparesThem) {
  testing::TempDir dir;
  for (const char* name : {"trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"}) {
    std::ifstream in(conformance_trace(name), std::ios::binary);
    dir.write(name, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  dir.write("README.md", "not a trace");
  auto report = analyze_traces(dir.path(), {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  ASSERT_EQ(report->ranks.size(), 2u);
  for (const auto& r : report->ranks) expect_cross_totals(r);
  EXPECT_EQ(report->ranks[0].rank, 0);
  EXPECT_EQ(report->ranks[1].rank, 1);
  const DeviceReport& d0 = report->ranks[0].devices.at(0);
  EXPECT_EQ(d0.window_ns(), 1222847000);
  EXPECT_EQ(d0.busy_ns, 547656000);
  EXPECT_EQ(d0.idle.host_wait_ns, 362945000);
  EXPECT_EQ(d0.idle.kernel_wait_ns, 2708000);
  EXPECT_EQ(d0.idle.other_ns, 309538000);
  EXPECT_EQ(d0.overlap_ns, 59216000);
  const DeviceReport& d1 = report->ranks[1].devices.at(0);
  EXPECT_EQ(d1.device, 1);
  EXPECT_EQ(d1.busy_ns, 580050000);
  EXPECT_EQ(d1.communication_ns, 379053000);
  EXPECT_EQ(report->ranks[0].steps.mean_ns, 615120000);
  EXPECT_EQ(report->ranks[1].steps.mean_ns, 619271500);
  EXPECT_EQ(report->ranks[0].steps.median_ns, 615120000);
  // Rank 1's steps are 0.7% slower, from two steps each: that names no straggler (it named rank 1).
  EXPECT_FALSE(report->comparison.straggler.has_value());
  ASSERT_TRUE(report->comparison.no_straggler.has_value());
  EXPECT_EQ(report->comparison.no_straggler->reason, NoStragglerReason::kTooFewSteps);
  EXPECT_EQ(report->comparison.world_size, 128);

  TraceAnalysisOptions only_one;
  only_one.rank = 1;
  auto one = analyze_traces(dir.path(), only_one);
  ASSERT_TRUE(one.has_value());
  ASSERT_EQ(one->ranks.size(), 1u);
  EXPECT_FALSE(one->comparison.straggler.has_value());
  EXPECT_FALSE(one->comparison.no_straggler.has_value());
  only_one.rank = 9;
  auto none = analyze_traces(dir.path(), only_one);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().kind, TraceErrorKind::kNoSuchRank);
}

// --rank reads the other ranks' files only as far as the distributedInfo Kineto writes before the
// events: a damaged event in another rank's file goes unnoticed, and so do its gigabytes.
TEST(RealTraces, RankFilterStopsAtTheOtherRanksHeaders) {
  testing::TempDir dir;
  for (const char* name : {"trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"}) {
    std::ifstream in(conformance_trace(name), std::ios::binary);
    dir.write(name, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  }
  // Rank 2: a header, then an event with a negative duration. Rank 3: the same without distributedInfo,
  // so only its name says which rank it is; it must be read to be sure.
  const std::string bad_event = R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": -1}]})";
  dir.write("rank-2.json", R"({"distributedInfo": {"rank": 2, "world_size": 4}, "traceEvents": )" + bad_event);
  TraceAnalysisOptions options;
  options.rank = 0;
  auto zero = analyze_traces(dir.path(), options);
  ASSERT_TRUE(zero.has_value()) << zero.error().what();
  ASSERT_EQ(zero->ranks.size(), 1u);
  EXPECT_EQ(zero->ranks[0].rank, 0);
  options.rank = 2;
  auto two = analyze_traces(dir.path(), options);
  ASSERT_FALSE(two.has_value());
  EXPECT_NE(two.error().what().find("negative duration"), std::string::npos) << two.error().what();

  dir.write("rank-3.json", R"({"traceEvents": )" + bad_event);
  options.rank = 0;
  auto unknown = analyze_traces(dir.path(), options);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().what().find("rank-3.json"), std::string::npos) << unknown.error().what();
  options.lenient = true;
  auto lenient = analyze_traces(dir.path(), options);
  ASSERT_TRUE(lenient.has_value()) << lenient.error().what();
  EXPECT_EQ(lenient->ranks.size(), 1u);
}

}  // namespace
}  // namespace gpuscope::trace
