#include "sim_library.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace gpuscope::sim::testing {

SimLibrary::SimLibrary(const char* path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
  if (handle_ == nullptr) ADD_FAILURE() << "dlopen " << path << ": " << dlerror();
}

SimLibrary& SimLibrary::main() {
  static SimLibrary* lib = new SimLibrary(GPUSCOPE_SIM_LIB);
  return *lib;
}

SimLibrary& SimLibrary::legacy() {
  static SimLibrary* lib = new SimLibrary(GPUSCOPE_SIM_LEGACY_LIB);
  return *lib;
}

void* SimLibrary::symbol(const char* name) {
  if (handle_ == nullptr) return nullptr;
  const std::lock_guard lock(mutex_);
  const auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  void* sym = dlsym(handle_, name);
  cache_.emplace(name, sym);
  return sym;
}

void* SimLibrary::require(const char* name) {
  void* sym = symbol(name);
  if (sym == nullptr) ADD_FAILURE() << "missing symbol " << name;
  return sym;
}

std::string source_dir() { return GPUSCOPE_SOURCE_DIR; }

std::string scenario_path(std::string_view name) {
  return source_dir() + "/scenarios/" + std::string(name) + ".yaml";
}

std::string write_temp_file(std::string_view name, std::string_view contents) {
  static const std::string dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "gpuscope-sim-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    return pattern;
  }();
  const std::string path = dir + "/" + std::string(name);
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

Session::Session(std::string_view scenario, std::optional<double> t, SimLibrary& lib) : lib_(lib) {
  if (scenario.empty()) {
    path_.clear();
  } else if (scenario.find('\n') != std::string_view::npos) {
    static int counter = 0;
    path_ = write_temp_file("scenario-" + std::to_string(++counter) + ".yaml", scenario);
  } else if (scenario.find('/') != std::string_view::npos) {
    path_ = std::string(scenario);
  } else {
    path_ = scenario_path(scenario);
  }
  if (path_.empty()) {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
  } else {
    setenv("GPUSCOPE_SIM_SCENARIO", path_.c_str(), 1);
  }
  if (t) {
    setenv("GPUSCOPE_SIM_TIME", std::to_string(*t).c_str(), 1);
  } else {
    unsetenv("GPUSCOPE_SIM_TIME");
  }
  init_result_ = NVML_IN(lib_, nvmlInit_v2)();
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  unsetenv("GPUSCOPE_SIM_TIME");
  if (ok() && t) {
    unsigned long long now = 0;
    EXPECT_EQ(NVML_IN(lib_, gpuscopeSimGetTime)(&now), NVML_SUCCESS);
    epoch_ns_ = static_cast<std::int64_t>(now) - static_cast<std::int64_t>(std::llround(*t * 1e9));
  }
}

Session::~Session() {
  if (ok()) {
    EXPECT_EQ(NVML_IN(lib_, nvmlShutdown)(), NVML_SUCCESS);
  }
}

void Session::at(double t) {
  const auto ns = static_cast<unsigned long long>(epoch_ns_ + static_cast<std::int64_t>(std::llround(t * 1e9)));
  ASSERT_EQ(NVML_IN(lib_, gpuscopeSimSetTime)(ns), NVML_SUCCESS);
}

unsigned Session::count() {
  unsigned n = 0;
  EXPECT_EQ(NVML_IN(lib_, nvmlDeviceGetCount_v2)(&n), NVML_SUCCESS);
  return n;
}

nvmlDevice_t Session::gpu(unsigned index) {
  nvmlDevice_t dev = nullptr;
  EXPECT_EQ(NVML_IN(lib_, nvmlDeviceGetHandleByIndex_v2)(index, &dev), NVML_SUCCESS);
  return dev;
}

GpuReading read_gpu(nvmlDevice_t dev) {
  GpuReading r;
  EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(dev, &r.power_mw), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetEnforcedPowerLimit)(dev, &r.limit_mw), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetTemperature)(dev, NVML_TEMPERATURE_GPU, &r.temp_c), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetClockInfo)(dev, NVML_CLOCK_SM, &r.sm_mhz), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetClockInfo)(dev, NVML_CLOCK_GRAPHICS, &r.gr_mhz), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetClockInfo)(dev, NVML_CLOCK_MEM, &r.mem_mhz), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetClockInfo)(dev, NVML_CLOCK_VIDEO, &r.video_mhz), NVML_SUCCESS);
  nvmlUtilization_t util{};
  EXPECT_EQ(NVML(nvmlDeviceGetUtilizationRates)(dev, &util), NVML_SUCCESS);
  r.util_gpu = util.gpu;
  r.util_mem = util.memory;
  EXPECT_EQ(NVML(nvmlDeviceGetPcieThroughput)(dev, NVML_PCIE_UTIL_TX_BYTES, &r.pcie_tx_kbps), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetPcieThroughput)(dev, NVML_PCIE_UTIL_RX_BYTES, &r.pcie_rx_kbps), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetTotalEnergyConsumption)(dev, &r.energy_mj), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlDeviceGetCurrentClocksEventReasons)(dev, &r.reasons), NVML_SUCCESS);
  for (int p = 0; p < NVML_PERF_POLICY_COUNT; ++p) {
    nvmlViolationTime_t v{};
    EXPECT_EQ(NVML(nvmlDeviceGetViolationStatus)(dev, p, &v), NVML_SUCCESS);
    r.violation_ns[p] = v.violationTime;
  }
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo)(dev, &r.mem_v1), NVML_SUCCESS);
  r.mem_v2.version = nvmlMemory_v2;
  EXPECT_EQ(NVML(nvmlDeviceGetMemoryInfo_v2)(dev, &r.mem_v2), NVML_SUCCESS);
  return r;
}

std::vector<nvmlProcessInfo_t> processes(nvmlDevice_t dev) {
  std::vector<nvmlProcessInfo_t> out;
  for (auto f : {NVML(nvmlDeviceGetComputeRunningProcesses_v3), NVML(nvmlDeviceGetGraphicsRunningProcesses_v3)}) {
    unsigned n = 0;
    nvmlReturn_t r = f(dev, &n, nullptr);
    if (r == NVML_SUCCESS) continue;
    EXPECT_EQ(r, NVML_ERROR_INSUFFICIENT_SIZE);
    std::vector<nvmlProcessInfo_t> part(n);
    EXPECT_EQ(f(dev, &n, part.data()), NVML_SUCCESS);
    part.resize(n);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::unordered_map<unsigned, double> gpm_between(nvmlGpmSample_t first, nvmlGpmSample_t second) {
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->sample1 = first;
  get->sample2 = second;
  const unsigned ids[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 20, 21, 60, 61};
  get->numMetrics = std::size(ids);
  for (unsigned i = 0; i < get->numMetrics; ++i) get->metrics[i].metricId = ids[i];
  std::unordered_map<unsigned, double> out;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_SUCCESS);
  for (unsigned i = 0; i < get->numMetrics; ++i) {
    if (get->metrics[i].nvmlReturn == NVML_SUCCESS) out[ids[i]] = get->metrics[i].value;
  }
  return out;
}

std::unordered_map<unsigned, double> gpm_now(nvmlDevice_t dev) {
  nvmlGpmSample_t s = nullptr;
  EXPECT_EQ(NVML(nvmlGpmSampleAlloc)(&s), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleGet)(dev, s), NVML_SUCCESS);
  auto out = gpm_between(s, s);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(s), NVML_SUCCESS);
  return out;
}

}  // namespace gpuscope::sim::testing
