// Scenario files: every shipped one loads, the built-in default, the clock, quantities, and bad
// files failing init with one line naming the file, the line and the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <thread>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

TEST(Scenarios, EveryShippedScenarioLoads) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    Session s(entry.path().string());
    const nvmlReturn_t expected =
        entry.path().stem() == "driver_not_loaded" ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
    EXPECT_EQ(s.init_result(), expected) << entry.path() << ": " << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
    if (s.ok()) {
      EXPECT_GE(s.count(), 1U);
    }
  }
  EXPECT_GE(files, 22);
}

TEST(Scenarios, EveryShippedScenarioStartsWithAComment) {
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::string first;
    std::getline(in, first);
    EXPECT_TRUE(first.starts_with("# ")) << entry.path();
  }
}

TEST(Scenarios, BuiltInDefaultIsAnEightGpuH100TrainingNode) {
  Session s("", 60.0);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s.count(), 8U);
  std::set<unsigned> pids;
  for (unsigned i = 0; i < 8; ++i) {
    char name[96];
    ASSERT_EQ(NVML(nvmlDeviceGetName)(s.gpu(i), name, sizeof name), NVML_SUCCESS);
    EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
    const auto procs = processes(s.gpu(i));
    ASSERT_EQ(procs.size(), 1U);
    pids.insert(procs[0].pid);
    ASSERT_EQ(NVML(gpuscopeSimGetProcessName)(procs[0].pid, name, sizeof name), NVML_SUCCESS);
    EXPECT_STREQ(name, "python train.py");
    const GpuReading r = read_gpu(s.gpu(i));
    EXPECT_GT(r.mem_v2.used, r.mem_v2.total * 8 / 10);  // most of the memory
    EXPECT_GT(r.util_gpu, 90U);
  }
  EXPECT_EQ(pids.size(), 8U);
  char host[64];
  ASSERT_EQ(NVML(gpuscopeSimGetHostname)(host, sizeof host), NVML_SUCCESS);
  EXPECT_STREQ(host, "dgx-h100-sim-01");
}

TEST(Clock, VirtualEpochIsTheScenarioStartOr2026) {
  {
    Session s("golden", 0.0);  // start: 2026-01-01T00:00:00Z
    unsigned long long ns = 0;
    ASSERT_EQ(NVML(gpuscopeSimGetTime)(&ns), NVML_SUCCESS);
    EXPECT_EQ(ns, 1767225600ULL * kNsPerS);
  }
  {
    Session s("gpus: {count: 1, model: NVIDIA L4}\nstart: 2025-06-30T12:00:00.5+02:00\n", 10.0);
    unsigned long long ns = 0;
    ASSERT_EQ(NVML(gpuscopeSimGetTime)(&ns), NVML_SUCCESS);
    EXPECT_EQ(ns, 1751277600ULL * kNsPerS + 500'000'000ULL + 10 * kNsPerS);
  }
  Session s("idle", 90.0);  // no start
  unsigned long long ns = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&ns), NVML_SUCCESS);
  EXPECT_EQ(ns, 1767225600ULL * kNsPerS + 90 * kNsPerS);
  ASSERT_EQ(NVML(gpuscopeSimSetTime)(1767225600ULL * kNsPerS + 3600 * kNsPerS), NVML_SUCCESS);
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&ns), NVML_SUCCESS);
  EXPECT_EQ(ns, 1767225600ULL * kNsPerS + 3600 * kNsPerS);
  nvmlViolationTime_t v{};
  ASSERT_EQ(NVML(nvmlDeviceGetViolationStatus)(s.gpu(0), NVML_PERF_POLICY_LOW_UTILIZATION, &v), NVML_SUCCESS);
  EXPECT_EQ(v.violationTime, 3600ULL * kNsPerS);  // idle since the start, t = 1 h
  EXPECT_EQ(v.referenceTime, ns / 1000);
}

