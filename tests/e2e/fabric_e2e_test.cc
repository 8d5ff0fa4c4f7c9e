// `gpuscope serve` over the simulated demo GPUs and a fake sysfs tree (GPUSCOPE_SYSFS_ROOT) whose GPU
// functions carry the demo's bus ids: the fabric series come out next to the GPU families with the near
// GPUs and the host label, move as the tree's counters move, reach the history, and pass promtool.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "agent/fabric_sysfs_tree.h"
#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"

namespace gpuscope::e2e {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The sample line of `text` named `name` whose labels contain every one of `has`; empty when none.
std::string line_of(const std::string& text, const std::string& name, const std::vector<std::string>& has) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(name + "{")) continue;
    bool all = true;
    for (const auto& h : has) all = all && line.find(h) != std::string::npos;
    if (all) return line;
  }
  return {};
}

double value_of(const std::string& line) { return std::stod(line.substr(line.rfind(' ') + 1)); }

// Polls /metrics (real time; the agent reads the fabric every second) until `done` holds.
template <typename Done>
std::string metrics_until(const Agent& agent, Done done) {
  std::string m;
  for (int i = 0; i < 300; ++i) {
    m = agent.metrics();
    if (done(m)) break;
    std::this_thread::sleep_for(100ms);
  }
  return m;
}

