// The GPU → container map from pod-resources answers: whole GPUs, time-sliced shares, MIG devices (old- and
// new-style UUIDs), several containers, resources that are not NVIDIA's.
#include "kubernetes/pod_allocation.h"

#include <gtest/gtest.h>

#include "fake_kubelet.h"

namespace gpuscope::kubernetes {
namespace {

using kubernetes_test::gpu_pod;

constexpr const char* kGpuA = "GPU-11111111-2222-3333-4444-555555555555";
constexpr const char* kGpuB = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

TEST(PodAllocationMap, WholeGpusMapToTheirContainerAndUnallocatedOnesToNothing) {
  const std::vector<PodAllocation> pods{gpu_pod("train-0", "ml", "trainer", {kGpuA})};
  const auto map = DevicePodMap::build(pods);
  const auto* a = map.find(kGpuA);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a, (model::KubernetesPod{"train-0", "ml", "trainer"}));
  EXPECT_EQ(map.find(kGpuB), nullptr);
  EXPECT_EQ(map.containers_on(kGpuA), 1u);
  EXPECT_EQ(map.containers_on(kGpuB), 0u);
  EXPECT_EQ(map.pods(), 1u);
  EXPECT_EQ(map.devices(), 1u);
}

TEST(PodAllocationMap, SeveralContainersOfOnePodEachKeepTheirOwnGpu) {
  PodAllocation pod{"infer-7", "serving", {}};
  pod.containers.push_back({"model", {{"nvidia.com/gpu", {kGpuA}}}});
  pod.containers.push_back({"sidecar", {{"cpu", {"3"}}}});
  pod.containers.push_back({"encoder", {{"nvidia.com/gpu", {kGpuB}}}});
  const auto map = DevicePodMap::build(std::vector<PodAllocation>{pod});
  ASSERT_NE(map.find(kGpuA), nullptr);
  ASSERT_NE(map.find(kGpuB), nullptr);
  EXPECT_EQ(map.find(kGpuA)->container, "model");
  EXPECT_EQ(map.find(kGpuB)->container, "encoder");
  EXPECT_EQ(map.pods(), 1u);
  EXPECT_EQ(map.devices(), 2u);  // the CPU is not counted
}

TEST(PodAllocationMap, ResourcesOtherThanNvidiaGpusAreIgnored) {
  const std::vector<PodAllocation> pods{gpu_pod("nic", "net", "c", {kGpuA}, "example.com/gpu"),
                                        gpu_pod("amd", "x", "c", {kGpuB}, "amd.com/gpu")};
  const auto map = DevicePodMap::build(pods);
  EXPECT_EQ(map.find(kGpuA), nullptr);
  EXPECT_EQ(map.find(kGpuB), nullptr);
  EXPECT_EQ(map.pods(), 0u);
  EXPECT_FALSE(is_nvidia_gpu_resource("nvidia.com/gpu.shared"));
  EXPECT_TRUE(is_nvidia_gpu_resource("nvidia.com/mig-1g.10gb"));
  EXPECT_TRUE(is_nvidia_gpu_resource("nvidia.com/gpu"));
}

TEST(PodAllocationMap, TimeSlicedSharesNameTheirGpuAndTheLastContainerInListOrderWinsIt) {
  const std::string share0 = std::string(kGpuA) + "::0";
  const std::string share1 = std::string(kGpuA) + "::1";
  const std::vector<PodAllocation> pods{gpu_pod("first", "a", "c1", {share0}), gpu_pod("second", "b", "c2", {share1})};
  const auto map = DevicePodMap::build(pods);
  ASSERT_NE(map.find(kGpuA), nullptr);
  EXPECT_EQ(map.find(kGpuA)->pod, "second");  // dcgm-exporter's default mapping: the last one
  EXPECT_EQ(map.containers_on(kGpuA), 2u);
  ASSERT_NE(map.find(share0), nullptr);  // each share keeps its own holder too
  EXPECT_EQ(map.find(share0)->pod, "first");
}

TEST(PodAllocationMap, OldStyleMigUuidsNameTheirParentGpu) {
  const std::string mig = std::string("MIG-") + kGpuB + "/3/0";
  const std::vector<PodAllocation> pods{gpu_pod("small", "ml", "c", {mig}, "nvidia.com/mig-1g.10gb")};
  const auto map = DevicePodMap::build(pods);
  ASSERT_NE(map.find(kGpuB), nullptr);
  EXPECT_EQ(map.find(kGpuB)->pod, "small");
  ASSERT_NE(map.find(mig), nullptr);
  EXPECT_EQ(gpu_uuid_of_device(mig), std::optional<std::string>(kGpuB));
}

TEST(PodAllocationMap, NewStyleMigUuidsNeedTheParentLookupAndAreKeptByTheirOwnUuidEither) {
  const std::string mig = "MIG-0e8a4bd6-2a8c-5b1f-9a4f-3d8f7c6e5b4a";
  const std::vector<PodAllocation> pods{gpu_pod("small", "ml", "c", {mig}, "nvidia.com/mig-2g.20gb")};
  const auto without = DevicePodMap::build(pods);
  EXPECT_EQ(without.find(kGpuA), nullptr);
  ASSERT_NE(without.find(mig), nullptr);
  EXPECT_EQ(without.find(mig)->pod, "small");

  std::vector<std::string> asked;
  const auto with = DevicePodMap::build(pods, [&](std::string_view id) -> std::optional<std::string> {
    asked.emplace_back(id);
    return std::string(kGpuA);
  });
  ASSERT_NE(with.find(kGpuA), nullptr);
  EXPECT_EQ(with.find(kGpuA)->pod, "small");
  EXPECT_EQ(asked, std::vector<std::string>{mig});
}

TEST(PodAllocationMap, MigDevicesOfOneGpuInTwoPodsCountTwoContainers) {
  const std::string mig1 = std::string("MIG-") + kGpuA + "/1/0";
  const std::string mig2 = std::string("MIG-") + kGpuA + "/2/0";
  const std::vector<PodAllocation> pods{gpu_pod("p1", "ns", "c", {mig1}, "nvidia.com/mig-3g.40gb"),
                                        gpu_pod("p2", "ns", "c", {mig2}, "nvidia.com/mig-3g.40gb")};
  const auto map = DevicePodMap::build(pods);
  EXPECT_EQ(map.containers_on(kGpuA), 2u);
  EXPECT_EQ(map.find(mig1)->pod, "p1");
  EXPECT_EQ(map.find(mig2)->pod, "p2");
  EXPECT_EQ(map.pods(), 2u);
}

TEST(PodAllocationMap, DeviceIdsThatAreNeitherUuidsNorGkeNamesNameNoGpu) {
  EXPECT_EQ(gpu_uuid_of_device("nvidia0/gi1"), std::optional<std::string>("nvidia0"));  // GKE's MIG device
  EXPECT_EQ(gpu_uuid_of_device("0"), std::nullopt);
  EXPECT_EQ(gpu_uuid_of_device("nvidia"), std::nullopt);
  EXPECT_EQ(gpu_uuid_of_device("nvidia0x"), std::nullopt);
  EXPECT_EQ(gpu_uuid_of_device(std::string(kGpuA) + "::7"), std::optional<std::string>(kGpuA));
}

TEST(PodAllocationLabels, EachGpuSampleGetsItsContainerByUuidAndLosesAStaleOne) {
  std::vector<model::GpuInfo> gpus(2);
  gpus[0].index = 0;
  gpus[0].uuid = kGpuA;
  gpus[1].index = 1;
  gpus[1].uuid = kGpuB;
  model::Snapshot snapshot;
  snapshot.gpus.resize(2);
  snapshot.gpus[0].index = 0;
  snapshot.gpus[1].index = 1;
  snapshot.gpus[1].kubernetes_pod = model::KubernetesPod{"old", "ns", "c"};  // from an earlier map
  const std::vector<PodAllocation> pods{gpu_pod("train-0", "ml", "trainer", {kGpuA})};
  label_gpus(snapshot, gpus, DevicePodMap::build(pods));
  ASSERT_TRUE(snapshot.gpus[0].kubernetes_pod.has_value());
  EXPECT_EQ(snapshot.gpus[0].kubernetes_pod->pod, "train-0");
  EXPECT_FALSE(snapshot.gpus[1].kubernetes_pod.has_value());
}

}  // namespace
}  // namespace gpuscope::kubernetes
