// The fabric collector, unchanged, over the simulated driver's sysfs tree of scenarios/fabric_degrading.yaml:
// every port is found with the GPUs of the PCIe switch the scenario put it behind (found by the collector's
// own PCIe walk from the simulated GPUs' NVML bus ids), and its counters move with the simulator's clock.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "agent/fabric_collector.h"
#include "model/clock.h"
#include "nvml/nvml_backend.h"

namespace gpuscope::agent {
namespace {

std::unique_ptr<nvml::NvmlBackend> open_fabric_scenario(double t_s) {
  setenv("GPUSCOPE_SIM_SCENARIO", (std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/fabric_degrading.yaml").c_str(), 1);
  setenv("GPUSCOPE_SIM_TIME", std::to_string(t_s).c_str(), 1);
  nvml::BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  auto backend = nvml::NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  EXPECT_TRUE(backend.has_value());
  return backend ? std::move(*backend) : nullptr;
}

std::uint64_t sim_raw(const fabric::PortState& p, std::string_view file) {
  for (const auto& [name, value] : p.port.counters) {
    if (name == file) return value;
  }
  ADD_FAILURE() << p.port.key() << " has no " << file;
  return 0;
}

TEST(FabricSimulated, EachPortIsNearTheGpusOfItsSwitchAndItsCountersFollowTheSimulatorsClock) {
  auto backend = open_fabric_scenario(600);
  ASSERT_NE(backend, nullptr);
  const auto root = backend->update_sim_sysfs();
  ASSERT_TRUE(root.has_value()) << "the scenario has a fabric: the simulator lays out a tree";
  log::Logger log(std::cerr, log::Level::kError);
  model::VirtualClock clock;
  FabricCollector collector({*root, kDefaultFabricInterval, "Hostname", backend->system().hostname}, backend->gpus(),
                            clock, log);
  nvml::NvmlBackend* sim = backend.get();
  collector.set_refresh([sim] { sim->update_sim_sysfs(); });
  collector.collect();
  auto state = collector.latest();
  ASSERT_NE(state, nullptr);
  ASSERT_EQ(state->ports.size(), 8U);
  for (unsigned i = 0; i < 8; ++i) {
    const fabric::PortState& p = state->ports[i];
    EXPECT_EQ(p.port.key(), "rdma:mlx5_" + std::to_string(i) + "/1");
    // The scenario: mlx5_0 and mlx5_1 behind the switch of GPUs 0 and 1, and so on.
    EXPECT_EQ(p.port.near_gpus, (std::vector<unsigned>{i / 2 * 2, i / 2 * 2 + 1})) << p.port.key();
    EXPECT_TRUE(p.port.up) << p.port.key();
    EXPECT_EQ(p.port.link_layer, "InfiniBand");
    EXPECT_EQ(p.port.guid.size(), 19U) << p.port.guid;
    EXPECT_FALSE(p.port.pci_bus_id.empty());
    ASSERT_TRUE(p.port.rate_bytes_per_second.has_value());
    EXPECT_DOUBLE_EQ(*p.port.rate_bytes_per_second, 400e9 / 8);
  }
  // 10 minutes in: 20 symbol errors a second on mlx5_6 since 8m, none on its neighbour.
  EXPECT_EQ(sim_raw(state->ports[6], "counters/symbol_error"), 120U * 20);
  EXPECT_EQ(sim_raw(state->ports[7], "counters/symbol_error"), 0U);

  // The simulator's clock moves; the next reading refreshes the tree first.
  ASSERT_TRUE(backend->set_sim_time(backend->now() + std::chrono::minutes(10)));
  collector.collect();
  state = collector.latest();
  EXPECT_EQ(sim_raw(state->ports[6], "counters/symbol_error"), 720U * 20);
  EXPECT_EQ(sim_raw(state->ports[6], "counters/link_downed"), 1U);  // the 15m flap; 24m is still to come
  EXPECT_EQ(state->ports[6].total("counters/symbol_error"), 720U * 20);
}

}  // namespace
}  // namespace gpuscope::agent
