// Each workload profile and scenario shows the signature it exists for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

double sm_active(nvmlDevice_t dev) { return gpm_now(dev).at(NVML_GPM_METRIC_SM_UTIL) / 100.0; }

TEST(Profiles, TrainingKeepsSmsAndTensorCoresBusy) {
  Session s("", 300.0);
  ASSERT_TRUE(s.ok());
  for (unsigned i = 0; i < 8; ++i) {
    const auto m = gpm_now(s.gpu(i));
    EXPECT_GT(m.at(NVML_GPM_METRIC_SM_UTIL), 70);
    EXPECT_GT(m.at(NVML_GPM_METRIC_ANY_TENSOR_UTIL), 35);
    EXPECT_GT(m.at(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC), 10000);
    const GpuReading r = read_gpu(s.gpu(i));
    EXPECT_GE(r.util_gpu, 95U);
    EXPECT_GT(r.power_mw, 500000U);
    EXPECT_EQ(r.reasons, 0U);
    EXPECT_EQ(r.sm_mhz, 1980U);
  }
}

TEST(Profiles, DataStarvedSawtoothWithPcieBursts) {
  Session s("data_starved", 0.5);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  std::vector<double> sm, power, util;
  std::vector<unsigned> rx;
  for (int t = 0; t < 120; ++t) {
    s.at(t + 0.5);
    sm.push_back(sm_active(dev));
    const GpuReading r = read_gpu(dev);
    power.push_back(r.power_mw / 1000.0);
    util.push_back(r.util_gpu);
    rx.push_back(r.pcie_rx_kbps);
  }
  const auto [sm_min, sm_max] = std::minmax_element(sm.begin(), sm.end());
  EXPECT_LT(*sm_min, 0.1);
  EXPECT_GT(*sm_max, 0.6);
  const auto [p_min, p_max] = std::minmax_element(power.begin(), power.end());
  EXPECT_GT(*p_max - *p_min, 300.0);  // power follows the sawtooth
  // Each collapse of SM activity comes with a burst of PCIe RX (the next batch), and only then.
  for (std::size_t i = 0; i < sm.size(); ++i) {
    if (sm[i] < 0.1) {
      EXPECT_GT(rx[i], 10'000'000U) << i;  // > ~10 GB/s
    } else {
      EXPECT_LT(rx[i], 1'000'000U) << i;
    }
  }
  // Utilization stays high while the SMs average under half busy: the misleading "util".
  const double sm_avg = std::accumulate(sm.begin(), sm.end(), 0.0) / sm.size();
  const double util_avg = std::accumulate(util.begin(), util.end(), 0.0) / util.size();
  EXPECT_LT(sm_avg, 0.5);
  EXPECT_GT(util_avg, 65.0);
  EXPECT_GT(util_avg, 1.5 * sm_avg * 100);
  // The cycle repeats every 12 s.
  for (std::size_t i = 0; i + 12 < sm.size(); ++i) EXPECT_EQ(sm[i] < 0.1, sm[i + 12] < 0.1) << i;
}

// A memory-bound kernel keeps its SMs active (and occupied) while they stall on DRAM: measured on an
// H100's device copy, SM active 0.99, occupancy 0.79, DRAM 0.895.
TEST(Profiles, MemoryBoundSaturatesDramWithTheSmsStalled) {
  Session s("memory_bound", 60.5);
  ASSERT_TRUE(s.ok());
  const auto m = gpm_now(s.gpu(0));
  EXPECT_GT(m.at(NVML_GPM_METRIC_DRAM_BW_UTIL), 80);
  EXPECT_GT(m.at(NVML_GPM_METRIC_SM_UTIL), 90);
  EXPECT_GT(m.at(NVML_GPM_METRIC_SM_OCCUPANCY), 60);
  EXPECT_EQ(m.at(NVML_GPM_METRIC_ANY_TENSOR_UTIL), 0);
  EXPECT_GT(read_gpu(s.gpu(0)).util_mem, 95U);
}

