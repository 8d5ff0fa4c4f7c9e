#include "sim/mig_layout.h"

#include <algorithm>
#include <vector>

namespace gpuscope::sim {

std::expected<void, MigPlacementError> apply_mig_layout(GpuSpec& g, bool enabled,
                                                         std::span<const MigLayoutEntry> entries, double at) {
  std::vector<std::size_t> before;  // instances alive until now, by id
  for (std::size_t i = 0; i < g.mig_instances.size(); ++i) {
    if (g.mig_instances[i].until_s == kForever) before.push_back(i);
  }
  std::sort(before.begin(), before.end(),
            [&](std::size_t a, std::size_t b) { return g.mig_instances[a].id < g.mig_instances[b].id; });
  std::vector<MigRequest> requests;
  for (const MigLayoutEntry& e : entries) requests.push_back(MigRequest{e.profile, e.id});
  // Entries with an id first, then those without, take over the live instances they match.
  std::vector<std::optional<std::size_t>> continues(requests.size());
  std::vector<bool> taken(before.size(), false);
  for (const bool with_id : {true, false}) {
    for (std::size_t r = 0; r < requests.size(); ++r) {
      if (with_id != entries[r].id.has_value()) continue;
      for (std::size_t b = 0; b < before.size(); ++b) {
        const MigInstanceSpec& old = g.mig_instances[before[b]];
        if (taken[b] || old.profile != requests[r].profile || (requests[r].id && *requests[r].id != old.id)) continue;
        taken[b] = true;
        continues[r] = before[b];
        requests[r].id = old.id;
        break;
      }
    }
  }
  auto placed = place_mig_instances(*g.model, requests);
  if (!placed) return std::unexpected(placed.error());
  for (std::size_t b = 0; b < before.size(); ++b) {
    if (!taken[b]) g.mig_instances[before[b]].until_s = at;
  }
  for (std::size_t r = 0; r < requests.size(); ++r) {
    if (continues[r]) {
      if (entries[r].workload) g.mig_instances[*continues[r]].phases.push_back(Phase{at, *entries[r].workload});
      continue;
    }
    MigInstanceSpec inst;
    inst.profile = requests[r].profile;
    inst.id = (*placed)[r].id;
    inst.start = (*placed)[r].start;
    inst.from_s = at;
    inst.phases.push_back(Phase{at, entries[r].workload.value_or(WorkloadSpec{})});
    g.mig_instances.push_back(std::move(inst));
  }
  g.mig_modes.push_back(MigModeChange{at, enabled});
  return {};
}

}  // namespace gpuscope::sim
