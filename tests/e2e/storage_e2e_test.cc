// The agent's history when its disk misbehaves, as an operator would meet it: a damaged database at
// start and the data directory deleted under the running agent. /metrics and queries go on from
// memory, the store's counters say what happened, and nothing already written is lost.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The value of an unlabeled series of the agent's own in /metrics, or -1.
double own_value(int port, const std::string& name) {
  const std::string body = http_get(port, "/metrics").body;
  const auto at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + name.size() + 2));
}

// Polls until `name` reaches `at_least` (or gives up); the last value seen.
double wait_for_own_value(int port, const std::string& name, double at_least) {
  double v = -1;
  for (int i = 0; i < 200 && (v = own_value(port, name)) < at_least; ++i) std::this_thread::sleep_for(50ms);
  return v;
}

double samples_in_history(int port) {
  auto r = http_get(port, "/api/v1/query?query=" + url_encode("count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1h])"));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || j["data"]["result"].empty()) return -1;
  return std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
}

TEST(StorageE2e, ADamagedDatabaseAtStartIsMovedAsideAndTheAgentServes) {
  TempDir data;
  const fs::path dir = data.path / "history";
  fs::create_directories(dir);
  std::ofstream(dir / "chunks.sqlite") << std::string(8192, 'x');  // not an SQLite file
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "100ms",
               "--flush-interval", "1s", "--data-dir", dir.string()},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  EXPECT_TRUE(agent.process->wait_for_line("is damaged", 5s)) << agent.process->output();
  EXPECT_EQ(own_value(agent.port, "gpuscope_tsdb_databases_moved_aside_total"), 1);
  bool moved = false;
  for (const auto& e : fs::directory_iterator(dir)) moved = moved || e.path().filename().string().starts_with("chunks.sqlite.corrupt-");
  EXPECT_TRUE(moved) << "the damaged file is kept for inspection";
  EXPECT_GE(wait_for_own_value(agent.port, "gpuscope_tsdb_flushes_total", 1), 1) << agent.process->output();
  EXPECT_GT(samples_in_history(agent.port), 0);
}

TEST(StorageE2e, ADataDirectoryDeletedUnderTheAgentIsRecreatedWithWhatMemoryHolds) {
  TempDir data;
  const fs::path dir = data.path / "history";
  const std::vector<std::string> args{"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                                      "--interval", "100ms", "--flush-interval", "1s", "--data-dir", dir.string()};
  double before_delete = 0;
  {
    Agent agent(args, live_env());
    ASSERT_TRUE(agent.ready()) << agent.process->output();
    ASSERT_GE(wait_for_own_value(agent.port, "gpuscope_tsdb_flushes_total", 1), 1) << agent.process->output();
    before_delete = samples_in_history(agent.port);
    ASSERT_GT(before_delete, 0);
    fs::remove_all(dir);

    // Serving goes on from memory, and the next flush notices and writes everything again.
    EXPECT_EQ(http_get(agent.port, "/healthz").status, 200);
    EXPECT_GE(wait_for_own_value(agent.port, "gpuscope_tsdb_databases_recreated_total", 1), 1) << agent.process->output();
    EXPECT_TRUE(fs::exists(dir / "chunks.sqlite"));
    EXPECT_GE(samples_in_history(agent.port), before_delete);
    // The lock went with the directory; the agent took it again, so a second agent is still refused.
    auto second = run_command({GPUSCOPE_EXE, "--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                               "--data-dir", dir.string()},
                              live_env(), 20);
    EXPECT_EQ(second.exit_code, 1);
    EXPECT_NE(second.err.find("in use by another gpuscope serve (pid " + std::to_string(agent.process->pid()) + ")"),
              std::string::npos)
        << second.err;
    EXPECT_EQ(agent.process->signal_and_wait(SIGTERM, 5s), 0);
  }
  // A restart on the recreated directory finds what was written before the deletion.
  Agent again(args, live_env());
  ASSERT_TRUE(again.ready()) << again.process->output();
  EXPECT_GE(samples_in_history(again.port), before_delete) << again.process->output();
}

}  // namespace
}  // namespace gpuscope::e2e
