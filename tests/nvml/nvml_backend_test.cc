#include "nvml/nvml_backend.h"

#include <gtest/gtest.h>

#include <set>

#include "nvml/sim_fixture.h"

namespace gpuscope::nvml {
namespace {

using model::FieldId;
using model::ValueStatus;
using testing::open_sim;
using testing::ScenarioFile;

TEST(NvmlBackend, DiscoversTheDefaultEightH100Node) {
  auto b = open_sim("");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->system().simulated);
  EXPECT_FALSE(b->system().driver_version.empty());
  EXPECT_FALSE(b->system().nvml_version.empty());
  EXPECT_TRUE(b->system().cuda_driver_version.has_value());
  EXPECT_FALSE(b->system().hostname.empty());
  EXPECT_NE(b->system().library_path.find("libnvidia-ml.so"), std::string::npos);
  ASSERT_EQ(b->gpus().size(), 8u);
  std::set<std::string> uuids, buses;
  for (unsigned i = 0; i < 8; ++i) {
    const auto& g = b->gpus()[i];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_TRUE(g.uuid.starts_with("GPU-")) << g.uuid;
    uuids.insert(g.uuid);
    buses.insert(g.pci_bus_id);
    EXPECT_EQ(g.minor_number, i);
    EXPECT_EQ(g.device_name(), "nvidia" + std::to_string(i));
    EXPECT_EQ(g.architecture, 9u);
    EXPECT_EQ(g.cuda_cc_major, 9);
    EXPECT_TRUE(g.gpm_supported);
    EXPECT_EQ(g.pcie_max_gen, 5u);
    EXPECT_EQ(g.pcie_max_width, 16u);
    ASSERT_TRUE(g.memory_total_bytes.has_value());
    EXPECT_EQ(*g.memory_total_bytes, 81559ull << 20) << "the reference table's H100 memory";
    EXPECT_EQ(g.max_sm_clock_mhz, 1980u);
    ASSERT_TRUE(g.power_limit_watts.has_value());
    EXPECT_DOUBLE_EQ(*g.power_limit_watts, 700.0);
  }
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_EQ(buses.size(), 8u);
}

TEST(NvmlBackend, ReadsEveryFieldAnH100Has) {
  auto b = open_sim("");
  ASSERT_TRUE(b);
  auto snap = b->sample();
  ASSERT_EQ(snap.gpus.size(), 8u);
  for (const auto& g : snap.gpus) {
    SCOPED_TRACE(g.index);
    ASSERT_TRUE(g.up);
    for (auto id : {FieldId::kSmClock, FieldId::kMemClock, FieldId::kGpuTemp, FieldId::kMemoryTemp,
                    FieldId::kPowerUsage, FieldId::kTotalEnergy, FieldId::kGpuUtil, FieldId::kMemCopyUtil,
                    FieldId::kFbTotal, FieldId::kFbUsed, FieldId::kFbFree, FieldId::kFbReserved,
                    FieldId::kPowerViolation, FieldId::kThermalViolation, FieldId::kEccDbeVolTotal,
                    FieldId::kUncorrectableRemappedRows, FieldId::kRowRemapFailure, FieldId::kGrEngineActive,
                    FieldId::kSmActive, FieldId::kSmOccupancy, FieldId::kPipeTensorActive, FieldId::kDramActive,
                    FieldId::kPcieRxBytes, FieldId::kPcieLinkGenCurrent, FieldId::kClocksEventReasons,
                    FieldId::kPstate}) {
      EXPECT_TRUE(g[id].valid()) << model::FieldCatalog::get(id).key << " status "
                                 << static_cast<int>(g[id].status) << " code " << g[id].error_code;
    }
    // SXM boards have no fan; Hopper retires rows, not pages: unsupported, not zero.
    EXPECT_EQ(g[FieldId::kFanSpeed].status, ValueStatus::kUnsupported);
    EXPECT_EQ(g[FieldId::kRetiredSbe].status, ValueStatus::kUnsupported);
    const double total = g[FieldId::kFbTotal].value;
    const double sum = g[FieldId::kFbUsed].value + g[FieldId::kFbFree].value + g[FieldId::kFbReserved].value;
    EXPECT_LE(sum, total);
    EXPECT_GE(sum, total - 3) << "MiB rounding only";
    for (auto id : {FieldId::kGrEngineActive, FieldId::kSmActive, FieldId::kSmOccupancy, FieldId::kPipeTensorActive,
                    FieldId::kDramActive}) {
      EXPECT_GE(g[id].value, 0.0);
      EXPECT_LE(g[id].value, 1.0);
    }
    EXPECT_LE(g[FieldId::kSmActive].value, g[FieldId::kGrEngineActive].value + 1e-9);
    EXPECT_LE(g[FieldId::kSmClock].value, g[FieldId::kMaxSmClock].value);
    EXPECT_GT(g[FieldId::kPowerUsage].value, 50.0) << "a training job draws power";
    ASSERT_FALSE(g.processes.empty());
    for (const auto& p : g.processes) {
      EXPECT_GT(p.pid, 0u);
      EXPECT_FALSE(p.identity.name.empty()) << "the simulator names its pids";
      ASSERT_TRUE(p.used_memory_bytes.has_value());
      EXPECT_GT(*p.used_memory_bytes, 0u);
    }
  }
  EXPECT_GT(snap.time.time_since_epoch().count(), 0);
}

TEST(NvmlBackend, SameTimeSameValues) {
  auto a = open_sim("", 1234);
  ASSERT_TRUE(a);
  auto s1 = a->sample();
  a.reset();
  auto b = open_sim("", 1234);
  ASSERT_TRUE(b);
  auto s2 = b->sample();
  ASSERT_EQ(s1.gpus.size(), s2.gpus.size());
  EXPECT_EQ(s1.time, s2.time);
  for (std::size_t i = 0; i < s1.gpus.size(); ++i) {
    for (std::size_t f = 0; f < model::kFieldCount; ++f) {
      EXPECT_EQ(s1.gpus[i].fields[f].status, s2.gpus[i].fields[f].status);
      EXPECT_DOUBLE_EQ(s1.gpus[i].fields[f].value, s2.gpus[i].fields[f].value)
          << model::FieldCatalog::all()[f].key;
    }
  }
}

TEST(NvmlBackend, VirtualClockMovesCounters) {
  auto b = open_sim("", 100);
  ASSERT_TRUE(b);
  auto s1 = b->sample();
  ASSERT_TRUE(b->set_sim_time(s1.time + std::chrono::seconds(60)));
  auto s2 = b->sample();
  EXPECT_EQ(s2.time - s1.time, std::chrono::seconds(60));
  const double e1 = s1.gpus[0][FieldId::kTotalEnergy].value, e2 = s2.gpus[0][FieldId::kTotalEnergy].value;
  // 60 s between 50 W and 700 W: 3 kJ to 42 kJ, in mJ.
  EXPECT_GT(e2 - e1, 60 * 50 * 1000.0);
  EXPECT_LT(e2 - e1, 60 * 700 * 1000.0);
}

TEST(NvmlBackend, OldDriverStillGivesProcessesButNoGpm) {
  auto b = open_sim("", 600, /*legacy=*/true);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->gpus()[0].gpm_supported);
  auto snap = b->sample();
  for (const auto& g : snap.gpus) {
    ASSERT_TRUE(g.up);
    EXPECT_FALSE(g.processes.empty()) << "read through the _v2 fallback";
    EXPECT_FALSE(g.processes_error_code.has_value());
    for (auto id : {FieldId::kSmActive, FieldId::kGrEngineActive, FieldId::kPipeTensorActive, FieldId::kDramActive}) {
      EXPECT_EQ(g[id].status, ValueStatus::kUnsupported) << "absent, never zero";
    }
    EXPECT_EQ(g[FieldId::kFbReserved].status, ValueStatus::kUnsupported);
    EXPECT_TRUE(g[FieldId::kFbUsed].valid());
    EXPECT_TRUE(g[FieldId::kClocksEventReasons].valid()) << "through ...ThrottleReasons";
  }
}

