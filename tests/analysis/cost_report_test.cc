// The cost accounting against hand-computed figures: a GPU at $3.60/h ($0.001 a second) read every
// 10 s through known idle, busy and copy phases, a loss, a restart, a gap, a price change, a driver reload
// that resets the energy counter, processes and jobs; and the interval arithmetic alone.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "analysis/cost_interval.h"
#include "analysis/cost_report.h"
#include "analysis/reading_source.h"
#include "store/series_set.h"

// A namespace of its own: the sanitizer build compiles several test files as one (unity).
namespace gpuscope::analysis::cost_report_test {
namespace {

constexpr std::int64_t kT0 = 1'800'000'000'000;
constexpr double kUsdPerHour = 3.6;  // $0.001 per second: a second's dollars read as thousandths
constexpr double kCent = 0.005;

std::int64_t at(int s) { return kT0 + s * 1000LL; }

store::Labels gpu_labels(const std::string& name, const std::string& gpu = "0", std::vector<store::Label> more = {}) {
  std::vector<store::Label> l = {{std::string(store::kMetricNameLabel), name},
                                 {"gpu", gpu},
                                 {"UUID", "GPU-" + gpu},
                                 {"Hostname", "node-1"},
                                 {"modelName", "NVIDIA H100 80GB HBM3"}};
  l.insert(l.end(), more.begin(), more.end());
  return store::Labels(l);
}

// One GPU's readings every 10 s; each phase sets the activity of the readings in (from_s, to_s].
class Recording {
 public:
  explicit Recording(std::string gpu = "0") : gpu_(std::move(gpu)) {}
  struct Activity {
    double gr, sm, util;
  };
  static constexpr Activity kIdle{0.0001, 0, 0};
  static constexpr Activity kCopies{0.0001, 0, 99.9};  // the real H100's host→device loop
  static Activity busy(double sm) { return {0.95, sm, 99}; }

  Recording& phase(int from_s, int to_s, Activity a, std::vector<store::Label> extra = {}) {
    for (int s = from_s + 10; s <= to_s; s += 10) reading(s, a, extra);
    return *this;
  }
  Recording& reading(int s, Activity a, const std::vector<store::Label>& extra = {}) {
    add("gpuscope_gpu_up", s, 1, extra);
    add("DCGM_FI_PROF_GR_ENGINE_ACTIVE", s, a.gr, extra);
    add("DCGM_FI_PROF_SM_ACTIVE", s, a.sm, extra);
    add("DCGM_FI_DEV_GPU_UTIL", s, a.util, extra);
    add("gpuscope_gpu_hourly_price_dollars", s, price_, {{"tier", "on_demand"}});
    energy_mj_ += 100'000;  // 100 J per reading: 10 W
    add("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", s, energy_mj_, extra);
    return *this;
  }
  // The GPU fell off the bus: gpu_up 0 and its price, nothing else (as the exporter writes it).
  Recording& lost(int from_s, int to_s) {
    for (int s = from_s + 10; s <= to_s; s += 10) {
      add("gpuscope_gpu_up", s, 0);
      add("gpuscope_gpu_hourly_price_dollars", s, price_, {{"tier", "on_demand"}});
    }
    return *this;
  }
  Recording& price(double usd_per_hour) {
    price_ = usd_per_hour;
    return *this;
  }
  Recording& energy(double mj) {
    energy_mj_ = mj;
    return *this;
  }
  Recording& process(int from_s, int to_s, int pid, double memory_bytes, std::optional<double> sm_ratio) {
    const std::vector<store::Label> l = {{"pid", std::to_string(pid)}, {"process_name", "python"}};
    for (int s = from_s + 10; s <= to_s; s += 10) {
      add("gpuscope_process_memory_bytes", s, memory_bytes, l);
      if (sm_ratio) add("gpuscope_process_sm_utilization_ratio", s, *sm_ratio, l);
    }
    return *this;
  }
  void into(store::SeriesSet& set) const {
    for (const auto& [labels, pts] : samples_) {
      for (const auto& [t, v] : pts) set.add(labels, t, v);
    }
  }

