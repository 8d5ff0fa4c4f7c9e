#include "agent/training_tracker.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>

namespace gpuscope::agent {

namespace {

// Whether a pid lives in this PID namespace (a process of another user counts: EPERM).
bool pid_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

const analysis::JobFindings* findings_for(const std::vector<analysis::JobFindings>& all, const std::string& job) {
  for (const auto& f : all) {
    if (f.job == job) return &f;
  }
  return nullptr;
}

}  // namespace

TrainingTracker::TrainingTracker(TrainingOptions options, std::vector<model::GpuInfo> gpus, LatestSnapshot latest,
                                 const model::Clock& clock, log::Logger& log)
    : options_(std::move(options)),
      gpus_(std::move(gpus)),
      latest_(std::move(latest)),
      clock_(clock),
      log_(log),
      jobs_(options_.limits),
      intake_(jobs_) {
  published_.store(std::make_shared<const Published>());
  intake_.set_process_memory([this](int pid) -> std::optional<double> {
    const auto snapshot = latest_ ? latest_() : nullptr;
    if (!snapshot) return std::nullopt;
    std::optional<double> total;
    for (const auto& g : snapshot->gpus) {
      for (const auto& p : g.processes) {
        if (static_cast<int>(p.pid) == pid && p.used_memory_bytes) {
          total = total.value_or(0) + static_cast<double>(*p.used_memory_bytes);
        }
      }
    }
    return total;
  });
}

TrainingTracker::~TrainingTracker() { stop(); }

std::expected<void, std::string> TrainingTracker::start(const EventSocketOptions& socket) {
  if (!socket.path.empty()) {
    auto opened = EventSocket::open(socket, intake_, clock_, log_);
    if (!opened) return std::unexpected(opened.error());
    socket_ = std::move(*opened);
  }
  thread_ = std::thread([this] { run(); });
  return {};
}

void TrainingTracker::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (socket_) socket_->stop();
}

void TrainingTracker::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    evaluate();
    lock.lock();
    clock_.wait_for(lock, cv_, options_.interval, [this] { return stop_; });
  }
}

analysis::TrainingContext TrainingTracker::context(const model::Snapshot* snapshot) const {
  analysis::TrainingContext c;
  c.now_ms = clock_.unix_ms();
  c.snapshot = snapshot;
  c.gpus = gpus_;
  c.process_alive = pid_alive;
  return c;
}

void TrainingTracker::evaluate() {
  const auto snapshot = latest_ ? latest_() : nullptr;
  const auto ctx = context(snapshot.get());
  const std::size_t forgotten = jobs_.forget_silent(ctx.now_ms);
  if (forgotten > 0) log_.info("training jobs forgotten after their silence", {{"jobs", std::to_string(forgotten)}});
  const auto views = jobs_.view(ctx.now_ms);
  auto next = std::make_shared<Published>();
  next->findings = analysis::find_training_problems(views, ctx, options_.thresholds);
  const auto before = published_.load();
  log_changes(before->findings, next->findings);
  published_.store(std::move(next));
  draw_epoch_verdicts(snapshot.get());
}

void TrainingTracker::draw_epoch_verdicts(const model::Snapshot* snapshot) {
  auto epochs = jobs_.take_finished_epochs();
  if (epochs.empty() || !epoch_verdict_) return;
  const auto ctx = context(snapshot);
  for (const auto& e : epochs) {
    analysis::RankView rank;
    rank.pid = e.pid;
    rank.gpu = e.gpu;
    const auto gpu = analysis::rank_gpu(rank, ctx);
    if (!gpu) continue;
    if (auto verdict = epoch_verdict_(e.start_ms, e.end_ms, *gpu)) {
      log_.info("training epoch diagnosed", {{"training_job", e.job},
                                             {"rank", std::to_string(e.rank)},
                                             {"epoch", std::to_string(e.epoch)},
                                             {"gpu", std::to_string(*gpu)},
                                             {"verdict", *verdict}});
      jobs_.set_epoch_verdict(e.job, e.rank, e.epoch, std::move(*verdict));
    }
  }
}

