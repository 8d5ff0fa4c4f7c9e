#include "sim/mig_profiles.h"

#include <algorithm>
#include <array>

namespace gpuscope::sim {
namespace {

struct MigSlots {
  std::array<bool, kMigComputeSlices> compute{};
  std::array<bool, kMigMemorySlices> memory{};

  bool fits(const MigProfile& p, unsigned start) const {
    if (start + p.slices > kMigComputeSlices || start + p.memory_slices > kMigMemorySlices) return false;
    for (unsigned s = start; s < start + p.slices; ++s) {
      if (compute[s]) return false;
    }
    for (unsigned s = start; s < start + p.memory_slices; ++s) {
      if (memory[s]) return false;
    }
    return true;
  }
  void take(const MigProfile& p, unsigned start) {
    for (unsigned s = start; s < start + p.slices; ++s) compute[s] = true;
    for (unsigned s = start; s < start + p.memory_slices; ++s) memory[s] = true;
  }
};

std::string mig_ids_text(const MigProfile& p) {
  std::string out;
  for (unsigned start : p.starts) {
    if (!out.empty()) out += ", ";
    out += std::to_string(mig_instance_id(p, start));
  }
  return out;
}

}  // namespace

std::span<const MigProfile> mig_profiles(const GpuModel& model) {
  if (model.max_mig_devices == 0) return {};
  return model::mig_profile_table(model.name);
}

const MigProfile* find_mig_profile(const GpuModel& model, std::string_view name) {
  for (const MigProfile& p : mig_profiles(model)) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const MigProfile* find_mig_profile_by_index(const GpuModel& model, unsigned index) {
  for (const MigProfile& p : mig_profiles(model)) {
    if (p.index == index) return &p;
  }
  return nullptr;
}

const MigProfile* find_mig_profile_by_id(const GpuModel& model, unsigned id) {
  for (const MigProfile& p : mig_profiles(model)) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

std::string mig_profile_names(const GpuModel& model) {
  std::string out;
  for (const MigProfile& p : mig_profiles(model)) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

unsigned mig_instance_id(const MigProfile& profile, unsigned start) {
  if (profile.slices == kMigComputeSlices) return 0;
  if (profile.slices == 4) return 1;
  if (profile.slices == 3) return start == 0 ? 1 : 2;
  if (profile.memory_slices == 2) return 3 + start / 2;
  return 7 + start;
}

std::expected<std::vector<MigPlacement>, MigPlacementError> place_mig_instances(const GpuModel& model,
                                                                               std::span<const MigRequest> requests) {
  std::vector<MigPlacement> out(requests.size());
  MigSlots slots;
  // Per profile, no more instances than the driver allows.
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const MigProfile& p = *requests[i].profile;
    const auto same = static_cast<unsigned>(std::count_if(requests.begin(), requests.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                                          [&](const MigRequest& r) { return r.profile == &p; }));
    if (same > p.max_instances) {
      return std::unexpected(MigPlacementError{
          i, "at most " + std::to_string(p.max_instances) + " " + std::string(p.name) + " instance" +
                 (p.max_instances == 1 ? "" : "s") + " on a " + std::string(model.name)});
    }
  }
  const auto describe = [&](std::size_t i) {
    return std::string(requests[i].profile->name);
  };
  std::vector<std::size_t> placed;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].id) continue;
    const MigProfile& p = *requests[i].profile;
    const auto start = std::find_if(p.starts.begin(), p.starts.end(),
                                    [&](unsigned s) { return mig_instance_id(p, s) == *requests[i].id; });
    if (start == p.starts.end()) {
      return std::unexpected(MigPlacementError{i, "a " + std::string(p.name) + " instance cannot have id " +
                                                      std::to_string(*requests[i].id) + " (its ids: " +
                                                      mig_ids_text(p) + ")"});
    }
    if (!slots.fits(p, *start)) {
      std::string other;
      for (std::size_t j : placed) {
        const MigProfile& q = *requests[j].profile;
        const unsigned a = out[j].start;
        const bool overlap = (*start < a + q.slices && a < *start + p.slices) ||
                             (*start < a + q.memory_slices && a < *start + p.memory_slices);
        if (overlap) {
          other = describe(j) + " id " + std::to_string(out[j].id);
          break;
        }
      }
      return std::unexpected(MigPlacementError{i, std::string(p.name) + " id " + std::to_string(*requests[i].id) +
                                                      " overlaps the slices of " + other});
    }
    slots.take(p, *start);
    out[i] = MigPlacement{*requests[i].id, *start};
    placed.push_back(i);
  }
  // The rest, largest first, each at the highest free place its profile allows.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!requests[i].id) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const MigProfile& pa = *requests[a].profile;
    const MigProfile& pb = *requests[b].profile;
    return pa.slices != pb.slices ? pa.slices > pb.slices : pa.memory_slices > pb.memory_slices;
  });
  for (std::size_t i : order) {
    const MigProfile& p = *requests[i].profile;
    bool done = false;
    for (auto it = p.starts.rbegin(); it != p.starts.rend(); ++it) {
      if (!slots.fits(p, *it)) continue;
      slots.take(p, *it);
      out[i] = MigPlacement{mig_instance_id(p, *it), *it};
      done = true;
      break;
    }
    if (!done) {
      return std::unexpected(MigPlacementError{
          i, "no room left for a " + std::string(p.name) + " instance: the layout needs more than the GPU's " +
                 std::to_string(kMigComputeSlices) + " compute / " + std::to_string(kMigMemorySlices) +
                 " memory slices"});
    }
  }
  return out;
}

}  // namespace gpuscope::sim
