// serve --kubernetes' cost: one refresh (a pod-resources List round trip over a Unix socket to a kubelet
// stand-in in this process, and the GPU → container map built from the answer) on a node with 8 GPUs and
// 100 pods, the map build alone, and what each GPU reading pays (labelling 8 GPU samples from the latest
// map). The kubelet stand-in answers from memory: a real kubelet's List also walks its pod and device
// managers' state, which this does not measure.
#include <benchmark/benchmark.h>

#include <stdlib.h>

#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "../tests/kubernetes/fake_kubelet.h"
#include "kubernetes/pod_resources_watcher.h"

namespace {

using namespace gpuscope;

constexpr int kBenchGpus = 8;
constexpr int kBenchPods = 100;

std::string bench_gpu_uuid(int i) { return fmt::format("GPU-{:08x}-1111-2222-3333-{:012x}", i, i * 7919); }

// 100 pods of two containers each (an app and a sidecar, each with CPUs from the CPU manager's devices
// view and a NIC from another plugin); the first 8 pods' app containers hold a GPU each. With `mig`, the
// GPUs are split into 7 MIG devices each, the 56 devices spread over the first 56 pods.
std::vector<kubernetes::PodAllocation> bench_node_pods(bool mig) {
  std::vector<kubernetes::PodAllocation> pods;
  for (int p = 0; p < kBenchPods; ++p) {
    kubernetes::PodAllocation pod{fmt::format("app-{}-7d9f8c6b5-x{:04}", p % 17, p), fmt::format("team-{}", p % 9), {}};
    kubernetes::ContainerAllocation app{"app", {{"example.com/sriov-nic", {fmt::format("0000:{:02x}:00.{}", p % 64, p % 8)}}}};
    if (!mig && p < kBenchGpus) app.devices.push_back({"nvidia.com/gpu", {bench_gpu_uuid(p)}});
    if (mig && p < kBenchGpus * 7) {
      app.devices.push_back({"nvidia.com/mig-1g.10gb", {fmt::format("MIG-{}/{}/0", bench_gpu_uuid(p / 7), 7 + p % 7)}});
    }
    pod.containers.push_back(std::move(app));
    pod.containers.push_back({"istio-proxy", {}});
    pods.push_back(std::move(pod));
  }
  return pods;
}

struct BenchKubeletNode {
  std::filesystem::path dir;
  std::unique_ptr<kubernetes_test::FakeKubelet> kubelet;
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kWarn};
  std::unique_ptr<kubernetes::PodResourcesWatcher> watcher;

  explicit BenchKubeletNode(bool mig) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope-bench-kubelet-XXXXXX").string();
    dir = mkdtemp(tmpl.data());
    kubelet = std::make_unique<kubernetes_test::FakeKubelet>((dir / "kubelet.sock").string());
    kubelet->set_pods(bench_node_pods(mig));
    kubernetes::PodResourcesOptions o;
    o.socket_path = (dir / "kubelet.sock").string();
    watcher = std::make_unique<kubernetes::PodResourcesWatcher>(o, model::system_clock(), log);
  }
  ~BenchKubeletNode() {
    watcher.reset();
    kubelet.reset();
    std::filesystem::remove_all(dir);
  }
};

void BM_PodResourcesRefresh(benchmark::State& state) {
  BenchKubeletNode node(state.range(0) != 0);
  if (!node.watcher->refresh()) {  // connects once, as the agent's first refresh does
    state.SkipWithError("the kubelet stand-in did not answer");
    return;
  }
  for (auto _ : state) {
    if (!node.watcher->refresh()) state.SkipWithError("List failed");
  }
  const auto map = node.watcher->current();
  state.counters["pods_with_gpus"] = static_cast<double>(map->pods());
  state.counters["gpu_devices"] = static_cast<double>(map->devices());
}
BENCHMARK(BM_PodResourcesRefresh)->ArgName("mig")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_PodResourcesMapBuild(benchmark::State& state) {
  const auto pods = bench_node_pods(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(kubernetes::DevicePodMap::build(pods));
}
BENCHMARK(BM_PodResourcesMapBuild)->ArgName("mig")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_PodLabelsPerReading(benchmark::State& state) {
  const auto map = kubernetes::DevicePodMap::build(bench_node_pods(false));
  std::vector<model::GpuInfo> gpus(kBenchGpus);
  model::Snapshot snapshot;
  snapshot.gpus.resize(kBenchGpus);
  for (int i = 0; i < kBenchGpus; ++i) {
    gpus[i].index = static_cast<unsigned>(i);
    gpus[i].uuid = bench_gpu_uuid(i);
    snapshot.gpus[i].index = static_cast<unsigned>(i);
  }
  for (auto _ : state) {
    kubernetes::label_gpus(snapshot, gpus, map);
    benchmark::DoNotOptimize(snapshot.gpus.front().kubernetes_pod);
  }
}
BENCHMARK(BM_PodLabelsPerReading)->Unit(benchmark::kNanosecond);

}  // namespace
