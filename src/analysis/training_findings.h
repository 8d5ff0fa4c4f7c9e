// What the agent finds wrong with a training job from its events and the GPUs' latest reading: a job
// that stopped stepping while its processes still hold their GPUs (stalled), a rank much slower than the
// others and what its GPU shows that theirs do not (straggler), and memory a rank keeps from one epoch
// to the next (not released). Pure: the caller gives the jobs, the reading and whether a pid lives.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/training_jobs.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::analysis {

struct TrainingThresholds {
  // No step for this long while a process of the job still holds a GPU (or lives): stalled. Five minutes
  // is longer than a checkpoint save or an evaluation pass usually takes, shorter than the 10-20 minutes
  // hand-written stall rules wait.
  std::chrono::milliseconds stall_after = std::chrono::minutes(5);
  // Coefficient of variation (population std / mean) of the ranks' mean step times above which the
  // slowest rank is a straggler: the StragglerDetector the documents all-gather for uses 0.1.
  double straggler_cv = 0.1;
  // A rank's mean needs this many steps in the window to count (one slow first step is warm-up).
  std::size_t straggler_min_steps = 5;
  // Allocated memory at the epoch boundaries grew at every one of this many boundaries in a row...
  std::size_t memory_growth_boundaries = 3;
  // ...by at least this much in all (smaller growth is the allocator's noise).
  double memory_growth_min_bytes = 256.0 * 1024 * 1024;
};

// Where the agent looks for the job's processes and GPUs: the latest reading (null before the first).
struct TrainingContext {
  std::int64_t now_ms = 0;
  const model::Snapshot* snapshot = nullptr;
  std::span<const model::GpuInfo> gpus;
  // Whether a pid lives (kill(pid, 0)); empty: unknown, so a pid not on a GPU counts as alive.
  std::function<bool(int pid)> process_alive;
};

struct StallFinding {
  double seconds_since_step = 0;
  std::uint64_t last_step = 0;
  std::string detail;  // which processes still hold which GPUs, or why it counts as stalled
};

struct StragglerFinding {
  unsigned rank = 0;
  std::optional<unsigned> gpu;  // the rank's GPU index, where known
  double rank_mean_s = 0;
  double others_mean_s = 0;  // the mean of the other ranks' means
  // Why, as a stable id: gpu_clock (its GPU runs slower), gpu_throttled (a throttle reason its peers lack),
  // gpu_hot, host (its GPU looks like the others': data loading, CPU, network), gpu_unknown, no_reading.
  std::string cause_id;
  std::string cause;  // for people: what the rank's GPU shows that the others' do not, or where to look
};

struct MemoryGrowthFinding {
  unsigned rank = 0;
  double growth_bytes = 0;  // over the boundaries that grew in a row
  std::size_t boundaries = 0;
};

struct JobFindings {
  std::string job;
  std::optional<StallFinding> stalled;
  std::optional<double> step_time_cv;  // with at least two ranks that count
  std::optional<StragglerFinding> straggler;
  std::vector<MemoryGrowthFinding> memory_not_released;
};

// The GPU index a rank runs on: the one it named (index or UUID), else the GPU its pid holds memory on
// in the reading (the first, for a pid on several).
std::optional<unsigned> rank_gpu(const RankView& rank, const TrainingContext& context);

std::vector<JobFindings> find_training_problems(std::span<const JobView> jobs, const TrainingContext& context,
                                                const TrainingThresholds& thresholds);

}  // namespace gpuscope::analysis
