#include "analysis/training_jobs.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace gpuscope::analysis {

namespace {

// A client's clock may run a little ahead of the agent's; more than this is a wrong clock.
constexpr std::int64_t kMaxEventLeadMs = 60'000;
// finished_ waits for the agent's verdict loop; if that loop is off, keep no more than this.
constexpr std::size_t kMaxPendingEpochs = 1024;

}  // namespace

std::int64_t TrainingJobs::event_time(const TrainingEvent& event, std::int64_t now_ms) const {
  if (!event.time_s) return now_ms;
  const double t = *event.time_s * 1000.0;
  if (t > static_cast<double>(now_ms + kMaxEventLeadMs)) return now_ms;
  if (t < static_cast<double>(now_ms - limits_.forget_after.count())) return now_ms;
  return static_cast<std::int64_t>(std::llround(t));
}

std::expected<void, EventRejection> TrainingJobs::apply(const TrainingEvent& event, std::int64_t now_ms) {
  const std::int64_t t_ms = event_time(event, now_ms);
  std::lock_guard lock(mu_);
  auto job_it = jobs_.find(event.job);
  if (job_it == jobs_.end()) {
    if (jobs_.size() >= limits_.max_jobs) {
      return std::unexpected(EventRejection{EventRejectReason::kTooManyJobs,
                                            fmt::format("job {:?}: the agent follows {} jobs already (its limit)",
                                                        event.job, limits_.max_jobs)});
    }
    job_it = jobs_.emplace(event.job, Job{}).first;
  }
  Job& job = job_it->second;
  auto rank_it = job.ranks.find(event.rank);
  if (rank_it == job.ranks.end()) {
    if (job.ranks.size() >= limits_.max_ranks_per_job || ranks_ >= limits_.max_ranks) {
      const bool job_full = job.ranks.size() >= limits_.max_ranks_per_job;
      if (job.ranks.empty()) jobs_.erase(job_it);
      return std::unexpected(EventRejection{
          EventRejectReason::kTooManyRanks,
          job_full ? fmt::format("job {:?} rank {}: the job has {} ranks already (the limit)", event.job, event.rank,
                                 limits_.max_ranks_per_job)
                   : fmt::format("job {:?} rank {}: the agent follows {} ranks already (the limit)", event.job,
                                 event.rank, limits_.max_ranks)});
    }
    rank_it = job.ranks.emplace(event.rank, Rank{}).first;
    ++ranks_;
    rank_it->second.view.rank = event.rank;
  }
  Rank& rank = rank_it->second;
  RankView& v = rank.view;
  if (event.world_size) v.world_size = event.world_size;
  if (event.local_rank) v.local_rank = event.local_rank;
  if (event.pid) v.pid = event.pid;
  if (event.gpu) v.gpu = event.gpu;
  v.last_event_ms = std::max(v.last_event_ms, now_ms);
  job.last_event_ms = std::max(job.last_event_ms, now_ms);
  if (event.kind == TrainingEventKind::kStep) {
    apply_step(rank, event, t_ms);
  } else {
    apply_epoch(job_it->first, rank, event, t_ms);
  }
  return {};
}

void TrainingJobs::apply_step(Rank& rank, const TrainingEvent& event, std::int64_t t_ms) {
  RankView& v = rank.view;
  ++v.steps_total;
  v.last_step = event.step;
  v.last_step_ms = std::max(v.last_step_ms.value_or(t_ms), t_ms);
  v.last_duration_s = event.duration_s;
  if (event.loss) v.loss = event.loss;
  v.duration_sum_s += event.duration_s;
  // Counted in its own bucket only: view() makes the counts cumulative.
  for (std::size_t i = 0; i < kStepDurationBuckets.size(); ++i) {
    if (event.duration_s <= kStepDurationBuckets[i]) {
      ++v.bucket_counts[i];
      break;
    }
  }
  rank.window.push_back({t_ms, event.duration_s});
  if (rank.window.size() > limits_.max_window_steps) rank.window.pop_front();
  for (const auto& [name, value] : event.scalars) {
    auto it = std::find_if(v.scalars.begin(), v.scalars.end(), [&](const auto& s) { return s.first == name; });
    if (it != v.scalars.end()) {
      it->second = value;
    } else if (v.scalars.size() < limits_.max_scalars_per_rank) {
      v.scalars.emplace_back(name, value);
    } else {
      ++scalars_dropped_;
    }
  }
}

