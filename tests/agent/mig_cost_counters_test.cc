// The agent's cost counters on a MIG node (scenarios/mig.yaml, the simulated NVML on a virtual clock):
// GPU 0's hourly price split among its GPU instances by slices (3g.40gb 3/7, 2g.20gb 2/7, two 1g.10gb
// 1/7 each: all 7 slices allocated), each instance's counters with its GPU_I labels, its processes
// charged from its share, and a restart continuing the instances' counters.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/simulated_agent.h"
#include "e2e/http_client.h"

namespace gpuscope::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// 36 USD per GPU-hour: 1 cent a second; a 1/7 slice 1/7 cent a second.
constexpr std::string_view kMigCostCatalog = R"(gpus:
  - name: H100
    match: ["H100"]
    prices: {on_demand: 36}
)";
constexpr double kMigCostCentPerSecond = 0.01;

class MigCostCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope-mig-cost-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_ = agent_testing::loopback_config(dir_, &clock_);
    config_.diagnosis = false;
    auto catalog = model::PriceCatalog::parse(kMigCostCatalog, "test catalog");
    ASSERT_TRUE(catalog) << catalog.error();
    config_.price_catalog = std::move(*catalog);
  }
  void TearDown() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    fs::remove_all(dir_);
  }

  std::unique_ptr<Agent> start_agent() { return agent_testing::start_simulated_agent(config_, log_, "mig.yaml"); }

  // The value of the sample of `name` on GPU `gpu` whose line holds every one of `also` and, unless
  // `instance` is empty, GPU_I_ID="instance"; without `instance`, the series without GPU_I_ID. -1: none.
  static double value(int port, const std::string& name, int gpu, const std::string& instance,
                      const std::vector<std::string>& also = {}) {
    const std::string body = e2e::http_get(port, "/metrics").body;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with(name + "{gpu=\"" + std::to_string(gpu) + "\",")) continue;
      const bool has_instance = line.find("GPU_I_ID=") != std::string::npos;
      if (instance.empty() ? has_instance : line.find("GPU_I_ID=\"" + instance + "\"") == std::string::npos) continue;
      if (!std::ranges::all_of(also, [&](const std::string& a) { return line.find(a) != std::string::npos; })) continue;
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1;
  }

  static double samples_total(int port) {
    const std::string body = e2e::http_get(port, "/metrics").body;
    const std::string line_start = "\ngpuscope_samples_total ";
    const auto at = body.find(line_start);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + line_start.size()));
  }

  void tick(int port, std::chrono::nanoseconds d) {
    const double before = samples_total(port);
    clock_.advance(d);
    for (int i = 0; i < 10000 && samples_total(port) <= before; ++i) std::this_thread::sleep_for(1ms);
  }

  fs::path dir_;
  model::VirtualClock clock_;
  std::stringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
  AgentConfig config_;
};

TEST_F(MigCostCountersTest, EachInstancePaysItsSlicesAndARestartContinuesItsCounters) {
  auto first = start_agent();
  ASSERT_TRUE(first);
  int port = first->port();
  for (int i = 0; i < 7; ++i) tick(port, 1s);
  const double held = 7 * kMigCostCentPerSecond;  // GPU 0's dollars over the 7 s since the first reading
  const std::string dollars = "gpuscope_cost_dollars_total";
  // 3g.40gb (GI 2) 3/7, 2g.20gb (GI 4) 2/7, 1g.10gb (GI 7 and 8) 1/7 each.
  const double gi2 = value(port, dollars, 0, "2", {"GPU_I_PROFILE=\"3g.40gb\"", "tier=\"on_demand\""});
  const double gi4 = value(port, dollars, 0, "4", {"GPU_I_PROFILE=\"2g.20gb\""});
  const double gi7 = value(port, dollars, 0, "7", {"GPU_I_PROFILE=\"1g.10gb\""});
  const double gi8 = value(port, dollars, 0, "8", {"GPU_I_PROFILE=\"1g.10gb\""});
  EXPECT_NEAR(gi2, held * 3 / 7, 1e-12);
  EXPECT_NEAR(gi4, held * 2 / 7, 1e-12);
  EXPECT_NEAR(gi7, held / 7, 1e-12);
  EXPECT_NEAR(gi8, held / 7, 1e-12);
  // All 7 slices are in instances: the GPU's own series (unallocated slices) has nothing, and the node's
  // sum over GPU 0 is its whole price, each dollar once.
  EXPECT_EQ(value(port, dollars, 0, ""), 0);
  EXPECT_NEAR(gi2 + gi4 + gi7 + gi8, held, 1e-12);
  EXPECT_NEAR(value(port, dollars, 1, ""), held, 1e-12) << "GPU 1 is a whole GPU";
  EXPECT_EQ(value(port, dollars, 1, "2"), -1) << "no instance series on a whole GPU";
  // GI 8 runs nothing: all its dollars idle; GI 2 trains: none idle, some unused (its SMs not all active).
  EXPECT_NEAR(value(port, "gpuscope_cost_idle_dollars_total", 0, "8"), gi8, 1e-12);
  EXPECT_EQ(value(port, "gpuscope_cost_idle_dollars_total", 0, "2"), 0);
  const double gi2_unused = value(port, "gpuscope_cost_unused_dollars_total", 0, "2");
  EXPECT_GT(gi2_unused, 0);
  EXPECT_LT(gi2_unused, gi2);
  // pid 5001 is GI 2's only process: its dollars, with GI 2's labels; pid 5003 GI 7's.
  EXPECT_NEAR(value(port, "gpuscope_process_cost_dollars_total", 0, "2", {"pid=\"5001\""}), gi2, 1e-12);
  EXPECT_NEAR(value(port, "gpuscope_process_cost_dollars_total", 0, "7", {"pid=\"5003\""}), gi7, 1e-12);
  // Energy is the GPU's, once, without GPU_I labels.
  EXPECT_GT(value(port, "gpuscope_energy_joules_total", 0, ""), 0);
  EXPECT_EQ(value(port, "gpuscope_energy_joules_total", 0, "2"), -1);
  ASSERT_TRUE(first->stop());
  first.reset();

  // 30 s later: the instances' counters continue, and the 30 s are billed once, split as before.
  clock_.advance(30s);
  auto second = start_agent();
  ASSERT_TRUE(second);
  port = second->port();
  const double gap = 36.0 * 30 / 3600.0;
  EXPECT_NEAR(value(port, dollars, 0, "2"), gi2 + gap * 3 / 7, 1e-12);
  EXPECT_NEAR(value(port, dollars, 0, "8"), gi8 + gap / 7, 1e-12);
  EXPECT_NEAR(value(port, "gpuscope_cost_idle_dollars_total", 0, "8"), gi8 + gap / 7, 1e-12);
  EXPECT_EQ(value(port, dollars, 0, ""), 0);
  ASSERT_TRUE(second->stop());
}

}  // namespace
}  // namespace gpuscope::agent
