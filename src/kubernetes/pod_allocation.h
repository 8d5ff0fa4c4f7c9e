// What the kubelet says holds each GPU, in plain C++: the pods, containers and device IDs of a pod-resources
// List answer, and the map from a GPU's UUID (or a MIG device's) to the container the kubelet gave it to,
// which `serve --kubernetes` turns into dcgm-exporter's pod, namespace and container labels.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::kubernetes {

// One List answer, as the kubelet sent it (only the fields the labels need).
struct ContainerDevices {
  std::string resource_name;  // the device plugin's resource: nvidia.com/gpu, nvidia.com/mig-1g.10gb, ...
  std::vector<std::string> device_ids;
};
struct ContainerAllocation {
  std::string name;
  std::vector<ContainerDevices> devices;
};
struct PodAllocation {
  std::string name;
  std::string namespace_name;
  std::vector<ContainerAllocation> containers;
};

// NVIDIA's device plugin resources, as dcgm-exporter picks them: nvidia.com/gpu (whole GPUs, or time-sliced
// shares "UUID::N") and nvidia.com/mig-<profile>. Other resources (CPUs, NICs, other vendors) are skipped.
bool is_nvidia_gpu_resource(std::string_view resource_name);

// The physical GPU's UUID a device ID names, where the ID alone says it: "GPU-x", a time-sliced share
// "GPU-x::3", an old-style (driver R450/R460) MIG device "MIG-GPU-x/1/0". A new-style MIG UUID
// ("MIG-<uuid>") does not name its parent: `mig_parent` (NVML's answer, when the caller has one) does,
// else nullopt. Anything else (not a UUID): nullopt.
using MigParentLookup = std::function<std::optional<std::string>(std::string_view mig_uuid)>;
std::optional<std::string> gpu_uuid_of_device(std::string_view device_id, const MigParentLookup& mig_parent = {});

// Device (GPU or MIG UUID) → the container the kubelet allocated it to. Immutable once built: the watcher
// swaps a whole new map in, readers keep the one they loaded.
class DevicePodMap {
 public:
  DevicePodMap() = default;
  // Later containers in the kubelet's order win a device (or a GPU) that several hold (time-slicing, MIG
  // devices of one GPU in different pods), as dcgm-exporter's default mapping does.
  static DevicePodMap build(std::span<const PodAllocation> pods, const MigParentLookup& mig_parent = {});

  // The container holding `uuid` (a GPU's UUID: the GPU itself, a share of it or a MIG device on it; or a
  // MIG device's own UUID); null when none.
  const model::KubernetesPod* find(std::string_view uuid) const;
  // How many different containers hold a part of GPU `gpu_uuid` (0: unallocated; more than 1: shared, and
  // its labels name only the last of them).
  std::size_t containers_on(std::string_view gpu_uuid) const;
  // Pods with at least one NVIDIA device, and the device IDs they hold.
  std::size_t pods() const { return pods_; }
  std::size_t devices() const { return devices_; }

 private:
  std::unordered_map<std::string, model::KubernetesPod> by_uuid_;
  std::unordered_map<std::string, std::vector<model::KubernetesPod>> holders_;  // by GPU UUID, distinct
  std::size_t pods_ = 0;
  std::size_t devices_ = 0;
};

// Sets each GPU sample's kubernetes_pod from `map` by the GPU's UUID (`gpus`: the backend's GPUs, by
// index); a GPU no container holds gets none (its series keep their labels without pod/namespace/container).
// kubernetes_gpu_shared says several containers hold parts of it (its processes then get no pod labels).
void label_gpus(model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus, const DevicePodMap& map);

}  // namespace gpuscope::kubernetes