TEST(Profiles, NoTensorNeverUsesTensorPipes) {
  Session s("no_tensor", 0.5);
  ASSERT_TRUE(s.ok());
  for (int t = 0; t < 600; t += 37) {
    s.at(t + 0.5);
    const auto m = gpm_now(s.gpu(1));
    EXPECT_EQ(m.at(NVML_GPM_METRIC_ANY_TENSOR_UTIL), 0.0);
    EXPECT_EQ(m.at(NVML_GPM_METRIC_HMMA_TENSOR_UTIL), 0.0);
    EXPECT_GT(m.at(NVML_GPM_METRIC_FP32_UTIL), 30);
    EXPECT_GT(m.at(NVML_GPM_METRIC_SM_UTIL), 60);
  }
}

// Measured on an H100 running 1024-element adds in a loop: graphics engine 0.24, utilization 24%,
// SM active 0.0002 (each kernel holds a sliver of one SM for microseconds).
TEST(Profiles, SmallKernelsKeepTheEngineBusyButTheSmsEmpty) {
  Session s("small_kernels", 30.5);
  ASSERT_TRUE(s.ok());
  const auto m = gpm_now(s.gpu(0));
  EXPECT_NEAR(m.at(NVML_GPM_METRIC_GRAPHICS_UTIL), 24, 3);
  EXPECT_LT(m.at(NVML_GPM_METRIC_SM_UTIL), 0.1);
  EXPECT_LT(m.at(NVML_GPM_METRIC_SM_OCCUPANCY), 0.01);
  EXPECT_NEAR(read_gpu(s.gpu(0)).util_gpu, 24U, 3U);
}

TEST(Profiles, IdleParksTheGpu) {
  Session s("idle", 3600.5);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(3);
  const GpuReading r = read_gpu(dev);
  EXPECT_EQ(r.util_gpu, 0U);
  EXPECT_EQ(r.reasons, nvmlClocksEventReasonGpuIdle);
  EXPECT_EQ(r.sm_mhz, 345U);
  EXPECT_LT(r.power_mw, 100000U);
  EXPECT_NEAR(r.temp_c, 47U, 2U);  // measured on a parked H100
  int pstate = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetPerformanceState)(dev, &pstate), NVML_SUCCESS);
  EXPECT_EQ(pstate, 8);
  unsigned gen = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetCurrPcieLinkGeneration)(dev, &gen), NVML_SUCCESS);
  EXPECT_EQ(gen, 1U);
  EXPECT_NEAR(r.violation_ns[NVML_PERF_POLICY_LOW_UTILIZATION], 3600.5e9, 1e3);
  EXPECT_TRUE(processes(dev).empty());
}

TEST(Profiles, InferenceBurstyAlternatesBusyAndIdle) {
  Session s("inference_bursty", 0.5);
  ASSERT_TRUE(s.ok());
  int busy = 0, idle_with_model_resident = 0;
  const int seconds = 900;
  for (int t = 0; t < seconds; ++t) {
    s.at(t + 0.5);
    const GpuReading r = read_gpu(s.gpu(0));
    if (r.util_gpu > 50) ++busy;
    // Between bursts the model's context stays resident: full clocks, no clock event reason.
    if (r.util_gpu == 0 && r.reasons == 0 && r.sm_mhz == 1980U && r.mem_v2.used > (8ULL << 30)) {
      ++idle_with_model_resident;
    }
  }
  EXPECT_GT(busy, seconds * 0.15);
  EXPECT_LT(busy, seconds * 0.5);
  EXPECT_EQ(busy + idle_with_model_resident, seconds);
}

