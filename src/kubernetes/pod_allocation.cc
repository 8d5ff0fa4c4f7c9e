#include "kubernetes/pod_allocation.h"

#include <algorithm>
#include <unordered_set>

namespace gpuscope::kubernetes {
namespace {

constexpr std::string_view kGpuResource = "nvidia.com/gpu";
constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";
constexpr std::string_view kGpuUuidPrefix = "GPU-";
constexpr std::string_view kMigUuidPrefix = "MIG-";
// NVIDIA's device plugin names a time-sliced share of a GPU "<GPU UUID>::<replica>".
constexpr std::string_view kShareSeparator = "::";

}  // namespace

bool is_nvidia_gpu_resource(std::string_view resource_name) {
  return resource_name == kGpuResource || resource_name.starts_with(kMigResourcePrefix);
}

std::optional<std::string> gpu_uuid_of_device(std::string_view device_id, const MigParentLookup& mig_parent) {
  if (device_id.starts_with(kGpuUuidPrefix)) {
    const auto share = device_id.find(kShareSeparator);
    return std::string(device_id.substr(0, share));
  }
  if (device_id.starts_with(kMigUuidPrefix)) {
    std::string_view rest = device_id.substr(kMigUuidPrefix.size());
    // Old-style MIG UUIDs carry the parent: MIG-GPU-<uuid>/<GPU instance>/<compute instance>.
    if (rest.starts_with(kGpuUuidPrefix)) return std::string(rest.substr(0, rest.find('/')));
    if (mig_parent) return mig_parent(device_id);
  }
  return std::nullopt;
}

DevicePodMap DevicePodMap::build(std::span<const PodAllocation> pods, const MigParentLookup& mig_parent) {
  DevicePodMap map;
  for (const auto& pod : pods) {
    bool holds_gpu = false;
    for (const auto& container : pod.containers) {
      const model::KubernetesPod ref{pod.name, pod.namespace_name, container.name};
      for (const auto& devices : container.devices) {
        if (!is_nvidia_gpu_resource(devices.resource_name)) continue;
        for (const auto& id : devices.device_ids) {
          holds_gpu = true;
          ++map.devices_;
          map.by_uuid_[id] = ref;
          const auto gpu = gpu_uuid_of_device(id, mig_parent);
          if (!gpu) continue;
          if (*gpu != id) map.by_uuid_[*gpu] = ref;
          auto& holders = map.holders_[*gpu];
          if (std::ranges::find(holders, ref) == holders.end()) holders.push_back(ref);
        }
      }
    }
    if (holds_gpu) ++map.pods_;
  }
  return map;
}

const model::KubernetesPod* DevicePodMap::find(std::string_view uuid) const {
  const auto it = by_uuid_.find(std::string(uuid));
  return it == by_uuid_.end() ? nullptr : &it->second;
}

std::size_t DevicePodMap::containers_on(std::string_view gpu_uuid) const {
  const auto it = holders_.find(std::string(gpu_uuid));
  return it == holders_.end() ? 0 : it->second.size();
}

void label_gpus(model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus, const DevicePodMap& map) {
  for (auto& sample : snapshot.gpus) {
    sample.kubernetes_pod.reset();
    sample.kubernetes_gpu_shared = false;
    const auto info = std::ranges::find(gpus, sample.index, &model::GpuInfo::index);
    if (info == gpus.end()) continue;
    if (const auto* pod = map.find(info->uuid)) sample.kubernetes_pod = *pod;
    sample.kubernetes_gpu_shared = map.containers_on(info->uuid) > 1;
  }
}

}  // namespace gpuscope::kubernetes
