// Physical consistency over long virtual runs: every GPU of several scenarios sampled for hours at
// 1-10 s steps, checking what any NVML client may assume about a real GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

constexpr unsigned long long kViolationBits[NVML_PERF_POLICY_COUNT] = {
    nvmlClocksEventReasonSwPowerCap,                                                    // power
    nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksThrottleReasonHwThermalSlowdown,  // thermal
    nvmlClocksEventReasonSyncBoost,                                                      // sync boost
    nvmlClocksThrottleReasonHwSlowdown,                                                  // board limit
    nvmlClocksEventReasonGpuIdle,                                                        // low utilization
    0,                                                                                   // reliability
};

struct GpuLimits {
  unsigned max_sm = 0, max_mem = 0, max_video = 0, shutdown_c = 0;
  bool gpm = false;
};

GpuLimits limits_of(nvmlDevice_t dev) {
  GpuLimits l;
  EXPECT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(dev, NVML_CLOCK_SM, &l.max_sm), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(dev, NVML_CLOCK_MEM, &l.max_mem), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(dev, NVML_CLOCK_VIDEO, &l.max_video), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetTemperatureThreshold)(dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &l.shutdown_c),
            NVML_SUCCESS);
  nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 0};
  EXPECT_EQ(NVML(nvmlGpmQueryDeviceSupport)(dev, &support), NVML_SUCCESS);
  l.gpm = support.isSupportedDevice == 1;
  return l;
}

struct GpuTrack {
  nvmlDevice_t dev = nullptr;
  GpuLimits limits;
  nvmlGpmSample_t previous_sample = nullptr, sample = nullptr;
  std::optional<GpuReading> previous;
  double first_energy_mj = 0;
  double trapezoid_mj = 0;
  double busy_seconds = 0;
  unsigned long long reasons_seen = 0;
};

// Integer steps of 1-10 s, half of them 1 s, from a fixed generator so runs are comparable.
class Steps {
 public:
  int next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const unsigned r = static_cast<unsigned>(state_ >> 33U);
    return r % 2 == 0 ? 1 : 1 + static_cast<int>((r >> 1U) % 10);
  }

 private:
  std::uint64_t state_ = 12345;
};

void check_instant(const GpuTrack& g, const GpuReading& r, const std::vector<nvmlProcessInfo_t>& procs,
                   const std::unordered_map<unsigned, double>& gpm, double t) {
  SCOPED_TRACE("t=" + std::to_string(t));
  // Memory adds up, in both struct versions, and is what the processes hold plus the driver's share.
  EXPECT_EQ(r.mem_v2.used + r.mem_v2.free + r.mem_v2.reserved, r.mem_v2.total);
  EXPECT_EQ(r.mem_v1.used + r.mem_v1.free, r.mem_v1.total);
  EXPECT_EQ(r.mem_v1.used, r.mem_v2.used + r.mem_v2.reserved);
  unsigned long long held = 0;
  for (const auto& p : procs) held += p.usedGpuMemory;
  EXPECT_EQ(r.mem_v2.used, held + 4ULL * 1048576ULL);

  EXPECT_LE(r.power_mw, r.limit_mw);
  EXPECT_LE(r.sm_mhz, g.limits.max_sm);
  EXPECT_LE(r.gr_mhz, g.limits.max_sm);
  EXPECT_LE(r.mem_mhz, g.limits.max_mem);
  EXPECT_LE(r.video_mhz, g.limits.max_video);
  EXPECT_GT(r.sm_mhz, 0U);
  EXPECT_LT(r.temp_c, g.limits.shutdown_c);
  EXPECT_GT(r.temp_c, 20U);
  EXPECT_LE(r.util_gpu, 100U);
  EXPECT_LE(r.util_mem, 100U);
  EXPECT_EQ(r.violation_ns[NVML_PERF_POLICY_RELIABILITY], 0U);
  if ((r.reasons & nvmlClocksEventReasonGpuIdle) != 0) {
    EXPECT_EQ(r.util_gpu, 0U);
  }

  if (!g.limits.gpm) return;
  ASSERT_EQ(gpm.size(), 17U);
  for (const auto& [id, value] : gpm) {
    EXPECT_GE(value, 0.0) << id;
    if (id < 20) {
      EXPECT_LE(value, 100.0) << id;
    }
  }
  EXPECT_LE(gpm.at(NVML_GPM_METRIC_SM_UTIL), gpm.at(NVML_GPM_METRIC_GRAPHICS_UTIL) + 1e-9);
  EXPECT_LE(gpm.at(NVML_GPM_METRIC_ANY_TENSOR_UTIL), gpm.at(NVML_GPM_METRIC_SM_UTIL) + 1e-9);
  EXPECT_LE(gpm.at(NVML_GPM_METRIC_SM_OCCUPANCY), gpm.at(NVML_GPM_METRIC_SM_UTIL) + 1e-9);
  // "Utilization" (a kernel ran) is never below the share of time the SMs were busy.
  EXPECT_GE(r.util_gpu + 1.0, gpm.at(NVML_GPM_METRIC_SM_UTIL));
  // nvmlDeviceGetPcieThroughput's KB/s is GPM's MiB/s times 1024.
  EXPECT_NEAR(r.pcie_rx_kbps, gpm.at(NVML_GPM_METRIC_PCIE_RX_PER_SEC) * 1024.0, 1.0);
  EXPECT_NEAR(r.pcie_tx_kbps, gpm.at(NVML_GPM_METRIC_PCIE_TX_PER_SEC) * 1024.0, 1.0);
}

