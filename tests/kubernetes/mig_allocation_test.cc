// MIG devices in the kubelet's answer: each MIG instance of a reading gets the container holding it, by its
// MIG UUID (mixed strategy nvidia.com/mig-<profile>, single strategy nvidia.com/gpu), by an old-style
// "MIG-GPU-<uuid>/<gi>/<ci>" ID, or by a time-sliced share of it; the parent GPU gets its one container or
// is shared; and, through a fake kubelet and the watcher, the instance series carry their pods.
#include <stdlib.h>

#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "export/exposition_writer.h"
#include "export/gpu_metrics.h"
#include "fake_kubelet.h"
#include "kubernetes/pod_allocation.h"
#include "kubernetes/pod_resources_watcher.h"

namespace gpuscope::kubernetes {
namespace {

using kubernetes_test::gpu_pod;

constexpr const char* kMigParent = "GPU-3c3c3c3c-1111-2222-3333-444444444444";
constexpr const char* kMigPlain = "GPU-4d4d4d4d-1111-2222-3333-444444444444";
constexpr const char* kMig3g = "MIG-0e8a4bd6-2a8c-5b1f-9a4f-3d8f7c6e5b01";
constexpr const char* kMig2g = "MIG-0e8a4bd6-2a8c-5b1f-9a4f-3d8f7c6e5b02";
constexpr const char* kMig1g = "MIG-0e8a4bd6-2a8c-5b1f-9a4f-3d8f7c6e5b03";

model::MigInstanceSample mig_alloc_instance(unsigned device, unsigned gi, const char* profile, const char* uuid) {
  model::MigInstanceSample m;
  m.device_index = device;
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.profile = profile;
  m.uuid = uuid;
  m[model::FieldId::kFbUsed] = model::FieldValue::of(100.0 * (device + 1));
  return m;
}

// GPU 0 in MIG mode with a 3g.40gb (GPU instance 2), a 2g.20gb (3) and a 1g.10gb (9); GPU 1 not.
struct MigAllocNode {
  std::vector<model::GpuInfo> gpus;
  model::Snapshot snapshot;

  MigAllocNode() {
    const char* uuids[] = {kMigParent, kMigPlain};
    for (unsigned i = 0; i < 2; ++i) {
      model::GpuInfo info;
      info.index = i;
      info.uuid = uuids[i];
      info.name = "NVIDIA H100 80GB HBM3";
      info.pci_bus_id = "00000000:2" + std::to_string(i) + ":00.0";
      info.mig_enabled = i == 0;
      gpus.push_back(info);
      model::GpuSample sample;
      sample.index = i;
      sample[model::FieldId::kGpuTemp] = model::FieldValue::of(40 + i);
      sample[model::FieldId::kFbUsed] = model::FieldValue::of(5000);
      snapshot.gpus.push_back(sample);
    }
    auto& g0 = snapshot.gpus[0];
    g0.mig_enabled = true;
    g0.mig_instances = {mig_alloc_instance(0, 2, "3g.40gb", kMig3g), mig_alloc_instance(1, 3, "2g.20gb", kMig2g),
                        mig_alloc_instance(2, 9, "1g.10gb", kMig1g)};
  }

  model::GpuSample& mig_gpu() { return snapshot.gpus[0]; }
  std::string pod_of(unsigned instance) const {
    const auto& p = snapshot.gpus[0].mig_instances.at(instance).kubernetes_pod;
    return p ? p->namespace_name + "/" + p->pod + "/" + p->container : "";
  }
  std::string gpu_pod_of(unsigned gpu) const {
    const auto& p = snapshot.gpus.at(gpu).kubernetes_pod;
    return p ? p->namespace_name + "/" + p->pod + "/" + p->container : "";
  }
};

TEST(MigAllocation, MixedStrategyGivesEachInstanceItsContainerAndSharesTheGpu) {
  MigAllocNode node;
  const std::vector<PodAllocation> pods{gpu_pod("train-0", "ml", "trainer", {kMig3g}, "nvidia.com/mig-3g.40gb"),
                                        gpu_pod("infer-1", "serving", "server", {kMig1g}, "nvidia.com/mig-1g.10gb")};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(pods));
  EXPECT_EQ(node.pod_of(0), "ml/train-0/trainer");
  EXPECT_EQ(node.pod_of(1), "");  // the 2g.20gb is unallocated
  EXPECT_EQ(node.pod_of(2), "serving/infer-1/server");
  EXPECT_TRUE(node.mig_gpu().kubernetes_gpu_shared);
  EXPECT_EQ(node.gpu_pod_of(0), "serving/infer-1/server");  // the last in the kubelet's order
  EXPECT_EQ(node.gpu_pod_of(1), "");
  EXPECT_FALSE(node.snapshot.gpus[1].kubernetes_gpu_shared);

