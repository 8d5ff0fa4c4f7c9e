// MIG's cost on the hot paths, from hand-built readings (no simulator needed): rendering the GPU families
// of 8 H100s each split into seven 1g.10gb MIG devices (every MIG instance field valid, the other fields
// as a busy GPU has them) against the same 8 GPUs without MIG, and labelling such a reading from a
// pod-resources map whose 56 pods each hold one MIG device by its MIG UUID (what each reading pays under
// serve --kubernetes).
#include <benchmark/benchmark.h>

#include <algorithm>

#include <fmt/format.h>

#include "export/gpu_metrics.h"
#include "kubernetes/pod_allocation.h"

namespace {

using namespace gpuscope;

constexpr unsigned kMigBenchGpus = 8;
constexpr unsigned kMigBenchInstances = 7;

std::string mig_bench_gpu_uuid(unsigned i) { return fmt::format("GPU-{:08x}-1111-2222-3333-444455556666", i); }
std::string mig_bench_mig_uuid(unsigned gpu, unsigned k) {
  return fmt::format("MIG-{:08x}-aaaa-5bbb-8ccc-{:012x}", gpu, k);
}

struct MigBenchNode {
  std::vector<model::GpuInfo> gpus;
  model::SystemInfo system;
  model::Snapshot snapshot;

  explicit MigBenchNode(bool mig) {
    system.hostname = "node-1";
    system.driver_version = "580.65.06";
    for (unsigned i = 0; i < kMigBenchGpus; ++i) {
      model::GpuInfo info;
      info.index = i;
      info.minor_number = i;
      info.uuid = mig_bench_gpu_uuid(i);
      info.name = "NVIDIA H100 80GB HBM3";
      info.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + i);
      info.mig_enabled = mig;
      gpus.push_back(info);
      model::GpuSample s;
      s.index = i;
      for (const auto& f : model::FieldCatalog::all()) {
        s[f.id] = model::FieldValue::of(f.unit == "ratio" ? 0.5 : 100.0 + i);
      }
      s.mig_enabled = mig;
      for (unsigned k = 0; mig && k < kMigBenchInstances; ++k) {
        model::MigInstanceSample m;
        m.device_index = k;
        m.gpu_instance_id = 7 + k;
        m.profile = "1g.10gb";
        m.uuid = mig_bench_mig_uuid(i, k);
        m.sm_count = 16;
        m.gpu_instance_slices = 1;
        for (const auto& f : model::FieldCatalog::all()) {
          if (!model::is_mig_instance_field(f.id)) continue;
          m[f.id] = model::FieldValue::of(f.unit == "ratio" ? 0.25 : 5000.0 + k);
        }
        s.mig_instances.push_back(std::move(m));
      }
      snapshot.gpus.push_back(std::move(s));
    }
  }
};

void BM_MigRenderGpuMetrics(benchmark::State& state) {
  const MigBenchNode node(state.range(0) != 0);
  const auto set = exporter::default_metric_set();
  const auto render = [&] {
    std::string out;
    out.reserve(128 * 1024);
    exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, out);
    exporter::write_gpu_metrics(w, node.snapshot, node.gpus, node.system, set, {});
    return out;
  };
  const std::string once = render();
  for (auto _ : state) benchmark::DoNotOptimize(render());
  state.counters["bytes"] = static_cast<double>(once.size());
  state.counters["samples"] = static_cast<double>(std::ranges::count(once, '\n') - std::ranges::count(once, '#'));
}
BENCHMARK(BM_MigRenderGpuMetrics)->ArgName("mig")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_MigPodLabelsPerReading(benchmark::State& state) {
  MigBenchNode node(true);
  std::vector<kubernetes::PodAllocation> pods;
  for (unsigned i = 0; i < kMigBenchGpus; ++i) {
    for (unsigned k = 0; k < kMigBenchInstances; ++k) {
      kubernetes::PodAllocation pod{fmt::format("infer-{}-{}", i, k), "serving", {}};
      pod.containers.push_back({"server", {{"nvidia.com/mig-1g.10gb", {mig_bench_mig_uuid(i, k)}}}});
      pods.push_back(std::move(pod));
    }
  }
  const auto map = kubernetes::DevicePodMap::build(pods);
  for (auto _ : state) {
    kubernetes::label_gpus(node.snapshot, node.gpus, map);
    benchmark::DoNotOptimize(node.snapshot.gpus.front().mig_instances.front().kubernetes_pod);
  }
}
BENCHMARK(BM_MigPodLabelsPerReading)->Unit(benchmark::kNanosecond);

}  // namespace
