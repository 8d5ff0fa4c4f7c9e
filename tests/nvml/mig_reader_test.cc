// The backend's reading of MIG devices (mig_reader.cc) against the simulator's MIG: identity, memory,
// per-instance GPM ratios, and MIG layouts that change while the backend runs.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "nvml/nvml_backend.h"
#include "nvml/sim_fixture.h"

namespace gpuscope::nvml {
namespace {

using model::FieldId;
using testing::open_sim;
using testing::ScenarioFile;

// GPU 0: 3g.40gb training (id 2), 1g.10gb idle (id 8), 1g.10gb gemm (id 7); at 10m the idle one
// goes; at 20m MIG goes off. GPU 1: a whole GPU.
constexpr const char* kMigReaderScenario = R"(
gpus:
  count: 2
  model: NVIDIA H100 80GB HBM3
  overrides:
    - gpu: 0
      mig:
        - {profile: 3g.40gb, workload: training}
        - {profile: 1g.10gb, id: 8, workload: idle}
        - {profile: 1g.10gb, id: 7, workload: gemm}
      mig_timeline:
        - at: 10m
          mig:
            - {profile: 3g.40gb}
            - {profile: 1g.10gb, id: 7}
        - {at: 20m, mig: false}
workload:
  profile: training
processes:
  - {pid: 7001, name: train, gpu: 0, instance: 2, memory: 30GiB}
  - {pid: 7002, name: gemm, gpu: 0, instance: 7, memory: 6GiB}
  - {pid: 7100, name: whole, gpu: 1, memory: 40GiB}
)";

const model::MigInstanceSample* instance(const model::GpuSample& g, unsigned gi) {
  const auto it = std::ranges::find(g.mig_instances, gi, &model::MigInstanceSample::gpu_instance_id);
  return it == g.mig_instances.end() ? nullptr : &*it;
}

TEST(MigReader, ReadsEachMigDeviceItsIdentityMemoryAndOwnRatios) {
  ScenarioFile f(kMigReaderScenario);
  auto b = open_sim(f.path(), 300);
  ASSERT_TRUE(b);
  const auto snap = b->sample();
  ASSERT_EQ(snap.gpus.size(), 2u);
  const auto& g0 = snap.gpus[0];
  EXPECT_TRUE(g0.mig_enabled);
  ASSERT_EQ(g0.mig_instances.size(), 3u);
  // Index order follows the GPU instance ids: 2 (3g), 7, 8.
  EXPECT_EQ(g0.mig_instances[0].gpu_instance_id, 2u);
  EXPECT_EQ(g0.mig_instances[1].gpu_instance_id, 7u);
  EXPECT_EQ(g0.mig_instances[2].gpu_instance_id, 8u);
  for (unsigned k = 0; k < 3; ++k) {
    const auto& m = g0.mig_instances[k];
    SCOPED_TRACE(m.gpu_instance_id);
    EXPECT_EQ(m.device_index, k);
    EXPECT_EQ(m.compute_instance_id, 0u);
    EXPECT_TRUE(m.uuid.starts_with("MIG-")) << m.uuid;
    EXPECT_NE(m.uuid, b->gpus()[0].uuid);
  }
  EXPECT_NE(g0.mig_instances[1].uuid, g0.mig_instances[2].uuid);
  // Profile names without "MIG ", matched from the device's attributes against the profile table.
  EXPECT_EQ(g0.mig_instances[0].profile, "3g.40gb");
  EXPECT_EQ(g0.mig_instances[1].profile, "1g.10gb");
  EXPECT_EQ(g0.mig_instances[0].sm_count, 60u);
  EXPECT_EQ(g0.mig_instances[1].sm_count, 16u);
  EXPECT_EQ(g0.mig_instances[0].gpu_instance_slices, 3u);
  // Memory: the profile's total (MiB), the processes' memory in use.
  const auto* big = instance(g0, 2);
  ASSERT_NE(big, nullptr);
  ASSERT_TRUE((*big)[FieldId::kFbTotal].valid());
  EXPECT_EQ((*big)[FieldId::kFbTotal].value, 40448.0);
  EXPECT_GE((*big)[FieldId::kFbUsed].value, 30.0 * 1024);
  EXPECT_LT((*big)[FieldId::kFbUsed].value, 31.0 * 1024);
  EXPECT_EQ((*big)[FieldId::kFbUsed].value + (*big)[FieldId::kFbFree].value + (*big)[FieldId::kFbReserved].value,
            (*big)[FieldId::kFbTotal].value);
  // Each instance's ratios are its own workload's: training busy, idle at 0, on the first reading.
  const auto* idle = instance(g0, 8);
  ASSERT_NE(idle, nullptr);
  ASSERT_TRUE((*big)[FieldId::kSmActive].valid());
  ASSERT_TRUE((*idle)[FieldId::kSmActive].valid());
  EXPECT_GT((*big)[FieldId::kSmActive].value, 0.5);
  EXPECT_GT((*big)[FieldId::kPipeTensorActive].value, 0.1);
  EXPECT_EQ((*idle)[FieldId::kSmActive].value, 0.0);
  EXPECT_LT((*idle)[FieldId::kFbUsed].value, 100.0);
  // Only the instance fields: no power, clocks or utilization of an instance's own.
  EXPECT_FALSE((*big)[FieldId::kPowerUsage].valid());
  EXPECT_FALSE((*big)[FieldId::kGpuUtil].valid());
  // The GPU in MIG mode: utilization rates are not supported (as the driver), the rest reads.
  EXPECT_FALSE(g0[FieldId::kGpuUtil].valid());
  EXPECT_TRUE(g0[FieldId::kPowerUsage].valid());
  // Processes carry their instance.
  const auto p = std::ranges::find(g0.processes, 7001u, &model::ProcessSample::pid);
  ASSERT_NE(p, g0.processes.end());
  EXPECT_EQ(p->gpu_instance_id, 2u);
  EXPECT_EQ(p->compute_instance_id, 0u);
  // GPU 1 is whole.
  EXPECT_FALSE(snap.gpus[1].mig_enabled);
  EXPECT_TRUE(snap.gpus[1].mig_instances.empty());
  EXPECT_TRUE(snap.gpus[1][FieldId::kGpuUtil].valid());
}

TEST(MigReader, FollowsTheLayoutAsItChangesWhileRunning) {
  ScenarioFile f(kMigReaderScenario);
  auto b = open_sim(f.path(), 300);
  ASSERT_TRUE(b);
  auto first = b->sample();
  ASSERT_EQ(first.gpus[0].mig_instances.size(), 3u);
  ASSERT_NE(instance(first.gpus[0], 7), nullptr);
  const std::string kept_uuid = instance(first.gpus[0], 7)->uuid;

  // 10m: the idle 1g.10gb is destroyed; the others live on with their UUIDs.
  ASSERT_TRUE(b->set_sim_time(b->now() + std::chrono::seconds(400)));
  auto second = b->sample();
  ASSERT_TRUE(second.gpus[0].mig_enabled);
  ASSERT_EQ(second.gpus[0].mig_instances.size(), 2u);
  EXPECT_EQ(instance(second.gpus[0], 8), nullptr);
  ASSERT_NE(instance(second.gpus[0], 7), nullptr);
  EXPECT_EQ(instance(second.gpus[0], 7)->uuid, kept_uuid);
  EXPECT_EQ(second.gpus[0].mig_instances[1].device_index, 1u);
  // Its window went on: the gemm instance still has ratios.
  EXPECT_TRUE((*instance(second.gpus[0], 7))[FieldId::kSmActive].valid());

  // 20m: MIG off. No instances; the GPU's utilization reads again.
  ASSERT_TRUE(b->set_sim_time(b->now() + std::chrono::seconds(600)));
  auto third = b->sample();
  EXPECT_FALSE(third.gpus[0].mig_enabled);
  EXPECT_TRUE(third.gpus[0].mig_instances.empty());
  EXPECT_TRUE(third.gpus[0][FieldId::kGpuUtil].valid());
}

TEST(MigReader, OutsideMigModeAsksOnlyTheModeEachReading) {
  auto b = open_sim("", 600);
  ASSERT_TRUE(b);
  b->sample();
  const auto mode0 = testing::sim_calls("nvmlDeviceGetMigMode");
  const auto handles0 = testing::sim_calls("nvmlDeviceGetMigDeviceHandleByIndex");
  b->sample();
  EXPECT_EQ(testing::sim_calls("nvmlDeviceGetMigMode") - mode0, b->gpus().size());
  EXPECT_EQ(testing::sim_calls("nvmlDeviceGetMigDeviceHandleByIndex"), handles0);
}

TEST(MigReader, OneGpmSampleAndMetricsCallPerInstanceEachReading) {
  ScenarioFile f(kMigReaderScenario);
  auto b = open_sim(f.path(), 300);
  ASSERT_TRUE(b);
  b->sample();
  const auto samples0 = testing::sim_calls("nvmlGpmMigSampleGet");
  const auto metrics0 = testing::sim_calls("nvmlGpmMetricsGet");
  ASSERT_TRUE(b->set_sim_time(b->now() + std::chrono::seconds(1)));
  b->sample();
  EXPECT_EQ(testing::sim_calls("nvmlGpmMigSampleGet") - samples0, 3u);
  // One for each of the 3 instances and one for each whole GPU.
  EXPECT_EQ(testing::sim_calls("nvmlGpmMetricsGet") - metrics0, 3u + 2u);
}

TEST(MigReader, InMigModeTheGpusOwnGpmIsReadEveryCounterIntervalAndCarriedOver) {
  ScenarioFile f(kMigReaderScenario);
  BackendOptions o;
  o.counter_interval = std::chrono::hours(1);
  auto b = testing::open_sim_with(o, f.path(), 300);
  ASSERT_TRUE(b);
  const auto first = b->sample();
  const auto metrics0 = testing::sim_calls("nvmlGpmMetricsGet");
  const auto gpu_samples0 = testing::sim_calls("nvmlGpmSampleGet");
  ASSERT_TRUE(b->set_sim_time(b->now() + std::chrono::seconds(1)));
  const auto second = b->sample();
  // The 3 instances and the whole GPU 1; GPU 0's own GPM waits for the counter interval.
  EXPECT_EQ(testing::sim_calls("nvmlGpmMetricsGet") - metrics0, 3u + 1u);
  EXPECT_EQ(testing::sim_calls("nvmlGpmSampleGet") - gpu_samples0, 1u);
  // Its PCIe rate is the one read last, carried over; each instance's ratios are this reading's.
  ASSERT_TRUE(first.gpus[0][FieldId::kPcieRxBytes].valid());
  EXPECT_EQ(second.gpus[0][FieldId::kPcieRxBytes].value, first.gpus[0][FieldId::kPcieRxBytes].value);
  EXPECT_TRUE((*instance(second.gpus[0], 2))[FieldId::kSmActive].valid());
}

TEST(MigReader, NoPerProcessUtilizationIsAskedInMigMode) {
  // NVML: "On MIG-enabled GPUs, querying process utilization is not currently supported."
  ScenarioFile f(kMigReaderScenario);
  auto b = open_sim(f.path(), 300);
  ASSERT_TRUE(b);
  const auto calls0 = testing::sim_calls("nvmlDeviceGetProcessUtilization");
  const auto snap = b->sample();
  // Only GPU 1 (whole) is asked; GPU 0's processes have no utilization, GPU 1's has.
  EXPECT_EQ(testing::sim_calls("nvmlDeviceGetProcessUtilization") - calls0, 1u);
  ASSERT_FALSE(snap.gpus[0].processes.empty());
  for (const auto& p : snap.gpus[0].processes) EXPECT_FALSE(p.sm_util_percent.has_value()) << p.pid;
  ASSERT_EQ(snap.gpus[1].processes.size(), 1u);
  EXPECT_TRUE(snap.gpus[1].processes[0].sm_util_percent.has_value());
  // The simulated driver answers as the real one would, asked anyway.
  void* lib = dlopen(GPUSCOPE_SIM_LIB, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto* get_handle = reinterpret_cast<decltype(&::nvmlDeviceGetHandleByIndex_v2)>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto* util = reinterpret_cast<decltype(&::nvmlDeviceGetProcessUtilization)>(dlsym(lib, "nvmlDeviceGetProcessUtilization"));
  ASSERT_TRUE(get_handle != nullptr && util != nullptr);
  nvmlDevice_t d = nullptr;
  ASSERT_EQ(get_handle(0, &d), NVML_SUCCESS);
  unsigned count = 0;
  EXPECT_EQ(util(d, nullptr, &count, 0), NVML_ERROR_NOT_SUPPORTED);
  dlclose(lib);
}

}  // namespace
}  // namespace gpuscope::nvml