TEST(Clock, RealClockStartsAtInitAndRuns) {
  const auto wall = [] {
    return static_cast<unsigned long long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
  };
  const unsigned long long before = wall();
  Session s("idle", std::nullopt);
  ASSERT_TRUE(s.ok());
  unsigned long long first = 0, second = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&first), NVML_SUCCESS);
  EXPECT_GE(first + 1'000'000, before);
  EXPECT_LE(first, wall() + 1'000'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&second), NVML_SUCCESS);
  EXPECT_GE(second - first, 19'000'000ULL);
  nvmlViolationTime_t v{};
  ASSERT_EQ(NVML(nvmlDeviceGetViolationStatus)(s.gpu(0), NVML_PERF_POLICY_LOW_UTILIZATION, &v), NVML_SUCCESS);
  EXPECT_GE(v.violationTime, 19'000'000ULL);  // idle for as long as the library has been loaded
  EXPECT_LT(v.violationTime, 5ULL * kNsPerS);
}

// A client that takes over a running real clock (gpuscope's virtual-clock runs) goes on from the
// scenario time reached, not from the far-away default epoch.
TEST(Clock, TakingOverARealClockKeepsItsTimeline) {
  Session s("idle", std::nullopt);
  ASSERT_TRUE(s.ok());
  unsigned long long now = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&now), NVML_SUCCESS);
  ASSERT_EQ(NVML(gpuscopeSimSetTime)(now + 60 * kNsPerS), NVML_SUCCESS);
  unsigned long long later = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&later), NVML_SUCCESS);
  EXPECT_EQ(later, now + 60 * kNsPerS);
  nvmlViolationTime_t v{};
  ASSERT_EQ(NVML(nvmlDeviceGetViolationStatus)(s.gpu(0), NVML_PERF_POLICY_LOW_UTILIZATION, &v), NVML_SUCCESS);
  EXPECT_GE(v.violationTime, 60ULL * kNsPerS);  // idle since init: about a minute, not ~a year
  EXPECT_LT(v.violationTime, 65ULL * kNsPerS);
}

TEST(Quantities, DurationsSizesAndRates) {
  Session s(R"(gpus: {count: 1, model: NVIDIA H100 80GB HBM3}
processes:
  - {pid: 10, name: a, memory: 512MiB, start: 1h30m}
  - {pid: 11, name: b, memory: 1.5GiB, start: 500ms, end: 90s}
  - {pid: 12, name: c, memory: 1000MB, leak: 1GiB/h}
  - {pid: 13, name: d, memory: 4096, start: 2d}
)",
            0.25);
  ASSERT_TRUE(s.ok());
  const auto mem = [&](double t) {
    s.at(t);
    std::map<unsigned, unsigned long long> out;
    for (const auto& p : processes(s.gpu(0))) out[p.pid] = p.usedGpuMemory;
    return out;
  };
  auto m = mem(0.25);
  EXPECT_EQ(m, (std::map<unsigned, unsigned long long>{{12, 953ULL << 20}}));  // 1e9 B, whole MiB
  m = mem(1.0);
  EXPECT_EQ(m.at(11), 1536ULL << 20);
  m = mem(3600.0);
  EXPECT_FALSE(m.contains(11));
  EXPECT_EQ(m.at(12), (953ULL + 1024) << 20);
  EXPECT_FALSE(m.contains(10));
  m = mem(5400.0);
  EXPECT_EQ(m.at(10), 512ULL << 20);
  EXPECT_FALSE(m.contains(13));
  m = mem(2 * 86400.0);
  EXPECT_EQ(m.at(13), 0U);  // 4096 bytes round down to whole MiB
}

// Loads `yaml` as a scenario and returns init's result, the error string and what went to stderr.
struct BadLoad {
  nvmlReturn_t result;
  std::string error_string;
  std::string stderr_text;
  std::string path;
};