// The _v2 fallback fills 24-byte entries: read with the wrong stride, the second process of a GPU
// would come back as garbage pids and memory.
TEST(NvmlBackend, OldDriverReadsTheSameProcessesAsACurrentOne) {
  const std::string golden = std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/golden.yaml";
  auto current = open_sim(golden, 700);
  ASSERT_TRUE(current);
  auto want = current->sample();
  current.reset();
  auto legacy = open_sim(golden, 700, /*legacy=*/true);
  ASSERT_TRUE(legacy);
  auto got = legacy->sample();
  ASSERT_EQ(got.gpus.size(), want.gpus.size());
  ASSERT_GE(want.gpus[0].processes.size(), 2u) << "the scenario puts two processes on GPU 0";
  for (std::size_t i = 0; i < want.gpus.size(); ++i) {
    ASSERT_EQ(got.gpus[i].processes.size(), want.gpus[i].processes.size()) << "GPU " << i;
    for (std::size_t k = 0; k < want.gpus[i].processes.size(); ++k) {
      EXPECT_EQ(got.gpus[i].processes[k].pid, want.gpus[i].processes[k].pid);
      EXPECT_EQ(got.gpus[i].processes[k].used_memory_bytes, want.gpus[i].processes[k].used_memory_bytes);
      EXPECT_EQ(got.gpus[i].processes[k].kind, want.gpus[i].processes[k].kind);
    }
  }
}