  // The same two pods in the other order: the GPU names the other one.
  const std::vector<PodAllocation> swapped{pods[1], pods[0]};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(swapped));
  EXPECT_EQ(node.gpu_pod_of(0), "ml/train-0/trainer");
  EXPECT_EQ(node.pod_of(2), "serving/infer-1/server");
}

TEST(MigAllocation, AllAllocatedInstancesInOneContainerGiveTheGpuThatContainerUnshared) {
  MigAllocNode node;
  // Single strategy: MIG devices under nvidia.com/gpu; one container holds two of the three.
  const std::vector<PodAllocation> pods{gpu_pod("train-0", "ml", "trainer", {kMig2g, kMig3g})};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(pods));
  EXPECT_EQ(node.pod_of(0), "ml/train-0/trainer");
  EXPECT_EQ(node.pod_of(1), "ml/train-0/trainer");
  EXPECT_EQ(node.pod_of(2), "");
  EXPECT_EQ(node.gpu_pod_of(0), "ml/train-0/trainer");
  EXPECT_FALSE(node.mig_gpu().kubernetes_gpu_shared);
}

TEST(MigAllocation, OldStyleIdsResolveFromTheParentUuidAndTheInstanceIds) {
  MigAllocNode node;
  EXPECT_EQ(old_style_mig_id(kMigParent, 3, 0), std::string("MIG-") + kMigParent + "/3/0");
  // An older device plugin names GPU instance 3 / compute instance 0 by its parent; the reading's UUID is new-style.
  const std::vector<PodAllocation> pods{
      gpu_pod("old-1", "legacy", "app", {old_style_mig_id(kMigParent, 3, 0)}, "nvidia.com/mig-2g.20gb")};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(pods));
  EXPECT_EQ(node.pod_of(0), "");
  EXPECT_EQ(node.pod_of(1), "legacy/old-1/app");
  EXPECT_EQ(node.pod_of(2), "");
  EXPECT_EQ(node.gpu_pod_of(0), "legacy/old-1/app");
  EXPECT_FALSE(node.mig_gpu().kubernetes_gpu_shared);
  // Another GPU instance's ID (9/1: compute instance 1, not in the reading) labels no instance.
  const std::vector<PodAllocation> other{
      gpu_pod("old-2", "legacy", "app", {old_style_mig_id(kMigParent, 9, 1)}, "nvidia.com/mig-1g.10gb")};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(other));
  EXPECT_EQ(node.pod_of(2), "");
  EXPECT_EQ(node.gpu_pod_of(0), "legacy/old-2/app");  // its parent is still held
}

