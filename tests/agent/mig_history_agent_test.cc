// The agent's history of a MIG GPU on scenarios/mig.yaml, on a virtual clock: the 2g.20gb destroyed at
// 10m and every instance when MIG turns off at 20m leave PromQL's instant queries at the next reading (the
// store writes a staleness marker for each series a reading lacks, as Prometheus does for a scrape),
// rather than lingering for the 5 minute lookback; their past stays queryable.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/simulated_agent.h"
#include "e2e/http_client.h"

namespace gpuscope::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Percent-encodes a PromQL expression for a query string.
std::string mig_history_url_encode(std::string_view text) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

class MigHistoryAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope-mig-history-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_ = agent_testing::loopback_config(dir_, &clock_);
    // A reading a minute: each tick of the test is one reading, well inside the 5 minute lookback.
    config_.interval = 60s;
  }
  void TearDown() override {
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    fs::remove_all(dir_);
  }

  static double samples_total(int port) {
    const std::string body = e2e::http_get(port, "/metrics").body;
    const std::string name = "\ngpuscope_samples_total ";
    const auto at = body.find(name);
    return at == std::string::npos ? -1 : std::stod(body.substr(at + name.size()));
  }

  // Moves the clock one reading on and waits until the agent has taken it.
  void next_reading(int port) {
    const double before = samples_total(port);
    clock_.advance(config_.interval);
    for (int i = 0; i < 10000 && samples_total(port) <= before; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_GT(samples_total(port), before);
  }

  // The instant query's result at the clock's time.
  nlohmann::json instant(int port, std::string_view promql) {
    const auto r = e2e::http_get(port, "/api/v1/query?query=" + mig_history_url_encode(promql) + "&time=" +
                                           std::to_string(static_cast<double>(clock_.unix_ms()) / 1000.0));
    EXPECT_EQ(r.status, 200) << r.body;
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_discarded() ? nlohmann::json::array() : j["data"]["result"];
  }

  fs::path dir_;
  model::VirtualClock clock_;
  std::stringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
  AgentConfig config_;
  std::int64_t start_ms_ = 0;
};

TEST_F(MigHistoryAgentTest, DestroyedInstancesAndMigTurnedOffEndTheirSeriesAtTheNextReading) {
  auto agent = agent_testing::start_simulated_agent(config_, log_, "mig.yaml");
  ASSERT_TRUE(agent);
  const int port = agent->port();
  const auto minute = [&] { return (clock_.unix_ms() - start_ms_) / 60000; };
  start_ms_ = clock_.unix_ms();

  // 0m..9m: GPU 0 has 4 GPU instances (ids 2, 4, 7, 8), the 2g.20gb is GPU instance 4.
  while (minute() < 9) next_reading(port);
  EXPECT_EQ(instant(port, R"(gpuscope_mig_instance_info{gpu="0"})").size(), 4u);
  const auto before = instant(port, R"(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID="4"})");
  ASSERT_EQ(before.size(), 1u) << before.dump();
  EXPECT_EQ(before[0]["metric"]["GPU_I_PROFILE"], "2g.20gb");

  // The readings from 10m on lack the 2g.20gb: gone from instant queries at once, not 5 minutes later
  // (its last sample, at 9m, is inside the lookback of every query up to 14m).
  while (minute() < 11) {
    next_reading(port);
    EXPECT_TRUE(instant(port, R"(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID="4"})").empty()) << "at " << minute() << "m";
    EXPECT_TRUE(instant(port, R"(gpuscope_mig_instance_info{GPU_I_ID="4"})").empty());
    EXPECT_TRUE(instant(port, R"(gpuscope_process_memory_bytes{pid="5002"})").empty()) << "its server went with it";
    EXPECT_EQ(instant(port, R"(gpuscope_mig_instance_info{gpu="0"})").size(), 3u);
  }
  // Its past is kept: one sample per reading from 0m to 9m.
  const auto past = instant(port, R"(count_over_time(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID="4"}[30m]))");
  ASSERT_EQ(past.size(), 1u) << past.dump();
  EXPECT_EQ(past[0]["value"][1], "10");

  // MIG turned off at 20m: every instance series ends, the GPU's own memory series begins.
  while (minute() < 19) next_reading(port);
  EXPECT_EQ(instant(port, R"(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID!=""})").size(), 3u);
  EXPECT_TRUE(instant(port, R"(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID=""})").empty());
  next_reading(port);
  ASSERT_EQ(minute(), 20);
  for (const char* q : {R"(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID!=""})", R"({__name__=~"gpuscope_mig_instance_.*"})",
                        R"(DCGM_FI_PROF_SM_ACTIVE{GPU_I_ID!=""})"}) {
    EXPECT_TRUE(instant(port, q).empty()) << q << ": " << instant(port, q).dump();
  }
  EXPECT_EQ(instant(port, R"(DCGM_FI_DEV_FB_USED{gpu="0",GPU_I_ID=""})").size(), 1u);
  const auto mode = instant(port, R"(gpuscope_mig_mode_enabled{gpu="0"})");
  ASSERT_EQ(mode.size(), 1u);
  EXPECT_EQ(mode[0]["value"][1], "0");
  EXPECT_TRUE(agent->stop());
}

}  // namespace
}  // namespace gpuscope::agent
