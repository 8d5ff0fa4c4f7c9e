// The diagnosis inside a backtest, as the agent runs it: each GPU's verdict over the last
// kBacktestDiagnosisWindowMs of readings, written back to the store (gpuscope_diagnosis_info and
// gpuscope_diagnosis_changes_total, so rules on them fire as they would in the agent), and each change
// kept for the backtest's timeline next to the alerts.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/diagnosis_series.h"
#include "store/head.h"

namespace gpuscope::cli {

// The agent's default diagnosis window (`gpuscope diagnose --window`'s default).
inline constexpr std::int64_t kBacktestDiagnosisWindowMs = 30'000;
// A diagnosis each window of scenario time, so every reading is judged once: the verdict's resolution in
// the timeline (rules run each minute by default). Each reading (15s) made a 6h 8-GPU backtest 2.2x slower
// than without the diagnosis; each window, 1.6x.
inline constexpr std::int64_t kBacktestDiagnosisEveryMs = 30'000;

// One GPU's verdict change during the run.
struct VerdictEvent {
  std::int64_t t_ms;       // virtual time of the diagnosis that gave it
  std::int64_t offset_ms;  // since the scenario's start
  analysis::GpuIdentity identity;
  std::optional<analysis::Verdict> from;  // none: the GPU's first verdict
  analysis::Verdict verdict = analysis::Verdict::kUnknown;
  std::string detail;
  std::string summary;
  std::vector<std::string> findings;  // their ids
};

class BacktestDiagnosis {
 public:
  // The first diagnosis comes once a whole window of readings exists: a verdict from the first reading
  // alone would be a change the timeline shows for nothing.
  BacktestDiagnosis(store::Head& head, std::int64_t start_ms)
      : head_(head), start_ms_(start_ms), next_ms_(start_ms + kBacktestDiagnosisWindowMs) {}

  // After the reading at `t_ms` (and before the rules see it): diagnoses when due, appends the series
  // to the head, and keeps the verdict changes. An error is the store's, one line.
  std::expected<void, std::string> evaluate_due(std::int64_t t_ms);

  const std::vector<VerdictEvent>& events() const { return events_; }

 private:
  store::Head& head_;
  const std::int64_t start_ms_;
  std::int64_t next_ms_;
  analysis::Thresholds thresholds_;
  analysis::DiagnosisSeries series_;
  std::vector<VerdictEvent> events_;
};

}  // namespace gpuscope::cli