void check_interval(const GpuReading& a, const GpuReading& b, int step_s, double t) {
  SCOPED_TRACE("t=" + std::to_string(t) + " step=" + std::to_string(step_s));
  EXPECT_GE(b.energy_mj, a.energy_mj);
  if (step_s == 1) {
    // Power holds for a 1 s cell, so a 1 s step's energy is 0.75 s of the first sample's power and
    // 0.25 s of the second's (mW s = mJ; rounding of mW and whole mJ allow 2 mJ).
    EXPECT_NEAR(static_cast<double>(b.energy_mj - a.energy_mj), 0.75 * a.power_mw + 0.25 * b.power_mw, 2.0);
  }
  const double step_ns = step_s * 1e9;
  for (int p = 0; p < NVML_PERF_POLICY_COUNT; ++p) {
    ASSERT_GE(b.violation_ns[p], a.violation_ns[p]) << "policy " << p;
    const double grew = static_cast<double>(b.violation_ns[p] - a.violation_ns[p]);
    EXPECT_LE(grew, step_ns + 2) << "policy " << p;
    const bool was_set = (a.reasons & kViolationBits[p]) != 0;
    const bool is_set = (b.reasons & kViolationBits[p]) != 0;
    if (step_s == 1) {
      // Samples sit 0.25 s into 1 s cells and reasons hold for a cell: a 1 s step sees 0.75 s of the
      // first cell and 0.25 s of the next, so the growth is known exactly from the two samples.
      EXPECT_NEAR(grew, 0.75e9 * was_set + 0.25e9 * is_set, 2.0) << "policy " << p;
    } else if (was_set) {
      EXPECT_GE(grew, 0.75e9 - 2) << "policy " << p;
    }
  }
}

struct RunResult {
  std::vector<GpuTrack> gpus;
};

// `energy_tolerance`: how far the trapezoid of the sampled power may be from the energy counter.
// 1% for steady loads; a load that switches every few seconds needs more, as 1-10 s samples of a
// square wave make the trapezoid itself that inexact.
RunResult long_run(std::string_view scenario, double hours, double energy_tolerance = 0.01) {
  RunResult out;
  Session s(scenario, 0.25);
  EXPECT_TRUE(s.ok());
  if (!s.ok()) return out;
  const unsigned n = s.count();
  out.gpus.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    GpuTrack& g = out.gpus[i];
    g.dev = s.gpu(i);
    g.limits = limits_of(g.dev);
    if (g.limits.gpm) {
      EXPECT_EQ(NVML(nvmlGpmSampleAlloc)(&g.previous_sample), NVML_SUCCESS);
      EXPECT_EQ(NVML(nvmlGpmSampleAlloc)(&g.sample), NVML_SUCCESS);
    }
  }
  Steps steps;
  double t = 0.25;
  int step = 0;
  const double end = hours * 3600.0;
  while (t <= end && !::testing::Test::HasFatalFailure()) {
    s.at(t);
    for (GpuTrack& g : out.gpus) {
      const GpuReading r = read_gpu(g.dev);
      const auto procs = processes(g.dev);
      std::unordered_map<unsigned, double> now;
      if (g.limits.gpm) {
        EXPECT_EQ(NVML(nvmlGpmSampleGet)(g.dev, g.sample), NVML_SUCCESS);
        now = gpm_between(g.sample, g.sample);
        if (g.previous) {
          // Averages over the step obey the same orderings as the instantaneous values.
          const auto avg = gpm_between(g.previous_sample, g.sample);
          EXPECT_LE(avg.at(NVML_GPM_METRIC_SM_UTIL), avg.at(NVML_GPM_METRIC_GRAPHICS_UTIL) + 1e-9);
          for (const auto& [id, value] : avg) {
            EXPECT_GE(value, -1e-9) << id;
            if (id < 20) {
              EXPECT_LE(value, 100.0 + 1e-9) << id;
            }
          }
        }
        std::swap(g.previous_sample, g.sample);
      }
      check_instant(g, r, procs, now, t);
      if (g.previous) {
        check_interval(*g.previous, r, step, t);
        g.trapezoid_mj += (g.previous->power_mw + r.power_mw) / 2.0 * step;
      } else {
        g.first_energy_mj = static_cast<double>(r.energy_mj);
      }
      if (r.util_gpu > 0) g.busy_seconds += step;
      g.reasons_seen |= r.reasons;
      g.previous = r;
    }
    step = steps.next();
    t += step;
  }
  for (GpuTrack& g : out.gpus) {
    // Energy is the integral of power: the trapezoid of the sampled power agrees within 1%.
    const double counted = static_cast<double>(g.previous->energy_mj) - g.first_energy_mj;
    EXPECT_NEAR(counted, g.trapezoid_mj, energy_tolerance * g.trapezoid_mj);
    if (g.limits.gpm) {
      EXPECT_EQ(NVML(nvmlGpmSampleFree)(g.previous_sample), NVML_SUCCESS);
      EXPECT_EQ(NVML(nvmlGpmSampleFree)(g.sample), NVML_SUCCESS);
    }
  }
  return out;
}