TEST(FabricE2e, DemoGpusAndAFakeFabricMeetInOneScrapeAndTheCountersMove) {
  TempDir dir;
  fabric_test::FakeSysfs sysfs(dir.path / "sys");
  sysfs.standard_host();
  // The simulator's live clock: readings (and the fabric families recorded with them) get new times.
  auto env = live_env();
  env["GPUSCOPE_SYSFS_ROOT"] = sysfs.root().string();
  Agent agent({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--fabric-interval", "1s"},
              env);
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  std::string m = agent.metrics();
  const std::string ib = line_of(m, "gpuscope_fabric_transmit_bytes_total", {R"(device="mlx5_0")"});
  ASSERT_FALSE(ib.empty()) << m.substr(0, 2000) << agent.process->output();
  EXPECT_NE(ib.find(R"(gpu="0,1")"), std::string::npos) << ib;
  EXPECT_NE(ib.find(R"(link_layer="InfiniBand")"), std::string::npos) << ib;
  EXPECT_EQ(value_of(ib), 4000) << "port_xmit_data 1000 words";
  // The same host label as the GPU series.
  const std::string gpu0 = line_of(m, "DCGM_FI_DEV_GPU_UTIL", {R"(gpu="0")"});
  ASSERT_FALSE(gpu0.empty());
  const auto host_at = gpu0.find("Hostname=\"");
  ASSERT_NE(host_at, std::string::npos);
  const std::string host = gpu0.substr(host_at, gpu0.find('"', host_at + 10) - host_at + 1);
  EXPECT_NE(ib.find(host), std::string::npos) << ib << " vs " << host;
  EXPECT_NE(line_of(m, "gpuscope_fabric_transmit_bytes_total", {R"(device="rdmap131s0")", R"(gpu="4")"}), "");
  EXPECT_EQ(value_of(line_of(m, "gpuscope_collector_success", {R"(collector="fabric")"})), 1);
  EXPECT_EQ(m.find("veth1a2b"), std::string::npos);

  // The counters move: the next reading shows it.
  sysfs.set_rdma("mlx5_0", "counters/port_xmit_data", 2000);
  sysfs.set_rdma("rdmap131s0", "hw_counters/rx_drops", 5);
  m = metrics_until(agent, [](const std::string& text) {
    const auto l = line_of(text, "gpuscope_fabric_transmit_bytes_total", {R"(device="mlx5_0")"});
    return !l.empty() && value_of(l) == 8000;
  });
  EXPECT_EQ(value_of(line_of(m, "gpuscope_fabric_transmit_bytes_total", {R"(device="mlx5_0")"})), 8000);
  EXPECT_EQ(value_of(line_of(m, "gpuscope_fabric_discards_total", {R"(device="rdmap131s0")", R"(direction="receive")"})), 5);

  // The history records them with the GPU readings: the query API sees the drops.
  double recorded = -1;
  for (int i = 0; i < 100 && recorded != 5; ++i) {
    auto r = http_get(agent.port, "/api/v1/query?query=" +
                                      url_encode(R"(gpuscope_fabric_discards_total{device="rdmap131s0",direction="receive"})"));
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_discarded() && j["status"] == "success" && !j["data"]["result"].empty()) {
      recorded = std::stod(j["data"]["result"][0]["value"][1].get<std::string>());
    }
    if (recorded != 5) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(recorded, 5);

  // The fabric families lint clean (the GPU families' dcgm-exporter names are PromtoolFindsOnly…'s business).
  if (fs::exists("/usr/bin/promtool")) {
    std::string fabric_only;
    std::istringstream in(m);
    for (std::string line; std::getline(in, line);) {
      if (line.find("gpuscope_fabric_") != std::string::npos) fabric_only += line + "\n";
    }
    const auto file = dir.write("fabric.txt", fabric_only);
    auto r = run_command({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + file});
    EXPECT_EQ(r.out + r.err, "") << fabric_only;
  }
}

TEST(FabricE2e, SimulatedGpusReadNoFabricUnlessATreeIsNamedAndNoFabricTurnsItOff) {
  Agent plain({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0"}, frozen_env(600));
  ASSERT_TRUE(plain.ready()) << plain.process->output();
  EXPECT_EQ(plain.metrics().find("gpuscope_fabric_"), std::string::npos);
  EXPECT_NE(plain.process->output().find("fabric: not read under --simulate"), std::string::npos) << plain.process->output();

  TempDir dir;
  fabric_test::FakeSysfs sysfs(dir.path / "sys");
  sysfs.standard_host();
  auto env = frozen_env(600);
  env["GPUSCOPE_SYSFS_ROOT"] = sysfs.root().string();
  Agent off({"--simulate=" + scenario("demo.yaml"), "serve", "--listen", "127.0.0.1:0", "--no-fabric"}, env);
  ASSERT_TRUE(off.ready()) << off.process->output();
  EXPECT_EQ(off.metrics().find("gpuscope_fabric_"), std::string::npos);
}

// The scenario's own fabric (fabric_degrading.yaml: 8 NDR rails, mlx5_6 failing from 8m) comes out of
// `serve --simulate` with no tree named: the simulated driver lays it out, the collector reads it, and the
// ports carry the GPUs of the switch the scenario put them behind.
TEST(FabricE2e, AScenariosFabricIsReadUnderSimulateWithItsPcieLocality) {
  TempDir dir;
  auto env = frozen_env(600);
  env["TMPDIR"] = dir.path.string();  // where the simulated driver makes its tree
  const auto trees = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) n += e.path().filename().string().starts_with("gpuscope-sim-sysfs-");
    return n;
  };
  Agent agent({"--simulate=" + scenario("fabric_degrading.yaml"), "serve", "--listen", "127.0.0.1:0"}, env);
  ASSERT_TRUE(agent.ready()) << agent.process->output();
  EXPECT_EQ(trees(), 1);
  const std::string m = metrics_until(agent, [](const std::string& text) {
    return text.find("gpuscope_fabric_errors_total") != std::string::npos;
  });
  for (int i = 0; i < 8; ++i) {
    const std::string near = std::to_string(i / 2 * 2) + "," + std::to_string(i / 2 * 2 + 1);
    EXPECT_NE(line_of(m, "gpuscope_fabric_port_up", {"device=\"mlx5_" + std::to_string(i) + "\"", "gpu=\"" + near + "\"",
                                                      "Hostname=\"fabric-h100-01\"", "link_layer=\"InfiniBand\""}),
              "")
        << "mlx5_" << i << " near GPUs " << near << "\n" << m;
  }
  // 10 minutes in: mlx5_6 has counted 20 symbol errors a second since 8m, its peers none.
  const std::string bad = line_of(m, "gpuscope_fabric_errors_total", {"device=\"mlx5_6\"", "kind=\"symbol\""});
  ASSERT_NE(bad, "") << m;
  EXPECT_EQ(value_of(bad), 120.0 * 20);
  const std::string good = line_of(m, "gpuscope_fabric_errors_total", {"device=\"mlx5_7\"", "kind=\"symbol\""});
  ASSERT_NE(good, "") << m;
  EXPECT_EQ(value_of(good), 0.0);
  // 22 GB/s for 8 minutes, then 6 GB/s: bytes, not the PMA's 4-octet words.
  const std::string sent = line_of(m, "gpuscope_fabric_transmit_bytes_total", {"device=\"mlx5_6\""});
  ASSERT_NE(sent, "") << m;
  EXPECT_EQ(value_of(sent), 480.0 * 22e9 + 120.0 * 6e9);
  // A clean stop (nvmlShutdown) takes the tree away.
  EXPECT_EQ(agent.process->signal_and_wait(SIGTERM, 10s), 0) << agent.process->output();
  EXPECT_EQ(trees(), 0);
}

}  // namespace
}  // namespace gpuscope::e2e
