// The diagnosis on synthetic readings: the cases the real recording does not hold (a sawtooth slower
// than the readings, missing profiling fields, faults, peers, regime changes inside a window).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/diagnosis.h"
#include "analysis/reading_source.h"
#include "store/series_set.h"
#include "synthetic_gpus.h"

namespace gpuscope::analysis {
namespace {

using testing::at_s;
using testing::GpuBuilder;
using testing::histories;

constexpr std::int64_t kWindow = 30'000;

GpuDiagnosis one(const GpuBuilder& gpu, int at) {
  const auto h = histories({gpu});
  const auto d = diagnose(h, at_s(at), kWindow, Thresholds{});
  EXPECT_EQ(d.gpus.size(), 1U);
  return d.gpus.at(0);
}

bool has_finding(const GpuDiagnosis& g, std::string_view id) {
  return std::any_of(g.findings.begin(), g.findings.end(), [&](const Finding& f) { return f.id == id; });
}

GpuBuilder& with_link(GpuBuilder& g, int to_s) {
  g.set("gpuscope_pcie_link_gen", 0, to_s, 5).set("gpuscope_pcie_link_width", 0, to_s, 16);
  return g;
}

TEST(Diagnosis, SawtoothSlowerThanTheReadingsIsStarvedByDataLoading) {
  // 12 s cycles: 5 s waiting while the batch streams in at 25 GB/s, 7 s computing.
  GpuBuilder g;
  with_link(g, 60);
  g.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 60, [](int s) { return s % 12 < 5 ? 0.1 : 0.92; })
      .set("DCGM_FI_PROF_SM_ACTIVE", 0, 60, [](int s) { return s % 12 < 5 ? 0.04 : 0.85; })
      .set("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0, 60, [](int s) { return s % 12 < 5 ? 0.01 : 0.5; })
      .set("DCGM_FI_PROF_DRAM_ACTIVE", 0, 60, 0.3)
      .set("DCGM_FI_PROF_PCIE_RX_BYTES", 0, 60, [](int s) { return s % 12 < 5 ? 25e9 : 0.3e9; })
      .set("DCGM_FI_DEV_GPU_UTIL", 0, 60, [](int s) { return s % 12 < 5 ? 40.0 : 98.0; });
  const auto d = one(g, 60);
  EXPECT_EQ(d.verdict, Verdict::kInputStarved) << d.summary;
  EXPECT_EQ(d.detail, "data loading over PCIe") << d.summary;
  EXPECT_EQ(d.segment_start_ms, at_s(60) - kWindow) << "a sawtooth is one regime, not a change";
}

TEST(Diagnosis, FewSmsBusyWhileBatchesStreamInIsStarvedNotLaunchBound) {
  // The wait of a loading-bound job, seen alone (before a sawtooth shows): a few small kernels while the
  // link brings the next batch in at 40 % of its bandwidth.
  GpuBuilder g;
  with_link(g, 40);
  g.busy(0, 40, 0.12, 0.04, 0.01, 0.05, 0.01, 45).set("DCGM_FI_PROF_PCIE_RX_BYTES", 0, 40, 25e9);
  const auto d = one(g, 40);
  EXPECT_EQ(d.verdict, Verdict::kInputStarved) << d.summary;
  EXPECT_EQ(d.detail, "data loading over PCIe");
  // Busy but thin kernels while the batch streams in: said as such, not "ran only 95 % of the time".
  GpuBuilder busy;
  with_link(busy, 40);
  busy.busy(0, 40, 0.95, 0.3, 0.1, 0.1, 0.1, 99).set("DCGM_FI_PROF_PCIE_RX_BYTES", 0, 40, 25e9);
  const auto b = one(busy, 40);
  EXPECT_EQ(b.verdict, Verdict::kInputStarved) << b.summary;
  EXPECT_NE(b.summary.find("while batches stream in"), std::string::npos) << b.summary;
  // The same kernels with the link quiet: launch bound.
  GpuBuilder quiet;
  with_link(quiet, 40);
  quiet.busy(0, 40, 0.12, 0.04, 0.01, 0.05, 0.01, 45).set("DCGM_FI_PROF_PCIE_RX_BYTES", 0, 40, 0.2e9);
  EXPECT_EQ(one(quiet, 40).verdict, Verdict::kLaunchBound);
}

TEST(Diagnosis, WithoutProfilingFieldsOnlyUtilizationSpeaks) {
  GpuBuilder busy;
  busy.set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 90.0).set("DCGM_FI_DEV_MEM_COPY_UTIL", 0, 40, 30.0);
  const auto d = one(busy, 40);
  EXPECT_EQ(d.verdict, Verdict::kUnknown) << d.summary;
  EXPECT_EQ(d.undecided.size(), 5U);
  EXPECT_NE(d.undecided.at(0).find("not recorded"), std::string::npos);

