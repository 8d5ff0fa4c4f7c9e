// The agent's history as a user meets it: queries through its Prometheus API and `gpuscope eval`,
// staleness when a GPU is lost, and what survives a kill -9 (at most one flush interval lost).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <thread>

#include "e2e/agent_fixture.h"
#include "e2e/background_process.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

const std::string kExe = GPUSCOPE_EXE;

json query(int port, const std::string& q) {
  auto r = http_get(port, "/api/v1/query?query=" + url_encode(q));
  return json::parse(r.body, nullptr, false);
}

double scalar_of(const json& vector_result) {
  if (!vector_result.is_object() || vector_result["data"]["result"].empty()) return -1;
  return std::stod(vector_result["data"]["result"][0]["value"][1].get<std::string>());
}

// Polls until `q`'s single value reaches `at_least` (or gives up).
double wait_for_value(int port, const std::string& q, double at_least, std::chrono::seconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  double v = -1;
  while (std::chrono::steady_clock::now() < deadline) {
    v = scalar_of(query(port, q));
    if (v >= at_least) break;
    std::this_thread::sleep_for(100ms);
  }
  return v;
}

TEST(HistoryE2e, QueriesThroughTheApiAndEval) {
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "200ms"},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  const std::string count = "count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1m])";
  ASSERT_GE(wait_for_value(agent.port, count, 5), 5) << agent.process->output();

  auto per_gpu = query(agent.port, "max by (gpu) (DCGM_FI_DEV_GPU_TEMP)");
  EXPECT_EQ(per_gpu["data"]["result"].size(), 8u) << per_gpu.dump();
  auto labels = json::parse(http_get(agent.port, "/api/v1/labels").body);
  for (const char* l : {"__name__", "gpu", "UUID", "Hostname", "modelName", "pci_bus_id", "device"}) {
    EXPECT_NE(std::find(labels["data"].begin(), labels["data"].end(), l), labels["data"].end()) << l;
  }
  EXPECT_EQ(json::parse(http_get(agent.port, "/api/v1/status/buildinfo").body)["status"], "success");
  // The agent's own series are history too: its memory over time, its readings counted.
  EXPECT_GT(scalar_of(query(agent.port, "max_over_time(process_resident_memory_bytes[1m])")), 1e6);
  EXPECT_GE(scalar_of(query(agent.port, "max_over_time(gpuscope_samples_total[1m])")), 4);

  const std::string url = "http://127.0.0.1:" + std::to_string(agent.port);
  auto table = run_command({kExe, "eval", "max by (gpu) (DCGM_FI_DEV_GPU_TEMP)", "--url", url});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 8) << table.out;
  EXPECT_NE(table.out.find("{gpu=\"3\"} => "), std::string::npos) << table.out;

  auto json_out = run_command({kExe, "eval", "DCGM_FI_DEV_GPU_TEMP", "--url", url, "--start", "now-5s", "--end", "now",
                               "--step", "1s", "--format", "json"});
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  auto j = json::parse(json_out.out);
  EXPECT_EQ(j["data"]["resultType"], "matrix");
  EXPECT_EQ(j["data"]["result"].size(), 8u);

  auto bad = run_command({kExe, "eval", "sum(DCGM_FI_DEV_GPU_TEMP", "--url", url});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("gpuscope: bad_data: invalid parameter \"query\": 1:25: parse error"), std::string::npos) << bad.err;
  auto both = run_command({kExe, "eval", "up", "--url", url, "--data-dir", "/tmp"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_EQ(both.err, "gpuscope: eval needs exactly one of --url and --data-dir\n");
  auto unreachable = run_command({kExe, "eval", "up", "--url", "http://127.0.0.1:" + std::to_string(free_port())});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.err.find("gpuscope: http://127.0.0.1:"), std::string::npos) << unreachable.err;
}

