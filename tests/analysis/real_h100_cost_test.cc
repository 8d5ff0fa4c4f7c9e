// The cost accounting on the real H100 recording: each phase's dollars split as what the phase did —
// the idle phases idle dollars, the host→device copies and the tiny kernels unused dollars (utilization
// read 99.9 % and 24 % with the SMs idle), the GEMMs working dollars — at the price the agent recorded,
// and the energy counter agreeing with the power readings.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/cost_report.h"
#include "analysis/reading_source.h"
#include "real_h100_recording.h"

namespace gpuscope::analysis {
namespace {

using testing::Phase;

class RealH100Cost : public testing::RealH100Recording {
 protected:
  // The phase's cost, its first 3 s (the switch between phases) left out.
  static CostTotals phase_cost(const std::string& name) {
    const Phase* it = phase(name);
    if (it == nullptr) return {};
    StoreSource source(*data_);
    CostQuery q;
    q.from_ms = it->start_ms + 3000;
    q.to_ms = it->end_ms;
    auto r = cost_report(source, q);
    if (!r || r->gpus.size() != 1) {
      ADD_FAILURE() << name << ": " << (r ? std::to_string(r->gpus.size()) + " GPUs" : r.error());
      return {};
    }
    EXPECT_EQ(r->gpus[0].price_source, PriceSource::kRecorded) << name;
    EXPECT_EQ(r->gpus[0].usd_per_hour, 5.505) << name << ": the catalog's H100 on-demand price, as recorded";
    return r->gpus[0].totals;
  }
};

TEST_F(RealH100Cost, IdlePhasesAreIdleDollars) {
  for (const char* phase : {"idle_start", "memory_leak", "idle_end"}) {
    const CostTotals t = phase_cost(phase);
    ASSERT_GT(t.dollars, 0) << phase;
    EXPECT_NEAR(t.dollars, 5.505 * t.seconds / 3600, 1e-9) << phase;
    EXPECT_GT(t.idle_dollars / t.dollars, 0.95) << phase;
    EXPECT_NEAR(t.unused_dollars, t.dollars, t.dollars * 0.01) << phase;
  }
}

TEST_F(RealH100Cost, CopiesAndTinyKernelsAreUnusedDollarsNotIdle) {
  for (const char* phase : {"h2d_pcie_copy", "tiny_kernels_launch_bound"}) {
    const CostTotals t = phase_cost(phase);
    ASSERT_GT(t.dollars, 0) << phase;
    EXPECT_LT(t.idle_dollars / t.dollars, 0.05) << phase << ": utilization.gpu was up, something ran";
    EXPECT_GT(t.unused_dollars / t.dollars, 0.99) << phase << ": SM active ~0";
    EXPECT_GT(t.busy_not_working_dollars() / t.dollars, 0.95) << phase;
    ASSERT_TRUE(t.efficiency());
    EXPECT_LT(*t.efficiency(), 0.01) << phase;
  }
}

TEST_F(RealH100Cost, GemmsAreWorkingDollars) {
  for (const char* phase : {"tensor_bf16_matmul", "fp32_matmul_no_tensor", "dram_copy"}) {
    const CostTotals t = phase_cost(phase);
    ASSERT_GT(t.dollars, 0) << phase;
    EXPECT_GT(t.working_dollars / t.dollars, 0.9) << phase;
    EXPECT_LT(t.idle_dollars, t.dollars * 0.05) << phase;
  }
  // The starved sawtooth works a fifth of the time: mostly unused, little idle (kernels keep coming).
  const CostTotals starved = phase_cost("sawtooth_data_starved");
  ASSERT_TRUE(starved.efficiency());
  EXPECT_GT(*starved.efficiency(), 0.05);
  EXPECT_LT(*starved.efficiency(), 0.4);
}

TEST_F(RealH100Cost, TheEnergyCounterAgreesWithThePowerReadings) {
  StoreSource source(*data_);
  CostQuery q;
  q.from_ms = phases_->front().start_ms;
  q.to_ms = phases_->back().end_ms;
  q.rules.energy_usd_per_kwh = 0.12;
  auto r = cost_report(source, q);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->gpus.size(), 1u);
  const CostTotals& t = r->gpus[0].totals;
  // The phases' mean powers (130 W idle, ~700 W GEMMs, ...) over ~3 minutes: tens of kJ.
  double power_joules = 0;
  {
    auto matcher = store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, std::string(store::kMetricNameLabel),
                                             "DCGM_FI_DEV_POWER_USAGE");
    ASSERT_TRUE(matcher);
    auto power = data_->select(std::span(&*matcher, 1), q.from_ms, q.to_ms);
    ASSERT_TRUE(power && power->size() == 1);
    const auto& s = (*power)[0].samples;
    for (std::size_t i = 1; i < s.size(); ++i) power_joules += s[i].value * static_cast<double>(s[i].t_ms - s[i - 1].t_ms) / 1000.0;
  }
  ASSERT_GT(power_joules, 10'000);
  EXPECT_NEAR(t.energy_joules, power_joules, power_joules * 0.1);
  EXPECT_NEAR(t.energy_dollars, t.energy_joules / 3.6e6 * 0.12, 1e-12);
}

}  // namespace
}  // namespace gpuscope::analysis
