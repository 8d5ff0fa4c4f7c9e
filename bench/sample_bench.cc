// One full sample of 8 simulated H100s (all fields + processes) through NvmlBackend, against the
// floor: the same NVML calls made by a bare loop that keeps nothing.
#include <chrono>
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "nvml/nvml_backend.h"
#include "nvml/nvml_library.h"

namespace {

using gpuscope::nvml::BackendOptions;
using gpuscope::nvml::NvmlBackend;
using gpuscope::nvml::NvmlLibrary;

BackendOptions sim_options() {
  BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  o.scenario = "";  // the simulator's built-in default: 8× H100 in a training job
  return o;
}

void BM_BackendSample(benchmark::State& state) {
  auto backend = NvmlBackend::open(sim_options());
  if (!backend) {
    state.SkipWithError(backend.error().message.c_str());
    return;
  }
  (*backend)->sample();  // the first reading waits for the first GPM window
  for (auto _ : state) {
    auto snap = (*backend)->sample();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["gpus"] = static_cast<double>((*backend)->gpus().size());
}
BENCHMARK(BM_BackendSample)->Unit(benchmark::kMicrosecond);

// A reading as `serve` makes it: no PCIe throughput (blocks ~20 ms a call on a real driver), the
// counters and rarely changing gauges every 10 s, process utilization every 5 s (of the simulator's
// clock, which runs in real time here: mostly carried over). With
// GPUSCOPE_SIM_COST_PROFILE=h100-580 its CPU time is what the agent's readings cost a real host.
void BM_BackendSampleAgentSchedule(benchmark::State& state) {
  auto o = sim_options();
  o.read_pcie_throughput = false;
  o.counter_interval = std::chrono::seconds(10);
  o.process_utilization_interval = std::chrono::seconds(5);
  auto backend = NvmlBackend::open(o);
  if (!backend) {
    state.SkipWithError(backend.error().message.c_str());
    return;
  }
  (*backend)->sample();
  for (auto _ : state) {
    auto snap = (*backend)->sample();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["gpus"] = static_cast<double>((*backend)->gpus().size());
}
BENCHMARK(BM_BackendSampleAgentSchedule)->Unit(benchmark::kMicrosecond);

// The floor: the NVML calls one sample makes, results discarded.
void BM_BareNvmlLoop(benchmark::State& state) {
  auto lib_or = NvmlLibrary::open({GPUSCOPE_SIM_LIB});
  if (!lib_or) {
    state.SkipWithError(lib_or.error().message.c_str());
    return;
  }
  auto& L = **lib_or;
  L.nvmlInit_v2();
  unsigned count = 0;
  L.nvmlDeviceGetCount_v2(&count);
  std::vector<nvmlDevice_t> devs(count);
  std::vector<nvmlGpmSample_t> a(count), b(count);
  for (unsigned i = 0; i < count; ++i) {
    L.nvmlDeviceGetHandleByIndex_v2(i, &devs[i]);
    L.nvmlGpmSampleAlloc(&a[i]);
    L.nvmlGpmSampleAlloc(&b[i]);
    L.nvmlGpmSampleGet(devs[i], a[i]);
  }
  static nvmlGpmMetricsGet_t mg;
  std::vector<nvmlProcessInfo_t> procs(64);
  std::vector<nvmlProcessUtilizationSample_t> util(64);
  for (auto _ : state) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t d = devs[i];
      unsigned u = 0;
      unsigned long long ull = 0;
      for (int c : {NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_CLOCK_GRAPHICS, NVML_CLOCK_VIDEO}) L.nvmlDeviceGetClockInfo(d, c, &u);
      for (int c : {NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_CLOCK_GRAPHICS}) L.nvmlDeviceGetMaxClockInfo(d, c, &u);
      L.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u);
      L.nvmlDeviceGetTemperatureThreshold(d, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &u);
      L.nvmlDeviceGetTemperatureThreshold(d, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &u);
      L.nvmlDeviceGetPowerUsage(d, &u);
      L.nvmlDeviceGetPowerManagementLimit(d, &u);
      L.nvmlDeviceGetEnforcedPowerLimit(d, &u);
      L.nvmlDeviceGetPcieReplayCounter(d, &u);
      L.nvmlDeviceGetFanSpeed(d, &u);
      L.nvmlDeviceGetCurrPcieLinkGeneration(d, &u);
      L.nvmlDeviceGetMaxPcieLinkGeneration(d, &u);
      L.nvmlDeviceGetCurrPcieLinkWidth(d, &u);
      L.nvmlDeviceGetMaxPcieLinkWidth(d, &u);
      L.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &u);
      L.nvmlDeviceGetPcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &u);
      L.nvmlDeviceGetTotalEnergyConsumption(d, &ull);
      nvmlUtilization_t ut;
      L.nvmlDeviceGetUtilizationRates(d, &ut);
      unsigned period = 0;
      L.nvmlDeviceGetEncoderUtilization(d, &u, &period);
      L.nvmlDeviceGetDecoderUtilization(d, &u, &period);
      int p = 0;
      L.nvmlDeviceGetPerformanceState(d, &p);
      L.nvmlDeviceGetCurrentClocksEventReasons(d, &ull);
      nvmlMemory_v2_t m{};
      m.version = nvmlMemory_v2;
      L.nvmlDeviceGetMemoryInfo_v2(d, &m);
      nvmlBAR1Memory_t bar{};
      L.nvmlDeviceGetBAR1MemoryInfo(d, &bar);
      for (int t : {0, 1}) {
        for (int c : {0, 1}) L.nvmlDeviceGetTotalEccErrors(d, t, c, &ull);
      }
      unsigned n = 0, x = 0, y = 0, z = 0;
      L.nvmlDeviceGetRetiredPages(d, 0, &n, nullptr);
      L.nvmlDeviceGetRetiredPages(d, 1, &n, nullptr);
      L.nvmlDeviceGetRetiredPagesPendingStatus(d, &p);
      L.nvmlDeviceGetRemappedRows(d, &n, &x, &y, &z);
      nvmlViolationTime_t v;
      for (int pol = 0; pol < NVML_PERF_POLICY_COUNT; ++pol) L.nvmlDeviceGetViolationStatus(d, pol, &v);
      nvmlFieldValue_t fv[3] = {};
      fv[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
      fv[1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
      fv[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
      L.nvmlDeviceGetFieldValues(d, 3, fv);
      L.nvmlGpmSampleGet(d, b[i]);
      mg.version = NVML_GPM_METRICS_GET_VERSION;
      mg.numMetrics = 12;
      mg.sample1 = a[i];
      mg.sample2 = b[i];
      const unsigned ids[] = {1, 2, 3, 5, 10, 11, 12, 13, 20, 21, 60, 61};
      for (unsigned k = 0; k < 12; ++k) mg.metrics[k].metricId = ids[k];
      L.nvmlGpmMetricsGet(&mg);
      std::swap(a[i], b[i]);
      unsigned pc = static_cast<unsigned>(procs.size());
      L.nvmlDeviceGetComputeRunningProcesses_v3(d, &pc, procs.data());
      pc = static_cast<unsigned>(procs.size());
      L.nvmlDeviceGetGraphicsRunningProcesses_v3(d, &pc, procs.data());
      unsigned uc = static_cast<unsigned>(util.size());
      L.nvmlDeviceGetProcessUtilization(d, util.data(), &uc, 0);
      benchmark::DoNotOptimize(u);
    }
  }
  for (unsigned i = 0; i < count; ++i) {
    L.nvmlGpmSampleFree(a[i]);
    L.nvmlGpmSampleFree(b[i]);
  }
  L.nvmlShutdown();
  state.counters["gpus"] = count;
}
BENCHMARK(BM_BareNvmlLoop)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
