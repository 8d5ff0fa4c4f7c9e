#include "nvml/mig_reader.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "nvml/gpm_metrics.h"
#include "nvml/nvml_library.h"

namespace gpuscope::nvml {
namespace {

using model::FieldId;
using model::FieldValue;

std::string mig_c_string(const char* buf, std::size_t cap) { return std::string(buf, strnlen(buf, cap)); }

// "MIG 3g.40gb" -> "3g.40gb", as dcgm-exporter's GPU_I_PROFILE and nvidia-smi mig -lgip's column show it.
std::string mig_strip_prefix(std::string name) {
  constexpr std::string_view kPrefix = "MIG ";
  if (name.starts_with(kPrefix)) name.erase(0, kPrefix.size());
  return name;
}

}  // namespace

MigReader::~MigReader() { reset(); }

void MigReader::free_gpm(GpmPair& p) {
  if (library_.nvmlGpmSampleFree != nullptr) {
    if (p.prev != nullptr) library_.nvmlGpmSampleFree(p.prev);
    if (p.cur != nullptr) library_.nvmlGpmSampleFree(p.cur);
  }
  p = {};
}

void MigReader::reset() {
  for (auto& [gi, p] : gpm_) free_gpm(p);
  gpm_.clear();
  known_.clear();
  profiles_.clear();
  profiles_loaded_ = false;
  primed_ = false;
  unsupported_ = false;
  max_devices_ = 0;
}

// The GPU's GPU instance profiles, by walking the profile indices until the driver says there are no
// more (INVALID_ARGUMENT); indices this GPU lacks answer NOT_SUPPORTED and are skipped. The list is fixed
// while MIG mode is on.
void MigReader::load_profiles(nvmlDevice_t parent) {
  profiles_loaded_ = true;
  profiles_.clear();
  if (library_.nvmlDeviceGetGpuInstanceProfileInfoV == nullptr) return;
  for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    const nvmlReturn_t rc = library_.nvmlDeviceGetGpuInstanceProfileInfoV(parent, index, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc != NVML_SUCCESS) continue;
    profiles_.push_back({info.id, mig_strip_prefix(mig_c_string(info.name, sizeof info.name)), info.sliceCount,
                         info.multiprocessorCount, info.jpegCount, info.ofaCount, info.memorySizeMB});
  }
}

// The profile a MIG device was made from, by its resources: slices and memory pick the profile, the
// media engines tell 1g.10gb from 1g.10gb+me. Without a match (a driver whose profile list is not
// readable), nvidia-smi's naming rule: "<slices>g.<memory GB>gb".
std::string MigReader::profile_name(const nvmlDeviceAttributes_t& a) const {
  const Profile* best = nullptr;
  for (const auto& p : profiles_) {
    if (p.slices != a.gpuInstanceSliceCount || p.memory_mib != a.memorySizeMB) continue;
    if (best == nullptr || (p.ofa == a.sharedOfaCount && p.jpeg == a.sharedJpegCount)) best = &p;
  }
  if (best != nullptr) return best->name;
  if (a.gpuInstanceSliceCount == 0 || a.memorySizeMB == 0) return {};
  return fmt::format("{}g.{}gb", a.gpuInstanceSliceCount,
                     static_cast<unsigned long long>(std::lround(static_cast<double>(a.memorySizeMB) / 1024.0)));
}

bool MigReader::start_window(nvmlDevice_t parent, unsigned gi, const std::string& uuid, bool& lost) {
  const auto& L = library_;
  if (L.nvmlGpmMigSampleGet == nullptr || L.nvmlGpmSampleAlloc == nullptr || L.nvmlGpmMetricsGet == nullptr) return false;
  GpmPair& p = gpm_[gi];
  p.seen = true;
  p.uuid = uuid;
  if ((p.prev == nullptr && L.nvmlGpmSampleAlloc(&p.prev) != NVML_SUCCESS) ||
      (p.cur == nullptr && L.nvmlGpmSampleAlloc(&p.cur) != NVML_SUCCESS)) {
    return false;
  }
  const nvmlReturn_t rc = L.nvmlGpmMigSampleGet(parent, gi, p.prev);
  lost = lost || rc == NVML_ERROR_GPU_IS_LOST;
  p.prev_valid = rc == NVML_SUCCESS;
  return p.prev_valid;
}

