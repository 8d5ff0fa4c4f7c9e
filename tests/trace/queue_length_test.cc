// Launch-queue length per stream: hand-made activities with answers worked out by hand or by
// brute force, a parsed trace, and the real traces against HTA's definition in Python.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "counters_test_support.h"
#include "trace/counters_report.h"
#include "trace/queue_length.h"
#include "trace/trace_analyzer.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::counters_activity;

TEST(QueueLength, ThreeQueuedKernelsByHand) {
  // Launched at 0, 10, 20; started at 100, 200, 300: the length goes 1 2 3 2 1 0.
  const std::vector<GpuActivity> acts{counters_activity(7, 0, 100, 50), counters_activity(7, 10, 200, 50),
                                      counters_activity(7, 20, 300, 50)};
  const auto r = analyze_queue_length(acts, {.max_queue_length = 3, .series = true});
  ASSERT_EQ(r.streams.size(), 1u);
  const auto& s = r.streams[0];
  EXPECT_EQ(s.stream, 7);
  EXPECT_EQ(s.launches, 3u);
  EXPECT_EQ(s.samples, 6u);
  EXPECT_DOUBLE_EQ(s.mean, 9.0 / 6);
  EXPECT_DOUBLE_EQ(s.p50, 1.5);   // sorted 0 1 1 2 2 3: halfway between the 3rd and 4th
  EXPECT_DOUBLE_EQ(s.p95, 2.75);  // position 4.75: 2 + 0.75 * (3 - 2)
  EXPECT_EQ(s.max, 3);
  // 1*10 + 2*10 + 3*80 + 2*100 + 1*100 over 300 ns.
  EXPECT_DOUBLE_EQ(s.time_weighted_mean, 570.0 / 300);
  EXPECT_EQ(s.full_ns, 80);  // at 3 from 20 to 100
  EXPECT_EQ(r.full_ns, 80);
  const std::vector<std::pair<std::int64_t, double>> expected{{0, 1}, {10, 2}, {20, 3}, {100, 2}, {200, 1}, {300, 0}};
  ASSERT_EQ(s.series.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(s.series[i].ts_ns, expected[i].first) << i;
    EXPECT_EQ(s.series[i].value, expected[i].second) << i;
  }
  // No series unless asked for; the same figures.
  const auto plain = analyze_queue_length(acts, {.max_queue_length = 2});
  EXPECT_TRUE(plain.streams[0].series.empty());
  EXPECT_EQ(plain.streams[0].full_ns, 10 + 80 + 100);
}

TEST(QueueLength, TiesLaunchFirstAndSkewedClocksNeverGoNegative) {
  // B is launched at the instant A starts: the launch counts first (2, then 1), and the series keeps one
  // point per timestamp, the value after both. C starts before its launch call (clock skew): it counts
  // as launched when it starts.
  const std::vector<GpuActivity> acts{counters_activity(1, 0, 50, 5), counters_activity(1, 50, 60, 5),
                                      counters_activity(2, 100, 90, 5)};
  const auto r = analyze_queue_length(acts, {.series = true});
  ASSERT_EQ(r.streams.size(), 2u);
  const auto& one = r.streams[0];
  EXPECT_EQ(one.max, 2);
  EXPECT_EQ(one.samples, 4u);
  EXPECT_DOUBLE_EQ(one.mean, (1 + 2 + 1 + 0) / 4.0);
  ASSERT_EQ(one.series.size(), 3u);
  EXPECT_EQ(one.series[1].ts_ns, 50);
  EXPECT_EQ(one.series[1].value, 1);
  const auto& two = r.streams[1];
  EXPECT_EQ(two.stream, 2);
  EXPECT_EQ(two.max, 1);
  ASSERT_EQ(two.series.size(), 1u);
  EXPECT_EQ(two.series[0].ts_ns, 90);
  EXPECT_EQ(two.series[0].value, 0);
  for (const auto& s : r.streams) {
    for (const auto& p : s.series) EXPECT_GE(p.value, 0);
  }
}

TEST(QueueLength, UnmatchedActivitiesAndOrderDoNotMatter) {
  std::vector<GpuActivity> acts;
  for (int i = 0; i < 200; ++i) {
    acts.push_back(counters_activity(i % 3, i * 7, 1000 + i * 11, 5));
  }
  acts.push_back(counters_activity(0, kNoLaunch, 500, 5));  // no launch call: not in the queue
  acts.push_back(counters_activity(-1, 3, 700, 5));          // no stream
  const auto sorted = analyze_queue_length(acts, {.series = true});
  std::mt19937 rng(7);
  std::shuffle(acts.begin(), acts.end(), rng);
  const auto shuffled = analyze_queue_length(acts, {.series = true});
  ASSERT_EQ(sorted.streams.size(), 3u);
  ASSERT_EQ(shuffled.streams.size(), 3u);
  std::uint64_t launches = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(sorted.streams[i].stream, static_cast<std::int64_t>(i));
    EXPECT_EQ(sorted.streams[i].max, shuffled.streams[i].max);
    EXPECT_EQ(sorted.streams[i].mean, shuffled.streams[i].mean);
    EXPECT_EQ(sorted.streams[i].series.size(), shuffled.streams[i].series.size());
    launches += sorted.streams[i].launches;
  }
  EXPECT_EQ(launches, 200u);
}