TEST(MigAllocation, GkeDeviceNamesNameGpusTheirSharesAndMigDevices) {
  MigAllocNode node;
  node.gpus[0].minor_number = 0;
  node.gpus[1].minor_number = 1;
  EXPECT_EQ(device_of("nvidia1/vgpu3"), "nvidia1");
  EXPECT_EQ(device_of("nvidia0/gi9/vgpu0"), "nvidia0/gi9");
  EXPECT_EQ(gpu_uuid_of_device("nvidia0/gi9"), "nvidia0");
  EXPECT_EQ(gpu_uuid_of_device("nvidia12"), "nvidia12");
  EXPECT_EQ(gpu_uuid_of_device("nvidiafoo"), std::nullopt);
  EXPECT_EQ(gke_mig_device_name("nvidia0", 2), "nvidia0/gi2");
  // GKE: GPU 1 time-shared by two pods; GPU 0's GPU instance 2 in one pod, GPU instance 9 shared by two.
  const std::vector<PodAllocation> pods{gpu_pod("a", "ns", "c", {"nvidia1/vgpu0"}),
                                        gpu_pod("b", "ns", "c", {"nvidia1/vgpu1"}),
                                        gpu_pod("train", "ml", "t", {"nvidia0/gi2"}),
                                        gpu_pod("s1", "ns", "c", {"nvidia0/gi9/vgpu0"}),
                                        gpu_pod("s2", "ns", "c", {"nvidia0/gi9/vgpu1"})};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(pods));
  EXPECT_EQ(node.gpu_pod_of(1), "ns/b/c");
  EXPECT_TRUE(node.snapshot.gpus[1].kubernetes_gpu_shared);
  EXPECT_EQ(node.pod_of(0), "ml/train/t");
  EXPECT_FALSE(node.mig_gpu().mig_instances[0].kubernetes_shared);
  EXPECT_EQ(node.pod_of(1), "");  // GPU instance 3: nobody's
  EXPECT_EQ(node.pod_of(2), "ns/s2/c");
  EXPECT_TRUE(node.mig_gpu().mig_instances[2].kubernetes_shared);
  EXPECT_TRUE(node.mig_gpu().kubernetes_gpu_shared);
  // One GKE pod holding a whole GPU: unshared, that pod.
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(std::vector<PodAllocation>{gpu_pod("w", "ns", "c", {"nvidia1"})}));
  EXPECT_EQ(node.gpu_pod_of(1), "ns/w/c");
  EXPECT_FALSE(node.snapshot.gpus[1].kubernetes_gpu_shared);
}

TEST(MigAllocation, ATimeSlicedMigDeviceNamesItsLastContainerAndCountsBoth) {
  MigAllocNode node;
  const std::vector<PodAllocation> pods{
      gpu_pod("a", "ns", "c", {std::string(kMig3g) + "::0"}, "nvidia.com/mig-3g.40gb"),
      gpu_pod("b", "ns", "c", {std::string(kMig3g) + "::1"}, "nvidia.com/mig-3g.40gb")};
  const auto map = DevicePodMap::build(pods);
  EXPECT_EQ(device_of(std::string(kMig3g) + "::1"), kMig3g);
  EXPECT_EQ(map.containers_on(kMig3g), 2u);
  label_gpus(node.snapshot, node.gpus, map);
  EXPECT_EQ(node.pod_of(0), "ns/b/c");
  EXPECT_TRUE(node.mig_gpu().kubernetes_gpu_shared);
  // The 3g.40gb itself is shared (its processes get no pod labels); the others are not.
  EXPECT_TRUE(node.mig_gpu().mig_instances[0].kubernetes_shared);
  EXPECT_FALSE(node.mig_gpu().mig_instances[1].kubernetes_shared);
  EXPECT_FALSE(node.mig_gpu().mig_instances[2].kubernetes_shared);

  // Both shares in one container (two replicas of one device): one holder, not shared.
  const std::vector<PodAllocation> one{gpu_pod("a", "ns", "c",
                                               {std::string(kMig3g) + "::0", std::string(kMig3g) + "::1"},
                                               "nvidia.com/mig-3g.40gb")};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(one));
  EXPECT_EQ(node.pod_of(0), "ns/a/c");
  EXPECT_FALSE(node.mig_gpu().mig_instances[0].kubernetes_shared);
  EXPECT_FALSE(node.mig_gpu().kubernetes_gpu_shared);

  // Shared again, then the second pod gone: the flag is cleared at the next labelling.
  label_gpus(node.snapshot, node.gpus, map);
  ASSERT_TRUE(node.mig_gpu().mig_instances[0].kubernetes_shared);
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(std::vector<PodAllocation>{pods[0]}));
  EXPECT_EQ(node.pod_of(0), "ns/a/c");
  EXPECT_FALSE(node.mig_gpu().mig_instances[0].kubernetes_shared);
}

TEST(MigAllocation, ADifferentContainerOnEachInstanceSharesTheGpuButNoInstance) {
  MigAllocNode node;
  const std::vector<PodAllocation> pods{gpu_pod("train-0", "ml", "trainer", {kMig3g}, "nvidia.com/mig-3g.40gb"),
                                        gpu_pod("infer-1", "serving", "server", {kMig1g}, "nvidia.com/mig-1g.10gb")};
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build(pods));
  EXPECT_TRUE(node.mig_gpu().kubernetes_gpu_shared);
  for (const auto& instance : node.mig_gpu().mig_instances) EXPECT_FALSE(instance.kubernetes_shared) << instance.uuid;
}