void TrainingTracker::log_changes(const std::vector<analysis::JobFindings>& before,
                                  const std::vector<analysis::JobFindings>& now) {
  for (const auto& f : now) {
    const auto* old = findings_for(before, f.job);
    const bool was_stalled = old != nullptr && old->stalled;
    if (f.stalled && !was_stalled) {
      log_.warn("training job stalled", {{"training_job", f.job},
                                         {"seconds_since_step", fmt::format("{:.0f}", f.stalled->seconds_since_step)},
                                         {"last_step", std::to_string(f.stalled->last_step)},
                                         {"detail", f.stalled->detail}});
    } else if (!f.stalled && was_stalled) {
      log_.info("training job steps again (or ended)", {{"training_job", f.job}});
    }
    const std::optional<unsigned> old_straggler =
        old != nullptr && old->straggler ? std::optional<unsigned>(old->straggler->rank) : std::nullopt;
    if (f.straggler && old_straggler != f.straggler->rank) {
      log_.warn("training straggler", {{"training_job", f.job},
                                       {"rank", std::to_string(f.straggler->rank)},
                                       {"mean_step_seconds", fmt::format("{:.3f}", f.straggler->rank_mean_s)},
                                       {"others_mean_step_seconds", fmt::format("{:.3f}", f.straggler->others_mean_s)},
                                       {"cause", f.straggler->cause}});
    } else if (!f.straggler && old_straggler) {
      log_.info("training straggler no longer", {{"training_job", f.job}, {"rank", std::to_string(*old_straggler)}});
    }
    for (const auto& m : f.memory_not_released) {
      const bool known = old != nullptr && std::any_of(old->memory_not_released.begin(), old->memory_not_released.end(),
                                                       [&](const auto& o) { return o.rank == m.rank; });
      if (!known) {
        log_.warn("training memory not released between epochs",
                  {{"training_job", f.job},
                   {"rank", std::to_string(m.rank)},
                   {"growth_bytes", fmt::format("{:.0f}", m.growth_bytes)},
                   {"epoch_boundaries", std::to_string(m.boundaries)}});
      }
    }
  }
}

void TrainingTracker::write_metrics(exporter::ExpositionWriter& writer) const {
  const std::int64_t now_ms = clock_.unix_ms();
  const auto views = jobs_.view(now_ms);
  const auto published = published_.load();
  const auto snapshot = latest_ ? latest_() : nullptr;
  const auto ctx = context(snapshot.get());
  TrainingExposition t;
  t.jobs = views;
  t.findings = published->findings;
  t.context = &ctx;
  t.counts = intake_.counts();
  t.scalars_dropped = jobs_.scalars_dropped();
  t.host_label = options_.host_label;
  t.hostname = options_.hostname;
  write_training_metrics(writer, t);
}

