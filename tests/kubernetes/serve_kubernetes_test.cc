// `gpuscope --simulate serve --kubernetes` against a fake kubelet on a Unix socket: the simulated GPUs'
// series get pod, namespace and container labels by UUID, lose them when the pod is gone, and a kubelet
// that hangs holds up neither readings nor scrapes (the scrapes answer while its handler is still blocked).
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "e2e/agent_fixture.h"
#include "e2e/command_runner.h"
#include "e2e/http_client.h"
#include "fake_kubelet.h"

namespace gpuscope::kubernetes_test {
namespace {

using namespace std::chrono_literals;

// Each GPU's UUID by its index, from the gpuscope_gpu_up series of a /metrics page.
std::map<std::string, std::string> serve_gpu_uuids(const std::string& metrics) {
  std::map<std::string, std::string> out;
  static const std::regex up(R"re(gpuscope_gpu_up\{gpu="(\d+)",UUID="([^"]+)")re");
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), up), end; it != end; ++it) out[(*it)[1]] = (*it)[2];
  return out;
}

// The gpuscope_gpu_up line of GPU `gpu`, labels and all.
std::string serve_gpu_up_line(const std::string& metrics, const std::string& gpu) {
  const std::string head = "gpuscope_gpu_up{gpu=\"" + gpu + "\",";
  const auto at = metrics.find(head);
  if (at == std::string::npos) return "";
  return metrics.substr(at, metrics.find('\n', at) - at);
}

double serve_metric(const std::string& metrics, const std::string& name) {
  const auto at = ("\n" + metrics).find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name.size() + 1));
}

// Scrapes until `done(metrics)` holds; the last page either way (the caller asserts on it).
template <typename Done>
std::string serve_scrape_until(const e2e::Agent& agent, Done done, std::chrono::seconds limit = 30s) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  std::string m = agent.metrics();
  while (!done(m) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(100ms);
    m = agent.metrics();
  }
  return m;
}

