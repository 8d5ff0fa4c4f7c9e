// TrainingTracker: the agent's part for training jobs. It owns what the jobs told (TrainingJobs), where
// their events come in (the Unix socket; POST /api/v1/events goes through intake()), and a thread that
// once a second looks for stalled jobs, stragglers and memory kept between epochs against the latest GPU
// reading, and draws each finished epoch's verdict from the recorded readings. /metrics, the history and
// GET /api/v1/training show what it found; it logs each finding once as it starts and ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/event_socket.h"
#include "agent/training_metrics.h"
#include "analysis/training_findings.h"
#include "analysis/training_intake.h"
#include "analysis/training_jobs.h"
#include "export/exposition_writer.h"
#include "log/logger.h"
#include "model/clock.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::agent {

struct TrainingOptions {
  analysis::TrainingLimits limits;
  analysis::TrainingThresholds thresholds;
  std::chrono::milliseconds interval{1000};  // how often the findings are drawn
  std::string host_label = "Hostname";       // the GPU families' host label (empty: none)
  std::string hostname;
};

class TrainingTracker {
 public:
  // The latest GPU reading (null before the first): where the jobs' processes and GPUs are looked up.
  using LatestSnapshot = std::function<std::shared_ptr<const model::Snapshot>()>;
  // The diagnosis' verdict id over (start_ms, end_ms] for GPU `gpu`, or nullopt (no readings).
  using EpochVerdict = std::function<std::optional<std::string>(std::int64_t start_ms, std::int64_t end_ms, unsigned gpu)>;

  TrainingTracker(TrainingOptions options, std::vector<model::GpuInfo> gpus, LatestSnapshot latest,
                  const model::Clock& clock, log::Logger& log);
  ~TrainingTracker();  // stop()
  TrainingTracker(const TrainingTracker&) = delete;
  TrainingTracker& operator=(const TrainingTracker&) = delete;

  // Set before start(): where epoch verdicts come from (none: no epoch verdicts).
  void set_epoch_verdict(EpochVerdict verdict) { epoch_verdict_ = std::move(verdict); }
  // Opens the socket (empty path: none) and starts the findings thread.
  std::expected<void, std::string> start(const EventSocketOptions& socket);
  void stop();

  analysis::TrainingIntake& intake() { return intake_; }

  // Draws the findings now (the thread does it every interval); tests and the loop call it.
  void evaluate();

  // The training families, as /metrics and the history show them.
  void write_metrics(exporter::ExpositionWriter& writer) const;
  // GET /api/v1/training's data: each job's ranks and findings.
  nlohmann::json json() const;

 private:
  struct Published {
    std::vector<analysis::JobFindings> findings;
  };
  void run();
  analysis::TrainingContext context(const model::Snapshot* snapshot) const;
  void log_changes(const std::vector<analysis::JobFindings>& before, const std::vector<analysis::JobFindings>& now);
  void draw_epoch_verdicts(const model::Snapshot* snapshot);

  const TrainingOptions options_;
  const std::vector<model::GpuInfo> gpus_;
  LatestSnapshot latest_;
  const model::Clock& clock_;
  log::Logger& log_;
  analysis::TrainingJobs jobs_;
  analysis::TrainingIntake intake_;
  EpochVerdict epoch_verdict_;
  std::unique_ptr<EventSocket> socket_;
  std::atomic<std::shared_ptr<const Published>> published_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpuscope::agent