void TrainingJobs::apply_epoch(const std::string& job, Rank& rank, const TrainingEvent& event, std::int64_t t_ms) {
  RankView& v = rank.view;
  if (event.allocated_bytes) v.allocated_bytes = event.allocated_bytes;
  if (event.reserved_bytes) v.reserved_bytes = event.reserved_bytes;
  if (event.peak_allocated_bytes) v.peak_allocated_bytes = event.peak_allocated_bytes;
  const bool starts = event.kind == TrainingEventKind::kEpochStart;
  // What is allocated between epochs is what the loop kept: at an epoch's start, or at its end when the
  // client sends no starts (then the next start is the same boundary, and is not counted twice).
  const bool boundary_seen_at_end = !starts && !rank.epoch_start_ms;
  // A start right after an end that was recorded (the agent missed that epoch's start) is that boundary.
  const bool same_boundary = starts && rank.boundary_recorded_at_end && !v.boundary_allocated_bytes.empty();
  rank.boundary_recorded_at_end = false;
  if (event.allocated_bytes && (starts || boundary_seen_at_end)) {
    if (same_boundary) {
      v.boundary_allocated_bytes.back() = *event.allocated_bytes;
    } else {
      v.boundary_allocated_bytes.push_back(*event.allocated_bytes);
      if (v.boundary_allocated_bytes.size() > limits_.max_epoch_boundaries) {
        v.boundary_allocated_bytes.erase(v.boundary_allocated_bytes.begin());
      }
    }
    rank.boundary_recorded_at_end = !starts;
  }
  v.epoch = event.epoch;
  if (starts) {
    v.in_epoch = true;
    rank.epoch_start_ms = t_ms;
    return;
  }
  v.in_epoch = false;
  if (event.loss) v.epoch_loss = event.loss;
  const std::int64_t start = rank.epoch_start_ms.value_or(0);
  v.last_epoch = FinishedEpoch{event.epoch, start, t_ms, std::nullopt};
  rank.epoch_start_ms.reset();
  if (start > 0 && start < t_ms && finished_.size() < kMaxPendingEpochs) {
    finished_.push_back({job, v.rank, event.epoch, start, t_ms, v.pid, v.gpu});
  }
}

std::vector<JobView> TrainingJobs::view(std::int64_t now_ms) const {
  std::lock_guard lock(mu_);
  std::vector<JobView> out;
  out.reserve(jobs_.size());
  for (const auto& [name, job] : jobs_) {
    JobView jv{name, {}, job.last_event_ms};
    jv.ranks.reserve(job.ranks.size());
    for (const auto& [r, rank] : job.ranks) {
      RankView v = rank.view;
      // Cumulative bucket counts, as Prometheus's histograms are.
      for (std::size_t i = 1; i < v.bucket_counts.size(); ++i) v.bucket_counts[i] += v.bucket_counts[i - 1];
      double sum = 0;
      std::size_t n = 0;
      const std::int64_t from = now_ms - limits_.step_window.count();
      for (auto it = rank.window.rbegin(); it != rank.window.rend() && it->t_ms > from; ++it) {
        sum += it->duration_s;
        ++n;
      }
      v.window_steps = n;
      v.window_mean_s = n > 0 ? sum / static_cast<double>(n) : 0;
      jv.ranks.push_back(std::move(v));
    }
    out.push_back(std::move(jv));
  }
  return out;
}

std::vector<EpochSpan> TrainingJobs::take_finished_epochs() {
  std::lock_guard lock(mu_);
  return std::exchange(finished_, {});
}

void TrainingJobs::set_epoch_verdict(const std::string& job, unsigned rank, std::uint64_t epoch, std::string verdict) {
  std::lock_guard lock(mu_);
  auto job_it = jobs_.find(job);
  if (job_it == jobs_.end()) return;
  auto rank_it = job_it->second.ranks.find(rank);
  if (rank_it == job_it->second.ranks.end()) return;
  auto& last = rank_it->second.view.last_epoch;
  if (last && last->epoch == epoch) last->verdict = std::move(verdict);
}

std::size_t TrainingJobs::forget_silent(std::int64_t now_ms) {
  std::lock_guard lock(mu_);
  return std::erase_if(jobs_, [&](const auto& entry) {
    const bool silent = now_ms - entry.second.last_event_ms > limits_.forget_after.count();
    if (silent) ranks_ -= entry.second.ranks.size();
    return silent;
  });
}

std::uint64_t TrainingJobs::scalars_dropped() const {
  std::lock_guard lock(mu_);
  return scalars_dropped_;
}

}  // namespace gpuscope::analysis
