// The floor of an NVML reader: once a second, per GPU, the NVML calls of one reading, results
// discarded. The same calls as shared/reference/real-h100/probes/floor.c (which gave 0.46 % of a core,
// 0.53 % with GPM, on the real H100): power, energy, temperature, utilization, memory (v2), SM and
// memory clocks, clock event reasons, compute processes (v3), and with "gpm" a GPM sample and 6 metrics.
// Written against nvml_abi.h and dlopen, so it runs on the simulator and on a real driver alike.
//
// Usage: bare_nvml_loop SECONDS [gpm] [LIBRARY (default libnvidia-ml.so.1)]
// Prints one line: GPUs, CPU seconds (user, sys) over the run, wall per reading, and the process's
// CPU as % of one core.
#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nvml/nvml_abi.h"

namespace {

double seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

template <class F>
F need(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "bare_nvml_loop: %s missing from the library\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

}  // namespace

#define NVML_FN(name) const auto name = need<decltype(&::name)>(lib, #name)

int main(int argc, char** argv) {
  if (argc < 2 || std::atoi(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: bare_nvml_loop SECONDS [gpm] [LIBRARY]\n");
    return 2;
  }
  const int secs = std::atoi(argv[1]);
  const bool gpm = argc > 2 && std::strcmp(argv[2], "gpm") == 0;
  const char* path = argc > 3 ? argv[3] : "libnvidia-ml.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "bare_nvml_loop: %s\n", dlerror());
    return 1;
  }
  NVML_FN(nvmlInit_v2);
  NVML_FN(nvmlShutdown);
  NVML_FN(nvmlDeviceGetCount_v2);
  NVML_FN(nvmlDeviceGetHandleByIndex_v2);
  NVML_FN(nvmlDeviceGetPowerUsage);
  NVML_FN(nvmlDeviceGetTotalEnergyConsumption);
  NVML_FN(nvmlDeviceGetTemperature);
  NVML_FN(nvmlDeviceGetUtilizationRates);
  NVML_FN(nvmlDeviceGetMemoryInfo_v2);
  NVML_FN(nvmlDeviceGetClockInfo);
  NVML_FN(nvmlDeviceGetCurrentClocksEventReasons);
  NVML_FN(nvmlDeviceGetComputeRunningProcesses_v3);
  if (nvmlReturn_t rc = nvmlInit_v2(); rc != NVML_SUCCESS) {
    std::fprintf(stderr, "bare_nvml_loop: nvmlInit_v2 failed (%d)\n", static_cast<int>(rc));
    return 1;
  }
  unsigned n = 0;
  nvmlDeviceGetCount_v2(&n);
  std::vector<nvmlDevice_t> d(n);
  std::vector<nvmlGpmSample_t> a(n), b(n);
  decltype(&::nvmlGpmSampleGet) sample_get = nullptr;
  decltype(&::nvmlGpmMetricsGet) metrics_get = nullptr;
  if (gpm) {
    NVML_FN(nvmlGpmSampleAlloc);
    sample_get = need<decltype(&::nvmlGpmSampleGet)>(lib, "nvmlGpmSampleGet");
    metrics_get = need<decltype(&::nvmlGpmMetricsGet)>(lib, "nvmlGpmMetricsGet");
    for (unsigned i = 0; i < n; ++i) {
      nvmlDeviceGetHandleByIndex_v2(i, &d[i]);
      nvmlGpmSampleAlloc(&a[i]);
      nvmlGpmSampleAlloc(&b[i]);
      sample_get(d[i], a[i]);
    }
  } else {
    for (unsigned i = 0; i < n; ++i) nvmlDeviceGetHandleByIndex_v2(i, &d[i]);
  }
  auto request = std::make_unique<nvmlGpmMetricsGet_t>();
  const auto clock = [] { return std::chrono::steady_clock::now(); };
  std::chrono::duration<double> busy{0};
  int readings = 0;
  const auto end = clock() + std::chrono::seconds(secs);
  while (clock() < end) {
    const auto t0 = clock();
    for (unsigned i = 0; i < n; ++i) {
      nvmlUtilization_t u{};
      nvmlMemory_v2_t m{};
      m.version = nvmlMemory_v2;
      unsigned v = 0;
      unsigned long long e = 0;
      nvmlProcessInfo_t p[64];
      unsigned pc = 64;
      nvmlDeviceGetPowerUsage(d[i], &v);
      nvmlDeviceGetTotalEnergyConsumption(d[i], &e);
      nvmlDeviceGetTemperature(d[i], NVML_TEMPERATURE_GPU, &v);
      nvmlDeviceGetUtilizationRates(d[i], &u);
      nvmlDeviceGetMemoryInfo_v2(d[i], &m);
      nvmlDeviceGetClockInfo(d[i], NVML_CLOCK_SM, &v);
      nvmlDeviceGetClockInfo(d[i], NVML_CLOCK_MEM, &v);
      nvmlDeviceGetCurrentClocksEventReasons(d[i], &e);
      nvmlDeviceGetComputeRunningProcesses_v3(d[i], &pc, p);
      if (gpm) {
        sample_get(d[i], b[i]);
        std::memset(request.get(), 0, sizeof *request);
        request->version = NVML_GPM_METRICS_GET_VERSION;
        request->numMetrics = 6;
        request->sample1 = a[i];
        request->sample2 = b[i];
        const unsigned ids[6] = {2, 3, 5, 10, 20, 21};  // floor.c's: SM util, occupancy, tensor, DRAM, PCIe
        for (unsigned k = 0; k < 6; ++k) request->metrics[k].metricId = ids[k];
        metrics_get(request.get());
        std::swap(a[i], b[i]);
      }
    }
    busy += clock() - t0;
    ++readings;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  std::printf("bare_nvml_loop %s: gpus %u, readings %d, cpu %.3f s (user %.3f sys %.3f) over %d s, "
              "wall per reading %.2f ms, %.3f %% of one core, maxrss %ld KiB\n",
              gpm ? "gpm" : "classic", n, readings, cpu, seconds(ru.ru_utime), seconds(ru.ru_stime), secs,
              readings > 0 ? busy.count() / readings * 1e3 : 0.0, cpu / secs * 100.0, ru.ru_maxrss);
  nvmlShutdown();
  return 0;
}