void MigReader::read_gpm(nvmlDevice_t parent, unsigned gpu_instance_id, model::MigInstanceSample& m, bool& lost) {
  const auto& L = library_;
  for (const auto& w : kGpmInstanceWanted) m[w.field] = FieldValue::unsupported();
  auto it = gpm_.find(gpu_instance_id);
  if (it == gpm_.end() || !it->second.prev_valid || it->second.uuid != m.uuid) {
    // An instance's first reading only starts its window: its ratios come from the next one on.
    start_window(parent, gpu_instance_id, m.uuid, lost);
    return;
  }
  GpmPair& p = it->second;
  p.seen = true;
  nvmlReturn_t rc = L.nvmlGpmMigSampleGet(parent, gpu_instance_id, p.cur);
  lost = lost || rc == NVML_ERROR_GPU_IS_LOST;
  if (rc != NVML_SUCCESS) {
    for (const auto& w : kGpmInstanceWanted) m[w.field] = field_status_of(rc);
    p.prev_valid = false;
    return;
  }
  rc = read_gpm_metrics(L, p.prev, p.cur, kGpmInstanceWanted, m.fields);
  lost = lost || rc == NVML_ERROR_GPU_IS_LOST;
  std::swap(p.prev, p.cur);
}

bool MigReader::prime(nvmlDevice_t parent, bool gpm) {
  const auto& L = library_;
  if (primed_) return false;
  primed_ = true;
  if (!gpm || unsupported_ || L.nvmlDeviceGetMigMode == nullptr || L.nvmlDeviceGetMigDeviceHandleByIndex == nullptr ||
      L.nvmlDeviceGetGpuInstanceId == nullptr) {
    return false;
  }
  unsigned current = 0, pending = 0;
  if (L.nvmlDeviceGetMigMode(parent, &current, &pending) != NVML_SUCCESS || current == 0) return false;
  unsigned max = 0;
  if (L.nvmlDeviceGetMaxMigDeviceCount == nullptr || L.nvmlDeviceGetMaxMigDeviceCount(parent, &max) != NVML_SUCCESS) max = 7;
  bool started = false, lost = false;
  for (unsigned index = 0; index < max && !lost; ++index) {
    nvmlDevice_t h = nullptr;
    unsigned gi = 0;
    if (L.nvmlDeviceGetMigDeviceHandleByIndex(parent, index, &h) != NVML_SUCCESS) continue;
    if (L.nvmlDeviceGetGpuInstanceId(h, &gi) != NVML_SUCCESS || gpm_.contains(gi)) continue;
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
    std::string id;
    if (L.nvmlDeviceGetUUID != nullptr && L.nvmlDeviceGetUUID(h, uuid, sizeof uuid) == NVML_SUCCESS) {
      id = mig_c_string(uuid, sizeof uuid);
    }
    started = start_window(parent, gi, id, lost) || started;
  }
  return started;
}