  GpuBuilder idle;
  idle.set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 0.0).set("DCGM_FI_DEV_FB_USED", 0, 40, 2048.0);
  const auto i = one(idle, 40);
  EXPECT_EQ(i.verdict, Verdict::kIdle) << i.summary;
  EXPECT_NE(i.summary.find("2.0 GiB still allocated"), std::string::npos) << i.summary;

  GpuBuilder bare;  // the driver's own few MiB are no allocation to report
  bare.set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 0.0).set("DCGM_FI_DEV_FB_USED", 0, 40, 5.0);
  EXPECT_EQ(one(bare, 40).summary.find("allocated"), std::string::npos) << one(bare, 40).summary;

  GpuBuilder memory;
  memory.set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 99.0).set("DCGM_FI_DEV_MEM_COPY_UTIL", 0, 40, 85.0);
  EXPECT_EQ(one(memory, 40).verdict, Verdict::kMemoryBound);
}

TEST(Diagnosis, GrEngineWithoutSmActiveLeavesTheKernelsShapeUndecided) {
  GpuBuilder g;
  g.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 40, 0.9)
      .set("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0, 40, 0.5)
      .set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 99.0);
  const auto d = one(g, 40);
  EXPECT_EQ(d.verdict, Verdict::kUnknown) << d.summary;
  EXPECT_FALSE(d.undecided.empty());
  // Idle is still decided from GR alone.
  GpuBuilder idle;
  idle.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 40, 0.0).set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 0.0);
  EXPECT_EQ(one(idle, 40).verdict, Verdict::kIdle);
}

