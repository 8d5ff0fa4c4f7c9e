// A preemption notice: a cloud's word that this (spot/preemptible) VM is about to be taken away, and the
// source the agent's watcher polls for one (a metadata endpoint in the agent, a script in tests).
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <string>

namespace gpuscope::agent {

struct PreemptionNotice {
  std::string provider;  // "gce", "aws", "url"
  std::string action;    // AWS: terminate, stop or hibernate; empty where the provider does not say
  // When the provider says the action happens (AWS's "time"); nullopt where it does not say.
  std::optional<std::chrono::system_clock::time_point> action_time;
  std::string detail;  // the answer as received (trimmed, one line, bounded): AWS's JSON, a URL's body
};

class PreemptionNoticeSource {
 public:
  virtual ~PreemptionNoticeSource() = default;
  // One look: a notice, none (nullopt), or one line saying why the source could not tell.
  virtual std::expected<std::optional<PreemptionNotice>, std::string> poll() = 0;
  // From another thread: ends a poll in flight at once, and makes every later one fail fast.
  virtual void cancel() = 0;
};

}  // namespace gpuscope::agent
