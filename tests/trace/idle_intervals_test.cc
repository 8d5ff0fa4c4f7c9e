// Idle gaps one by one: distributions per stream and device-wide on a hand-built trace, what
// the CPU did during the longest gap, and the device-wide label in the reports.
#include "trace/idle_intervals.h"

#include <gtest/gtest.h>

#include "extras_test_support.h"
#include "trace/extras_report.h"
#include "trace/trace_report_json.h"
#include "trace/trace_report_text.h"
#include "trace_test_support.h"

namespace gpuscope::trace {
namespace {

using testing::analyze_text;
using testing::ExtrasTrace;

constexpr std::int64_t gap_us = 1000;

// Device 0. Stream 1: [0,10) [20,30) [60,70) [170,180); stream 2: [25,65). All launched at 0 except the
// last, launched at 150 (after the GPU went idle at 70: host wait).
// Stream 1 gaps: [10,20) 10 kernel wait, [30,60) 30 other (not under 30 us), [70,170) 100 host wait.
// Stream 2: one kernel, no gap. Device-wide (union [0,10) [20,70) [170,180)): [10,20) 10, [70,170) 100.
// Nearest rank at round(q (n - 1)): stream 1 (10 30 100): p50 30, p90 100, p99 100; device (10 100):
// p50 100 (index round(0.5) = 1), p90 100.
// The CPU during [70,170): ProfilerStep#7 [0,300) and aten::outer [60,200) cover all of it,
// aten::item [75,165) 90% (at least 90% of the best): the innermost, aten::item. cudaStreamSynchronize
// [80,160) covers 80%, the DataLoader annotation [150,170) 20%.
ExtrasTrace idle_gaps_trace() {
  ExtrasTrace t;
  t.step(7, 0, 300);
  t.launch(1, 0).kernel("k", 1, 0, 10, 1).launch(2, 0).kernel("k", 1, 20, 10, 2).launch(3, 0).kernel("k", 1, 60, 10, 3);
  t.launch(4, 150).kernel("k", 1, 170, 10, 4).launch(5, 0).kernel("long", 2, 25, 40, 5);
  t.cpu_op("aten::outer", 60, 140).cpu_op("aten::item", 75, 90);
  t.launch(50, 80, 80, "cudaStreamSynchronize");
  t.annotation("enumerate(DataLoader)#_Iter.__next__", 150, 20, 2);
  return t;
}

TEST(IdleIntervals, DistributionsFollowFromTheConstruction) {
  const RankReport r = analyze_text(idle_gaps_trace().json());
  ASSERT_EQ(r.devices.size(), 1u);
  const auto& ii = r.devices[0].idle_intervals;
  EXPECT_EQ(ii.device.count, 2u);
  EXPECT_EQ(ii.device.total_ns, 110 * gap_us);
  EXPECT_EQ(ii.device.total_ns, r.devices[0].idle_ns());
  EXPECT_EQ(ii.device.p50_ns, 100 * gap_us);
  EXPECT_EQ(ii.device.p90_ns, 100 * gap_us);
  EXPECT_EQ(ii.device.longest_ns, 100 * gap_us);
  EXPECT_EQ(ii.device.longest_start_ns, 70 * gap_us);  // the trace starts at 0
  EXPECT_EQ(ii.device.longest_kind, GapKind::kHostWait);
  ASSERT_EQ(ii.streams.size(), 2u);
  EXPECT_EQ(ii.streams[0].stream, 1);
  EXPECT_EQ(ii.streams[0].gaps.count, 3u);
  EXPECT_EQ(ii.streams[0].gaps.p50_ns, 30 * gap_us);
  EXPECT_EQ(ii.streams[0].gaps.p90_ns, 100 * gap_us);
  EXPECT_EQ(ii.streams[0].gaps.p99_ns, 100 * gap_us);
  EXPECT_EQ(ii.streams[1].stream, 2);
  EXPECT_EQ(ii.streams[1].gaps.count, 0u);  // a single-kernel stream has no gap
  // Per stream, the gaps add up to HTA's split.
  const auto& s1 = r.devices[0].streams.at(0);
  EXPECT_EQ(ii.streams[0].gaps.total_ns, s1.idle.total());
}

TEST(IdleIntervals, LongestGapSaysWhatTheCpuDid) {
  const RankReport r = analyze_text(idle_gaps_trace().json());
  const auto& ii = r.devices[0].idle_intervals;
  EXPECT_TRUE(ii.cpu_events);
  ASSERT_EQ(ii.longest.size(), 2u);  // as many as there are gaps, up to 3
  const GapContext& c = ii.longest[0];
  EXPECT_EQ(c.gap.length(), 100 * gap_us);
  EXPECT_EQ(c.step, 7);
  EXPECT_EQ(c.cpu_name, "aten::item");
  EXPECT_EQ(c.cpu_kind, "cpu_op");
  EXPECT_DOUBLE_EQ(c.cpu_cover, 0.9);
  EXPECT_EQ(c.runtime_name, "cudaStreamSynchronize");
  EXPECT_DOUBLE_EQ(c.runtime_cover, 0.8);
  EXPECT_DOUBLE_EQ(c.data_loading_cover, 0.2);
  std::string text;
  device_extras_text(text, r.devices[0]);
  EXPECT_NE(text.find("cpu_op aten::item on thread 1 (90% of the gap); cudaStreamSynchronize (80%); DataLoader 20%"),
            std::string::npos)
      << text;
}

TEST(IdleIntervals, WithoutCpuEventsTheReportSaysWhatItUsed) {
  ExtrasTrace t;
  t.launch(1, 0).kernel("k", 1, 0, 10, 1).launch(2, 50).kernel("k", 1, 100, 10, 2).launch(3, 60, 30, "cudaDeviceSynchronize");
  const RankReport r = analyze_text(t.json());
  const auto& ii = r.devices[0].idle_intervals;
  EXPECT_FALSE(ii.cpu_events);
  ASSERT_EQ(ii.longest.size(), 1u);
  EXPECT_TRUE(ii.longest[0].cpu_name.empty());
  EXPECT_EQ(ii.longest[0].runtime_name, "cudaDeviceSynchronize");
  std::string text;
  device_extras_text(text, r.devices[0]);
  EXPECT_NE(text.find("no CPU ops or annotations in this trace"), std::string::npos) << text;
}

TEST(IdleIntervals, SingleKernelDeviceHasNoGaps) {
  ExtrasTrace t;
  t.launch(1, 0).kernel("k", 1, 5, 10, 1);
  const RankReport r = analyze_text(t.json());
  const auto& ii = r.devices[0].idle_intervals;
  EXPECT_EQ(ii.device.count, 0u);
  EXPECT_TRUE(ii.longest.empty());
  std::string text;
  device_extras_text(text, r.devices[0]);
  EXPECT_NE(text.find("device-wide  no idle gaps"), std::string::npos) << text;
  EXPECT_NE(text.find("repeated kernel sequences: none"), std::string::npos) << text;
}

TEST(IdleIntervals, ReportsLabelTheDeviceWideSplitAndKeepTheOldKey) {
  TraceReport report;
  report.ranks.push_back(analyze_text(idle_gaps_trace().json()));
  const auto j = trace_report_json(report);
  const auto& d = j["ranks"][0]["devices"][0];
  EXPECT_EQ(d["idle"], d["device_wide_idle"]);  // the old key stays for the consumers that read it
  EXPECT_EQ(d["idle_intervals"]["device_wide"]["count"], 2);
  EXPECT_DOUBLE_EQ(d["idle_intervals"]["longest_device_wide"][0]["seconds"].get<double>(), 100e-6);
  EXPECT_EQ(d["idle_intervals"]["longest_device_wide"][0]["cpu"]["name"], "aten::item");
  const std::string text = trace_report_text(report);
  EXPECT_NE(text.find("device-wide: host wait"), std::string::npos) << text;
  EXPECT_NE(text.find("per stream (HTA's split"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::trace
