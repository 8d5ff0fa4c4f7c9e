// The simulator's H100 against the real H100 recording (shared/reference/real-h100): the phase means
// of its README's table, the idle and context power, the power cap, the thermal behaviour, replayed
// by scenarios/h100_phases.yaml and the profiles each diagnosis verdict is shown with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

// Means over 1 s samples of [from, to), as a 1 s reader (gpuscope, dcgm-exporter) sees them: GPM
// ratios between consecutive samples, the instantaneous values in the middle of each second.
struct WindowMeans {
  double gr = 0, sm = 0, occupancy = 0, tensor = 0, dram = 0, fp32 = 0, fp_pipes = 0;
  double pcie_rx_link = 0, pcie_tx_link = 0;  // share of the link's bandwidth (generation x width)
  double pcie_rx_gbps = 0;                    // 10^9 bytes/s
  double util = 0, util_mem = 0, power_w = 0, sm_mhz = 0;
  double temp_c = 0, mem_temp_c = 0;  // at the end of the window
  unsigned long long reasons = 0;     // every clock event reason seen
  double power_violation_s = 0;       // growth of the power violation counter over the window
  int samples = 0;
};

double link_bytes_per_s(nvmlDevice_t dev) {
  unsigned gen = 0, width = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetMaxPcieLinkGeneration)(dev, &gen), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetMaxPcieLinkWidth)(dev, &width), NVML_SUCCESS);
  static constexpr double kLaneBytesPerS[] = {0, 250e6, 500e6, 985e6, 1969e6, 3938e6, 7877e6};
  return kLaneBytesPerS[std::min(gen, 6U)] * width;
}

unsigned memory_temp(nvmlDevice_t dev) {
  nvmlFieldValue_t f{};
  f.fieldId = NVML_FI_DEV_MEMORY_TEMP;
  EXPECT_EQ(NVML(nvmlDeviceGetFieldValues)(dev, 1, &f), NVML_SUCCESS);
  return f.value.uiVal;
}

WindowMeans window(Session& s, unsigned gpu, double from, double to) {
  nvmlDevice_t dev = s.gpu(gpu);
  const double link = link_bytes_per_s(dev);
  WindowMeans w;
  nvmlGpmSample_t a = nullptr, b = nullptr;
  EXPECT_EQ(NVML(nvmlGpmSampleAlloc)(&a), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleAlloc)(&b), NVML_SUCCESS);
  s.at(from);
  EXPECT_EQ(NVML(nvmlGpmSampleGet)(dev, a), NVML_SUCCESS);
  const unsigned long long violation_start = read_gpu(dev).violation_ns[NVML_PERF_POLICY_POWER];
  for (double t = from + 1; t <= to; t += 1) {
    s.at(t);
    EXPECT_EQ(NVML(nvmlGpmSampleGet)(dev, b), NVML_SUCCESS);
    auto m = gpm_between(a, b);
    std::swap(a, b);
    w.gr += m[NVML_GPM_METRIC_GRAPHICS_UTIL] / 100;
    w.sm += m[NVML_GPM_METRIC_SM_UTIL] / 100;
    w.occupancy += m[NVML_GPM_METRIC_SM_OCCUPANCY] / 100;
    w.tensor += m[NVML_GPM_METRIC_ANY_TENSOR_UTIL] / 100;
    w.dram += m[NVML_GPM_METRIC_DRAM_BW_UTIL] / 100;
    w.fp32 += m[NVML_GPM_METRIC_FP32_UTIL] / 100;
    w.fp_pipes += (m[NVML_GPM_METRIC_FP32_UTIL] + m[NVML_GPM_METRIC_FP16_UTIL] + m[NVML_GPM_METRIC_FP64_UTIL]) / 100;
    const double rx = m[NVML_GPM_METRIC_PCIE_RX_PER_SEC] * 1048576.0;
    w.pcie_rx_gbps += rx / 1e9;
    w.pcie_rx_link += rx / link;
    w.pcie_tx_link += m[NVML_GPM_METRIC_PCIE_TX_PER_SEC] * 1048576.0 / link;
    s.at(t - 0.5);
    const GpuReading r = read_gpu(dev);
    w.util += r.util_gpu;
    w.util_mem += r.util_mem;
    w.power_w += r.power_mw / 1000.0;
    w.sm_mhz += r.sm_mhz;
    w.reasons |= r.reasons;
    ++w.samples;
  }
  s.at(to);
  const GpuReading end = read_gpu(dev);
  w.temp_c = end.temp_c;
  w.mem_temp_c = memory_temp(dev);
  w.power_violation_s = static_cast<double>(end.violation_ns[NVML_PERF_POLICY_POWER] - violation_start) / 1e9;
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(a), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(b), NVML_SUCCESS);
  const double n = std::max(1, w.samples);
  for (double* v : {&w.gr, &w.sm, &w.occupancy, &w.tensor, &w.dram, &w.fp32, &w.fp_pipes, &w.pcie_rx_link,
                    &w.pcie_tx_link, &w.pcie_rx_gbps, &w.util, &w.util_mem, &w.power_w, &w.sm_mhz}) {
    *v /= n;
  }
  return w;
}