TEST(ServeKubernetes, SimulatedGpusGetTheirPodsLabelsLoseThemWithThePodAndAHungKubeletDelaysNoScrape) {
  e2e::TempDir dir;
  const std::string socket = (dir.path / "kubelet.sock").string();
  FakeKubelet kubelet(socket);
  e2e::Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--interval", "100ms", "--kubernetes",
                    "--kubernetes.pod-resources-socket", socket, "--kubernetes.refresh-interval", "1s"},
                   e2e::frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  ASSERT_TRUE(agent.ready()) << agent.process->output();

  std::string m = agent.metrics();
  const auto uuids = serve_gpu_uuids(m);
  ASSERT_GE(uuids.size(), 2u) << m;
  EXPECT_EQ(m.find("pod=\""), std::string::npos) << "no pod holds a GPU yet";
  EXPECT_NE(m.find("gpuscope_kubernetes_refreshes_total"), std::string::npos);

  // GPU 0 to a training pod (as a whole GPU), GPU 1 to nobody.
  kubelet.set_pods({gpu_pod("train-0", "ml", "trainer", {uuids.at("0")})});
  m = serve_scrape_until(agent, [](const std::string& p) { return p.find("pod=\"train-0\"") != std::string::npos; });
  const std::string gpu0 = serve_gpu_up_line(m, "0");
  EXPECT_NE(gpu0.find("UUID=\"" + uuids.at("0") + "\""), std::string::npos) << gpu0;
  EXPECT_NE(gpu0.find("pod=\"train-0\",namespace=\"ml\",container=\"trainer\""), std::string::npos) << gpu0;
  // A DCGM series of that GPU carries them too.
  EXPECT_TRUE(std::regex_search(m, std::regex(R"(DCGM_FI_DEV_GPU_TEMP\{gpu="0",[^}]*pod="train-0",namespace="ml")")))
      << m;
  const std::string gpu1 = serve_gpu_up_line(m, "1");
  ASSERT_FALSE(gpu1.empty()) << m;
  EXPECT_EQ(gpu1.find("pod="), std::string::npos) << "an unallocated GPU has no pod labels: " << gpu1;
  EXPECT_EQ(serve_metric(m, "gpuscope_kubernetes_pods"), 1) << m;

  // The pod is gone: its GPU's series go back to the plain labels.
  kubelet.set_pods({});
  m = serve_scrape_until(agent, [](const std::string& p) { return p.find("pod=\"train-0\"") == std::string::npos; });
  EXPECT_EQ(m.find("pod=\""), std::string::npos) << serve_gpu_up_line(m, "0");
  EXPECT_FALSE(serve_gpu_up_line(m, "0").empty());
  // The history keeps the GPU's series of both label sets: the pod's, ended, and the plain one.
  const auto series = e2e::http_get(agent.port, "/api/v1/series?match[]=" + e2e::url_encode("gpuscope_gpu_up{gpu=\"0\"}"));
  ASSERT_EQ(series.status, 200) << series.body;
  EXPECT_NE(series.body.find("\"pod\":\"train-0\""), std::string::npos) << series.body;
  EXPECT_EQ(std::count_if(series.body.begin(), series.body.end(), [](char c) { return c == '{'; }), 3)
      << "the envelope and two series: " << series.body;

  // A hung kubelet: once a List is blocked in the handler, readings go on and scrapes answer.
  kubelet.set_pods({gpu_pod("train-1", "ml", "trainer", {uuids.at("1")})});
  kubelet.hang();
  const int started = kubelet.lists_started();
  ASSERT_TRUE(kubelet.wait_for_lists_started(started + 1, 30s));
  const int answered = kubelet.lists_answered();
  const double samples_before = serve_metric(agent.metrics(), "gpuscope_samples_total");
  m = serve_scrape_until(agent, [&](const std::string& p) {
    return serve_metric(p, "gpuscope_samples_total") >= samples_before + 3;
  });
  EXPECT_GE(serve_metric(m, "gpuscope_samples_total"), samples_before + 3);
  EXPECT_EQ(kubelet.lists_answered(), answered) << "the scrapes above answered while List was still blocked";
  EXPECT_EQ(m.find("pod=\"train-1\""), std::string::npos);
  // The blocked call fails at the agent's deadline (2 s) and is counted.
  m = serve_scrape_until(agent, [](const std::string& p) {
    return serve_metric(p, "gpuscope_kubernetes_refresh_failures_total") >= 1;
  });
  EXPECT_GE(serve_metric(m, "gpuscope_kubernetes_refresh_failures_total"), 1) << m;

  // Released, the next refresh labels GPU 1.
  kubelet.release();
  m = serve_scrape_until(agent, [](const std::string& p) { return p.find("pod=\"train-1\"") != std::string::npos; });
  EXPECT_NE(serve_gpu_up_line(m, "1").find("pod=\"train-1\""), std::string::npos) << m;

  // Stopping the agent does not wait for a hung kubelet either.
  kubelet.hang();
  ASSERT_TRUE(kubelet.wait_for_lists_started(kubelet.lists_started() + 1, 30s));
  EXPECT_EQ(agent.process->signal_and_wait(SIGTERM, 10s), std::optional<int>(0)) << agent.process->output();
  EXPECT_EQ(agent.process->output().find("panic"), std::string::npos);
}

