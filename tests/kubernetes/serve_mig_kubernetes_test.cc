// `gpuscope --simulate=scenarios/mig.yaml serve --kubernetes` against a fake kubelet that hands out MIG
// devices by their MIG UUIDs (the device plugin's mixed strategy): the agent's reading fills the MIG
// instances, labels each from the kubelet's map, and /metrics shows each instance's series and processes
// with its own container, the GPU's series with the last of them.
#include <csignal>
#include <map>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "e2e/agent_fixture.h"
#include "e2e/http_client.h"
#include "fake_kubelet.h"

namespace gpuscope::kubernetes_test {
namespace {

using namespace std::chrono_literals;

// GPU 0's MIG devices from gpuscope_mig_instance_info: GPU instance ID → (profile, MIG UUID).
std::map<std::string, std::pair<std::string, std::string>> serve_mig_instances(const std::string& metrics) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  static const std::regex info(
      R"re(gpuscope_mig_instance_info\{gpu="0",[^}]*GPU_I_PROFILE="([^"]+)",GPU_I_ID="(\d+)",[^}]*mig_uuid="([^"]+)"\} 1)re");
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), info), end; it != end; ++it) {
    out[(*it)[2]] = {(*it)[1], (*it)[3]};
  }
  return out;
}

// The lines of `family` for GPU 0's GPU instance `gi`.
std::vector<std::string> serve_mig_lines(const std::string& metrics, const std::string& family, const std::string& gi) {
  std::vector<std::string> out;
  std::size_t at = 0;
  const std::string head = family + "{gpu=\"0\",";
  while ((at = metrics.find(head, at)) != std::string::npos) {
    const std::string line = metrics.substr(at, metrics.find('\n', at) - at);
    if (line.find("GPU_I_ID=\"" + gi + "\"") != std::string::npos) out.push_back(line);
    at += head.size();
  }
  return out;
}

TEST(ServeMigKubernetes, EachMigInstanceAndItsProcessesCarryTheContainerHoldingIt) {
  e2e::TempDir dir;
  const std::string socket = (dir.path / "kubelet.sock").string();
  FakeKubelet kubelet(socket);
  // A minute into the scenario: GPU 0 in MIG mode with its first layout.
  e2e::Agent agent({"--simulate=" + std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/mig.yaml", "serve", "--listen",
                    "127.0.0.1:0", "--interval", "100ms", "--kubernetes", "--kubernetes.pod-resources-socket", socket,
                    "--kubernetes.refresh-interval", "1s"},
                   e2e::frozen_env(60));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  std::string m = agent.metrics();
  const auto instances = serve_mig_instances(m);
  ASSERT_GE(instances.size(), 2u) << m;
  // Two GPU instances to two pods, under their mixed-strategy resource names, the rest to nobody.
  const auto& [gi_a, a] = *instances.begin();
  const auto& [gi_b, b] = *std::next(instances.begin());
  kubelet.set_pods({gpu_pod("train-0", "ml", "trainer", {a.second}, "nvidia.com/mig-" + a.first),
                    gpu_pod("infer-1", "serving", "server", {b.second}, "nvidia.com/mig-" + b.first)});
  const std::string pod_a = R"(pod="train-0",namespace="ml",container="trainer")";
  const std::string pod_b = R"(pod="infer-1",namespace="serving",container="server")";
  const auto labelled = [&](const std::string& p) {
    const auto la = serve_mig_lines(p, "DCGM_FI_DEV_FB_USED", gi_a);
    const auto lb = serve_mig_lines(p, "DCGM_FI_DEV_FB_USED", gi_b);
    return la.size() == 1 && la[0].find(pod_a) != std::string::npos && lb.size() == 1 &&
           lb[0].find(pod_b) != std::string::npos;
  };
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!labelled(m) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(100ms);
    m = agent.metrics();
  }
  ASSERT_TRUE(labelled(m)) << m;

  // Every instance series of an allocated instance has its pod; another instance's has none.
  for (const std::string family : {"DCGM_FI_DEV_FB_USED", "gpuscope_mig_instance_info", "gpuscope_mig_instance_sms"}) {
    for (const auto& line : serve_mig_lines(m, family, gi_a)) EXPECT_NE(line.find(pod_a), std::string::npos) << line;
    for (const auto& [gi, unused] : instances) {
      if (gi == gi_a || gi == gi_b) continue;
      for (const auto& line : serve_mig_lines(m, family, gi)) EXPECT_EQ(line.find("pod="), std::string::npos) << line;
    }
  }
  // The scenario's processes run in GPU instances: each has its instance's labels, and its pod where held.
  std::size_t in_allocated = 0;
  for (const auto& [gi, unused] : instances) {
    for (const auto& line : serve_mig_lines(m, "gpuscope_process_memory_bytes", gi)) {
      const std::string pod = gi == gi_a ? pod_a : gi == gi_b ? pod_b : std::string();
      if (pod.empty()) {
        EXPECT_EQ(line.find("pod="), std::string::npos) << line;
      } else {
        EXPECT_NE(line.find(pod), std::string::npos) << line;
        ++in_allocated;
      }
    }
  }
  EXPECT_GE(in_allocated, 1u) << m;
  // The GPU's own series name the last of its two containers in the kubelet's order.
  EXPECT_TRUE(std::regex_search(m, std::regex(R"(gpuscope_gpu_up\{gpu="0",[^}]*pod="infer-1",namespace="serving")")))
      << m;
  EXPECT_EQ(agent.process->signal_and_wait(SIGTERM, 10s), std::optional<int>(0)) << agent.process->output();
}

}  // namespace
}  // namespace gpuscope::kubernetes_test
