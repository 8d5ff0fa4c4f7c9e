// The Agent on the simulated NVML and a virtual clock: readings come when the test moves the clock, and
// the simulator's time follows it, so what the agent recorded can be checked sample by sample.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/simulated_agent.h"
#include "e2e/http_client.h"

namespace gpuscope::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscope-agent-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    unsetenv("GPUSCOPE_SIM_SCENARIO");
    config_ = agent_testing::loopback_config(dir_, &clock_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<nvml::NvmlBackend> backend() {
    // The simulator starts where the agent's clock stands; the agent moves it from then on.
    setenv("GPUSCOPE_SIM_TIME", "0", 1);
    nvml::BackendOptions o;
    o.simulate = true;
    o.library_path = GPUSCOPE_SIM_LIB;
    auto b = nvml::NvmlBackend::open(o);
    unsetenv("GPUSCOPE_SIM_TIME");
    EXPECT_TRUE(b.has_value()) << (b ? "" : b.error().message);
    return b ? std::move(*b) : nullptr;
  }

  std::string write(const std::string& name, const std::string& text) {
    const auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // A counter of the agent's own series in /metrics, or -1.
  static double agent_counter(int port, const std::string& name) {
    const std::string body = e2e::http_get(port, "/metrics").body;
    const auto at = body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stod(body.substr(at + name.size() + 2));
  }

  // Moves the clock and waits until the agent has taken the reading then due.
  void tick(int port, std::chrono::nanoseconds d) {
    const double before = agent_counter(port, "gpuscope_samples_total");
    clock_.advance(d);
    for (int i = 0; i < 10000 && agent_counter(port, "gpuscope_samples_total") <= before; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }

  nlohmann::json query(int port, const std::string& q) {
    auto r = e2e::http_get(port, "/api/v1/query?query=" + q + "&time=" +
                                     std::to_string(static_cast<double>(clock_.unix_ms()) / 1000.0));
    EXPECT_EQ(r.status, 200) << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  }

  fs::path dir_;
  model::VirtualClock clock_;
  std::stringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
  AgentConfig config_;
};

TEST_F(AgentTest, ReadsAtEachTickOfItsClockAndRecordsAtThatTime) {
  auto agent = Agent::load(config_, log_);
  ASSERT_TRUE(agent) << agent.error().lines.at(0);
  auto started = (*agent)->start(backend(), [] { return false; });
  ASSERT_TRUE(started) << started.error().lines.at(0);
  ASSERT_EQ(*started, Agent::Started::kServing);
  const int port = (*agent)->port();
  ASSERT_GT(port, 0);

  // The port opened after the first reading: GPU series and a healthy agent from the first request.
  auto metrics = e2e::http_get(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"7\""), std::string::npos);
  EXPECT_EQ(e2e::http_get(port, "/healthz").status, 200);

  const std::int64_t t0 = clock_.unix_ms();
  for (int i = 0; i < 4; ++i) tick(port, 1s);
  // Five readings, each recorded at the agent's clock time (the simulator followed it).
  auto ts = query(port, "timestamp(DCGM_FI_DEV_GPU_TEMP%7Bgpu%3D%220%22%7D)");
  ASSERT_EQ(ts["data"]["result"].size(), 1u) << ts.dump();
  EXPECT_EQ(ts["data"]["result"][0]["value"][1], std::to_string((t0 + 4000) / 1000)) << ts.dump();
  auto counted = query(port, "count_over_time(DCGM_FI_DEV_GPU_TEMP%7Bgpu%3D%220%22%7D%5B1h%5D)");
  EXPECT_EQ(counted["data"]["result"][0]["value"][1], "5") << counted.dump();

  // Flushes run on their own thread at the flush interval of the agent's clock, never at a reading.
  EXPECT_EQ(agent_counter(port, "gpuscope_tsdb_flushes_total"), 0);
  clock_.advance(config_.flush_interval);
  for (int i = 0; i < 10000 && agent_counter(port, "gpuscope_tsdb_flushes_total") < 1; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(agent_counter(port, "gpuscope_tsdb_flushes_total"), 1);
  EXPECT_GT(agent_counter(port, "gpuscope_tsdb_head_series"), 100);

  EXPECT_TRUE((*agent)->stop());
  EXPECT_EQ(e2e::http_get(port, "/metrics", {}, 1s).status, 0) << "the port is closed after stop";
  // The last flush wrote the readings to the data directory.
  store::TsdbOptions ro;
  ro.data_dir = config_.data_dir;
  ro.read_only = true;
  auto stored = store::Tsdb::open(ro, clock_.unix_ms());
  ASSERT_TRUE(stored) << stored.error();
  std::vector<store::LabelMatcher> m;
  m.push_back(*store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, "__name__", "DCGM_FI_DEV_GPU_TEMP"));
  m.push_back(*store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, "gpu", "0"));
  auto series = (*stored)->select(m, t0 - 1, t0 + 10'000);
  ASSERT_TRUE(series);
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].samples.size(), 5u);
}

