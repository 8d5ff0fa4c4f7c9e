// The per-call cost model: the h100-580 profile against the real driver's measured costs (read from
// shared/reference/real-h100/nvml_call_costs.txt, so the table cannot drift from it), scenario syntax,
// CPU really spent on the calling thread and blocking that is not CPU, nvmlDeviceGetFieldValues charged
// by its field ids, and the per-function call counts.
#include <gtest/gtest.h>
#include <time.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

constexpr std::string_view kH100Scenario = R"(# cost test
cost_profile: h100-580
gpus: {count: 1, model: NVIDIA H100 80GB HBM3}
)";

constexpr std::string_view kFreeScenario = R"(# cost test
gpus: {count: 1, model: NVIDIA H100 80GB HBM3}
)";

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

struct Cost {
  double cpu_us = 0, blocked_us = 0;
};

Cost model_cost(const char* function, std::vector<unsigned> fields = {}) {
  unsigned long long cpu = 0, blocked = 0;
  EXPECT_EQ(NVML(gpuscopeSimGetCallCost)(function, static_cast<unsigned>(fields.size()), fields.data(), &cpu, &blocked),
            NVML_SUCCESS)
      << function;
  return {static_cast<double>(cpu) * 1e-3, static_cast<double>(blocked) * 1e-3};
}

std::string read_cost_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string costs_file() {
  return read_cost_text(source_dir() + "/../shared/reference/real-h100/nvml_call_costs.txt");
}

// callcost.c's names for what it timed, as the exported functions.
std::string function_of(const std::string& probe_name) {
  if (probe_name.starts_with("Gpm")) return "nvml" + probe_name;
  return "nvmlDevice" + probe_name;
}

TEST(CallCosts, H100ProfileMatchesTheRealDriversMeasuredCosts) {
  const std::string text = costs_file();
  ASSERT_FALSE(text.empty()) << "nvml_call_costs.txt not found beside the checkout (../shared)";
  Session s(kH100Scenario);
  ASSERT_TRUE(s.ok());
  // "GetClockInfo(SM)   rc=0   wall      0.7 us  cpu      0.7 us"
  const std::regex row(R"(^(\w+)(\([^)]*\))?\s+rc=0\s+wall\s+([0-9.]+) us\s+cpu\s+([0-9.]+) us)");
  int checked = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    const std::string name = m[1];
    if (name == "GetFieldValues" || name == "GpmMetricsGet") continue;  // by batch, below
    const double wall = std::stod(m[3]), cpu = std::stod(m[4]);
    const Cost c = model_cost(function_of(name).c_str());
    EXPECT_NEAR(c.cpu_us, cpu, 0.01) << name;
    // Blocking is wall beyond CPU, only where the call mostly waits.
    EXPECT_NEAR(c.blocked_us, wall > 2 * cpu ? wall - cpu : 0.0, 0.01) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 20);

  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(nvmlInit: wall ([0-9.]+) ms cpu ([0-9.]+) ms)")));
  EXPECT_NEAR(model_cost("nvmlInit_v2").cpu_us, std::stod(m[2]) * 1000, 0.01);

  // GpmMetricsGet costs the same whatever the number of metrics: the table's figure is one the file
  // measured, and within the spread of the per-count figures.
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(GpmMetricsGet\(12 metrics\)\s+rc=0\s+wall\s+[0-9.]+ us\s+cpu\s+([0-9.]+) us)")));
  const double gpm = model_cost("nvmlGpmMetricsGet").cpu_us;
  EXPECT_NEAR(gpm, std::stod(m[1]), 0.01);
  const std::regex per_count(R"(GpmMetricsGet\(\s*\d+ metrics\): cpu\s+([0-9.]+) us/call)");
  int counts = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), per_count); it != std::sregex_iterator(); ++it, ++counts) {
    EXPECT_NEAR(gpm, std::stod((*it)[1]), 0.15 * gpm);
  }
  EXPECT_EQ(counts, 6);

  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(EventSetWait_v2\(timeout 1000 ms\): cpu\s+([0-9.]+) us/call)")));
  EXPECT_NEAR(model_cost("nvmlEventSetWait_v2").cpu_us, std::stod(m[1]), 0.01);
}