BadLoad load_bad(std::string_view yaml) {
  static int counter = 0;
  BadLoad out;
  out.path = write_temp_file("bad-" + std::to_string(++counter) + ".yaml", yaml);
  const std::string capture = write_temp_file("stderr-" + std::to_string(counter) + ".txt", "");
  std::fflush(stderr);
  const int saved = dup(2);
  FILE* f = std::fopen(capture.c_str(), "w");
  dup2(fileno(f), 2);
  {
    Session s(out.path);
    out.result = s.init_result();
    out.error_string = NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::fclose(f);
  std::ifstream in(capture);
  std::ostringstream text;
  text << in.rdbuf();
  out.stderr_text = text.str();
  return out;
}

struct BadCase {
  const char* yaml;
  int line;
  const char* message;
};

constexpr const char* kGpus = "gpus:\n  count: 2\n  model: NVIDIA H100 80GB HBM3\n";

TEST(BadScenarios, InitFailsWithFileLineAndReason) {
  const std::string g = kGpus;
  const std::vector<std::pair<std::string, BadCase>> cases = {
      {g + "workload:\n  profile: trainig\n", {"", 5, "unknown profile 'trainig' (known: idle, training,"}},
      {"seed: 1\ngpus:\n  count: 2\n  modle: x\n", {"", 4, "unknown key 'modle' in gpus"}},
      {"gpus:\n  count: 2\n  model: NVIDIA H101\n", {"", 3, "unknown model 'NVIDIA H101'"}},
      {g + "events:\n  - at: 5 minutes\n    xid: 79\n", {"", 5, "bad duration '5 minutes'"}},
      {g + "events:\n  - at: 5m\n    gpu: 2\n    xid: 79\n", {"", 6, "gpu 2 out of range"}},
      {g + "faults:\n  - type: error\n    function: nvmlDeviceGetPowerUsagee\n    error: NVML_ERROR_UNKNOWN\n",
       {"", 6, "unknown function 'nvmlDeviceGetPowerUsagee'"}},
      {g + "faults:\n  - type: error\n    function: \"*\"\n    error: NVML_ERROR_UNKNWON\n",
       {"", 7, "unknown error 'NVML_ERROR_UNKNWON'"}},
      {g + "processes:\n  - pid: 1\n    memory: lots\n", {"", 6, "bad size 'lots'"}},
      {g + "processes:\n  - pid: 1\n    memory: 1GiB\n    leak: 5MiB\n", {"", 7, "bad rate '5MiB'"}},
      {g + "processes:\n  - pid: 1\n    memory: 100GiB\n", {"", 6, "does not fit gpu 0"}},
      {g + "processes:\n  - pid: 1\n    memory: 1GiB\n    user: \"a b\"\n", {"", 7, "a process user must be"}},
      {g + "processes:\n  - pid: 1\n    memory: 1GiB\n    user: -x\n", {"", 7, "a process user must be"}},
      {g + "workload:\n  timeline:\n    - at: 1m\n      profile: idle\n      gpus: [0, 7]\n",
       {"", 8, "gpu 7 out of range"}},
      {g + "events:\n  - at: 1m\n    xid: 79\n    ecc: single_bit\n", {"", 5, "exactly one of"}},
      {g + "events:\n  - at: 1m\n    power_cap: 50W\n", {"", 6, "power_cap 50W outside"}},
      {"seed: [1, 2\ngpus: {count: 1\n", {"", 2, "YAML"}},
      {"gpus:\n  count: 0\n  model: NVIDIA L4\n", {"", 2, "count 0 out of range"}},
      {"seed: 1\n", {"", 1, "needs 'gpus'"}},
      {"", {"", 1, "empty scenario"}},
      // yaml-cpp 0.7 says "bad file" for a document nested past its parser's limit.
      {"seed: " + std::string(10000, '[') + "\n", {"", 2, "YAML: nested too deeply"}},
      {"- just\n- a list\n", {"", 1, "must be a mapping"}},
      {"start: yesterday\ngpus: {count: 1, model: NVIDIA L4}\n", {"", 1, "bad time 'yesterday'"}},
      {"start: 1900-01-01T00:00:00Z\ngpus: {count: 1, model: NVIDIA L4}\n", {"", 1, "between 1970 and 2200"}},
      {"start: 2262-04-11T23:47:16Z\ngpus: {count: 1, model: NVIDIA L4}\n", {"", 1, "between 1970 and 2200"}},
      {"gpus:\n  count: 1\n  model: Tesla T4\nevents:\n  - at: 1m\n    row_remap: pending\n",
       {"", 6, "has no row remapping"}},
      {g + "workload:\n  profile: {profile: data_starved, source: disk}\n",
       {"", 5, "unknown source 'disk' (known: pcie, cpu)"}},
      {g + "workload:\n  profile: {profile: training, source: cpu}\n", {"", 5, "source applies to the data_starved"}},
      {g + "fabric:\n  link_layer: OmniPath\n  ports: [{device: hfi1_0}]\n", {"", 5, "unknown link_layer 'OmniPath'"}},
      {g + "fabric:\n  rate: 400G\n  ports: [{device: mlx5_0}]\n", {"", 5, "rate must read as sysfs writes it"}},
      {g + "fabric:\n  ports:\n    - {device: mlx5_0, gpus: [0]}\n    - {device: mlx5_1, gpus: [0, 1]}\n",
       {"", 7, "gpu 0 is behind two PCIe switches"}},
      {g + "fabric:\n  ports:\n    - device: mlx5_0\n      timeline:\n        - {at: 5m}\n        - {at: 1m}\n",
       {"", 9, "timeline must go forward"}},
      {g + "fabric:\n  ports:\n    - {device: MLX 0}\n", {"", 6, "device must be 1-32 lowercase"}},
      {g + "fabric:\n  ports:\n    - {device: mlx5_0, symbol_errors: many}\n", {"", 6, "symbol_errors must be a number"}},
      {g + "fabric:\n  transmit: 22GB\n  ports: [{device: mlx5_0}]\n", {"", 5, "bad rate '22GB'"}},
  };
  for (const auto& [yaml, expected] : cases) {
    SCOPED_TRACE(yaml);
    const BadLoad r = load_bad(yaml);
    EXPECT_EQ(r.result, NVML_ERROR_UNKNOWN);
    const std::string where = r.path + ":" + std::to_string(expected.line) + ": ";
    EXPECT_TRUE(r.error_string.starts_with("Unknown Error: " + where)) << r.error_string;
    EXPECT_NE(r.error_string.find(expected.message), std::string::npos) << r.error_string;
    // Exactly one line on stderr, the same message.
    EXPECT_EQ(r.stderr_text, "gpuscope-sim: " + r.error_string.substr(std::string("Unknown Error: ").size()) + "\n");
  }
  // The next successful init clears the message.
  Session good("idle");
  ASSERT_TRUE(good.ok());
  EXPECT_STREQ(NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN), "Unknown Error");
}