// The length during [t, t + 1): launches at or before t minus starts at or before t.
std::int64_t queue_brute_force_length(const std::vector<std::int64_t>& launches, const std::vector<std::int64_t>& starts, std::int64_t t) {
  const auto upto = [t](const std::vector<std::int64_t>& v) {
    return static_cast<std::int64_t>(std::upper_bound(v.begin(), v.end(), t) - v.begin());
  };
  return upto(launches) - upto(starts);
}

TEST(QueueLength, FullQueueTimeAgainstBruteForce) {
  // 1100 launches 3 ns apart, then the GPU works them off one every 10 ns (with some jitter): the queue
  // passes 1024 and the CPU would block. Every nanosecond is checked one by one.
  std::mt19937 rng(22);
  std::vector<GpuActivity> acts;
  std::vector<std::int64_t> launches, starts;
  std::int64_t start = 20'000;
  for (int i = 0; i < 1100; ++i) {
    start += 5 + static_cast<std::int64_t>(rng() % 10);
    acts.push_back(counters_activity(3, i * 3, start, 4));
    launches.push_back(i * 3);
    starts.push_back(start);
  }
  for (const std::int64_t limit : {1024, 1000, 64}) {
    const auto r = analyze_queue_length(acts, {.max_queue_length = limit});
    std::int64_t full = 0, max = 0;
    double integral = 0;
    for (std::int64_t t = 0; t < starts.back(); ++t) {
      const std::int64_t length = queue_brute_force_length(launches, starts, t);
      full += length >= limit ? 1 : 0;
      max = std::max(max, length);
      integral += static_cast<double>(length);
    }
    ASSERT_EQ(r.streams.size(), 1u);
    EXPECT_EQ(r.streams[0].full_ns, full) << limit;
    EXPECT_GT(full, 0) << limit;
    EXPECT_EQ(r.streams[0].max, max);
    EXPECT_NEAR(r.streams[0].time_weighted_mean, integral / static_cast<double>(starts.back()), 1e-9 * integral);
  }
}

TEST(QueueLength, FromAParsedTrace) {
  // Two kernels launched back to back on stream 7, the second queued behind the first; a memcpy on
  // stream 8 launched by cudaMemcpyAsync; a kernel whose launch call is not in the trace.
  const std::string json = R"json({"traceEvents":[
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":10,"dur":2,"args":{"correlation":1}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":13,"dur":2,"args":{"correlation":2}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","ts":16,"dur":2,"args":{"correlation":3}},
    {"ph":"X","cat":"kernel","name":"k","ts":20,"dur":10,"args":{"device":0,"stream":7,"correlation":1}},
    {"ph":"X","cat":"kernel","name":"k","ts":30,"dur":10,"args":{"device":0,"stream":7,"correlation":2}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","ts":25,"dur":4,"args":{"device":0,"stream":8,"correlation":3,"bytes":4000}},
    {"ph":"X","cat":"kernel","name":"k","ts":50,"dur":1,"args":{"device":0,"stream":7,"correlation":99}}
  ]})json";
  const auto report = testing::analyze_text(json);
  ASSERT_EQ(report.devices.size(), 1u);
  const auto& q = report.devices[0].queue_length;
  ASSERT_EQ(q.streams.size(), 2u);
  EXPECT_EQ(q.streams[0].stream, 7);
  EXPECT_EQ(q.streams[0].launches, 2u);
  EXPECT_EQ(q.streams[0].max, 2);  // both launched (10, 13 us) before the first starts (20 us)
  // 1 for 3 us, 2 for 7 us, 1 for 10 us, over 20 us.
  EXPECT_DOUBLE_EQ(q.streams[0].time_weighted_mean, (3.0 + 14 + 10) / 20);
  EXPECT_EQ(q.streams[1].stream, 8);
  EXPECT_EQ(q.streams[1].launches, 1u);
  EXPECT_EQ(q.full_ns, 0);
}