TEST(Diagnosis, AFaultOverridesWhatTheGpuDoes) {
  GpuBuilder g;
  g.busy(0, 40, 0.95, 0.9, 0.6, 0.3, 0.1, 99).set("DCGM_FI_DEV_XID_ERRORS", 0, 40, [](int s) { return s < 20 ? 0 : 79; });
  const auto d = one(g, 40);
  EXPECT_EQ(d.verdict, Verdict::kUnhealthy) << d.summary;
  EXPECT_NE(d.summary.find("XID 79"), std::string::npos) << d.summary;
  const auto activity = std::find_if(d.evidence.begin(), d.evidence.end(), [](const Evidence& e) { return e.name == "activity"; });
  ASSERT_NE(activity, d.evidence.end());
  EXPECT_EQ(activity->text, "compute_bound");

  GpuBuilder app_error;  // XID 13: an application's error, not the GPU's
  app_error.busy(0, 40, 0.95, 0.9, 0.6, 0.3, 0.1, 99).set("DCGM_FI_DEV_XID_ERRORS", 0, 40, 13);
  EXPECT_EQ(one(app_error, 40).verdict, Verdict::kComputeBound);

  GpuBuilder dbe;
  dbe.busy(0, 40, 0.95, 0.9, 0.6, 0.3, 0.1, 99).set("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 0, 40, 2);
  EXPECT_EQ(one(dbe, 40).verdict, Verdict::kUnhealthy);

  GpuBuilder lost;  // no readings but the agent's own "not answering"
  lost.set("gpuscope_gpu_up", 0, 40, 0);
  const auto l = one(lost, 40);
  EXPECT_EQ(l.verdict, Verdict::kUnhealthy);
  EXPECT_NE(l.summary.find("lost"), std::string::npos) << l.summary;
}

TEST(Diagnosis, TensorPipesIdleWithBusyFloatPipesIsNoTensorCores) {
  GpuBuilder fp32;
  fp32.busy(0, 40, 0.98, 0.95, 0.0, 0.1, 0.7, 100);
  EXPECT_EQ(one(fp32, 40).verdict, Verdict::kNoTensorCores);

  GpuBuilder integer;  // busy SMs, no float pipe: tensor cores would not help
  integer.busy(0, 40, 0.98, 0.95, 0.0, 0.1, 0.02, 100);
  EXPECT_EQ(one(integer, 40).verdict, Verdict::kComputeBound);

  GpuBuilder unrecorded;  // float pipes not collected: undecided, not guessed
  unrecorded.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 40, 0.98)
      .set("DCGM_FI_PROF_SM_ACTIVE", 0, 40, 0.95)
      .set("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0, 40, 0.0);
  const auto u = one(unrecorded, 40);
  EXPECT_EQ(u.verdict, Verdict::kUnknown);
  ASSERT_EQ(u.undecided.size(), 1U);
  EXPECT_NE(u.undecided[0].find("no_tensor_cores"), std::string::npos) << u.undecided[0];
}

TEST(Diagnosis, FewSmsBusyWhileNvlinkCarriesDataSaysCollectivesMayBeWhy) {
  GpuBuilder g;
  g.busy(0, 40, 0.95, 0.2, 0.05, 0.2, 0.05, 99);
  EXPECT_EQ(one(g, 40).summary.find("NVLink"), std::string::npos);
  g.set("DCGM_FI_PROF_NVLINK_RX_BYTES", 0, 40, 150e9).set("DCGM_FI_PROF_NVLINK_TX_BYTES", 0, 40, 150e9);
  const auto d = one(g, 40);
  EXPECT_EQ(d.verdict, Verdict::kLaunchBound);
  EXPECT_NE(d.summary.find("NVLink carries 300.0 GB/s"), std::string::npos) << d.summary;
}

TEST(Diagnosis, SaturatedDramWithBusyTensorPipesIsComputeBound) {
  GpuBuilder g;
  g.busy(0, 40, 0.98, 0.95, 0.6, 0.85, 0.1, 100);
  EXPECT_EQ(one(g, 40).verdict, Verdict::kComputeBound);
  GpuBuilder m;
  m.busy(0, 40, 0.98, 0.95, 0.0, 0.85, 0.1, 100);
  EXPECT_EQ(one(m, 40).verdict, Verdict::kMemoryBound);
}

TEST(Diagnosis, TheCurrentRegimeDecidesNotTheWholeWindow) {
  // 22 s of bf16 GEMMs, then fp32 without tensor cores for the last 8 s.
  GpuBuilder g;
  g.busy(0, 22, 0.99, 0.96, 0.93, 0.25, 0.0, 100).busy(22, 31, 0.99, 0.97, 0.0, 0.07, 0.77, 100);
  const auto d = one(g, 30);
  EXPECT_EQ(d.verdict, Verdict::kNoTensorCores) << d.summary;
  EXPECT_GT(d.segment_start_ms, at_s(20));
  EXPECT_EQ(d.segment_end_ms, at_s(30));

  // Two readings into a new regime: the one just left still speaks.
  GpuBuilder j;
  j.busy(0, 29, 0.99, 0.96, 0.93, 0.25, 0.0, 100).busy(29, 31, 0.0, 0.0, 0.0, 0.0, 0.0, 0);
  const auto just = one(j, 30);
  EXPECT_EQ(just.verdict, Verdict::kComputeBound) << just.summary;
  EXPECT_LT(just.segment_end_ms, at_s(30));
}

TEST(Diagnosis, NoiseAroundOneLevelIsNoRegimeChange) {
  GpuBuilder g;
  g.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 40, [](int s) { return s % 2 ? 0.95 : 0.75; })
      .set("DCGM_FI_PROF_SM_ACTIVE", 0, 40, [](int s) { return s % 2 ? 0.9 : 0.7; })
      .set("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0, 40, [](int s) { return s % 2 ? 0.6 : 0.4; })
      .set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 99.0);
  const auto d = one(g, 40);
  EXPECT_EQ(d.verdict, Verdict::kComputeBound) << d.summary;
  EXPECT_EQ(d.segment_start_ms, at_s(40) - kWindow);
}