 private:
  void add(const std::string& name, int s, double v, const std::vector<store::Label>& extra = {}) {
    samples_[gpu_labels(name, gpu_, extra)][at(s)] = v;
  }
  std::string gpu_;
  double price_ = kUsdPerHour;
  double energy_mj_ = 5e9;
  std::map<store::Labels, std::map<std::int64_t, double>> samples_;
};

CostReport report_of(const store::SeriesSet& set, int from_s, int to_s,
                     const std::function<void(CostQuery&)>& tweak = {}) {
  StoreSource source(set);
  CostQuery q;
  q.from_ms = at(from_s);
  q.to_ms = at(to_s);
  q.rules.energy_usd_per_kwh = 0.12;
  if (tweak) tweak(q);
  auto r = cost_report(source, q);
  EXPECT_TRUE(r) << r.error();
  return r ? *r : CostReport{};
}

TEST(CostReport, KnownScheduleToTheCent) {
  store::SeriesSet set;
  // 10 minutes idle, 10 busy at SM active 0.5, 10 of host→device copies (utilization 99.9, SMs idle).
  Recording().reading(0, Recording::kIdle).phase(0, 600, Recording::kIdle).phase(600, 1200, Recording::busy(0.5))
      .phase(1200, 1800, Recording::kCopies).into(set);
  const CostReport r = report_of(set, -1, 1800);
  ASSERT_EQ(r.gpus.size(), 1u);
  const CostTotals& t = r.gpus[0].totals;
  EXPECT_DOUBLE_EQ(t.seconds, 1800);
  EXPECT_NEAR(t.dollars, 1.80, kCent);
  EXPECT_NEAR(t.idle_dollars, 0.60, kCent);
  EXPECT_NEAR(t.busy_not_working_dollars(), 0.30 + 0.60, kCent) << "half the busy phase and all the copies";
  EXPECT_NEAR(t.unused_dollars, 1.50, kCent);
  EXPECT_NEAR(t.working_dollars, 0.30, kCent);
  ASSERT_TRUE(t.efficiency());
  EXPECT_NEAR(*t.efficiency(), 300.0 / 1800.0, 1e-9);
  EXPECT_NEAR(t.energy_joules, 180 * 100.0, 1e-6);
  EXPECT_NEAR(t.energy_dollars, 18000.0 / 3.6e6 * 0.12, 1e-9);
  EXPECT_EQ(r.gpus[0].price_source, PriceSource::kRecorded);
  // A 30-minute span projects its rate over a month of 730 hours.
  ASSERT_TRUE(r.monthly_projection_usd);
  EXPECT_NEAR(*r.monthly_projection_usd, 3.6 * 730, 0.01);
  // Asked for a week of which only the last half hour has readings: the rate is the half hour's.
  const CostReport week = report_of(set, 1800 - 7 * 86400, 1800);
  EXPECT_NEAR(week.total.dollars, 1.80, kCent);
  ASSERT_TRUE(week.monthly_projection_usd);
  EXPECT_NEAR(*week.monthly_projection_usd, 3.6 * 730, 0.01);
}

TEST(CostReport, ALostGpuIsPaidAndUnusedButNeverWorking) {
  store::SeriesSet set;
  Recording().reading(0, Recording::busy(1.0)).phase(0, 300, Recording::busy(1.0)).lost(300, 600)
      .phase(600, 900, Recording::busy(1.0)).into(set);
  const CostTotals t = report_of(set, -1, 900).gpus.at(0).totals;
  EXPECT_NEAR(t.dollars, 0.90, kCent);
  EXPECT_NEAR(t.down_dollars, 0.30, kCent);
  EXPECT_NEAR(t.down_seconds, 300, 1e-9);
  EXPECT_NEAR(t.working_dollars, 0.60, kCent);
  EXPECT_NEAR(t.unused_dollars, 0.30, kCent);
  EXPECT_NEAR(t.idle_dollars, 0, kCent) << "down is not idle: nothing could run";
  EXPECT_NEAR(t.energy_joules, 60 * 100.0, 1e-6) << "no energy is read while the GPU is lost";
}

TEST(CostReport, AGapLongerThanFiveMinutesIsNotBilledAShorterOneOnce) {
  store::SeriesSet set;
  // Readings to 600 s; the agent restarts and reads again from 630 s (a 30 s gap, billed once); then
  // it is away from 1200 s to 1800 s (10 minutes: not billed).
  Recording().reading(0, Recording::kIdle).phase(0, 600, Recording::kIdle).phase(620, 1200, Recording::kIdle)
      .phase(1790, 2400, Recording::kIdle).into(set);
  const CostTotals t = report_of(set, -1, 2400).gpus.at(0).totals;
  EXPECT_DOUBLE_EQ(t.seconds, 600 + 600 + 600);
  EXPECT_NEAR(t.dollars, 1.80, kCent);
}

TEST(CostReport, AnEnergyCounterThatGoesBackIsADriverReload) {
  store::SeriesSet set;
  Recording rec;
  rec.reading(0, Recording::kIdle).phase(0, 300, Recording::kIdle);
  rec.energy(-50'000);  // the next reading reads 50 J: the counter restarted since the last one
  rec.phase(300, 600, Recording::kIdle);
  rec.into(set);
  const CostTotals t = report_of(set, -1, 600).gpus.at(0).totals;
  EXPECT_NEAR(t.energy_joules, 59 * 100.0 + 50.0, 1e-6);
}

TEST(CostReport, APriceChangeAppliesFromItsReadingOn) {
  store::SeriesSet set;
  Recording rec;
  rec.reading(0, Recording::kIdle).phase(0, 600, Recording::kIdle);
  rec.price(7.2);  // a catalog reload: $0.002 a second from here on
  rec.phase(600, 1200, Recording::kIdle);
  rec.into(set);
  const CostReport r = report_of(set, -1, 1200);
  EXPECT_NEAR(r.gpus.at(0).totals.dollars, 0.60 + 1.20, kCent);
  EXPECT_EQ(r.gpus.at(0).usd_per_hour, 7.2);
}

TEST(CostReport, ReadingSpanByBoundedSpanGivesTheSameTotals) {
  store::SeriesSet set;
  Recording().reading(0, Recording::kIdle).phase(0, 600, Recording::kIdle).phase(600, 1800, Recording::busy(0.3))
      .into(set);
  const CostTotals whole = report_of(set, -1, 1800).gpus.at(0).totals;
  const CostTotals pieces = report_of(set, -1, 1800, [](CostQuery& q) { q.read_span_ms = 95'000; }).gpus.at(0).totals;
  EXPECT_DOUBLE_EQ(pieces.seconds, whole.seconds);
  EXPECT_NEAR(pieces.dollars, whole.dollars, 1e-12);
  EXPECT_NEAR(pieces.working_dollars, whole.working_dollars, 1e-12);
  EXPECT_NEAR(pieces.energy_joules, whole.energy_joules, 1e-9);
}

TEST(CostReport, WithoutARecordedPriceTheCatalogPricesAndAnExplicitCatalogWins) {
  store::SeriesSet set;
  Recording().reading(0, Recording::kIdle).phase(0, 600, Recording::kIdle).into(set);
  auto catalog = model::PriceCatalog::parse("gpus:\n  - name: H100\n    match: [H100]\n    prices: {on_demand: 7.2, spot: 1.8}\n",
                                            "c.yaml");
  ASSERT_TRUE(catalog) << catalog.error();
  // Spot was not recorded: the catalog's spot price.
  const CostReport spot = report_of(set, -1, 600, [&](CostQuery& q) {
    q.tier = model::PriceTier::kSpot;
    q.catalog = &*catalog;
  });
  EXPECT_NEAR(spot.gpus.at(0).totals.dollars, 0.30, kCent);
  EXPECT_EQ(spot.gpus.at(0).price_source, PriceSource::kCatalog);
  // On demand was recorded ($3.60) and wins over the catalog's $7.20 ...
  const CostReport recorded = report_of(set, -1, 600, [&](CostQuery& q) { q.catalog = &*catalog; });
  EXPECT_NEAR(recorded.gpus.at(0).totals.dollars, 0.60, kCent);
  // ... unless the catalog was named explicitly.
  const CostReport explicit_catalog = report_of(set, -1, 600, [&](CostQuery& q) {
    q.catalog = &*catalog;
    q.catalog_first = true;
  });
  EXPECT_NEAR(explicit_catalog.gpus.at(0).totals.dollars, 1.20, kCent);
  // No price anywhere: hours, no dollars, and a note.
  const CostReport none = report_of(set, -1, 600, [&](CostQuery& q) { q.tier = model::PriceTier::kCommit3y; });
  EXPECT_DOUBLE_EQ(none.gpus.at(0).totals.seconds, 600);
  EXPECT_EQ(none.gpus.at(0).totals.dollars, 0);
  EXPECT_FALSE(none.monthly_projection_usd);
  ASSERT_FALSE(none.notes.empty());
  EXPECT_NE(none.notes.front().find("no price in tier commit_3y"), std::string::npos) << none.notes.front();
  EXPECT_NE(none.notes.back().find("a committed GPU costs the same idle or busy"), std::string::npos) << none.notes.back();
}

TEST(CostReport, ProcessesShareTheirGpuBySmThenByMemoryAndIdleTimeGoesToWhoHoldsIt) {
  store::SeriesSet set;
  Recording rec;
  rec.reading(0, Recording::kIdle).phase(0, 600, Recording::kIdle).phase(600, 1200, Recording::busy(0.8));
  rec.process(0, 600, 100, 3e9, std::nullopt);  // holds 3 GB through the idle phase, alone
  rec.process(600, 1200, 100, 3e9, 0.6);        // then 3 of the 4 SM shares
  rec.process(600, 1200, 200, 1e9, 0.2);
  rec.into(set);
  const CostReport r = report_of(set, -1, 1200, [](CostQuery& q) { q.by = CostGrouping::kProcess; });
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].name, "pid 100 python");
  EXPECT_NEAR(r.rows[0].totals.dollars, 0.60 + 0.45, kCent);
  EXPECT_NEAR(r.rows[0].totals.idle_dollars, 0.60, kCent);
  EXPECT_EQ(r.rows[1].name, "pid 200 python");
  EXPECT_NEAR(r.rows[1].totals.dollars, 0.15, kCent);
  EXPECT_NEAR(r.rows[0].totals.dollars + r.rows[1].totals.dollars, r.total.dollars, 1e-9) << "every dollar is someone's";
}

TEST(CostReport, ByALabelFollowsItsValueReadingByReading) {
  store::SeriesSet set;
  Recording rec;
  rec.reading(0, Recording::kIdle).phase(0, 300, Recording::kIdle);
  rec.phase(300, 900, Recording::busy(0.5), {{"hpc_job", "train-7"}});
  rec.into(set);
  const CostReport r = report_of(set, -1, 900, [](CostQuery& q) {
    q.by = CostGrouping::kLabel;
    q.label = "hpc_job";
  });
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].name, "train-7");
  EXPECT_NEAR(r.rows[0].totals.dollars, 0.60, kCent);
  EXPECT_EQ(r.rows[1].name, "(none)");
  EXPECT_NEAR(r.rows[1].totals.dollars, 0.30, kCent);