void queue_expect_matches_reference(const std::string& trace, std::int64_t limit) {
  std::string why;
  auto reference = testing::hta_counters_reference(trace, limit, why);
  if (!reference) GTEST_SKIP() << why;
  TraceAnalysisOptions options;
  options.analysis.max_queue_length = limit;
  auto report = analyze_trace_file(trace, options);
  ASSERT_TRUE(report.has_value()) << report.error().what();
  std::size_t streams = 0;
  for (const auto& [device, expected] : (*reference)["devices"].items()) streams += expected["queue"].size();
  std::size_t seen = 0;
  for (const auto& d : report->devices) {
    for (const auto& s : d.queue_length.streams) {
      ++seen;
      const std::string where = trace + " device " + std::to_string(d.device) + " stream " + std::to_string(s.stream);
      const auto& e = (*reference)["devices"][std::to_string(d.device)]["queue"][std::to_string(s.stream)];
      ASSERT_FALSE(e.is_null()) << where;
      EXPECT_EQ(s.launches, e["launches"].get<std::uint64_t>()) << where;
      EXPECT_EQ(s.samples, e["samples"].get<std::uint64_t>()) << where;
      EXPECT_EQ(s.max, e["max"].get<std::int64_t>()) << where;
      EXPECT_EQ(s.full_ns, e["full_ns"].get<std::int64_t>()) << where;
      testing::expect_close(s.mean, e["mean"], where + " mean");
      testing::expect_close(s.p50, e["p50"], where + " p50");
      testing::expect_close(s.p95, e["p95"], where + " p95");
      testing::expect_close(s.time_weighted_mean, e["time_weighted_mean"], where + " time-weighted mean");
    }
  }
  EXPECT_EQ(seen, streams) << trace;
  EXPECT_GT(seen, 0u) << trace;
}

TEST(QueueLength, RealTracesMatchHtaDefinition) {
  queue_expect_matches_reference(testing::conformance_trace("trace_diff__control__control.json.gz"), 1024);
  // The real trace's busiest stream queues 288 launches: lower limits make the full-queue time count.
  queue_expect_matches_reference(testing::conformance_trace("trace_diff__control__control.json.gz"), 100);
  queue_expect_matches_reference(testing::conformance_trace("trace_filter__sampled_rank-0.json.gz"), 20);
  queue_expect_matches_reference(testing::conformance_trace("trace_filter__sampled_rank-1.json.gz"), 1024);
  queue_expect_matches_reference(testing::real_h100_trace("trace_launch_bound.json.gz"), 1024);
  queue_expect_matches_reference(testing::real_h100_trace("trace_compute_bound.json.gz"), 2);
}

TEST(QueueLength, RealTraceFigures) {
  // Pinned so a change of convention shows; the reference test above is what checks them.
  auto report = analyze_trace_file(testing::conformance_trace("trace_diff__control__control.json.gz"), {});
  ASSERT_TRUE(report.has_value());
  const auto& q = report->devices.at(0).queue_length;
  ASSERT_EQ(q.streams.size(), 4u);
  EXPECT_EQ(q.streams[0].stream, 7);
  EXPECT_EQ(q.streams[0].max, 288);
  EXPECT_EQ(q.full_ns, 0);
}

TEST(QueueLength, JsonSection) {
  const std::vector<GpuActivity> acts{counters_activity(7, 0, 100, 50), counters_activity(7, 10, 200, 50)};
  const auto j = queue_length_json(analyze_queue_length(acts, {.max_queue_length = 2}));
  EXPECT_EQ(j["max_queue_length"], 2);
  EXPECT_DOUBLE_EQ(j["blocked_on_full_queue_seconds"].get<double>(), 90e-9);  // at 2 from 10 to 100
  ASSERT_EQ(j["streams"].size(), 1u);
  EXPECT_EQ(j["streams"][0]["stream"], 7);
  EXPECT_EQ(j["streams"][0]["max"], 2);
  EXPECT_DOUBLE_EQ(j["streams"][0]["mean"].get<double>(), (1 + 2 + 1 + 0) / 4.0);
  EXPECT_DOUBLE_EQ(j["streams"][0]["at_max_queue_length_seconds"].get<double>(), 90e-9);
  MemoryBandwidthReport b;
  DirectionBandwidth h2d;
  h2d.direction = "H2D";
  h2d.copies = 1;
  h2d.bytes = 1000;
  h2d.active_ns = 100;
  h2d.max_gbps = 10;
  b.directions.push_back(h2d);
  const auto bj = memory_bandwidth_json(b);
  EXPECT_EQ(bj[0]["direction"], "H2D");
  EXPECT_DOUBLE_EQ(bj[0]["max_bytes_per_second"].get<double>(), 10e9);
  EXPECT_DOUBLE_EQ(bj[0]["active_bytes_per_second"].get<double>(), 10e9);
}

}  // namespace
}  // namespace gpuscope::trace
