// The processes a simulated GPU runs at a given time and the device memory each holds, including
// leaks and the extra processes a process_list_grows fault adds.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "sim/scenario.h"

namespace gpuscope::sim {

// Memory the driver holds on a GPU with or without processes (NVML counts it as used).
inline constexpr double kDriverOverheadBytes = 4.0 * 1048576.0;

struct GpuProcess {
  unsigned pid;
  std::string_view name;
  ProcessType type;
  double used_bytes;
  std::optional<unsigned> gpu_instance = std::nullopt;  // MIG: the GPU instance it runs in (compute instance 0)
};

class ProcessTable {
 public:
  explicit ProcessTable(const Scenario& scenario);

  // The processes on `gpu` at scenario time `t`, in pid order of the scenario, then `extra`
  // late-comers. Their memory never exceeds what the GPU can give them.
  std::vector<GpuProcess> on_gpu(unsigned gpu, double t, unsigned extra) const;

  // The scenario's name for `pid` (alive or not), without the late-comers of faults.
  std::optional<std::string_view> name_of(unsigned pid) const;
  // The scenario's user for `pid` (empty when it names none), nullopt for a pid it does not have.
  std::optional<std::string_view> user_of(unsigned pid) const;

  // Pids of the processes a process_list_grows fault adds to `gpu`.
  static unsigned extra_pid(unsigned gpu, unsigned i) { return 900000 + gpu * 1000 + i; }
  static constexpr std::string_view kExtraName = "python dataloader_worker";
  static constexpr double kExtraBytes = 512.0 * 1048576.0;

 private:
  static bool alive(const ProcessSpec& p, double t) { return t >= p.start_s && t < p.end_s; }

  const Scenario& scenario_;
};

}  // namespace gpuscope::sim
