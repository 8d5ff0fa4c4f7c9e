// MIG at run time: which GPU instances a GPU has at a time, what runs inside each (its own workload on
// its own SMs), and the whole GPU's activity in MIG mode as the SM-weighted sum of its instances.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/noise.h"
#include "sim/scenario.h"
#include "sim/workload.h"

namespace gpuscope::sim {

// Memory a MIG instance's driver state holds inside it (its own figure beside the GPU's
// kDriverOverheadBytes; a guess in the spirit of the full GPU's 4 MiB).
inline constexpr double kMigInstanceOverheadBytes = 4.0 * 1048576.0;

// The GPU's instances alive at t, by GPU instance id.
std::vector<const MigInstanceSpec*> mig_instances_at(const GpuSpec& spec, double t);
const MigInstanceSpec* mig_instance_at(const GpuSpec& spec, unsigned gpu_instance_id, double t);

// What runs in `inst` during cell `cell`: ratios of the instance's own SMs; PCIe rates its share of the
// GPU's (SM share), NVLink none (MIG instances do not use NVLink).
Activity mig_instance_activity(const MigInstanceSpec& inst, const GpuModel& model, double link_mibps,
                               std::uint64_t seed, unsigned gpu, std::uint64_t cell);

// The whole GPU during `cell` in MIG mode: each ratio the SM-count-weighted sum of its instances' (SMs
// of no instance count 0), rates summed. Idle without instances.
Activity mig_gpu_activity(const GpuSpec& spec, const GpuModel& model, double link_mibps, std::uint64_t seed,
                          unsigned gpu, std::uint64_t cell);

// The integrals of an instance's metrics over cells, kept for GPM samples: advancing from the last
// reading forward, from its creation when time goes back.
class MigMeter {
 public:
  MigMeter(const MigInstanceSpec& inst, const GpuModel& model, double link_mibps, std::uint64_t seed, unsigned gpu);
  // Integrals from the instance's first cell to t, and the activity of t's cell.
  struct Value {
    std::array<double, kMetricCount> integral{};
    Activity activity;
  };
  Value at(double t);

 private:
  const MigInstanceSpec& inst_;
  const GpuModel& model_;
  double link_mibps_;
  std::uint64_t seed_;
  unsigned gpu_;
  std::uint64_t first_cell_;
  std::uint64_t k_;  // `sum_` covers cells first_cell_ .. k_ - 1
  std::array<double, kMetricCount> sum_{};
};

// "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", from the parent's UUID, the instance id and when it was
// created (a re-created instance gets a new UUID, as with the driver).
std::string mig_uuid(const std::string& parent_uuid, const MigInstanceSpec& inst);

}  // namespace gpuscope::sim