TEST(MigAllocation, AnInstanceLosesAStaleContainerWhenItsPodIsGone) {
  MigAllocNode node;
  label_gpus(node.snapshot, node.gpus,
             DevicePodMap::build(std::vector<PodAllocation>{
                 gpu_pod("train-0", "ml", "trainer", {kMig3g}, "nvidia.com/mig-3g.40gb")}));
  ASSERT_EQ(node.pod_of(0), "ml/train-0/trainer");
  label_gpus(node.snapshot, node.gpus, DevicePodMap::build({}));
  EXPECT_EQ(node.pod_of(0), "");
  EXPECT_EQ(node.gpu_pod_of(0), "");
  EXPECT_FALSE(node.mig_gpu().kubernetes_gpu_shared);
}

TEST(MigAllocation, TheParentLookupIsAskedWithTheMigUuidWithoutItsShare) {
  std::vector<std::string> asked;
  const auto parent = gpu_uuid_of_device(std::string(kMig1g) + "::4", [&](std::string_view id) {
    asked.emplace_back(id);
    return std::optional<std::string>(kMigParent);
  });
  EXPECT_EQ(parent, std::optional<std::string>(kMigParent));
  EXPECT_EQ(asked, std::vector<std::string>{kMig1g});
}

// --- through the kubelet's real pod-resources answer ---

struct MigAllocSocketDir {
  std::filesystem::path path;
  MigAllocSocketDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuscope-mig-kubelet-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~MigAllocSocketDir() { std::filesystem::remove_all(path); }
  std::string socket() const { return (path / "kubelet.sock").string(); }
};

TEST(MigAllocation, AFakeKubeletsMigDevicesLabelTheInstanceSeries) {
  MigAllocSocketDir dir;
  kubernetes_test::FakeKubelet kubelet(dir.socket());
  kubelet.set_pods({gpu_pod("train-0", "ml", "trainer", {kMig3g}, "nvidia.com/mig-3g.40gb"),
                    gpu_pod("infer-1", "serving", "server", {kMig1g}, "nvidia.com/mig-1g.10gb"),
                    gpu_pod("whole", "batch", "job", {kMigPlain})});
  model::VirtualClock clock;
  std::ostringstream log_text;
  log::Logger log{log_text, log::Level::kInfo};
  PodResourcesOptions options;
  options.socket_path = dir.socket();
  PodResourcesWatcher watcher(options, clock, log);
  ASSERT_TRUE(watcher.refresh()) << log_text.str();

  MigAllocNode node;
  label_gpus(node.snapshot, node.gpus, *watcher.current());
  model::SystemInfo system;
  system.hostname = "node-3";
  std::string text;
  exporter::ExpositionWriter w(exporter::ExpositionFormat::kPrometheusText, text);
  exporter::write_gpu_metrics(w, node.snapshot, node.gpus, system, exporter::default_metric_set(), {});
  w.finish();

  const std::string gpu0 =
      std::string(R"(gpu="0",UUID=")") + kMigParent + R"(",pci_bus_id="00000000:20:00.0",device="",)"
      R"(modelName="NVIDIA H100 80GB HBM3",)";
  const std::string tail = R"(Hostname="node-3",DCGM_FI_DRIVER_VERSION="")";
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{" + gpu0 + R"(GPU_I_PROFILE="3g.40gb",GPU_I_ID="2",)" + tail +
                      R"(,pod="train-0",namespace="ml",container="trainer"} 100)" + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{" + gpu0 + R"(GPU_I_PROFILE="2g.20gb",GPU_I_ID="3",)" + tail + "} 200\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("DCGM_FI_DEV_FB_USED{" + gpu0 + R"(GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",)" + tail +
                      R"(,pod="infer-1",namespace="serving",container="server"} 300)" + "\n"),
            std::string::npos)
      << text;
  // The GPU's own series name the last of its two containers; the whole GPU its one.
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_TEMP{" + gpu0 + tail +
                      R"(,pod="infer-1",namespace="serving",container="server"} 40)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(,pod="whole",namespace="batch",container="job"} 41)"), std::string::npos) << text;
}

}  // namespace
}  // namespace gpuscope::kubernetes