TEST(NvmlBackend, SimulatorLibraryIsFoundFromTheEnvironment) {
  setenv("GPUSCOPE_SIM_LIB", GPUSCOPE_SIM_LIB, 1);
  EXPECT_EQ(simulator_library_path(), GPUSCOPE_SIM_LIB);
  unsetenv("GPUSCOPE_SIM_LIB");
}

TEST(NvmlBackend, ExplicitLibraryIsNotReplacedByAnother) {
  BackendOptions o;
  o.library_path = "/nonexistent/libnvidia-ml.so.1";
  auto b = NvmlBackend::open(o);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().kind, BackendErrorKind::kLibraryNotFound);
  EXPECT_NE(b.error().message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

}  // namespace
}  // namespace gpuscope::nvml

namespace gpuscope::nvml {
namespace {

TEST(NvmlBackend, OpeningWithAScenarioLeavesTheEnvironmentAsItWas) {
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  auto a = testing::open_sim(std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/xid.yaml");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->gpus().size(), 2u);
  EXPECT_EQ(std::getenv("GPUSCOPE_SIM_SCENARIO"), nullptr);
  a.reset();
  auto b = testing::open_sim("");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->gpus().size(), 8u) << "a later plain --simulate gets the built-in node, not the last scenario";
}

}  // namespace
}  // namespace gpuscope::nvml

namespace gpuscope::nvml {
namespace {

// The agent's reading skips nvmlDeviceGetPcieThroughput, which blocks ~20 ms per call on a real driver.
TEST(NvmlBackend, PcieThroughputIsNotReadWhenTheCallerDoesNotWantIt) {
  testing::ScenarioFile scenario("seed: 3\ngpus: {count: 2, model: NVIDIA H100 80GB HBM3}\nworkload: {profile: training}\n");
  BackendOptions o;
  o.read_pcie_throughput = false;
  auto b = testing::open_sim_with(o, scenario.path());
  ASSERT_TRUE(b);
  const auto static_calls = testing::sim_calls("nvmlDeviceGetMaxClockInfo");
  const auto before = testing::sim_calls("nvmlDeviceGetPcieThroughput");
  b->sample();
  auto snap = b->sample();
  EXPECT_EQ(testing::sim_calls("nvmlDeviceGetPcieThroughput"), before) << "not called by a reading that skips it";
  for (const auto& g : snap.gpus) {
    EXPECT_EQ(g[FieldId::kPcieTxThroughput].status, ValueStatus::kUnsupported);
    EXPECT_EQ(g[FieldId::kPcieRxThroughput].status, ValueStatus::kUnsupported);
    EXPECT_TRUE(g[FieldId::kPcieTxBytes].valid()) << "GPM's PCIe bytes are still read";
    // Static values come from discovery, not from a call per reading.
    EXPECT_EQ(g[FieldId::kMaxSmClock].value, 1980);
    EXPECT_TRUE(g[FieldId::kSlowdownTemp].valid());
  }
  EXPECT_EQ(testing::sim_calls("nvmlDeviceGetMaxClockInfo"), static_calls) << "static values are not read again";
  auto with = testing::open_sim(scenario.path());
  ASSERT_TRUE(with);
  const auto before_full = testing::sim_calls("nvmlDeviceGetPcieThroughput");
  auto full = with->sample();
  EXPECT_EQ(testing::sim_calls("nvmlDeviceGetPcieThroughput") - before_full, 4u) << "2 GPUs x TX and RX";
  EXPECT_TRUE(full.gpus[0][FieldId::kPcieTxThroughput].valid());
}

}  // namespace
}  // namespace gpuscope::nvml

