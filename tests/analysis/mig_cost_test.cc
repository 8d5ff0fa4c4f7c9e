// MIG cost against hand-computed figures: an H100 at $7/h ($1 a slice-hour) with a 3g.40gb training at
// SM active 0.5, an idle 2g.20gb, a 1g.10gb at SM active 0.2 and 1 slice unallocated, read every 10 s for
// an hour: each instance pays its slices, the idle one is all waste, the unallocated slice is a row of
// its own; the live meter and the report over the history count the same dollars. Then right-sizing
// onto MIG profiles.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "analysis/cost_meter.h"
#include "analysis/cost_report.h"
#include "analysis/mig_cost.h"
#include "analysis/mig_right_sizing.h"
#include "analysis/reading_source.h"
#include "store/series_set.h"

namespace gpuscope::analysis::mig_cost_test {
namespace {

constexpr std::int64_t kMigT0 = 1'800'000'000'000;
constexpr double kMigUsdPerHour = 7.0;  // $1 per slice-hour
constexpr double kMigCent = 0.005;

std::int64_t mig_at(int s) { return kMigT0 + s * 1000LL; }

struct MigInstancePlan {
  std::string id, profile;
  std::optional<int> slices;  // recorded gpuscope_mig_instance_slices (none: from the profile's name)
  double gr, sm;
  std::optional<int> pid;     // its one process
  std::string pod;
};

// GPU 0 in MIG mode from `mig_from_s` to `mig_to_s`, a whole GPU busy at SM 0.6 outside it.
class MigRecording {
 public:
  MigRecording(std::vector<MigInstancePlan> plan, int mig_from_s, int mig_to_s)
      : plan_(std::move(plan)), from_(mig_from_s), to_(mig_to_s) {}
  void record(int last_s, store::SeriesSet& set) {
    for (int s = 0; s <= last_s; s += 10) {
      add(set, "gpuscope_gpu_up", s, 1);
      add(set, "gpuscope_gpu_hourly_price_dollars", s, kMigUsdPerHour, {{"tier", "on_demand"}});
      add(set, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", s, 1e9 + s * 10'000.0);  // 10 W
      const bool mig = s >= from_ && s <= to_;
      if (!mig) {
        add(set, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", s, 0.9);
        add(set, "DCGM_FI_PROF_SM_ACTIVE", s, 0.6);
        add(set, "DCGM_FI_DEV_GPU_UTIL", s, 99);
        continue;
      }
      for (const auto& in : plan_) {
        std::vector<store::Label> l = {{"GPU_I_PROFILE", in.profile}, {"GPU_I_ID", in.id}};
        if (!in.pod.empty()) {
          l.insert(l.end(), {{"pod", in.pod}, {"namespace", "ml"}, {"container", "main"}});
        }
        add(set, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", s, in.gr, l);
        add(set, "DCGM_FI_PROF_SM_ACTIVE", s, in.sm, l);
        add(set, "DCGM_FI_DEV_FB_USED", s, 5000, l);
        add(set, "DCGM_FI_DEV_FB_FREE", s, 5000, l);
        if (in.slices) add(set, "gpuscope_mig_instance_slices", s, *in.slices, l);
        if (in.pid) {
          auto p = l;
          p.insert(p.end(), {{"pid", std::to_string(*in.pid)}, {"process_name", "python"}});
          add(set, "gpuscope_process_memory_bytes", s, 1e9, p);
        }
      }
    }
  }

 private:
  static void add(store::SeriesSet& set, const std::string& name, int s, double v, std::vector<store::Label> more = {}) {
    std::vector<store::Label> l = {{std::string(store::kMetricNameLabel), name},
                                   {"gpu", "0"},
                                   {"UUID", "GPU-0"},
                                   {"modelName", "NVIDIA H100 80GB HBM3"}};
    // dcgm-exporter's order: the MIG labels after modelName, the host after them.
    l.insert(l.end(), more.begin(), more.end());
    l.push_back({"Hostname", "node-1"});
    set.add(store::Labels(l), mig_at(s), v);
  }
  std::vector<MigInstancePlan> plan_;
  int from_, to_;
};

const std::vector<MigInstancePlan> kMigPlan = {
    {"1", "3g.40gb", 3, 0.9, 0.5, 100, "train-0"},
    {"5", "2g.20gb", 2, 0.001, 0.0, 200, ""},
    {"9", "1g.10gb", std::nullopt, 0.8, 0.2, std::nullopt, ""},
};

CostReport mig_report(const store::SeriesSet& set, int from_s, int to_s, CostGrouping by = CostGrouping::kGpu,
                      std::string label = {}) {
  StoreSource source(set);
  CostQuery q;
  q.from_ms = mig_at(from_s);
  q.to_ms = mig_at(to_s);
  q.by = by;
  q.label = std::move(label);
  auto r = cost_report(source, q);
  EXPECT_TRUE(r) << r.error();
  return r ? *r : CostReport{};
}

const CostRow* mig_row(const CostReport& r, const std::string& name) {
  for (const auto& row : r.rows) {
    if (row.name == name) return &row;
  }
  ADD_FAILURE() << "no row " << name;
  return nullptr;
}

TEST(MigCost, SlicesFromTheProfileNameAndTheGpuModel) {
  EXPECT_EQ(mig_profile_slices("3g.40gb"), 3u);
  EXPECT_EQ(mig_profile_slices("1g.10gb+me"), 1u);
  EXPECT_EQ(mig_profile_slices("7g.141gb"), 7u);
  EXPECT_EQ(mig_profile_slices(""), std::nullopt);
  EXPECT_EQ(mig_profile_slices("g.10gb"), std::nullopt);
  EXPECT_EQ(mig_profile_slices("3"), std::nullopt);
  EXPECT_EQ(mig_total_slices("NVIDIA H100 80GB HBM3"), 7u);
  EXPECT_EQ(mig_total_slices("NVIDIA A30"), 4u);
  EXPECT_DOUBLE_EQ(mig_unallocated_share(6, 7), 1.0 / 7);
  EXPECT_EQ(mig_unallocated_share(9, 7), 0) << "more slices than the GPU has: nothing unallocated, never negative";
}

TEST(MigCost, ReportSplitsTheGpuAmongItsInstancesAndItsUnallocatedSlices) {
  store::SeriesSet set;
  MigRecording(kMigPlan, 0, 3600).record(3600, set);
  const CostReport r = mig_report(set, 0, 3600);
  // One hour at $7: 3g.40gb $3 (half its SMs worked), 2g.20gb $2 all idle, 1g.10gb $1 (SM 0.2), 1 slice
  // unallocated $1 idle. The GPU itself has no row: all of its time is in its parts.
  ASSERT_EQ(r.rows.size(), 4u);
  const CostRow* gi1 = mig_row(r, "GPU 0 MIG 3g.40gb (GI 1, 3/7)");
  const CostRow* gi5 = mig_row(r, "GPU 0 MIG 2g.20gb (GI 5, 2/7)");
  const CostRow* gi9 = mig_row(r, "GPU 0 MIG 1g.10gb (GI 9, 1/7)");
  const CostRow* free = mig_row(r, "GPU 0 unallocated MIG slices 1/7");
  ASSERT_TRUE(gi1 && gi5 && gi9 && free);
  EXPECT_NEAR(gi1->totals.dollars, 3.00, kMigCent);
  EXPECT_NEAR(gi1->totals.idle_dollars, 0, kMigCent);
  EXPECT_NEAR(gi1->totals.unused_dollars, 1.50, kMigCent);
  EXPECT_NEAR(gi5->totals.dollars, 2.00, kMigCent);
  EXPECT_NEAR(gi5->totals.idle_dollars, 2.00, kMigCent);
  EXPECT_NEAR(gi9->totals.dollars, 1.00, kMigCent);
  EXPECT_NEAR(gi9->totals.unused_dollars, 0.80, kMigCent);
  EXPECT_NEAR(free->totals.dollars, 1.00, kMigCent);
  EXPECT_NEAR(free->totals.idle_dollars, 1.00, kMigCent);
  EXPECT_NEAR(r.total.dollars, 7.00, kMigCent) << "each dollar of the GPU once";
  EXPECT_NEAR(r.total.seconds, 3600, 1e-6) << "the parts' GPU-seconds add up to the GPU's";
  EXPECT_NEAR(r.total.energy_joules, 36'000, 1e-6) << "10 W for an hour, split, not multiplied";
  // An instance was held the whole hour: its right-sizing and wasters speak of an hour, not 3/7 of one.
  for (const auto& g : r.gpus) {
    if (!g.mig_instance.empty()) {
      EXPECT_NEAR(g.held_seconds, 3600, 1e-6) << g.mig_instance;
    }
    if (g.mig_instance == "1") {
      EXPECT_NEAR(g.peaks.peak_memory_mib.value_or(0), 5000, 1e-9);
    }
  }
  const auto wasters = top_wasters(r);
  ASSERT_FALSE(wasters.empty());
  EXPECT_EQ(wasters[0], "GPU 0 MIG 2g.20gb (GI 5, 2/7) (NVIDIA H100 80GB HBM3): idle 100% of 1h, $2.00 wasted");
}

TEST(MigCost, ReportPerProcessAndPerPod) {
  store::SeriesSet set;
  MigRecording(kMigPlan, 0, 3600).record(3600, set);
  const CostReport by_process = mig_report(set, 0, 3600, CostGrouping::kProcess);
  EXPECT_NEAR(mig_row(by_process, "pid 100 python")->totals.dollars, 3.00, kMigCent);
  EXPECT_NEAR(mig_row(by_process, "pid 200 python")->totals.idle_dollars, 2.00, kMigCent);
  EXPECT_NEAR(mig_row(by_process, "(no process)")->totals.dollars, 1.00, kMigCent) << "GI 9 runs none";
  EXPECT_NEAR(mig_row(by_process, "(unallocated MIG slices)")->totals.dollars, 1.00, kMigCent);
  EXPECT_NEAR(by_process.total.dollars, 7.00, kMigCent);
  const CostReport by_pod = mig_report(set, 0, 3600, CostGrouping::kLabel, "pod");
  EXPECT_NEAR(mig_row(by_pod, "train-0")->totals.dollars, 3.00, kMigCent);
  EXPECT_NEAR(mig_row(by_pod, "(none)")->totals.dollars, 3.00, kMigCent) << "GI 5 and GI 9: nobody's pod";
  EXPECT_NEAR(mig_row(by_pod, "(unallocated MIG slices)")->totals.dollars, 1.00, kMigCent);
}

TEST(MigCost, AGpuLeavingMigModeIsPaidAsAWholeFromThen) {
  store::SeriesSet set;
  // MIG for the first half hour (readings up to 1800 s), whole at SM 0.6 for the second.
  MigRecording(kMigPlan, 0, 1800).record(3600, set);
  const CostReport r = mig_report(set, 0, 3600);
  const CostRow* whole = mig_row(r, "GPU 0");
  ASSERT_TRUE(whole);
  EXPECT_NEAR(whole->totals.dollars, 3.50, kMigCent);
  EXPECT_NEAR(whole->totals.unused_dollars, 3.50 * 0.4, kMigCent);
  EXPECT_NEAR(mig_row(r, "GPU 0 MIG 3g.40gb (GI 1, 3/7)")->totals.dollars, 1.50, kMigCent);
  EXPECT_NEAR(mig_row(r, "GPU 0 unallocated MIG slices 1/7")->totals.dollars, 0.50, kMigCent);
  EXPECT_NEAR(r.total.dollars, 7.00, kMigCent);
}

// dcgm-exporter alone: every field per instance (its GPU's power and utilization repeated), no series of
// the GPU's own. Each instance still pays its slices' share, never the whole GPU's price.
TEST(MigCost, InstancesWithoutTheirGpusSeriesPayTheirSlicesShare) {
  store::SeriesSet set;
  for (int s = 0; s <= 3600; s += 10) {
    for (const auto& [id, profile, sm] : {std::tuple{"1", "3g.40gb", 0.5}, std::tuple{"2", "4g.40gb", 0.0}}) {
      const auto add = [&](const std::string& name, double v) {
        std::vector<store::Label> l = {{std::string(store::kMetricNameLabel), name},
                                       {"gpu", "0"},
                                       {"UUID", "GPU-0"},
                                       {"modelName", "NVIDIA H100 80GB HBM3"},
                                       {"GPU_I_PROFILE", profile},
                                       {"GPU_I_ID", id},
                                       {"Hostname", "node-1"}};
        if (name == "gpuscope_gpu_hourly_price_dollars") l.push_back({"tier", "on_demand"});
        set.add(store::Labels(l), mig_at(s), v);
      };
      add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", sm > 0 ? 0.9 : 0.0);
      add("DCGM_FI_PROF_SM_ACTIVE", sm);
      add("gpuscope_gpu_hourly_price_dollars", kMigUsdPerHour);
    }
  }
  StoreSource source(set);
  CostQuery q;
  q.from_ms = mig_at(0);
  q.to_ms = mig_at(3600);
  const auto r = cost_report(source, q);
  ASSERT_TRUE(r) << r.error();
  EXPECT_NEAR(mig_row(*r, "GPU 0 MIG 3g.40gb (GI 1, 3/7)")->totals.dollars, 3.00, kMigCent);
  EXPECT_NEAR(mig_row(*r, "GPU 0 MIG 4g.40gb (GI 2, 4/7)")->totals.idle_dollars, 4.00, kMigCent);
  EXPECT_NEAR(r->total.dollars, 7.00, kMigCent);
}

// The live meter on the same GPU, 360 readings 10 s apart: the same dollars as the report.
TEST(MigCost, MeterCountsWhatTheReportCounts) {
  CostMeter meter;
  const auto reading = [](std::int64_t s) {
    MeteredGpu g;
    g.uuid = "GPU-0";
    g.reading.usd_per_hour = kMigUsdPerHour;
    g.reading.energy_millijoules = 1e9 + static_cast<double>(s) * 10'000.0;
    g.mig_total_slices = 7;
    g.mig_instances = {{{1, "3g.40gb", "train-0", "ml", "main"}, 3, 0.9, 0.5},
                       {{5, "2g.20gb", "", "", ""}, 2, 0.001, 0.0},
                       {{9, "1g.10gb", "", "", ""}, 1, 0.8, 0.2}};
    // Two processes in GI 1 splitting it 3:1 by SM utilization; one in GI 5.
    g.processes = {{{100, "python", ""}, {30.0, 1e9}, 1u}, {{101, "python", ""}, {10.0, 1e9}, 1u},
                   {{200, "python", ""}, {std::nullopt, 1e9}, 5u}};
    return g;
  };
  for (int s = 0; s <= 3600; s += 10) {
    const MeteredGpu g = reading(s);
    meter.update(mig_at(s), std::span(&g, 1));
  }
  const auto totals = meter.totals();
  ASSERT_EQ(totals->size(), 1u);
  const GpuCostTotals& gpu = (*totals)[0];
  ASSERT_EQ(gpu.mig_instances.size(), 3u);
  std::map<unsigned, const MigInstanceCostTotals*> by_id;
  for (const auto& mi : gpu.mig_instances) by_id[mi.key.gpu_instance_id] = &mi;
  EXPECT_NEAR(by_id[1]->totals.dollars, 3.00, 1e-9);
  EXPECT_NEAR(by_id[1]->totals.unused_dollars, 1.50, 1e-9);
  EXPECT_EQ(by_id[1]->key.pod, "train-0");
  EXPECT_NEAR(by_id[5]->totals.idle_dollars, 2.00, 1e-9);
  EXPECT_NEAR(by_id[9]->totals.dollars, 1.00, 1e-9);
  // The GPU's own counters: the unallocated slice ($1, idle) and the GPU's whole energy.
  EXPECT_NEAR(gpu.totals.dollars, 1.00, 1e-9);
  EXPECT_NEAR(gpu.totals.idle_dollars, 1.00, 1e-9);
  EXPECT_NEAR(gpu.totals.energy_joules, 36'000, 1e-6);
  EXPECT_EQ(gpu.mig_unallocated_slices, 1u);
  std::map<unsigned, const ProcessCostTotals*> pid;
  for (const auto& p : gpu.processes) pid[p.key.pid] = &p;
  ASSERT_EQ(pid.size(), 3u);
  EXPECT_NEAR(pid[100]->totals.dollars, 3.00 * 0.75, 1e-9);
  EXPECT_NEAR(pid[101]->totals.dollars, 3.00 * 0.25, 1e-9);
  EXPECT_NEAR(pid[200]->totals.dollars, 2.00, 1e-9);
  EXPECT_EQ(pid[200]->gpu_instance_id, 5u);
}

// An instance whose holder changes is another instance's counters: the new pod starts at 0.
TEST(MigCost, MeterStartsANewHoldersCountersAtZero) {
  CostMeter meter;
  const auto update = [&](int s, const std::string& pod) {
    MeteredGpu g;
    g.uuid = "GPU-0";
    g.reading.usd_per_hour = kMigUsdPerHour;
    g.mig_instances = {{{1, "7g.80gb", pod, "ml", "main"}, 7, 0.9, 0.9}};
    meter.update(mig_at(s), std::span(&g, 1));
  };
  for (int s = 0; s <= 360; s += 10) update(s, "a");
  for (int s = 370; s <= 720; s += 10) update(s, "b");
  const auto totals = meter.totals();
  ASSERT_EQ((*totals)[0].mig_instances.size(), 1u);
  EXPECT_EQ((*totals)[0].mig_instances[0].key.pod, "b");
  EXPECT_NEAR((*totals)[0].mig_instances[0].totals.dollars, 7.0 * 360 / 3600, 1e-9);
  EXPECT_NEAR((*totals)[0].totals.dollars, 0, 1e-12) << "a 7g.80gb leaves nothing unallocated";
}

UsagePeaks mig_peaks(double memory_gib, double sm, double hours = 2) {
  UsagePeaks p;
  p.model = "NVIDIA H100 80GB HBM3";
  p.observed_seconds = hours * 3600;
  p.peak_memory_mib = memory_gib * 1024;
  p.memory_total_mib = 81559;
  p.peak_sm_active = sm;
  p.current_usd_per_hour = kMigUsdPerHour;
  return p;
}

TEST(MigRightSizing, AWholeGpusSmallWorkFitsAMigProfile) {
  // 9 GiB + 10% = 9.9 GiB > a 1g.10gb's 9.75 GiB; a 1g.20gb holds it, and SM 0.1 of 132 SMs = 13.2 SMs,
  // under 80% of its 26 (20.8).
  const auto fit = mig_fit_for_gpu(mig_peaks(9, 0.1), RightSizingOptions{});
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->profile, "1g.20gb");
  EXPECT_EQ(fit->slices, 1u);
  ASSERT_TRUE(fit->usd_per_hour);
  EXPECT_NEAR(*fit->usd_per_hour, 1.0, 1e-9);
  EXPECT_TRUE(fit->reasoning.starts_with("fits a 1g.20gb: 1/7 of the GPU")) << fit->reasoning;
  // SM 0.3 = 39.6 SMs: over a 2g.20gb's 25.6 at 80%, under a 3g.40gb's 48.
  const auto bigger = mig_fit_for_gpu(mig_peaks(9, 0.3), RightSizingOptions{});
  ASSERT_TRUE(bigger);
  EXPECT_EQ(bigger->profile, "3g.40gb");
  // SM 0.6 = 79 SMs: over a 4g.40gb's 51 at 80%: only the whole GPU, no MIG suggestion.
  EXPECT_FALSE(mig_fit_for_gpu(mig_peaks(9, 0.6), RightSizingOptions{}));
  EXPECT_FALSE(mig_fit_for_gpu(mig_peaks(50, 0.1), RightSizingOptions{})) << "50 GiB: only 7g.80gb holds it";
}

TEST(MigRightSizing, AnInstanceOnASmallerProfile) {
  // A 3g.40gb (60 SMs) at SM 0.3 = 18 SMs with 15 GiB: 16.5 GiB with the margin fits a 1g.20gb (19.6 GiB,
  // 26 SMs: 20.8 at 80%).
  const RightSizing r = right_size_mig_instance(mig_peaks(15, 0.3), "3g.40gb", RightSizingOptions{});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kCheaper);
  EXPECT_EQ(r.candidate, "1g.20gb");
  ASSERT_TRUE(r.current_usd_per_hour && r.candidate_usd_per_hour);
  EXPECT_NEAR(*r.current_usd_per_hour, 3.0, 1e-9);
  EXPECT_NEAR(*r.candidate_usd_per_hour, 1.0, 1e-9);
  EXPECT_NEAR(r.monthly_savings_usd, 2.0 * 730, 1e-6);
  // At SM 0.9 (54 SMs) nothing smaller than its 3g.40gb carries it.
  EXPECT_EQ(right_size_mig_instance(mig_peaks(15, 0.9), "3g.40gb", RightSizingOptions{}).outcome,
            RightSizingOutcome::kKeep);
  EXPECT_EQ(right_size_mig_instance(mig_peaks(15, 0.3, 0.5), "3g.40gb", RightSizingOptions{}).outcome,
            RightSizingOutcome::kTooShort);
}

// A cost report's entries: a whole GPU keeps the catalog's verdict with the MIG profile added; an instance
// is sized onto profiles; unallocated slices are not sized.
TEST(MigRightSizing, CostEntriesAreSizedByWhatTheyAre) {
  auto catalog = model::PriceCatalog::parse(R"(gpus:
  - name: H100 80GB SXM
    match: ["H100 80GB HBM3"]
    prices: {on_demand: 7}
    specs: {memory_gib: 80, architecture: Hopper, bf16_tflops: 989, fp16_tensor_tflops: 989, fp32_tflops: 67,
            memory_bandwidth_gb_per_s: 3350, pcie_gen: 5, pcie_width: 16}
)",
                                            "test catalog");
  ASSERT_TRUE(catalog) << catalog.error();
  GpuCost whole;
  whole.peaks = mig_peaks(9, 0.1);
  const auto w = right_size_cost_entry(whole, *catalog, RightSizingOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->outcome, RightSizingOutcome::kKeep) << "the catalog has nothing smaller";
  EXPECT_NE(w->reasoning.find("; or in MIG mode: fits a 1g.20gb: 1/7 of the GPU"), std::string::npos) << w->reasoning;
  GpuCost instance;
  instance.mig_instance = "2";
  instance.mig_profile = "3g.40gb";
  instance.peaks = mig_peaks(15, 0.3);
  const auto i = right_size_cost_entry(instance, *catalog, RightSizingOptions{});
  ASSERT_TRUE(i);
  EXPECT_EQ(i->candidate, "1g.20gb");
  GpuCost unallocated;
  unallocated.mig_unallocated = true;
  unallocated.peaks = mig_peaks(0, 0);
  EXPECT_FALSE(right_size_cost_entry(unallocated, *catalog, RightSizingOptions{}));
}

}  // namespace
}  // namespace gpuscope::analysis::mig_cost_test