// callcost.c's ids[] (NVML field ids by number): its batches are the first 1, 2, 4, ... 32 of them.
constexpr unsigned kProbeFieldIds[32] = {186, 83,  82,  94,  3,   4,   5,   6,   142, 143, 144,
                                         145, 74,  75,  76,  77,  78,  79,  197, 198, 185, 66,
                                         29,  30,  31,  187, 190, 190, 191, 82,  186, 83};

TEST(CallCosts, FieldValuesBatchesCostWhatTheRealDriverCharged) {
  const std::string text = costs_file();
  ASSERT_FALSE(text.empty());
  Session s(kH100Scenario);
  ASSERT_TRUE(s.ok());
  const std::regex batch(R"(GetFieldValues\((\d+) fields\)\s+rc=0\s+wall\s+[0-9.]+ us\s+cpu\s+([0-9.]+) us)");
  int batches = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), batch); it != std::sregex_iterator(); ++it, ++batches) {
    const auto n = static_cast<std::size_t>(std::stoul((*it)[1]));
    const double measured = std::stod((*it)[2]);
    const Cost c = model_cost("nvmlDeviceGetFieldValues", {kProbeFieldIds, kProbeFieldIds + n});
    EXPECT_NEAR(c.cpu_us, measured, std::max(1.0, 0.01 * measured)) << n << " fields";
  }
  EXPECT_EQ(batches, 6);
}

TEST(CallCosts, EnergyFieldPaysEachTimeAndThePolicyFieldsOnceABatch) {
  Session s(kH100Scenario);
  ASSERT_TRUE(s.ok());
  const double call = model_cost("nvmlDeviceGetFieldValues").cpu_us;
  const double power = model_cost("nvmlDeviceGetFieldValues", {186}).cpu_us;
  const double energy = model_cost("nvmlDeviceGetFieldValues", {83}).cpu_us;
  EXPECT_LT(power, 2.0);
  EXPECT_GT(energy, 4000.0);  // 4 ms as soon as energy is among the fields
  EXPECT_NEAR(model_cost("nvmlDeviceGetFieldValues", {83, 83}).cpu_us - call, 2 * (energy - call), 0.01);
  const double one_policy = model_cost("nvmlDeviceGetFieldValues", {74}).cpu_us;
  EXPECT_NEAR(model_cost("nvmlDeviceGetFieldValues", {74, 75, 76, 77, 78, 79}).cpu_us, one_policy, 0.01);
  // The agent's own batch (memory temperature, NVLink traffic) stays cheap.
  EXPECT_LT(model_cost("nvmlDeviceGetFieldValues", {82, 138, 139}).cpu_us, 5.0);
}

TEST(CallCosts, ACallSpendsItsCpuCostOnTheCallingThread) {
  Session s(kH100Scenario);
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t d = s.gpu(0);
  unsigned long long mj = 0;
  const double before = thread_cpu_us();
  ASSERT_EQ(NVML(nvmlDeviceGetTotalEnergyConsumption)(d, &mj), NVML_SUCCESS);
  EXPECT_GE(thread_cpu_us() - before, 3975.6);

  std::array<nvmlFieldValue_t, 2> v{};
  v[0].fieldId = NVML_FI_DEV_POWER_INSTANT;
  v[1].fieldId = NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION;
  const double fv0 = thread_cpu_us();
  ASSERT_EQ(NVML(nvmlDeviceGetFieldValues)(d, 2, v.data()), NVML_SUCCESS);
  EXPECT_GE(thread_cpu_us() - fv0, 4018.0);
}

