// DiagnosisLoop: the agent's diagnosis thread. Every interval it diagnoses each GPU over the latest
// window of readings (the agent's store::RecentWindow; "idle since" looks further back in the history),
// writes the verdicts back (gpuscope_diagnosis_info, so rules and PromQL see them) and publishes the
// result for /metrics and /api/v1/diagnosis. It only reads what the sampler already appended, on a
// thread of its own, so a slow diagnosis never delays a GPU reading.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/diagnosis_series.h"
#include "analysis/reading_source.h"
#include "analysis/thresholds.h"
#include "export/agent_metrics.h"
#include "log/logger.h"
#include "model/clock.h"
#include "rules/rule_group.h"

namespace gpuscope::agent {

struct DiagnosisLoopOptions {
  std::chrono::milliseconds interval{1000};
  std::chrono::milliseconds window{30'000};
  analysis::Thresholds thresholds;
  // How far back a GPU first seen idle is looked at for its last activity ("idle since").
  std::int64_t idle_lookback_ms = analysis::kIdleLookbackMs;
};

class DiagnosisLoop {
 public:
  // What the loop published after its latest evaluation: a copy, so a reader never waits for one.
  struct Published {
    std::shared_ptr<const analysis::Diagnosis> diagnosis;  // null before the first that succeeded
    std::vector<analysis::DiagnosisSample> series;         // each GPU's info and changes series now
    std::uint64_t evaluations = 0;
    std::uint64_t failures = 0;
    double last_duration_seconds = 0;
    std::int64_t last_evaluation_ms = 0;  // 0: none yet
    std::string last_error;               // of the latest evaluation; empty when it succeeded
  };

  // Reads readings from `source` and appends the verdict series to `out` at each evaluation's time.
  // Both must outlive the loop; `out` must take appends from another thread than the sampler's.
  DiagnosisLoop(const analysis::ReadingSource& source, rules::SampleAppender& out, DiagnosisLoopOptions options,
                const model::Clock& clock, log::Logger& log)
      : DiagnosisLoop(source, source, out, std::move(options), clock, log) {}
  // The window is read from `recent` (the agent's store::RecentWindow: cheap, but only the last span);
  // a GPU first seen idle is looked for further back in `history` ("idle since").
  DiagnosisLoop(const analysis::ReadingSource& recent, const analysis::ReadingSource& history,
                rules::SampleAppender& out, DiagnosisLoopOptions options, const model::Clock& clock, log::Logger& log);
  ~DiagnosisLoop();  // stop()
  DiagnosisLoop(const DiagnosisLoop&) = delete;
  DiagnosisLoop& operator=(const DiagnosisLoop&) = delete;

  // Where the node's fabric series are read from (the agent's RecentWindow of them, kFabricLookbackMs
  // long), for the network verdict; set before start(). Without one there is no network verdict.
  void set_fabric_source(const analysis::ReadingSource* fabric) { fabric_ = fabric; }

  // `ready` is waited on (on the thread) before the first evaluation: the first reading is in the store.
  void start(std::function<void()> ready);
  // Ends the thread after the evaluation in progress (a read of memory: milliseconds).
  void stop();
  // Waits (in real time, at most `limit`) until the first evaluation is published: the agent opens its
  // port after it, so a client that connects at once gets a verdict, not a 503.
  bool wait_for_first(std::chrono::milliseconds limit);

  std::shared_ptr<const Published> latest() const { return published_.load(); }
  // For /metrics: the counters and each GPU's verdict series.
  exporter::DiagnosisStatus status() const;

  const DiagnosisLoopOptions& options() const { return options_; }

 private:
  void run(const std::function<void()>& ready);
  // One evaluation at `at_ms`.
  void evaluate(std::int64_t at_ms);
  std::expected<analysis::Diagnosis, std::string> diagnose(std::int64_t at_ms);

  const analysis::ReadingSource& source_;
  const analysis::ReadingSource& history_;
  const analysis::ReadingSource* fabric_ = nullptr;
  rules::SampleAppender& out_;
  const DiagnosisLoopOptions options_;
  const model::Clock& clock_;
  log::Logger& log_;

  // The thread's own (touched by run() only).
  analysis::DiagnosisSeries series_;
  Published counts_;
  bool append_failing_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool evaluated_ = false;
  std::atomic<std::shared_ptr<const Published>> published_;
  std::thread thread_;
};

}  // namespace gpuscope::agent
