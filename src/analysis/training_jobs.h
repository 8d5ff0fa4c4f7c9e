// TrainingJobs: what the agent knows of the training jobs that send it events, per job and rank: step
// counts and times (a histogram, and the recent steps the straggler check compares), loss, epoch and
// the PyTorch allocator's figures at each epoch boundary. Bounded in jobs, ranks, scalars and kept
// steps, so no sender can make the agent grow without limit; safe to feed from several threads.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <expected>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analysis/training_event.h"

namespace gpuscope::analysis {

struct TrainingLimits {
  // What one node's agent follows: a node runs a rank or a few per GPU. Every rank exports ~60 series
  // (steps, the histogram's buckets, allocator figures, up to 32 scalars), so the ranks of all jobs
  // together are bounded too: 256 ranks are ~15k series in /metrics and the history at most.
  std::size_t max_jobs = 64;
  std::size_t max_ranks_per_job = 256;
  std::size_t max_ranks = 256;
  // Distinct user scalars a rank may export; later names are dropped (and counted).
  std::size_t max_scalars_per_rank = 32;
  // A job that sent nothing for this long is forgotten, its series gone: it ended or moved.
  std::chrono::milliseconds forget_after = std::chrono::hours(6);
  // The step times kept per rank for the straggler check: this long back, at most this many.
  std::chrono::milliseconds step_window = std::chrono::minutes(5);
  std::size_t max_window_steps = 512;
  // Allocator figures kept per rank, one per epoch boundary (the memory-not-released check).
  std::size_t max_epoch_boundaries = 8;
};

// training_step_duration_seconds' buckets (upper bounds, seconds; +Inf implied): from a small model's
// 5 ms steps to a large one's minutes.
inline constexpr std::array<double, 14> kStepDurationBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                             1,     2.5,  5,     10,   30,  60,  120};

struct FinishedEpoch {
  std::uint64_t epoch = 0;
  std::int64_t start_ms = 0;  // 0: its start was not seen
  std::int64_t end_ms = 0;
  std::optional<std::string> verdict;  // the diagnosis' verdict over the epoch, once the agent drew it
};

// One rank as it stands (no kept steps: the window's mean and count instead).
struct RankView {
  unsigned rank = 0;
  std::optional<unsigned> world_size;
  std::optional<unsigned> local_rank;
  std::optional<int> pid;
  std::optional<std::string> gpu;  // as the rank sent it
  std::uint64_t steps_total = 0;
  std::uint64_t last_step = 0;
  std::optional<std::int64_t> last_step_ms;
  double last_duration_s = 0;
  std::optional<double> loss;
  std::array<std::uint64_t, kStepDurationBuckets.size()> bucket_counts{};  // cumulative, as exported
  double duration_sum_s = 0;
  // The steps within the step window before the view's time: how many, their mean duration.
  std::size_t window_steps = 0;
  double window_mean_s = 0;
  std::optional<std::uint64_t> epoch;
  bool in_epoch = false;
  std::optional<double> epoch_loss;
  std::optional<double> allocated_bytes;
  std::optional<double> reserved_bytes;
  std::optional<double> peak_allocated_bytes;
  std::vector<double> boundary_allocated_bytes;  // at each epoch boundary seen, oldest first
  std::vector<std::pair<std::string, double>> scalars;
  std::optional<FinishedEpoch> last_epoch;
  std::int64_t last_event_ms = 0;
};

struct JobView {
  std::string job;
  std::vector<RankView> ranks;  // by rank
  std::int64_t last_event_ms = 0;
};

// An epoch that ended and waits for its verdict.
struct EpochSpan {
  std::string job;
  unsigned rank = 0;
  std::uint64_t epoch = 0;
  std::int64_t start_ms = 0;
  std::int64_t end_ms = 0;
  std::optional<int> pid;
  std::optional<std::string> gpu;
};

class TrainingJobs {
 public:
  explicit TrainingJobs(TrainingLimits limits = {}) : limits_(limits) {}

  // Takes one event received at `now_ms` (its own `time` counts when it is within the forget window
  // before now and no more than a minute ahead). Turned away only over the job or rank limits.
  std::expected<void, EventRejection> apply(const TrainingEvent& event, std::int64_t now_ms);

  // Every job as it stands at `now_ms`, by name.
  std::vector<JobView> view(std::int64_t now_ms) const;

  // The epochs that ended since the last call, for their verdicts.
  std::vector<EpochSpan> take_finished_epochs();
  // Records an epoch's verdict (ignored when the rank has moved on to another finished epoch).
  void set_epoch_verdict(const std::string& job, unsigned rank, std::uint64_t epoch, std::string verdict);

  // Forgets jobs silent for longer than the limit; how many.
  std::size_t forget_silent(std::int64_t now_ms);

  std::uint64_t scalars_dropped() const;
  const TrainingLimits& limits() const { return limits_; }

 private:
  struct StepSample {
    std::int64_t t_ms;
    double duration_s;
  };
  struct Rank {
    RankView view;
    std::deque<StepSample> window;
    std::optional<std::int64_t> epoch_start_ms;
    bool boundary_recorded_at_end = false;  // the last epoch event was an end whose figure was recorded
  };
  struct Job {
    std::map<unsigned, Rank> ranks;
    std::int64_t last_event_ms = 0;
  };

  void apply_step(Rank& rank, const TrainingEvent& event, std::int64_t t_ms);
  void apply_epoch(const std::string& job, Rank& rank, const TrainingEvent& event, std::int64_t t_ms);
  std::int64_t event_time(const TrainingEvent& event, std::int64_t now_ms) const;

  const TrainingLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Job, std::less<>> jobs_;
  std::vector<EpochSpan> finished_;
  std::size_t ranks_ = 0;  // over all jobs
  std::uint64_t scalars_dropped_ = 0;
};

}  // namespace gpuscope::analysis
