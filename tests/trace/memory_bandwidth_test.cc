// Memory bandwidth over time per direction: hand-made copies with answers worked out by hand,
// the bytes kept per activity, a parsed trace, and the real traces against HTA's definition in Python.
#include <gtest/gtest.h>

#include "counters_test_support.h"
#include "trace/memory_bandwidth.h"
#include "trace/trace_analyzer.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::counters_activity;

// name_id 0 is a kernel, 1 an H2D copy, 2 a D2H copy.
const std::vector<std::string> kBandwidthNames{"gemm", "Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)"};

GpuActivity bandwidth_copy(std::int64_t start, std::int64_t duration, std::int64_t bytes, std::uint32_t name_id = 1) {
  return counters_activity(7, kNoLaunch, start, duration, ActivityKind::kMemcpy, bytes, name_id);
}

TEST(MemoryBandwidth, OverlappingCopiesAddUp) {
  // 1000 bytes over [0, 100) is 10 GB/s, 2000 over [50, 150) 20 GB/s: 10, then 30, then 20, then 0.
  const std::vector<GpuActivity> acts{bandwidth_copy(0, 100, 1000), bandwidth_copy(50, 100, 2000)};
  const auto r = analyze_memory_bandwidth(acts, kBandwidthNames, true);
  ASSERT_EQ(r.directions.size(), 1u);
  const auto& d = r.directions[0];
  EXPECT_EQ(d.direction, "H2D");
  EXPECT_EQ(d.copies, 2u);
  EXPECT_EQ(d.bytes, 3000);
  EXPECT_EQ(d.active_ns, 150);
  EXPECT_DOUBLE_EQ(d.active_gbps(), 20.0);
  EXPECT_EQ(d.samples, 3u);  // the zero at the end is left out, as HTA
  EXPECT_DOUBLE_EQ(d.mean_gbps, 20.0);
  EXPECT_DOUBLE_EQ(d.p50_gbps, 20.0);
  EXPECT_DOUBLE_EQ(d.p95_gbps, 29.0);  // position 1.9 of 10 20 30
  EXPECT_DOUBLE_EQ(d.max_gbps, 30.0);
  const std::vector<std::pair<std::int64_t, double>> expected{{0, 10}, {50, 30}, {100, 20}, {150, 0}};
  ASSERT_EQ(d.series.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(d.series[i].ts_ns, expected[i].first) << i;
    EXPECT_DOUBLE_EQ(d.series[i].value, expected[i].second) << i;
  }
}

TEST(MemoryBandwidth, BackToBackCopiesAreNotStackedAndZeroDurationLastsAMicrosecond) {
  // B starts the instant A ends: A's end counts first, so no 10+40 GB/s spike. C has no duration: it
  // lasts 1 us, as in HTA (5000 bytes: 5 GB/s).
  const std::vector<GpuActivity> acts{bandwidth_copy(0, 100, 1000), bandwidth_copy(100, 100, 4000),
                                      bandwidth_copy(10'000, 0, 5000)};
  const auto r = analyze_memory_bandwidth(acts, kBandwidthNames, true);
  ASSERT_EQ(r.directions.size(), 1u);
  const auto& d = r.directions[0];
  EXPECT_DOUBLE_EQ(d.max_gbps, 40.0);
  EXPECT_EQ(d.samples, 3u);  // 10, 40, 5 (the zeros left out)
  EXPECT_DOUBLE_EQ(d.mean_gbps, 55.0 / 3);
  EXPECT_EQ(d.active_ns, 200 + 1000);
  ASSERT_EQ(d.series.size(), 5u);
  EXPECT_EQ(d.series[1].ts_ns, 100);
  EXPECT_DOUBLE_EQ(d.series[1].value, 40.0);
  EXPECT_EQ(d.series[4].ts_ns, 11'000);
  EXPECT_EQ(d.series[4].value, 0.0);
}

TEST(MemoryBandwidth, DirectionsApartAndKernelsIgnored) {
  std::vector<GpuActivity> acts{bandwidth_copy(0, 100, 1000), bandwidth_copy(0, 100, 3000, 2),
                                counters_activity(7, kNoLaunch, 0, 100, ActivityKind::kMemset, 500),
                                counters_activity(7, kNoLaunch, 0, 100, ActivityKind::kComputeKernel, 0)};
  const auto r = analyze_memory_bandwidth(acts, kBandwidthNames, false);
  ASSERT_EQ(r.directions.size(), 3u);  // in TransferDirection order
  EXPECT_EQ(r.directions[0].direction, "H2D");
  EXPECT_DOUBLE_EQ(r.directions[0].max_gbps, 10.0);
  EXPECT_EQ(r.directions[1].direction, "D2H");
  EXPECT_DOUBLE_EQ(r.directions[1].max_gbps, 30.0);
  EXPECT_EQ(r.directions[2].direction, "memset");
  EXPECT_DOUBLE_EQ(r.directions[2].max_gbps, 5.0);
  EXPECT_TRUE(r.directions[0].series.empty());
}

TEST(MemoryBandwidth, BytesFitTheActivity) {
  EXPECT_EQ(sizeof(GpuActivity), 48u);
  for (const std::int64_t exact : {std::int64_t{0}, std::int64_t{1}, std::int64_t{4}, std::int64_t{12881920}, (std::int64_t{1} << 31) - 1}) {
    EXPECT_EQ(decode_transfer_bytes(encode_transfer_bytes(exact)), exact);
  }
  EXPECT_EQ(decode_transfer_bytes(encode_transfer_bytes(-1)), 0);
  for (const std::int64_t big : {std::int64_t{1} << 31, std::int64_t{5} << 30, (std::int64_t{1} << 40) + 777}) {
    const std::int64_t back = decode_transfer_bytes(encode_transfer_bytes(big));
    EXPECT_LE(std::abs(back - big), 512) << big;
  }
  // Past 2 TiB (no single copy is that big) it saturates rather than wrap.
  EXPECT_EQ(decode_transfer_bytes(encode_transfer_bytes(std::int64_t{3} << 40)), (std::int64_t{0x7FFFFFFF}) << 10);
}

TEST(MemoryBandwidth, FromAParsedTrace) {
  const std::string json = R"json({"traceEvents":[
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","ts":10,"dur":2,"args":{"device":0,"stream":8,"correlation":3,"bytes":40000}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","ts":11,"dur":2,"args":{"device":0,"stream":9,"correlation":4,"bytes":60000}},
    {"ph":"X","cat":"gpu_memset","name":"Memset (Device)","ts":20,"dur":0.5,"args":{"device":0,"stream":8,"correlation":5,"bytes":4}}
  ]})json";
  const auto report = testing::analyze_text(json);
  ASSERT_EQ(report.devices.size(), 1u);
  const auto& b = report.devices[0].memory_bandwidth;
  ASSERT_EQ(b.directions.size(), 2u);
  EXPECT_EQ(b.directions[0].direction, "H2D");
  EXPECT_EQ(b.directions[0].bytes, 100000);
  EXPECT_DOUBLE_EQ(b.directions[0].max_gbps, 20.0 + 30.0);  // 40 kB and 60 kB over 2 us each, overlapping
  EXPECT_EQ(b.directions[0].active_ns, 3000);
  EXPECT_EQ(b.directions[1].direction, "memset");
  EXPECT_DOUBLE_EQ(b.directions[1].max_gbps, 4.0 / 500);
}

