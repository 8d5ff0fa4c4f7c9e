// ProcessReader: one GPU's processes at each reading. The compute and graphics process lists (newest
// struct version the driver answers, one call each with room for 16), and each process's SM and memory
// utilization: the driver answers every process's average since the last sample it handed out, so the
// call (~0.9 ms on an H100) is made at most once per `utilization_interval` and at once when a process
// appears; in between each process keeps its last figures and the next call covers the whole gap.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/snapshot.h"
#include "nvml/nvml_abi.h"

namespace gpuscope::nvml {

class NvmlLibrary;
class ProcessResolver;

class ProcessReader {
 public:
  using Clock = std::chrono::system_clock;

  // `now`: the library's clock (the simulator's when it has one), asked only when a decision needs it.
  ProcessReader(const NvmlLibrary& library, std::chrono::nanoseconds utilization_interval,
                std::function<Clock::time_point()> now)
      : library_(library), interval_(utilization_interval), now_(std::move(now)) {}

  // Fills g.processes (pids, kinds, memory, MIG instance ids, utilization, identity through `resolver`)
  // and g.processes_error_code for `device`. `mark` sees every return code (the caller's lost-GPU
  // detection). Utilization is not asked in MIG mode (g.mig_enabled): NVML has none there.
  void read(nvmlDevice_t device, model::GpuSample& g, ProcessResolver& resolver,
            const std::function<void(nvmlReturn_t)>& mark);

  // The GPU returned (maybe another board): the next read starts afresh.
  void reset();

 private:
  void read_utilization(nvmlDevice_t device, model::GpuSample& g, const std::function<void(nvmlReturn_t)>& mark);

  const NvmlLibrary& library_;
  std::chrono::nanoseconds interval_;
  std::function<Clock::time_point()> now_;
  unsigned long long last_seen_us_ = 0;
  std::unordered_map<unsigned, std::pair<unsigned, unsigned>> util_;  // pid → (sm, mem) last seen
  // How many samples the last call returned: the next call passes room for them, so it takes one call,
  // not a count probe and a read.
  unsigned capacity_ = 0;
  std::optional<Clock::time_point> read_at_;  // when utilization was last asked
  std::vector<unsigned> pids_at_read_;        // the pids on the GPU then (sorted)
};

}  // namespace gpuscope::nvml
