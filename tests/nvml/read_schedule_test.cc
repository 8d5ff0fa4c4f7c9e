// The read schedule: which NVML calls a reading makes and how often (each call costs the host CPU on a
// real driver), and the agent's own accounting of it (CPU per collector, calls per function).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "nvml/nvml_backend.h"
#include "nvml/nvml_library.h"
#include "sim_fixture.h"

namespace gpuscope::nvml {
namespace {

using model::FieldId;
using model::ValueStatus;

constexpr const char* kScheduleH100 =
    "seed: 5\ngpus:\n  count: 1\n  model: NVIDIA H100 80GB HBM3\n  overrides:\n    - {gpu: 0, power_limit: 350W}\n"
    "workload: {profile: training}\nprocesses:\n  - pid: 4242\n    name: python train.py\n    per_gpu: true\n"
    "    memory: 20GiB\n";

// Calls of `function` that `read` makes.
template <class Read>
unsigned long long schedule_calls(const char* function, Read&& read) {
  const auto before = testing::sim_calls(function);
  read();
  return testing::sim_calls(function) - before;
}

TEST(ReadSchedule, ViolationTimesComeFromOneFieldValuesBatchAndMatchViolationStatus) {
  testing::ScenarioFile scenario(kScheduleH100);
  BackendOptions o;  // counter interval 0: the counters every reading
  auto backend = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(backend);
  model::Snapshot snap;
  EXPECT_EQ(schedule_calls("nvmlDeviceGetViolationStatus", [&] { snap = backend->sample(); }), 0u);
  // The same counters asked one by one, at the same (frozen) simulated time.
  const NvmlLibrary& L = backend->library();
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(L.nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_SUCCESS);
  const std::pair<FieldId, int> policies[] = {
      {FieldId::kPowerViolation, NVML_PERF_POLICY_POWER},   {FieldId::kThermalViolation, NVML_PERF_POLICY_THERMAL},
      {FieldId::kSyncBoostViolation, NVML_PERF_POLICY_SYNC_BOOST},
      {FieldId::kBoardLimitViolation, NVML_PERF_POLICY_BOARD_LIMIT},
      {FieldId::kLowUtilViolation, NVML_PERF_POLICY_LOW_UTILIZATION},
      {FieldId::kReliabilityViolation, NVML_PERF_POLICY_RELIABILITY}};
  for (const auto& [field, policy] : policies) {
    nvmlViolationTime_t v{};
    ASSERT_EQ(L.nvmlDeviceGetViolationStatus(device, policy, &v), NVML_SUCCESS);
    ASSERT_TRUE(snap.gpus[0][field].valid()) << policy;
    EXPECT_EQ(snap.gpus[0][field].value, static_cast<double>(v.violationTime)) << policy;
  }
  EXPECT_GT(snap.gpus[0][FieldId::kPowerViolation].value, 0) << "a 350 W cap on a training H100 holds the clocks";
}

TEST(ReadSchedule, ADriverWhoseBatchFailsIsAskedPolicyByPolicy) {
  testing::ScenarioFile scenario(std::string(kScheduleH100) +
                                 "faults:\n  - type: error\n    function: nvmlDeviceGetFieldValues\n"
                                 "    error: NVML_ERROR_NOT_SUPPORTED\n    at: 0s\n    for: 1h\n");
  BackendOptions o;
  auto backend = testing::open_sim_with(o, scenario.path(), 60);
  ASSERT_TRUE(backend);
  model::Snapshot snap;
  EXPECT_EQ(schedule_calls("nvmlDeviceGetViolationStatus", [&] { snap = backend->sample(); }), 6u);
  EXPECT_TRUE(snap.gpus[0][FieldId::kPowerViolation].valid());
  EXPECT_EQ(snap.gpus[0][FieldId::kMemoryTemp].status, ValueStatus::kUnsupported);
}

TEST(ReadSchedule, StaticAndUnsupportedQueriesAreNotRepeatedEachReading) {
  testing::ScenarioFile scenario(kScheduleH100);
  BackendOptions o;
  auto backend = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(backend);
  backend->sample();
  std::map<std::string, unsigned long long> calls;
  const char* functions[] = {"nvmlDeviceGetMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkWidth",
                             "nvmlDeviceGetFanSpeed", "nvmlDeviceGetPowerUsage"};
  for (const char* f : functions) calls[f] = testing::sim_calls(f);
  model::Snapshot snap;
  for (int i = 0; i < 3; ++i) snap = backend->sample();
  for (const char* f : functions) calls[f] = testing::sim_calls(f) - calls[f];
  EXPECT_EQ(calls["nvmlDeviceGetMaxPcieLinkGeneration"], 0u) << "read at discovery";
  EXPECT_EQ(calls["nvmlDeviceGetMaxPcieLinkWidth"], 0u);
  EXPECT_EQ(calls["nvmlDeviceGetFanSpeed"], 0u) << "an SXM H100 has no fan: NOT_SUPPORTED once is enough";
  EXPECT_EQ(calls["nvmlDeviceGetPowerUsage"], 3u) << "a gauge is read every time";
  EXPECT_EQ(snap.gpus[0][FieldId::kPcieLinkGenMax].value, 5);
  EXPECT_EQ(snap.gpus[0][FieldId::kPcieLinkWidthMax].value, 16);
  EXPECT_EQ(snap.gpus[0][FieldId::kFanSpeed].status, ValueStatus::kUnsupported);
}

TEST(ReadSchedule, ProcessUtilizationTakesOneCallPerReading) {
  testing::ScenarioFile scenario(kScheduleH100);
  BackendOptions o;
  auto backend = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(backend);
  backend->sample();
  model::Snapshot snap;
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] {
              for (int i = 0; i < 4; ++i) {
                backend->set_sim_time(backend->now() + std::chrono::seconds(1));
                snap = backend->sample();
              }
            }),
            4u)
      << "no count probe before each read";
  ASSERT_EQ(snap.gpus[0].processes.size(), 1u);
  EXPECT_TRUE(snap.gpus[0].processes[0].sm_util_percent.has_value()) << "the one call still reads the samples";
  // The process list too: one call with room for 16, not a count probe and a read.
  EXPECT_EQ(schedule_calls("nvmlDeviceGetComputeRunningProcesses_v3", [&] { snap = backend->sample(); }), 1u);
  EXPECT_EQ(snap.gpus[0].processes.size(), 1u);
}

