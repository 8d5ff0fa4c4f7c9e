// Per-process utilization as the driver keeps it, for nvmlDeviceGetProcessUtilization and
// nvmlDeviceGetProcessesUtilizationInfo: the driver samples each process in a ring buffer, and a read
// "since lastSeenTimeStamp" (NVML's header) answers each process's utilization over the samples newer
// than that stamp. The real H100 shows the averaging: under a sawtooth load whose 1 s device
// utilization read 0, 14, 23 and 28 %, one process's figure read a steady 17-20 %
// (shared/reference/real-h100/history.json.gz).
#pragma once

#include <vector>

#include "sim/library_state.h"

namespace gpuscope::sim {

// The cells (1 s each) the simulated ring buffer keeps: a read older than that averages only these.
inline constexpr unsigned kProcessSampleCells = 20;

struct ProcessUtilizationAverage {
  unsigned pid;
  unsigned long long stamp_us;  // the newest cell's start, as the driver stamps its samples
  unsigned sm_percent;          // the GPU's activity shared evenly among the processes of each cell,
  unsigned mem_percent;         // averaged over the cells since last_seen_us in which the process ran
};

// One entry per process that ran in a cell newer than `last_seen_us` (0: the whole buffer), in the
// order of the newest cell's processes, then processes that have since left; empty when there is no
// such cell or no process (the driver's NOT_FOUND). Leaves the device's physics at `t`.
std::vector<ProcessUtilizationAverage> process_utilization_since(Simulator& sim, SimDevice& d, double t,
                                                                 unsigned long long last_seen_us);

}  // namespace gpuscope::sim
