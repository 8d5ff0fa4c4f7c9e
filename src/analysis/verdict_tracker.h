// VerdictTracker: each GPU's verdict over successive diagnoses, its changes and since when it holds.
// The agent keeps one across its evaluations (gpuscope_diagnosis_changes_total), the timeline one
// across the steps of a range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace gpuscope::analysis {

struct VerdictChange {
  GpuIdentity identity;
  std::optional<Verdict> from;  // none: the GPU's first verdict
  Verdict to = Verdict::kUnknown;
  std::string detail;
  std::string summary;
  std::vector<std::string> findings;  // their ids
  std::int64_t at_ms = 0;             // the first diagnosis that gave the new verdict
};

class VerdictTracker {
 public:
  // A new verdict counts once `min_hold` successive diagnoses give it (1: at once), so a window that
  // straddles two phases for one step does not count as a phase of its own.
  explicit VerdictTracker(std::size_t min_hold = 1) : min_hold_(min_hold == 0 ? 1 : min_hold) {}

  // Takes one diagnosis; returns the changes it confirms. Sets each GPU's since_ms from what the
  // tracker saw (the change's time, or the diagnosis' own "idle since" when it knows better).
  std::vector<VerdictChange> update(Diagnosis& diagnosis);

  struct State {
    Verdict verdict = Verdict::kUnknown;
    std::int64_t since_ms = 0;
    bool since_is_lower_bound = false;
    std::uint64_t changes = 0;  // confirmed changes after the first verdict
    // A different verdict seen, not yet held min_hold times.
    std::optional<Verdict> pending;
    std::size_t pending_count = 0;
    VerdictChange pending_change;
  };
  const std::map<std::string, State>& states() const { return states_; }

 private:
  std::size_t min_hold_;
  std::map<std::string, State> states_;  // by GpuIdentity::key
};

}  // namespace gpuscope::analysis
