// AlertStateFile: the alerts' state saved in the data directory, so a restarted agent neither sends
// its firing alerts again nor forgets how long a pending alert has been pending.
#pragma once

#include <cstdint>
#include <expected>
#include <string>

#include "rules/rule_manager.h"

namespace gpuscope::rules {

// An agent down longer than this starts its alerts afresh, as Prometheus's outage tolerance.
inline constexpr std::int64_t kAlertStateOutageToleranceMs = 60 * 60 * 1000;

class AlertStateFile {
 public:
  explicit AlertStateFile(std::string path) : path_(std::move(path)) {}

  // Writes the current state when it changed since the last save (values and annotations are not
  // state: the next evaluation recomputes them), or always with `force` (at a clean stop, so the
  // file's time is when the agent went down). Atomic: a crash leaves the old file or the new one.
  // After a crash the file's time is its last change, so the down time is over-counted: a pending
  // alert then fires later, never earlier.
  std::expected<void, std::string> save(const RuleManager& manager, std::int64_t now_ms, bool force = false);

  // Puts saved alerts back into the rules they belong to (same group file and name, same rule name
  // and expression). Time the agent was down does not count toward a pending alert's `for`; after
  // more than the outage tolerance nothing is restored. Returns how many alerts were restored; a
  // missing file is 0, a damaged one an error (and the agent starts afresh).
  std::expected<std::size_t, std::string> restore(RuleManager& manager, std::int64_t now_ms);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string last_saved_;
};

}  // namespace gpuscope::rules
