// The agent's live diagnosis as a user meets it: `serve` on a parked node answers /api/v1/diagnosis
// with a verdict per GPU, exports gpuscope_diagnosis_info on /metrics, and its history answers PromQL
// on the verdicts through the query API and `gpuscope eval`.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(DiagnosisE2e, ServeOnAnIdleNodeShowsTheVerdictInTheApiMetricsAndHistory) {
  Agent agent({"--simulate=" + scenario("idle.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "200ms"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  auto r = http_get(agent.port, "/api/v1/diagnosis");
  ASSERT_EQ(r.status, 200) << r.body;
  auto d = json::parse(r.body);
  EXPECT_EQ(d["status"], "success");
  EXPECT_EQ(d["data"]["window_seconds"], 30);
  ASSERT_EQ(d["data"]["gpus"].size(), 8u) << r.body;
  for (const auto& g : d["data"]["gpus"]) {
    EXPECT_EQ(g["verdict"], "idle") << g.dump();
    EXPECT_EQ(g["host"], "idle-h100-01");
    EXPECT_FALSE(g["fix"].get<std::string>().empty());
  }
  auto one = json::parse(http_get(agent.port, "/api/v1/diagnosis?gpu=3").body);
  ASSERT_EQ(one["data"]["gpus"].size(), 1u);
  EXPECT_EQ(one["data"]["gpus"][0]["gpu"], "3");
  auto bad = http_get(agent.port, "/api/v1/diagnosis?window=2h");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(json::parse(bad.body)["errorType"], "bad_data");

  const std::string metrics = agent.metrics();
  std::size_t idle_series = 0;
  for (std::size_t at = 0; (at = metrics.find("\ngpuscope_diagnosis_info{", at)) != std::string::npos; ++at) {
    const auto end = metrics.find('\n', at + 1);
    EXPECT_NE(metrics.substr(at, end - at).find("verdict=\"idle\"} 1"), std::string::npos) << metrics.substr(at, end - at);
    ++idle_series;
  }
  EXPECT_EQ(idle_series, 8u);
  EXPECT_NE(metrics.find("# TYPE gpuscope_diagnosis_changes_total counter"), std::string::npos);

  // A few evaluations later, the history has them: the query API and `gpuscope eval` over it.
  const std::string q = "count(count_over_time(gpuscope_diagnosis_info{verdict=\"idle\"}[1m]) >= 3)";
  json counted;
  for (int i = 0; i < 100; ++i) {
    counted = json::parse(http_get(agent.port, "/api/v1/query?query=" + url_encode(q)).body, nullptr, false);
    if (!counted["data"]["result"].empty() && counted["data"]["result"][0]["value"][1] == "8") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(counted["data"]["result"].size(), 1u) << counted.dump();
  EXPECT_EQ(counted["data"]["result"][0]["value"][1], "8") << counted.dump();
  const auto eval = run_command({GPUSCOPE_EXE, "eval", "count by (verdict) (gpuscope_diagnosis_info)", "--url",
                                 "http://127.0.0.1:" + std::to_string(agent.port)});
  EXPECT_EQ(eval.exit_code, 0) << eval.err;
  EXPECT_NE(eval.out.find("idle"), std::string::npos) << eval.out;
  EXPECT_NE(eval.out.find("8"), std::string::npos) << eval.out;
}

// --no-history keeps the diagnosis (its recent window is fed by the readings, not the history); only
// the on-demand diagnosis of another window or time needs the history.
TEST(DiagnosisE2e, WithoutHistoryTheLiveDiagnosisRunsAndOnlyTheOnDemandOneSaysWhyNot) {
  Agent agent({"--simulate=" + scenario("idle.yaml"), "serve", "--listen", "127.0.0.1:0", "--no-history"}, live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  auto r = http_get(agent.port, "/api/v1/diagnosis");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto gpus = json::parse(r.body)["data"]["gpus"];
  ASSERT_EQ(gpus.size(), 8u) << r.body;
  for (const auto& g : gpus) EXPECT_EQ(g["verdict"], "idle") << g.dump();
  EXPECT_NE(agent.metrics().find("gpuscope_diagnosis_info{"), std::string::npos);
  auto on_demand = http_get(agent.port, "/api/v1/diagnosis?window=1m");
  EXPECT_EQ(on_demand.status, 503);
  EXPECT_EQ(json::parse(on_demand.body)["error"],
            "no history to diagnose (the agent runs with --no-history, which keeps no readings)");
}

}  // namespace
}  // namespace gpuscope::e2e