  StoreSource source(set);
  CostQuery q;
  q.from_ms = at(-1);
  q.to_ms = at(900);
  q.by = CostGrouping::kLabel;
  q.label = "team";
  auto unknown = cost_report(source, q);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().substr(0, 48), "unknown label 'team': no GPU series carries it (");
  EXPECT_NE(unknown.error().find("hpc_job"), std::string::npos) << unknown.error();
}

TEST(CostReport, TopWastersNameTheGpuItsIdleShareAndTheDollars) {
  store::SeriesSet set;
  Recording("0").reading(0, Recording::busy(1.0)).phase(0, 3600, Recording::busy(1.0)).into(set);
  Recording("1").reading(0, Recording::kIdle).phase(0, 2520, Recording::kIdle).phase(2520, 3600, Recording::busy(1.0))
      .into(set);
  const CostReport r = report_of(set, -1, 3600);
  const auto lines = top_wasters(r);
  ASSERT_EQ(lines.size(), 1u) << "a GPU that wasted nothing is no waster";
  EXPECT_EQ(lines[0], "GPU 1 (NVIDIA H100 80GB HBM3): idle 70% of 1h, $2.52 wasted");
}

TEST(CostInterval, ProcessSharesFallBackFromSmToMemoryToEqual) {
  std::vector<ProcessUse> uses = {{50.0, 1e9}, {150.0, 3e9}};
  EXPECT_EQ(process_shares(uses), (std::vector<double>{0.25, 0.75}));
  uses = {{std::nullopt, 1e9}, {0.0, 3e9}};
  EXPECT_EQ(process_shares(uses), (std::vector<double>{0.25, 0.75}));
  uses = {{}, {}};
  EXPECT_EQ(process_shares(uses), (std::vector<double>{0.5, 0.5}));
  EXPECT_TRUE(process_shares({}).empty());
}