// With a process-utilization interval the ~0.9 ms call is made that often (by the library's clock) and
// at once when a process appears; in between the last figures are carried over, and the next read
// passes the last sample's stamp, so it covers the whole gap.
TEST(ReadSchedule, ProcessUtilizationIsAskedAtItsIntervalAndWhenAProcessAppears) {
  testing::ScenarioFile scenario(
      "seed: 5\ngpus:\n  count: 1\n  model: NVIDIA H100 80GB HBM3\n"
      "workload: {gpus: {0: {profile: data_starved, period: 12s}}}\nprocesses:\n  - {pid: 4242, gpu: 0, memory: 20GiB}\n"
      "  - {pid: 5151, gpu: 0, memory: 2GiB, start: 620s}\n");
  BackendOptions o;
  o.process_utilization_interval = std::chrono::seconds(5);
  auto backend = testing::open_sim_with(o, scenario.path(), 600);
  ASSERT_TRUE(backend);
  const auto step = [&](double seconds) {
    backend->set_sim_time(backend->now() +
                          std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds)));
  };
  const auto sm_of = [](const model::Snapshot& snap, unsigned pid) -> std::optional<unsigned> {
    for (const auto& p : snap.gpus[0].processes) {
      if (p.pid == pid) return p.sm_util_percent;
    }
    return std::nullopt;
  };
  model::Snapshot snap;
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] { snap = backend->sample(); }), 1u) << "the first reading";
  const auto first = sm_of(snap, 4242);
  ASSERT_TRUE(first.has_value());
  // The stamp the driver gave that read: the next read must ask for everything after it.
  const NvmlLibrary& L = backend->library();
  nvmlDevice_t device = nullptr;
  ASSERT_EQ(L.nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_SUCCESS);
  nvmlProcessUtilizationSample_t probe{};
  unsigned n = 1;
  ASSERT_EQ(L.nvmlDeviceGetProcessUtilization(device, &probe, &n, 0), NVML_SUCCESS);
  const unsigned long long first_stamp = probe.timeStamp;

  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] {
              for (int i = 0; i < 4; ++i) {
                step(1);
                snap = backend->sample();
                EXPECT_EQ(sm_of(snap, 4242), first) << "carried over between reads";
              }
            }),
            0u);
  step(1);  // 5 s after the first read
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] { snap = backend->sample(); }), 1u);
  n = 1;
  ASSERT_EQ(L.nvmlDeviceGetProcessUtilization(device, &probe, &n, first_stamp), NVML_SUCCESS);
  EXPECT_EQ(sm_of(snap, 4242), probe.smUtil) << "the average over the 5 s since the first read";

  // t = 619 is due again; at 620 a second process appears: it is asked at once, 1 s later.
  backend->set_sim_time(backend->now() + std::chrono::seconds(14));
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] { snap = backend->sample(); }), 1u);
  step(1);
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] { snap = backend->sample(); }), 1u);
  ASSERT_EQ(snap.gpus[0].processes.size(), 2u);
  EXPECT_TRUE(sm_of(snap, 5151).has_value()) << "the new process has figures at its first reading";
  step(1);
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] { snap = backend->sample(); }), 0u)
      << "a process already seen is not a reason to ask";
  // A clock that went back (the system clock set back) is no reason to wait: asked again.
  backend->set_sim_time(backend->now() - std::chrono::seconds(30));
  EXPECT_EQ(schedule_calls("nvmlDeviceGetProcessUtilization", [&] { snap = backend->sample(); }), 1u);
}

