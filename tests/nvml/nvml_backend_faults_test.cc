// NvmlBackend against the simulator's fault and event scenarios (scenarios/*.yaml).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "nvml/nvml_backend.h"
#include "nvml/sim_fixture.h"

namespace gpuscope::nvml {
namespace {

using model::FieldId;
using model::ValueStatus;
using testing::open_sim;

std::string scenario(const char* name) { return std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/" + name; }

// The wall time of scenario second `seconds`, given a snapshot taken at scenario second `ref_seconds`.
std::chrono::system_clock::time_point at(const model::Snapshot& ref, double ref_seconds, double seconds) {
  return ref.time + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                        std::chrono::duration<double>(seconds - ref_seconds));
}

TEST(NvmlBackendFaults, LostGpuIsMarkedDownWhileOthersWorkAndComesBack) {
  auto b = open_sim(scenario("gpu_lost.yaml"), 30);
  ASSERT_TRUE(b);
  auto before = b->sample();
  ASSERT_EQ(before.gpus.size(), 2u);
  EXPECT_TRUE(before.gpus[1].up);

  const std::string uuid_before = b->gpus()[1].uuid;
  ASSERT_FALSE(uuid_before.empty());
  ASSERT_TRUE(b->set_sim_time(at(before, 30, 90)));
  auto lost = b->sample();
  EXPECT_TRUE(lost.gpus[0].up);
  EXPECT_TRUE(lost.gpus[0][FieldId::kPowerUsage].valid());
  EXPECT_FALSE(lost.gpus[1].up);
  EXPECT_EQ(lost.gpus[1].down_error_code, 15);  // NVML_ERROR_GPU_IS_LOST
  EXPECT_FALSE(lost.gpus[1][FieldId::kPowerUsage].valid());
  ASSERT_EQ(b->gpus().size(), 2u) << "a lost GPU stays listed";

  ASSERT_TRUE(b->set_sim_time(at(before, 30, 150)));
  auto back = b->sample();
  EXPECT_TRUE(back.gpus[1].up) << "re-discovered once it answers again";
  EXPECT_TRUE(back.gpus[1][FieldId::kPowerUsage].valid());
  EXPECT_EQ(b->gpus()[1].uuid, uuid_before) << "the same GPU, found again";
}

TEST(NvmlBackendFaults, FailingFunctionMarksOnlyItsField) {
  auto b = open_sim(scenario("nvml_errors.yaml"), 90);
  ASSERT_TRUE(b);
  auto s = b->sample();
  const auto& g0 = s.gpus[0];
  EXPECT_TRUE(g0.up);
  EXPECT_EQ(g0[FieldId::kPowerUsage].status, ValueStatus::kError);
  EXPECT_EQ(g0[FieldId::kPowerUsage].error_code, 999);
  EXPECT_TRUE(g0[FieldId::kGpuTemp].valid());
  EXPECT_TRUE(s.gpus[1][FieldId::kPowerUsage].valid()) << "the fault is on GPU 0 only";

  ASSERT_TRUE(b->set_sim_time(at(s, 90, 210)));
  auto s2 = b->sample();
  EXPECT_EQ(s2.gpus[0][FieldId::kGpuTemp].status, ValueStatus::kUnsupported);
  EXPECT_EQ(s2.gpus[1][FieldId::kGpuTemp].status, ValueStatus::kUnsupported);
  EXPECT_TRUE(s2.gpus[0][FieldId::kPowerUsage].valid()) << "its window has closed";

  ASSERT_TRUE(b->set_sim_time(at(s, 90, 310)));
  auto s3 = b->sample();
  EXPECT_TRUE(s3.gpus[1].up) << "a timeout is not a lost GPU";
  EXPECT_EQ(s3.gpus[1][FieldId::kPowerUsage].error_code, 10);
  EXPECT_TRUE(s3.gpus[0][FieldId::kPowerUsage].valid());
}

TEST(NvmlBackendFaults, ProcessListThatGrowsBetweenProbeAndReadIsReadWhole) {
  auto b = open_sim(scenario("nvml_errors.yaml"), 30);
  ASSERT_TRUE(b);
  for (int round = 0; round < 4; ++round) {
    auto s = b->sample();
    EXPECT_FALSE(s.gpus[0].processes_error_code.has_value()) << "round " << round;
    EXPECT_FALSE(s.gpus[0].processes.empty());
    bool has_scenario_pid = false;
    for (const auto& p : s.gpus[0].processes) has_scenario_pid |= p.pid == 4500;
    EXPECT_TRUE(has_scenario_pid);
  }
}

TEST(NvmlBackendFaults, R535DriverAnswersFunctionNotFoundForV3AndProcessesStillCome) {
  auto b = open_sim(scenario("driver_r535.yaml"), 60);
  ASSERT_TRUE(b);
  auto s = b->sample();
  bool any = false;
  for (const auto& g : s.gpus) {
    EXPECT_FALSE(g.processes_error_code.has_value());
    any |= !g.processes.empty();
  }
  EXPECT_TRUE(any);
}

TEST(NvmlBackendFaults, SlowCallsDelayButDoNotFailASample) {
  auto b = open_sim(scenario("slow_calls.yaml"), 20);
  ASSERT_TRUE(b);
  b->sample();
  const auto t0 = std::chrono::steady_clock::now();
  auto s = b->sample();
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, std::chrono::milliseconds(300)) << "the fault delays GetFieldValues";
  for (const auto& g : s.gpus) {
    EXPECT_TRUE(g.up);
    EXPECT_TRUE(g[FieldId::kMemoryTemp].valid());
  }
}

TEST(NvmlBackendFaults, EveryXidIsCountedEvenTwoEqualOnesInARow) {
  auto b = open_sim(scenario("xid.yaml"), 30, false, /*watch_events=*/true);
  ASSERT_TRUE(b);
  auto s = b->sample();
  EXPECT_EQ(s.gpus[0].events.xid_total, 0u);
  EXPECT_TRUE(s.gpus[0][FieldId::kXidErrors].valid()) << "watched, none yet: a real 0";
  EXPECT_EQ(s.gpus[0][FieldId::kXidErrors].value, 0);

  ASSERT_TRUE(b->set_sim_time(at(s, 30, 200)));
  model::Snapshot later;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    later = b->sample();
  } while (later.gpus[1].events.xid_total < 1 && std::chrono::steady_clock::now() < deadline);
  const auto& e0 = later.gpus[0].events;
  EXPECT_EQ(e0.xid_total, 3u);
  EXPECT_EQ(e0.xid_by_code.at(13), 2u) << "two equal XIDs in a row are two events";
  EXPECT_EQ(e0.xid_by_code.at(31), 1u);
  EXPECT_EQ(e0.last_xid, 31u);
  EXPECT_EQ(later.gpus[0][FieldId::kXidErrors].value, 31);
  EXPECT_EQ(later.gpus[1].events.xid_total, 1u);
  EXPECT_EQ(later.gpus[1].events.last_xid, 79u);
}