// A client of NVML's API sees only nvmlInit's code (and nvmlErrorString); one that knows the simulator
// asks whose mistake it was: the scenario's, a GPUSCOPE_SIM_* variable's, or none (the driver's).
TEST(BadScenarios, InitFailureTellsScenarioFromEnvironmentFromDriver) {
  unsigned source = 0;
  char message[512] = {};
  const auto failure = [&] { return NVML(gpuscopeSimGetInitFailure)(&source, message, sizeof message); };
  {
    Session bad("gpus:\n  count: abc\n");
    EXPECT_EQ(bad.init_result(), NVML_ERROR_UNKNOWN);
    ASSERT_EQ(failure(), NVML_SUCCESS);
    EXPECT_EQ(source, GPUSCOPE_SIM_INIT_FAILURE_SCENARIO);
    EXPECT_EQ(std::string(message), bad.path() + ":2: count must be a whole number, not 'abc'");
    char small[8];
    EXPECT_EQ(NVML(gpuscopeSimGetInitFailure)(&source, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT_EQ(NVML(gpuscopeSimGetInitFailure)(nullptr, message, sizeof message), NVML_ERROR_INVALID_ARGUMENT);
  }
  setenv("GPUSCOPE_SIM_SCENARIO", scenario_path("idle").c_str(), 1);
  setenv("GPUSCOPE_SIM_SEED", "x", 1);
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  unsetenv("GPUSCOPE_SIM_SEED");
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  ASSERT_EQ(failure(), NVML_SUCCESS);
  EXPECT_EQ(source, GPUSCOPE_SIM_INIT_FAILURE_ENVIRONMENT);
  EXPECT_EQ(std::string(message), "GPUSCOPE_SIM_SEED: 'x' is not a seed");
  {
    Session no_driver("driver_not_loaded");
    EXPECT_EQ(no_driver.init_result(), NVML_ERROR_DRIVER_NOT_LOADED);
    EXPECT_EQ(failure(), NVML_ERROR_NOT_FOUND);
  }
  Session good("idle");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(failure(), NVML_ERROR_NOT_FOUND);
}

TEST(BadScenarios, MissingFileAndBadTimeVariable) {
  const BadLoad missing = [] {
    BadLoad out;
    Session s("/nonexistent/scenario.yaml");
    out.result = s.init_result();
    out.error_string = NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
    return out;
  }();
  EXPECT_EQ(missing.result, NVML_ERROR_UNKNOWN);
  EXPECT_EQ(missing.error_string, "Unknown Error: /nonexistent/scenario.yaml: cannot open (No such file or directory)");
  // A directory opens and then fails to read: it read as an empty file, "DIR:1: empty scenario".
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::string directory = [&] {
    Session s(dir);
    EXPECT_EQ(s.init_result(), NVML_ERROR_UNKNOWN);
    return std::string(NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN));
  }();
  EXPECT_EQ(directory, "Unknown Error: " + dir + ": cannot open (Is a directory)");

  setenv("GPUSCOPE_SIM_SCENARIO", scenario_path("idle").c_str(), 1);
  setenv("GPUSCOPE_SIM_TIME", "soon", 1);
  EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  unsetenv("GPUSCOPE_SIM_TIME");
  EXPECT_NE(std::string(NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN)).find("GPUSCOPE_SIM_TIME"), std::string::npos);

  // Times the simulator cannot reach quickly (it integrates from t = 0) or at all are refused at
  // once, never a hang or a 1970 timestamp.
  for (const char* far : {"7.4e9", "1e300", "-1e300", "-5", "inf"}) {
    SCOPED_TRACE(far);
    setenv("GPUSCOPE_SIM_SCENARIO", scenario_path("idle").c_str(), 1);
    setenv("GPUSCOPE_SIM_TIME", far, 1);
    EXPECT_EQ(NVML(nvmlInit_v2)(), NVML_ERROR_UNKNOWN);
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    unsetenv("GPUSCOPE_SIM_TIME");
    EXPECT_NE(std::string(NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN)).find("GPUSCOPE_SIM_TIME"), std::string::npos);
  }
  Session s("idle", 10.0);
  ASSERT_TRUE(s.ok());
  unsigned long long now = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetTime)(&now), NVML_SUCCESS);
  EXPECT_EQ(NVML(gpuscopeSimSetTime)(now + 400ULL * 24 * 3600 * kNsPerS), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(gpuscopeSimSetTime)(now + 3600 * kNsPerS), NVML_SUCCESS);
}