std::string describe(const WindowMeans& w) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "gr %.4f sm %.4f sm/gr %.2f occ %.4f tensor %.4f dram %.4f fp %.4f rx %.3f of link (%.2f GB/s) "
                "util %.1f mem %.1f power %.1f W clock %.0f MHz temp %.0f/%.0f reasons 0x%llx",
                w.gr, w.sm, w.gr > 0 ? w.sm / w.gr : 0.0, w.occupancy, w.tensor, w.dram, w.fp_pipes, w.pcie_rx_link,
                w.pcie_rx_gbps, w.util, w.util_mem, w.power_w, w.sm_mhz, w.temp_c, w.mem_temp_c, w.reasons);
  return buf;
}

// A ratio within `rel` of the real value, or within `abs` of it where the real value is near 0.
void expect_close(double sim, double real, double rel, double abs, const char* what) {
  EXPECT_NEAR(sim, real, std::max(abs, rel * real)) << what;
}

// One phase of the recording: where it sits in h100_phases.yaml and what the real H100 read (README's
// table, first 3 s and last 1 s left out, as here).
struct RealPhase {
  const char* name;
  double start_s, end_s;
  double util, gr, sm, occupancy, tensor, dram, fp32, pcie_rx_gbps, power_w;
};

constexpr RealPhase kPhases[] = {
    {"idle_start", 6, 18, 0, 0.0001, 0, 0, 0, 0, 0, 0, 130},
    {"tensor_bf16_matmul", 18, 38, 99.5, 0.995, 0.961, 0.142, 0.933, 0.252, 0, 0, 698},
    {"fp32_matmul_no_tensor", 38, 58, 100, 0.998, 0.967, 0.121, 0, 0.066, 0.773, 0, 676},
    {"dram_copy", 58, 78, 99, 0.992, 0.989, 0.793, 0, 0.895, 0, 0, 412},
    {"tiny_kernels_launch_bound", 78, 98, 24, 0.239, 0.0002, 0.00001, 0, 0, 0, 0, 138},
    {"h2d_pcie_copy", 98, 118, 99.9, 0.0001, 0, 0, 0, 0.016, 0, 55.6, 140},
    {"sawtooth_data_starved", 118, 138, 19.9, 0.19, 0.156, 0.023, 0.151, 0.056, 0, 0, 286},
    {"memory_leak", 138, 158, 0, 0.0001, 0, 0, 0, 0, 0, 0, 131},
};

class RealH100Phases : public ::testing::TestWithParam<RealPhase> {};

