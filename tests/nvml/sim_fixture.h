// Helpers for backend tests: open NvmlBackend on the built simulator with a scenario given inline.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "nvml/nvml_backend.h"

namespace gpuscope::nvml::testing {

// Writes `yaml` to a temporary scenario file (removed with the object).
class ScenarioFile {
 public:
  explicit ScenarioFile(const std::string& yaml) {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("gpuscope-test-" + std::to_string(getpid()) + "-" + std::to_string(n++) + ".yaml");
    std::ofstream(path_) << yaml;
  }
  ~ScenarioFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Opens the simulator with `options` (what to read; where the library is and which scenario are set
// here): `scenario` ("" = built-in default), frozen at `sim_seconds` after the scenario start.
inline std::unique_ptr<NvmlBackend> open_sim_with(BackendOptions o, const std::string& scenario,
                                                  double sim_seconds = 600, bool legacy = false) {
  setenv("GPUSCOPE_SIM_TIME", std::to_string(sim_seconds).c_str(), 1);
  if (scenario.empty()) unsetenv("GPUSCOPE_SIM_SCENARIO");
  o.simulate = true;
  o.library_path = legacy ? GPUSCOPE_SIM_LEGACY_LIB : GPUSCOPE_SIM_LIB;
  o.scenario = scenario;
  auto b = NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  if (!b) {
    ADD_FAILURE() << b.error().message;
    return nullptr;
  }
  return std::move(*b);
}

// The same with the default reading (`legacy` = the old-driver build).
inline std::unique_ptr<NvmlBackend> open_sim(const std::string& scenario, double sim_seconds = 600,
                                             bool legacy = false, bool watch_events = false) {
  BackendOptions o;
  o.watch_events = watch_events;
  return open_sim_with(o, scenario, sim_seconds, legacy);
}

// How many times the simulator (the full build, already loaded by a backend) has answered `function`:
// tests assert what a reading calls, not how long it took.
inline unsigned long long sim_calls(const char* function) {
  void* handle = dlopen(GPUSCOPE_SIM_LIB, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    ADD_FAILURE() << "the simulator is not loaded";
    return 0;
  }
  auto* get = reinterpret_cast<decltype(&::gpuscopeSimGetCallCount)>(dlsym(handle, "gpuscopeSimGetCallCount"));
  unsigned long long n = 0;
  if (get == nullptr || get(function, &n) != NVML_SUCCESS) ADD_FAILURE() << "gpuscopeSimGetCallCount failed";
  dlclose(handle);
  return n;
}

}  // namespace gpuscope::nvml::testing
