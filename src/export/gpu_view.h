// What every nvidia-smi style view renders from: one GPU's discovery facts paired with one reading,
// plus the per-interval context (system facts, the reading's time, how many GPUs exist).
#pragma once

#include <chrono>
#include <cstddef>

#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

struct GpuView {
  const model::GpuInfo& info;
  const model::GpuSample& sample;
};

struct QueryContext {
  const model::SystemInfo& system;
  std::chrono::system_clock::time_point time;  // the Snapshot's time, not the wall clock's
  std::size_t gpu_count = 0;                   // every GPU found (nvidia-smi's `count`), not only those shown
};

}  // namespace gpuscope::exporter