TEST_P(RealH100Phases, SimulatorMatchesTheRecordingsPhaseMeans) {
  const RealPhase& p = GetParam();
  Session s("h100_phases", 0.0);
  ASSERT_TRUE(s.ok());
  const WindowMeans w = window(s, 0, p.start_s + 3, p.end_s - 1);
  SCOPED_TRACE(describe(w));
  // Ratios within 12% (or 0.01 where the real value is ~0), utilization within 3 points, power within
  // 4% or 8 W.
  expect_close(w.gr, p.gr, 0.12, 0.01, "graphics engine active");
  expect_close(w.sm, p.sm, 0.12, 0.01, "SM active");
  expect_close(w.occupancy, p.occupancy, 0.12, 0.01, "SM occupancy");
  expect_close(w.tensor, p.tensor, 0.12, 0.01, "tensor active");
  expect_close(w.dram, p.dram, 0.12, 0.01, "DRAM active");
  expect_close(w.fp32, p.fp32, 0.12, 0.01, "FP32 active");
  expect_close(w.pcie_rx_gbps, p.pcie_rx_gbps, 0.10, 0.5, "PCIe RX GB/s");
  EXPECT_NEAR(w.util, p.util, 3.0) << "utilization.gpu";
  expect_close(w.power_w, p.power_w, 0.04, 8.0, "power");
  // The orderings every client relies on hold in the means too.
  EXPECT_LE(w.sm, w.gr + 1e-9);
  EXPECT_LE(w.tensor, w.sm + 1e-9);
  EXPECT_LE(w.occupancy, w.sm + 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Calibration, RealH100Phases, ::testing::ValuesIn(kPhases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Calibration, IdlePowerWithAndWithoutAContext) {
  Session s("h100_phases", 3.5);  // before the process starts: parked
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  GpuReading r = read_gpu(dev);
  EXPECT_NEAR(r.power_mw / 1000.0, 72, 3);
  EXPECT_EQ(r.sm_mhz, 345U);
  EXPECT_EQ(r.reasons, nvmlClocksEventReasonGpuIdle);
  EXPECT_NEAR(r.temp_c, 47, 2);
  s.at(15.5);  // a process holds a context, nothing runs
  r = read_gpu(dev);
  EXPECT_NEAR(r.power_mw / 1000.0, 130, 4);
  EXPECT_EQ(r.sm_mhz, 1980U);
  EXPECT_EQ(r.reasons, 0U);
  EXPECT_EQ(r.util_gpu, 0U);
  int pstate = 8;
  EXPECT_EQ(NVML(nvmlDeviceGetPerformanceState)(dev, &pstate), NVML_SUCCESS);
  EXPECT_EQ(pstate, 0);
  EXPECT_EQ(r.mem_v2.reserved, 480ULL << 20);
  EXPECT_EQ(r.mem_v2.used, (4618ULL + 4) << 20);  // the process's memory and the driver's 4 MiB
}

TEST(Calibration, Bf16GemmIsHeldAtThePowerCapWithTheClockDown) {
  Session s("h100_phases", 0.0);
  ASSERT_TRUE(s.ok());
  const WindowMeans w = window(s, 0, 21, 37);
  SCOPED_TRACE(describe(w));
  EXPECT_GE(w.power_w, 690);
  EXPECT_LE(w.power_w, 700);
  EXPECT_NEAR(w.sm_mhz, 1361, 60);  // of 1980
  EXPECT_NE(w.reasons & nvmlClocksEventReasonSwPowerCap, 0U);
  EXPECT_NEAR(w.power_violation_s, 16, 0.5);  // the power violation time grows with the wall clock
  // Temperature climbs fast then slowly: ~67 °C a second in, ~77 °C after 20 s.
  s.at(19.5);
  EXPECT_NEAR(read_gpu(s.gpu(0)).temp_c, 67, 3);
  s.at(37.5);
  EXPECT_NEAR(read_gpu(s.gpu(0)).temp_c, 77, 2);
}

TEST(Calibration, Fp32MatmulAfterTheGemmReachesTheSoftThermalSlowdown) {
  Session s("h100_phases", 0.0);
  ASSERT_TRUE(s.ok());
  const WindowMeans w = window(s, 0, 41, 57);
  SCOPED_TRACE(describe(w));
  EXPECT_NE(w.reasons & nvmlClocksEventReasonSwThermalSlowdown, 0U);
  EXPECT_NEAR(w.temp_c, 79.5, 1.5);
  EXPECT_GT(w.sm_mhz, 1800);  // a few percent off, not the power cap's third
  EXPECT_LT(w.sm_mhz, 1980);
}

TEST(Calibration, HbmRunsHottestUnderTheDeviceCopy) {
  Session s("h100_phases", 0.0);
  ASSERT_TRUE(s.ok());
  const WindowMeans copy = window(s, 0, 61, 77);
  SCOPED_TRACE(describe(copy));
  EXPECT_NEAR(copy.mem_temp_c, 77, 3);
  EXPECT_NEAR(copy.temp_c, 65, 4);
  EXPECT_GE(copy.mem_temp_c, copy.temp_c + 8);
  EXPECT_GE(copy.util_mem, 99);
  // Under the GEMM the die is the hotter one (77 vs 69 °C).
  const WindowMeans gemm = window(s, 0, 21, 37);
  EXPECT_LT(gemm.mem_temp_c, gemm.temp_c - 4);
  EXPECT_NEAR(gemm.util_mem, 33, 4);
}

TEST(Calibration, HostToDeviceCopyIsTheCopyEngineAlone) {
  Session s("h100_phases", 0.0);
  ASSERT_TRUE(s.ok());
  const WindowMeans w = window(s, 0, 101, 117);
  SCOPED_TRACE(describe(w));
  EXPECT_GE(w.util, 99);
  EXPECT_EQ(w.sm, 0.0);
  EXPECT_LT(w.gr, 0.001);
  EXPECT_NEAR(w.pcie_rx_link, 0.88, 0.05);  // of the gen5 x16 link
  EXPECT_EQ(w.reasons, 0U);
  EXPECT_EQ(w.sm_mhz, 1980);
}

// Every diagnosis verdict has a profile whose 30 s means land clearly on its side of the thresholds
// (ratios are window means of 1 s samples; the link share is of PCIe generation x width).
TEST(Calibration, EachVerdictsProfileHasItsSignature) {
  const auto means = [](const std::string& yaml, double from) {
    Session s(yaml, 0.0);
    EXPECT_TRUE(s.ok());
    return window(s, 0, from, from + 30);
  };
  const auto scenario = [](const std::string& workload) {
    return "gpus: {count: 1, model: NVIDIA H100 80GB HBM3}\nworkload: {profile: " + workload + "}" +
           "\nprocesses: [{pid: 7, gpu: 0, memory: 10GiB}]\n";
  };
  {
    const WindowMeans w = means(scenario("{profile: h2d_copy}"), 60);  // transfer bound
    SCOPED_TRACE(describe(w));
    EXPECT_LT(w.sm, 0.05);
    EXPECT_GE(w.pcie_rx_link, 0.5);
    EXPECT_GE(w.util, 95);
  }
  {
    const WindowMeans w = means(scenario("{profile: memory_bound}"), 60);
    SCOPED_TRACE(describe(w));
    EXPECT_GE(w.dram, 0.8);
    EXPECT_LT(w.tensor, 0.1);
    EXPECT_GE(w.gr, 0.9);
    EXPECT_GE(w.sm / w.gr, 0.9);
  }
  {
    const WindowMeans w = means(scenario("{profile: small_kernels}"), 60);  // launch bound
    SCOPED_TRACE(describe(w));
    EXPECT_GE(w.gr, 0.15);
    EXPECT_LT(w.sm / w.gr, 0.1);
  }
  {
    const WindowMeans w = means(scenario("{profile: data_starved, source: cpu}"), 60);  // starved, CPU side
    SCOPED_TRACE(describe(w));
    EXPECT_GE(w.sm / w.gr, 0.7);
    EXPECT_LT(w.gr, 0.4);
    EXPECT_LT(w.pcie_rx_link, 0.01);
  }
  {
    const WindowMeans w = means(scenario("{profile: data_starved}"), 60);  // starved, data loading
    SCOPED_TRACE(describe(w));
    EXPECT_GE(w.sm / w.gr, 0.6);
    EXPECT_GE(w.pcie_rx_link, 0.1);
  }
  {
    const WindowMeans w = means(scenario("{profile: no_tensor}"), 60);
    SCOPED_TRACE(describe(w));
    EXPECT_GE(w.gr, 0.9);
    EXPECT_EQ(w.tensor, 0.0);
    EXPECT_GE(w.fp_pipes, 0.5);
  }
  for (const char* profile : {"gemm", "training"}) {  // compute bound
    const WindowMeans w = means(scenario(profile), 60);
    SCOPED_TRACE(std::string(profile) + ": " + describe(w));
    EXPECT_GE(w.gr, 0.8);
    EXPECT_GE(w.sm / w.gr, 0.85);
    EXPECT_GE(w.tensor, 0.3);
  }
  {
    const WindowMeans w = means(scenario("stalled"), 60);  // idle, memory held
    SCOPED_TRACE(describe(w));
    EXPECT_EQ(w.gr, 0.0);
    EXPECT_EQ(w.util, 0.0);
  }
}

// Training stays under the 700 W cap and the thermal slowdown at nominal cooling: the built-in
// scenario and the demo show an H100 fleet that is not throttled unless a scenario says so.
TEST(Calibration, TrainingRunsUnthrottled) {
  Session s("", 0.0);
  ASSERT_TRUE(s.ok());
  const WindowMeans w = window(s, 0, 3600, 3900);
  SCOPED_TRACE(describe(w));
  EXPECT_EQ(w.reasons, 0U);
  EXPECT_GT(w.power_w, 550);
  EXPECT_LT(w.power_w, 660);
  EXPECT_LT(w.temp_c, 78.5);
}

}  // namespace
}  // namespace gpuscope::sim::testing
