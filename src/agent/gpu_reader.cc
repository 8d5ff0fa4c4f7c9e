#include "agent/gpu_reader.h"

#include <utility>

#include <fmt/format.h>

namespace gpuscope::agent {

GpuReader::GpuReader(nvml::NvmlBackend& backend, std::chrono::nanoseconds interval,
                     const std::string& hpc_job_mapping_dir, log::Logger& log, const model::Clock* simulator_clock)
    : backend_(backend),
      interval_(interval),
      log_(log),
      simulator_clock_(simulator_clock),
      was_up_(backend.gpus().size(), true) {
  if (!hpc_job_mapping_dir.empty()) hpc_jobs_.emplace(hpc_job_mapping_dir);
}

model::Snapshot GpuReader::read() {
  if (simulator_clock_ != nullptr) backend_.set_sim_time(simulator_clock_->wall());
  auto snapshot = backend_.sample();
  if (hpc_jobs_) {
    std::string error;
    hpc_jobs_->label(snapshot, &error);
    // The directory may come and go with the scheduler: logged when that changes, not per reading.
    if (error != hpc_error_) {
      if (error.empty()) {
        log_.info("HPC job mapping directory readable", {{"dir", hpc_jobs_->dir()}});
      } else {
        log_.warn("HPC job mapping directory unreadable; no hpc_job labels until it is", {{"err", error}});
      }
      hpc_error_ = error;
    }
  }
  for (const auto& g : snapshot.gpus) {
    if (g.index >= was_up_.size() || g.up == was_up_[g.index]) continue;
    was_up_[g.index] = g.up;
    const auto& info = backend_.gpus()[g.index];
    if (g.up) {
      log_.info("GPU answers again", {{"gpu", std::to_string(g.index)}, {"uuid", info.uuid}});
    } else {
      log_.warn("GPU lost: its series are withdrawn until NVML answers again",
                {{"gpu", std::to_string(g.index)}, {"uuid", info.uuid}, {"nvml_code", std::to_string(g.down_error_code)}});
    }
  }
  // The first reading waits out GPM's first window once; only later ones can be slow.
  const bool slow = !std::exchange(first_, false) && snapshot.duration > interval_;
  if (slow != was_slow_) {
    was_slow_ = slow;
    if (slow) {
      log_.warn("a GPU reading took longer than the interval; readings are skipped until it is faster",
                {{"took", fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(snapshot.duration).count())}});
    } else {
      log_.info("GPU readings are back within the interval");
    }
  }
  return snapshot;
}

}  // namespace gpuscope::agent
