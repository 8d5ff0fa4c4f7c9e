// A scenario's MIG layouts applied to a GPU in time order: which instances a new layout creates,
// which live on from the one before (same handle, UUID, counters) and which it destroys.
#pragma once

#include <cstddef>
#include <expected>
#include <optional>
#include <span>

#include "sim/mig_profiles.h"
#include "sim/scenario.h"

namespace gpuscope::sim {

struct MigLayoutEntry {
  const MigProfile* profile = nullptr;
  std::optional<unsigned> id;             // the scenario's `id:`
  std::optional<WorkloadSpec> workload;   // nullopt: idle for a new instance, unchanged for one living on
};

// Makes `entries` the GPU's layout from `at` on (MIG mode `enabled`; entries only when enabled). An
// entry with the profile (and id, when given) of an instance alive until now continues it; entries
// without an id take those over in id order. Layouts must come in time order.
std::expected<void, MigPlacementError> apply_mig_layout(GpuSpec& gpu, bool enabled,
                                                         std::span<const MigLayoutEntry> entries, double at);

}  // namespace gpuscope::sim