TEST_F(AgentTest, ABadCollectorsFileIsAConfigErrorBeforeAnythingStarts) {
  config_.collectors_file = write("c.csv", "DCGM_FI_DEV_GPU_TEMPP, gauge, t\n");
  auto agent = Agent::load(config_, log_);
  ASSERT_FALSE(agent);
  EXPECT_EQ(agent.error().kind, AgentError::Kind::kConfig);
  EXPECT_EQ(agent.error().lines,
            std::vector<std::string>{config_.collectors_file +
                                     ":1: unknown field 'DCGM_FI_DEV_GPU_TEMPP' (did you mean DCGM_FI_DEV_GPU_TEMP?)"});
  EXPECT_FALSE(fs::exists(config_.data_dir)) << "nothing was created";
}

TEST_F(AgentTest, NotificationsWithoutRulesNeedNoRuleManager) {
  // The external labels the notifier sends come from the config, not from a rule manager that exists
  // only with --rules (the CLI refuses --config without --rules; the agent must not depend on that).
  config_.notify_config = write("notify.yml", "route: {receiver: r}\nreceivers: [{name: r}]\n");
  config_.external_labels = {{"cluster", "test"}};
  auto agent = Agent::load(config_, log_);
  ASSERT_TRUE(agent) << agent.error().lines.at(0);
}

TEST_F(AgentTest, RulesWithoutHistoryAreRefusedAtLoad) {
  // The rules loop reads and writes the store: without history there is none to give it.
  config_.history = false;
  config_.rule_specs = {write("r.yml", "groups: [{name: g, rules: [{alert: A, expr: vector(1)}]}]\n")};
  auto agent = Agent::load(config_, log_);
  ASSERT_FALSE(agent);
  EXPECT_EQ(agent.error().kind, AgentError::Kind::kConfig);
  EXPECT_EQ(agent.error().lines,
            std::vector<std::string>{"--rules needs the history that --no-history turns off: rules query it"});
}

TEST_F(AgentTest, ADataDirectoryInUseIsARuntimeErrorNamingTheOtherAgent) {
  auto first = Agent::load(config_, log_);
  ASSERT_TRUE(first);
  ASSERT_TRUE((*first)->start(backend(), [] { return false; }));
  auto second = Agent::load(config_, log_);
  ASSERT_TRUE(second);
  auto started = (*second)->start(backend(), [] { return false; });
  ASSERT_FALSE(started);
  EXPECT_EQ(started.error().kind, AgentError::Kind::kRuntime);
  EXPECT_NE(started.error().lines.at(0).find("in use by another gpuscope serve (pid " + std::to_string(getpid())),
            std::string::npos)
      << started.error().lines.at(0);
  EXPECT_TRUE((*second)->stop());
  EXPECT_TRUE((*first)->stop());
}

TEST_F(AgentTest, AStopRequestedBeforeTheFirstReadingEndsTheStart) {
  config_.history = false;
  auto agent = Agent::load(config_, log_);
  ASSERT_TRUE(agent);
  int asked = 0;
  auto started = (*agent)->start(backend(), [&] { return ++asked > 0; });
  ASSERT_TRUE(started);
  // Asked only while no reading has come; asked once, the answer ends start() with no port open.
  if (*started == Agent::Started::kStopRequested) {
    EXPECT_EQ(asked, 1);
    EXPECT_EQ((*agent)->port(), 0);
  } else {
    EXPECT_EQ(asked, 0);
  }
  EXPECT_TRUE((*agent)->stop());
}

