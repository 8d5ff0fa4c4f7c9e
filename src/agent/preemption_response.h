// PreemptionResponse: what the agent does when the cloud announces this VM's preemption, once a run. It
// signals the processes on the GPUs (or the one a pidfile names) so training saves a checkpoint in the
// seconds left, sends a GpuNodePreempted alert through the configured receivers without waiting for
// group_wait, and says in the log what it did, which pids it signalled and which it could not.
#pragma once

#include <chrono>
#include <csignal>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/preemption_notice.h"
#include "log/logger.h"
#include "model/clock.h"
#include "model/snapshot.h"
#include "rules/alerting_rule.h"

namespace gpuscope::notify {
class Notifier;
}

namespace gpuscope::agent {

// The alert's name, as a rule pack would write it.
inline constexpr std::string_view kPreemptionAlertName = "GpuNodePreempted";
// How long the alert stays valid (its endsAt): far past any preemption (GCE 30 s, AWS 2 min), so a
// receiver keeps it firing until the node is gone, and Alertmanager resolves it by itself afterwards.
inline constexpr std::chrono::hours kPreemptionAlertValidity{1};

// --preemption-signal: a signal name with or without SIG, any case (TERM, SIGTERM, sigint, USR1), or
// "none" (nullopt: signal nothing); otherwise "invalid value 'X' for --preemption-signal (...)".
std::expected<std::optional<int>, std::string> parse_signal_name(std::string_view text);
// "SIGTERM" for SIGTERM; "signal N" for one parse_signal_name does not know.
std::string signal_name(int signal);

// The pids of the reading's compute processes that this PID namespace shows (never the simulator's, nor
// pid 0 or 1, nor the agent itself), each once, in ascending order.
std::vector<int> gpu_process_pids(const model::Snapshot& snapshot);
// The pid a pidfile holds (one decimal number, surrounding whitespace allowed), or why not.
std::expected<int, std::string> read_pidfile(const std::string& path);

struct PreemptionResponseOptions {
  std::optional<int> signal = SIGTERM;  // nullopt: --preemption-signal none
  std::string pidfile;             // non-empty: only the pid this file holds is signalled
  // The GPUs' processes now (gpu_process_pids of the sampler's latest reading); may be empty.
  std::function<std::vector<int>()> gpu_pids;
  std::string hostname;                  // the alert's hostname label and the log
  notify::Notifier* notifier = nullptr;  // null: no notification (serve without --config)
};

// What a response did, for the log and for tests.
struct PreemptionResponseReport {
  std::vector<int> signalled;
  std::vector<std::pair<int, int>> failed;  // pid, errno (ESRCH: gone; EPERM: another user's, no root)
  std::string pid_error;                    // the pidfile could not be read
  bool notified = false;                    // the alert was handed to the notifier
};

class PreemptionResponse {
 public:
  // `clock` and `log` (and options.notifier) must outlive the response.
  PreemptionResponse(PreemptionResponseOptions options, const model::Clock& clock, log::Logger& log)
      : options_(std::move(options)), clock_(clock), log_(log) {}

  // Signals, notifies and logs for `notice`, first seen at `seen`. Never blocks on the network.
  PreemptionResponseReport respond(const PreemptionNotice& notice, std::chrono::system_clock::time_point seen);

  // The alert respond() sends (exposed for tests).
  rules::Alert alert(const PreemptionNotice& notice, std::chrono::system_clock::time_point seen,
                     const PreemptionResponseReport& report) const;

 private:
  void send_signals(PreemptionResponseReport& report) const;

  PreemptionResponseOptions options_;
  const model::Clock& clock_;
  log::Logger& log_;
};

}  // namespace gpuscope::agent
