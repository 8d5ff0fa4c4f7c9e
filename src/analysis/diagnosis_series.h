// The series the diagnosis writes back, in the agent's store (so rules, history and PromQL see them)
// and on /metrics: gpuscope_diagnosis_info{<the GPU's labels>, verdict="..."} 1, one series per GPU at a
// time (the previous verdict's series ends with a staleness marker), and
// gpuscope_diagnosis_changes_total{<the GPU's labels>}. The agent and the backtest write the same.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/verdict_tracker.h"
#include "store/labels.h"

namespace gpuscope::analysis {

inline constexpr std::string_view kDiagnosisInfoName = "gpuscope_diagnosis_info";
inline constexpr std::string_view kDiagnosisChangesName = "gpuscope_diagnosis_changes_total";

struct DiagnosisSample {
  store::Labels labels;  // with __name__
  double value = 0;      // may be store::stale_marker()
};

class DiagnosisSeries {
 public:
  // Feeds one diagnosis through the tracker; returns the samples to append at diagnosis.at_ms: each
  // GPU's info and changes series, and a staleness marker for each info series that ended (the GPU's
  // verdict changed, or the GPU is gone).
  // `changes` (may be null) gets the verdict changes the tracker confirmed.
  std::vector<DiagnosisSample> update(Diagnosis& diagnosis, std::vector<VerdictChange>* changes = nullptr);
  // The current samples (no markers), for /metrics.
  std::vector<DiagnosisSample> current() const;
  const VerdictTracker& tracker() const { return tracker_; }

 private:
  VerdictTracker tracker_;
  std::map<std::string, std::vector<DiagnosisSample>> current_;  // by GPU key
};

}  // namespace gpuscope::analysis