void bandwidth_expect_matches_reference(const std::string& trace) {
  std::string why;
  auto reference = testing::hta_counters_reference(trace, 1024, why);
  if (!reference) GTEST_SKIP() << why;
  auto report = analyze_trace_file(trace, {});
  ASSERT_TRUE(report.has_value()) << report.error().what();
  std::size_t expected_directions = 0, seen = 0;
  for (const auto& [device, expected] : (*reference)["devices"].items()) expected_directions += expected["bandwidth"].size();
  for (const auto& d : report->devices) {
    for (const auto& t : d.memory_bandwidth.directions) {
      ++seen;
      const std::string where = trace + " device " + std::to_string(d.device) + " " + t.direction;
      const auto& e = (*reference)["devices"][std::to_string(d.device)]["bandwidth"][t.direction];
      ASSERT_FALSE(e.is_null()) << where;
      EXPECT_EQ(t.copies, e["copies"].get<std::uint64_t>()) << where;
      EXPECT_EQ(t.bytes, e["bytes"].get<std::int64_t>()) << where;
      EXPECT_EQ(t.samples, e["samples"].get<std::uint64_t>()) << where;
      EXPECT_EQ(t.active_ns, e["active_ns"].get<std::int64_t>()) << where;
      testing::expect_close(t.mean_gbps, e["mean_gbps"], where + " mean");
      testing::expect_close(t.p50_gbps, e["p50_gbps"], where + " p50");
      testing::expect_close(t.p95_gbps, e["p95_gbps"], where + " p95");
      testing::expect_close(t.max_gbps, e["max_gbps"], where + " max");
    }
  }
  EXPECT_EQ(seen, expected_directions) << trace;
}

TEST(MemoryBandwidth, RealTracesMatchHtaDefinition) {
  bandwidth_expect_matches_reference(testing::conformance_trace("trace_diff__control__control.json.gz"));
  bandwidth_expect_matches_reference(testing::conformance_trace("trace_filter__sampled_rank-0.json.gz"));
  bandwidth_expect_matches_reference(testing::conformance_trace("trace_filter__sampled_rank-1.json.gz"));
  bandwidth_expect_matches_reference(testing::real_h100_trace("trace_compute_bound.json.gz"));
}

TEST(MemoryBandwidth, RealTraceFigures) {
  // The real trace's 18 device-to-device copies: 1.82 GB, at most 991 GB/s (A100 HBM2e).
  auto report = analyze_trace_file(testing::conformance_trace("trace_diff__control__control.json.gz"), {});
  ASSERT_TRUE(report.has_value());
  const auto& b = report->devices.at(0).memory_bandwidth;
  ASSERT_EQ(b.directions.size(), 4u);
  EXPECT_EQ(b.directions[2].direction, "D2D");
  EXPECT_EQ(b.directions[2].bytes, 1821299360);
  EXPECT_NEAR(b.directions[2].max_gbps, 990.9, 0.1);
  // The per-direction totals of the transfer table and the counters agree.
  for (const auto& t : report->devices[0].transfers) {
    const auto it = std::find_if(b.directions.begin(), b.directions.end(), [&](const DirectionBandwidth& d) { return d.direction == t.direction; });
    ASSERT_NE(it, b.directions.end()) << t.direction;
    EXPECT_EQ(it->bytes, t.bytes);
    EXPECT_EQ(it->copies, t.count);
  }
}

}  // namespace
}  // namespace gpuscope::trace