TEST(Diagnosis, AGpuLessBusyOrSlowerThanItsJobsPeersIsFound) {
  std::vector<GpuBuilder> gpus;
  for (int i = 0; i < 4; ++i) {
    GpuBuilder g(std::to_string(i), "node-1", "job-7");
    const double sm = i == 2 ? 0.45 : 0.9;
    g.busy(0, 40, 0.95, sm, 0.5, 0.3, 0.1, 99).set("DCGM_FI_DEV_SM_CLOCK", 0, 40, i == 3 ? 1300.0 : 1980.0);
    gpus.push_back(g);
  }
  GpuBuilder other("4", "node-1", "job-8");  // another job: not a peer
  other.busy(0, 40, 0.95, 0.3, 0.2, 0.3, 0.1, 99);
  gpus.push_back(other);
  const auto h = histories(gpus);
  const auto d = diagnose(h, at_s(40), kWindow, Thresholds{});
  ASSERT_EQ(d.gpus.size(), 5U);
  for (const auto& g : d.gpus) {
    for (const auto& f : g.findings) {
      if (f.id == "imbalance_busy") {
        EXPECT_NE(f.summary.find("of its job; they wait"), std::string::npos) << f.summary;
      }
    }
    EXPECT_EQ(has_finding(g, "imbalance_busy"), g.identity.gpu == "2") << g.identity.gpu;
    EXPECT_EQ(has_finding(g, "imbalance_clock"), g.identity.gpu == "3") << g.identity.gpu;
  }
}