nlohmann::json TrainingTracker::json() const {
  const std::int64_t now_ms = clock_.unix_ms();
  const auto views = jobs_.view(now_ms);
  const auto published = published_.load();
  const auto snapshot = latest_ ? latest_() : nullptr;
  const auto ctx = context(snapshot.get());
  auto jobs = nlohmann::json::array();
  for (const auto& job : views) {
    auto ranks = nlohmann::json::array();
    for (const auto& r : job.ranks) {
      const auto gpu = analysis::rank_gpu(r, ctx);
      nlohmann::json rank{
          {"rank", r.rank},
          {"world_size", r.world_size ? nlohmann::json(*r.world_size) : nlohmann::json(nullptr)},
          {"pid", r.pid ? nlohmann::json(*r.pid) : nlohmann::json(nullptr)},
          {"gpu", gpu ? nlohmann::json(*gpu) : nlohmann::json(nullptr)},
          {"steps_total", r.steps_total},
          {"last_step", r.steps_total > 0 ? nlohmann::json(r.last_step) : nlohmann::json(nullptr)},
          {"last_step_time_seconds",
           r.last_step_ms ? nlohmann::json(static_cast<double>(*r.last_step_ms) / 1000.0) : nlohmann::json(nullptr)},
          {"last_step_duration_seconds", r.steps_total > 0 ? nlohmann::json(r.last_duration_s) : nlohmann::json(nullptr)},
          {"window_steps", r.window_steps},
          {"window_mean_step_seconds", r.window_steps > 0 ? nlohmann::json(r.window_mean_s) : nlohmann::json(nullptr)},
          {"loss", optional_json(r.loss)},
          {"epoch", r.epoch ? nlohmann::json(*r.epoch) : nlohmann::json(nullptr)},
          {"in_epoch", r.in_epoch},
          {"epoch_loss", optional_json(r.epoch_loss)},
          {"allocated_bytes", optional_json(r.allocated_bytes)},
          {"reserved_bytes", optional_json(r.reserved_bytes)},
          {"peak_allocated_bytes", optional_json(r.peak_allocated_bytes)},
      };
      if (r.last_epoch) {
        rank["last_epoch"] = {
            {"epoch", r.last_epoch->epoch},
            {"start_seconds", r.last_epoch->start_ms > 0 ? nlohmann::json(static_cast<double>(r.last_epoch->start_ms) / 1000.0)
                                                         : nlohmann::json(nullptr)},
            {"end_seconds", static_cast<double>(r.last_epoch->end_ms) / 1000.0},
            {"verdict", r.last_epoch->verdict ? nlohmann::json(*r.last_epoch->verdict) : nlohmann::json(nullptr)},
        };
      }
      ranks.push_back(std::move(rank));
    }
    nlohmann::json j{{"job", job.job},
                     {"last_event_seconds", static_cast<double>(job.last_event_ms) / 1000.0},
                     {"ranks", std::move(ranks)},
                     {"stalled", nullptr},
                     {"step_time_cv", nullptr},
                     {"straggler", nullptr},
                     {"memory_not_released", nlohmann::json::array()}};
    if (const auto* f = findings_for(published->findings, job.job)) {
      if (f->stalled) {
        j["stalled"] = {{"seconds_since_step", f->stalled->seconds_since_step},
                        {"last_step", f->stalled->last_step},
                        {"detail", f->stalled->detail}};
      }
      j["step_time_cv"] = optional_json(f->step_time_cv);
      if (f->straggler) {
        const auto& s = *f->straggler;
        j["straggler"] = {{"rank", s.rank},
                          {"gpu", s.gpu ? nlohmann::json(*s.gpu) : nlohmann::json(nullptr)},
                          {"mean_step_seconds", s.rank_mean_s},
                          {"others_mean_step_seconds", s.others_mean_s},
                          {"cause", s.cause_id},
                          {"detail", s.cause}};
      }
      for (const auto& m : f->memory_not_released) {
        j["memory_not_released"].push_back(
            {{"rank", m.rank}, {"growth_bytes", m.growth_bytes}, {"epoch_boundaries", m.boundaries}});
      }
    }
    jobs.push_back(std::move(j));
  }
  const auto counts = intake_.counts();
  nlohmann::json received, rejected;
  for (std::size_t i = 0; i < analysis::kEventTransportCount; ++i) {
    received[std::string(analysis::transport_id(static_cast<analysis::EventTransport>(i)))] = counts.received[i];
  }
  for (std::size_t i = 0; i < analysis::kEventRejectReasonCount; ++i) {
    rejected[std::string(analysis::reject_reason_id(static_cast<analysis::EventRejectReason>(i)))] = counts.rejected[i];
  }
  return {{"jobs", std::move(jobs)},
          {"events", {{"received", received}, {"rejected", rejected}}},
          {"socket", socket_ ? nlohmann::json(socket_->path()) : nlohmann::json(nullptr)}};
}

}  // namespace gpuscope::agent