TEST_F(AgentTest, DiagnosesEachGpuFromTheFirstRequestAndWritesTheVerdictsToItsHistory) {
  setenv("GPUSCOPE_SIM_SCENARIO", GPUSCOPE_SOURCE_DIR "/scenarios/idle.yaml", 1);
  config_.diagnosis_interval = 1s;  // at every reading (the default is every 5 s)
  auto agent = Agent::load(config_, log_);
  ASSERT_TRUE(agent) << agent.error().lines.at(0);
  ASSERT_TRUE((*agent)->start(backend(), [] { return false; }));
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  const int port = (*agent)->port();

  // The port opened after the first diagnosis: a verdict per GPU from the first request.
  auto first = e2e::http_get(port, "/api/v1/diagnosis");
  ASSERT_EQ(first.status, 200) << first.body;
  auto d = nlohmann::json::parse(first.body);
  ASSERT_EQ(d["data"]["gpus"].size(), 8u) << first.body;
  for (const auto& g : d["data"]["gpus"]) EXPECT_EQ(g["verdict"], "idle") << g.dump();
  EXPECT_EQ(agent_counter(port, "gpuscope_diagnosis_evaluations_total"), 1);

  // One evaluation per --diagnosis.interval, each written at its time.
  for (int n = 2; n <= 4; ++n) {
    tick(port, 1s);
    for (int i = 0; i < 10000 && agent_counter(port, "gpuscope_diagnosis_evaluations_total") < n; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_EQ(agent_counter(port, "gpuscope_diagnosis_evaluations_total"), 4);
  const std::string metrics = e2e::http_get(port, "/metrics").body;
  EXPECT_NE(metrics.find("# TYPE gpuscope_diagnosis_info gauge\ngpuscope_diagnosis_info{"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(",verdict=\"idle\"} 1\n"), std::string::npos);
  auto info = query(port, "count_over_time(gpuscope_diagnosis_info%7Bgpu%3D%220%22,verdict%3D%22idle%22%7D%5B1h%5D)");
  ASSERT_EQ(info["data"]["result"].size(), 1u) << info.dump();
  EXPECT_EQ(info["data"]["result"][0]["value"][1], "4") << "one sample per evaluation, not per reading too";
  EXPECT_TRUE((*agent)->stop());
  EXPECT_NE(log_text_.str().find("msg=diagnosis interval=1000ms window=30s"), std::string::npos) << log_text_.str();
}

// Without history the recorder still feeds the diagnosis' recent window: verdicts as with history,
// only the on-demand diagnosis (any window, any time) needs the history.
TEST_F(AgentTest, WithoutHistoryTheDiagnosisRunsFromItsRecentWindow) {
  setenv("GPUSCOPE_SIM_SCENARIO", GPUSCOPE_SOURCE_DIR "/scenarios/idle.yaml", 1);
  config_.history = false;
  auto agent = Agent::load(config_, log_);
  ASSERT_TRUE(agent);
  ASSERT_TRUE((*agent)->start(backend(), [] { return false; }));
  unsetenv("GPUSCOPE_SIM_SCENARIO");
  const int port = (*agent)->port();
  const auto r = e2e::http_get(port, "/api/v1/diagnosis");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto d = nlohmann::json::parse(r.body);
  ASSERT_EQ(d["data"]["gpus"].size(), 8u) << r.body;
  for (const auto& g : d["data"]["gpus"]) EXPECT_EQ(g["verdict"], "idle") << g.dump();
  // The default: an evaluation every 5 s of readings at 1 s.
  for (int n = 2; n <= 3; ++n) {
    for (int k = 0; k < 4; ++k) tick(port, 1s);
    EXPECT_EQ(agent_counter(port, "gpuscope_diagnosis_evaluations_total"), n - 1) << "before its 5 s";
    tick(port, 1s);
    for (int i = 0; i < 10000 && agent_counter(port, "gpuscope_diagnosis_evaluations_total") < n; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_EQ(agent_counter(port, "gpuscope_diagnosis_evaluations_total"), 3);
  EXPECT_EQ(agent_counter(port, "gpuscope_diagnosis_evaluation_failures_total"), 0);
  EXPECT_NE(e2e::http_get(port, "/metrics").body.find(",verdict=\"idle\"} 1\n"), std::string::npos);
  const auto on_demand = e2e::http_get(port, "/api/v1/diagnosis?window=30s");
  EXPECT_EQ(on_demand.status, 503);
  EXPECT_EQ(nlohmann::json::parse(on_demand.body)["error"],
            "no history to diagnose (the agent runs with --no-history, which keeps no readings)");
  EXPECT_NE(log_text_.str().find("msg=diagnosis interval=5000ms window=30s history=\"no (idle since: the last window only)\""),
            std::string::npos)
      << log_text_.str();
  EXPECT_TRUE((*agent)->stop());
}

TEST_F(AgentTest, WithTheDiagnosisOffTheApiSaysWhyAndStillDiagnosesOnDemand) {
  config_.diagnosis = false;
  auto off = Agent::load(config_, log_);
  ASSERT_TRUE(off);
  ASSERT_TRUE((*off)->start(backend(), [] { return false; }));
  const auto r2 = e2e::http_get((*off)->port(), "/api/v1/diagnosis");
  EXPECT_EQ(r2.status, 503);
  EXPECT_EQ(nlohmann::json::parse(r2.body)["error"], "the diagnosis is off (--no-diagnosis)");
  EXPECT_EQ(e2e::http_get((*off)->port(), "/api/v1/diagnosis?window=30s").status, 200) << "on demand still works";
  EXPECT_TRUE((*off)->stop());
}

}  // namespace
}  // namespace gpuscope::agent