// The agent's start waits a moment for the kubelet's first answer: with a refresh interval of an hour, only
// that first List can have labelled the GPU, and the first scrape already shows it.
TEST(ServeKubernetes, TheFirstScrapeAlreadyHasThePodLabels) {
  const auto list = e2e::run_command({GPUSCOPE_EXE, "--simulate", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::smatch uuid;
  ASSERT_TRUE(std::regex_search(list.out, uuid, std::regex(R"(GPU 3: [^\n]*\(UUID: (GPU-[0-9a-f-]+)\))"))) << list.out;
  e2e::TempDir dir;
  const std::string socket = (dir.path / "kubelet.sock").string();
  FakeKubelet kubelet(socket);
  kubelet.set_pods({gpu_pod("serve-7", "inference", "model", {uuid[1].str() + "::0"})});
  e2e::Agent agent({"--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history", "--kubernetes",
                    "--kubernetes.pod-resources-socket", socket, "--kubernetes.refresh-interval", "1h"},
                   e2e::frozen_env(600));
  ASSERT_GT(agent.port, 0) << agent.process->output();
  const std::string m = agent.metrics();
  EXPECT_EQ(kubelet.lists_started(), 1);
  const std::string gpu3 = serve_gpu_up_line(m, "3");
  EXPECT_NE(gpu3.find("UUID=\"" + uuid[1].str() + "\""), std::string::npos) << gpu3;
  EXPECT_NE(gpu3.find("pod=\"serve-7\",namespace=\"inference\",container=\"model\""), std::string::npos) << m;
  EXPECT_EQ(serve_gpu_up_line(m, "2").find("pod="), std::string::npos);
}

// Each bad Kubernetes flag: exit 2 and one line naming the flag and the value, before anything starts.
TEST(ServeKubernetes, BadFlagsAreOneLineUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--kubernetes", "--kubernetes.refresh-interval", "500ms"}, "'500ms' for --kubernetes.refresh-interval"},
      {{"--kubernetes", "--kubernetes.refresh-interval", "2h"}, "'2h' for --kubernetes.refresh-interval"},
      {{"--kubernetes", "--kubernetes.refresh-interval", "soon"}, "'soon' for --kubernetes.refresh-interval"},
      {{"--kubernetes", "--kubernetes.pod-resources-socket", "kubelet.sock"}, "'kubelet.sock' for --kubernetes.pod-resources-socket"},
      {{"--kubernetes", "--kubernetes.pod-resources-socket", "/" + std::string(120, 'k')}, "--kubernetes.pod-resources-socket"},
      {{"--kubernetes", "--kubernetes-gpu-id-type", "uuid"}, "'uuid' for --kubernetes-gpu-id-type"},
      {{"--kubernetes.refresh-interval", "10s"}, "need --kubernetes"},
  };
  for (const auto& [flags, expected] : cases) {
    std::vector<std::string> argv{GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto r = e2e::run_command(argv);
    EXPECT_EQ(r.exit_code, 2) << flags.back() << ": " << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // dcgm-exporter's spelling of its arguments is taken as it is, with either id type.
  for (const char* type : {"uid", "device-name"}) {
    std::vector<std::string> argv{GPUSCOPE_EXE, "--nvml-lib", "/nonexistent/gpuscope-k8s-test/libnvidia-ml.so.1", "serve",
                                  "--kubernetes=true", "--kubernetes-gpu-id-type", type};
    const auto r = e2e::run_command(argv);
    EXPECT_EQ(r.exit_code, 3) << type << ": past the flags, at loading NVML: " << r.err;
  }
}

}  // namespace
}  // namespace gpuscope::kubernetes_test

namespace gpuscope::kubernetes_test {
namespace {

// gRPC is a plugin: no verb maps it unless --kubernetes asks for the kubelet; a plugin that cannot be
// loaded is one line at start naming the file, not a refresh failure every 10 s.
TEST(ServeKubernetes, GrpcLoadsOnlyForKubernetesAndAMissingPluginIsNamedAtStart) {
  const auto list = e2e::run_command({GPUSCOPE_EXE, "--simulate", "list"}, {{"LD_DEBUG", "files"}}, 60);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  ASSERT_NE(list.err.find("libnvidia-ml"), std::string::npos) << "LD_DEBUG lists the libraries loaded:\n" << list.err;
  for (const char* library : {"libgrpc", "libgpuscope_pod_resources", "libssl", "libabsl"}) {
    EXPECT_EQ(list.err.find(library), std::string::npos) << library << " was loaded by `list`";
  }

  const std::string missing = "/nonexistent/gpuscope-k8s-test/libgpuscope_pod_resources.so";
  const auto r = e2e::run_command({GPUSCOPE_EXE, "--simulate", "serve", "--listen", "127.0.0.1:0", "--no-history",
                                   "--kubernetes"},
                                  {{"GPUSCOPE_POD_RESOURCES_LIB", missing}}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--kubernetes: cannot load " + missing), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace gpuscope::kubernetes_test