TEST(CostInterval, WithoutSmActiveUtilizationIsTheWorkingShareAndSaysSo) {
  CostRules rules;
  CostReading prev;
  CostReading cur;
  cur.t_ms = 10'000;
  cur.utilization_percent = 40.0;
  cur.usd_per_hour = 3.6;
  const auto i = cost_interval(prev, cur, rules);
  ASSERT_TRUE(i);
  EXPECT_EQ(i->activity, CostActivity::kBusy);
  EXPECT_DOUBLE_EQ(i->working_share, 0.4);
  EXPECT_TRUE(i->working_from_utilization);
  ASSERT_TRUE(i->dollars);
  EXPECT_NEAR(*i->dollars, 0.01, 1e-12);
  // Not after the previous reading, or past the gap: nothing.
  EXPECT_FALSE(cost_interval(cur, prev, rules));
  cur.t_ms = rules.max_gap_ms + 1;
  EXPECT_FALSE(cost_interval(prev, cur, rules));
  // Power stands in for a missing energy counter.
  cur.t_ms = 10'000;
  cur.power_watts = 300;
  EXPECT_DOUBLE_EQ(cost_interval(prev, cur, rules)->energy_joules, 3000);
}

TEST(CostReport, DollarsTextHasThousandsAndCents) {
  EXPECT_EQ(dollars_text(3372.04), "$3,372.04");
  EXPECT_EQ(dollars_text(0.004), "$0.00");
  EXPECT_EQ(dollars_text(1234567.891), "$1,234,567.89");
  EXPECT_EQ(dollars_text(-5.5), "-$5.50");
}

}  // namespace
}  // namespace gpuscope::analysis::cost_report_test
