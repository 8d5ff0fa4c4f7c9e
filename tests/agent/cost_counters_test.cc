// The agent's cost counters across restarts, on the simulated NVML and a virtual clock: a second agent on
// the same data directory continues each counter from the first one's last recorded values and bills the
// time between the two runs exactly once (or not at all after a longer absence than 5 minutes).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/simulated_agent.h"
#include "e2e/http_client.h"

namespace gpuscope::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// 36 USD per GPU-hour: 1 cent a second.
constexpr std::string_view kCatalog = R"(energy_usd_per_kwh: 0.12
gpus:
  - name: H100
    match: ["H100"]
    prices: {on_demand: 36}
  - name: A100
    match: ["A100"]
    prices: {on_demand: 18}
)";
constexpr double kUsdPerSecond = 36.0 / 3600.0;

class CostCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope-cost-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_ = agent_testing::loopback_config(dir_, &clock_);
    config_.diagnosis = false;  // not what is tested here: fewer threads
    config_.counter_interval = 0s;  // the energy counter at every reading, so seconds of it count
    auto catalog = model::PriceCatalog::parse(kCatalog, "test catalog");
    ASSERT_TRUE(catalog) << catalog.error();
    config_.price_catalog = std::move(*catalog);
  }
  void TearDown() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    fs::remove_all(dir_);
  }

  // An agent on the golden scenario (GPU 0 trains with pid 1000 alone for its first 5 minutes, GPU 1
  // is idle), started at the clock's time.
  std::unique_ptr<Agent> start_agent() { return agent_testing::start_simulated_agent(config_, log_, "golden.yaml"); }

  // The value of the sample of `name` whose labels hold gpu="GPU" and `also`; -1 when there is none.
  static double value(int port, const std::string& name, int gpu, const std::string& also = {}) {
    const std::string body = e2e::http_get(port, "/metrics").body;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) {
      if (!line.starts_with(name + "{gpu=\"" + std::to_string(gpu) + "\",")) continue;
      if (!also.empty() && line.find(also) == std::string::npos) continue;
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

  // Moves the clock and waits until the agent has taken the reading then due.
  void tick(int port, std::chrono::nanoseconds d) {
    const double before = samples_total(port);
    clock_.advance(d);
    for (int i = 0; i < 10000 && samples_total(port) <= before; ++i) std::this_thread::sleep_for(1ms);
  }

  struct Counters {
    double dollars, idle, unused, energy, energy_dollars, process;
  };
  static Counters counters(int port, int gpu) {
    return {value(port, "gpuscope_cost_dollars_total", gpu), value(port, "gpuscope_cost_idle_dollars_total", gpu),
            value(port, "gpuscope_cost_unused_dollars_total", gpu), value(port, "gpuscope_energy_joules_total", gpu),
            value(port, "gpuscope_energy_cost_dollars_total", gpu),
            value(port, "gpuscope_process_cost_dollars_total", gpu, "pid=\"1000\"")};
  }

  fs::path dir_;
  model::VirtualClock clock_;
  std::stringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
  AgentConfig config_;
};

TEST_F(CostCountersTest, ARestartContinuesEachCounterAndBillsTheTimeBetweenTheRunsOnce) {
  auto first = start_agent();
  ASSERT_TRUE(first);
  int port = first->port();
  for (int i = 0; i < 4; ++i) tick(port, 1s);
  const Counters gpu0 = counters(port, 0);
  const Counters gpu1 = counters(port, 1);
  // Four seconds held since the first reading; GPU 1 idle through all of them, GPU 0 working.
  EXPECT_DOUBLE_EQ(gpu1.dollars, 4 * kUsdPerSecond);
  EXPECT_EQ(gpu1.idle, gpu1.dollars) << "an idle GPU's dollars are all idle";
  EXPECT_EQ(gpu1.unused, gpu1.dollars);
  EXPECT_DOUBLE_EQ(gpu0.dollars, 4 * kUsdPerSecond);
  EXPECT_EQ(gpu0.idle, 0);
  EXPECT_LT(gpu0.unused, gpu0.dollars);
  EXPECT_EQ(gpu0.process, gpu0.dollars) << "pid 1000 is GPU 0's only process";
  EXPECT_GT(gpu0.energy, 0);
  EXPECT_GT(gpu0.energy_dollars, 0);
  EXPECT_EQ(value(port, "gpuscope_process_cost_dollars_total", 1), -1) << "GPU 1 has no process";
  // Recorded like the other series: the history holds what /metrics shows.
  const auto recorded = e2e::http_get(port, "/api/v1/query?query=gpuscope_cost_dollars_total%7Bgpu%3D%221%22%7D&time=" +
                                                std::to_string(static_cast<double>(clock_.unix_ms()) / 1000.0));
  const auto result = nlohmann::json::parse(recorded.body, nullptr, false)["data"]["result"];
  ASSERT_EQ(result.size(), 1U) << recorded.body;
  EXPECT_EQ(result[0]["metric"]["tier"], "on_demand");
  EXPECT_EQ(std::stod(result[0]["value"][1].get<std::string>()), gpu1.dollars);
  ASSERT_TRUE(first->stop());
  first.reset();  // its data directory lock goes with it

  // 30 s later (within the 5 minutes a reading may stand for): the first reading bills those 30 s.
  clock_.advance(30s);
  auto second = start_agent();
  ASSERT_TRUE(second);
  port = second->port();
  const double gap_dollars = 36.0 * 30 / 3600.0;  // as cost_interval computes it
  Counters after = counters(port, 1);
  EXPECT_EQ(after.dollars, gpu1.dollars + gap_dollars);
  EXPECT_EQ(after.idle, gpu1.idle + gap_dollars);
  EXPECT_EQ(after.unused, gpu1.unused + gap_dollars);
  EXPECT_GE(after.energy, gpu1.energy);
  after = counters(port, 0);
  EXPECT_EQ(after.dollars, gpu0.dollars + gap_dollars);
  EXPECT_GE(after.unused, gpu0.unused);
  EXPECT_GE(after.energy, gpu0.energy);
  EXPECT_GE(after.energy_dollars, gpu0.energy_dollars);
  EXPECT_EQ(after.process, gpu0.process + gap_dollars) << "pid 1000 still runs: its counter continues";
  EXPECT_NE(log_text_.str().find("msg=\"cost counters\" continued_gpus=4 billed_since_last_reading=4 new_gpus=0"),
            std::string::npos)
      << log_text_.str();
  tick(port, 1s);
  const Counters before_stop = counters(port, 1);
  EXPECT_DOUBLE_EQ(before_stop.dollars, 35 * kUsdPerSecond);
  ASSERT_TRUE(second->stop());
  second.reset();

  // Ten minutes away: the counters continue from where they stood, the absence is not billed, and the
  // processes are not continued (a process not recorded for 5 minutes has ended, as far as they know).
  clock_.advance(10min);
  auto third = start_agent();
  ASSERT_TRUE(third);
  port = third->port();
  EXPECT_EQ(counters(port, 1).dollars, before_stop.dollars);
  EXPECT_EQ(counters(port, 0).process, 0);
  tick(port, 1s);
  EXPECT_EQ(counters(port, 1).dollars, before_stop.dollars + kUsdPerSecond);
  ASSERT_TRUE(third->stop());
}