TEST(Invariants, DemoNodeForSixHours) {
  const RunResult r = long_run("demo", 6);
  ASSERT_EQ(r.gpus.size(), 8U);
  // The run went through the states the checks are about.
  EXPECT_NE(r.gpus[6].reasons_seen & nvmlClocksEventReasonSwThermalSlowdown, 0U);
  EXPECT_NE(r.gpus[5].reasons_seen & nvmlClocksThrottleReasonHwSlowdown, 0U);
}

TEST(Invariants, MixedNodeForSixHours) {
  const RunResult r = long_run("mixed_a100", 6);
  ASSERT_EQ(r.gpus.size(), 7U);
  EXPECT_TRUE(r.gpus[0].limits.gpm);
  EXPECT_FALSE(r.gpus[4].limits.gpm);
}

TEST(Invariants, GoldenScenarioForSixHours) { long_run("golden", 6); }

TEST(Invariants, PowerCapForAnHour) {
  const RunResult r = long_run("power_cap", 1);
  ASSERT_EQ(r.gpus.size(), 2U);
  EXPECT_NE(r.gpus[1].reasons_seen & nvmlClocksEventReasonSwPowerCap, 0U);
}

TEST(Invariants, BurstyInferenceForSixHours) {
  const RunResult r = long_run("inference_bursty", 6, 0.04);
  ASSERT_EQ(r.gpus.size(), 4U);
  // The server's context stays resident between bursts: the GPU never parks (measured on an H100:
  // a held context keeps P0 and full clocks with no clock event reason).
  EXPECT_EQ(r.gpus[2].reasons_seen & nvmlClocksEventReasonGpuIdle, 0U);
}

TEST(Invariants, TemperatureLagsPower) {
  // Golden GPU 1 is idle until 10m, then trains.
  Session s("golden", 590.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(1);
  const auto at = [&](double t) {
    s.at(t);
    return read_gpu(dev);
  };
  const GpuReading before = at(599.5);
  const GpuReading just_after = at(605.5);
  const GpuReading settled = at(900.5);
  EXPECT_GT(just_after.power_mw, 3 * before.power_mw);  // power steps at once
  EXPECT_GT(settled.temp_c, before.temp_c + 15);         // the die warms up by tens of degrees
  // Two poles, as measured on an H100 stepping from 130 W to 700 W (+18 °C within 1 s, then ~0.5 °C/s):
  // the die jumps most of its way within seconds...
  const double way = settled.temp_c - before.temp_c;
  EXPECT_GT(just_after.temp_c - before.temp_c, 0.5 * way);
  EXPECT_LT(just_after.temp_c - before.temp_c, 0.8 * way);
  // ... and the cold plate takes the rest over tens of seconds.
  const GpuReading tau = at(625.5);
  EXPECT_GT(tau.temp_c, just_after.temp_c);
  EXPECT_LT(tau.temp_c, settled.temp_c);
}

}  // namespace
}  // namespace gpuscope::sim::testing
