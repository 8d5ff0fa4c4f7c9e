// CostMeter with figures worked out by hand: a GPU at 36 USD per GPU-hour costs 1 cent a second, so
// each 10 s reading moves the dollars by 0.10.
#include "analysis/cost_meter.h"

#include <gtest/gtest.h>

namespace gpuscope::analysis {
namespace {

constexpr double kCentsExact = 1e-9;
constexpr double kUsdPerHour = 36;  // 0.01 USD per second
const std::string kUuid = "GPU-0";

MeteredGpu idle_gpu() {
  MeteredGpu g;
  g.uuid = kUuid;
  g.reading.gr_active = 0.01;
  g.reading.sm_active = 0.0;
  g.reading.utilization_percent = 0;
  g.reading.usd_per_hour = kUsdPerHour;
  return g;
}

MeteredGpu busy_gpu(double sm_active) {
  MeteredGpu g = idle_gpu();
  g.reading.gr_active = 0.9;
  g.reading.sm_active = sm_active;
  g.reading.utilization_percent = 90;
  return g;
}

MeteredGpu down_gpu() {
  MeteredGpu g;
  g.uuid = kUuid;
  g.reading.up = false;
  g.reading.usd_per_hour = kUsdPerHour;
  return g;
}

void feed(CostMeter& meter, std::int64_t t_ms, const MeteredGpu& gpu) { meter.update(t_ms, std::span(&gpu, 1)); }

GpuCostTotals gpu_of(const CostMeter& meter) {
  const auto totals = meter.totals();
  EXPECT_EQ(totals->size(), 1U);
  return totals->empty() ? GpuCostTotals{} : totals->front();
}

TEST(CostMeter, AnIdleThenBusyScheduleIsPaidToTheCent) {
  CostMeter meter;
  feed(meter, 0, idle_gpu());  // the first reading: nothing before it to bill
  EXPECT_EQ(gpu_of(meter).totals.dollars, 0);
  EXPECT_TRUE(gpu_of(meter).priced);
  feed(meter, 10'000, idle_gpu());       // 0.10 idle
  feed(meter, 20'000, busy_gpu(0.5));    // 0.10, half of it unused
  feed(meter, 30'000, busy_gpu(0.25));   // 0.10, three quarters unused
  const GpuCostTotals g = gpu_of(meter);
  EXPECT_NEAR(g.totals.dollars, 0.30, kCentsExact);
  EXPECT_NEAR(g.totals.idle_dollars, 0.10, kCentsExact);
  EXPECT_NEAR(g.totals.unused_dollars, 0.10 + 0.05 + 0.075, kCentsExact);
  EXPECT_NEAR(g.totals.working_dollars, 0.05 + 0.025, kCentsExact);
  EXPECT_EQ(g.last_t_ms, 30'000);
}

TEST(CostMeter, AnEnergyCounterThatWentBackWasReloadedAndCountsFromZero) {
  CostRules rules;
  rules.energy_usd_per_kwh = 0.12;
  CostMeter meter(rules);
  const double millijoules[] = {1'000'000, 1'500'000, 200'000, 700'000};  // +500 J, reset: 200 J, +500 J
  for (int i = 0; i < 4; ++i) {
    MeteredGpu g = idle_gpu();
    g.reading.energy_millijoules = millijoules[i];
    feed(meter, i * 10'000, g);
  }
  const GpuCostTotals g = gpu_of(meter);
  EXPECT_TRUE(g.energy_measured);
  EXPECT_NEAR(g.totals.energy_joules, 1200, 1e-9);
  EXPECT_NEAR(g.totals.energy_dollars, 1200 / 3.6e6 * 0.12, 1e-12);
}

TEST(CostMeter, AGpuDownForAWhileIsPaidUnusedAndNeverWorking) {
  CostMeter meter;
  feed(meter, 0, busy_gpu(1.0));
  feed(meter, 10'000, down_gpu());
  feed(meter, 20'000, down_gpu());
  feed(meter, 30'000, busy_gpu(1.0));  // all SMs active: all of this interval worked
  const GpuCostTotals g = gpu_of(meter);
  EXPECT_NEAR(g.totals.dollars, 0.30, kCentsExact);
  EXPECT_NEAR(g.totals.down_dollars, 0.20, kCentsExact);
  EXPECT_NEAR(g.totals.unused_dollars, 0.20, kCentsExact);
  EXPECT_NEAR(g.totals.idle_dollars, 0, kCentsExact);
  EXPECT_NEAR(g.totals.working_dollars, 0.10, kCentsExact);
  EXPECT_NEAR(g.totals.energy_joules, 0, kCentsExact) << "a GPU that is down draws nothing it reports";
}

TEST(CostMeter, AGapLongerThanFiveMinutesIsNotBilled) {
  CostMeter meter;
  feed(meter, 0, idle_gpu());
  feed(meter, 10'000, idle_gpu());             // 0.10
  feed(meter, 10'000 + 301'000, idle_gpu());   // the agent away 5 min 1 s: nothing
  feed(meter, 10'000 + 311'000, idle_gpu());   // 0.10
  feed(meter, 10'000 + 611'000, idle_gpu());   // exactly 5 min: billed, 3.00
  EXPECT_NEAR(gpu_of(meter).totals.dollars, 0.20 + 3.00, kCentsExact);
}

TEST(CostMeter, AReadingAtOrBeforeThePreviousOneBillsNothing) {
  CostMeter meter;
  feed(meter, 10'000, idle_gpu());
  feed(meter, 10'000, idle_gpu());
  feed(meter, 5'000, idle_gpu());   // a clock stepped back
  feed(meter, 20'000, idle_gpu());  // billed from the reading at 10 s, once
  EXPECT_NEAR(gpu_of(meter).totals.dollars, 0.10, kCentsExact);
}

TEST(CostMeter, SeededCountersContinueAndTheTimeSinceTheLastRecordedReadingIsBilledOnce) {
  CostMeter meter;
  CostSeed seed;
  seed.uuid = kUuid;
  seed.dollars = 5.0;
  seed.idle_dollars = 2.0;
  seed.unused_dollars = 3.0;
  seed.energy_joules = 1000;
  seed.energy_dollars = 0.5;
  CostReading last = idle_gpu().reading;
  last.t_ms = 1'000'000;
  seed.last_reading = last;
  meter.seed(seed);
  GpuCostTotals g = gpu_of(meter);
  EXPECT_EQ(g.totals.dollars, 5.0) << "from the start, before any reading";
  EXPECT_TRUE(g.priced);
  EXPECT_TRUE(g.energy_measured);

  feed(meter, 1'010'000, idle_gpu());  // the first reading after the restart: the 10 s since the last one
  feed(meter, 1'020'000, idle_gpu());
  g = gpu_of(meter);
  EXPECT_NEAR(g.totals.dollars, 5.20, kCentsExact);
  EXPECT_NEAR(g.totals.idle_dollars, 2.20, kCentsExact);
  EXPECT_NEAR(g.totals.unused_dollars, 3.20, kCentsExact);
  EXPECT_EQ(g.totals.energy_joules, 1000);
  EXPECT_EQ(g.totals.energy_dollars, 0.5);
}

TEST(CostMeter, SeededCountersWithoutARecentReadingContinueWithoutBillingTheAbsence) {
  CostMeter meter;
  CostSeed seed;
  seed.uuid = kUuid;
  seed.dollars = 5.0;
  meter.seed(seed);
  feed(meter, 1'000'000, idle_gpu());
  EXPECT_EQ(gpu_of(meter).totals.dollars, 5.0);
  feed(meter, 1'010'000, idle_gpu());
  EXPECT_NEAR(gpu_of(meter).totals.dollars, 5.10, kCentsExact);

  // A recorded reading older than the longest gap is not billed either, even when given.
  CostMeter late;
  CostReading old = idle_gpu().reading;
  old.t_ms = 1'000'000 - 301'000;
  seed.last_reading = old;
  late.seed(seed);
  feed(late, 1'000'000, idle_gpu());
  EXPECT_EQ(gpu_of(late).totals.dollars, 5.0);
}

MeteredProcess process(unsigned pid, std::optional<double> sm, std::optional<double> memory) {
  MeteredProcess p;
  p.key = {pid, "python", ""};
  p.use.sm_util_percent = sm;
  p.use.memory_bytes = memory;
  return p;
}

double process_dollars(const GpuCostTotals& g, unsigned pid) {
  for (const auto& p : g.processes) {
    if (p.key.pid == pid) return p.totals.dollars;
  }
  return -1;
}

TEST(CostMeter, TheGpusDollarsAreSplitAmongItsProcessesBySmUseElseByMemory) {
  CostMeter meter;
  MeteredGpu g = busy_gpu(0.5);
  g.processes = {process(1, 30, 1e9), process(2, 10, 3e9)};
  feed(meter, 0, g);
  EXPECT_EQ(process_dollars(gpu_of(meter), 1), 0) << "a process has a counter from its first reading";
  feed(meter, 10'000, g);  // 0.10: 3/4 and 1/4 by SM use
  g = idle_gpu();
  g.processes = {process(1, 0, 1e9), process(2, std::nullopt, 3e9), process(2, std::nullopt, 3e9)};
  feed(meter, 20'000, g);  // 0.10 idle: 1/4 and 3/4 by memory held (pid 2 listed twice is one process)
  GpuCostTotals c = gpu_of(meter);
  ASSERT_EQ(c.processes.size(), 2U);
  EXPECT_NEAR(process_dollars(c, 1), 0.075 + 0.025, kCentsExact);
  EXPECT_NEAR(process_dollars(c, 2), 0.025 + 0.075, kCentsExact);
  EXPECT_NEAR(c.totals.dollars, 0.20, kCentsExact) << "the processes' dollars add up to the GPU's";

  // A process gone is no longer shown; back within 5 minutes it continues, after longer it starts again.
  g.processes = {process(1, std::nullopt, 1e9)};
  feed(meter, 30'000, g);  // pid 1 alone: the whole 0.10
  c = gpu_of(meter);
  ASSERT_EQ(c.processes.size(), 1U);
  EXPECT_NEAR(process_dollars(c, 1), 0.20, kCentsExact);
  g.processes = {process(1, std::nullopt, 1e9), process(2, std::nullopt, 1e9)};
  feed(meter, 40'000, g);
  EXPECT_NEAR(process_dollars(gpu_of(meter), 2), 0.10 + 0.05, kCentsExact);
  g.processes = {process(1, std::nullopt, 1e9)};
  for (std::int64_t t = 50'000; t <= 350'000; t += 10'000) feed(meter, t, g);
  g.processes = {process(1, std::nullopt, 1e9), process(2, std::nullopt, 1e9)};
  feed(meter, 360'000, g);
  EXPECT_NEAR(process_dollars(gpu_of(meter), 2), 0.05, kCentsExact) << "pid 2 gone for longer than 5 min";

  // Another process under a reused pid is another counter.
  MeteredProcess other = process(1, std::nullopt, 1e9);
  other.key.name = "bash";
  g.processes = {other};
  feed(meter, 370'000, g);
  EXPECT_NEAR(process_dollars(gpu_of(meter), 1), 0.10, kCentsExact);
}

TEST(CostMeter, ASeededProcessContinuesUnderTheSameKeyOnly) {
  CostMeter meter;
  CostSeed seed;
  seed.uuid = kUuid;
  seed.dollars = 1.0;
  CostReading last = idle_gpu().reading;
  last.t_ms = 100'000;
  seed.last_reading = last;
  seed.processes.push_back({{7, "python", "abc"}, 0.40, 100'000});
  seed.processes.push_back({{8, "python", "abc"}, 0.60, 100'000});
  meter.seed(seed);
  MeteredGpu g = idle_gpu();
  MeteredProcess p7 = process(7, std::nullopt, 1e9);
  p7.key.container_id = "abc";
  MeteredProcess p8 = process(8, std::nullopt, 1e9);
  p8.key.container_id = "def";  // pid 8 now runs in another container: not the recorded process
  g.processes = {p7, p8};
  feed(meter, 110'000, g);
  const GpuCostTotals c = gpu_of(meter);
  EXPECT_NEAR(c.totals.dollars, 1.10, kCentsExact);
  EXPECT_NEAR(process_dollars(c, 7), 0.45, kCentsExact);
  EXPECT_NEAR(process_dollars(c, 8), 0.05, kCentsExact);
}

TEST(CostMeter, AnUnpricedGpuCountsEnergyButNoDollars) {
  CostMeter meter;
  MeteredGpu g = idle_gpu();
  g.reading.usd_per_hour.reset();
  g.reading.power_watts = 100;
  feed(meter, 0, g);
  feed(meter, 10'000, g);
  const GpuCostTotals c = gpu_of(meter);
  EXPECT_FALSE(c.priced);
  EXPECT_EQ(c.totals.dollars, 0);
  EXPECT_NEAR(c.totals.energy_joules, 1000, 1e-9) << "100 W for 10 s, without an energy counter";
}

}  // namespace
}  // namespace gpuscope::analysis
