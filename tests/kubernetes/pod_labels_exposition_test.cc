// The pod labels in /metrics' text: on every GPU family of a GPU a container holds, not on an unallocated
// GPU's, and on the per-process series only when the GPU has one container (a shared GPU's labels name just
// one of its containers).
#include <gtest/gtest.h>

#include "export/exposition_writer.h"
#include "export/gpu_metrics.h"
#include "export/metric_set.h"
#include "kubernetes/pod_allocation.h"

namespace gpuscope::kubernetes {
namespace {

constexpr const char* kExposedGpu0 = "GPU-00000000-aaaa-bbbb-cccc-000000000000";
constexpr const char* kExposedGpu1 = "GPU-11111111-aaaa-bbbb-cccc-111111111111";

struct ExposedNode {
  std::vector<model::GpuInfo> gpus;
  model::SystemInfo system;
  model::Snapshot snapshot;

  ExposedNode() {
    system.hostname = "node-7";
    const char* uuids[] = {kExposedGpu0, kExposedGpu1};
    for (unsigned i = 0; i < 2; ++i) {
      model::GpuInfo info;
      info.index = i;
      info.uuid = uuids[i];
      info.name = "NVIDIA H100 80GB HBM3";
      info.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
      gpus.push_back(info);
      model::GpuSample sample;
      sample.index = i;
      sample[model::FieldId::kGpuTemp] = model::FieldValue::of(40 + i);
      model::ProcessSample p;
      p.pid = 1000 + i;
      p.used_memory_bytes = 1 << 30;
      p.identity.name = "python3";
      sample.processes.push_back(p);
      snapshot.gpus.push_back(sample);
    }
  }

  std::string text(const std::vector<PodAllocation>& pods) {
    label_gpus(snapshot, gpus, DevicePodMap::build(pods));
    std::string out;
    exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, out);
    exporter::write_gpu_metrics(w, snapshot, gpus, system, exporter::default_metric_set(), {});
    w.finish();
    return out;
  }
};

// The line of family `name` for the GPU with index `gpu`.
std::string exposed_line(const std::string& text, const std::string& name, unsigned gpu) {
  const std::string head = name + "{gpu=\"" + std::to_string(gpu) + "\",";
  const auto at = text.find(head);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

constexpr const char* kPodLabels = R"(pod="train-0",namespace="ml",container="trainer")";

TEST(PodLabelsExposition, AHeldGpuHasThemOnEveryGpuFamilyAndItsProcessesAndAnUnallocatedOneHasNone) {
  ExposedNode node;
  const std::string text = node.text({PodAllocation{"train-0", "ml", {{"trainer", {{"nvidia.com/gpu", {kExposedGpu0}}}}}}});
  for (const char* family : {"DCGM_FI_DEV_GPU_TEMP", "gpuscope_gpu_up", "gpuscope_process_memory_bytes"}) {
    const std::string held = exposed_line(text, family, 0);
    const std::string free = exposed_line(text, family, 1);
    ASSERT_FALSE(held.empty()) << family << "\n" << text;
    ASSERT_FALSE(free.empty()) << family << "\n" << text;
    EXPECT_NE(held.find(kPodLabels), std::string::npos) << held;
    EXPECT_EQ(free.find("pod="), std::string::npos) << free;
    EXPECT_EQ(free.find("namespace="), std::string::npos) << free;
  }
}

TEST(PodLabelsExposition, ASharedGpuNamesItsLastContainerButItsProcessesGetNoPodLabels) {
  ExposedNode node;
  const std::string share0 = std::string(kExposedGpu0) + "::0";
  const std::string share1 = std::string(kExposedGpu0) + "::1";
  const std::string text = node.text({PodAllocation{"other", "ml", {{"c", {{"nvidia.com/gpu", {share0}}}}}},
                                      PodAllocation{"train-0", "ml", {{"trainer", {{"nvidia.com/gpu", {share1}}}}}}});
  EXPECT_NE(exposed_line(text, "DCGM_FI_DEV_GPU_TEMP", 0).find(kPodLabels), std::string::npos) << text;
  const std::string process = exposed_line(text, "gpuscope_process_memory_bytes", 0);
  ASSERT_FALSE(process.empty()) << text;
  EXPECT_EQ(process.find("pod="), std::string::npos) << process;
  EXPECT_NE(process.find("pid=\"1000\""), std::string::npos) << process;
}

TEST(PodLabelsExposition, HpcJobsAndPodLabelsGoTogether) {
  ExposedNode node;
  node.snapshot.gpus[0].hpc_jobs = {"job-1", "job-2"};
  const std::string text = node.text({PodAllocation{"train-0", "ml", {{"trainer", {{"nvidia.com/gpu", {kExposedGpu0}}}}}}});
  EXPECT_NE(text.find(std::string(kPodLabels) + ",hpc_job=\"job-1\"} "), std::string::npos) << text;
  EXPECT_NE(text.find(std::string(kPodLabels) + ",hpc_job=\"job-2\"} "), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::kubernetes