TEST(ReadSchedule, MoreProcessesThanTheListsRoomAreReadInASecondCall) {
  std::string yaml = "seed: 5\ngpus: {count: 1, model: NVIDIA H100 80GB HBM3}\nprocesses:\n";
  for (unsigned pid = 100; pid < 120; ++pid) yaml += "  - {pid: " + std::to_string(pid) + ", gpu: 0, memory: 1GiB}\n";
  testing::ScenarioFile scenario(yaml);
  auto backend = testing::open_sim_with(BackendOptions{}, scenario.path());
  ASSERT_TRUE(backend);
  model::Snapshot snap;
  EXPECT_EQ(schedule_calls("nvmlDeviceGetComputeRunningProcesses_v3", [&] { snap = backend->sample(); }), 2u)
      << "20 processes: the first call answers INSUFFICIENT_SIZE with the count";
  ASSERT_EQ(snap.gpus[0].processes.size(), 20u);
  EXPECT_EQ(snap.gpus[0].processes.front().pid, 100u);
  EXPECT_EQ(snap.gpus[0].processes.back().pid, 119u);
}

TEST(ReadSchedule, CpuTimePerCollectorIsACounterThatChargesTheDriversWork) {
  // Every GPM read costs 2 ms of CPU in this simulated driver: the gpm collector's CPU counter must
  // grow by at least that much a reading, and never go down.
  testing::ScenarioFile scenario(std::string(kScheduleH100) + "call_costs:\n  nvmlGpmMetricsGet: 2ms\n");
  BackendOptions o;
  auto backend = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(backend);
  const auto gpm = static_cast<std::size_t>(model::Collector::kGpm);
  auto previous = backend->sample().collector_cpu_total;
  for (int i = 0; i < 3; ++i) {
    backend->set_sim_time(backend->now() + std::chrono::seconds(1));
    const auto now = backend->sample().collector_cpu_total;
    for (std::size_t c = 0; c < model::kCollectorCount; ++c) EXPECT_GE(now[c], previous[c]) << c;
    EXPECT_GE(now[gpm] - previous[gpm], std::chrono::milliseconds(2));
    previous = now;
  }
  EXPECT_GT(previous[static_cast<std::size_t>(model::Collector::kDevice)].count(), 0);
}

TEST(ReadSchedule, CountedCallsAgreeWithTheDriversOwnCount) {
  testing::ScenarioFile scenario(kScheduleH100);
  const char* functions[] = {"nvmlDeviceGetPowerUsage", "nvmlGpmMetricsGet", "nvmlDeviceGetFieldValues",
                             "nvmlDeviceGetProcessUtilization", "nvmlDeviceGetName"};
  // Keeps the simulator loaded, so its counts run on from here (this backend makes no calls meanwhile).
  auto keep_loaded = testing::open_sim_with(BackendOptions{}, scenario.path());
  ASSERT_TRUE(keep_loaded);
  EXPECT_FALSE(keep_loaded->library().counts_calls());
  std::map<std::string, unsigned long long> before;
  for (const char* f : functions) before[f] = testing::sim_calls(f);
  BackendOptions o;
  o.count_calls = true;
  auto backend = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(backend);
  ASSERT_TRUE(backend->library().counts_calls());
  model::Snapshot snap;
  for (int i = 0; i < 3; ++i) {
    backend->set_sim_time(backend->now() + std::chrono::seconds(1));
    snap = backend->sample();
  }
  ASSERT_FALSE(snap.nvml_calls.empty());
  for (const char* f : functions) {
    const auto it = std::find_if(snap.nvml_calls.begin(), snap.nvml_calls.end(),
                                 [&](const auto& c) { return c.first == f; });
    ASSERT_NE(it, snap.nvml_calls.end()) << f;
    EXPECT_EQ(it->second, testing::sim_calls(f) - before[f]) << f;
  }
  // A second counting library in the process would share the counters' thunks: it does not count.
  auto second = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->library().counts_calls());
  EXPECT_TRUE(second->sample().nvml_calls.empty());
  // Without the option nothing is counted.
  EXPECT_TRUE(keep_loaded->sample().nvml_calls.empty());
}

}  // namespace
}  // namespace gpuscope::nvml
