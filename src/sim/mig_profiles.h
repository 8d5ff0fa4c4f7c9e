// MIG GPU instance profiles per GPU model (what nvidia-smi mig -lgip lists), the driver's placement
// rules and its GPU instance id convention, and the placement of a scenario's layout on the slices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/mig_profile_table.h"
#include "sim/gpu_catalog.h"

namespace gpuscope::sim {

inline constexpr unsigned kMigComputeSlices = 7;
inline constexpr unsigned kMigMemorySlices = 8;

// The profile table is shared with the MIG right-sizing (model/mig_profile_table.h).
using MigProfile = model::MigProfileFacts;

// The model's profiles in index order; empty for a model without MIG or without a table here.
std::span<const MigProfile> mig_profiles(const GpuModel& model);
const MigProfile* find_mig_profile(const GpuModel& model, std::string_view name);
const MigProfile* find_mig_profile_by_index(const GpuModel& model, unsigned index);
const MigProfile* find_mig_profile_by_id(const GpuModel& model, unsigned id);
std::string mig_profile_names(const GpuModel& model);  // "1g.10gb, 1g.10gb+me, ..." for error messages

// The GPU instance id the driver gives an instance of `profile` placed at memory slice `start`
// (7g: 0; 4g: 1; 3g at 0/4: 1/2; two-slice placements at 0/2/4/6: 3-6; 1g at s: 7 + s).
unsigned mig_instance_id(const MigProfile& profile, unsigned start);

struct MigRequest {
  const MigProfile* profile = nullptr;
  std::optional<unsigned> id;  // the scenario's `id:`; nullopt: the driver picks
};
struct MigPlacement {
  unsigned id;
  unsigned start;
};
struct MigPlacementError {
  std::size_t request;  // which request is at fault
  std::string message;
};
// Places a layout's instances on the GPU's 7 compute / 8 memory slices as the driver would: instances
// with an id take that id's place, the others (largest first) the highest free place of their profile.
// Placements come back in request order.
std::expected<std::vector<MigPlacement>, MigPlacementError> place_mig_instances(const GpuModel& model,
                                                                               std::span<const MigRequest> requests);

}  // namespace gpuscope::sim