TEST(Profiles, ThermalRunawayClimbsThrottlesAndCountsViolationTime) {
  Session s("thermal_runaway", 290.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t hot = s.gpu(1);
  nvmlDevice_t fine = s.gpu(0);
  const GpuReading before = read_gpu(hot);
  EXPECT_EQ(before.violation_ns[NVML_PERF_POLICY_THERMAL], 0U);
  unsigned max_sm = 0, slowdown = 0, shutdown = 0;
  ASSERT_EQ(NVML(nvmlDeviceGetMaxClockInfo)(hot, NVML_CLOCK_SM, &max_sm), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetTemperatureThreshold)(hot, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &slowdown),
            NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlDeviceGetTemperatureThreshold)(hot, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &shutdown),
            NVML_SUCCESS);
  unsigned previous_temp = before.temp_c;
  unsigned long long previous_violation = 0;
  bool saw_throttled_clock = false;
  for (double t = 300.5; t <= 1800; t += 60) {
    s.at(t);
    const GpuReading r = read_gpu(hot);
    if (t < 900) {
      EXPECT_GE(r.temp_c + 1, previous_temp) << t;  // climbing
    }
    EXPECT_LT(r.temp_c, shutdown) << t;
    EXPECT_GE(r.violation_ns[NVML_PERF_POLICY_THERMAL], previous_violation);
    if (r.sm_mhz < 0.8 * max_sm) saw_throttled_clock = true;
    previous_temp = r.temp_c;
    previous_violation = r.violation_ns[NVML_PERF_POLICY_THERMAL];
  }
  const GpuReading after = read_gpu(hot);
  EXPECT_GE(after.temp_c, slowdown - 6);
  EXPECT_GT(after.temp_c, before.temp_c + 5);
  EXPECT_GT(after.violation_ns[NVML_PERF_POLICY_THERMAL], 60ULL * kNsPerS);
  EXPECT_TRUE(saw_throttled_clock);
  EXPECT_EQ(read_gpu(fine).violation_ns[NVML_PERF_POLICY_THERMAL], 0U);
}

TEST(Profiles, MemoryLeakGrowsAtTheGivenRate) {
  Session s("memory_leak", 300.0);
  ASSERT_TRUE(s.ok());
  const auto memory_of = [&](unsigned gpu, double t) {
    s.at(t);
    const auto procs = processes(s.gpu(gpu));
    EXPECT_EQ(procs.size(), 1U);
    return procs.empty() ? 0ULL : procs[0].usedGpuMemory;
  };
  const double grown = static_cast<double>(memory_of(0, 630) - memory_of(0, 330)) / 1048576.0;
  EXPECT_NEAR(grown, 1000.0, 1.0);  // 200 MiB/min for 5 min
  EXPECT_EQ(memory_of(1, 630), memory_of(1, 330));
  // The leak stops where the board is full; used + free + reserved still adds up.
  s.at(100 * 3600);
  const GpuReading full = read_gpu(s.gpu(0));
  EXPECT_LT(full.mem_v2.free, 2ULL * 1048576ULL);
  EXPECT_EQ(full.mem_v2.used + full.mem_v2.free + full.mem_v2.reserved, full.mem_v2.total);
}

TEST(Profiles, StalledProcessesHoldMemoryButNothingRuns) {
  Session s("stalled", 60.5);
  ASSERT_TRUE(s.ok());
  EXPECT_GT(read_gpu(s.gpu(0)).util_gpu, 90U);
  s.at(300.5);
  for (unsigned i = 0; i < 4; ++i) {
    const GpuReading r = read_gpu(s.gpu(i));
    EXPECT_EQ(r.util_gpu, 0U);
    // Measured on an H100 whose process holds a context and runs nothing: no clock event reason,
    // full clocks, ~130 W (72 W parked).
    EXPECT_EQ(r.reasons, 0U);
    EXPECT_EQ(r.sm_mhz, 1980U);
    EXPECT_NEAR(r.power_mw / 1000.0, 130, 4);
    EXPECT_EQ(sm_active(s.gpu(i)), 0.0);
    const auto procs = processes(s.gpu(i));
    ASSERT_EQ(procs.size(), 1U);
    EXPECT_EQ(procs[0].usedGpuMemory, 55ULL << 30);
    int pstate = 8;
    EXPECT_EQ(NVML(nvmlDeviceGetPerformanceState)(s.gpu(i), &pstate), NVML_SUCCESS);
    EXPECT_EQ(pstate, 0);  // a context is resident
  }
}