TEST(BadScenarios, GarbageNeverCrashes) {
  const char* inputs[] = {
      "\x01\x02\xff\xfe garbage",
      "gpus: {count: 99999999999999999999999, model: NVIDIA L4}\n",
      "gpus: {count: -1, model: NVIDIA L4}\n",
      "gpus: [1, 2, 3]\n",
      "gpus: {count: 1, model: [NVIDIA L4]}\n",
      "gpus: {count: 1, model: NVIDIA L4}\nworkload: {gpus: {0: {profile: {a: b}}}}\n",
      "gpus: {count: 1, model: NVIDIA L4}\nworkload: {gpus: {zero: idle}}\n",
      "gpus: {count: 1, model: NVIDIA L4}\nprocesses: {pid: 1}\n",
      "gpus: {count: 1, model: NVIDIA L4}\nevents: [1, 2]\n",
      "gpus: {count: 1, model: NVIDIA L4}\nfaults: [{type: slow, delay: 1h}]\n",
      "gpus: {count: 1, model: NVIDIA L4}\nfaults: [{type: gpu_lost}]\n",
      "gpus: {count: 1, model: NVIDIA L4}\nseed: 0x\n",
      "gpus: &a {count: 1, model: *a}\n",
      "gpus: {count: 1, model: NVIDIA L4}\nprocesses: [{pid: 1, memory: 1GiB, start: 1h, end: 1m}]\n",
      "gpus: {count: 1, model: NVIDIA L4}\nprocesses: [{pid: 1, memory: 1GiB}, {pid: 1, memory: 1GiB}]\n",
      "gpus: {count: 1, model: NVIDIA L4}\nworkload: {profile: {profile: data_starved, period: 0s}}\n",
      "gpus: {count: 1, model: NVIDIA L4}\nworkload: {profile: {profile: straggler, slowdown: nan}}\n",
  };
  for (const char* yaml : inputs) {
    SCOPED_TRACE(yaml);
    const BadLoad r = load_bad(yaml);
    EXPECT_EQ(r.result, NVML_ERROR_UNKNOWN);
    EXPECT_TRUE(r.error_string.starts_with("Unknown Error: " + r.path + ":")) << r.error_string;
    EXPECT_EQ(std::count(r.stderr_text.begin(), r.stderr_text.end(), '\n'), 1) << r.stderr_text;
  }
}

}  // namespace
}  // namespace gpuscope::sim::testing