TEST(CallCosts, BlockingIsWallTimeNotCpuAndOtherThreadsGoOnMeanwhile) {
  Session s(R"(# cost test
gpus: {count: 1, model: NVIDIA H100 80GB HBM3}
call_costs:
  nvmlDeviceGetPowerUsage: {blocked: 1500ms}
)");
  ASSERT_TRUE(s.ok());
  const nvmlDevice_t d = s.gpu(0);
  std::atomic<bool> done{false};
  double blocked_cpu_us = 0, blocked_wall_s = 0;
  unsigned long long before = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetCallCount)("nvmlDeviceGetPowerUsage", &before), NVML_SUCCESS);
  std::thread blocked([&] {
    const auto w0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_us();
    unsigned mw = 0;
    EXPECT_EQ(NVML(nvmlDeviceGetPowerUsage)(d, &mw), NVML_SUCCESS);
    blocked_cpu_us = thread_cpu_us() - c0;
    blocked_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    done = true;
  });
  // Once the call is counted it is past the lock: another thread's call must not wait for it.
  for (unsigned long long n = before; n == before;) {
    std::this_thread::yield();
    ASSERT_EQ(NVML(gpuscopeSimGetCallCount)("nvmlDeviceGetPowerUsage", &n), NVML_SUCCESS);
  }
  unsigned temp = 0;
  EXPECT_EQ(NVML(nvmlDeviceGetTemperature)(d, NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  EXPECT_FALSE(done.load()) << "a call waited for another thread's blocked call";
  blocked.join();
  EXPECT_GE(blocked_wall_s, 1.5);
  EXPECT_LT(blocked_cpu_us, 0.1 * 1.5e6);  // asleep, not spinning
}

TEST(CallCosts, NoneSpendsNothingMeasurable) {
  Session s(kFreeScenario);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(model_cost("nvmlDeviceGetTotalEnergyConsumption").cpu_us, 0.0);
  const nvmlDevice_t d = s.gpu(0);
  unsigned long long mj = 0;
  constexpr int kCalls = 200;
  const double before = thread_cpu_us();
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(NVML(nvmlDeviceGetTotalEnergyConsumption)(d, &mj), NVML_SUCCESS);
  // 200 calls of the real driver's energy counter would spend 0.8 s; the free simulator a few ms at most.
  EXPECT_LT(thread_cpu_us() - before, 0.02 * kCalls * 3975.6);
}

TEST(CallCosts, ScenarioEntriesReplaceTheProfilesAndFieldsCanShareAQuery) {
  Session s(R"(# cost test
cost_profile: h100-580
gpus: {count: 1, model: NVIDIA H100 80GB HBM3}
call_costs:
  nvmlDeviceGetTemperature: 2ms
  nvmlDeviceGetPcieThroughput: {cpu: 100us, blocked: 5ms}
  fields:
    83: 1ms
    82: {cpu: 300us, shared: thermal}
    1000: {cpu: 500us, shared: thermal}
)");
  ASSERT_TRUE(s.ok()) << NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN);
  EXPECT_NEAR(model_cost("nvmlDeviceGetTemperature").cpu_us, 2000, 0.01);
  const Cost pcie = model_cost("nvmlDeviceGetPcieThroughput");
  EXPECT_NEAR(pcie.cpu_us, 100, 0.01);
  EXPECT_NEAR(pcie.blocked_us, 5000, 0.01);
  EXPECT_NEAR(model_cost("nvmlDeviceGetTotalEnergyConsumption").cpu_us, 3975.6, 0.01);  // the profile's
  const double call = model_cost("nvmlDeviceGetFieldValues").cpu_us;
  EXPECT_NEAR(model_cost("nvmlDeviceGetFieldValues", {83}).cpu_us - call, 1000, 0.01);
  EXPECT_NEAR(model_cost("nvmlDeviceGetFieldValues", {82, 1000}).cpu_us - call, 500, 0.01);
}

struct InitOutcome {
  nvmlReturn_t rc;
  std::string message;
};

InitOutcome init_with(std::string_view yaml) {
  Session s(yaml);
  return {s.init_result(), NVML(nvmlErrorString)(NVML_ERROR_UNKNOWN)};
}

