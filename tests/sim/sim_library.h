// Test access to the simulated NVML: dlopen()s the built library (main or legacy build) and calls it
// through nvml_abi.h's types, as the backend and other NVML clients do.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nvml/nvml_abi.h"

namespace gpuscope::sim::testing {

class SimLibrary {
 public:
  static SimLibrary& main();    // GPUSCOPE_SIM_LIB
  static SimLibrary& legacy();  // GPUSCOPE_SIM_LEGACY_LIB

  void* symbol(const char* name);  // nullptr when the library lacks it

  // The function `name` as type F, e.g. fn<decltype(&nvmlInit_v2)>("nvmlInit_v2"); fails the test
  // (and returns nullptr) when missing.
  template <class F>
  F fn(const char* name) {
    return reinterpret_cast<F>(require(name));
  }

 private:
  explicit SimLibrary(const char* path);
  void* require(const char* name);

  void* handle_ = nullptr;
  std::mutex mutex_;  // tests call from several threads
  std::unordered_map<std::string, void*> cache_;
};

// NVML(nvmlDeviceGetPowerUsage)(dev, &mw): a function of the main build, typed by the header.
#define NVML(name) (::gpuscope::sim::testing::SimLibrary::main().fn<decltype(&::name)>(#name))
#define NVML_IN(lib, name) ((lib).fn<decltype(&::name)>(#name))

std::string source_dir();
std::string scenario_path(std::string_view name);  // "demo" -> <repo>/scenarios/demo.yaml
// Writes YAML to a fresh file in a temporary directory and returns its path.
std::string write_temp_file(std::string_view name, std::string_view contents);

// One nvmlInit .. nvmlShutdown over a scenario. `scenario` is a name in scenarios/, a path (has a
// '/'), YAML text (has a newline), or empty for the built-in scenario. `t`: GPUSCOPE_SIM_TIME
// (virtual clock frozen there), or nullopt for the real clock.
class Session {
 public:
  explicit Session(std::string_view scenario, std::optional<double> t = 0.0,
                   SimLibrary& lib = SimLibrary::main());
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  nvmlReturn_t init_result() const { return init_result_; }
  bool ok() const { return init_result_ == NVML_SUCCESS; }
  // Freezes the clock at scenario time t (seconds since the scenario's start).
  void at(double t);
  std::int64_t epoch_ns() const { return epoch_ns_; }
  unsigned count();
  nvmlDevice_t gpu(unsigned index);
  std::string path() const { return path_; }

 private:
  SimLibrary& lib_;
  std::string path_;
  nvmlReturn_t init_result_;
  std::int64_t epoch_ns_ = 0;
};

// Everything a sampler reads from one GPU at one instant, through the C ABI.
struct GpuReading {
  unsigned power_mw = 0, limit_mw = 0, temp_c = 0;
  unsigned sm_mhz = 0, gr_mhz = 0, mem_mhz = 0, video_mhz = 0;
  unsigned util_gpu = 0, util_mem = 0;
  unsigned pcie_tx_kbps = 0, pcie_rx_kbps = 0;
  unsigned long long energy_mj = 0, reasons = 0;
  unsigned long long violation_ns[NVML_PERF_POLICY_COUNT] = {};
  nvmlMemory_t mem_v1{};
  nvmlMemory_v2_t mem_v2{};
};
GpuReading read_gpu(nvmlDevice_t dev);

// Compute + graphics processes (the _v3 functions).
std::vector<nvmlProcessInfo_t> processes(nvmlDevice_t dev);

// GPM metrics (id -> value) between two samples taken now and by the caller before; an unsupported
// metric is absent. `previous` may equal the sample taken now for the instantaneous values.
std::unordered_map<unsigned, double> gpm_between(nvmlGpmSample_t first, nvmlGpmSample_t second);
// Takes a GPM sample of dev into `sample` and returns the instantaneous metrics.
std::unordered_map<unsigned, double> gpm_now(nvmlDevice_t dev);

inline constexpr std::int64_t kNsPerS = 1'000'000'000;

}  // namespace gpuscope::sim::testing
