// An Agent started in process over the simulated NVML, as `gpuscope --simulate=SCENARIO serve` would
// start it, for the agent's tests: the scenario's time 0 at the start, the config's clock from then on.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "agent/agent.h"

namespace gpuscope::agent::agent_testing {

// What every agent test starts from: loopback on a free port, its data under DIR/data, the test's clock,
// version "test"; the rest as `serve`'s defaults.
inline AgentConfig loopback_config(const std::filesystem::path& dir, const model::Clock* clock) {
  AgentConfig config;
  config.host = "127.0.0.1";
  config.port = 0;
  config.data_dir = (dir / "data").string();
  config.clock = clock;
  config.version = "test";
  return config;
}

// `scenario`: a file under scenarios/ ("straggler.yaml"), or empty for the built-in node. Null (with
// the test failed) when the agent does not load or start.
inline std::unique_ptr<Agent> start_simulated_agent(const AgentConfig& config, log::Logger& log,
                                                    const std::string& scenario = {}) {
  if (scenario.empty()) {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
  } else {
    setenv("GPUSCOPE_SIM_SCENARIO", (std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/" + scenario).c_str(), 1);
  }
  setenv("GPUSCOPE_SIM_TIME", "0", 1);
  nvml::BackendOptions o;
  o.simulate = true;
  o.library_path = GPUSCOPE_SIM_LIB;
  auto backend = nvml::NvmlBackend::open(o);
  unsetenv("GPUSCOPE_SIM_TIME");
  EXPECT_TRUE(backend.has_value());
  if (!backend) return nullptr;
  auto agent = Agent::load(config, log);
  EXPECT_TRUE(agent);
  if (!agent) return nullptr;
  auto started = (*agent)->start(std::move(*backend), [] { return false; });
  EXPECT_TRUE(started && *started == Agent::Started::kServing) << (started ? "" : started.error().lines.at(0));
  if (!started || *started != Agent::Started::kServing) return nullptr;
  return std::move(*agent);
}

}  // namespace gpuscope::agent::agent_testing