TEST(Profiles, StragglerRunsSlowerThanItsPeers) {
  Session s("straggler", 600.5);
  ASSERT_TRUE(s.ok());
  const GpuReading slow = read_gpu(s.gpu(3));
  EXPECT_NEAR(slow.sm_mhz, 0.7 * 1980, 15);
  EXPECT_NE(slow.reasons & nvmlClocksThrottleReasonHwSlowdown, 0U);
  EXPECT_NEAR(static_cast<double>(slow.violation_ns[NVML_PERF_POLICY_BOARD_LIMIT]), 600.5e9, 1e6);
  for (unsigned i : {0U, 1U, 2U, 4U, 5U, 6U, 7U}) {
    const GpuReading peer = read_gpu(s.gpu(i));
    EXPECT_EQ(peer.sm_mhz, 1980U) << i;
    EXPECT_EQ(peer.violation_ns[NVML_PERF_POLICY_BOARD_LIMIT], 0U) << i;
    EXPECT_GT(peer.power_mw, slow.power_mw + 50000) << i;
  }
}

TEST(Profiles, PowerCapHoldsPowerUnderTheLimit) {
  Session s("power_cap", 60.5);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t limited = s.gpu(0);  // configured at 500 W
  nvmlDevice_t open = s.gpu(1);
  GpuReading r = read_gpu(limited);
  EXPECT_EQ(r.limit_mw, 500000U);
  EXPECT_LE(r.power_mw, 500000U);
  EXPECT_NE(r.reasons & nvmlClocksEventReasonSwPowerCap, 0U);
  EXPECT_LT(r.sm_mhz, 1980U);
  const GpuReading open_before = read_gpu(open);
  EXPECT_EQ(open_before.limit_mw, 700000U);
  EXPECT_EQ(open_before.reasons & nvmlClocksEventReasonSwPowerCap, 0U);
  EXPECT_EQ(open_before.violation_ns[NVML_PERF_POLICY_POWER], 0U);

  s.at(180.5);  // inside the 350 W facility cap (2m-5m)
  for (nvmlDevice_t dev : {limited, open}) {
    r = read_gpu(dev);
    EXPECT_EQ(r.limit_mw, 350000U);
    EXPECT_LE(r.power_mw, 350000U);
    EXPECT_NE(r.reasons & nvmlClocksEventReasonSwPowerCap, 0U);
    unsigned configured = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetPowerManagementLimit)(dev, &configured), NVML_SUCCESS);
    EXPECT_GE(configured, 500000U);
  }
  EXPECT_NEAR(static_cast<double>(read_gpu(open).violation_ns[NVML_PERF_POLICY_POWER]), 60.5e9, 1e6);

  s.at(600.5);  // the cap is over
  r = read_gpu(open);
  EXPECT_EQ(r.limit_mw, 700000U);
  EXPECT_EQ(r.reasons & nvmlClocksEventReasonSwPowerCap, 0U);
  EXPECT_NEAR(static_cast<double>(r.violation_ns[NVML_PERF_POLICY_POWER]), 180e9, 1e6);
}

TEST(Profiles, EccCountsFollowTheEvents) {
  Session s("ecc", 30.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t h100 = s.gpu(0);
  nvmlDevice_t v100 = s.gpu(1);
  const auto count = [&](nvmlDevice_t dev, int type, int counter) {
    unsigned long long n = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetTotalEccErrors)(dev, type, counter, &n), NVML_SUCCESS);
    return n;
  };
  EXPECT_EQ(count(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 0U);
  s.at(90);
  EXPECT_EQ(count(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 3U);
  s.at(200);
  EXPECT_EQ(count(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC), 5U);
  EXPECT_EQ(count(h100, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC), 5U);
  EXPECT_EQ(count(h100, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC), 1U);
  EXPECT_EQ(count(v100, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC), 1U);
  nvmlFieldValue_t fields[2] = {};
  fields[0].fieldId = NVML_FI_DEV_ECC_SBE_VOL_TOTAL;
  fields[1].fieldId = NVML_FI_DEV_ECC_DBE_VOL_TOTAL;
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(h100, 2, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].value.ullVal, 5U);
  EXPECT_EQ(fields[1].value.ullVal, 1U);
  // The V100's double-bit error retired a page; the H100 does not retire pages.
  unsigned pages = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages)(v100, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(pages, 1U);
  unsigned long long address = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPages)(v100, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages, &address),
            NVML_SUCCESS);
  EXPECT_EQ(address % 4096, 0U);
  int pending = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetRetiredPagesPendingStatus)(v100, &pending), NVML_SUCCESS);
  EXPECT_EQ(pending, 1);
}