TEST(NvmlBackendFaults, DriverNotLoadedFailsInitWithNvmlsText) {
  setenv("GPUSCOPE_SIM_TIME", "10", 1);
  BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  o.scenario = scenario("driver_not_loaded.yaml");
  auto b = NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().kind, BackendErrorKind::kInitFailed);
  EXPECT_EQ(b.error().nvml_code, 9);
  EXPECT_NE(b.error().message.find("Driver Not Loaded"), std::string::npos) << b.error().message;
}

// A mistake in the scenario or in a GPUSCOPE_SIM_* variable read as "NVML initialization failed:
// Unknown Error: ..." (a driver failure, exit 1); it is the user's input, named as such.
TEST(NvmlBackendFaults, ABadScenarioOrSimulatorVariableIsInputNotADriverFailure) {
  BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  const testing::ScenarioFile bad("gpus:\n  count: abc\n");
  o.scenario = bad.path();
  setenv("GPUSCOPE_SIM_TIME", "10", 1);
  auto scenario_error = NvmlBackend::open(o);
  ASSERT_FALSE(scenario_error);
  EXPECT_EQ(scenario_error.error().kind, BackendErrorKind::kSimulatorInput);
  EXPECT_EQ(scenario_error.error().message,
            "scenario " + bad.path() + ":2: count must be a whole number, not 'abc'");

  o.scenario = scenario("idle.yaml");
  setenv("GPUSCOPE_SIM_TIME", "soon", 1);
  auto time_error = NvmlBackend::open(o);
  ASSERT_FALSE(time_error);
  EXPECT_EQ(time_error.error().kind, BackendErrorKind::kSimulatorInput);
  EXPECT_EQ(time_error.error().message, "environment variable GPUSCOPE_SIM_TIME: 'soon' is not a number of seconds");
  setenv("GPUSCOPE_SIM_TIME", "10", 1);
  setenv("GPUSCOPE_SIM_SEED", "-3", 1);
  auto seed_error = NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_SEED");
  ASSERT_FALSE(seed_error);
  EXPECT_EQ(seed_error.error().kind, BackendErrorKind::kSimulatorInput);
  EXPECT_EQ(seed_error.error().message, "environment variable GPUSCOPE_SIM_SEED: '-3' is not a seed");

  // After a good start, a failure of the simulated driver is a driver failure again.
  ASSERT_TRUE(NvmlBackend::open(o));
  o.scenario = scenario("driver_not_loaded.yaml");
  auto driver = NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  ASSERT_FALSE(driver);
  EXPECT_EQ(driver.error().kind, BackendErrorKind::kInitFailed);
}

TEST(NvmlBackendFaults, MixedNodeHasGpmOnlyOnHopper) {
  auto b = open_sim(scenario("mixed_a100.yaml"), 60);
  ASSERT_TRUE(b);
  auto s = b->sample();
  bool saw_hopper = false, saw_ampere = false;
  for (std::size_t i = 0; i < s.gpus.size(); ++i) {
    const auto& info = b->gpus()[i];
    if (info.architecture == 9u) {
      saw_hopper = true;
      EXPECT_TRUE(s.gpus[i][FieldId::kSmActive].valid());
    } else {
      saw_ampere = true;
      EXPECT_EQ(s.gpus[i][FieldId::kSmActive].status, ValueStatus::kUnsupported) << "absent, never zero";
      EXPECT_TRUE(s.gpus[i][FieldId::kGpuUtil].valid());
    }
  }
  EXPECT_TRUE(saw_hopper && saw_ampere);
}

}  // namespace
}  // namespace gpuscope::nvml
