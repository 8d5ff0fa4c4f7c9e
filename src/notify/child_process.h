// ChildProcess: runs one argv (never through a shell) in its own process group with a deadline, for
// remediation commands: a hung command is killed with its whole group, and the agent's blocked signals
// and open descriptors do not leak into it.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpuscope::notify {

struct ChildOutcome {
  std::string spawn_error;        // non-empty: it never ran (no such program, ...)
  std::optional<int> exit_code;   // exited normally
  std::optional<int> signal;      // killed by this signal
  bool timed_out = false;         // the deadline passed and the group was killed
  std::chrono::milliseconds duration{0};
  std::string output_tail;        // the last bytes of stdout and stderr together
  bool succeeded() const { return spawn_error.empty() && exit_code == 0 && !timed_out; }
};

struct ChildOptions {
  std::chrono::milliseconds timeout{5 * 60'000};
  std::chrono::milliseconds kill_grace{2'000};  // SIGTERM to the group, then SIGKILL after this
  std::size_t output_tail_bytes = 512;
};

// `env` is the child's whole environment ("NAME=value"). `abort` (may be null) ends the run early
// like a timeout (agent shutdown). Blocks until the child has been reaped.
ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const ChildOptions& options, const std::atomic<bool>* abort);

}  // namespace gpuscope::notify