TEST(CallCosts, BadCostSyntaxNamesTheFileAndLine) {
  const auto fails_at = [](std::string_view yaml, const std::string& line_and_text) {
    const InitOutcome o = init_with(yaml);
    EXPECT_EQ(o.rc, NVML_ERROR_UNKNOWN) << yaml;
    EXPECT_NE(o.message.find(".yaml:" + line_and_text), std::string::npos) << o.message;
  };
  fails_at("# x\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\ncost_profile: h200\n",
           "3: unknown cost_profile 'h200' (known: none, h100-580)");
  fails_at("# x\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\ncall_costs:\n  nvmlDeviceGetFoo: 1ms\n",
           "4: unknown function 'nvmlDeviceGetFoo'");
  fails_at("# x\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\ncall_costs:\n  nvmlDeviceGetTemperature: 4 parsecs\n",
           "4: nvmlDeviceGetTemperature cpu: bad cost '4 parsecs'");
  fails_at("# x\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\ncall_costs:\n  nvmlDeviceGetTemperature: {wall: 1ms}\n",
           "4: unknown key 'wall'");
  fails_at("# x\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\ncall_costs:\n  fields:\n    energy: 4ms\n",
           "5: field id must be a whole number");
  fails_at("# x\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\ncall_costs:\n  nvmlDeviceGetTemperature: {cpu: 1ms, shared: x}\n",
           "4: 'shared' belongs to a field's cost");
}

TEST(CallCosts, EnvironmentChoosesTheProfileOverTheScenarios) {
  setenv("GPUSCOPE_SIM_COST_PROFILE", "h100-580", 1);
  {
    Session s(kFreeScenario);
    ASSERT_TRUE(s.ok());
    EXPECT_NEAR(model_cost("nvmlDeviceGetViolationStatus").cpu_us, 784.5, 0.01);
  }
  setenv("GPUSCOPE_SIM_COST_PROFILE", "none", 1);
  {
    Session s(kH100Scenario);
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(model_cost("nvmlDeviceGetViolationStatus").cpu_us, 0.0);
  }
  setenv("GPUSCOPE_SIM_COST_PROFILE", "fast", 1);
  const InitOutcome o = init_with(kFreeScenario);
  unsetenv("GPUSCOPE_SIM_COST_PROFILE");
  EXPECT_EQ(o.rc, NVML_ERROR_UNKNOWN);
  EXPECT_NE(o.message.find("GPUSCOPE_SIM_COST_PROFILE: 'fast' is not a cost profile"), std::string::npos) << o.message;
}

std::map<std::string, unsigned long long> all_call_counts() {
  std::map<std::string, unsigned long long> out;
  char name[128];
  unsigned long long n = 0;
  unsigned i = 0;
  for (; NVML(gpuscopeSimGetCallCountByIndex)(i, name, sizeof name, &n) == NVML_SUCCESS; ++i) out[name] = n;
  EXPECT_EQ(NVML(gpuscopeSimGetCallCountByIndex)(i, name, sizeof name, &n), NVML_ERROR_NOT_FOUND);
  return out;
}

TEST(CallCosts, CallCountsListEveryFunctionCalled) {
  Session s(kFreeScenario);
  ASSERT_TRUE(s.ok());
  const auto before = all_call_counts();
  const nvmlDevice_t d = s.gpu(0);
  unsigned v = 0;
  for (int i = 0; i < 3; ++i) NVML(nvmlDeviceGetTemperature)(d, NVML_TEMPERATURE_GPU, &v);
  NVML(nvmlDeviceGetPowerUsage)(d, &v);
  const auto after = all_call_counts();
  const auto delta = [&](const std::string& f) {
    const auto b = before.find(f);
    return after.at(f) - (b == before.end() ? 0 : b->second);
  };
  EXPECT_EQ(delta("nvmlDeviceGetTemperature"), 3U);
  EXPECT_EQ(delta("nvmlDeviceGetPowerUsage"), 1U);
  unsigned long long one = 0;
  ASSERT_EQ(NVML(gpuscopeSimGetCallCount)("nvmlDeviceGetTemperature", &one), NVML_SUCCESS);
  EXPECT_EQ(one, after.at("nvmlDeviceGetTemperature"));
  char tiny[4];
  unsigned long long n = 0;
  EXPECT_EQ(NVML(gpuscopeSimGetCallCountByIndex)(0, tiny, sizeof tiny, &n), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(NVML(gpuscopeSimGetCallCountByIndex)(0, nullptr, 0, &n), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gpuscope::sim::testing