TEST(Diagnosis, ThrottleReasonsReadFromEitherExportedForm) {
  GpuBuilder per_reason;
  per_reason.busy(0, 40, 0.99, 0.96, 0.93, 0.25, 0.0, 100).set("DCGM_FI_DEV_POWER_USAGE", 0, 40, 650.0);
  auto series = per_reason.series();
  store::SeriesSamples cap;
  cap.labels = store::Labels({{"__name__", "gpuscope_throttle_reason_active"}, {"gpu", "0"}, {"UUID", "GPU-node-1-0"},
                              {"Hostname", "node-1"}, {"reason", "sw_power_cap"}});
  for (int s = 0; s < 40; ++s) cap.samples.push_back({testing::kT0 + s * 1000LL, 1});
  series.push_back(cap);
  auto h = group_by_gpu(series);
  ASSERT_EQ(h.size(), 1U) << "the reason label is not part of the GPU's identity";
  auto d = diagnose(h, at_s(40), kWindow, Thresholds{});
  EXPECT_TRUE(has_finding(d.gpus.at(0), "power_capped"));

  // The reason on while the mean power is far below the limit: bursts hit the cap between waits.
  GpuBuilder bursts;
  bursts.busy(0, 40, 0.99, 0.96, 0.93, 0.25, 0.0, 100)
      .set("DCGM_FI_DEV_POWER_USAGE", 0, 40, 280.0)
      .set("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 0, 40, 700.0)
      .set("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 0, 40, 0x4);
  const auto b = one(bursts, 40);
  const auto f = std::find_if(b.findings.begin(), b.findings.end(), [](const Finding& x) { return x.id == "power_capped"; });
  ASSERT_NE(f, b.findings.end());
  EXPECT_NE(f->summary.find("in bursts"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("280 W of a 700 W limit"), std::string::npos) << f->summary;

  GpuBuilder mask;
  mask.busy(0, 40, 0.99, 0.96, 0.0, 0.07, 0.77, 100).set("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 0, 40, 0x20 | 0x4);
  const auto m = one(mask, 40);
  EXPECT_TRUE(has_finding(m, "thermal_slowdown"));
  EXPECT_TRUE(has_finding(m, "power_capped"));
}

TEST(Diagnosis, GpusAreToldApartByHostAndSeriesWithoutAGpuAreIgnored) {
  GpuBuilder a("0", "node-1"), b("0", "node-2");
  a.busy(0, 40, 0.99, 0.96, 0.93, 0.25, 0.0, 100);
  b.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0, 40, 0.0).set("DCGM_FI_DEV_GPU_UTIL", 0, 40, 0.0);
  auto series = a.series();
  const auto more = b.series();
  series.insert(series.end(), more.begin(), more.end());
  store::SeriesSamples stray;  // the agent's own series: no GPU
  stray.labels = store::Labels({{"__name__", "gpuscope_gpu_up"}, {"Hostname", "node-1"}});
  stray.samples.push_back({testing::kT0, 1});
  series.push_back(stray);
  const auto h = group_by_gpu(series);
  ASSERT_EQ(h.size(), 2U);
  EXPECT_EQ(h[0].identity.host, "node-1");
  EXPECT_EQ(h[1].identity.host, "node-2");
  const auto d = diagnose(h, at_s(40), kWindow, Thresholds{});
  EXPECT_EQ(d.gpus[0].verdict, Verdict::kComputeBound);
  EXPECT_EQ(d.gpus[1].verdict, Verdict::kIdle);
}

TEST(Diagnosis, IdleSinceLooksBackForTheLastActivity) {
  // Busy until 2h before `at`, idle since: the window alone cannot tell, the lookback can.
  store::SeriesSet data;
  const store::Labels gr({{"__name__", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, {"gpu", "0"}, {"UUID", "GPU-a"}});
  const int at = 4 * 3600;
  for (int s = 0; s <= at; s += 5) data.add(gr, at_s(s), s < 2 * 3600 ? 0.9 : 0.0);
  StoreSource source(data);
  auto d = diagnose_from(source, at_s(at), kWindow, Thresholds{}, {});
  ASSERT_TRUE(d) << d.error();
  ASSERT_EQ(d->gpus.size(), 1U);
  EXPECT_EQ(d->gpus[0].verdict, Verdict::kIdle);
  ASSERT_TRUE(d->gpus[0].since_ms);
  EXPECT_EQ(*d->gpus[0].since_ms, at_s(2 * 3600 - 5));
  EXPECT_FALSE(d->gpus[0].since_is_lower_bound);

  // Idle through the whole lookback: "at least since" the earliest reading looked at.
  auto shallow = diagnose_from(source, at_s(at), kWindow, Thresholds{}, {}, 3600 * 1000);
  ASSERT_TRUE(shallow);
  EXPECT_TRUE(shallow->gpus[0].since_is_lower_bound);
  EXPECT_GE(*shallow->gpus[0].since_ms, at_s(at - 3600 - 30));
}

TEST(Diagnosis, IdleSinceStopsAtAGapInTheRecording) {
  // Busy, then an hour with no readings at all (the agent down), then idle: the busy readings before
  // the gap do not date the idleness.
  store::SeriesSet data;
  const store::Labels gr({{"__name__", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, {"gpu", "0"}, {"UUID", "GPU-a"}});
  for (int s = 0; s < 1800; s += 5) data.add(gr, at_s(s), 0.9);
  const int back = 1800 + 3 * 3600;
  const int at = back + 1800;
  for (int s = back; s <= at; s += 5) data.add(gr, at_s(s), 0.0);
  StoreSource source(data);
  auto d = diagnose_from(source, at_s(at), kWindow, Thresholds{}, {});
  ASSERT_TRUE(d) << d.error();
  ASSERT_EQ(d->gpus.size(), 1U);
  ASSERT_TRUE(d->gpus[0].since_ms);
  EXPECT_TRUE(d->gpus[0].since_is_lower_bound);
  EXPECT_EQ(*d->gpus[0].since_ms, at_s(back));
}

TEST(Diagnosis, FilterKeepsTheNamedGpus) {
  store::SeriesSet data;
  for (const char* gpu : {"0", "1", "2"}) {
    const store::Labels l({{"__name__", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, {"gpu", gpu}, {"UUID", std::string("GPU-") + gpu}});
    for (int s = 0; s < 40; ++s) data.add(l, at_s(s), 0.0);
  }
  StoreSource source(data);
  GpuFilter filter{{"2", "GPU-0"}};
  auto d = diagnose_from(source, at_s(39), kWindow, Thresholds{}, filter);
  ASSERT_TRUE(d);
  ASSERT_EQ(d->gpus.size(), 2U);
  EXPECT_EQ(d->gpus[0].identity.gpu, "0");
  EXPECT_EQ(d->gpus[1].identity.gpu, "2");
}

TEST(Diagnosis, AFilteredGpuIsStillComparedWithItsPeers) {
  store::SeriesSet data;
  for (const char* gpu : {"0", "1", "2"}) {
    for (const auto& s : GpuBuilder(gpu, "node-1", "job").busy(0, 40, 0.95, std::string(gpu) == "2" ? 0.4 : 0.9, 0.5,
                                                                 0.3, 0.1, 99).series()) {
      for (const auto& p : s.samples) data.add(s.labels, p.t_ms, p.value);
    }
  }
  StoreSource source(data);
  auto d = diagnose_from(source, at_s(39), kWindow, Thresholds{}, GpuFilter{{"2"}});
  ASSERT_TRUE(d);
  ASSERT_EQ(d->gpus.size(), 1U);
  EXPECT_TRUE(has_finding(d->gpus[0], "imbalance_busy"));
}

TEST(Diagnosis, WithoutAJobLabelPeersAreComparedNotSaidToWait) {
  std::vector<GpuBuilder> gpus;
  for (const char* gpu : {"0", "1", "2"}) {
    GpuBuilder g(gpu, "node-1");
    g.busy(0, 40, 0.95, std::string(gpu) == "2" ? 0.4 : 0.9, 0.5, 0.3, 0.1, 99);
    gpus.push_back(g);
  }
  const auto h = histories(gpus);
  const auto d = diagnose(h, at_s(40), kWindow, Thresholds{});
  const auto& f = d.gpus.at(2).findings;
  const auto imbalance = std::find_if(f.begin(), f.end(), [](const Finding& x) { return x.id == "imbalance_busy"; });
  ASSERT_NE(imbalance, f.end());
  EXPECT_NE(imbalance->summary.find("of this host; if they run one job"), std::string::npos) << imbalance->summary;
}

TEST(Diagnosis, HardwareSlowdownBelowTheThermalLineIsNotTheCooling) {
  GpuBuilder g;
  g.busy(0, 40, 0.95, 0.9, 0.5, 0.3, 0.1, 99)
      .set("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 0, 40, 0x8)
      .set("DCGM_FI_DEV_GPU_TEMP", 0, 40, 69.0)
      .set("DCGM_FI_DEV_SLOWDOWN_TEMP", 0, 40, 89.0);
  const auto d = one(g, 40);
  EXPECT_TRUE(has_finding(d, "hardware_slowdown"));
  EXPECT_FALSE(has_finding(d, "thermal_slowdown"));
  GpuBuilder hot;
  hot.busy(0, 40, 0.95, 0.9, 0.5, 0.3, 0.1, 99).set("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 0, 40, 0x8 | 0x40);
  const auto h = one(hot, 40);
  EXPECT_TRUE(has_finding(h, "thermal_slowdown"));
  EXPECT_FALSE(has_finding(h, "hardware_slowdown")) << "said once, by the thermal finding";
}

TEST(Thresholds, SetByNameWithOneLineErrors) {
  Thresholds t;
  ASSERT_TRUE(set_threshold(t, "idle_gr_active=0.1"));
  EXPECT_DOUBLE_EQ(t.idle_gr_active, 0.1);
  const auto unknown = set_threshold(t, "idle=0.1");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("unknown threshold 'idle'"), std::string::npos) << unknown.error();
  EXPECT_EQ(unknown.error().find('\n'), std::string::npos);
  EXPECT_FALSE(set_threshold(t, "idle_gr_active=abc"));
  EXPECT_FALSE(set_threshold(t, "idle_gr_active=1.5"));
  EXPECT_FALSE(set_threshold(t, "idle_gr_active"));
  EXPECT_FALSE(set_threshold(t, "idle_gr_active=nan"));
  EXPECT_DOUBLE_EQ(t.idle_gr_active, 0.1) << "a refused value leaves the threshold alone";
}

}  // namespace
}  // namespace gpuscope::analysis