namespace gpuscope::nvml {
namespace {

// With a counter interval the expensive cumulative counters are read once per interval and carried
// over in between.
TEST(NvmlBackend, CountersAreReadAtTheCounterIntervalAndCarriedOverInBetween) {
  testing::ScenarioFile scenario(
      "seed: 3\ngpus:\n  count: 1\n  model: NVIDIA H100 80GB HBM3\n  overrides:\n    - {gpu: 0, power_limit: 300W}\n"
      "workload: {profile: training}\n");
  auto open_with = [&](std::chrono::nanoseconds counter_interval) {
    BackendOptions o;
    o.counter_interval = counter_interval;
    return testing::open_sim_with(o, scenario.path());
  };
  // Calls of the counter functions a reading makes: the field-value batches (the violation policies' and
  // the per-reading one of memory temperature and NVLink), energy, and the power limit.
  auto counted_sample = [](NvmlBackend& b) {
    const auto batches = testing::sim_calls("nvmlDeviceGetFieldValues");
    const auto energy = testing::sim_calls("nvmlDeviceGetTotalEnergyConsumption");
    const auto limit = testing::sim_calls("nvmlDeviceGetPowerManagementLimit");
    auto snap = b.sample();
    return std::tuple{std::move(snap), testing::sim_calls("nvmlDeviceGetFieldValues") - batches,
                      testing::sim_calls("nvmlDeviceGetTotalEnergyConsumption") - energy,
                      testing::sim_calls("nvmlDeviceGetPowerManagementLimit") - limit};
  };
  auto slow = open_with(std::chrono::hours(1));
  ASSERT_TRUE(slow);
  auto [first, first_batches, first_energy, first_limit] = counted_sample(*slow);
  EXPECT_EQ(first_batches, 2u) << "the violation policies' batch and the per-reading one";
  EXPECT_EQ(first_energy, 1u);
  EXPECT_EQ(first_limit, 1u);
  ASSERT_TRUE(first.gpus[0][FieldId::kPowerViolation].valid());
  slow->set_sim_time(slow->now() + std::chrono::seconds(30));  // the counter grows meanwhile
  auto [second, second_batches, second_energy, second_limit] = counted_sample(*slow);
  EXPECT_EQ(second_batches, 1u) << "counters are not read again within the interval";
  EXPECT_EQ(second_energy, 0u);
  EXPECT_EQ(second_limit, 0u) << "nor the power limits";
  EXPECT_EQ(second.gpus[0][FieldId::kPowerViolation].value, first.gpus[0][FieldId::kPowerViolation].value);
  EXPECT_TRUE(second.gpus[0][FieldId::kTotalEnergy].valid()) << "carried over, not dropped";
  EXPECT_EQ(second.gpus[0][FieldId::kPowerLimit].value, 300) << "carried over";
  EXPECT_NE(second.gpus[0][FieldId::kGpuTemp].status, ValueStatus::kUnsupported) << "other fields are read";

  auto every = open_with(std::chrono::nanoseconds(0));
  ASSERT_TRUE(every);
  every->sample();
  every->set_sim_time(every->now() + std::chrono::seconds(30));
  auto [again, again_batches, again_energy, again_limit] = counted_sample(*every);
  EXPECT_EQ(again_batches, 2u);
  EXPECT_EQ(again_energy, 1u);
  EXPECT_EQ(again_limit, 1u);
  EXPECT_GT(again.gpus[0][FieldId::kPowerViolation].value, first.gpus[0][FieldId::kPowerViolation].value)
      << "a power-capped GPU accumulates violation time";
}

}  // namespace
}  // namespace gpuscope::nvml
