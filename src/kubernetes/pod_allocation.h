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
// "GPU-x::3", an old-style (driver R450/R460) MIG device "MIG-GPU-x/1/0"; for GKE's device names the GPU's
// name: "nvidia0" for "nvidia0", "nvidia0/vgpu3" and "nvidia0/gi2". A new-style MIG UUID
// ("MIG-<uuid>", or a time-sliced share of it "MIG-<uuid>::2") does not name its parent: `mig_parent`
// (asked with the MIG UUID alone, when the caller has an answer) does, else nullopt. Anything else (not a
// UUID): nullopt. label_gpus finds the parent of new-style MIG devices from the reading instead.
using MigParentLookup = std::function<std::optional<std::string>(std::string_view mig_uuid)>;
std::optional<std::string> gpu_uuid_of_device(std::string_view device_id, const MigParentLookup& mig_parent = {});

// The device a device ID allocates, without a time-sliced share's "::<replica>" (or GKE's "/vgpu<n>"):
// "GPU-x", "MIG-x", "MIG-GPU-x/1/0", "nvidia0", "nvidia0/gi2".
std::string_view device_of(std::string_view device_id);

// GKE's ID of MIG device `gpu_instance_id` of the GPU whose device file is `gpu_device_name`: "nvidia0/gi2".
std::string gke_mig_device_name(std::string_view gpu_device_name, unsigned gpu_instance_id);

// The ID old drivers (R450/R460) and device plugins of their time gave MIG device `gi`/`ci` of GPU `gpu_uuid`:
// "MIG-GPU-<uuid>/<gi>/<ci>".
std::string old_style_mig_id(std::string_view gpu_uuid, unsigned gpu_instance_id, unsigned compute_instance_id);

// Device (GPU or MIG UUID) → the container the kubelet allocated it to. Immutable once built: the watcher
// swaps a whole new map in, readers keep the one they loaded.
class DevicePodMap {
 public:
  DevicePodMap() = default;
  // Later containers in the kubelet's order win a device (or a GPU) that several hold (time-slicing, MIG
  // devices of one GPU in different pods), as dcgm-exporter's default mapping does.
  static DevicePodMap build(std::span<const PodAllocation> pods, const MigParentLookup& mig_parent = {});

  // The container holding `uuid` (a GPU's UUID: the GPU itself, a share of it or a MIG device on it; or a
  // MIG device's own UUID, or a device ID as the kubelet sent it); null when none.
  const model::KubernetesPod* find(std::string_view uuid) const;
  // Where find(uuid)'s container came in the kubelet's answer (its device entries counted in order; a later
  // one is larger), so that of several holders the last can be picked; nullopt when none holds it.
  std::optional<std::size_t> position(std::string_view uuid) const;
  // How many different containers hold a part of GPU `gpu_uuid` (0: unallocated; more than 1: shared, and
  // its labels name only the last of them); for a MIG device's UUID, how many hold (shares of) it.
  std::size_t containers_on(std::string_view gpu_uuid) const;
  // Those containers, in the order they first came.
  std::span<const model::KubernetesPod> holders(std::string_view uuid) const;
  // Pods with at least one NVIDIA device, and the device IDs they hold.
  std::size_t pods() const { return pods_; }
  std::size_t devices() const { return devices_; }

 private:
  struct Holder {
    model::KubernetesPod pod;
    std::size_t position = 0;
  };
  // Looked up by string_view without building a std::string (a UUID is past the short-string buffer): each
  // reading looks up every GPU and MIG device.
  struct UuidHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <typename T>
  using ByUuid = std::unordered_map<std::string, T, UuidHash, std::equal_to<>>;
  ByUuid<Holder> by_uuid_;
  ByUuid<std::vector<model::KubernetesPod>> holders_;  // by GPU and by device, distinct
  std::size_t pods_ = 0;
  std::size_t devices_ = 0;
};

// Sets each GPU sample's kubernetes_pod from `map` by the GPU's UUID or its device name ("nvidia0", as
// GKE's device plugin names GPUs) (`gpus`: the backend's GPUs, by index); a GPU no container holds gets none (its series keep their labels without pod/namespace/container).
// kubernetes_gpu_shared says several containers hold parts of it (its processes then get no pod labels).
// Each MIG instance of the reading gets the container holding it, by its MIG UUID or else by its old-style
// ID (parent UUID and instance IDs); the instances' containers count as the GPU's holders too, so a GPU whose
// allocated MIG devices are all one container's has that container, and one split among several is shared
// (labelled with the last of them in the kubelet's order).
void label_gpus(model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus, const DevicePodMap& map);

}  // namespace gpuscope::kubernetes