TEST(Profiles, RowRemapsAccumulate) {
  Session s("row_remap", 30.0);
  ASSERT_TRUE(s.ok());
  const auto rows = [&](double t) {
    s.at(t);
    std::array<unsigned, 4> r{};
    EXPECT_EQ(NVML(nvmlDeviceGetRemappedRows)(s.gpu(0), &r[0], &r[1], &r[2], &r[3]), NVML_SUCCESS);
    return r;
  };
  EXPECT_EQ(rows(30), (std::array<unsigned, 4>{0, 0, 0, 0}));
  EXPECT_EQ(rows(90), (std::array<unsigned, 4>{1, 0, 0, 0}));
  EXPECT_EQ(rows(150), (std::array<unsigned, 4>{1, 1, 1, 0}));
  EXPECT_EQ(rows(300), (std::array<unsigned, 4>{1, 1, 1, 1}));
}

TEST(Profiles, MixedNodeHasGpmOnlyOnHopper) {
  Session s("mixed_a100", 100.5);
  ASSERT_TRUE(s.ok());
  for (unsigned i = 0; i < 7; ++i) {
    nvmlGpmSupport_t support{NVML_GPM_SUPPORT_VERSION, 9};
    ASSERT_EQ(NVML(nvmlGpmQueryDeviceSupport)(s.gpu(i), &support), NVML_SUCCESS);
    EXPECT_EQ(support.isSupportedDevice, i < 4 ? 1U : 0U) << i;
  }
  // Without GPM the A100 still reports PCIe throughput, utilization, NVLink counters.
  nvmlFieldValue_t f[3] = {};
  f[0].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
  f[1].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  f[2].fieldId = 9999;
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(s.gpu(4), 3, f), NVML_SUCCESS);
  EXPECT_EQ(f[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_GT(f[0].value.ullVal, 0U);
  EXPECT_EQ(f[1].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(f[2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(s.gpu(6), 1, f), NVML_SUCCESS);  // PCIe card: no NVLink
  EXPECT_EQ(f[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
}

TEST(Profiles, FieldValuesAgreeWithTheDedicatedCalls) {
  Session s("golden", 1234.5);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  const GpuReading r = read_gpu(dev);
  nvmlFieldValue_t f[6] = {};
  const unsigned ids[] = {NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_POWER_AVERAGE,
                          NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_PCIE_REPLAY_COUNTER, NVML_FI_DEV_NVLINK_LINK_COUNT};
  for (int i = 0; i < 6; ++i) f[i].fieldId = ids[i];
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, 6, f), NVML_SUCCESS);
  for (const auto& v : f) EXPECT_EQ(v.nvmlReturn, NVML_SUCCESS) << v.fieldId;
  EXPECT_EQ(f[0].valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
  EXPECT_EQ(f[0].value.ullVal, r.energy_mj);
  EXPECT_EQ(f[1].valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
  EXPECT_EQ(f[1].value.uiVal, r.power_mw);
  EXPECT_EQ(f[2].value.uiVal, r.power_mw);
  EXPECT_LT(f[3].value.uiVal, r.temp_c);  // under compute the die is hotter than HBM (H100: 77 vs 69 °C)
  EXPECT_EQ(f[5].value.uiVal, 18U);
  // Timestamps are the simulated wall time in microseconds.
  EXPECT_EQ(f[0].timestamp, (s.epoch_ns() + 1234'500'000'000LL) / 1000);
  unsigned replays = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetPcieReplayCounter)(dev, &replays), NVML_SUCCESS);
  EXPECT_EQ(f[4].value.uiVal, replays);
}

}  // namespace
}  // namespace gpuscope::sim::testing