TEST(HistoryE2e, ALostGpusSeriesEndWithAStalenessMarker) {
  TempDir dir;
  const auto scenario_file = dir.write("lost.yaml",
                                       "seed: 5\nnode: {hostname: lost-test}\n"
                                       "gpus: {count: 2, model: NVIDIA H100 80GB HBM3}\n"
                                       "workload: {profile: training}\n"
                                       "faults:\n  - {type: gpu_lost, gpu: 1, at: 2s, for: 60s}\n");
  Agent agent({"--simulate=" + scenario_file, "serve", "--listen", "127.0.0.1:0", "--interval", "100ms"}, live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  // Lost at 2 s: its last value is within the 5 m lookback, yet the instant selector has nothing,
  // because the agent wrote a staleness marker when the series ended, as Prometheus does.
  std::this_thread::sleep_for(3500ms);
  auto lost = query(agent.port, "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"}");
  EXPECT_TRUE(lost["data"]["result"].empty()) << lost.dump();
  auto remembered = query(agent.port, "last_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"1\"}[1m])");
  EXPECT_EQ(remembered["data"]["result"].size(), 1u) << "its history stays: " << remembered.dump();
  auto other = query(agent.port, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}");
  EXPECT_EQ(other["data"]["result"].size(), 1u) << "GPU 0 goes on";
}

// eval --data-dir beside a running agent reads what it has flushed, read-only, and says in one line
// that the newest readings are still in the agent's memory and how to get them.
TEST(HistoryE2e, EvalOnALiveAgentsDataDirSaysTheNewestReadingsAreInItsMemory) {
  TempDir data;
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--interval", "100ms",
               "--flush-interval", "1s", "--data-dir", data.path.string()},
              live_env());
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  std::this_thread::sleep_for(1500ms);  // one flush
  const std::string count = "count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1h])";
  auto live = run_command({kExe, "eval", count, "--data-dir", data.path.string(), "--format", "json"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  EXPECT_GT(scalar_of(json::parse(live.out)), 0) << live.out;
  EXPECT_EQ(live.err, "gpuscope: note: an agent (pid " + std::to_string(agent.process->pid()) + ") is recording into " +
                          data.path.string() +
                          "; its newest readings (up to its --flush-interval, 60s by default) are only in its memory: "
                          "--url with its address (e.g. http://127.0.0.1:9400) includes them\n");
}

TEST(HistoryE2e, AKill9LosesAtMostOneFlushIntervalAndTheAgentCarriesOn) {
  TempDir data;
  const std::vector<std::string> args{"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0",
                                      "--interval", "100ms", "--flush-interval", "1s", "--data-dir",
                                      data.path.string()};
  const std::string count = "count_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}[1h])";
  double before = 0;
  {
    Agent agent(args, live_env());
    ASSERT_TRUE(agent.ready()) << agent.process->output();
    before = wait_for_value(agent.port, count, 30);
    ASSERT_GE(before, 30) << agent.process->output();
    agent.process->signal_and_wait(SIGKILL, 5s);  // no exit code: killed
    ASSERT_FALSE(agent.process->running());
  }
  // Read offline: at most one flush interval (10 readings at 100 ms) and the reading in flight are gone.
  auto offline = run_command({kExe, "eval", count, "--data-dir", data.path.string(), "--format", "json"});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  const double kept = scalar_of(json::parse(offline.out));
  EXPECT_GE(kept, before - 12) << "lost more than one flush interval";
  EXPECT_LE(kept, before + 12);
  EXPECT_EQ(offline.err, "") << "a damaged chunk after kill -9";

  // The agent restarts on the same directory and appends after what was kept.
  Agent again(args, live_env());
  ASSERT_TRUE(again.ready()) << again.process->output();
  EXPECT_GE(wait_for_value(again.port, count, kept + 10), kept + 10) << again.process->output();
  EXPECT_EQ(again.process->output().find("damaged"), std::string::npos) << again.process->output();
}

}  // namespace
}  // namespace gpuscope::e2e
