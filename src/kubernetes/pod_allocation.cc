#include "kubernetes/pod_allocation.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

namespace gpuscope::kubernetes {
namespace {

constexpr std::string_view kGpuResource = "nvidia.com/gpu";
constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";
constexpr std::string_view kGpuUuidPrefix = "GPU-";
constexpr std::string_view kMigUuidPrefix = "MIG-";
// NVIDIA's device plugin names a time-sliced share of a GPU "<GPU UUID>::<replica>".
constexpr std::string_view kShareSeparator = "::";
// GKE's device plugin names GPUs by their device file ("nvidia0"), a time-shared one's shares
// "nvidia0/vgpu3", and MIG devices "nvidia0/gi2" (shares "nvidia0/gi2/vgpu1"): dcgm-exporter's
// --kubernetes-gpu-id-type device-name.
constexpr std::string_view kGkeShareSeparator = "/vgpu";
constexpr std::string_view kGkeDevicePrefix = "nvidia";
constexpr std::string_view kGkeInstanceSeparator = "/gi";

// "nvidia<digits>" at the start of `id`: its length, or 0.
std::size_t gke_gpu_name_length(std::string_view id) {
  if (!id.starts_with(kGkeDevicePrefix)) return 0;
  std::size_t n = kGkeDevicePrefix.size();
  while (n < id.size() && id[n] >= '0' && id[n] <= '9') ++n;
  return n > kGkeDevicePrefix.size() ? n : 0;
}

}  // namespace

bool is_nvidia_gpu_resource(std::string_view resource_name) {
  return resource_name == kGpuResource || resource_name.starts_with(kMigResourcePrefix);
}

std::string_view device_of(std::string_view device_id) {
  std::string_view device = device_id.substr(0, device_id.find(kShareSeparator));
  if (gke_gpu_name_length(device) > 0) device = device.substr(0, device.find(kGkeShareSeparator));
  return device;
}

std::string gke_mig_device_name(std::string_view gpu_device_name, unsigned gpu_instance_id) {
  return fmt::format("{}{}{}", gpu_device_name, kGkeInstanceSeparator, gpu_instance_id);
}

std::string old_style_mig_id(std::string_view gpu_uuid, unsigned gpu_instance_id, unsigned compute_instance_id) {
  return fmt::format("{}{}/{}/{}", kMigUuidPrefix, gpu_uuid, gpu_instance_id, compute_instance_id);
}

std::optional<std::string> gpu_uuid_of_device(std::string_view device_id, const MigParentLookup& mig_parent) {
  const std::string_view device = device_of(device_id);
  if (device.starts_with(kGpuUuidPrefix)) return std::string(device);
  // GKE's names: "nvidia0" is the GPU, "nvidia0/gi2" one of its MIG devices.
  if (const std::size_t n = gke_gpu_name_length(device); n > 0 && (n == device.size() || device.substr(n).starts_with(kGkeInstanceSeparator))) {
    return std::string(device.substr(0, n));
  }
  if (device.starts_with(kMigUuidPrefix)) {
    std::string_view rest = device.substr(kMigUuidPrefix.size());
    // Old-style MIG UUIDs carry the parent: MIG-GPU-<uuid>/<GPU instance>/<compute instance>.
    if (rest.starts_with(kGpuUuidPrefix)) return std::string(rest.substr(0, rest.find('/')));
    if (mig_parent) return mig_parent(device);
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
          const Holder holder{ref, map.devices_++};
          const auto hold = [&](const std::string& key) {
            map.by_uuid_[key] = holder;
            auto& holders = map.holders_[key];
            if (std::ranges::find(holders, ref) == holders.end()) holders.push_back(ref);
          };
          map.by_uuid_[id] = holder;
          // The device itself (a time-sliced share names it with its replica), then the GPU it is or is on.
          const std::string device(device_of(id));
          hold(device);
          const auto gpu = gpu_uuid_of_device(id, mig_parent);
          if (gpu && *gpu != device) hold(*gpu);
        }
      }
    }
    if (holds_gpu) ++map.pods_;
  }
  return map;
}

const model::KubernetesPod* DevicePodMap::find(std::string_view uuid) const {
  const auto it = by_uuid_.find(uuid);
  return it == by_uuid_.end() ? nullptr : &it->second.pod;
}

std::optional<std::size_t> DevicePodMap::position(std::string_view uuid) const {
  const auto it = by_uuid_.find(uuid);
  if (it == by_uuid_.end()) return std::nullopt;
  return it->second.position;
}

std::size_t DevicePodMap::containers_on(std::string_view gpu_uuid) const { return holders(gpu_uuid).size(); }

std::span<const model::KubernetesPod> DevicePodMap::holders(std::string_view uuid) const {
  const auto it = holders_.find(uuid);
  if (it == holders_.end()) return {};
  return it->second;
}

void label_gpus(model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus, const DevicePodMap& map) {
  for (auto& sample : snapshot.gpus) {
    sample.kubernetes_pod.reset();
    sample.kubernetes_gpu_shared = false;
    for (auto& instance : sample.mig_instances) {
      instance.kubernetes_pod.reset();
      instance.kubernetes_shared = false;
    }
    const auto info = std::ranges::find(gpus, sample.index, &model::GpuInfo::index);
    if (info == gpus.end()) continue;
    // The GPU's containers: those the map ties to its UUID (whole GPU, shares, old-style MIG IDs) or to its
    // device name (GKE), plus those of its MIG devices found by their own IDs (the map cannot tie a MIG UUID
    // to its GPU without NVML). Of several, the last in the kubelet's order names the GPU.
    std::vector<model::KubernetesPod> holders;
    const model::KubernetesPod* last = nullptr;
    std::optional<std::size_t> last_position;
    const auto take = [&](std::string_view id) {
      const model::KubernetesPod* pod = map.find(id);
      if (pod == nullptr) return;
      for (const auto& h : map.holders(id)) {
        if (std::ranges::find(holders, h) == holders.end()) holders.push_back(h);
      }
      const auto at = map.position(id);
      if (last == nullptr || !last_position || (at && *at > *last_position)) {
        last = pod;
        last_position = at;
      }
    };
    const std::string name = info->device_name();
    take(info->uuid);
    if (!name.empty()) take(name);
    for (auto& instance : sample.mig_instances) {
      // By the MIG device's own UUID, else by the ID older device plugins gave it, else by GKE's name.
      std::vector<std::string> ids;
      if (!instance.uuid.empty()) ids.push_back(instance.uuid);
      ids.push_back(old_style_mig_id(info->uuid, instance.gpu_instance_id, instance.compute_instance_id));
      if (!name.empty()) ids.push_back(gke_mig_device_name(name, instance.gpu_instance_id));
      const auto id = std::ranges::find_if(ids, [&](const std::string& i) { return map.find(i) != nullptr; });
      if (id == ids.end()) continue;
      instance.kubernetes_pod = *map.find(*id);
      // Time-sliced shares of the device in several containers: the pod named is only the last of them.
      instance.kubernetes_shared = map.holders(*id).size() > 1;
      take(*id);
    }
    if (last != nullptr) sample.kubernetes_pod = *last;
    sample.kubernetes_gpu_shared = holders.size() > 1;
  }
}

}  // namespace gpuscope::kubernetes