nvmlReturn_t MigReader::read(nvmlDevice_t parent, bool gpm, model::GpuSample& g) {
  const auto& L = library_;
  g.mig_enabled = false;
  g.mig_instances.clear();
  if (unsupported_ || L.nvmlDeviceGetMigMode == nullptr) return NVML_SUCCESS;
  bool lost = false;
  unsigned current = 0, pending = 0;
  nvmlReturn_t rc = L.nvmlDeviceGetMigMode(parent, &current, &pending);
  if (rc == NVML_ERROR_GPU_IS_LOST) return rc;
  if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
    unsupported_ = true;
    return NVML_SUCCESS;
  }
  if (rc != NVML_SUCCESS || current == 0) {
    // Out of MIG mode (or unknown): the instances are gone, and a later MIG mode starts afresh.
    if (!gpm_.empty() || !known_.empty() || profiles_loaded_) {
      for (auto& [gi, p] : gpm_) free_gpm(p);
      gpm_.clear();
      known_.clear();
      profiles_loaded_ = false;
    }
    return NVML_SUCCESS;
  }
  g.mig_enabled = true;
  if (L.nvmlDeviceGetMigDeviceHandleByIndex == nullptr) return NVML_SUCCESS;
  if (max_devices_ == 0) {
    if (L.nvmlDeviceGetMaxMigDeviceCount == nullptr ||
        L.nvmlDeviceGetMaxMigDeviceCount(parent, &max_devices_) != NVML_SUCCESS) {
      max_devices_ = 7;  // every MIG GPU so far (A100, H100, H200, B200) has at most 7
    }
  }
  if (!profiles_loaded_) load_profiles(parent);
  for (auto& [gi, p] : gpm_) p.seen = false;

  std::map<unsigned, std::size_t> first_of_instance;  // GPU instance id -> its first MIG device read here
  std::map<std::string, Known> known_now;
  for (unsigned index = 0; index < max_devices_ && !lost; ++index) {
    nvmlDevice_t h = nullptr;
    rc = L.nvmlDeviceGetMigDeviceHandleByIndex(parent, index, &h);
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
    if (rc != NVML_SUCCESS) continue;  // NOT_FOUND: no MIG device at this index
    model::MigInstanceSample m;
    m.device_index = index;
    auto get_id = [&](auto fn, unsigned& out) {
      if (fn == nullptr) return false;
      const nvmlReturn_t r = fn(h, &out);
      lost = lost || r == NVML_ERROR_GPU_IS_LOST;
      return r == NVML_SUCCESS;
    };
    // A device without its GPU instance id cannot be told apart from the others: leave it out.
    if (!get_id(L.nvmlDeviceGetGpuInstanceId, m.gpu_instance_id)) continue;
    get_id(L.nvmlDeviceGetComputeInstanceId, m.compute_instance_id);
    char uuid[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
    if (L.nvmlDeviceGetUUID != nullptr) {
      const nvmlReturn_t r = L.nvmlDeviceGetUUID(h, uuid, sizeof uuid);
      lost = lost || r == NVML_ERROR_GPU_IS_LOST;
      if (r == NVML_SUCCESS) m.uuid = mig_c_string(uuid, sizeof uuid);
    }
    // Profile and SMs are fixed for a MIG device's life: read once per UUID.
    const std::string key = m.uuid.empty() ? fmt::format("gi{}/ci{}", m.gpu_instance_id, m.compute_instance_id) : m.uuid;
    auto it = known_.find(key);
    if (it == known_.end()) {
      Known k;
      nvmlDeviceAttributes_t a{};
      if (L.nvmlDeviceGetAttributes_v2 != nullptr) {
        const nvmlReturn_t r = L.nvmlDeviceGetAttributes_v2(h, &a);
        lost = lost || r == NVML_ERROR_GPU_IS_LOST;
        if (r == NVML_SUCCESS) {
          k.profile = profile_name(a);
          k.sm_count = a.multiprocessorCount;
          k.slices = a.gpuInstanceSliceCount;
        }
      }
      it = known_.emplace(key, std::move(k)).first;
    }
    known_now.insert(*it);
    m.profile = it->second.profile;
    m.sm_count = it->second.sm_count;
    m.gpu_instance_slices = it->second.slices;

    if (L.nvmlDeviceGetMemoryInfo_v2 != nullptr || L.nvmlDeviceGetMemoryInfo != nullptr) {
      nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
      if (L.nvmlDeviceGetMemoryInfo_v2 != nullptr) {
        nvmlMemory_v2_t mem{};
        mem.version = nvmlMemory_v2;
        r = L.nvmlDeviceGetMemoryInfo_v2(h, &mem);
        if (r == NVML_SUCCESS) {
          m[FieldId::kFbTotal] = FieldValue::of(static_cast<double>(mem.total >> 20));
          m[FieldId::kFbFree] = FieldValue::of(static_cast<double>(mem.free >> 20));
          m[FieldId::kFbUsed] = FieldValue::of(static_cast<double>(mem.used >> 20));
          m[FieldId::kFbReserved] = FieldValue::of(static_cast<double>(mem.reserved >> 20));
        }
      }
      if (r != NVML_SUCCESS && r != NVML_ERROR_GPU_IS_LOST && L.nvmlDeviceGetMemoryInfo != nullptr) {
        nvmlMemory_t mem{};
        r = L.nvmlDeviceGetMemoryInfo(h, &mem);
        for (auto [id, v] : {std::pair{FieldId::kFbTotal, mem.total}, {FieldId::kFbFree, mem.free}, {FieldId::kFbUsed, mem.used}}) {
          m[id] = r == NVML_SUCCESS ? FieldValue::of(static_cast<double>(v >> 20)) : field_status_of(r);
        }
      }
      lost = lost || r == NVML_ERROR_GPU_IS_LOST;
    }

    if (gpm) {
      // GPM samples a GPU instance; its compute instances share the figures.
      if (auto first = first_of_instance.find(m.gpu_instance_id); first != first_of_instance.end()) {
        for (const auto& w : kGpmInstanceWanted) m[w.field] = g.mig_instances[first->second][w.field];
      } else {
        read_gpm(parent, m.gpu_instance_id, m, lost);
        first_of_instance.emplace(m.gpu_instance_id, g.mig_instances.size());
      }
    }
    g.mig_instances.push_back(std::move(m));
  }
  // A GPU instance destroyed since the last reading: its samples go (a new one with its id starts afresh).
  for (auto it = gpm_.begin(); it != gpm_.end();) {
    if (it->second.seen) {
      ++it;
    } else {
      free_gpm(it->second);
      it = gpm_.erase(it);
    }
  }
  known_ = std::move(known_now);
  return lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

}  // namespace gpuscope::nvml