TEST_F(CostCountersTest, WithoutHistoryTheCountersStartAtZero) {
  config_.history = false;
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  EXPECT_EQ(counters(port, 1).dollars, 0);
  EXPECT_EQ(counters(port, 0).process, 0);
  tick(port, 1s);
  EXPECT_EQ(counters(port, 1).dollars, kUsdPerSecond);
  EXPECT_EQ(counters(port, 1).idle, kUsdPerSecond);
  ASSERT_TRUE(agent->stop());
}

TEST_F(CostCountersTest, AReloadedCatalogPricesTheReadingsFromTheNextOneOn) {
  const auto catalog_file = dir_ / "prices.yaml";
  const auto write_catalog = [&](double h100_usd_per_hour) {
    std::ofstream(catalog_file) << "gpus:\n  - name: H100\n    match: [\"H100\"]\n    prices: {on_demand: "
                                << h100_usd_per_hour << "}\n";
  };
  write_catalog(36);
  config_.reload_price_catalog = [&]() -> std::expected<std::optional<model::PriceCatalog>, std::string> {
    auto loaded = model::PriceCatalog::load(catalog_file.string());
    if (!loaded) return std::unexpected(loaded.error());
    return std::move(*loaded);
  };
  auto agent = start_agent();
  ASSERT_TRUE(agent);
  const int port = agent->port();
  for (int i = 0; i < 3; ++i) tick(port, 1s);  // N = 3 seconds at A = 36 USD/h
  EXPECT_DOUBLE_EQ(counters(port, 1).dollars, 3 * 0.01);

  write_catalog(72);
  const double energy_dollars = counters(port, 1).energy_dollars;
  EXPECT_GT(energy_dollars, 0);
  agent->reload();  // SIGHUP
  EXPECT_NE(log_text_.str().find("msg=\"price catalog reloaded\""), std::string::npos) << log_text_.str();
  for (int i = 0; i < 2; ++i) tick(port, 1s);  // M = 2 seconds at B = 72 USD/h
  EXPECT_NEAR(counters(port, 1).dollars, 3 * 0.01 + 2 * 0.02, 1e-12);
  EXPECT_NEAR(counters(port, 1).idle, 3 * 0.01 + 2 * 0.02, 1e-12);
  EXPECT_EQ(value(port, "gpuscope_gpu_hourly_price_dollars", 1), 72) << "the price series follows";
  EXPECT_EQ(counters(port, 1).energy_dollars, energy_dollars) << "the new catalog has no energy price: the counter stays";
  EXPECT_GT(counters(port, 1).energy, 0);

  // A catalog that no longer loads keeps the prices the agent has.
  std::ofstream(catalog_file) << "gpus: [\n";
  agent->reload();
  EXPECT_NE(log_text_.str().find("price catalog reload failed; keeping the previous prices"), std::string::npos);
  tick(port, 1s);
  EXPECT_NEAR(counters(port, 1).dollars, 3 * 0.01 + 3 * 0.02, 1e-12);
  ASSERT_TRUE(agent->stop());
}

}  // namespace
}  // namespace gpuscope::agent
