// GpuReader: one reading of every GPU as the agent takes it: the backend's snapshot, labeled with the
// HPC jobs of --hpc-job-mapping-dir, with changes worth a log line (a GPU lost or back, readings slower
// than the interval, the job directory unreadable) logged once per change, never per reading.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "log/logger.h"
#include "model/clock.h"
#include "model/snapshot.h"
#include "nvml/nvml_backend.h"
#include "sampler/hpc_job_map.h"

namespace gpuscope::agent {

class GpuReader {
 public:
  // `hpc_job_mapping_dir` empty: no hpc_job labels. With `simulator_clock` (an agent on a virtual clock
  // over the simulated NVML) the simulator's time is set to that clock's before each reading, so GPU
  // readings and the agent agree on the time. Backend, logger and clock must outlive the reader.
  GpuReader(nvml::NvmlBackend& backend, std::chrono::nanoseconds interval, const std::string& hpc_job_mapping_dir,
            log::Logger& log, const model::Clock* simulator_clock = nullptr);

  // On the sampler thread only.
  model::Snapshot read();

 private:
  nvml::NvmlBackend& backend_;
  const std::chrono::nanoseconds interval_;
  log::Logger& log_;
  const model::Clock* simulator_clock_;
  std::optional<sampler::HpcJobMap> hpc_jobs_;
  std::string hpc_error_;
  std::vector<bool> was_up_;
  bool was_slow_ = false;
  bool first_ = true;
};

}  // namespace gpuscope::agent
